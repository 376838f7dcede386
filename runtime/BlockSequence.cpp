//===- BlockSequence.cpp - a growing sequence run in blocks ---------------===//
//
// This file implements BlockSequence::append.
//
//===----------------------------------------------------------------------===//
#include "runtime/BlockSequence.h"

#include <algorithm>
#include <climits>
#include <string>

namespace attnc::runtime {

Result checkCacheCapacity(const std::string &model, int64_t capacity,
                          int64_t rowElements) {
  if (capacity < 1 || capacity > kMaxDecodedRows)
    return Result::error(
        ATTN_ERROR_ARGUMENT,
        "model '" + model + "' keeps a key/value cache, whose capacity (the "
        "most tokens a sequence holds, 1 to 2^24) its decoder needs; got " +
            std::to_string(capacity));
  int64_t bytes = capacity * rowElements * 4;
  if (bytes > INT32_MAX)
    return Result::error(
        ATTN_ERROR_ARGUMENT,
        "a key/value cache of model '" + model + "' for " +
            std::to_string(capacity) + " tokens needs " +
            std::to_string(bytes) + " bytes, over the " +
            std::to_string(INT32_MAX) +
            " bytes one buffer of a kernel holds; give a capacity of at "
            "most " + std::to_string(INT32_MAX / (rowElements * 4)));
  return Result::success();
}

Result BlockSequence::append(int64_t rows, const CopyIn &copyIn,
                             const Run &run, const CopyOut &copyOut) {
  if (rows > maxRows - length())
    return Result::error(
        ATTN_ERROR_ARGUMENT,
        (maxRows == kMaxDecodedRows
             ? std::string("a decoded sequence holds at most 2^24 rows "
                           "(positions reach the kernels as floats)")
             : "the key/value cache holds " + std::to_string(maxRows) +
                   " rows (the decoder's capacity)") +
            "; the sequence has " + std::to_string(length()) +
            " and the append adds " + std::to_string(rows));
  for (int64_t done = 0; done < rows;) {
    int take = int(std::min<int64_t>(block - pending, rows - done));
    copyIn(done, pending, take);
    int filled = pending + take;
    bool full = filled == block || filled % unit == 0;
    if (Result ran = run(filled, full); !ran.ok())
      return ran;
    copyOut(pending, done, take);
    done += take;
    if (full) {
      committed += filled;
      pending = 0;
    } else {
      pending = filled;
    }
  }
  return Result::success();
}

} // namespace attnc::runtime
