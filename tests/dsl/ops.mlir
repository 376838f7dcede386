// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s
// RUN: attn-opt %s -split-input-file -mlir-print-op-generic | attn-opt -split-input-file | FileCheck %s

// Round trip of every attn op in its custom syntax, and through the generic
// form. Each function exercises one family of ops.

// CHECK-LABEL: func.func @layers
func.func @layers(%x: tensor<?x?x512xf32>, %x2: tensor<?x256xf32>) -> tensor<?x?x512xf32> {
  // CHECK: attn.gau %{{.*}} (layer_name = "l0", e = 1024, s = 128, causal = true, norm = layer_norm, max_len = 512, rel_pos = toeplitz, rope = true, eps = 1.000000e-05) : tensor<?x?x512xf32>
  %0 = attn.gau %x (layer_name = "l0", e = 1024, s = 128, causal = true,
                    norm = layer_norm, max_len = 512, rel_pos = toeplitz,
                    rope = true, eps = 1.0e-05) : tensor<?x?x512xf32>
  // CHECK: attn.gau %{{.*}} (layer_name = "l0b", e = 1024, s = 127, causal = false, norm = rms_norm, max_len = 1, rel_pos = none, rope = false, eps = 2.500000e-01) : tensor<?x?x512xf32>
  %1 = attn.gau %0 (layer_name = "l0b", e = 1024, s = 127, causal = false,
                    norm = rms_norm, max_len = 1, rel_pos = none,
                    rope = false, eps = 2.5e-01) : tensor<?x?x512xf32>
  // CHECK: attn.flash %{{.*}} (layer_name = "l1", e = 1024, s = 128, chunk = 256, causal = true, norm = scale_norm, rel_pos = toeplitz, rope = true, eps = 1.000000e-05) : tensor<?x?x512xf32>
  %2 = attn.flash %1 (layer_name = "l1", e = 1024, s = 128, chunk = 256,
                      causal = true, norm = scale_norm, rel_pos = toeplitz,
                      rope = true, eps = 1.0e-05) : tensor<?x?x512xf32>
  // CHECK: attn.mhsa %{{.*}} (layer_name = "enc0", heads = 8, causal = false, norm = layer_norm, eps = 1.000000e-05) : tensor<?x?x512xf32>
  %3 = attn.mhsa %2 (layer_name = "enc0", heads = 8, causal = false,
                     norm = layer_norm, eps = 1.0e-05) : tensor<?x?x512xf32>
  // CHECK: attn.local_attention %{{.*}} (layer_name = "loc", heads = 8, window = 128, causal = true, block = false, norm = layer_norm, eps = 1.000000e-05) : tensor<?x?x512xf32>
  %4 = attn.local_attention %3 (layer_name = "loc", heads = 8, window = 128,
                                causal = true, block = false,
                                norm = layer_norm, eps = 1.0e-05)
         : tensor<?x?x512xf32>
  // CHECK: attn.glu_ffn %{{.*}} (layer_name = "ffn0", hidden = 1024, activation = gelu, norm = layer_norm, eps = 1.000000e-05) : tensor<?x?x512xf32>
  %5 = attn.glu_ffn %4 (layer_name = "ffn0", hidden = 1024, activation = gelu,
                        norm = layer_norm, eps = 1.0e-05) : tensor<?x?x512xf32>
  // CHECK: attn.linear_attention %{{.*}} (layer_name = "lin", heads = 4, causal = true, feature = elu1, norm = rms_norm, eps = 1.000000e-05) : tensor<?x256xf32>
  %6 = attn.linear_attention %x2 (layer_name = "lin", heads = 4, causal = true,
                                  feature = elu1, norm = rms_norm,
                                  eps = 1.0e-05) : tensor<?x256xf32>
  return %5 : tensor<?x?x512xf32>
}

// -----

// CHECK-LABEL: func.func @enum_spellings
func.func @enum_spellings(%x: tensor<4x64xf32>) {
  // CHECK: feature = identity
  %0 = attn.linear_attention %x (layer_name = "a", heads = 1, causal = false, feature = identity, norm = layer_norm, eps = 1.0e-05) : tensor<4x64xf32>
  // CHECK: feature = relu
  %1 = attn.linear_attention %x (layer_name = "b", heads = 2, causal = false, feature = relu, norm = layer_norm, eps = 1.0e-05) : tensor<4x64xf32>
  // CHECK: feature = silu
  %2 = attn.linear_attention %x (layer_name = "c", heads = 4, causal = false, feature = silu, norm = layer_norm, eps = 1.0e-05) : tensor<4x64xf32>
  // CHECK: feature = exp
  %3 = attn.linear_attention %x (layer_name = "d", heads = 8, causal = false, feature = exp, norm = layer_norm, eps = 1.0e-05) : tensor<4x64xf32>
  // CHECK: activation = silu
  %4 = attn.glu_ffn %x (layer_name = "e", hidden = 8, activation = silu, norm = scale_norm, eps = 1.0e-05) : tensor<4x64xf32>
  // CHECK: activation = relu
  %5 = attn.glu_ffn %x (layer_name = "f", hidden = 8, activation = relu, norm = scale_norm, eps = 1.0e-05) : tensor<4x64xf32>
  // CHECK: activation = sigmoid
  %6 = attn.glu_ffn %x (layer_name = "g", hidden = 8, activation = sigmoid, norm = scale_norm, eps = 1.0e-05) : tensor<4x64xf32>
  // CHECK: activation = tanh
  %7 = attn.glu_ffn %x (layer_name = "h", hidden = 8, activation = tanh, norm = scale_norm, eps = 1.0e-05) : tensor<4x64xf32>
  // CHECK: block = true
  %8 = attn.local_attention %x (layer_name = "i", heads = 2, window = 1, causal = false, block = true, norm = rms_norm, eps = 1.0e-05) : tensor<4x64xf32>
  return
}

// -----

// CHECK-LABEL: func.func @weights_and_elementwise
func.func @weights_and_elementwise(%a: tensor<?x64xf32>, %b: tensor<64xf32>, %s: tensor<2x1x64xf32>) -> tensor<?x64xf32> {
  // CHECK: attn.weight "l0.uvz.weight" : tensor<512x2176xf32>
  %w = attn.weight "l0.uvz.weight" : tensor<512x2176xf32>
  // CHECK: attn.constant 2.000000e+00 : tensor<f32>
  %c = attn.constant 2.0 : tensor<f32>
  // CHECK: attn.add %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  %0 = attn.add %a, %b : tensor<?x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
  // CHECK: attn.sub %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  %1 = attn.sub %0, %a : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  // CHECK: attn.mul %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<2x1x64xf32> -> tensor<2x?x64xf32>
  %2 = attn.mul %1, %s : tensor<?x64xf32>, tensor<2x1x64xf32> -> tensor<2x?x64xf32>
  // CHECK: attn.div %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<f32> -> tensor<?x64xf32>
  %3 = attn.div %1, %c : tensor<?x64xf32>, tensor<f32> -> tensor<?x64xf32>
  // CHECK: attn.div_or_zero %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<f32> -> tensor<?x64xf32>
  %d = attn.div_or_zero %1, %c : tensor<?x64xf32>, tensor<f32> -> tensor<?x64xf32>
  // CHECK: attn.pow %{{.*}}, %{{.*}} : tensor<?x64xf32>, tensor<f32> -> tensor<?x64xf32>
  %4 = attn.pow %3, %c : tensor<?x64xf32>, tensor<f32> -> tensor<?x64xf32>
  // CHECK: attn.neg %{{.*}} : tensor<?x64xf32>
  %5 = attn.neg %4 : tensor<?x64xf32>
  // CHECK: attn.silu %{{.*}} : tensor<?x64xf32>
  %6 = attn.silu %5 : tensor<?x64xf32>
  // CHECK: attn.gelu %{{.*}} : tensor<?x64xf32>
  %7 = attn.gelu %6 : tensor<?x64xf32>
  // CHECK: attn.relu %{{.*}} : tensor<?x64xf32>
  %8 = attn.relu %7 : tensor<?x64xf32>
  // CHECK: attn.sigmoid %{{.*}} : tensor<?x64xf32>
  %9 = attn.sigmoid %8 : tensor<?x64xf32>
  // CHECK: attn.exp %{{.*}} : tensor<?x64xf32>
  %10 = attn.exp %9 : tensor<?x64xf32>
  // CHECK: attn.tanh %{{.*}} : tensor<?x64xf32>
  %11 = attn.tanh %10 : tensor<?x64xf32>
  // CHECK: attn.sqrt %{{.*}} : tensor<?x64xf32>
  %12 = attn.sqrt %11 : tensor<?x64xf32>
  return %12 : tensor<?x64xf32>
}

// -----

// CHECK-LABEL: func.func @contractions_and_shapes
func.func @contractions_and_shapes(%x: tensor<?x?x64xf32>, %w: tensor<64x32xf32>, %bw: tensor<2x?x64x32xf32>, %b: tensor<32xf32>, %p: tensor<2x128xf32>) {
  // CHECK: attn.matmul %{{.*}}, %{{.*}} : tensor<?x?x64xf32>, tensor<64x32xf32> -> tensor<?x?x32xf32>
  %0 = attn.matmul %x, %w : tensor<?x?x64xf32>, tensor<64x32xf32> -> tensor<?x?x32xf32>
  %x4 = attn.weight "x4" : tensor<2x3x5x64xf32>
  // CHECK: attn.matmul %{{.*}}, %{{.*}} : tensor<2x3x5x64xf32>, tensor<2x?x64x32xf32> -> tensor<2x3x5x32xf32>
  %1 = attn.matmul %x4, %bw : tensor<2x3x5x64xf32>, tensor<2x?x64x32xf32> -> tensor<2x3x5x32xf32>
  // CHECK: attn.dense %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x?x64xf32>, tensor<64x32xf32>, tensor<32xf32> -> tensor<?x?x32xf32>
  %2 = attn.dense %x, %w, %b : tensor<?x?x64xf32>, tensor<64x32xf32>, tensor<32xf32> -> tensor<?x?x32xf32>
  // CHECK: attn.split %{{.*}} [16, 16, 32] : tensor<?x?x64xf32> -> tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x32xf32>
  %3:3 = attn.split %x [16, 16, 32] : tensor<?x?x64xf32> -> tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x32xf32>
  // CHECK: attn.transpose %{{.*}} : tensor<?x?x64xf32> -> tensor<?x64x?xf32>
  %4 = attn.transpose %x : tensor<?x?x64xf32> -> tensor<?x64x?xf32>
  // CHECK: attn.row %{{.*}}[1] : tensor<2x128xf32> -> tensor<128xf32>
  %5 = attn.row %p[1] : tensor<2x128xf32> -> tensor<128xf32>
  return
}

// -----

// CHECK-LABEL: func.func @norms_and_rope
func.func @norms_and_rope(%x: tensor<?x?x128xf32>, %w: tensor<128xf32>, %b: tensor<128xf32>, %alpha: tensor<1xf32>) {
  // CHECK: attn.layer_norm %{{.*}} weight %{{.*}} bias %{{.*}} eps = 1.000000e-05 : (tensor<?x?x128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<?x?x128xf32>
  %0 = attn.layer_norm %x weight %w bias %b eps = 1.0e-05 : (tensor<?x?x128xf32>, tensor<128xf32>, tensor<128xf32>) -> tensor<?x?x128xf32>
  // CHECK: attn.layer_norm %{{.*}} weight %{{.*}} eps = 1.000000e-05 : (tensor<?x?x128xf32>, tensor<128xf32>) -> tensor<?x?x128xf32>
  %1 = attn.layer_norm %x weight %w eps = 1.0e-05 : (tensor<?x?x128xf32>, tensor<128xf32>) -> tensor<?x?x128xf32>
  // CHECK: attn.layer_norm %{{.*}} bias %{{.*}} eps = 1.000000e-05 : (tensor<?x?x128xf32>, tensor<128xf32>) -> tensor<?x?x128xf32>
  %2 = attn.layer_norm %x bias %b eps = 1.0e-05 : (tensor<?x?x128xf32>, tensor<128xf32>) -> tensor<?x?x128xf32>
  // CHECK: attn.layer_norm %{{.*}} eps = 1.000000e-05 : (tensor<?x?x128xf32>) -> tensor<?x?x128xf32>
  %3 = attn.layer_norm %x eps = 1.0e-05 : (tensor<?x?x128xf32>) -> tensor<?x?x128xf32>
  // CHECK: attn.scale_norm %{{.*}}, %{{.*}} eps = 1.000000e-05 : tensor<?x?x128xf32>, tensor<1xf32>
  %4 = attn.scale_norm %x, %alpha eps = 1.0e-05 : tensor<?x?x128xf32>, tensor<1xf32>
  // CHECK: attn.rms_norm %{{.*}} weight %{{.*}} eps = 2.500000e-01 : (tensor<?x?x128xf32>, tensor<128xf32>) -> tensor<?x?x128xf32>
  %5 = attn.rms_norm %x weight %w eps = 2.5e-01 : (tensor<?x?x128xf32>, tensor<128xf32>) -> tensor<?x?x128xf32>
  // CHECK: attn.rms_norm %{{.*}} eps = 2.500000e-01 : (tensor<?x?x128xf32>) -> tensor<?x?x128xf32>
  %6 = attn.rms_norm %x eps = 2.5e-01 : (tensor<?x?x128xf32>) -> tensor<?x?x128xf32>
  // CHECK: attn.scale_offset %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x?x128xf32>, tensor<128xf32>, tensor<128xf32>
  %7 = attn.scale_offset %x, %w, %b : tensor<?x?x128xf32>, tensor<128xf32>, tensor<128xf32>
  // CHECK: attn.rope %{{.*}} mode = half rotary_dims = 128 base = 1.000000e+04 : tensor<?x?x128xf32>
  %8 = attn.rope %x mode = half rotary_dims = 128 base = 1.0e+04 : tensor<?x?x128xf32>
  // CHECK: attn.rope %{{.*}} mode = interleaved rotary_dims = 32 base = 1.000000e+04 : tensor<?x?x128xf32>
  %9 = attn.rope %x mode = interleaved rotary_dims = 32 base = 1.0e+04 : tensor<?x?x128xf32>
  return
}

// -----

// The GAU kernel relu(qk / n + bias)^2 with a learned Toeplitz bias, causal.
// CHECK-LABEL: func.func @attention_gau_score
func.func @attention_gau_score(%q: tensor<?x?x128xf32>, %k: tensor<?x?x128xf32>, %v: tensor<?x?x1024xf32>) -> tensor<?x?x1024xf32> {
  %w = attn.weight "l0.rel_pos" : tensor<1023xf32>
  // CHECK: attn.attention %{{.*}}, %{{.*}}, %{{.*}} mask = #attn.mask<causal> normalize = none heads = 1 : tensor<?x?x128xf32>, tensor<?x?x128xf32>, tensor<?x?x1024xf32> -> tensor<?x?x1024xf32> {
  // CHECK-NEXT: ^bb0(%{{.*}}: f32, %[[I:.*]]: index, %[[J:.*]]: index, %{{.*}}: index):
  // CHECK: attn.rel_pos_bias %{{.*}}[%[[I]], %[[J]]] max_len = 512 : tensor<1023xf32>
  // CHECK: attn.yield %{{.*}} : f32
  // CHECK-NEXT: }
  %o = attn.attention %q, %k, %v mask = #attn.mask<causal> normalize = none heads = 1
         : tensor<?x?x128xf32>, tensor<?x?x128xf32>, tensor<?x?x1024xf32> -> tensor<?x?x1024xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f32
    %s = arith.divf %qk, %nf : f32
    %b = attn.rel_pos_bias %w[%i, %j] max_len = 512 : tensor<1023xf32>
    %sb = arith.addf %s, %b : f32
    %zero = arith.constant 0.0 : f32
    %r = arith.maximumf %sb, %zero : f32
    %r2 = arith.mulf %r, %r : f32
    attn.yield %r2 : f32
  }
  return %o : tensor<?x?x1024xf32>
}

// -----

// Softmax attention with 8 heads, T5 bias, and every mask kind.
// CHECK-LABEL: func.func @attention_masks
func.func @attention_masks(%q: tensor<?x512xf32>, %v: tensor<?x256xf32>) {
  %emb = attn.weight "t5.emb" : tensor<32xf32>
  // CHECK: mask = #attn.mask<none> normalize = softmax heads = 8
  // CHECK: attn.t5_bias %{{.*}}[%{{.*}}, %{{.*}}] causal = false num_buckets = 32 max_distance = 128 scale = 1.000000e+00 : tensor<32xf32>
  %0 = attn.attention %q, %q, %v mask = #attn.mask<none> normalize = softmax heads = 8
         : tensor<?x512xf32>, tensor<?x512xf32>, tensor<?x256xf32> -> tensor<?x256xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    %b = attn.t5_bias %emb[%i, %j] causal = false num_buckets = 32 max_distance = 128 scale = 1.0 : tensor<32xf32>
    %s = math.fma %qk, %qk, %b : f32
    attn.yield %s : f32
  }
  // CHECK: mask = #attn.mask<window 64> normalize = softmax heads = 8
  %1 = attn.attention %q, %q, %v mask = #attn.mask<window 64> normalize = softmax heads = 8
         : tensor<?x512xf32>, tensor<?x512xf32>, tensor<?x256xf32> -> tensor<?x256xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  // CHECK: mask = #attn.mask<chunk 256> normalize = none heads = 2
  %2 = attn.attention %q, %q, %v mask = #attn.mask<chunk 256> normalize = none heads = 2
         : tensor<?x512xf32>, tensor<?x512xf32>, tensor<?x256xf32> -> tensor<?x256xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  // CHECK: mask = #attn.mask<band 16> normalize = softmax heads = 1
  %3 = attn.attention %q, %q, %v mask = #attn.mask<band 16> normalize = softmax heads = 1
         : tensor<?x512xf32>, tensor<?x512xf32>, tensor<?x256xf32> -> tensor<?x256xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  // CHECK: mask = #attn.mask<causal_chunk 256> normalize = none heads = 1
  %4 = attn.attention %q, %q, %v mask = #attn.mask<causal_chunk 256> normalize = none heads = 1
         : tensor<?x512xf32>, tensor<?x512xf32>, tensor<?x256xf32> -> tensor<?x256xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return
}

// -----

// CHECK-LABEL: func.func @linear_attn
func.func @linear_attn(%q: tensor<2x?x64xf32>, %k: tensor<2x?x64xf32>, %v: tensor<2x?x32xf32>) {
  // CHECK: attn.linear_attn %{{.*}}, %{{.*}}, %{{.*}} feature = elu1 causal = true normalize = true scale = 1.000000e+00 : tensor<2x?x64xf32>, tensor<2x?x64xf32>, tensor<2x?x32xf32> -> tensor<2x?x32xf32>
  %0 = attn.linear_attn %q, %k, %v feature = elu1 causal = true normalize = true scale = 1.0
         : tensor<2x?x64xf32>, tensor<2x?x64xf32>, tensor<2x?x32xf32> -> tensor<2x?x32xf32>
  // CHECK: attn.linear_attn %{{.*}}, %{{.*}}, %{{.*}} feature = identity causal = false normalize = false scale = 5.000000e-01
  %1 = attn.linear_attn %q, %k, %v feature = identity causal = false normalize = false scale = 0.5
         : tensor<2x?x64xf32>, tensor<2x?x64xf32>, tensor<2x?x32xf32> -> tensor<2x?x32xf32>
  // CHECK: attn.chunked_linear %{{.*}}, %{{.*}}, %{{.*}} chunk = 256 causal = true scale = 3.906250e-03 : tensor<2x?x64xf32>, tensor<2x?x64xf32>, tensor<2x?x32xf32> -> tensor<2x?x32xf32>
  %2 = attn.chunked_linear %q, %k, %v chunk = 256 causal = true scale = 3.906250e-03
         : tensor<2x?x64xf32>, tensor<2x?x64xf32>, tensor<2x?x32xf32> -> tensor<2x?x32xf32>
  return
}

// -----

// CHECK-LABEL: func.func @kernel
func.func @kernel(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>, %b: tensor<64xf32>) -> tensor<?x64xf32> {
  // CHECK: %[[K:.*]] = attn.kernel -> tensor<?x64xf32> {
  // CHECK:   %[[D:.*]] = attn.dense
  // CHECK:   %[[A:.*]] = attn.add %[[D]], %{{.*}}
  // CHECK:   attn.kernel_yield %[[A]] : tensor<?x64xf32>
  // CHECK: }
  %y = attn.kernel -> tensor<?x64xf32> {
    %d = attn.dense %x, %w, %b : tensor<?x64xf32>, tensor<64x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
    %a = attn.add %d, %x : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
    attn.kernel_yield %a : tensor<?x64xf32>
  }
  return %y : tensor<?x64xf32>
}

// -----

// Token ids: embedding, token_shift.
// CHECK-LABEL: func.func @tokens
func.func @tokens(%ids: tensor<?x?xi32>, %tok: tensor<50x64xf32>) -> tensor<?x?x64xf32> {
  // CHECK: attn.embedding %{{.*}}, %{{.*}} : tensor<?x?xi32>, tensor<50x64xf32> -> tensor<?x?x64xf32>
  %0 = attn.embedding %ids, %tok : tensor<?x?xi32>, tensor<50x64xf32> -> tensor<?x?x64xf32>
  // CHECK: attn.token_shift %{{.*}} dims = 32 : tensor<?x?x64xf32>
  %1 = attn.token_shift %0 dims = 32 : tensor<?x?x64xf32>
  // CHECK: attn.sinusoidal %{{.*}} base = 1.000000e+04 : tensor<?x?x64xf32>
  %2 = attn.sinusoidal %1 base = 1.0e+04 : tensor<?x?x64xf32>
  return %2 : tensor<?x?x64xf32>
}
