// RUN: attn-opt %s -split-input-file --attn-chunk | FileCheck %s

// Causal local attention under a chunk mask becomes causal attention on the
// chunked tensors (the chunk is a batch dim); the score region moves along.
// CHECK-LABEL: func.func @local_causal
// CHECK-SAME: (%[[Q:.*]]: tensor<?x16xf32>, %[[K:.*]]: tensor<?x16xf32>, %[[V:.*]]: tensor<?x32xf32>, %[[W:.*]]: tensor<15xf32>)
// CHECK-DAG: %[[QC:.*]] = attn.chunk %[[Q]] chunk = 8 : tensor<?x16xf32> -> tensor<?x8x16xf32>
// CHECK-DAG: %[[KC:.*]] = attn.chunk %[[K]] chunk = 8 : tensor<?x16xf32> -> tensor<?x8x16xf32>
// CHECK-DAG: %[[VC:.*]] = attn.chunk %[[V]] chunk = 8 : tensor<?x32xf32> -> tensor<?x8x32xf32>
// CHECK: %[[A:.*]] = attn.attention %[[QC]], %[[KC]], %[[VC]] mask = #attn.mask<causal> normalize = none heads = 1 : tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x32xf32> -> tensor<?x8x32xf32>
// CHECK: attn.rel_pos_bias %[[W]]
// CHECK: attn.yield
// CHECK: %[[Y:.*]] = attn.unchunk %[[A]], %[[Q]] : tensor<?x8x32xf32>, tensor<?x16xf32> -> tensor<?x32xf32>
// CHECK: return %[[Y]]
func.func @local_causal(%q: tensor<?x16xf32>, %k: tensor<?x16xf32>, %v: tensor<?x32xf32>, %w: tensor<15xf32>) -> tensor<?x32xf32> {
  %0 = attn.attention %q, %k, %v mask = #attn.mask<causal_chunk 8> normalize = none heads = 1
         : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    %c = arith.constant 1.250000e-01 : f32
    %s = arith.mulf %qk, %c : f32
    %b = attn.rel_pos_bias %w[%i, %j] max_len = 8 : tensor<15xf32>
    %t = arith.addf %s, %b : f32
    attn.yield %t : f32
  }
  return %0 : tensor<?x32xf32>
}

// -----

// A static length gives a static number of chunks: ceil(20 / 8) = 3.
// CHECK-LABEL: func.func @static_length
// CHECK: attn.chunk %{{.*}} chunk = 8 : tensor<2x20x16xf32> -> tensor<2x3x8x16xf32>
// CHECK: attn.attention {{.*}} mask = #attn.mask<none>
// CHECK: attn.unchunk {{.*}} -> tensor<2x20x32xf32>
func.func @static_length(%q: tensor<2x20x16xf32>, %v: tensor<2x20x32xf32>) -> tensor<2x20x32xf32> {
  %0 = attn.attention %q, %q, %v mask = #attn.mask<chunk 8> normalize = none heads = 1
         : tensor<2x20x16xf32>, tensor<2x20x16xf32>, tensor<2x20x32xf32> -> tensor<2x20x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return %0 : tensor<2x20x32xf32>
}

// -----

// The global term: per-chunk states, exclusive prefix (causal), application.
// CHECK-LABEL: func.func @global_causal
// CHECK-DAG: %[[QC:.*]] = attn.chunk %arg0 chunk = 4
// CHECK-DAG: %[[KC:.*]] = attn.chunk %arg1 chunk = 4
// CHECK-DAG: %[[VC:.*]] = attn.chunk %arg2 chunk = 4
// CHECK: %[[S:.*]] = attn.chunk_state %[[KC]], %[[VC]] scale = 2.500000e-01 : tensor<?x4x8xf32>, tensor<?x4x6xf32> -> tensor<?x8x6xf32>
// CHECK: %[[P:.*]] = attn.chunk_scan %[[S]] exclusive = true : tensor<?x8x6xf32>
// CHECK: %[[O:.*]] = attn.state_apply %[[QC]], %[[P]] : tensor<?x4x8xf32>, tensor<?x8x6xf32> -> tensor<?x4x6xf32>
// CHECK: attn.unchunk %[[O]], %arg0
func.func @global_causal(%q: tensor<?x8xf32>, %k: tensor<?x8xf32>, %v: tensor<?x6xf32>) -> tensor<?x6xf32> {
  %0 = attn.chunked_linear %q, %k, %v chunk = 4 causal = true scale = 2.500000e-01
         : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32> -> tensor<?x6xf32>
  return %0 : tensor<?x6xf32>
}

// -----

// Non-causal: the total over all chunks.
// CHECK-LABEL: func.func @global_bidirectional
// CHECK: attn.chunk_scan %{{.*}} exclusive = false
func.func @global_bidirectional(%q: tensor<?x8xf32>, %v: tensor<?x6xf32>) -> tensor<?x6xf32> {
  %0 = attn.chunked_linear %q, %q, %v chunk = 4 causal = false scale = 2.500000e-01
         : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32> -> tensor<?x6xf32>
  return %0 : tensor<?x6xf32>
}

// -----

// Not rewritten: softmax (padded keys would take part), a score that reads
// the key length or an absolute position, a mask that is not a chunk mask.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: attn.chunk
// CHECK: mask = #attn.mask<chunk 8> normalize = softmax
// CHECK: mask = #attn.mask<chunk 8> normalize = none
// CHECK: mask = #attn.mask<chunk 8> normalize = none
// CHECK: mask = #attn.mask<causal> normalize = none
func.func @kept(%q: tensor<?x16xf32>, %v: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %0 = attn.attention %q, %q, %v mask = #attn.mask<chunk 8> normalize = softmax heads = 1
         : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  %1 = attn.attention %q, %q, %0 mask = #attn.mask<chunk 8> normalize = none heads = 1
         : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    %ni = arith.index_cast %n : index to i64
    %nf = arith.sitofp %ni : i64 to f32
    %s = arith.divf %qk, %nf : f32
    attn.yield %s : f32
  }
  %2 = attn.attention %q, %q, %1 mask = #attn.mask<chunk 8> normalize = none heads = 1
         : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    %ii = arith.index_cast %i : index to i64
    %if = arith.sitofp %ii : i64 to f32
    %s = arith.mulf %qk, %if : f32
    attn.yield %s : f32
  }
  %3 = attn.attention %q, %q, %2 mask = #attn.mask<causal> normalize = none heads = 1
         : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return %3 : tensor<?x32xf32>
}

// -----

// Non-causal chunked_linear divided by the length (FLASH-pytorch): the
// total over chunks reads k's length.
// CHECK-LABEL: func.func @by_length
// CHECK-SAME: (%[[Q:.*]]: tensor<?x8xf32>,
// CHECK: attn.chunk_scan %{{.*}} length_of %[[Q]] : tensor<?x8xf32> exclusive = false
func.func @by_length(%q: tensor<?x8xf32>, %v: tensor<?x6xf32>) -> tensor<?x6xf32> {
  %0 = attn.chunked_linear %q, %q, %v chunk = 4 causal = false scale = 1.000000e+00 {divide_by_length = true}
       : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32> -> tensor<?x6xf32>
  return %0 : tensor<?x6xf32>
}

// -----

// Normalised linear attention: the numerator's and the denominator's chunk
// sums (the denominator's over a column of ones), divided by div_or_zero:
// a row whose features give no key any weight is 0, not 0 / 0.
// CHECK-LABEL: func.func @linear_normalized
// CHECK: %[[NUM:.*]] = attn.add
// CHECK: attn.pow
// CHECK: %[[DEN:.*]] = attn.add
// CHECK: attn.div_or_zero %[[NUM]], %[[DEN]] : tensor<?x6xf32>, tensor<?x1xf32> -> tensor<?x6xf32>
// CHECK-NOT: attn.div %
func.func @linear_normalized(%q: tensor<?x8xf32>, %v: tensor<?x6xf32>) -> tensor<?x6xf32> {
  %0 = attn.linear_attn %q, %q, %v feature = relu causal = true normalize = true scale = 1.0
         : tensor<?x8xf32>, tensor<?x8xf32>, tensor<?x6xf32> -> tensor<?x6xf32>
  return %0 : tensor<?x6xf32>
}

// -----

// An f16 model's normalised linear attention: the exponent of the column
// of ones and the scale are f16 constants, as every operand of an op has
// one element type (they were f32, and the IR did not verify).
// CHECK-LABEL: func.func @linear_normalized_f16
// CHECK: %[[ZERO:.*]] = attn.constant 0.000000e+00 : tensor<f16>
// CHECK: attn.pow %{{.*}}, %[[ZERO]] : tensor<?x1xf16>, tensor<f16>
// CHECK: %[[SCALE:.*]] = attn.constant 5.000000e-01 : tensor<f16>
// CHECK: attn.mul %{{.*}}, %[[SCALE]] : tensor<?x6xf16>, tensor<f16>
func.func @linear_normalized_f16(%q: tensor<?x8xf16>, %v: tensor<?x6xf16>) -> tensor<?x6xf16> {
  %0 = attn.linear_attn %q, %q, %v feature = elu1 causal = false normalize = true scale = 0.5
         : tensor<?x8xf16>, tensor<?x8xf16>, tensor<?x6xf16> -> tensor<?x6xf16>
  return %0 : tensor<?x6xf16>
}
