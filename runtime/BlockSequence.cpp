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
    int64_t at = length(), left = rows - done;
    bool stepping = step > 0 && (at % unit != 0 || left < unit);
    int64_t take = stepping ? std::min<int64_t>(left, step - at % step)
                            : std::min<int64_t>(block - block % unit,
                                                left - left % unit);
    if (take < 1) // a unit of several rows without a step kernel
      return Result::error(ATTN_ERROR_ARGUMENT,
                           "a decoder of chunks of " + std::to_string(unit) +
                               " rows needs a step kernel for the rows "
                               "between whole chunks");
    copyIn(done, int(take));
    if (Result ran = run(int(take), stepping); !ran.ok())
      return ran;
    copyOut(done, int(take));
    done += take;
    appended += take;
  }
  return Result::success();
}

} // namespace attnc::runtime
