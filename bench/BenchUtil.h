//===- BenchUtil.h - timing, FMA peak, memory, BLAS -------------*- C++ -*-===//
//
// This file declares the helpers shared by attnc's benchmark programs: the
// FP32 FMA peak of this machine (many independent vector accumulators per
// thread), a median-of-N timer, the process's peak memory (whole process
// and one phase), and single-precision GEMM through CBLAS (OpenBLAS) with
// a timing helper, so that every figure a benchmark prints is a ratio to
// something measured in the same run.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_BENCH_BENCHUTIL_H
#define ATTNC_BENCH_BENCHUTIL_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace attnc::bench {

//===----------------------------------------------------------------------===//
// FMA peak
//===----------------------------------------------------------------------===//

/// The vector ISA the FMA kernel was compiled for ("avx512f", "avx2+fma",
/// "generic vector").
const char *fmaKernelIsa();

/// One FMA-peak measurement.
struct FmaPeak {
  double best = 0;   ///< GFLOP/s of the fastest trial (the peak estimate).
  double median = 0; ///< GFLOP/s of the median trial.
  int threads = 1;
};

/// Measures the FP32 FMA throughput of `threads` std::threads, each running
/// a register-resident loop of independent FMAs (an FMA counts 2 FLOP), for
/// `trials` trials of about `secondsPerTrial` each.
FmaPeak measureFmaPeakDetailed(int threads, int trials = 5,
                               double secondsPerTrial = 0.2);

/// The FP32 FMA peak in GFLOP/s of `threads` threads (best of 5 trials:
/// noise on a shared machine only ever lowers a peak).
double measureFmaPeak(int threads);

//===----------------------------------------------------------------------===//
// Timing
//===----------------------------------------------------------------------===//

/// Seconds on a monotonic clock.
double nowSeconds();

/// How many times a timed function runs.
struct TimingPolicy {
  int warmup = 1;          ///< Untimed runs first.
  int minRuns = 5;         ///< At least this many timed runs ...
  double minSeconds = 1.0; ///< ... and at least this much timed time ...
  int maxRuns = 1000;      ///< ... but never more than this many runs.
};

/// Times of the runs of one function, in milliseconds.
struct Timing {
  std::vector<double> ms; ///< Sorted ascending.
  double median() const;  ///< The median (mean of the middle two when even).
  double min() const;
  int runs() const { return int(ms.size()); }
};

/// Runs `fn` per `policy` and returns the sorted run times.
Timing timeRuns(const std::function<void()> &fn, const TimingPolicy &policy);

/// The runs of two timings of the same function as one (sorted).
Timing pooled(const Timing &a, const Timing &b);

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

/// Peak resident set of the process so far (getrusage ru_maxrss), bytes.
int64_t processPeakRssBytes();

/// Current resident set (VmRSS of /proc/self/status), bytes; -1 if unknown.
int64_t currentRssBytes();

/// Measures the peak resident memory of one phase of this process: start()
/// returns freed heap memory to the system (malloc_trim), records VmRSS and
/// resets the kernel's high-water mark by writing 5 to /proc/self/clear_refs
/// (Linux >= 4.0); stop() reads VmHWM. The result is the growth of the
/// resident set during the phase (bytes). Where clear_refs is not writable,
/// the high-water mark cannot be reset and exact() is false: the figure is
/// then the growth of the whole process's peak, a lower bound.
class PhasePeak {
public:
  void start();
  /// Peak growth of the resident set since start(), bytes (>= 0).
  int64_t stop();
  bool exact() const { return resetWorked; }

private:
  int64_t baseRss = 0;
  int64_t baseHwm = 0;
  bool resetWorked = false;
};

//===----------------------------------------------------------------------===//
// BLAS
//===----------------------------------------------------------------------===//

/// True when the benchmarks were built with CBLAS (OpenBLAS).
bool haveBlas();

/// A description of the BLAS in use ("OpenBLAS 0.3.21, core SkylakeX, 2
/// threads"), or "none".
std::string blasDescription();

/// OpenBLAS's kernel family for this CPU ("SkylakeX"), or "" without it.
std::string blasCoreName();

/// Sets the BLAS thread count (no-op without OpenBLAS).
void setBlasThreads(int threads);

/// C[M, N] = A[M, K] * B[K, N], row-major, via cblas_sgemm. Aborts when
/// built without BLAS.
void sgemm(int64_t m, int64_t n, int64_t k, const float *a, const float *b,
           float *c);

/// Times sgemm on random [M, K] x [K, N] operands per `policy`.
Timing timeSgemm(int64_t m, int64_t n, int64_t k, const TimingPolicy &policy);

/// Formats `value` with `digits` decimals.
std::string fixed(double value, int digits);

} // namespace attnc::bench

#endif // ATTNC_BENCH_BENCHUTIL_H
