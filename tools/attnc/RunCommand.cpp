//===- RunCommand.cpp - attnc run and attnc bench -------------------------===//
//
// This file implements `attnc run` (load a model, bind weights and inputs,
// run through the JIT, write or summarise the outputs) and `attnc bench`
// (the same, timed: warm-up runs, then repeated runs; median and min time
// and GFLOP/s by the formulas of spec §5).
//
//===----------------------------------------------------------------------===//
#include "tools/attnc/Commands.h"
#include "driver/Session.h"

#include "codegen/Autoschedule.h"
#include "codegen/Jit.h"
#include "codegen/Resources.h"
#include "codegen/Stopwatch.h"
#include "runtime/Npy.h"
#include "runtime/Safetensors.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <numeric>
#include <thread>

#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

namespace attnc::driver {

using codegen::HostTensor;
using codegen::TensorMap;

using runtime::Result;

int commandFail(const Result &result) {
  llvm::errs() << "error: " << result.message << "\n";
  return 1;
}

int runThreads(int threads) {
  if (threads <= 0)
    return int(std::max(1u, std::thread::hardware_concurrency()));
  setenv("HL_NUM_THREADS", std::to_string(threads).c_str(), 1);
  return threads;
}

Result commandUsage(std::string message) {
  return Result::error(ATTN_ERROR_ARGUMENT, std::move(message));
}

Result loadRunWeights(const RunOptions &options,
                      const codegen::ModelPipeline &model,
                      TensorMap &weights) {
  if (!options.weights.empty() && options.randomWeights >= 0)
    return commandUsage("give either --weights or --random-weights, not both");
  if (options.weights.empty() && options.randomWeights < 0 &&
      !model.weights().empty())
    return Result::error(
        ATTN_ERROR_MISSING,
        "the model has " + std::to_string(model.weights().size()) +
            " weights (first: '" + model.weights().front().name + "' " +
            model.weights().front().shapeString() +
            "); give --weights FILE.safetensors or --random-weights SEED");
  return codegen::loadWeights(model, options.weights, options.randomWeights,
                              weights);
}

namespace {
using Clock = SteadyClock;

bool splitAssignment(const std::string &text, std::string &name,
                     std::string &value) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    return false;
  name = text.substr(0, eq);
  value = text.substr(eq + 1);
  return true;
}

/// Everything a run needs, loaded and checked.
struct Prepared {
  std::unique_ptr<Session> session;
  std::unique_ptr<codegen::JitModel> jit;
  TensorMap inputs, weights, outputs;
  codegen::WeightPack pack; ///< The weights, packed once for every run.
  std::map<std::string, int64_t> dims; ///< Bound runtime dims.
  double compileMs = 0;
};

/// The sizes of `--dim NAME=SIZE`, checked (1 <= SIZE < 2^31) before
/// anything is compiled or allocated.
Result parseDims(const RunOptions &options,
                 std::map<std::string, int64_t> &dims) {
  for (const std::string &spec : options.dims) {
    std::string name, value;
    if (!splitAssignment(spec, name, value))
      return commandUsage("expected --dim NAME=SIZE, got '" + spec + "'");
    Result size = codegen::parseDimSize(spec, value, dims[name]);
    if (!size.ok())
      return size;
  }
  return Result::success();
}

Result loadInputs(const RunOptions &options, const codegen::JitModel &jit,
                  const std::map<std::string, int64_t> &dims,
                  TensorMap &inputs) {
  const codegen::ModelPipeline &model = jit.pipeline();
  for (const std::string &spec : options.inputs) {
    std::string name, path;
    if (!splitAssignment(spec, name, path))
      return commandUsage("expected --input NAME=FILE.npy, got '" + spec + "'");
    Result result = runtime::readNpy(path, inputs[name]);
    if (!result.ok())
      return result;
  }
  if (options.randomInputs < 0)
    return Result::success();
  std::vector<std::vector<int64_t>> shapes;
  Result bound = codegen::inputShapes(model.inputs(), dims, shapes,
                                      model.maxBufferBytes());
  if (!bound.ok())
    return model.withStreamHint(bound);
  // The whole run's sizes (its outputs and stored buffers too) before
  // anything is generated: a run too large fails here, not in an allocator.
  std::map<std::string, std::vector<int64_t>> named;
  for (size_t i = 0; i < shapes.size(); ++i) {
    auto given = inputs.find(model.inputs()[i].name);
    named[model.inputs()[i].name] =
        given != inputs.end() ? given->second.shape : shapes[i];
  }
  std::vector<std::vector<int64_t>> outputShapes;
  if (Result fits = jit.outputShapes(named, outputShapes); !fits.ok())
    return fits;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const std::string &name = model.inputs()[i].name;
    if (!inputs.count(name))
      inputs[name] = codegen::randomInput(model.inputs()[i], shapes[i],
                                          uint64_t(options.randomInputs));
  }
  return Result::success();
}

/// The compile time by stage, on its own line.
void printCompileTimes(const Session &session) {
  const Session::CompileTimes &t = session.compileTimes();
  const codegen::KernelCompileStats &k = t.stages;
  auto ms = [](double value) { return llvm::format("%.1f ms", value); };
  llvm::outs() << "compile: MLIR passes " << ms(t.mlir) << ", code generation "
               << ms(t.codegen) << ", Halide lowering " << ms(k.lowering)
               << ", LLVM " << ms(k.llvm) << ", link " << ms(k.link)
               << ", cache and load " << ms(k.load);
  if (k.runtime > 0.05)
    llvm::outs() << ", Halide runtime " << ms(k.runtime);
  if (k.jit > 0)
    llvm::outs() << ", in-memory JIT " << ms(k.jit);
  llvm::outs() << " (" << t.kernels
               << (t.kernels == 1 ? " pipeline" : " kernels");
  if (k.hits + k.misses > 0)
    llvm::outs() << "; cache: " << k.hits << " hit"
                 << (k.hits == 1 ? "" : "s") << ", " << k.misses << " miss"
                 << (k.misses == 1 ? "" : "es");
  else
    llvm::outs() << "; not cached";
  if (k.threads > 1)
    llvm::outs() << "; stages added up over " << k.threads
                 << " threads compiling at once";
  llvm::outs() << ")\n";
}

std::unique_ptr<Prepared> prepare(const RunOptions &options) {
  std::map<std::string, int64_t> dims;
  if (Result parsed = parseDims(options, dims); !parsed.ok()) {
    commandFail(parsed);
    return nullptr;
  }
  // attn-tile's policies, `tuned` (the default policy with the tuning
  // database's schedules), or one of Halide's autoschedulers on the plain
  // (naive) algorithm, for the sizes and threads of this run.
  std::string autoscheduler = codegen::autoschedulerName(options.schedule);
  bool tuned = options.schedule == "tuned";
  std::optional<SchedulePolicy> policy =
      !autoscheduler.empty() ? SchedulePolicy::Naive
      : tuned                ? SchedulePolicy::Default
                             : parseSchedulePolicy(options.schedule);
  if (!policy) {
    std::string known;
    for (const std::string &name : codegen::autoschedulerOptions())
      known += ", " + name;
    commandFail(commandUsage(
        unknownSchedulePolicy(options.schedule) +
        ", tuned (with --tuning-db), or Halide's autoschedulers" + known));
    return nullptr;
  }
  if (tuned && options.tuningDb.empty()) {
    commandFail(commandUsage("--schedule tuned takes its schedules from a "
                             "tuning database: give --tuning-db FILE (attnc "
                             "tune makes one)"));
    return nullptr;
  }
  auto p = std::make_unique<Prepared>();
  SessionOptions sessionOptions{options.model, options.target, *policy};
  sessionOptions.autoscheduler = autoscheduler;
  sessionOptions.estimates = dims;
  sessionOptions.threads = runThreads(options.threads);
  sessionOptions.cache = options.cache;
  // Tuned schedules for the sizes of this run (the nearest tuned).
  sessionOptions.tuningDb = options.tuningDb;
  sessionOptions.tuningDims = dims;
  if (options.streamRows < 0) {
    commandFail(commandUsage("--stream-rows must be positive, or 0 to run "
                             "the whole sequence at once"));
    return nullptr;
  }
  sessionOptions.streamRows = options.streamRows;
  p->session = std::make_unique<Session>(sessionOptions, llvm::errs());
  if (!p->session->loadFile(options.file))
    return nullptr;
  auto start = Clock::now();
  p->jit = p->session->jit();
  if (!p->jit)
    return nullptr;
  p->compileMs = millisSince(start);

  codegen::ModelPipeline &model = p->jit->pipeline();
  Result loaded = loadRunWeights(options, model, p->weights);
  if (loaded.ok())
    loaded = loadInputs(options, *p->jit, dims, p->inputs);
  if (loaded.ok())
    loaded = p->jit->prepare(p->inputs, p->weights, p->outputs);
  if (loaded.ok())
    loaded = p->jit->packWeights(p->weights, p->pack);
  if (!loaded.ok()) {
    commandFail(loaded);
    return nullptr;
  }
  if (!options.saveWeights.empty()) {
    std::vector<runtime::SafetensorsTensorRef> refs;
    for (const auto &[name, t] : p->weights)
      refs.push_back({name, t.shape, t.data.data()});
    Result saved = runtime::writeSafetensors(options.saveWeights, refs);
    if (!saved.ok()) {
      commandFail(saved);
      return nullptr;
    }
  }
  // Runtime dims as bound by the inputs (for FLOPs).
  for (const codegen::TensorInfo &info : model.inputs())
    for (size_t i = 0; i < info.shape.size(); ++i)
      if (info.shape[i] < 0)
        p->dims[info.dims[i]] = p->inputs.at(info.name).shape[i];
  return p;
}
} // namespace

/// With one of Halide's autoschedulers: whether the outputs `p` computed
/// are those of attnc's default schedule on the same weights and inputs
/// (max |difference| / max |default| <= 1e-4 in every output). Prints the
/// check; a schedule that computes something else is an error (exit 1),
/// never a timing to compare.
static int checkAgainstDefault(const RunOptions &options, const Prepared &p) {
  std::string autoscheduler = codegen::autoschedulerName(options.schedule);
  if (autoscheduler.empty())
    return 0;
  RunOptions reference = options;
  reference.schedule = "default";
  reference.saveWeights.clear();
  std::unique_ptr<Prepared> q = prepare(reference);
  if (!q)
    return 1;
  if (Result ran =
          q->jit->runPrepared(q->inputs, q->weights, q->outputs, &q->pack);
      !ran.ok())
    return commandFail(ran);
  std::string worstName;
  double worst = codegen::outputDifference(p.outputs, q->outputs, &worstName);
  if (worst <= 1e-4) {
    llvm::outs() << "check: the outputs of Halide's " << autoscheduler
                 << " schedule match attnc's default schedule's (max "
                    "|difference| / max |default| = "
                 << llvm::format("%.1e", worst) << ")\n";
    return 0;
  }
  return commandFail(Result::error(
      ATTN_ERROR_RUNTIME,
      "the outputs of Halide's " + autoscheduler +
          " schedule differ from attnc's default schedule's: max |difference| "
          "/ max |default| = " + llvm::formatv("{0:e1}", worst).str() +
          " in output '" + worstName + "'"));
}

/// With one of Halide's autoschedulers, runs `command` in a child process
/// forked before anything else (no thread exists yet) and returns its exit
/// status: a schedule of theirs can crash the kernel (Mullapudi2016's of a
/// GAU layer at n = 2048 reads out of bounds), and that must end as an
/// error message, not as attnc's crash. Otherwise runs it here.
static int isolatedIfAutoscheduled(const RunOptions &options,
                                   int (*command)(const RunOptions &)) {
  std::string autoscheduler = codegen::autoschedulerName(options.schedule);
  if (autoscheduler.empty())
    return command(options);
  llvm::outs().flush();
  llvm::errs().flush();
  pid_t child = fork();
  if (child < 0)
    return command(options);
  if (child == 0) {
    // The crash is the parent's to report: no LLVM stack dump here.
    for (int crash : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT})
      signal(crash, SIG_DFL);
    int status = command(options);
    llvm::outs().flush();
    llvm::errs().flush();
    _exit(status);
  }
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  int signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return commandFail(Result::error(
      ATTN_ERROR_RUNTIME,
      "the kernel scheduled by Halide's " + autoscheduler +
          " autoscheduler crashed (signal " + std::to_string(signal) + ", " +
          strsignal(signal) + "); attnc's own schedules run this model"));
}

static int runModel(const RunOptions &options);
static int benchModel(const RunOptions &options);

int runCommand(const RunOptions &options) {
  return isolatedIfAutoscheduled(options, runModel);
}

int benchCommand(const RunOptions &options) {
  return isolatedIfAutoscheduled(options, benchModel);
}

static int runModel(const RunOptions &options) {
  std::unique_ptr<Prepared> p = prepare(options);
  if (!p)
    return 1;
  auto start = Clock::now();
  if (Result ran =
          p->jit->runPrepared(p->inputs, p->weights, p->outputs, &p->pack);
      !ran.ok())
    return commandFail(ran);
  double runMs = millisSince(start);

  std::map<std::string, std::string> outputFiles;
  for (const std::string &spec : options.outputs) {
    std::string name, path;
    if (!splitAssignment(spec, name, path))
      return commandFail(commandUsage("expected --output NAME=FILE.npy, got '" + spec + "'"));
    if (!p->outputs.count(name)) {
      std::string names;
      for (const auto &entry : p->outputs)
        names += (names.empty() ? "" : ", ") + entry.first;
      return commandFail(commandUsage("unknown output '" + name +
                        "'; the model's outputs are " + names));
    }
    outputFiles[name] = path;
  }
  for (const auto &[name, t] : p->outputs) {
    double sum = 0, absSum = 0;
    for (float v : t.data) {
      sum += v;
      absSum += std::abs(v);
    }
    llvm::outs() << name << ": shape " << t.shapeString() << ", checksum sum "
                 << llvm::format("%.6e", sum) << ", mean |y| "
                 << llvm::format("%.6e", absSum / double(t.data.size())) << "\n";
    auto file = outputFiles.find(name);
    if (file != outputFiles.end()) {
      Result written = runtime::writeNpy(file->second, t.shape, t.data.data());
      if (!written.ok())
        return commandFail(written);
    }
  }
  llvm::outs() << "time: compile " << llvm::format("%.1f", p->compileMs)
               << " ms, run " << llvm::format("%.2f", runMs) << " ms\n";
  printCompileTimes(*p->session);
  return checkAgainstDefault(options, *p);
}

static int benchModel(const RunOptions &options) {
  std::unique_ptr<Prepared> p = prepare(options);
  if (!p)
    return 1;
  for (int i = 0; i < options.warmup; ++i)
    if (Result ran =
            p->jit->runPrepared(p->inputs, p->weights, p->outputs, &p->pack);
        !ran.ok())
      return commandFail(ran);
  codegen::resetBufferPoolPeak();
  std::vector<double> times;
  auto begin = Clock::now();
  while (int(times.size()) < options.iterations ||
         (millisSince(begin) < options.minSeconds * 1000 && times.size() < 1000)) {
    auto start = Clock::now();
    if (Result ran =
            p->jit->runPrepared(p->inputs, p->weights, p->outputs, &p->pack);
        !ran.ok())
      return commandFail(ran);
    times.push_back(millisSince(start));
  }
  std::sort(times.begin(), times.end());
  double median = times[times.size() / 2];
  double flops = countFlops(p->session->layerModel(), p->dims);
  llvm::outs() << "median " << llvm::format("%.3f", median) << " ms, min "
               << llvm::format("%.3f", times.front()) << " ms, "
               << llvm::format("%.1f", flops / (median * 1e6)) << " GFLOP/s ("
               << times.size() << " runs, "
               << llvm::format("%.3f", flops / 1e9) << " GFLOP per run)\n";
  llvm::outs() << "peak memory of the pipeline's buffers: "
               << llvm::format("%.1f", codegen::bufferPoolStats().peakLiveBytes /
                                           1048576.0)
               << " MiB (inputs, weights and outputs not included)\n";
  printCompileTimes(*p->session);
  return checkAgainstDefault(options, *p);
}

} // namespace attnc::driver
