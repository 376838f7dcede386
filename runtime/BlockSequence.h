//===- BlockSequence.h - a growing sequence run in blocks -------*- C++ -*-===//
//
// This file declares BlockSequence, the block logic of incremental decoding
// shared by the JIT's decoder (codegen/Decode.h) and the libraries' one
// (attn_decoder, Decoder.cpp): a sequence that grows by appends runs in
// blocks of a fixed number of rows; the block not yet full is run again
// with each append, with the rows appended to it so far, and its carries
// advance (and its rows are dropped) when it fills, or as soon as its rows
// are a multiple of the commit unit (a model's chunk: carries of partial
// chunks do not exist; with a unit of 1, every run commits).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_BLOCKSEQUENCE_H
#define ATTNC_RUNTIME_BLOCKSEQUENCE_H

#include "runtime/Error.h"

#include <cstdint>
#include <functional>

namespace attnc::runtime {

/// The most rows a decoded (or streamed) sequence holds: positions reach
/// the kernels as floats, exact up to 2^24.
constexpr int64_t kMaxDecodedRows = int64_t(1) << 24;

/// Whether a key/value cache of `capacity` rows of `rowElements` floats
/// can be made for model `model`: 1 to kMaxDecodedRows rows, within the
/// 2^31 - 1 bytes one buffer of a kernel holds. ATTN_ERROR_ARGUMENT
/// saying which otherwise.
Result checkCacheCapacity(const std::string &model, int64_t capacity,
                          int64_t rowElements);

/// A decoded sequence's position: the rows of completed blocks and the
/// rows pending in the current one.
class BlockSequence {
public:
  /// Rows [from, from + count) of the appended rows into rows [at, at +
  /// count) of the current block's inputs.
  using CopyIn = std::function<void(int64_t from, int at, int count)>;
  /// Runs the current block's rows [0, filled); with `full` (a multiple of
  /// the commit unit) its carries are to advance after the run.
  using Run = std::function<Result(int filled, bool full)>;
  /// Rows [at, at + count) of the block's outputs into rows [to, to +
  /// count) of the caller's.
  using CopyOut = std::function<void(int at, int64_t to, int count)>;

  /// Blocks of at most `blockRows` rows, committed when their rows are a
  /// multiple of `commitRows` (0, or one that does not divide blockRows:
  /// blockRows), in a sequence of at most `maxRows` rows (a key/value
  /// cache's capacity, or kMaxDecodedRows).
  BlockSequence(int blockRows, int commitRows = 0,
                int64_t maxRows = kMaxDecodedRows)
      : block(blockRows),
        unit(commitRows > 0 && blockRows % commitRows == 0 ? commitRows
                                                           : blockRows),
        maxRows(maxRows) {}

  /// Appends `rows` rows: each piece that fits the current block is copied
  /// in, the block run and the piece's outputs copied out. The rows of a
  /// block count as appended only once its run succeeded: on an error the
  /// sequence is as before the piece that failed (an append of several
  /// blocks keeps those before it). An append past maxRows is refused
  /// before anything runs (ATTN_ERROR_ARGUMENT).
  Result append(int64_t rows, const CopyIn &copyIn, const Run &run,
                const CopyOut &copyOut);
  void reset() { committed = pending = 0; }
  /// Rows appended since the start.
  int64_t length() const { return committed + pending; }
  int blockRows() const { return block; }
  /// The current block's first row: the rows of the completed blocks.
  int64_t blockStart() const { return committed; }

private:
  int block, unit;
  int64_t maxRows;
  int pending = 0;
  int64_t committed = 0;
};

} // namespace attnc::runtime

#endif // ATTNC_RUNTIME_BLOCKSEQUENCE_H
