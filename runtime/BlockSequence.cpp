//===- BlockSequence.cpp - a growing sequence run in blocks ---------------===//
//
// This file implements BlockSequence::append.
//
//===----------------------------------------------------------------------===//
#include "runtime/BlockSequence.h"

#include <algorithm>

namespace attnc::runtime {

Result BlockSequence::append(int64_t rows, const CopyIn &copyIn,
                             const Run &run, const CopyOut &copyOut) {
  for (int64_t done = 0; done < rows;) {
    int take = int(std::min<int64_t>(block - pending, rows - done));
    copyIn(done, pending, take);
    int filled = pending + take;
    bool full = filled % unit == 0;
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
