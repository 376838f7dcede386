//===- BlockSequence.h - a growing sequence run in blocks -------*- C++ -*-===//
//
// This file declares BlockSequence, the block logic of incremental decoding
// shared by the JIT's decoder (codegen/Decode.h) and the libraries' one
// (attn_decoder, Decoder.cpp): a sequence that grows by appends runs in
// pieces, each through one of a model's two kernels, each committed
// (its carries advance) once it ran. The block kernel runs blocks of whole
// chunks (their rows a multiple of the unit, the model's chunk, starting at
// a multiple of it); the step kernel runs the rows between, in pieces that
// stay within a chunk: a step's one row, or a prompt's rows past its last
// whole chunk. A model without chunks has a unit of 1 and no step kernel.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_BLOCKSEQUENCE_H
#define ATTNC_RUNTIME_BLOCKSEQUENCE_H

#include "runtime/Error.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

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

/// The rows [first, first + count) that a block of `rows` rows at row
/// `offset` writes in place into a cache of `cacheRows` rows: of a
/// key/value cache (the capacity, at least offset + rows) the block's
/// rows; of a chunk cache (C rows) rows from offset % C to the chunk's end
/// at most (the step kernel's rows, or the block kernel's last chunk).
struct CacheRows {
  int64_t first, count;
};
inline CacheRows cacheRows(int64_t cacheRows, int64_t offset, int64_t rows) {
  int64_t first = offset % cacheRows;
  return {first, rows < cacheRows - first ? rows : cacheRows - first};
}

/// After a block ran: each carry takes its next value, whose memory the
/// old value's becomes (swapped), but caches, which the block wrote in
/// place. `Carry` is any buffer type (the JIT's and the C runtime's).
template <typename Carry>
void advanceCarries(std::vector<Carry> &carries, std::vector<Carry> &nexts,
                    const std::vector<bool> &caches) {
  for (size_t c = 0; c < carries.size(); ++c)
    if (!caches[c])
      std::swap(carries[c], nexts[c]);
}

/// A decoded sequence's position, and how an append is cut into pieces.
class BlockSequence {
public:
  /// Rows [from, from + count) of the appended rows into the piece's
  /// input buffers.
  using CopyIn = std::function<void(int64_t from, int count)>;
  /// Runs the piece of `rows` rows at row length() of the sequence through
  /// the step kernel (`step`) or the block kernel, its carries advanced
  /// when it succeeds.
  using Run = std::function<Result(int rows, bool step)>;
  /// The piece's outputs into rows [to, to + count) of the caller's.
  using CopyOut = std::function<void(int64_t to, int count)>;

  /// Pieces of at most `blockRows` rows; the block kernel's a multiple of
  /// `unitRows` (0 or 1: any) at a multiple of it; with `stepRows` > 0
  /// (dividing unitRows), the step kernel's within a multiple of
  /// stepRows. A sequence holds at most `maxRows` rows (a key/value
  /// cache's capacity, or kMaxDecodedRows).
  BlockSequence(int blockRows, int unitRows = 1, int stepRows = 0,
                int64_t maxRows = kMaxDecodedRows)
      : block(blockRows), unit(std::max(unitRows, 1)), step(stepRows),
        maxRows(maxRows) {}

  /// Appends `rows` rows: each piece is copied in, run and its outputs
  /// copied out. On an error the sequence is as before the piece that
  /// failed (an append of several pieces keeps those before it). An
  /// append past maxRows is refused before anything runs
  /// (ATTN_ERROR_ARGUMENT).
  Result append(int64_t rows, const CopyIn &copyIn, const Run &run,
                const CopyOut &copyOut);
  void reset() { appended = 0; }
  /// Rows appended since the start.
  int64_t length() const { return appended; }
  int blockRows() const { return block; }

private:
  int block, unit, step;
  int64_t maxRows;
  int64_t appended = 0;
};

} // namespace attnc::runtime

#endif // ATTNC_RUNTIME_BLOCKSEQUENCE_H
