// RUN: attn-opt %s -split-input-file | attn-opt -split-input-file | FileCheck %s
// RUN: attn-opt %s -split-input-file -mlir-print-op-generic | attn-opt -split-input-file | FileCheck %s

// Round trip of #attn.schedule: any subset of the parameters in any order
// prints in the fixed order strategy, tile, vector, unroll, split_k,
// row_block, stage_lhs, pack_rhs, parallel, gpu_threads, shared, compute,
// with defaults omitted
// and compute always printed.

// CHECK-LABEL: func.func @cpu_gemm
// CHECK: attn.dense %{{.*}} {attn.schedule = #attn.schedule<strategy = gemm, tile = [64, 6], vector = 16, unroll = [4, 6], split_k = 256, row_block = 96, stage_lhs = true, pack_rhs = true, parallel = true, compute = root>}
func.func @cpu_gemm(%x: tensor<?x512xf32>, %w: tensor<512x256xf32>, %b: tensor<256xf32>) -> tensor<?x256xf32> {
  %0 = attn.dense %x, %w, %b {attn.schedule = #attn.schedule<strategy = gemm, pack_rhs = true, tile = [64, 6], vector = 16, unroll = [4, 6], split_k = 256, row_block = 96, stage_lhs = true, parallel = true, compute = root>} : tensor<?x512xf32>, tensor<512x256xf32>, tensor<256xf32> -> tensor<?x256xf32>
  return %0 : tensor<?x256xf32>
}

// -----

// CHECK-LABEL: func.func @cuda_gemm
// CHECK: attn.matmul %{{.*}} {attn.schedule = #attn.schedule<strategy = gemm, tile = [64, 64], split_k = 16, gpu_threads = [16, 16], shared = true, compute = root>}
func.func @cuda_gemm(%a: tensor<?x64xf32>, %b: tensor<64x128xf32>) -> tensor<?x128xf32> {
  %0 = attn.matmul %a, %b {attn.schedule = #attn.schedule<shared = true, strategy = gemm, tile = [64, 64], split_k = 16, gpu_threads = [16, 16], compute = root>} : tensor<?x64xf32>, tensor<64x128xf32> -> tensor<?x128xf32>
  return %0 : tensor<?x128xf32>
}

// -----

// Keys in any order print canonically.
// CHECK-LABEL: func.func @any_order
// CHECK: attn.silu %{{.*}} {attn.schedule = #attn.schedule<tile = [32, 2], vector = 8, unroll = [2, 2], parallel = true, compute = root>}
func.func @any_order(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %0 = attn.silu %x {attn.schedule = #attn.schedule<compute = root, parallel = true, unroll = [2, 2], vector = 8, tile = [32, 2]>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

// Defaults written out, omitted or all left away print as compute only.
// The naive baseline prints its strategy.
// CHECK-LABEL: func.func @defaults
// CHECK: attn.relu %{{.*}} {attn.schedule = #attn.schedule<compute = root>}
// CHECK: attn.exp %{{.*}} {attn.schedule = #attn.schedule<compute = root>}
// CHECK: attn.neg %{{.*}} {attn.schedule = #attn.schedule<compute = root>}
// CHECK: attn.sqrt %{{.*}} {attn.schedule = #attn.schedule<strategy = naive, compute = root>}
func.func @defaults(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %0 = attn.relu %x {attn.schedule = #attn.schedule<strategy = loops, tile = [1, 1], vector = 1, unroll = [1, 1], split_k = 0, row_block = 0, stage_lhs = false, pack_rhs = false, parallel = false, gpu_threads = [0, 0], shared = false, compute = root>} : tensor<?x64xf32>
  %1 = attn.exp %0 {attn.schedule = #attn.schedule<>} : tensor<?x64xf32>
  %2 = attn.neg %1 {attn.schedule = #attn.schedule<parallel = false>} : tensor<?x64xf32>
  %3 = attn.sqrt %2 {attn.schedule = #attn.schedule<strategy = naive>} : tensor<?x64xf32>
  return %3 : tensor<?x64xf32>
}

// -----

// The algorithms of attention (scores one query row at a time, whole score
// matrices, blocks) and compute = inline.
// CHECK-LABEL: func.func @compute_at
// CHECK: attn.attention {{.*}} {attn.schedule = #attn.schedule<strategy = rows, vector = 16, parallel = true, compute = root>}
// CHECK: attn.attention {{.*}} {attn.schedule = #attn.schedule<strategy = materialized, vector = 8, compute = root>}
// CHECK: attn.attention {{.*}} {attn.schedule = #attn.schedule<strategy = blocked, tile = [32, 8], vector = 16, unroll = [2, 8], split_k = 64, parallel = true, compute = root>}
// CHECK: attn.sigmoid %{{.*}} {attn.schedule = #attn.schedule<compute = inline>}
func.func @compute_at(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %0 = attn.attention %q, %k, %v mask = #attn.mask<causal> normalize = softmax heads = 1 {attn.schedule = #attn.schedule<parallel = true, vector = 16, strategy = rows>} : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  %1 = attn.attention %q, %k, %v mask = #attn.mask<causal> normalize = softmax heads = 1 {attn.schedule = #attn.schedule<strategy = materialized, vector = 8>} : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  %2 = attn.attention %q, %k, %v mask = #attn.mask<causal> normalize = softmax heads = 1 {attn.schedule = #attn.schedule<strategy = blocked, tile = [32, 8], vector = 16, unroll = [2, 8], split_k = 64, parallel = true>} : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  %3 = attn.add %0, %1 : tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x32xf32>
  %4 = attn.add %3, %2 : tensor<?x32xf32>, tensor<?x32xf32> -> tensor<?x32xf32>
  %5 = attn.sigmoid %4 {attn.schedule = #attn.schedule<compute = inline>} : tensor<?x32xf32>
  return %5 : tensor<?x32xf32>
}

// -----

// Vector without tiling, a GPU mapping of one element per thread, and the
// largest legal vector and thread block.
// CHECK-LABEL: func.func @edges
// CHECK: attn.rms_norm %{{.*}} {attn.schedule = #attn.schedule<vector = 64, compute = root>}
// CHECK: attn.tanh %{{.*}} {attn.schedule = #attn.schedule<tile = [64, 16], gpu_threads = [64, 16], compute = root>}
// CHECK: attn.sqrt %{{.*}} {attn.schedule = #attn.schedule<tile = [128, 4], vector = 64, unroll = [2, 4], split_k = 1, compute = root>}
func.func @edges(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %0 = attn.rms_norm %x eps = 1.0e-05 {attn.schedule = #attn.schedule<vector = 64>} : (tensor<?x64xf32>) -> tensor<?x64xf32>
  %1 = attn.tanh %0 {attn.schedule = #attn.schedule<gpu_threads = [64, 16], tile = [64, 16]>} : tensor<?x64xf32>
  %2 = attn.sqrt %1 {attn.schedule = #attn.schedule<tile = [128, 4], vector = 64, unroll = [2, 4], split_k = 1>} : tensor<?x64xf32>
  return %2 : tensor<?x64xf32>
}
