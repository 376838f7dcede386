// RUN: attn-opt %s -split-input-file --attn-tile=target=cuda -verify-diagnostics
// RUN: attn-opt %s -split-input-file > /dev/null
//
// The budgets of a target (target/TargetModel.h) are not rules of the
// dialect: a schedule over CUDA's budgets parses and verifies, and attn-tile
// for target cuda reports it at its op (verifyScheduleFor). Rules that hold
// on every target are in tests/dsl/schedule-invalid.mlir; the CPU budgets
// are in attn-tile.mlir.

func.func @too_many_gpu_threads(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule gpu_threads [64, 32] has 2048 threads but target cuda allows 1024 per block}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<tile = [64, 32], gpu_threads = [64, 32]>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @shared_product_tile_too_large(%a: tensor<?x64xf32>, %b: tensor<64x256xf32>) -> tensor<?x256xf32> {
  // expected-error @+1 {{schedule tile [256, 256] of a product has 65536 accumulators but target cuda allows 4096 (Halide 14 keeps a copy of the block's tile in each thread's local memory)}}
  %0 = attn.matmul %a, %b {attn.schedule = #attn.schedule<strategy = gemm, tile = [256, 256], split_k = 16, gpu_threads = [32, 32], shared = true>} : tensor<?x64xf32>, tensor<64x256xf32> -> tensor<?x256xf32>
  return %0 : tensor<?x256xf32>
}

// -----

func.func @shared_attention_too_many_scores(%q: tensor<?x64xf32>, %v: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule split_k 64 x tile y 64 gives each thread 128 score dot products but target cuda keeps at most 64 in registers}}
  %0 = attn.attention %q, %q, %v mask = #attn.mask<causal> normalize = none heads = 1 {attn.schedule = #attn.schedule<strategy = blocked, tile = [16, 64], split_k = 64, gpu_threads = [16, 2], shared = true>} : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return %0 : tensor<?x64xf32>
}

// -----

func.func @shared_attention_over_shared_memory(%q: tensor<?x64xf32>, %v: tensor<?x192xf32>) -> tensor<?x192xf32> {
  // expected-error @+1 {{schedule stages 61952 bytes in shared memory per block (weights and values, softmax scores and row statistics) but target cuda has 49152}}
  %0 = attn.attention %q, %q, %v mask = #attn.mask<causal> normalize = softmax heads = 1 {attn.schedule = #attn.schedule<strategy = blocked, tile = [192, 64], split_k = 48, gpu_threads = [16, 16], shared = true>} : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x192xf32> -> tensor<?x192xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return %0 : tensor<?x192xf32>
}

// -----

func.func @naive_on_a_gpu(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule strategy = naive at compute = root on target cuda needs gpu_threads (the naive schedule is a CPU baseline)}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<strategy = naive>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}
