//===- AttnAttrs.td - attn dialect enums and attributes ----*- tablegen -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file defines the enum attributes of the attn dialect (printed as bare
// keywords inside op formats), `#attn.mask<...>`, the structural mask of
// `attn.attention`, and `#attn.schedule<...>`, the loop schedule of one stage
// (C++ in AttnSchedule.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DSL_IR_ATTNATTRS_TD
#define ATTNC_DSL_IR_ATTNATTRS_TD

include "dsl/IR/AttnDialect.td"
include "mlir/IR/EnumAttr.td"

class Attn_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Attn_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Attn_NormKind : I32EnumAttr<"NormKind", "normalisation of a layer input", [
    I32EnumAttrCase<"layer_norm", 0>,
    I32EnumAttrCase<"scale_norm", 1>,
    I32EnumAttrCase<"rms_norm", 2>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
  let description = [{
    `layer_norm`: (x - mean) / sqrt(var + eps) * w + b over the last axis
    (biased variance); `scale_norm`: x * rsqrt(mean(x^2) + eps) * alpha with
    one scalar alpha (with the layer's `norm_clamp`: x / max(sqrt(mean(x^2)),
    eps) * alpha, FLASH-pytorch's ScaleNorm); `rms_norm`: x * rsqrt(mean(x^2)
    + eps) * w.
  }];
}
def Attn_NormKindAttr : EnumAttr<Attn_Dialect, Attn_NormKind, "norm_kind">;

def Attn_RelPosKind : I32EnumAttr<"RelPosKind",
    "relative position bias of a GAU/FLASH layer", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"toeplitz", 1>,
    I32EnumAttrCase<"t5", 2>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
  let description = [{
    `toeplitz`: a learned bias per distance `j - i`, clamped (the paper's);
    `t5`: FLASH-pytorch's T5 bucketed bias, `num_buckets` entries scaled by
    sqrt(s) in FLASH and sqrt(d) in GAU (the layer ops say where it enters
    the score).
  }];
}
def Attn_RelPosKindAttr : EnumAttr<Attn_Dialect, Attn_RelPosKind, "rel_pos_kind">;

def Attn_FeatureMap : I32EnumAttr<"FeatureMap",
    "feature map phi of linear attention", [
    I32EnumAttrCase<"identity", 0>,
    I32EnumAttrCase<"elu1", 1>,
    I32EnumAttrCase<"relu", 2>,
    I32EnumAttrCase<"silu", 3>,
    I32EnumAttrCase<"exp", 4>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
  let description = [{
    `identity`: phi(x) = x; `elu1`: elu(x) + 1; `relu`: max(x, 0);
    `silu`: x * sigmoid(x); `exp`: exp(x).
  }];
}
def Attn_FeatureMapAttr : EnumAttr<Attn_Dialect, Attn_FeatureMap, "feature_map">;

def Attn_Activation : I32EnumAttr<"Activation", "activation of a GLU FFN", [
    I32EnumAttrCase<"silu", 0>,
    I32EnumAttrCase<"gelu", 1>,
    I32EnumAttrCase<"relu", 2>,
    I32EnumAttrCase<"sigmoid", 3>,
    I32EnumAttrCase<"tanh", 4>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}
def Attn_ActivationAttr : EnumAttr<Attn_Dialect, Attn_Activation, "activation">;

def Attn_Normalize : I32EnumAttr<"Normalize",
    "row normalisation of attention scores", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"softmax", 1>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}
def Attn_NormalizeAttr : EnumAttr<Attn_Dialect, Attn_Normalize, "normalize">;

def Attn_RopeMode : I32EnumAttr<"RopeMode", "pairing of rotary dims", [
    I32EnumAttrCase<"half", 0>,
    I32EnumAttrCase<"interleaved", 1>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
  let description = [{
    `half`: dim i is paired with dim i + r/2 (the FLASH paper's layout);
    `interleaved`: dim 2i is paired with dim 2i + 1.
  }];
}
def Attn_RopeModeAttr : EnumAttr<Attn_Dialect, Attn_RopeMode, "rope_mode">;

/// Kind of `#attn.mask`; a plain enum (no attribute of its own).
def Attn_MaskKind : I32EnumAttr<"MaskKind", "kind of a structural mask", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"causal", 1>,
    I32EnumAttrCase<"window", 2>,
    I32EnumAttrCase<"chunk", 3>,
    I32EnumAttrCase<"band", 4>,
    I32EnumAttrCase<"causal_chunk", 5>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
}

/// Where a scheduled stage is computed; a plain enum of `#attn.schedule`.
def Attn_ComputeAt : I32EnumAttr<"ComputeAt",
    "where a scheduled stage is computed", [
    I32EnumAttrCase<"root", 0>,
    I32EnumAttrCase<"inlined", 1, "inline">]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
  let description = [{
    `root`: the stage's result is stored whole before its consumers run;
    `inline` (C++ `ComputeAt::inlined`): recomputed inside every consumer,
    no loops of its own (a kernel member in its anchor's loops, a
    product's output stage, attn.chunk read through its re-index).
  }];
}

/// The algorithm of a scheduled stage; a plain enum of `#attn.schedule`.
def Attn_Strategy : I32EnumAttr<"Strategy",
    "the algorithm of a scheduled stage", [
    I32EnumAttrCase<"loops", 0>,
    I32EnumAttrCase<"naive", 1>,
    I32EnumAttrCase<"gemm", 2>,
    I32EnumAttrCase<"rows", 3>,
    I32EnumAttrCase<"materialized", 4>,
    I32EnumAttrCase<"blocked", 5>]> {
  let cppNamespace = "::mlir::attn";
  let genSpecializedAttr = 0;
  let description = [{
    Which algorithm computes the stage; the other parameters of the schedule
    are its loops. `loops` (elementwise ops, norms, rope, linear attention,
    the chunk ops): the result's loops as tile, vector, parallel and
    gpu_threads say. `naive` (any op): the baseline, scalar and serial
    loops at root with no other parameter (`attnc --schedule=naive`).
    `gemm` (products: attn.dense, attn.matmul, attn.chunk_state,
    attn.state_apply): register tiles of tile x by tile y accumulators
    (vector lanes wide on CPUs, tile / gpu_threads per GPU thread), the
    reduction in steps of split_k, rows in blocks of row_block (CPU), the
    operand panels of a step in shared memory with `shared` (GPU). The
    three algorithms of attn.attention: `rows` computes the scores of one
    query row at a time (no n x m buffer; on a GPU one thread per output
    element); `materialized` computes whole score matrices first (CPU);
    `blocked` computes blocks of split_k query rows by split_k keys inside
    the loop over key blocks that accumulates the output tiles, so that
    blocks a mask removes are never computed (CPU: vector register tiles;
    GPU: a block of tile y queries by tile x value columns per thread
    block, split_k keys per step with their weights and values in shared
    memory).
  }];
}

//===----------------------------------------------------------------------===//
// #attn.mask
//===----------------------------------------------------------------------===//

def Attn_MaskAttr : Attn_Attr<"Mask", "mask"> {
  let summary = "structural mask of attn.attention: kind and size";
  let description = [{
    Which keys `j` a query `i` sees (i, j are 0-based positions on the
    sequence axes of q and k):

    | mask | keeps (i, j) iff |
    |---|---|
    | `#attn.mask<none>` | always |
    | `#attn.mask<causal>` | j <= i (diagonal kept) |
    | `#attn.mask<window W>` | 0 <= i - j < W (causal sliding window of W keys, diagonal kept) |
    | `#attn.mask<chunk C>` | i / C == j / C (integer division: block-diagonal, non-causal inside a block) |
    | `#attn.mask<band W>` | \|i - j\| < W (symmetric band of 2W - 1 keys) |
    | `#attn.mask<causal_chunk C>` | i / C == j / C and j <= i (causal inside each block; FLASH's local part) |

    Other masks are written in the `score` region instead (returning 0, or
    -inf under softmax). `size` is 0 for `none` and `causal` and must be >= 1
    for the other kinds.

    C++: `MaskAttr::get(ctx, MaskKind::window, 64)`,
    `MaskAttr::get(ctx, MaskKind::causal, 0)`.
  }];
  let parameters = (ins
    EnumParameter<Attn_MaskKind>:$kind,
    "int64_t":$size
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// True if the mask keeps every (i, j).
    bool isNone() const { return getKind() == MaskKind::none; }
  }];
}

//===----------------------------------------------------------------------===//
// #attn.schedule
//===----------------------------------------------------------------------===//

def Attn_ScheduleAttr : Attn_Attr<"Schedule", "schedule"> {
  let summary = "loop schedule of one stage: tiling, vectors, unrolling, "
                "cache blocking, threads, GPU mapping";
  let description = [{
    A schedule is data: `attn-tile` attaches one to every compute op as the
    discardable attribute `attn.schedule`, codegen reads it to schedule the
    op's Halide Func, and an autotuner can build, verify, store and compare
    points. The loops are those of the op's result: x is the innermost axis
    (-1, columns), y the next one (-2, rows); outer (batch) axes are loops
    around them.

    | parameter | value | default | meaning |
    |---|---|---|---|
    | `strategy` | `loops`, `naive`, `gemm`, `rows`, `materialized`, `blocked` | `loops` | the algorithm (see Strategy) |
    | `tile` | `[x, y]` | `[1, 1]` | tile of the result computed by one iteration of the outer loops; `[1, 1]` = no tiling |
    | `vector` | i64 | 1 | SIMD lanes of the innermost loop (a power of two <= 64; 1 = scalar) |
    | `unroll` | `[x, y]` | `[1, 1]` | unroll factors inside the tile: x counts vectors of tile x, y rows of tile y |
    | `split_k` | i64 | 0 | block of the reduction axis: a product's depth (cache blocking on CPUs, the depth of a GPU step), blocked attention's keys (and queries) per block; 0 = not split |
    | `row_block` | i64 | 0 | `gemm` on a CPU: rows of the result per parallel task and cache block (a multiple of tile y); 0 = not blocked |
    | `stage_lhs` | bool | false | `gemm` on a CPU: compute the left operand one row block at a time into a buffer before the register tiles read it (a fused prologue is then computed once per element instead of once per column tile; a stored operand is copied) |
    | `pack_rhs` | bool | false | `gemm` on a CPU: pack the right operand into column panels of tile x, so that the panel a tile reads is contiguous: one that every batch entry shares (a weight) once per run, [columns / tile x][depth][tile x]; one with batch axes of its own (a chunk's values or states) one panel [depth][tile x] per parallel task and column tile, which the task's row tiles then read |
    | `parallel` | bool | false | run the outermost row loop on all threads |
    | `gpu_threads` | `[x, y]` | `[0, 0]` | CUDA threads of a block over the tile; `[0, 0]` = not on a GPU; a block computes one tile, each thread tile / gpu_threads elements (a contiguous register tile in products, interleaved elsewhere) |
    | `shared` | bool | false | GPU staging: per reduction step, the block's split_k-deep operand panels (`gemm`) or its keys' weights and values (`blocked` attention) in shared memory |
    | `compute` | `root`, `inline` | `root` | where the stage is computed (see ComputeAt) |

    The internal stages an op's lowering materializes (a transposed key
    matrix, row statistics, rope tables, the chunk form's states) take the
    loops of the op's schedule: its vector, parallel and gpu_threads. A
    model's outputs are copied by stages whose schedules are the function's
    result attributes `attn.schedule` (attn-tile sets them).

    Parameters may be written in any order and any subset; they print in the
    order of the table, defaults omitted, except `compute`, which always
    prints. Rules (the verifier names the offending values): sizes are
    positive (`split_k`, `row_block` >= 0; `gpu_threads` both 0 or both
    positive); `vector` is a power of two <= 64 and divides tile x when both
    are set; unroll x divides the vectors of tile x (tile x / vector),
    unroll y divides tile y; `gpu_threads` divides the tile and excludes
    `vector` > 1; `compute = inline` has no loops of its own (all other
    parameters at their defaults); `strategy = naive` has no parameters
    but `compute = root`; `gemm` on a CPU needs a `row_block` (a multiple of
    tile y), and `row_block` is for `gemm` on CPUs only; `blocked` on a CPU needs a vector register tile
    (tile x, tile y, vector > 1) and split_k a multiple of both tile axes,
    and on a GPU `shared`; `materialized` is for CPUs; `shared` needs
    `gpu_threads`, `split_k` and `gemm` or `blocked`; `stage_lhs` and
    `pack_rhs` are for `gemm` on a CPU. Per op
    (verifyScheduleForOp): products take `gemm` or `naive` (`stage_lhs`
    only attn.dense and attn.matmul, whose lowering stages its left
    operand),
    attention `rows`, `materialized`, `blocked` or `naive` (on a GPU
    `blocked` needs tile x to divide the value columns per head, split_k a
    multiple of gpu_threads x and static query features), every other op
    `loops` or `naive`. These rules hold on every target. A target's budgets (lanes,
    vector registers, L2 panels, threads per block, elements per thread, a
    GPU product's block tile, scores per thread, shared memory) live with
    the target model (target/TargetModel.h) and are checked by
    `verifyScheduleFor` (passes/Passes.h), which attn-tile runs on every
    schedule it is given.

    Examples:

    ```mlir
    // GEMM on AVX-512: 64 x 6 register tile of 4 x 6 vector accumulators,
    // 256-deep reduction blocks, 96 rows per parallel task, the weight
    // packed into 64-column panels.
    #attn.schedule<strategy = gemm, tile = [64, 6], vector = 16, unroll = [4, 6], split_k = 256, row_block = 96, pack_rhs = true, parallel = true, compute = root>
    // GEMM on CUDA: 16 x 16 threads per 64 x 64 tile (4 x 4 accumulators
    // each), 16-deep operand panels staged in shared memory per step.
    #attn.schedule<strategy = gemm, tile = [64, 64], split_k = 16, gpu_threads = [16, 16], shared = true, compute = root>
    // Attention scores one query row at a time.
    #attn.schedule<strategy = rows, vector = 16, parallel = true, compute = root>
    // Attention in 64 x 64 blocks (queries x keys), 32 x 8 output register
    // tile of 2 x 8 vector accumulators.
    #attn.schedule<strategy = blocked, tile = [32, 8], vector = 16, unroll = [2, 8], split_k = 64, parallel = true, compute = root>
    // An elementwise stage: rows in parallel, 4 vectors per tile.
    #attn.schedule<tile = [64, 1], vector = 16, parallel = true, compute = root>
    // The naive baseline.
    #attn.schedule<strategy = naive, compute = root>
    // Recomputed in its consumers.
    #attn.schedule<compute = inline>
    ```

    C++: `ScheduleAttr::get(ctx, params)` / `getChecked(emitError, ctx,
    params)` with a `ScheduleParams` (plain struct, defaults as above),
    `getParams()`, one getter per scalar (`getStrategy()`, `getTileX()`,
    `getTileY()`, `getVector()`, `getUnrollX()`, `getUnrollY()`,
    `getSplitK()`, `getRowBlock()`, `getStageLhs()`, `getPackRhs()`,
    `getParallel()`, `getCompute()`,
    `getGpuThreadsX()`, `getGpuThreadsY()`, `getShared()`), and `ScheduleAttr::lookup(op)` for the `attn.schedule`
    of an op (null if none).
  }];
  let parameters = (ins
    EnumParameter<Attn_Strategy>:$strategy,
    "int64_t":$tileX,
    "int64_t":$tileY,
    "int64_t":$vector,
    "int64_t":$unrollX,
    "int64_t":$unrollY,
    "int64_t":$splitK,
    "int64_t":$rowBlock,
    "bool":$stageLhs,
    "bool":$packRhs,
    "bool":$parallel,
    EnumParameter<Attn_ComputeAt>:$compute,
    "int64_t":$gpuThreadsX,
    "int64_t":$gpuThreadsY,
    "bool":$shared
  );
  let builders = [
    AttrBuilder<(ins "const ScheduleParams &":$params), [{
      return $_get($_ctxt, params.strategy, params.tileX, params.tileY,
                   params.vector, params.unrollX, params.unrollY,
                   params.splitK, params.rowBlock, params.stageLhs,
                   params.packRhs, params.parallel,
                   params.compute, params.gpuThreadsX, params.gpuThreadsY,
                   params.shared);
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Name of the discardable attribute that holds an op's schedule.
    static ::llvm::StringRef getScheduleAttrName() { return "attn.schedule"; }
    /// The `attn.schedule` of `op`, or null if it has none (or another kind).
    static ScheduleAttr lookup(::mlir::Operation *op);
    /// All parameters as a plain struct (to change one and rebuild).
    ScheduleParams getParams() const;
    /// The rules of the verifier on a plain struct: failure with a
    /// diagnostic naming the offending values if `params` is illegal.
    static ::mlir::LogicalResult
    verifyParams(::llvm::function_ref<::mlir::InFlightDiagnostic()> emitError,
                 const ScheduleParams &params);
    /// True if the result is split into tiles (tile != [1, 1]).
    bool isTiled() const { return getTileX() != 1 || getTileY() != 1; }
    /// True if the stage runs on a GPU (gpu_threads set).
    bool isOnGpu() const { return getGpuThreadsX() != 0; }
  }];
}

#endif // ATTNC_DSL_IR_ATTNATTRS_TD
