//===- fma_peak.cpp - measure this machine's FP32 FMA peak ----------------===//
//
// This file is the `fma_peak` program: it measures the FP32 FMA throughput
// of one thread and of N threads (std::thread, default: every hardware
// thread) with the kernel of BenchUtil (independent vector accumulators
// held in registers, ISA picked at compile time), and prints GFLOP/s, the
// best and the median of the trials. The other benchmarks report "% of
// peak" against the same measurement, made at their start.
//
//   fma_peak [--threads N] [--trials T] [--seconds S]
//
//===----------------------------------------------------------------------===//
#include "bench/BenchUtil.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

using namespace attnc::bench;

namespace {
void usage() {
  std::fprintf(stderr,
               "usage: fma_peak [--threads N] [--trials T] [--seconds S]\n"
               "  --threads N   threads of the multi-thread measurement "
               "(default: hardware threads)\n"
               "  --trials T    trials per measurement (default 5)\n"
               "  --seconds S   seconds per trial (default 0.2)\n");
}

void report(const char *label, const FmaPeak &peak) {
  std::printf("%-10s %2d thread%s  best %7.1f GFLOP/s  median %7.1f GFLOP/s  "
              "(%.1f GFLOP/s per thread)\n",
              label, peak.threads, peak.threads == 1 ? " " : "s", peak.best,
              peak.median, peak.best / peak.threads);
}
} // namespace

int main(int argc, char **argv) {
  int threads = int(std::thread::hardware_concurrency());
  int trials = 5;
  double seconds = 0.2;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc) {
        usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--threads")
      threads = std::atoi(value());
    else if (arg == "--trials")
      trials = std::atoi(value());
    else if (arg == "--seconds")
      seconds = std::atof(value());
    else if (arg == "-h" || arg == "--help") {
      usage();
      return 0;
    } else {
      std::fprintf(stderr, "fma_peak: unknown argument '%s'\n", arg.c_str());
      usage();
      return 2;
    }
  }
  if (threads < 1 || trials < 1 || seconds <= 0) {
    usage();
    return 2;
  }
  std::printf("FP32 FMA peak, kernel %s, %d trials of %.2f s\n", fmaKernelIsa(),
              trials, seconds);
  FmaPeak single = measureFmaPeakDetailed(1, trials, seconds);
  report("single", single);
  if (threads > 1) {
    FmaPeak multi = measureFmaPeakDetailed(threads, trials, seconds);
    report("multi", multi);
    std::printf("scaling %.2fx on %d threads\n", multi.best / single.best,
                threads);
  }
  return 0;
}
