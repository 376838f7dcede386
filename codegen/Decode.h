//===- Decode.h - a causal model run on a growing sequence ------*- C++ -*-===//
//
// This file declares incremental decoding (issue 15): a streamed model
// (Stream.h) run on one sequence that grows, a prompt's rows first
// (prefill), then a row per step, as a generating app runs a language
// model. The state is what streaming carries from block to block, constant
// in the sequence's length: per causal chunk_scan the sum of the completed
// chunks' states and the current chunk's partial state, per chunked
// attention the current chunk's keys and values (chunk caches of C rows),
// per token_shift the previous row, and the position.
//
// Each append runs in pieces (runtime::BlockSequence): whole chunks
// through the block kernel (the streamed kernel, at full speed: a prompt),
// and the rows between through the step kernel (CodegenOptions::
// chunkStep), whose block lies within one chunk and reads the chunk's
// earlier rows from the caches: a step computes its one row. The outputs
// are the whole-sequence run's, up to the order of the chunk states' sums.
//
// Attention over the whole sequence (GAU, MHSA) carries key/value caches
// of a capacity given at creation, which grow the state to the capacity's
// rows; such a model has no chunks, and every piece, a step's one row or a
// prompt's block, runs through its block kernel over the cache.
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
  /// A decoder of a model with these inputs and outputs whose kernels run
  /// pieces of at most `blockRows` rows through `blocks`: the block
  /// kernel's whole `unitRows`, the step kernel's within `stepRows`, in
  /// sequences of at most `maxRows` rows (BlockSequence). Every axis of the
  /// inputs and outputs other than their batch dims and rows must be
  /// static (ATTN_ERROR_ARGUMENT naming the tensor otherwise).
  static runtime::Result create(const std::vector<TensorInfo> &inputs,
                                const std::vector<TensorInfo> &outputs,
                                int blockRows, int unitRows, int stepRows,
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
  /// The state's bytes: the carries (each with its next value's buffer),
  /// constant in length() (the pieces' input and output buffers, scratch
  /// that is not carried, are not counted).
  int64_t stateBytes() const;

private:
  Decoder(int blockRows, int unitRows, int stepRows, int64_t maxRows)
      : sequence(blockRows, unitRows, stepRows, maxRows) {}
  std::vector<TensorInfo> inputInfos, outputInfos;
  std::vector<int> inRows, outRows; ///< Halide dim of each tensor's rows.
  /// A piece's inputs and outputs (blockRows rows each).
  std::vector<Halide::Buffer<float>> blockInputs, blockOutputs;
  std::unique_ptr<SequenceBlocks> blocks;
  runtime::BlockSequence sequence;
};

} // namespace attnc::codegen

#endif // ATTNC_CODEGEN_DECODE_H
