//===- Decode.h - a causal model run on a growing sequence ------*- C++ -*-===//
//
// This file declares incremental decoding (issue 15): a streamed model
// (Stream.h) run on one sequence that grows, a prompt's rows first
// (prefill), then a row per step, as a generating app runs a language
// model. The state is what streaming carries from block to block (per
// causal chunk_scan the sum of the completed chunks' states, per
// token_shift the row before the block, the position) and the inputs of the
// block not completed yet: at most one block of rows (the model's chunk).
// Each append runs that block again with the new rows in it, and when the
// block is full its carries advance and its rows are dropped. A step then
// costs one block's work and the state one block's inputs plus the
// carries, whatever the length of the context; the outputs are the
// whole-sequence run's (streaming's, up to the order of the chunk states'
// sum).
//
// A step computes the whole current block again (at most C rows, where a
// one-row kernel would compute one row and read the chunk's cached keys and
// values): constant in the context, not yet minimal.
//
// Attention over the whole sequence (GAU, MHSA) carries key/value caches
// of a capacity given at creation, which grow the state to the capacity's
// rows; such a model has no chunks, so every append commits and a step
// computes its one row over the cache.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_DECODE_H
#define ATTNC_CODEGEN_DECODE_H

#include "codegen/Stream.h"
#include "runtime/BlockSequence.h"
#include "runtime/Error.h"

#include <Halide.h>

#include <memory>
#include <vector>

namespace attnc::codegen {

/// One sequence decoded incrementally. The model it runs must outlive it.
/// Not thread-safe, and the decoders of one model run one at a time (they
/// share its compiled kernels' parameters).
class Decoder {
public:
  /// A decoder of a model with these inputs and outputs whose kernel runs
  /// blocks of `blockRows` rows through `blocks`, whose carries advance
  /// when a block's rows are a multiple of `commitRows`, in sequences of
  /// at most `maxRows` rows (BlockSequence). Every axis of the inputs
  /// and outputs other than their batch dims and rows must be static
  /// (ATTN_ERROR_ARGUMENT naming the tensor otherwise).
  static runtime::Result create(const std::vector<TensorInfo> &inputs,
                                const std::vector<TensorInfo> &outputs,
                                int blockRows, int commitRows,
                                int64_t maxRows,
                                std::unique_ptr<SequenceBlocks> blocks,
                                std::unique_ptr<Decoder> &decoder);

  /// Appends rows to the sequence: `inputs` (Halide order, in the order of
  /// the model's inputs) hold the same number r >= 1 of rows, their batch
  /// dims 1; `outputs` receive the outputs of those r rows. A prefill is an
  /// append of the prompt, a step an append of one row. On an error the
  /// sequence is as before the rows that failed.
  runtime::Result append(const std::vector<Halide::Buffer<float>> &inputs,
                         std::vector<Halide::Buffer<float>> &outputs);
  /// Starts a new sequence.
  void reset();
  /// Rows appended since the start.
  int64_t length() const { return sequence.length(); }
  int blockRows() const { return sequence.blockRows(); }
  /// The state's bytes: the carries (each with its next value's buffer)
  /// and the current block's inputs, constant in length() (the outputs'
  /// block buffers, scratch that is not carried, are not counted).
  int64_t stateBytes() const;

private:
  Decoder(int blockRows, int commitRows, int64_t maxRows)
      : sequence(blockRows, commitRows, maxRows) {}
  std::vector<TensorInfo> inputInfos, outputInfos;
  std::vector<int> inRows, outRows; ///< Halide dim of each tensor's rows.
  /// The current block's inputs (rows [0, length() - blockStart()) hold
  /// the rows appended since it began) and outputs.
  std::vector<Halide::Buffer<float>> blockInputs, blockOutputs;
  std::unique_ptr<SequenceBlocks> blocks;
  runtime::BlockSequence sequence;
};

} // namespace attnc::codegen

#endif // ATTNC_CODEGEN_DECODE_H
