// RUN: attn-opt %s -split-input-file --attn-tile=target=x86-64-avx512 --verify-diagnostics | FileCheck %s --check-prefixes=CHECK,AVX512
// RUN: attn-opt %s -split-input-file --attn-tile=target=x86-64-avx2 --verify-diagnostics | FileCheck %s --check-prefixes=CHECK,AVX2
// RUN: attn-opt %s -split-input-file --attn-tile=target=cuda --verify-diagnostics | FileCheck %s --check-prefixes=CHECK,CUDA

// Dense: 4 vectors of columns by the most rows whose accumulators fit the
// registers less 6 (avx512: 4 x 6 of 26, avx2: 4 x 2 of 10); K = 512 needs
// no split on a CPU; on CUDA a block of 16 x 16 threads computes a 64 x 64
// tile, staging 16-deep operand panels in shared memory per step.
// CHECK-LABEL: func.func @dense
// AVX512: attn.dense {{.*}} {attn.schedule = #attn.schedule<strategy = gemm, tile = [64, 6], vector = 16, unroll = [4, 6], row_block = 96, pack_rhs = true, parallel = true, compute = root>}
// AVX2: attn.dense {{.*}} {attn.schedule = #attn.schedule<strategy = gemm, tile = [32, 2], vector = 8, unroll = [4, 2], row_block = 32, pack_rhs = true, parallel = true, compute = root>}
// CUDA: attn.dense {{.*}} {attn.schedule = #attn.schedule<strategy = gemm, tile = [64, 64], split_k = 16, gpu_threads = [16, 16], shared = true, compute = root>}
func.func @dense(%x: tensor<?x512xf32>, %w: tensor<512x2176xf32>, %b: tensor<2176xf32>) -> tensor<?x2176xf32> {
  %0 = attn.dense %x, %w, %b : tensor<?x512xf32>, tensor<512x2176xf32>, tensor<2176xf32> -> tensor<?x2176xf32>
  return %0 : tensor<?x2176xf32>
}

// -----

// A K = 8192 panel of tile x columns is larger than half of L2: split K.
// CHECK-LABEL: func.func @dense_long_k
// AVX512: attn.dense {{.*}} {attn.schedule = #attn.schedule<strategy = gemm, tile = [64, 6], vector = 16, unroll = [4, 6], split_k = 2048, row_block = 96, pack_rhs = true, parallel = true, compute = root>}
// AVX2: attn.dense {{.*}} {attn.schedule = #attn.schedule<strategy = gemm, tile = [32, 2], vector = 8, unroll = [4, 2], split_k = 4096, row_block = 32, pack_rhs = true, parallel = true, compute = root>}
// CUDA: attn.dense {{.*}} {attn.schedule = #attn.schedule<strategy = gemm, tile = [64, 64], split_k = 16, gpu_threads = [16, 16], shared = true, compute = root>}
func.func @dense_long_k(%x: tensor<?x8192xf32>, %w: tensor<8192x256xf32>, %b: tensor<256xf32>) -> tensor<?x256xf32> {
  %0 = attn.dense %x, %w, %b : tensor<?x8192xf32>, tensor<8192x256xf32>, tensor<256xf32> -> tensor<?x256xf32>
  return %0 : tensor<?x256xf32>
}

// -----

// Matmul with N = 32: two vectors on avx512 (so 8 rows fit), four on avx2;
// a 32-column tile (of 64 rows) on CUDA.
// CHECK-LABEL: func.func @matmul
// AVX512: attn.matmul {{.*}} {attn.schedule = #attn.schedule<strategy = gemm, tile = [32, 8], vector = 16, unroll = [2, 8], row_block = 128, pack_rhs = true, parallel = true, compute = root>}
// AVX2: attn.matmul {{.*}} {attn.schedule = #attn.schedule<strategy = gemm, tile = [32, 2], vector = 8, unroll = [4, 2], row_block = 32, pack_rhs = true, parallel = true, compute = root>}
// CUDA: attn.matmul {{.*}} {attn.schedule = #attn.schedule<strategy = gemm, tile = [32, 64], split_k = 16, gpu_threads = [16, 16], shared = true, compute = root>}
func.func @matmul(%a: tensor<?x?x64xf32>, %b: tensor<64x32xf32>) -> tensor<?x?x32xf32> {
  %0 = attn.matmul %a, %b : tensor<?x?x64xf32>, tensor<64x32xf32> -> tensor<?x?x32xf32>
  return %0 : tensor<?x?x32xf32>
}

// -----

// Softmax attention: blocks of queries x keys on a CPU (the softmax in two
// sweeps over the key blocks); on CUDA blocks of 64 queries x 32 value
// columns (16 x 16 threads), 32 keys per step staged in shared memory.
// CHECK-LABEL: func.func @attention
// AVX512: attn.attention {{.*}} {attn.schedule = #attn.schedule<strategy = blocked, tile = [32, 8], vector = 16, unroll = [2, 8], split_k = 128, parallel = true, compute = root>}
// AVX2: attn.attention {{.*}} {attn.schedule = #attn.schedule<strategy = blocked, tile = [16, 4], vector = 8, unroll = [2, 4], split_k = 128, parallel = true, compute = root>}
// CUDA: attn.attention {{.*}} {attn.schedule = #attn.schedule<strategy = blocked, tile = [32, 64], split_k = 32, gpu_threads = [16, 16], shared = true, compute = root>}
// CHECK-NOT: attn.schedule
// CHECK: attn.yield
func.func @attention(%q: tensor<?x64xf32>, %k: tensor<?x64xf32>, %v: tensor<?x32xf32>, %rel: tensor<63xf32>) -> tensor<?x32xf32> {
  %0 = attn.attention %q, %k, %v mask = #attn.mask<causal> normalize = softmax heads = 1 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    %b = attn.rel_pos_bias %rel[%i, %j] max_len = 32 : tensor<63xf32>
    %s = arith.addf %qk, %b : f32
    attn.yield %s : f32
  }
  return %0 : tensor<?x32xf32>
}

// -----

// Attention with one head and no softmax (GAU, FLASH's chunks): blocks of
// queries x keys (strategy = blocked), 128 keys over a sequence, 64 inside
// causal chunks of 256, 128 inside unmasked ones (every query block reads
// every key block); on CUDA the same blocks as softmax attention.
// CHECK-LABEL: func.func @blocked_attention
// AVX512: attn.attention {{.*}} {attn.schedule = #attn.schedule<strategy = blocked, tile = [32, 8], vector = 16, unroll = [2, 8], split_k = 128, parallel = true, compute = root>}
// AVX512: attn.attention {{.*}} {attn.schedule = #attn.schedule<strategy = blocked, tile = [32, 8], vector = 16, unroll = [2, 8], split_k = 64, parallel = true, compute = root>}
// AVX512: attn.attention {{.*}} {attn.schedule = #attn.schedule<strategy = blocked, tile = [32, 8], vector = 16, unroll = [2, 8], split_k = 128, parallel = true, compute = root>}
// AVX2: attn.attention {{.*}} {attn.schedule = #attn.schedule<strategy = blocked, tile = [16, 4], vector = 8, unroll = [2, 4], split_k = 128, parallel = true, compute = root>}
// AVX2: attn.attention {{.*}} {attn.schedule = #attn.schedule<strategy = blocked, tile = [16, 4], vector = 8, unroll = [2, 4], split_k = 64, parallel = true, compute = root>}
// AVX2: attn.attention {{.*}} {attn.schedule = #attn.schedule<strategy = blocked, tile = [16, 4], vector = 8, unroll = [2, 4], split_k = 128, parallel = true, compute = root>}
// CUDA: attn.attention {{.*}} {attn.schedule = #attn.schedule<strategy = blocked, tile = [32, 64], split_k = 32, gpu_threads = [16, 16], shared = true, compute = root>}
// CUDA: attn.attention {{.*}} {attn.schedule = #attn.schedule<strategy = blocked, tile = [32, 64], split_k = 32, gpu_threads = [16, 16], shared = true, compute = root>}
// CUDA: attn.attention {{.*}} {attn.schedule = #attn.schedule<strategy = blocked, tile = [32, 64], split_k = 32, gpu_threads = [16, 16], shared = true, compute = root>}
func.func @blocked_attention(%q: tensor<?x64xf32>, %v: tensor<?x32xf32>, %cq: tensor<?x256x64xf32>, %cv: tensor<?x256x32xf32>) -> (tensor<?x32xf32>, tensor<?x256x32xf32>, tensor<?x256x32xf32>) {
  %0 = attn.attention %q, %q, %v mask = #attn.mask<causal> normalize = none heads = 1 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  %1 = attn.attention %cq, %cq, %cv mask = #attn.mask<causal> normalize = none heads = 1 : tensor<?x256x64xf32>, tensor<?x256x64xf32>, tensor<?x256x32xf32> -> tensor<?x256x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  %2 = attn.attention %cq, %cq, %cv mask = #attn.mask<none> normalize = none heads = 1 : tensor<?x256x64xf32>, tensor<?x256x64xf32>, tensor<?x256x32xf32> -> tensor<?x256x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return %0, %1, %2 : tensor<?x32xf32>, tensor<?x256x32xf32>, tensor<?x256x32xf32>
}

// -----

// A chunk mask keeps attention row by row on a CPU (only the row's chunk is
// visited).
// CHECK-LABEL: func.func @chunk_mask
// AVX512: attn.attention {{.*}} {attn.schedule = #attn.schedule<strategy = rows, vector = 16, parallel = true, compute = root>}
// AVX2: attn.attention {{.*}} {attn.schedule = #attn.schedule<strategy = rows, vector = 8, parallel = true, compute = root>}
func.func @chunk_mask(%q: tensor<?x64xf32>, %v: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %0 = attn.attention %q, %q, %v mask = #attn.mask<chunk 64> normalize = softmax heads = 2 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return %0 : tensor<?x32xf32>
}

// -----

// A blocked schedule is checked against the target: too wide for these
// CPUs, and on CUDA not a GPU schedule.
func.func @tile_over_budget(%q: tensor<?x64xf32>, %v: tensor<?x32xf32>) -> tensor<?x32xf32> {
  // expected-error-re @+1 {{schedule {{(vector 32 is wider than the (16|8) lanes of target x86-64-avx(512|2)|strategy = blocked at compute = root on target cuda needs gpu_threads)}}}}
  %0 = attn.attention %q, %q, %v mask = #attn.mask<none> normalize = none heads = 1 {attn.schedule = #attn.schedule<strategy = blocked, tile = [64, 8], vector = 32, unroll = [2, 4], split_k = 64, parallel = true>} : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x32xf32> -> tensor<?x32xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return %0 : tensor<?x32xf32>
}

// -----

// Row-wise ops: 4 vectors of columns, parallel rows in tasks of at least
// 4096 elements (16 rows of 256, at most 64 rows); a rank-1 result is not
// parallel; 64 threads per block on CUDA ([16, 4] for rows of 16).
// CHECK-LABEL: func.func @elementwise
// AVX512: attn.silu {{.*}} {attn.schedule = #attn.schedule<tile = [64, 16], vector = 16, parallel = true, compute = root>}
// AVX512: attn.layer_norm {{.*}} {attn.schedule = #attn.schedule<tile = [64, 16], vector = 16, parallel = true, compute = root>}
// AVX512: attn.rope {{.*}} {attn.schedule = #attn.schedule<tile = [16, 64], vector = 16, parallel = true, compute = root>}
// AVX512: attn.add {{.*}} {attn.schedule = #attn.schedule<tile = [64, 1], vector = 16, compute = root>}
// AVX2: attn.silu {{.*}} {attn.schedule = #attn.schedule<tile = [32, 16], vector = 8, parallel = true, compute = root>}
// AVX2: attn.layer_norm {{.*}} {attn.schedule = #attn.schedule<tile = [32, 16], vector = 8, parallel = true, compute = root>}
// AVX2: attn.rope {{.*}} {attn.schedule = #attn.schedule<tile = [16, 64], vector = 8, parallel = true, compute = root>}
// AVX2: attn.add {{.*}} {attn.schedule = #attn.schedule<tile = [32, 1], vector = 8, compute = root>}
// CUDA: attn.silu {{.*}} {attn.schedule = #attn.schedule<tile = [64, 1], gpu_threads = [64, 1], compute = root>}
// CUDA: attn.layer_norm {{.*}} {attn.schedule = #attn.schedule<tile = [64, 1], gpu_threads = [64, 1], compute = root>}
// CUDA: attn.rope {{.*}} {attn.schedule = #attn.schedule<tile = [16, 4], gpu_threads = [16, 4], compute = root>}
// CUDA: attn.add {{.*}} {attn.schedule = #attn.schedule<tile = [64, 1], gpu_threads = [64, 1], compute = root>}
func.func @elementwise(%x: tensor<?x256xf32>, %g: tensor<256xf32>, %z: tensor<?x16xf32>) -> (tensor<?x256xf32>, tensor<?x16xf32>, tensor<256xf32>) {
  %0 = attn.silu %x : tensor<?x256xf32>
  %1 = attn.layer_norm %0 weight %g eps = 1.0e-05 : (tensor<?x256xf32>, tensor<256xf32>) -> tensor<?x256xf32>
  %2 = attn.rope %z mode = half rotary_dims = 16 base = 1.0e+04 : tensor<?x16xf32>
  %3 = attn.add %g, %g : tensor<256xf32>, tensor<256xf32> -> tensor<256xf32>
  return %1, %2, %3 : tensor<?x256xf32>, tensor<?x16xf32>, tensor<256xf32>
}

// -----

// Pure views stay unscheduled; the stages that copy the results out get
// schedules as result attributes (row-wise ones; a scalar has no loops).
// CHECK-LABEL: func.func @views
// AVX512-SAME: -> (tensor<?x48xf32> {attn.schedule = #attn.schedule<tile = [48, 64], vector = 16, parallel = true, compute = root>}
// CUDA-SAME: -> (tensor<?x48xf32> {attn.schedule = #attn.schedule<tile = [32, 2], gpu_threads = [32, 2], compute = root>}
// CHECK-SAME: tensor<f32> {attn.schedule = #attn.schedule<{{.*}}compute = root>}) {
// CHECK-NOT: attn.schedule
// CHECK: return
func.func @views(%x: tensor<?x64xf32>) -> (tensor<?x48xf32>, tensor<64x?xf32>, tensor<16xf32>, tensor<f32>) {
  %p:2 = attn.split %x [48, 16] : tensor<?x64xf32> -> tensor<?x48xf32>, tensor<?x16xf32>
  %t = attn.transpose %x : tensor<?x64xf32> -> tensor<64x?xf32>
  %w = attn.weight "l.gamma" : tensor<2x16xf32>
  %r = attn.row %w[1] : tensor<2x16xf32> -> tensor<16xf32>
  %c = attn.constant 2.0 : tensor<f32>
  return %p#0, %t, %r, %c : tensor<?x48xf32>, tensor<64x?xf32>, tensor<16xf32>, tensor<f32>
}

// -----

// An existing schedule is kept (and checked against the target; a kept
// loop schedule: attn-tile-kept.mlir).
// CHECK-LABEL: func.func @kept
// CHECK: attn.silu {{.*}} {attn.schedule = #attn.schedule<compute = inline>}
// AVX512: attn.exp {{.*}} {attn.schedule = #attn.schedule<tile = [64, 64], vector = 16, parallel = true, compute = root>}
func.func @kept(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %0 = attn.silu %x {attn.schedule = #attn.schedule<compute = inline>} : tensor<?x64xf32>
  %1 = attn.exp %0 : tensor<?x64xf32>
  return %1 : tensor<?x64xf32>
}

// -----

// An existing schedule beyond the target's budget is reported at its op.
func.func @over_budget(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error-re @+1 {{schedule {{(vector 32 is wider than the (16|8) lanes of target x86-64-avx(512|2)|strategy = loops at compute = root on target cuda needs gpu_threads)}}}}
  %0 = attn.silu %x {attn.schedule = #attn.schedule<tile = [64, 1], vector = 32>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

// Kernels (formed by attn-fuse): the anchor (the product) gets its loop
// schedule and every elementwise member runs inside it (compute = inline:
// the activation in its output stage, the prologue in its loads or, on
// CUDA, its shared-memory staging); the split view stays unscheduled.
// CHECK-LABEL: func.func @fused
// AVX512: attn.dense {{.*}}tile = [64, 6]
// AVX512: attn.silu {{.*}}{attn.schedule = #attn.schedule<compute = inline>}
// AVX512: attn.split
// AVX512-NOT: attn.schedule
// AVX512: attn.kernel_yield
// AVX512: attn.add {{.*}}{attn.schedule = #attn.schedule<compute = inline>}
// AVX512: attn.mul {{.*}}{attn.schedule = #attn.schedule<compute = inline>}
// AVX512: attn.dense {{.*}}tile = [64, 6]
// AVX512: attn.add {{.*}}{attn.schedule = #attn.schedule<compute = inline>}
// A member whose result leaves the kernel without being a product's
// epilogue is stored (compute = root), so consumers outside do not
// recompute it.
// AVX512: attn.exp {{.*}}{attn.schedule = #attn.schedule<compute = inline>}
// AVX512: attn.neg {{.*}}{attn.schedule = #attn.schedule<tile = [64, 64], vector = 16, parallel = true, compute = root>}
// AVX512: attn.mul {{.*}}{attn.schedule = #attn.schedule<tile = [64, 64], vector = 16, parallel = true, compute = root>}
// A norm before a product is inlined into its staging; the product anchors.
// AVX512: attn.layer_norm {{.*}}{attn.schedule = #attn.schedule<compute = inline>}
// AVX512: attn.dense {{.*}}tile = [64, 6]
// Outside kernels nothing is inlined.
// AVX512: attn.sub {{.*}}{attn.schedule = #attn.schedule<tile = [64, 64], vector = 16, parallel = true, compute = root>}
// CUDA: attn.dense {{.*}}gpu_threads = [16, 16], shared = true
// CUDA: attn.silu {{.*}}{attn.schedule = #attn.schedule<compute = inline>}
// CUDA: attn.add {{.*}}{attn.schedule = #attn.schedule<compute = inline>}
// CUDA: attn.mul {{.*}}{attn.schedule = #attn.schedule<compute = inline>}
// CUDA: attn.dense {{.*}}gpu_threads = [16, 16], shared = true
// CUDA: attn.add {{.*}}{attn.schedule = #attn.schedule<compute = inline>}
// CUDA: attn.exp {{.*}}{attn.schedule = #attn.schedule<compute = inline>}
// CUDA: attn.neg {{.*}}gpu_threads
// CUDA: attn.mul {{.*}}gpu_threads
// CUDA: attn.layer_norm {{.*}}{attn.schedule = #attn.schedule<compute = inline>}
// CUDA: attn.sub {{.*}}gpu_threads
func.func @fused(%x: tensor<?x64xf32>, %w: tensor<64x128xf32>, %b: tensor<128xf32>, %w2: tensor<64x64xf32>, %b2: tensor<64xf32>) -> tensor<?x64xf32> {
  %u, %v = attn.kernel -> tensor<?x64xf32>, tensor<?x64xf32> {
    %d = attn.dense %x, %w, %b : tensor<?x64xf32>, tensor<64x128xf32>, tensor<128xf32> -> tensor<?x128xf32>
    %s = attn.silu %d : tensor<?x128xf32>
    %p:2 = attn.split %s [64, 64] : tensor<?x128xf32> -> tensor<?x64xf32>, tensor<?x64xf32>
    attn.kernel_yield %p#0, %p#1 : tensor<?x64xf32>, tensor<?x64xf32>
  }
  %y = attn.kernel -> tensor<?x64xf32> {
    %a = attn.add %u, %v : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
    %m = attn.mul %a, %u : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
    %o = attn.dense %m, %w2, %b2 : tensor<?x64xf32>, tensor<64x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
    %r = attn.add %o, %x : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
    attn.kernel_yield %r : tensor<?x64xf32>
  }
  %e:2 = attn.kernel -> tensor<?x64xf32>, tensor<?x64xf32> {
    %a = attn.exp %y : tensor<?x64xf32>
    %n = attn.neg %a : tensor<?x64xf32>
    %m = attn.mul %n, %x : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
    attn.kernel_yield %n, %m : tensor<?x64xf32>, tensor<?x64xf32>
  }
  %l = attn.kernel -> tensor<?x64xf32> {
    %n = attn.layer_norm %x weight %b2 eps = 1.000000e-05 : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
    %d = attn.dense %n, %w2, %b2 : tensor<?x64xf32>, tensor<64x64xf32>, tensor<64xf32> -> tensor<?x64xf32>
    attn.kernel_yield %d : tensor<?x64xf32>
  }
  %s = attn.sub %e#0, %e#1 : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  %z = attn.sub %s, %l : tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32>
  return %z : tensor<?x64xf32>
}

// -----

// A chunk is computed in its consumers (a stored copy would only move
// data): compute = inline on every target; the products it feeds get
// their own schedules.
// CHECK-LABEL: func.func @chunk_inline
// CHECK: attn.chunk {{.*}}{attn.schedule = #attn.schedule<compute = inline>}
// CHECK: attn.chunk_state {{.*}}strategy = gemm
func.func @chunk_inline(%k: tensor<?x64xf32>, %v: tensor<?x32xf32>) -> tensor<?x64x32xf32> {
  %kc = attn.chunk %k chunk = 16 : tensor<?x64xf32> -> tensor<?x16x64xf32>
  %vc = attn.chunk %v chunk = 16 : tensor<?x32xf32> -> tensor<?x16x32xf32>
  %s = attn.chunk_state %kc, %vc scale = 1.0 : tensor<?x16x64xf32>, tensor<?x16x32xf32> -> tensor<?x64x32xf32>
  return %s : tensor<?x64x32xf32>
}
