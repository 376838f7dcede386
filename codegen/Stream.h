//===- Stream.h - a causal model run over blocks of rows --------*- C++ -*-===//
//
// This file declares streaming (CodegenOptions::streamRows, `attnc run |
// bench --stream-rows R`): a model whose only mixing across the rows of its
// sequence dim is chunked and causal (FLASH causal: quadratic attention
// inside chunks, an exclusive prefix of chunk states across them) runs as
// one kernel over blocks of R rows, block after block. Between blocks the
// kernel carries, per causal chunk_scan, the sum of the earlier blocks'
// chunk states, and per token_shift the previous block's last row; RoPE's
// positions start at the block's first row. The
// stored intermediates are then those of R rows whatever the sequence
// length, and only the inputs and outputs grow with it (issue 13: a
// million tokens on a 24 GiB machine). The result is the whole-sequence
// run's, up to the order of the chunk states' sum.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_STREAM_H
#define ATTNC_CODEGEN_STREAM_H

#include "codegen/LoweringImpl.h"
#include "runtime/Error.h"

#include <functional>

namespace attnc::codegen {

/// Whether `func` can be streamed in blocks of options.streamRows rows: a
/// CPU target without an autoscheduler; exactly one runtime dim of kind
/// seq, the row axis (-2) of every input and output, with the same batch
/// dims before it; only ops that keep rows apart (elementwise, dense,
/// norms, RoPE, split and row), shift them by one (token_shift) or mix them
/// within chunks whose size divides the block (chunk, unchunk, attention
/// over chunks, chunk_state, state_apply, and chunk_scan exclusive, the
/// causal prefix). Emits an
/// error at the offending op (or the model) otherwise.
mlir::LogicalResult checkStreamable(mlir::func::FuncOp func,
                                    const CodegenOptions &options);

/// The rows a run of `func` that does not fit could stream in (8192, when
/// checkStreamable would accept them with `options`), or 0: what the
/// resource check's message suggests.
int64_t suggestedStreamRows(mlir::func::FuncOp func,
                            CodegenOptions options);

/// Runs one block: the model's inputs cut to the block, then the offset
/// and the carries (Lowering::arguments order); the block's outputs, then
/// the carries' next values.
using BlockRunner = std::function<runtime::Result(
    const std::vector<Halide::Buffer<float>> &args,
    std::vector<Halide::Buffer<void>> &outputs)>;

/// Runs the streamed kernel that `lowering` lowered over whole `inputs`
/// into whole `outputs` (Halide order, rows in dim 1): per batch entry,
/// carries set to zero, then blocks of options.streamRows rows in order.
runtime::Result runStreamed(const Lowering &lowering,
                            const std::vector<Halide::Buffer<float>> &inputs,
                            std::vector<Halide::Buffer<float>> &outputs,
                            const BlockRunner &runBlock);

/// The shapes (MLIR order) of one block of `inputs`: batch dims 1, the row
/// axis (-2) at most `rows`. What the streamed kernel's stored buffers are
/// sized by (the resource check).
std::vector<std::vector<int64_t>>
blockShapes(const std::vector<std::vector<int64_t>> &inputs, int64_t rows);

} // namespace attnc::codegen

#endif // ATTNC_CODEGEN_STREAM_H
