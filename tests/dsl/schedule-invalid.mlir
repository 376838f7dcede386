// RUN: attn-opt %s -split-input-file -verify-diagnostics

// Illegal schedules: every message of the #attn.schedule parser and
// verifier, and of the dialect's check of the `attn.schedule` attribute.
// Target budgets are tested in tests/passes/attn-tile.mlir and
// tests/unit/ScheduleTest.cpp.

func.func @unknown_parameter(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{unknown schedule parameter 'tiles', expected strategy, tile, vector, unroll, split_k, row_block, stage_lhs, pack_rhs, parallel, gpu_threads, shared or compute}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<tiles = [8, 1]>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

// Found by the schedule fuzzer (issue #9): 2^32 x 2^32 threads overflowed
// int64 in the thread-count rule.
func.func @huge_gpu_threads(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule gpu_threads value 4294967296 exceeds the largest schedule value 1048576}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<gpu_threads = [4294967296, 4294967296]>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @huge_tile(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule tile value 9223372036854775807 exceeds the largest schedule value 1048576}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<tile = [9223372036854775807, 1]>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @duplicate_parameter(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule parameter 'vector' appears twice}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<vector = 8, vector = 16>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @parallel_not_bool(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule parallel must be true or false but is 'yes'}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<parallel = yes>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @shared_not_bool(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule shared must be true or false but is 'no'}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<shared = no>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @unknown_compute(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{unknown schedule compute 'at_row', expected root or inline}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<compute = at_row>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @tile_not_positive(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule tile [0, 6] must be positive}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<tile = [0, 6]>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @vector_not_positive(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule vector 0 must be positive}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<vector = 0>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @unroll_not_positive(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule unroll [4, -1] must be positive}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<tile = [64, 6], unroll = [4, -1]>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @split_k_negative(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule split_k -256 must be non-negative (0 = not split)}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<split_k = -256>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @gpu_threads_half_set(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule gpu_threads [16, 0] must be both 0 (not on a GPU) or both positive}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<tile = [64, 8], gpu_threads = [16, 0]>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @inline_with_tile(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule compute = inline has no loops of its own but sets tile [64, 1]}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<tile = [64, 1], compute = inline>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @inline_with_parallel(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule compute = inline has no loops of its own but sets parallel = true}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<parallel = true, compute = inline>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @vector_not_power_of_two(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule vector 12 is not a power of two}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<vector = 12>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @vector_too_wide(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule vector 128 exceeds 64 lanes}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<vector = 128>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @vector_not_dividing_tile(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule vector 16 does not divide tile x 40}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<tile = [40, 4], vector = 16>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @unroll_not_dividing_vectors(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule unroll x 3 does not divide the 4 vectors of tile x 64}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<tile = [64, 6], vector = 16, unroll = [3, 6]>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @unroll_not_dividing_tile_x(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule unroll x 4 does not divide tile x 1}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<unroll = [4, 1]>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @unroll_not_dividing_tile_y(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule unroll y 4 does not divide tile y 6}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<tile = [64, 6], vector = 16, unroll = [4, 4]>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @gpu_threads_not_dividing_tile(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule gpu_threads [16, 8] does not divide tile [24, 8]}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<tile = [24, 8], gpu_threads = [16, 8]>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @gpu_threads_with_vector(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule vector 4 cannot be combined with gpu_threads [16, 8] (a GPU thread is scalar)}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<tile = [64, 8], vector = 4, gpu_threads = [16, 8]>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @shared_without_gpu_threads(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule shared = true needs gpu_threads}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<tile = [64, 8], shared = true>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @shared_without_split_k(%a: tensor<?x64xf32>, %b: tensor<64x128xf32>) -> tensor<?x128xf32> {
  // expected-error @+1 {{schedule shared = true needs split_k (the depth of the operand panels staged per reduction step)}}
  %0 = attn.matmul %a, %b {attn.schedule = #attn.schedule<tile = [64, 64], gpu_threads = [16, 16], shared = true>} : tensor<?x64xf32>, tensor<64x128xf32> -> tensor<?x128xf32>
  return %0 : tensor<?x128xf32>
}

// -----

func.func @shared_not_a_product(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule shared = true stages the operands of strategy = gemm or blocked, not loops}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<tile = [64, 8], gpu_threads = [16, 8], split_k = 16, shared = true>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @shared_attention_tile_across_heads(%q: tensor<?x64xf32>, %v: tensor<?x96xf32>) -> tensor<?x96xf32> {
  // expected-error @+1 {{schedule tile x 64 must divide the value columns per head (48) for blocked attention on a GPU}}
  %0 = attn.attention %q, %q, %v mask = #attn.mask<causal> normalize = none heads = 2 {attn.schedule = #attn.schedule<strategy = blocked, tile = [64, 64], split_k = 32, gpu_threads = [16, 16], shared = true>} : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x96xf32> -> tensor<?x96xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return %0 : tensor<?x96xf32>
}

// -----

func.func @shared_attention_keys_not_dealt(%q: tensor<?x64xf32>, %v: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule split_k 24 (keys per block) must be a multiple of gpu_threads x 16}}
  %0 = attn.attention %q, %q, %v mask = #attn.mask<causal> normalize = none heads = 1 {attn.schedule = #attn.schedule<strategy = blocked, tile = [64, 64], split_k = 24, gpu_threads = [16, 16], shared = true>} : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return %0 : tensor<?x64xf32>
}

// -----

func.func @shared_attention_dynamic_features(%q: tensor<?x?xf32>, %v: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{blocked attention on a GPU needs a static number of query features}}
  %0 = attn.attention %q, %q, %v mask = #attn.mask<causal> normalize = none heads = 1 {attn.schedule = #attn.schedule<strategy = blocked, tile = [64, 64], split_k = 32, gpu_threads = [16, 16], shared = true>} : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x64xf32> -> tensor<?x64xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return %0 : tensor<?x64xf32>
}

// -----

func.func @schedule_not_a_schedule(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{'attn.schedule' must be a #attn.schedule but is #attn.mask<causal>}}
  %0 = attn.relu %x {attn.schedule = #attn.mask<causal>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

// expected-error @+1 {{'attn.schedule' is only valid on attn ops}}
func.func @schedule_on_func(%x: tensor<?x64xf32>) -> tensor<?x64xf32> attributes {attn.schedule = #attn.schedule<parallel = true>} {
  return %x : tensor<?x64xf32>
}

// -----

func.func @blocked_without_a_register_tile(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule strategy = blocked on a CPU needs a vector register tile (tile x, tile y and vector > 1)}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<strategy = blocked, split_k = 64>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @blocked_block_not_a_multiple(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule strategy = blocked needs split_k (the block, here 40) to be a multiple of tile [32, 8]}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<strategy = blocked, tile = [32, 8], vector = 16, split_k = 40>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @blocked_on_a_gpu_without_shared(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule strategy = blocked on a GPU stages its blocks in shared memory: it needs shared = true}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<strategy = blocked, tile = [32, 8], gpu_threads = [32, 8], split_k = 64>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @blocked_on_a_non_attention(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule strategy = blocked is not an algorithm of 'attn.relu', which takes loops or naive}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<strategy = blocked, tile = [32, 8], vector = 16, unroll = [2, 8], split_k = 64>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @unknown_strategy(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{unknown schedule strategy 'tiled', expected loops, naive, gemm, rows, materialized or blocked}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<strategy = tiled>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @naive_with_loops(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule strategy = naive is scalar, serial loops at root and sets no loop parameter, but sets vector 8}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<strategy = naive, vector = 8>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @inline_with_a_strategy(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule compute = inline is computed in its consumers' loops and has no strategy, but sets strategy = naive}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<strategy = naive, compute = inline>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @row_block_negative(%a: tensor<?x64xf32>, %b: tensor<64x128xf32>) -> tensor<?x128xf32> {
  // expected-error @+1 {{schedule row_block -6 must be non-negative (0 = not blocked)}}
  %0 = attn.matmul %a, %b {attn.schedule = #attn.schedule<strategy = gemm, tile = [64, 6], vector = 16, unroll = [4, 6], row_block = -6>} : tensor<?x64xf32>, tensor<64x128xf32> -> tensor<?x128xf32>
  return %0 : tensor<?x128xf32>
}

// -----

func.func @row_block_without_gemm(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule row_block is for strategy = gemm on a CPU}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<tile = [64, 6], vector = 16, row_block = 12>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @gemm_without_row_block(%a: tensor<?x64xf32>, %b: tensor<64x128xf32>) -> tensor<?x128xf32> {
  // expected-error @+1 {{schedule strategy = gemm on a CPU needs row_block (rows per parallel task, here 0) to be a multiple of tile y 6}}
  %0 = attn.matmul %a, %b {attn.schedule = #attn.schedule<strategy = gemm, tile = [64, 6], vector = 16, unroll = [4, 6]>} : tensor<?x64xf32>, tensor<64x128xf32> -> tensor<?x128xf32>
  return %0 : tensor<?x128xf32>
}

// -----

func.func @gemm_row_block_not_a_multiple(%a: tensor<?x64xf32>, %b: tensor<64x128xf32>) -> tensor<?x128xf32> {
  // expected-error @+1 {{schedule strategy = gemm on a CPU needs row_block (rows per parallel task, here 16) to be a multiple of tile y 6}}
  %0 = attn.matmul %a, %b {attn.schedule = #attn.schedule<strategy = gemm, tile = [64, 6], vector = 16, unroll = [4, 6], row_block = 16>} : tensor<?x64xf32>, tensor<64x128xf32> -> tensor<?x128xf32>
  return %0 : tensor<?x128xf32>
}

// -----

func.func @stage_lhs_without_gemm(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule stage_lhs = true is for strategy = gemm on a CPU}}
  %0 = attn.relu %x {attn.schedule = #attn.schedule<tile = [64, 1], vector = 16, stage_lhs = true>} : tensor<?x64xf32>
  return %0 : tensor<?x64xf32>
}

// -----

func.func @pack_rhs_on_a_gpu(%a: tensor<?x64xf32>, %b: tensor<64x128xf32>) -> tensor<?x128xf32> {
  // expected-error @+1 {{schedule pack_rhs = true is for strategy = gemm on a CPU}}
  %0 = attn.matmul %a, %b {attn.schedule = #attn.schedule<strategy = gemm, tile = [64, 64], split_k = 16, pack_rhs = true, gpu_threads = [16, 16], shared = true>} : tensor<?x64xf32>, tensor<64x128xf32> -> tensor<?x128xf32>
  return %0 : tensor<?x128xf32>
}

// -----

func.func @stage_lhs_naive(%a: tensor<?x64xf32>, %b: tensor<64x128xf32>) -> tensor<?x128xf32> {
  // expected-error @+1 {{schedule strategy = naive is scalar, serial loops at root and sets no loop parameter, but sets stage_lhs = true}}
  %0 = attn.matmul %a, %b {attn.schedule = #attn.schedule<strategy = naive, stage_lhs = true>} : tensor<?x64xf32>, tensor<64x128xf32> -> tensor<?x128xf32>
  return %0 : tensor<?x128xf32>
}

// -----

func.func @stage_lhs_of_a_chunk_product(%k: tensor<?x4x8xf32>, %v: tensor<?x4x6xf32>) -> tensor<?x8x6xf32> {
  // expected-error @+1 {{schedule stage_lhs = true: 'attn.chunk_state' does not stage its left operand (attn.dense and attn.matmul do)}}
  %s = attn.chunk_state %k, %v scale = 0.25 {attn.schedule = #attn.schedule<strategy = gemm, tile = [8, 2], vector = 8, row_block = 2, stage_lhs = true>} : tensor<?x4x8xf32>, tensor<?x4x6xf32> -> tensor<?x8x6xf32>
  return %s : tensor<?x8x6xf32>
}

// -----

func.func @product_with_loops(%a: tensor<?x64xf32>, %b: tensor<64x128xf32>) -> tensor<?x128xf32> {
  // expected-error @+1 {{schedule strategy = loops is not an algorithm of 'attn.matmul', which takes gemm or naive}}
  %0 = attn.matmul %a, %b {attn.schedule = #attn.schedule<tile = [64, 1], vector = 16>} : tensor<?x64xf32>, tensor<64x128xf32> -> tensor<?x128xf32>
  return %0 : tensor<?x128xf32>
}

// -----

func.func @attention_with_gemm(%q: tensor<?x64xf32>, %v: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule strategy = gemm is not an algorithm of 'attn.attention', which takes rows, materialized, blocked or naive}}
  %0 = attn.attention %q, %q, %v mask = #attn.mask<causal> normalize = none heads = 1 {attn.schedule = #attn.schedule<strategy = gemm, tile = [64, 6], vector = 16, row_block = 6>} : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return %0 : tensor<?x64xf32>
}

// -----

func.func @materialized_on_a_gpu(%q: tensor<?x64xf32>, %v: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule strategy = materialized is for CPUs but sets gpu_threads}}
  %0 = attn.attention %q, %q, %v mask = #attn.mask<causal> normalize = none heads = 1 {attn.schedule = #attn.schedule<strategy = materialized, tile = [32, 8], gpu_threads = [32, 8]>} : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return %0 : tensor<?x64xf32>
}

// -----

func.func @inline_attention(%q: tensor<?x64xf32>, %v: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // expected-error @+1 {{schedule compute = inline is for elementwise ops, norms and attn.chunk, not 'attn.attention'}}
  %0 = attn.attention %q, %q, %v mask = #attn.mask<causal> normalize = none heads = 1 {attn.schedule = #attn.schedule<compute = inline>} : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32> -> tensor<?x64xf32> {
  ^bb0(%qk: f32, %i: index, %j: index, %n: index):
    attn.yield %qk : f32
  }
  return %0 : tensor<?x64xf32>
}

// -----

// expected-error @+1 {{the schedule of result 0 copies it out: it takes strategy loops or naive at compute = root}}
func.func @output_schedule_with_gemm(%x: tensor<?x64xf32>) -> (tensor<?x64xf32> {attn.schedule = #attn.schedule<strategy = gemm, tile = [64, 6], vector = 16, row_block = 6>}) {
  return %x : tensor<?x64xf32>
}

// -----

// expected-error @+1 {{'attn.schedule' of result 0 must be a #attn.schedule but is #attn.mask<causal>}}
func.func @output_schedule_not_a_schedule(%x: tensor<?x64xf32>) -> (tensor<?x64xf32> {attn.schedule = #attn.mask<causal>}) {
  return %x : tensor<?x64xf32>
}
