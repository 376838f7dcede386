// RUN: attn-opt %s -split-input-file --attn-expand-layers --verify-diagnostics | FileCheck %s

// GAU: one dense to u|v|z, SiLU, two scale-offset rows, RoPE, relu(qk/n + b)^2
// under a causal mask, gate, output dense, residual.
// CHECK-LABEL: func.func @gau
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xf32>)
// CHECK-DAG: %[[NW:.*]] = attn.weight "g.norm.weight" : tensor<64xf32>
// CHECK-DAG: %[[NB:.*]] = attn.weight "g.norm.bias" : tensor<64xf32>
// CHECK: %[[H:.*]] = attn.layer_norm %[[X]] weight %[[NW]] bias %[[NB]] eps = 1.000000e-05
// CHECK-DAG: %[[WUVZ:.*]] = attn.weight "g.uvz.weight" : tensor<64x272xf32>
// CHECK-DAG: %[[BUVZ:.*]] = attn.weight "g.uvz.bias" : tensor<272xf32>
// CHECK: %[[D:.*]] = attn.dense %[[H]], %[[WUVZ]], %[[BUVZ]]
// CHECK: %[[A:.*]] = attn.silu %[[D]] : tensor<?x272xf32>
// CHECK: %[[UVZ:.*]]:3 = attn.split %[[A]] [128, 128, 16]
// CHECK-DAG: %[[G:.*]] = attn.weight "g.gamma" : tensor<2x16xf32>
// CHECK-DAG: %[[B:.*]] = attn.weight "g.beta" : tensor<2x16xf32>
// CHECK-DAG: %[[G0:.*]] = attn.row %[[G]][0]
// CHECK-DAG: %[[B0:.*]] = attn.row %[[B]][0]
// CHECK-DAG: %[[G1:.*]] = attn.row %[[G]][1]
// CHECK-DAG: %[[B1:.*]] = attn.row %[[B]][1]
// CHECK-DAG: %[[Q:.*]] = attn.scale_offset %[[UVZ]]#2, %[[G0]], %[[B0]]
// CHECK-DAG: %[[K:.*]] = attn.scale_offset %[[UVZ]]#2, %[[G1]], %[[B1]]
// CHECK-DAG: %[[QR:.*]] = attn.rope %[[Q]] mode = half rotary_dims = 16 base = 1.000000e+04
// CHECK-DAG: %[[KR:.*]] = attn.rope %[[K]] mode = half rotary_dims = 16
// CHECK: %[[REL:.*]] = attn.weight "g.rel_pos" : tensor<63xf32>
// CHECK: %[[ATT:.*]] = attn.attention %[[QR]], %[[KR]], %[[UVZ]]#1 mask = #attn.mask<causal> normalize = none heads = 1
// CHECK-NEXT: ^bb0(%[[QK:.*]]: f32, %[[I:.*]]: index, %[[J:.*]]: index, %[[N:.*]]: index):
// CHECK: %[[NI:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK: %[[NF:.*]] = arith.sitofp %[[NI]] : i64 to f32
// CHECK: %[[S:.*]] = arith.divf %[[QK]], %[[NF]] : f32
// CHECK: %[[BIAS:.*]] = attn.rel_pos_bias %[[REL]][%[[I]], %[[J]]] max_len = 32
// CHECK: %[[SB:.*]] = arith.addf %[[S]], %[[BIAS]] : f32
// CHECK: %[[R:.*]] = arith.maximumf %[[SB]], %{{.*}} : f32
// CHECK: %[[R2:.*]] = arith.mulf %[[R]], %[[R]] : f32
// CHECK: attn.yield %[[R2]] : f32
// CHECK: %[[GATED:.*]] = attn.mul %[[UVZ]]#0, %[[ATT]]
// CHECK: %[[OUT:.*]] = attn.dense %[[GATED]], %{{.*}}, %{{.*}} : tensor<?x128xf32>, tensor<128x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
// CHECK: %[[Y:.*]] = attn.add %[[OUT]], %[[X]]
// CHECK: return %[[Y]]
// CHECK-NOT: attn.gau
func.func @gau(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = attn.gau %x (layer_name = "g", e = 128, s = 16, causal = true, norm = layer_norm,
                    max_len = 32, rel_pos = toeplitz, rope = true, eps = 1.0e-05) : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// FLASH: four scale-offset rows (quad_q, quad_k, lin_q, lin_k); local
// relu(qk/C + b)^2 inside causal chunks; global chunked_linear / C with the
// exclusive prefix, built first (codegen's chunk attention then finds its
// states lowered and adds their product in its accumulators); scale_norm
// has a single gain.
// CHECK-LABEL: func.func @flash
// CHECK: %[[NW:.*]] = attn.weight "f.norm.weight" : tensor<1xf32>
// CHECK-NOT: "f.norm.bias"
// CHECK: attn.scale_norm %{{.*}}, %[[NW]]
// CHECK: attn.weight "f.gamma" : tensor<4x16xf32>
// CHECK: attn.row %{{.*}}[3]
// CHECK: %[[GLOBAL:.*]] = attn.chunked_linear {{.*}} chunk = 8 causal = true scale = 1.250000e-01
// CHECK: %[[REL:.*]] = attn.weight "f.rel_pos" : tensor<15xf32>
// CHECK: %[[LOCAL:.*]] = attn.attention {{.*}} mask = #attn.mask<causal_chunk 8> normalize = none heads = 1
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: attn.rel_pos_bias %[[REL]]{{.*}} max_len = 8
// CHECK: %[[SUM:.*]] = attn.add %[[LOCAL]], %[[GLOBAL]]
// CHECK: attn.mul %{{.*}}#0, %[[SUM]]
// CHECK-NOT: attn.flash
func.func @flash(%x: tensor<2x?x64xf32>) -> tensor<2x?x64xf32> {
  %y = attn.flash %x (layer_name = "f", e = 128, s = 16, chunk = 8, causal = true, norm = scale_norm,
                      rel_pos = toeplitz, rope = true, eps = 1.0e-05) : tensor<2x?x64xf32>
  return %y : tensor<2x?x64xf32>
}

// -----

// Non-causal FLASH without relative bias or RoPE: block-diagonal local mask,
// total (not prefix) global state.
// CHECK-LABEL: func.func @flash_bidir
// CHECK-NOT: attn.rope
// CHECK-NOT: rel_pos
// CHECK: attn.chunked_linear {{.*}} chunk = 4 causal = false scale = 2.500000e-01
// CHECK: attn.attention {{.*}} mask = #attn.mask<chunk 4>
func.func @flash_bidir(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %y = attn.flash %x (layer_name = "f", e = 64, s = 8, chunk = 4, causal = false, norm = rms_norm,
                      rel_pos = none, rope = false, eps = 1.0e-05) : tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// MHSA: qkv dense, softmax attention scaled by 1/sqrt(d/heads).
// CHECK-LABEL: func.func @mhsa
// CHECK: %[[SCALE:.*]] = arith.constant 2.500000e-01 : f32
// CHECK: attn.weight "m.qkv.weight" : tensor<64x192xf32>
// CHECK: attn.split %{{.*}} [64, 64, 64]
// CHECK: attn.attention {{.*}} mask = #attn.mask<causal> normalize = softmax heads = 4
// CHECK: arith.mulf %{{.*}}, %[[SCALE]] : f32
// CHECK: attn.weight "m.out.weight" : tensor<64x64xf32>
func.func @mhsa(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = attn.mhsa %x (layer_name = "m", heads = 4, causal = true, norm = layer_norm, eps = 1.0e-05) : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// Local attention: each (block, causal) pair picks its mask.
// CHECK-LABEL: func.func @local
// CHECK: mask = #attn.mask<window 16> normalize = softmax heads = 2
// CHECK: mask = #attn.mask<band 16> normalize = softmax heads = 2
// CHECK: mask = #attn.mask<chunk 16> normalize = softmax heads = 2
// CHECK: mask = #attn.mask<causal_chunk 16> normalize = softmax heads = 2
func.func @local(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %a = attn.local_attention %x (layer_name = "a", heads = 2, window = 16, causal = true, block = false, norm = layer_norm, eps = 1.0e-05) : tensor<?x32xf32>
  %b = attn.local_attention %a (layer_name = "b", heads = 2, window = 16, causal = false, block = false, norm = layer_norm, eps = 1.0e-05) : tensor<?x32xf32>
  %c = attn.local_attention %b (layer_name = "c", heads = 2, window = 16, causal = false, block = true, norm = layer_norm, eps = 1.0e-05) : tensor<?x32xf32>
  %d = attn.local_attention %c (layer_name = "d", heads = 2, window = 16, causal = true, block = true, norm = layer_norm, eps = 1.0e-05) : tensor<?x32xf32>
  return %d : tensor<?x32xf32>
}

// -----

// Linear attention layer (one head): normalised, feature map kept.
// CHECK-LABEL: func.func @linear
// CHECK: attn.linear_attn {{.*}} feature = elu1 causal = true normalize = true scale = 1.000000e+00
func.func @linear(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %y = attn.linear_attention %x (layer_name = "l", heads = 1, causal = true, feature = elu1, norm = layer_norm, eps = 1.0e-05) : tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

func.func @linear_heads(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  // expected-error @+1 {{linear_attention with heads = 2 is not supported yet; use heads = 1}}
  %y = attn.linear_attention %x (layer_name = "l", heads = 2, causal = true, feature = elu1, norm = layer_norm, eps = 1.0e-05) : tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// GLU FFN: the activation on both halves (the paper's GLU).
// CHECK-LABEL: func.func @glu
// CHECK: %[[AB:.*]]:2 = attn.split %{{.*}} [96, 96]
// CHECK-DAG: %[[U:.*]] = attn.gelu %[[AB]]#0
// CHECK-DAG: %[[V:.*]] = attn.gelu %[[AB]]#1
// CHECK: attn.mul %[[U]], %[[V]]
// CHECK: attn.weight "ffn.out.weight" : tensor<96x32xf32>
func.func @glu(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %y = attn.glu_ffn %x (layer_name = "ffn", hidden = 96, activation = gelu, norm = layer_norm, eps = 1.0e-05) : tensor<?x32xf32>
  return %y : tensor<?x32xf32>
}

// -----

// FLASH-pytorch's FLASH: clamped scale_norm, token shift of the first half
// of the features, interleaved RoPE on 8 of the 16 features, the T5 bias
// scaled by sqrt(s) added after qk / C, and the non-causal state divided by
// n (divide_by_length, scale 1).
// CHECK-LABEL: func.func @flash_pytorch
// CHECK: %[[NW:.*]] = attn.weight "p.norm.weight" : tensor<1xf32>
// CHECK: %[[H:.*]] = attn.scale_norm %{{.*}}, %[[NW]] eps = 1.000000e-05 {clamp = true}
// CHECK: %[[S:.*]] = attn.token_shift %[[H]] dims = 32
// CHECK: attn.dense %[[S]]
// CHECK: attn.rope %{{.*}} mode = interleaved rotary_dims = 8
// CHECK: attn.chunked_linear {{.*}} chunk = 8 causal = false scale = 1.000000e+00 {divide_by_length = true}
// CHECK: %[[T5:.*]] = attn.weight "p.rel_pos" : tensor<16xf32>
// CHECK: attn.attention {{.*}} mask = #attn.mask<chunk 8>
// CHECK: %[[SCALED:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: %[[BIAS:.*]] = attn.t5_bias %[[T5]]{{.*}} causal = false num_buckets = 16 max_distance = 64 scale = 4.000000e+00
// CHECK: arith.addf %[[SCALED]], %[[BIAS]]
func.func @flash_pytorch(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = attn.flash %x (layer_name = "p", e = 128, s = 16, chunk = 8, causal = false, norm = scale_norm,
                      rel_pos = t5, rope = true, eps = 1.0e-05)
                      {num_buckets = 16 : i64, max_distance = 64 : i64, rope_dims = 8 : i64,
                       rope_mode = #attn<rope_mode interleaved>, shift_tokens = true,
                       norm_clamp = true, lin_by_length = true} : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// FLASH-pytorch's GAU: the T5 bias (scaled by sqrt(d)) is added to qk
// before the division by n.
// CHECK-LABEL: func.func @gau_pytorch
// CHECK: attn.attention
// CHECK: ^bb0(%[[QK:.*]]: f32, %[[I:.*]]: index, %[[J:.*]]: index, %[[N:.*]]: index):
// CHECK: %[[BIAS:.*]] = attn.t5_bias %{{.*}}[%[[I]], %[[J]]] causal = true num_buckets = 32 max_distance = 128 scale = 8.000000e+00
// CHECK: %[[SUM:.*]] = arith.addf %[[QK]], %[[BIAS]]
// CHECK: arith.divf %[[SUM]]
func.func @gau_pytorch(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %y = attn.gau %x (layer_name = "g", e = 128, s = 16, causal = true, norm = layer_norm,
                    max_len = 32, rel_pos = t5, rope = false, eps = 1.0e-05) : tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
