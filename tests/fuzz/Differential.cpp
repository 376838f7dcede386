//===- Differential.cpp - generated models vs the fp64 reference ----------===//
//
// This file implements the differential checker (see Differential.h): the
// in-process check of one model and variant; its isolated form, which forks
// a child that runs the checks of a model one after the other and streams
// each result back through a pipe, under a CPU-time limit per check; and the
// thread pool that keeps a few such children running at once.
//
//===----------------------------------------------------------------------===//
#include "tests/fuzz/Differential.h"

#include "dsl/IR/AttnOps.h"
#include "tests/e2e/E2EUtil.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cassert>
#include <chrono>
#include <mutex>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <poll.h>
#include <regex>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace attnc::fuzz {

const char *variantName(Variant variant) {
  switch (variant) {
  case Variant::Default:
    return "default";
  case Variant::Naive:
    return "naive";
  case Variant::CudaOnHost:
    return "cuda-on-host";
  case Variant::Streamed:
    return "streamed";
  }
  return "?";
}

const char *outcomeName(Outcome outcome) {
  switch (outcome) {
  case Outcome::Ok:
    return "ok";
  case Outcome::FrontendRejected:
    return "frontend-rejected";
  case Outcome::InternalError:
    return "internal-error";
  case Outcome::CompileError:
    return "compile-error";
  case Outcome::Mismatch:
    return "mismatch";
  case Outcome::ReferenceError:
    return "reference-error";
  case Outcome::Crash:
    return "crash";
  case Outcome::Timeout:
    return "timeout";
  }
  return "?";
}

bool parseVariant(const std::string &name, Variant &variant) {
  for (Variant v : allVariants())
    if (name == variantName(v)) {
      variant = v;
      return true;
    }
  return false;
}

const std::vector<Outcome> &allOutcomes() {
  static const std::vector<Outcome> outcomes = {
      Outcome::Ok,       Outcome::FrontendRejected, Outcome::InternalError,
      Outcome::CompileError, Outcome::Mismatch,     Outcome::ReferenceError,
      Outcome::Crash,    Outcome::Timeout};
  return outcomes;
}

const std::vector<Variant> &allVariants() {
  static const std::vector<Variant> variants = {
      Variant::Default, Variant::Naive, Variant::CudaOnHost,
      Variant::Streamed};
  return variants;
}

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Normwise relative error of every output (NaN and missing outputs are
/// infinite); `what` names the worst output.
double compareOutputs(const codegen::TensorMap &got,
                      const std::map<std::string, ref::Tensor> &want,
                      std::string &what) {
  double worst = 0;
  for (const auto &[name, r] : want) {
    auto it = got.find(name);
    if (it == got.end() || it->second.shape != r.shape) {
      what = "output '" + name + "' is missing or has another shape";
      return INFINITY;
    }
    double maxRef = 0, maxDiff = 0;
    for (size_t i = 0; i < r.data.size(); ++i) {
      double diff = std::abs(double(it->second.data[i]) - r.data[i]);
      if (std::isnan(diff) || std::isinf(diff)) {
        what = "output '" + name + "' has a NaN or infinity at element " +
               std::to_string(i) + " (got " + std::to_string(it->second.data[i]) +
               ", want " + std::to_string(r.data[i]) + ")";
        return INFINITY;
      }
      maxRef = std::max(maxRef, std::abs(r.data[i]));
      maxDiff = std::max(maxDiff, diff);
    }
    double error = maxDiff / std::max(maxRef, 1e-30);
    if (error >= worst) {
      worst = error;
      what = "output '" + name + "': max |y - ref| = " + std::to_string(maxDiff) +
             ", max |ref| = " + std::to_string(maxRef);
    }
  }
  if (want.empty()) {
    what = "the reference returned no outputs";
    return INFINITY;
  }
  return worst;
}

/// The check itself, in this process.
VariantResult checkInProcess(const std::string &source,
                             const std::vector<DimBinding> &dims, Variant variant,
                             const CheckOptions &options) {
  VariantResult result;
  result.variant = variant;
  std::unique_ptr<e2e::CompiledModel> model;
  try {
    if (variant == Variant::Streamed) {
      driver::SessionOptions streamed;
      streamed.decode = true;
      model = e2e::compileAttn(source, streamed);
    } else {
      model = e2e::compileAttn(
          source,
          variant == Variant::Naive ? driver::SchedulePolicy::Naive
                                    : driver::SchedulePolicy::Default,
          variant == Variant::CudaOnHost ? e2e::cudaScheduleTarget()
                                         : Halide::get_host_target());
    }
  } catch (const std::exception &e) {
    result.outcome = Outcome::InternalError;
    result.message = std::string("exception while compiling: ") + e.what();
    return result;
  } catch (...) {
    result.outcome = Outcome::InternalError;
    result.message = "unknown exception while compiling";
    return result;
  }
  if (!model->loaded) {
    result.outcome = Outcome::FrontendRejected;
    result.message = model->diagnostics;
    return result;
  }
  // checkStreamable's refusals all begin so (codegen/Stream.cpp).
  if (!model->jit && variant == Variant::Streamed &&
      model->diagnostics.find("error: decoding ") != std::string::npos &&
      model->diagnostics.find("internal error") == std::string::npos) {
    result.message = "not streamed: " + model->diagnostics;
    return result;
  }
  if (!model->jit) {
    result.outcome = model->diagnostics.find("internal error") != std::string::npos
                         ? Outcome::InternalError
                         : Outcome::CompileError;
    result.message = model->diagnostics.empty() ? "compilation failed without a "
                                                  "diagnostic"
                                                : model->diagnostics;
    return result;
  }
  codegen::JitModel &jit = *model->jit;
  codegen::TensorMap weights =
      codegen::randomWeights(jit.pipeline().weights(), options.weightSeed);
  for (const DimBinding &binding : dims) {
    result.dims = binding;
    std::vector<std::vector<int64_t>> shapes;
    runtime::Result bound =
        codegen::inputShapes(jit.pipeline().inputs(), binding, shapes);
    if (!bound.ok()) {
      result.outcome = Outcome::CompileError;
      result.message = "cannot bind the runtime dims: " + bound.message;
      return result;
    }
    codegen::TensorMap inputs, outputs;
    for (size_t i = 0; i < shapes.size(); ++i)
      inputs[jit.pipeline().inputs()[i].name] = codegen::randomInput(
          jit.pipeline().inputs()[i], shapes[i], options.inputSeed);
    try {
      runtime::Result ran = jit.run(inputs, weights, outputs);
      if (!ran.ok()) {
        result.outcome = Outcome::InternalError;
        result.message = "JIT run failed: " + ran.message;
        return result;
      }
    } catch (const std::exception &e) {
      result.outcome = Outcome::InternalError;
      result.message = std::string("exception while running: ") + e.what();
      return result;
    }
    std::map<std::string, ref::Tensor> want;
    try {
      want = e2e::runReference(*model, inputs, weights);
    } catch (const std::exception &e) {
      result.outcome = Outcome::ReferenceError;
      result.message = e.what();
      return result;
    }
    std::string what;
    double relError = compareOutputs(outputs, want, what);
    result.error = std::max(result.error, relError);
    if (!(relError <= options.tolerance)) {
      result.outcome = Outcome::Mismatch;
      std::ostringstream os;
      os << "relative error " << relError << " > " << options.tolerance << " at "
         << formatDims(binding) << ": " << what;
      result.message = os.str();
      return result;
    }
  }
  return result;
}

/// Writes `result` for the parent: a header line (outcome, error, seconds,
/// dims, message length), then the message.
std::string serialize(const VariantResult &result) {
  std::string message = result.message.substr(0, 20000);
  std::ostringstream os;
  os.precision(17);
  // istream cannot read "inf" or "nan" back: an infinite error is -1.
  double error = std::isfinite(result.error) ? result.error : -1;
  os << int(result.outcome) << " " << error << " " << result.seconds << " "
     << result.dims.size();
  for (const auto &[name, size] : result.dims)
    os << " " << name << " " << size;
  os << " " << message.size() << "\n" << message;
  return os.str();
}

/// Reads one record of serialize() from the front of `text` and erases it;
/// false if `text` does not hold a whole record yet.
bool deserialize(std::string &text, VariantResult &result) {
  size_t newline = text.find('\n');
  if (newline == std::string::npos)
    return false;
  std::istringstream is(text.substr(0, newline));
  int outcome = 0;
  size_t count = 0, length = 0;
  if (!(is >> outcome >> result.error >> result.seconds >> count))
    return false;
  result.outcome = Outcome(std::clamp(outcome, 0, int(Outcome::Timeout)));
  if (result.error < 0)
    result.error = INFINITY;
  result.dims.clear();
  for (size_t i = 0; i < count; ++i) {
    std::string name;
    int64_t size;
    if (!(is >> name >> size))
      return false;
    result.dims[name] = size;
  }
  if (!(is >> length) || text.size() < newline + 1 + length)
    return false;
  result.message = text.substr(newline + 1, length);
  text.erase(0, newline + 1 + length);
  return true;
}

/// Compiles and runs a tiny model once in this process, before the first
/// fork, so that every child inherits the JIT's start-up work (Halide's
/// runtime modules, LLVM's targets: ~0.7 s a process) instead of redoing
/// it. Called while this process has no other threads that could hold a
/// lock across fork().
void warmUpJit() {
  static std::once_flag once;
  std::call_once(once, [] {
    CheckOptions options;
    checkInProcess("model warm_up {\n  dim n : seq\n  input x : f32[n, 8]\n"
                   "  param w : f32[8, 8]\n  output y = silu(x @ w)\n}\n",
                   {{{"n", 3}}}, Variant::Naive, options);
  });
}

std::vector<VariantResult> checkIsolated(const std::string &source,
                                         const std::vector<DimBinding> &dims,
                                         std::vector<Variant> variants,
                                         const CheckOptions &options) {
  warmUpJit();
  return runIsolated(
      std::move(variants),
      [&](Variant variant) { return checkInProcess(source, dims, variant, options); },
      options.timeoutSeconds);
}

} // namespace

std::vector<VariantResult>
runIsolated(std::vector<Variant> variants,
            const std::function<VariantResult(Variant)> &check, double timeoutSeconds) {
  std::vector<VariantResult> results;
  while (!variants.empty()) {
    VariantResult failed;
    failed.variant = variants.front();
    int fds[2];
    if (pipe(fds) != 0) {
      failed.outcome = Outcome::Crash;
      failed.message = std::string("pipe failed: ") + std::strerror(errno);
      results.push_back(failed);
      variants.erase(variants.begin());
      continue;
    }
    std::fflush(stdout);
    std::fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      for (Variant variant : variants) {
        auto start = Clock::now();
        VariantResult result = check(variant);
        result.seconds = secondsSince(start);
        std::string text = serialize(result);
        for (size_t done = 0; done < text.size();) {
          ssize_t n = write(fds[1], text.data() + done, text.size() - done);
          if (n <= 0)
            _exit(3);
          done += size_t(n);
        }
      }
      close(fds[1]);
      _exit(0); // no destructors or atexit handlers of the parent's state
    }
    close(fds[1]);
    if (pid < 0) {
      close(fds[0]);
      failed.outcome = Outcome::Crash;
      failed.message = std::string("fork failed: ") + std::strerror(errno);
      results.push_back(failed);
      variants.erase(variants.begin());
      continue;
    }
    std::string text;
    // The limit is on the child's CPU time, so that a check that waits for a
    // core on a busy machine is not called a hang; a child that neither
    // computes nor answers (a deadlock) is caught by a wall-clock limit ten
    // times longer.
    clockid_t childClock;
    bool haveCpuClock = clock_getcpuclockid(pid, &childClock) == 0;
    auto childCpuSeconds = [&] {
      timespec now{};
      if (!haveCpuClock || clock_gettime(childClock, &now) != 0)
        return 0.0;
      return double(now.tv_sec) + double(now.tv_nsec) * 1e-9;
    };
    auto start = Clock::now(); // of the check under way
    double cpuStart = childCpuSeconds();
    bool timedOut = false;
    char buffer[4096];
    for (;;) {
      double cpuLeft = timeoutSeconds - (childCpuSeconds() - cpuStart);
      double wallLeft = 10.0 * timeoutSeconds - secondsSince(start);
      if (!haveCpuClock)
        cpuLeft = wallLeft = timeoutSeconds - secondsSince(start);
      if (cpuLeft <= 0 || wallLeft <= 0) {
        timedOut = true;
        break;
      }
      pollfd pfd{fds[0], POLLIN, 0};
      int ready = poll(&pfd, 1, 1000);
      if (ready <= 0)
        continue;
      ssize_t n = read(fds[0], buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      text.append(buffer, size_t(n));
      VariantResult result;
      while (!variants.empty() && deserialize(text, result)) {
        result.variant = variants.front();
        results.push_back(result);
        variants.erase(variants.begin());
        start = Clock::now();
        cpuStart = childCpuSeconds();
      }
    }
    close(fds[0]);
    if (timedOut)
      kill(pid, SIGKILL);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (variants.empty())
      break;
    failed.variant = variants.front();
    variants.erase(variants.begin());
    if (timedOut) {
      failed.outcome = Outcome::Timeout;
      char limit[160];
      std::snprintf(limit, sizeof(limit),
                    "no result after %g s of CPU time (or %g s of wall-clock time); "
                    "the check was killed",
                    timeoutSeconds, 10 * timeoutSeconds);
      failed.message = limit;
    } else if (WIFSIGNALED(status)) {
      failed.outcome = Outcome::Crash;
      failed.message = std::string("the check died on signal ") +
                       std::to_string(WTERMSIG(status)) + " (" +
                       strsignal(WTERMSIG(status)) + ")";
    } else {
      failed.outcome = Outcome::Crash;
      failed.message = "the check exited with status " +
                       std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                       " without a result";
    }
    failed.seconds = secondsSince(start);
    results.push_back(failed);
  }
  return results;
}

namespace {

/// A failure message without numbers, locations, quoted names and buffer
/// names, to compare two failures.
std::string messageKey(const std::string &message) {
  size_t at = message.find("internal error");
  std::string text = message.substr(at == std::string::npos ? 0 : at);
  text = text.substr(0, text.find('\n')); // the first diagnostic
  if (at == std::string::npos) {
    size_t error = text.find("error: ");
    if (error != std::string::npos)
      text = text.substr(error + 7);
  }
  std::string key;
  for (char c : text)
    if (!std::isdigit(static_cast<unsigned char>(c)))
      key += c;
  key = std::regex_replace(key, std::regex("'[^']*'"), "''");
  key = std::regex_replace(key, std::regex("(buffer|Func|function) [A-Za-z_.$]+"),
                           "$1 _");
  key = std::regex_replace(key, std::regex(" \\(a bug in attnc; please report it\\)"), "");
  return key.substr(0, 120);
}

} // namespace

VariantResult checkVariant(const std::string &source,
                           const std::vector<DimBinding> &dims, Variant variant,
                           const CheckOptions &options) {
  if (options.isolate)
    return checkIsolated(source, dims, {variant}, options).front();
  auto start = Clock::now();
  VariantResult result = checkInProcess(source, dims, variant, options);
  result.seconds = secondsSince(start);
  return result;
}

std::vector<VariantResult> checkModel(const GeneratedModel &model,
                                      const CheckOptions &options) {
  if (options.isolate)
    return checkIsolated(model.source, model.allDims(), options.variants, options);
  std::vector<VariantResult> results;
  for (Variant variant : options.variants)
    results.push_back(checkVariant(model.source, model.allDims(), variant, options));
  return results;
}

std::vector<std::vector<VariantResult>>
checkModels(const std::vector<GeneratedModel> &models, const CheckOptions &options,
            int parallel) {
  assert((parallel <= 1 || options.isolate) &&
         "parallel checks must run in child processes");
  if (options.isolate)
    warmUpJit(); // before the worker threads exist
  std::vector<std::vector<VariantResult>> results(models.size());
  std::atomic<size_t> next{0};
  // Each worker only forks, waits and reads a pipe: no compiler state is
  // shared between the threads, each child has its own.
  auto work = [&] {
    for (size_t i = next++; i < models.size(); i = next++)
      results[i] = checkModel(models[i], options);
  };
  std::vector<std::thread> workers;
  for (int w = 1; w < std::max(1, parallel); ++w)
    workers.emplace_back(work);
  work();
  for (std::thread &worker : workers)
    worker.join();
  return results;
}

std::string failureKey(const VariantResult &result) {
  std::string key = outcomeName(result.outcome);
  if (result.outcome == Outcome::InternalError ||
      result.outcome == Outcome::CompileError ||
      result.outcome == Outcome::ReferenceError)
    key += ": " + messageKey(result.message);
  return key;
}

bool sameFailure(const VariantResult &a, const VariantResult &b) {
  return failureKey(a) == failureKey(b);
}

} // namespace attnc::fuzz
