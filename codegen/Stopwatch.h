//===- Stopwatch.h - elapsed time in milliseconds -----------------*- C++ -*-===//
//
// The one clock attnc times its stages and runs with (compile times by
// stage, run and bench timings): the steady clock, in milliseconds.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_STOPWATCH_H
#define ATTNC_CODEGEN_STOPWATCH_H

#include <chrono>

namespace attnc {

using SteadyClock = std::chrono::steady_clock;

/// Milliseconds since `start` (a SteadyClock::now()).
inline double millisSince(SteadyClock::time_point start) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - start)
      .count();
}

} // namespace attnc

#endif // ATTNC_CODEGEN_STOPWATCH_H
