// RUN: attn-opt %s --attn-tile=target=x86-64-avx2 | FileCheck %s
// RUN: attn-opt %s --attn-tile="target=x86-64-avx2 policy=naive" | FileCheck %s --check-prefix=NAIVE
// RUN: not attn-opt %s --attn-tile="target=x86-64-avx2 policy=fast" 2>&1 | FileCheck %s --check-prefix=POLICY

// Schedules already on the ops and results are kept under either policy;
// the rest get the policy's: the cost model's, or the naive baseline.
// CHECK-LABEL: func.func @kept
// CHECK-SAME: -> (tensor<?x64xf32> {attn.schedule = #attn.schedule<vector = 4, compute = root>})
// CHECK: attn.relu {{.*}} {attn.schedule = #attn.schedule<tile = [16, 4], vector = 4, unroll = [2, 2], compute = root>}
// CHECK: attn.matmul {{.*}} {attn.schedule = #attn.schedule<strategy = gemm, tile = [32, 2], vector = 8, unroll = [4, 2], row_block = 32, pack_rhs = true, parallel = true, compute = root>}
// NAIVE-LABEL: func.func @kept
// NAIVE-SAME: -> (tensor<?x64xf32> {attn.schedule = #attn.schedule<vector = 4, compute = root>})
// NAIVE: attn.relu {{.*}} {attn.schedule = #attn.schedule<tile = [16, 4], vector = 4, unroll = [2, 2], compute = root>}
// NAIVE: attn.matmul {{.*}} {attn.schedule = #attn.schedule<strategy = naive, compute = root>}
// POLICY: attn-tile: unknown schedule policy 'fast', expected default or naive
func.func @kept(%x: tensor<?x64xf32>, %w: tensor<64x64xf32>) -> (tensor<?x64xf32> {attn.schedule = #attn.schedule<vector = 4>}) {
  %0 = attn.relu %x {attn.schedule = #attn.schedule<tile = [16, 4], vector = 4, unroll = [2, 2]>} : tensor<?x64xf32>
  %1 = attn.matmul %0, %w : tensor<?x64xf32>, tensor<64x64xf32> -> tensor<?x64xf32>
  return %1 : tensor<?x64xf32>
}

// The naive baseline is for CPUs.
// RUN: not attn-opt %s --attn-tile="target=cuda policy=naive" 2>&1 | FileCheck %s --check-prefix=GPU-NAIVE
// GPU-NAIVE: error: the naive schedule is a CPU baseline (scalar, serial loops at root); target cuda needs GPU schedules: use the default schedule policy
