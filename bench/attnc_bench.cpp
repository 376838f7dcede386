//===- attnc_bench.cpp - attnc's layers against peers, in one run ---------===//
//
// This file is the `attnc-bench` program. For the shapes (fp32,
// batch 1, d = 512, e = 1024, s = 128, C = 256) it compiles FLASH (causal
// and non-causal), GAU (causal) and MHSA (8 heads, causal) through the JIT
// and reports, all measured in the same run: the median time, GFLOP/s by
// countFlops, % of the FMA peak measured at start and end, the speedup over the
// naive schedule and over the fastest PyTorch peer (bench/torch_peer.py:
// eager, torch.compile, FLASH-pytorch, SDPA; each one's time in a second
// table), the
// dense stages as standalone `y = x @ w` models against cblas_sgemm, the
// time per token, and the peak memory of the run. See bench/README.md.
//
//===----------------------------------------------------------------------===//
#include "bench/BenchModels.h"
#include "bench/BenchReport.h"
#include "bench/BenchUtil.h"
#include "codegen/Codegen.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <optional>
#include <unistd.h>

using namespace attnc;
using namespace attnc::bench;

namespace {
struct Options {
  bool quick = false, markdown = false, naive = true, torch = true;
  int threads = 2;
  std::string only, python;
  double naiveLimit = 60; ///< Skip a naive run expected to take longer (s).
  bool keepBlasEnv = false;
  /// The table against Halide's autoschedulers, at this n (0: none).
  int64_t autoscheduleN = 0;
};

void usage() {
  std::fprintf(
      stderr,
      "usage: attnc-bench [options]\n"
      "  --quick              a few shapes, shorter timing (smoke run)\n"
      "  --threads N          threads for attnc, BLAS and torch (default 2)\n"
      "  --markdown           print the tables as Markdown\n"
      "  --only FAMILY        flash, gau or mhsa\n"
      "  --naive-limit S      skip naive runs expected to take > S s "
      "(default 60; 20 with --quick)\n"
      "  --no-naive           no naive-schedule column\n"
      "  --no-torch           no PyTorch peer column\n"
      "  --python PATH        interpreter for bench/torch_peer.py\n"
      "  --autoschedulers N   also a table against Halide's autoschedulers\n"
      "                       (Mullapudi2016, Li2018, Adams2019) at n = N;\n"
      "                       Adams2019 searches for minutes per layer\n"
      "  --keep-openblas-env  keep OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE for "
      "the sgemm peer, and OpenBLAS's own choice of kernels\n");
}

bool parseOptions(int argc, char **argv, Options &o) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char * {
      return i + 1 < argc ? argv[++i] : nullptr;
    };
    const char *v = nullptr;
    if (arg == "-h" || arg == "--help") {
      usage();
      std::exit(0);
    } else if (arg == "--quick") {
      o.quick = true;
    } else if (arg == "--markdown") {
      o.markdown = true;
    } else if (arg == "--no-naive") {
      o.naive = false;
    } else if (arg == "--no-torch") {
      o.torch = false;
    } else if (arg == "--keep-openblas-env") {
      o.keepBlasEnv = true;
    } else if (arg == "--threads" && (v = value())) {
      o.threads = std::atoi(v);
    } else if (arg == "--only" && (v = value())) {
      o.only = v;
    } else if (arg == "--python" && (v = value())) {
      o.python = v;
    } else if (arg == "--autoschedulers" && (v = value())) {
      o.autoscheduleN = std::atoll(v);
      if (o.autoscheduleN < 1)
        return false;
    } else if (arg == "--naive-limit" && (v = value())) {
      o.naiveLimit = std::atof(v);
    } else {
      std::fprintf(stderr, "attnc-bench: bad argument '%s'\n", arg.c_str());
      return false;
    }
  }
  return o.threads >= 1 && (o.only.empty() || o.only == "flash" ||
                            o.only == "gau" || o.only == "mhsa");
}

/// OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE hold OpenBLAS to old kernels and are
/// read when the library loads, so the sgemm peer needs a fresh process:
/// re-execute once without them. OpenBLAS 0.3.21 also falls back to its
/// Prescott (SSE3) kernels on CPUs it does not recognise (in some VMs, with
/// AVX-512): then the re-executed process asks for its SkylakeX kernels
/// (Haswell with AVX2 and FMA only), the best this CPU runs. attnc itself
/// does not use OpenBLAS.
void reexecForBestBlas(char **argv) {
  if (!haveBlas() || getenv("ATTNC_BENCH_REEXEC"))
    return;
  bool overridden = getenv("OPENBLAS_CORETYPE") || getenv("OPENBLAS_L2_SIZE");
  std::string best = __builtin_cpu_supports("avx512f") ? "SkylakeX"
                     : __builtin_cpu_supports("avx2") &&
                             __builtin_cpu_supports("fma")
                         ? "Haswell"
                         : "";
  bool fellBack = !best.empty() && blasCoreName() == "Prescott";
  if (!overridden && !fellBack)
    return;
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv("OPENBLAS_L2_SIZE");
  if (fellBack)
    setenv("OPENBLAS_CORETYPE", best.c_str(), 1);
  setenv("ATTNC_BENCH_REEXEC", "1", 1);
  execv("/proc/self/exe", argv);
  std::perror("attnc-bench: re-exec failed; keeping the OpenBLAS overrides");
}

std::string cpuName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos)
      return line.substr(line.find(':') + 2);
  return "unknown CPU";
}

std::string mib(double bytes) { return fixed(bytes / (1 << 20), 0); }

/// The ratio a / b as "1.23x".
std::string ratio(double a, double b) { return fixed(a / b, 2) + "x"; }

void progress(const std::string &text) {
  std::fprintf(stderr, "[attnc-bench] %s\n", text.c_str());
  std::fflush(stderr);
}

/// The attnc driver next to this program (both are built into bin/).
std::string attncDriver() {
  char path[4096];
  ssize_t length = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (length <= 0)
    return "attnc";
  std::string self(path, size_t(length));
  return self.substr(0, self.rfind('/') + 1) + "attnc";
}

/// One row per layer: `attnc bench` with attnc's default schedule and with
/// Halide's three autoschedulers on the same plain algorithm, at sequence
/// length `n` (batch 1), one after the other. Each is a process of its own:
/// an autoscheduled kernel can crash (attnc reports it and exits 1), and
/// `attnc bench --schedule <autoscheduler>` checks its outputs against
/// attnc's default schedule's (a difference over 1e-4 is an error, shown
/// here as `wrong`, never a time).
Table autoschedulerTable(const std::vector<BenchSpec> &specs, int64_t n,
                         int threads, const TimingPolicy &policy,
                         std::vector<std::string> &notes) {
  const std::vector<std::string> schedules = {"default", "mullapudi2016",
                                              "li2018", "adams2019"};
  Table table({"layer", "n", "attnc ms", "Mullapudi2016 ms", "Li2018 ms",
               "Adams2019 ms", "best autoscheduler / attnc"});
  std::string driver = attncDriver();
  for (const BenchSpec &spec : specs) {
    std::string at = spec.label + " n=" + std::to_string(n);
    llvm::SmallString<128> file;
    if (llvm::sys::fs::createTemporaryFile("attnc-bench", "attn", file)) {
      notes.push_back("cannot write a temporary model file for " + at);
      continue;
    }
    {
      std::ofstream out(std::string(file.str()));
      out << spec.source;
    }
    std::vector<std::string> row = {spec.label, std::to_string(n)};
    double attncMs = 0, best = 0;
    for (const std::string &schedule : schedules) {
      bool autoscheduled = schedule != "default";
      progress(at + ": attnc bench --schedule " + schedule +
               (schedule == "adams2019" ? " (its search takes minutes)" : ""));
      std::string command =
          shellQuote(driver) + " bench " + shellQuote(std::string(file.str())) +
          " --random-weights 1 --random-inputs 1 --dim n=" + std::to_string(n) +
          " --dim b=1 --threads " + std::to_string(threads) + " --schedule " +
          schedule + " --warmup " + std::to_string(policy.warmup) +
          " --iterations " + std::to_string(policy.minRuns) + " --min-time " +
          fixed(policy.minSeconds, 1) + " --no-cache 2>&1";
      std::string output;
      int status = runCapture(command, output);
      double ms = 0;
      size_t median = output.find("\nmedian ");
      if (median == std::string::npos && output.rfind("median ", 0) == 0)
        median = 0;
      else if (median != std::string::npos)
        ++median;
      if (median != std::string::npos)
        ms = std::atof(output.c_str() + median + 7);
      std::string cell;
      if (status == 0 && ms > 0) {
        cell = fixed(ms, 2);
      } else {
        bool wrong = output.find("differ from attnc's default") !=
                     std::string::npos;
        bool crashed = output.find("crashed (signal") != std::string::npos;
        cell = wrong ? "wrong" : crashed ? "crashed" : "error";
        size_t error = output.rfind("error: ");
        notes.push_back(schedule + " on " + at + ": " +
                        (error == std::string::npos
                             ? "exit status " + std::to_string(status)
                             : output.substr(error,
                                             output.find('\n', error) - error)));
        ms = 0;
      }
      progress(at + ": " + schedule + " " + cell);
      if (!autoscheduled) {
        attncMs = ms;
        row.push_back(cell);
        continue;
      }
      if (ms > 0 && attncMs > 0)
        cell += " (" + ratio(ms, attncMs) + ")";
      row.push_back(cell);
      if (ms > 0)
        best = best == 0 ? ms : std::min(best, ms);
    }
    row.push_back(best > 0 && attncMs > 0 ? ratio(best, attncMs) : "-");
    table.addRow(row);
    llvm::sys::fs::remove(file);
  }
  return table;
}
} // namespace

int main(int argc, char **argv) {
  Options o;
  if (!parseOptions(argc, argv, o)) {
    usage();
    return 2;
  }
  if (!o.keepBlasEnv)
    reexecForBestBlas(argv);
  // Halide reads its thread count when its runtime first starts.
  setenv("HL_NUM_THREADS", std::to_string(o.threads).c_str(), 1);
  setBlasThreads(o.threads);

  progress("measuring the FMA peak");
  FmaPeak peak1 = measureFmaPeakDetailed(1);
  FmaPeak peak = o.threads == 1 ? peak1 : measureFmaPeakDetailed(o.threads);
  if (o.torch)
    progress("looking for PyTorch");
  TorchPeer torch(std::string(ATTNC_BENCH_SOURCE_DIR) + "/torch_peer.py",
                  o.torch ? o.python : "/nonexistent", o.threads);

  TimingPolicy policy, peerPolicy;
  policy.warmup = 2;
  policy.minRuns = 5;
  policy.minSeconds = o.quick ? 0.3 : 2.0;
  policy.maxRuns = 200;
  double naiveLimit = o.quick ? std::min(o.naiveLimit, 20.0) : o.naiveLimit;

  std::vector<BenchSpec> specs = benchSpecs(o.quick, o.only);
  Table main({"layer", "n", "attnc ms", "GFLOP/s", "% peak", "vs naive",
              "vs torch", "torch peer", "torch bound", "dense vs BLAS",
              "us/token", "peak MiB", "ref MiB"});
  // Every PyTorch implementation's time, per row of `main`.
  Table peers({"layer", "n", "torch implementation", "torch ms", "vs attnc"});
  Table dense({"dense [M,K]x[K,N]", "attnc ms", "GFLOP/s", "BLAS ms",
               "BLAS GFLOP/s", "BLAS/attnc"});
  std::map<std::string, std::pair<double, double>> denseCache;
  std::vector<std::string> notes;
  bool failed = false;
  std::vector<double> rowGflops; ///< Per row of `main`, for % of peak.
  /// Per row of `main`: the spec's FLOPs and PyTorch's median ms (0 when
  /// not measured), for the torch bound.
  std::vector<double> rowFlops, rowTorchMs;

  for (const BenchSpec &spec : specs) {
    progress("compiling " + spec.label);
    std::unique_ptr<BenchModel> model =
        BenchModel::compile(spec.source, driver::SchedulePolicy::Default);
    if (!model) {
      notes.push_back("cannot compile " + spec.label +
                      " (errors above on stderr); its rows are missing");
      failed = true;
      continue;
    }
    progress(spec.label + ": compiled in " + fixed(model->compileSeconds(), 1) +
             " s");
    std::unique_ptr<BenchModel> naive;
    double naiveRate = 0; // GFLOP/s of the naive schedule, from the last run.
    if (o.naive) {
      naive = BenchModel::compile(spec.source, driver::SchedulePolicy::Naive);
      if (naive) {
        progress(spec.label + ": probing the naive schedule at n = 256");
        naive->bind(256);
        TimingPolicy once{0, 1, 0, 1};
        naiveRate = naive->flops() / (naive->time(once).median() * 1e6);
      }
    }
    for (int64_t n : spec.ns) {
      std::string at = spec.label + " n=" + std::to_string(n);
      model->bind(n);
      // Peak memory of the pipeline's own buffers during one run (the JIT's
      // buffer pool counts the bytes live at once; the process RSS would
      // also count the pool's cache and earlier models).
      codegen::resetBufferPoolPeak();
      model->runOnce();
      int64_t extra = int64_t(codegen::bufferPoolStats().peakLiveBytes);
      Timing t = model->time(policy);
      progress(at + ": attnc " + fixed(t.median(), 2) + " ms (" +
               std::to_string(t.runs()) + " runs)");

      std::string naiveCell = "-";
      double naiveMs = 0; // Its cell is set once attnc's time is final.
      if (naive) {
        double estimate = naive->flops(n) / (naiveRate * 1e9);
        if (estimate > naiveLimit) {
          naiveCell = "skip (~" + fixed(estimate, 0) + " s)";
        } else {
          progress(at + ": naive schedule (~" + fixed(estimate, 1) + " s/run)");
          naive->bind(n);
          TimingPolicy np{estimate < 3 ? 1 : 0,
                          estimate < 4    ? 5
                          : estimate < 15 ? 3
                                          : 1,
                          0, 5};
          naiveMs = naive->time(np).median();
          naiveRate = naive->flops() / (naiveMs * 1e6);
          progress(at + ": naive " + fixed(naiveMs, 1) + " ms");
          naive->release();
        }
      }

      std::string torchCell = "n/a", peerCell = "n/a";
      double torchMs = 0;
      std::optional<TorchPeer::Result> peer;
      if (torch.available()) {
        progress(at + ": PyTorch peers (torch.compile takes a while)");
        peer = torch.run(spec.peerModel, n, policy.minRuns, policy.minSeconds);
        for (const TorchPeer::Impl &impl : peer->impls)
          progress(at + ": torch " + impl.name + " " +
                   (impl.error.empty() ? fixed(impl.medianMs, 2) + " ms"
                                       : impl.error));
        // attnc again after its peers, as many runs as before, the runs of
        // both windows pooled: a machine whose speed drifts during the row
        // then moves both sides of `vs torch` alike, not only one (and
        // neither window, being faster, weighs more).
        TimingPolicy again = policy;
        again.minRuns = again.maxRuns = t.runs();
        again.minSeconds = 0;
        Timing after = model->time(again);
        progress(at + ": attnc again " + fixed(after.median(), 2) + " ms (" +
                 std::to_string(after.runs()) + " runs)");
        double drift = after.median() / t.median();
        if (drift > 1.05 || drift < 1 / 1.05)
          notes.push_back("attnc at " + at + ": " + fixed(t.median(), 2) +
                          " ms before its peers, " + fixed(after.median(), 2) +
                          " ms after (the machine's speed moved; both "
                          "windows' runs are pooled)");
        t = pooled(t, after);
      }
      double ms = t.median(), gflops = model->flops() / (ms * 1e6);
      if (naiveMs > 0)
        naiveCell = ratio(naiveMs, ms);
      if (peer) {
        const TorchPeer::Result &r = *peer;
        torchCell = r.ok ? ratio(r.medianMs, ms) : "error";
        peerCell = r.ok ? r.impl : "error";
        torchMs = r.ok ? r.medianMs : 0;
        for (const TorchPeer::Impl &impl : r.impls) {
          bool ran = impl.error.empty();
          peers.addRow({spec.label, std::to_string(n), impl.name,
                        ran ? fixed(impl.medianMs, 2) : "error",
                        ran ? ratio(impl.medianMs, ms) : "-"});
          if (!ran)
            notes.push_back("torch peer " + impl.name + " failed for " + at +
                            ": " + impl.error);
        }
        if (!r.ok)
          notes.push_back("torch peer failed for " + at + ": " + r.error);
      }

      std::string denseCell = "n/a";
      if (haveBlas()) {
        double attncSum = 0, blasSum = 0;
        for (const DenseShape &shape : spec.denses) {
          std::string key =
              "[" + std::to_string(n) + "," + std::to_string(shape.k) + "]x[" +
              std::to_string(shape.k) + "," + std::to_string(shape.n) + "]";
          if (!denseCache.count(key)) {
            progress(at + ": dense " + key + " attnc vs cblas_sgemm");
            std::pair<double, double> times =
                timeDense(n, shape.k, shape.n, policy);
            denseCache[key] = times;
            double f = 2.0 * double(n) * double(shape.k) * double(shape.n);
            dense.addRow(
                {key, fixed(times.first, 2), fixed(f / (times.first * 1e6), 1),
                 fixed(times.second, 2), fixed(f / (times.second * 1e6), 1),
                 ratio(times.second, times.first)});
          }
          attncSum += denseCache[key].first;
          blasSum += denseCache[key].second;
        }
        denseCell = ratio(blasSum, attncSum);
      }

      double tensors = double(model->tensorBytes());
      double ref = tensors + double(n) * double(spec.intermediateWidth) * 4;
      rowGflops.push_back(gflops);
      rowFlops.push_back(model->flops());
      rowTorchMs.push_back(torchMs);
      main.addRow({spec.label, std::to_string(n), fixed(ms, 2),
                   fixed(gflops, 1), "", naiveCell, torchCell, peerCell,
                   torchMs > 0 ? "" : "n/a", denseCell,
                   fixed(ms * 1e3 / double(n), 2), mib(tensors + double(extra)),
                   mib(ref)});
    }
  }

  Table autoschedulers({"layer"});
  if (o.autoscheduleN > 0)
    autoschedulers =
        autoschedulerTable(specs, o.autoscheduleN, o.threads, policy, notes);

  // The peak again: a busy machine only ever lowers it, so the better of
  // the two measurements is the peak.
  progress("measuring the FMA peak again");
  FmaPeak again = measureFmaPeakDetailed(o.threads);
  if (again.best > peak.best)
    peak = again;
  for (size_t row = 0; row < rowGflops.size(); ++row) {
    main.setCell(row, 4, fixed(100 * rowGflops[row] / peak.best, 1));
    // The time the spec's FLOPs take at the FMA peak, against PyTorch's.
    double atPeakMs = rowFlops[row] / (peak.best * 1e6);
    if (rowTorchMs[row] > 0)
      main.setCell(row, 8, ratio(rowTorchMs[row], atPeakMs));
  }
  if (o.threads > 1 && peak.best < 0.8 * o.threads * peak1.best)
    notes.push_back("the machine was busy: the FMA peak on " +
                    std::to_string(o.threads) + " threads is only " +
                    fixed(peak.best / peak1.best, 2) +
                    "x the 1-thread peak, so % peak is flattering");

  // The report: context, the main table, the dense table, the legend.
  char date[64];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M", std::localtime(&now));
  const char *bullet = o.markdown ? "- " : "";
  std::printf("%sattnc-bench %s, %s, %d thread%s%s\n", bullet, date,
              cpuName().c_str(), o.threads, o.threads == 1 ? "" : "s",
              o.quick ? " (quick)" : "");
  std::printf("%sFMA peak (%s): %.1f GFLOP/s on 1 thread, %.1f GFLOP/s on %d\n",
              bullet, fmaKernelIsa(), peak1.best, peak.best, o.threads);
  std::printf("%sBLAS: %s\n", bullet, blasDescription().c_str());
  std::printf("%sPyTorch peers: %s\n\n", bullet,
              torch.available()
                  ? torch.description().c_str()
                  : ("n/a (" +
                     (o.torch ? torch.why() : std::string("--no-torch")) + ")")
                        .c_str());
  std::printf("%s\n", main.render(o.markdown).c_str());
  if (!peers.empty())
    std::printf("%s\n", peers.render(o.markdown).c_str());
  if (!dense.empty())
    std::printf("%s\n", dense.render(o.markdown).c_str());
  if (!autoschedulers.empty())
    std::printf("%s\n", autoschedulers.render(o.markdown).c_str());
  std::printf(
      "%sattnc ms: median after warm-up (with PyTorch peers, of the runs "
      "of two windows, before and after them); GFLOP/s by the spec's formulas "
      "(countFlops); %% peak: of the FMA peak on %d threads (best of the "
      "measurements at start and end). The spec's formulas count every "
      "score of n x n attention; causal attention computes about half of "
      "them, so a causal GAU or MHSA row can pass 100%% of the peak.\n"
      "%svs naive / vs torch: their median time / attnc's (> 1: attnc faster); "
      "naive runs expected to take more than %.0f s are skipped; vs torch is "
      "against the fastest PyTorch implementation of the row (torch peer; "
      "every one's time is in the second table: spec = eager ops from the "
      "spec, flash-pytorch = FLASH-pytorch 0.1.9's module, sdpa = "
      "scaled_dot_product_attention, -compiled = under torch.compile).\n"
      "%storch bound: PyTorch's median time / the time the spec's FLOPs take "
      "at the FMA peak: the most `vs torch` that any implementation doing "
      "that work could reach (causal attention that skips masked blocks does "
      "somewhat less).\n"
      "%sdense vs BLAS: cblas_sgemm time / attnc `y = x @ w` time for the "
      "layer's input and output dense shapes, summed.\n"
      "%speak MiB: inputs + weights + outputs + the most bytes the "
      "pipeline's buffers hold at once during one run; ref MiB: inputs + "
      "weights + outputs + n*width*4 bytes "
      "(width 2e+s, or 3d for MHSA).\n",
      bullet, o.threads, bullet, naiveLimit, bullet, bullet, bullet);
  if (!autoschedulers.empty())
    std::printf("%sautoschedulers (--autoschedulers N): the layer's plain "
                "algorithm scheduled by Halide 14's Mullapudi2016, Li2018 and "
                "Adams2019 (default settings) for n = N, batch 1, these "
                "threads and this machine's cache, each run by `attnc bench` in a "
                "process of its own; ms (its time / attnc's); wrong: outputs "
                "differ from attnc's by more than 1e-4; crashed / error: the "
                "kernel crashed, or Halide could not compile the schedule "
                "(see the notes).\n",
                bullet);
  if (getenv("ATTNC_BENCH_REEXEC") && getenv("OPENBLAS_CORETYPE") &&
      !o.keepBlasEnv)
    notes.push_back(std::string("OpenBLAS chose its Prescott kernels for "
                                "this CPU; the sgemm peer runs its ") +
                    getenv("OPENBLAS_CORETYPE") +
                    " kernels (OPENBLAS_CORETYPE), the best this CPU runs");
  std::sort(notes.begin(), notes.end());
  notes.erase(std::unique(notes.begin(), notes.end()), notes.end());
  for (const std::string &note : notes)
    std::printf("%snote: %s\n", bullet, note.c_str());
  return failed ? 1 : 0;
}
