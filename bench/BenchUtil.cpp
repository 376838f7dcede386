//===- BenchUtil.cpp - timing, FMA peak, memory and BLAS for benchmarks ---===//
//
// This file implements the benchmark helpers of BenchUtil.h. The FMA kernel
// is chosen at compile time from the target's vector ISA (AVX-512F: 24 zmm
// accumulators; AVX2+FMA: 12 ymm accumulators; otherwise GCC vector
// extensions), so the library must be compiled with -march=native to
// measure the machine it runs on.
//
//===----------------------------------------------------------------------===//
#include "bench/BenchUtil.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <malloc.h>
#include <sstream>
#include <sys/resource.h>
#include <thread>

#if defined(__AVX512F__) || (defined(__AVX__) && defined(__FMA__))
#include <immintrin.h>
#endif

#ifdef ATTNC_BENCH_HAVE_CBLAS
#include <cblas.h>
#endif

namespace attnc::bench {

//===----------------------------------------------------------------------===//
// FMA peak
//===----------------------------------------------------------------------===//

namespace {
#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16, kAccumulators = 24;
constexpr const char *kIsa = "avx512f";
inline Vec splat(float x) { return _mm512_set1_ps(x); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline float lane0(Vec v) { return _mm512_cvtss_f32(v); }
#elif defined(__AVX__) && defined(__FMA__)
using Vec = __m256;
constexpr int kLanes = 8, kAccumulators = 12;
constexpr const char *kIsa = "avx2+fma";
inline Vec splat(float x) { return _mm256_set1_ps(x); }
inline Vec vfma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline float lane0(Vec v) { return _mm256_cvtss_f32(v); }
#else
typedef float Vec __attribute__((vector_size(16)));
constexpr int kLanes = 4, kAccumulators = 12;
constexpr const char *kIsa = "generic vector";
inline Vec splat(float x) { return Vec{x, x, x, x}; }
inline Vec vfma(Vec a, Vec b, Vec c) { return a * b + c; }
inline float lane0(Vec v) { return v[0]; }
#endif

constexpr double kFlopsPerIteration = 2.0 * kLanes * kAccumulators;

/// `iterations` rounds of kAccumulators independent FMAs. acc = acc*m + a
/// converges to a / (1 - m), so values stay normal for any count.
__attribute__((noinline)) float fmaLoop(int64_t iterations, float seed) {
  Vec acc[kAccumulators];
  for (int i = 0; i < kAccumulators; ++i)
    acc[i] = splat(seed + 0.001f * float(i));
  const Vec m = splat(0.9999999f), a = splat(1e-7f);
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < kAccumulators; ++i)
      acc[i] = vfma(acc[i], m, a);
  }
  float sum = 0;
  for (int i = 0; i < kAccumulators; ++i)
    sum += lane0(acc[i]);
  return sum;
}

/// Runs fmaLoop on `threads` threads started together; wall seconds.
double runThreads(int threads, int64_t iterations) {
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  std::vector<float> sink(size_t(threads), 0.f);
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire))
        std::this_thread::yield();
      sink[size_t(t)] = fmaLoop(iterations, 1.0f + 0.01f * float(t));
    });
  while (ready.load() < threads)
    std::this_thread::yield();
  double start = nowSeconds();
  go.store(true, std::memory_order_release);
  for (std::thread &thread : pool)
    thread.join();
  double seconds = nowSeconds() - start;
  volatile float keep = 0;
  for (float s : sink)
    keep = keep + s;
  (void)keep;
  return seconds;
}
} // namespace

const char *fmaKernelIsa() { return kIsa; }

FmaPeak measureFmaPeakDetailed(int threads, int trials,
                               double secondsPerTrial) {
  threads = std::max(threads, 1);
  // Calibrate the iteration count on one thread.
  int64_t iterations = 1 << 16;
  for (;;) {
    double seconds = runThreads(1, iterations);
    if (seconds > 0.02) {
      iterations = int64_t(double(iterations) * secondsPerTrial / seconds) + 1;
      break;
    }
    iterations *= 4;
  }
  std::vector<double> rates;
  for (int t = 0; t < std::max(trials, 1); ++t) {
    double seconds = runThreads(threads, iterations);
    rates.push_back(kFlopsPerIteration * double(iterations) * threads /
                    seconds / 1e9);
  }
  std::sort(rates.begin(), rates.end());
  FmaPeak peak;
  peak.best = rates.back();
  peak.median = rates[rates.size() / 2];
  peak.threads = threads;
  return peak;
}

double measureFmaPeak(int threads) {
  return measureFmaPeakDetailed(threads).best;
}

//===----------------------------------------------------------------------===//
// Timing
//===----------------------------------------------------------------------===//

double nowSeconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double Timing::median() const {
  if (ms.empty())
    return 0;
  size_t half = ms.size() / 2;
  return ms.size() % 2 ? ms[half] : 0.5 * (ms[half - 1] + ms[half]);
}

double Timing::min() const { return ms.empty() ? 0 : ms.front(); }

Timing timeRuns(const std::function<void()> &fn, const TimingPolicy &policy) {
  for (int i = 0; i < policy.warmup; ++i)
    fn();
  Timing timing;
  double begin = nowSeconds();
  while (timing.runs() < policy.maxRuns &&
         (timing.runs() < policy.minRuns ||
          nowSeconds() - begin < policy.minSeconds)) {
    double start = nowSeconds();
    fn();
    timing.ms.push_back((nowSeconds() - start) * 1e3);
  }
  std::sort(timing.ms.begin(), timing.ms.end());
  return timing;
}

Timing pooled(const Timing &a, const Timing &b) {
  Timing both;
  both.ms.reserve(a.ms.size() + b.ms.size());
  std::merge(a.ms.begin(), a.ms.end(), b.ms.begin(), b.ms.end(),
             std::back_inserter(both.ms));
  return both;
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

int64_t processPeakRssBytes() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return int64_t(usage.ru_maxrss) * 1024; // ru_maxrss is in KiB on Linux.
}

namespace {
/// A "Name:   123 kB" field of /proc/self/status, in bytes; -1 if absent.
int64_t statusField(const char *name) {
  std::ifstream in("/proc/self/status");
  std::string line;
  size_t length = std::strlen(name);
  while (std::getline(in, line))
    if (line.compare(0, length, name) == 0 && line.size() > length &&
        line[length] == ':')
      return std::atoll(line.c_str() + length + 1) * 1024;
  return -1;
}
} // namespace

int64_t currentRssBytes() { return statusField("VmRSS"); }

void PhasePeak::start() {
  malloc_trim(0);
  baseRss = currentRssBytes();
  baseHwm = statusField("VmHWM");
  FILE *file = std::fopen("/proc/self/clear_refs", "w");
  resetWorked = false;
  if (file) {
    resetWorked = std::fputs("5", file) >= 0;
    resetWorked = (std::fclose(file) == 0) && resetWorked;
  }
  if (resetWorked)
    resetWorked = statusField("VmHWM") <= baseRss + (1 << 20);
}

int64_t PhasePeak::stop() {
  int64_t hwm = statusField("VmHWM");
  int64_t base = resetWorked ? baseRss : std::max(baseRss, baseHwm);
  return std::max<int64_t>(0, hwm - base);
}

//===----------------------------------------------------------------------===//
// BLAS
//===----------------------------------------------------------------------===//

#ifdef ATTNC_BENCH_HAVE_CBLAS
bool haveBlas() { return true; }

std::string blasDescription() {
  std::ostringstream os;
  os << openblas_get_config() << ", core " << openblas_get_corename() << ", "
     << openblas_get_num_threads() << " threads";
  return os.str();
}

std::string blasCoreName() { return openblas_get_corename(); }

void setBlasThreads(int threads) { openblas_set_num_threads(threads); }

void sgemm(int64_t m, int64_t n, int64_t k, const float *a, const float *b,
           float *c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(m), int(n), int(k),
              1.0f, a, int(k), b, int(n), 0.0f, c, int(n));
}
#else
bool haveBlas() { return false; }
std::string blasDescription() { return "none"; }
std::string blasCoreName() { return ""; }
void setBlasThreads(int) {}
void sgemm(int64_t, int64_t, int64_t, const float *, const float *, float *) {
  std::fprintf(stderr, "sgemm: built without CBLAS\n");
  std::abort();
}
#endif

Timing timeSgemm(int64_t m, int64_t n, int64_t k, const TimingPolicy &policy) {
  std::vector<float> a(size_t(m * k)), b(size_t(k * n)), c(size_t(m * n));
  uint32_t state = 12345;
  auto next = [&] {
    state = state * 1664525u + 1013904223u;
    return float(state >> 8) / float(1 << 24) - 0.5f;
  };
  for (float &x : a)
    x = next();
  for (float &x : b)
    x = next();
  return timeRuns([&] { sgemm(m, n, k, a.data(), b.data(), c.data()); },
                  policy);
}

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, value);
  return buffer;
}

} // namespace attnc::bench
