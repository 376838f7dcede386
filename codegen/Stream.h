//===- Stream.h - a chunked model run over blocks of rows -------*- C++ -*-===//
//
// This file declares streaming (CodegenOptions::streamRows, `attnc run |
// bench --stream-rows R`): a model whose only mixing across the rows of its
// sequence dim is chunked (FLASH and linear attention, attn-chunk's form:
// quadratic attention inside chunks, an exclusive prefix of chunk states
// across them when causal, their total when not) runs as
// one kernel over blocks of R rows, block after block. Between blocks the
// kernel carries, per causal chunk_scan, the sum of the earlier blocks'
// chunk states, and per token_shift the previous block's last row; RoPE's
// positions start at the block's first row. The
// stored intermediates are then those of R rows whatever the sequence
// length, and only the inputs and outputs grow with it (issue 13: a
// million tokens on a 24 GiB machine). The result is the whole-sequence
// run's, up to the order of the chunk states' sum.
//
// A model that sums its chunk states over the whole sequence (non-causal
// FLASH: chunk_scan total) streams in two sweeps over the blocks: the
// first, a kernel that computes only the carries (its totals kernel,
// CodegenOptions::streamTotals), sums the blocks' states; the second runs
// the model's kernel on every block with that total.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_STREAM_H
#define ATTNC_CODEGEN_STREAM_H

#include "codegen/LoweringImpl.h"
#include "runtime/BlockSequence.h"
#include "runtime/Error.h"

#include <functional>

namespace attnc::codegen {

using runtime::kMaxDecodedRows; // runtime/BlockSequence.h

/// Whether `attention` mixes rows only within chunks (its q, k and v are
/// chunked): it streams as it is; otherwise it attends over the whole
/// sequence, which decoding keeps in a key/value cache
/// (lowerCachedAttention).
bool attendsWithinChunks(mlir::attn::AttentionOp attention);

/// Whether `func` can be streamed in blocks of options.streamRows rows: a
/// CPU target without an autoscheduler; exactly one runtime dim of kind
/// seq, the row axis (streamRowAxis) of every input and output, with the
/// same batch dims before it; only ops that keep rows apart (elementwise,
/// dense, products with weights, norms, RoPE, embedding, split and row),
/// shift them by one (token_shift) or mix them
/// within chunks whose size divides the block (chunk, unchunk, attention
/// over chunks, chunk_state, state_apply, and chunk_scan: exclusive, the
/// causal prefix, or not decoding a total in the model's own function fed
/// by no other total (two sweeps); a decoding step kernel's blocks lie
/// within a chunk,
/// CodegenOptions::chunkStep), or, decoding, attention over the whole
/// sequence under a causal mask (a key/value cache). Emits an
/// error at the offending op (or the model) otherwise.
mlir::LogicalResult checkStreamable(mlir::func::FuncOp func,
                                    const CodegenOptions &options);

/// The smallest blocks `func` streams in: the least common multiple of its
/// chunk sizes (1 without chunks). What decoding runs (Decode.h).
int64_t smallestStreamRows(mlir::func::FuncOp func);

/// The most rows of a decoding step kernel's blocks (chunkStep): the
/// greatest common divisor of `func`'s chunk sizes, so that a block within
/// a multiple of it lies within one chunk of each; 0 without chunks.
int64_t stepRows(mlir::func::FuncOp func);

/// The blocks decoding runs `func` in: smallestStreamRows, or with a
/// key/value cache (attention over the whole sequence) the least multiple
/// of it that is at least 64 (a prefill reads the weights once a block).
int64_t decodeRows(mlir::func::FuncOp func);

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

/// The MLIR axis of `info` that streaming cuts into blocks: the rows
/// (second-last axis), or the last axis of token ids (`i32[b, n]`). The
/// axes before it are batch dims, those after it features.
size_t streamRowAxis(const TensorInfo &info);

/// The Halide dim (innermost first) of streamRowAxis(info).
int streamRowDim(const TensorInfo &info);

/// The shape (MLIR order) of one block of a tensor of `shape`: batch dims
/// (those before `rowAxis`) 1, the rows at most `rows`. What the streamed
/// kernel's stored buffers are sized by (the resource check).
std::vector<int64_t> blockShape(std::vector<int64_t> shape, size_t rowAxis,
                                int64_t rows);

/// Batch entry `entry` (the dims after `rowDim`, flattened with the
/// innermost fastest) and rows [first, first + count) in dim `rowDim`
/// (Halide order) of `whole`: a view with mins 0 and the strides a dense
/// block would have where an axis has extent 1 (the kernel's inputs and
/// outputs are constrained dense; a unit axis's stride addresses nothing).
Halide::Buffer<float> blockOf(const Halide::Buffer<float> &whole, int rowDim,
                              int64_t entry, int first, int count);

/// The sizes (Halide order) of one sequence's value of `carry`: its last
/// two axes (a cache's rows `capacity`), the batch dims before them 1 (a
/// block is one batch entry).
std::vector<int> carrySizes(const Lowering::StreamCarry &carry,
                            int64_t capacity = 0);

/// Whether the kernel `lowering` lowered has cache carries (decoding a
/// layer that attends over the whole sequence), whose capacity its
/// decoder needs.
bool hasCaches(const Lowering &lowering);

/// Whether the kernel `lowering` lowered has total carries (a sum over the
/// whole sequence), which a first sweep computes.
bool hasTotals(const Lowering &lowering);

/// Where one sequence (one batch entry) of a streamed kernel stands between
/// blocks: its carries and the rows before the next block.
class StreamState {
public:
  /// Carries of the kernel `lowering` lowered, zero, at row 0; its
  /// key/value caches (if any) hold `capacity` rows, its chunk caches C.
  explicit StreamState(const Lowering &lowering,
                       int64_t capacity = kMaxDecodedRows);
  // A copy would share the carries' memory (Buffers are handles).
  StreamState(const StreamState &) = delete;
  StreamState &operator=(const StreamState &) = delete;
  StreamState(StreamState &&) = default;
  StreamState &operator=(StreamState &&) = default;
  /// Back to zero carries at row 0.
  void reset();
  /// Runs `runBlock` on the next block: `inputs` and `outputs` are views of
  /// its rows [position(), position() + rows) (blockOf). The carries' next
  /// values are computed, not taken: advance() takes them. Positions past
  /// 2^24 are ATTN_ERROR_ARGUMENT.
  runtime::Result run(const std::vector<Halide::Buffer<float>> &inputs,
                      const std::vector<Halide::Buffer<void>> &outputs,
                      int rows, const BlockRunner &runBlock);
  /// After a run of `rows` rows: the carries take their next values and
  /// position() moves past the block (a failed run is not advanced: the
  /// state is as before it, but for caches written in place, whose rows
  /// past position() no block reads before writing them).
  void advance(int rows);
  /// After a first sweep over a sequence of `rows` rows (the totals
  /// kernel's blocks): the total carries keep their sums (divided by
  /// `rows` where they are per row), the others are zero, at row 0, for
  /// the second sweep.
  void endTotals(int64_t rows);
  int64_t position() const { return at; }
  /// The carries' bytes: each carry's buffer and its next value's.
  int64_t bytes() const;

private:
  std::vector<Halide::Buffer<float>> carries, nexts;
  std::vector<bool> caches; ///< Per carry: a cache, written in place.
  std::vector<bool> sizedByCapacity; ///< Per carry: a capacity's cache.
  std::vector<bool> totals, perRow;  ///< Per carry: a total; per row.
  Halide::Buffer<float> offset;
  int64_t capacity;
  int64_t at = 0;
};

/// The error of a step asked of blocks without a step kernel (decoding
/// keeps them apart; an internal error).
runtime::Result noStepKernel();

/// Runs the blocks of one sequence: a streamed pipeline (StreamState), or
/// a streamed program (one StreamState per step).
class SequenceBlocks {
public:
  virtual ~SequenceBlocks() = default;
  /// Runs the next block through the block kernel, or with `step` the
  /// step kernel (CodegenOptions::chunkStep): `inputs` and `outputs` are
  /// views of its `rows` rows (blockOf). When it ran, the state moves past
  /// it (StreamState::advance); otherwise it stays where it was.
  virtual runtime::Result run(const std::vector<Halide::Buffer<float>> &inputs,
                              const std::vector<Halide::Buffer<float>> &outputs,
                              int rows, bool step) = 0;
  /// Back to the start of a sequence.
  virtual void reset() = 0;
  /// Whether a sequence takes two sweeps over its blocks (a model that
  /// sums over the whole sequence): first sumTotals on each block in
  /// order, then endTotals, then run on each block.
  virtual bool sweepsTwice() const { return false; }
  /// The first sweep: the next block's `inputs` (`rows` rows) through the
  /// totals kernel; the state moves past it when it ran.
  virtual runtime::Result
  sumTotals(const std::vector<Halide::Buffer<float>> &inputs, int rows);
  /// After the first sweep over `rows` rows (StreamState::endTotals).
  virtual void endTotals(int64_t rows) {}
  /// The bytes of the carries.
  virtual int64_t stateBytes() const = 0;
};

/// The blocks of one sequence of the streamed kernel `lowering` lowered,
/// run by `runner` (and by `stepRunner`, the step kernel's with the same
/// carries, when decoding a model with chunks; by `totalsRunner`, the
/// totals kernel's, in a first sweep, when the model sums over the whole
/// sequence), its caches (if any) of `capacity` rows. `lowering` must
/// outlive them.
std::unique_ptr<SequenceBlocks>
streamBlocks(const Lowering &lowering, BlockRunner runner,
             BlockRunner stepRunner, BlockRunner totalsRunner,
             int64_t capacity);

/// Runs a streamed model (a pipeline or a program, through `blocks`)
/// over whole `inputs` into whole `outputs` (Halide order; `inputInfos`
/// and `outputInfos` say where their rows are, streamRowAxis): per batch
/// entry, from the start of a sequence, blocks of `rows` rows in order
/// (twice when blocks.sweepsTwice()).
runtime::Result runStreamed(const std::vector<TensorInfo> &inputInfos,
                            const std::vector<TensorInfo> &outputInfos,
                            int64_t rows,
                            const std::vector<Halide::Buffer<float>> &inputs,
                            std::vector<Halide::Buffer<float>> &outputs,
                            SequenceBlocks &blocks);

} // namespace attnc::codegen

#endif // ATTNC_CODEGEN_STREAM_H
