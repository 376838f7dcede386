//===- ModelPipeline.cpp - a lowered model, compiled and run --------------===//
//
// This file implements ModelPipeline: building a model's Halide pipeline
// (or its program of kernels), compiling it (ahead of time, or for the JIT
// as cached shared objects or through Halide's in-memory JIT), checking a
// run's sizes before anything is allocated, and running it, kernel by kernel
// for a program.
//
//===----------------------------------------------------------------------===//
#include "codegen/Aot.h"
#include "codegen/Autoschedule.h"
#include "codegen/BufferPool.h"
#include "codegen/Decode.h"
#include "codegen/LoweringImpl.h"
#include "codegen/Program.h"
#include "codegen/Resources.h"
#include "codegen/Stopwatch.h"
#include "codegen/Stream.h"
#include "runtime/Tensor.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <mutex>
#include <sstream>
#include <thread>

namespace attnc::codegen {

using namespace Halide;

BufferPoolStats bufferPoolStats() { return BufferPool::instance().stats(); }
void resetBufferPoolPeak() { BufferPool::instance().resetPeak(); }

//===----------------------------------------------------------------------===//
// ModelPipeline
//===----------------------------------------------------------------------===//

std::string kernelSource(mlir::func::FuncOp func,
                         const CodegenOptions &options) {
  std::string text;
  llvm::raw_string_ostream os(text);
  func->print(os, mlir::OpPrintingFlags().useLocalScope());
  os << "\ncodegen: gpu=" << options.gpu << " gpuOnHost=" << options.gpuOnHost
     << " streamRows=" << options.streamRows << " decode=" << options.decode
     << " chunkStep=" << options.chunkStep
     << " streamTotals=" << options.streamTotals << "\n";
  if (!options.autoscheduler.empty()) {
    // Its schedule depends on the estimates, the threads and the target.
    os << "autoscheduler: " << options.autoscheduler
       << " threads=" << options.autoscheduleThreads
       << " target=" << options.autoscheduleTarget.to_string();
    for (const auto &[dim, value] : options.estimates)
      os << " " << dim << "=" << value;
    os << "\n";
  }
  return os.str();
}

struct ModelPipeline::Impl {
  // The lowerings keep a reference to the options: this copy's.
  explicit Impl(const CodegenOptions &given)
      : options(given), lowering(options) {}
  std::string name;
  std::string scheduleSource; ///< See ModelPipeline::scheduleSource.
  CodegenOptions options;
  Lowering lowering;  ///< One pipeline: the model's function.
  Pipeline pipeline;
  std::unique_ptr<NativeKernel> native; ///< When loaded from a shared object.
  std::unique_ptr<Program> program; ///< Or the program of its calls.
  /// Decoding a model with chunks: the same model's step kernels
  /// (CodegenOptions::chunkStep), with the same carries.
  std::unique_ptr<ModelPipeline> step;
  /// Streaming a model that sums over the whole sequence: its totals
  /// kernel (CodegenOptions::streamTotals), with the same carries.
  std::unique_ptr<ModelPipeline> totals;
  bool compiled = false;
  /// The one-buffer limit of the compiled target (maxBufferBytes).
  int64_t maxBufferBytes = kMaxBufferBytes;
  /// Not streamed: the rows it could stream in, or 0 (suggestedStreamRows).
  int64_t streamHint = 0;

  /// Runs the program's steps; streamed, on one block of `rows` rows with
  /// one StreamState per step in `states` (ProgramBlocks), which the
  /// caller advances once every step has run.
  runtime::Result runProgram(const std::vector<Buffer<float>> &inputs,
                             const std::vector<Buffer<float>> &weights,
                             std::vector<Buffer<float>> &outputs,
                             std::vector<StreamState> *states = nullptr,
                             int rows = 0, const WeightPack *pack = nullptr);
  /// `weights` packed for each kernel call of a run (ModelPipeline::
  /// packWeights).
  runtime::Result pack(const std::vector<Buffer<float>> &weights,
                       WeightPack &into) const;
  /// The blocks of one sequence of the streamed model on `weights`, with
  /// key/value caches (if any) of `capacity` rows.
  std::unique_ptr<SequenceBlocks>
  sequenceBlocks(const std::vector<Buffer<float>> &weights, int64_t capacity,
                 const WeightPack *given = nullptr);
  /// Whether a kernel has cache carries.
  bool caches() const;
  struct ProgramBlocks;
  runtime::Result checkProgram(const std::vector<std::vector<int64_t>> &inputs,
                               const std::vector<std::vector<int64_t>> &outputs,
                               int64_t ioBytes) const;
};

ModelPipeline::ModelPipeline() = default;
ModelPipeline::~ModelPipeline() = default;

/// Whether two lists of tensors have the same names and shapes.
static bool sameTensors(const std::vector<TensorInfo> &a,
                        const std::vector<TensorInfo> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || a[i].shape != b[i].shape)
      return false;
  return true;
}

/// Whether `kernels` are another compilation of `result`'s model that its
/// runs pass the same carries and weights (by position); else emits an
/// internal error naming them `what`.
static bool sameInterface(mlir::func::FuncOp model,
                          const ModelPipeline &result,
                          const ModelPipeline &kernels, const char *what) {
  // The carries' shapes, per call in order.
  if (result.streamCarries() == kernels.streamCarries() &&
      sameTensors(result.weights(), kernels.weights()))
    return true;
  model.emitError() << "internal error: the " << what << " of model '"
                    << model.getSymName()
                    << "' carry other state or take other weights than "
                       "its kernels";
  return false;
}

std::unique_ptr<ModelPipeline> ModelPipeline::build(mlir::func::FuncOp model,
                                                    const CodegenOptions &options) {
  std::unique_ptr<ModelPipeline> result = buildKernels(model, options);
  if (!result || options.chunkStep || options.streamTotals ||
      options.streamRows == 0)
    return result;
  if (!options.decode) {
    // A sum over the whole sequence: a first sweep of the totals kernel
    // (Stream.h); checkStreamable keeps totals out of programs.
    if (const Program *program = result->impl->program.get()) {
      for (const std::unique_ptr<ProgramKernel> &kernel : program->kernels)
        if (hasTotals(kernel->lowering)) {
          model.emitError() << "internal error: a kernel of model '"
                            << model.getSymName()
                            << "' sums over the whole sequence, which a "
                               "program does not stream";
          return nullptr;
        }
      return result;
    }
    if (!hasTotals(result->impl->lowering))
      return result;
    CodegenOptions totalsOptions = options;
    totalsOptions.streamTotals = true;
    std::unique_ptr<ModelPipeline> totals =
        buildKernels(model, totalsOptions);
    if (!totals || !sameInterface(model, *result, *totals, "totals kernels"))
      return nullptr;
    result->impl->totals = std::move(totals);
    return result;
  }
  // Decoding a model with chunks: its step kernels too (Decode.h), which
  // run the rows between whole chunks (none for chunks of one row).
  int64_t rows = codegen::stepRows(model);
  if (rows == 0 || smallestStreamRows(model) == 1)
    return result;
  CodegenOptions stepOptions = options;
  stepOptions.chunkStep = true;
  stepOptions.streamRows = rows;
  std::unique_ptr<ModelPipeline> step = buildKernels(model, stepOptions);
  // The decoders give both the same carries and weights, by position.
  if (!step || !sameInterface(model, *result, *step, "step kernels"))
    return nullptr;
  result->impl->step = std::move(step);
  // The block kernels run whole chunks (BlockSequence).
  result->impl->options.commitRows = smallestStreamRows(model);
  return result;
}

std::unique_ptr<ModelPipeline>
ModelPipeline::buildKernels(mlir::func::FuncOp model,
                            const CodegenOptions &options) {
  std::unique_ptr<ModelPipeline> result(new ModelPipeline());
  result->impl = std::make_unique<Impl>(options);
  Impl &impl = *result->impl;
  impl.name = model.getSymName().str();
  if (auto module = model->getParentOfType<mlir::ModuleOp>())
    if (auto summary = module->getAttrOfType<mlir::StringAttr>(
            mlir::attn::AttnDialect::getTuningAttrName()))
      impl.scheduleSource = summary.str();
  try {
    if (callsFunctions(model)) {
      // Streamed, the model is checked with the functions it calls, whose
      // kernels then take a stream offset and carries of their own.
      if (options.streamRows > 0 &&
          mlir::failed(checkStreamable(model, impl.options)))
        return nullptr;
      impl.program = Program::build(model, impl.options);
      if (!impl.program)
        return nullptr;
      if (options.streamRows == 0)
        impl.streamHint = suggestedStreamRows(model, impl.options);
      return result;
    }
    if (mlir::failed(impl.lowering.lowerFunction(model)))
      return nullptr;
    if (options.streamRows == 0)
      impl.streamHint = suggestedStreamRows(model, impl.options);
    // A totals kernel's results are the carries' next values only: Halide
    // computes what they read (no attention, no output projection).
    std::vector<Func> outputs;
    if (!options.streamTotals)
      outputs = impl.lowering.outputFuncs;
    for (const Lowering::StreamCarry &carry : impl.lowering.streamCarries)
      outputs.push_back(carry.next);
    impl.pipeline = Pipeline(outputs);
    if (!impl.options.autoscheduler.empty())
      if (std::string error = autoschedule(impl.lowering, impl.pipeline,
                                           impl.options);
          !error.empty()) {
        model.emitError() << error;
        return nullptr;
      }
  } catch (const Halide::Error &error) {
    model.emitError() << "internal error in code generation: " << error.what();
    return nullptr;
  }
  return result;
}

const std::string &ModelPipeline::name() const { return impl->name; }
const std::string &ModelPipeline::scheduleSource() const {
  return impl->scheduleSource;
}
const std::vector<TensorInfo> &ModelPipeline::inputs() const {
  return impl->program ? impl->program->inputs : impl->lowering.inputs;
}
const std::vector<TensorInfo> &ModelPipeline::weights() const {
  return impl->program ? impl->program->weights : impl->lowering.weights;
}
const std::vector<TensorInfo> &ModelPipeline::outputs() const {
  return impl->program ? impl->program->outputs : impl->lowering.outputs;
}
const Program *ModelPipeline::program() const { return impl->program.get(); }

int64_t ModelPipeline::streamRows() const { return impl->options.streamRows; }
int64_t ModelPipeline::stepRows() const {
  return impl->step ? impl->step->streamRows() : 0;
}
ModelPipeline *ModelPipeline::stepKernels() const { return impl->step.get(); }
bool ModelPipeline::streamsTwice() const { return bool(impl->totals); }
int64_t ModelPipeline::commitRows() const {
  return impl->options.commitRows > 0 ? impl->options.commitRows
                                      : impl->options.streamRows;
}

int64_t carryElements(const ModelPipeline::CarryShape &carry) {
  int64_t elements = 1;
  for (size_t d = 0; d < carry.sizes.size(); ++d)
    elements *= carry.sizedByCapacity() && d == 1 ? 1 : carry.sizes[d];
  return elements;
}

std::vector<std::vector<ModelPipeline::CarryShape>>
ModelPipeline::streamCarries() const {
  std::vector<const Lowering *> calls;
  if (impl->options.streamRows == 0)
    return {};
  if (impl->program)
    for (const Step &step : impl->program->steps)
      calls.push_back(&step.kernel->lowering);
  else
    calls.push_back(&impl->lowering);
  std::vector<std::vector<CarryShape>> carries;
  for (const Lowering *lowering : calls) {
    carries.emplace_back();
    for (const Lowering::StreamCarry &carry : lowering->streamCarries)
      carries.back().push_back({carrySizes(carry), carry.cache});
  }
  return carries;
}

/// How many threads runConcurrently uses for `count` tasks: one per
/// hardware thread, at most one per task.
static size_t concurrentWorkers(size_t count) {
  return std::min<size_t>(count,
                          std::max(1u, std::thread::hardware_concurrency()));
}

/// Runs `task(0)` … `task(count - 1)` on concurrentWorkers(count) threads
/// (the calling thread among them) and waits for all; the first exception a
/// task throws is rethrown here once all have finished.
static void runConcurrently(size_t count,
                            const std::function<void(size_t)> &task) {
  size_t workers = concurrentWorkers(count);
  std::atomic<size_t> next{0};
  std::mutex failureMutex;
  std::exception_ptr failure;
  auto work = [&] {
    for (size_t i; (i = next++) < count;) {
      try {
        task(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(failureMutex);
        if (!failure)
          failure = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w)
    threads.emplace_back(work);
  work();
  for (std::thread &thread : threads)
    thread.join();
  if (failure)
    std::rethrow_exception(failure);
}

Module ModelPipeline::compileToModule(const std::string &function,
                                      const Target &target,
                                      const std::string &kernelSuffix) {
  if (!impl->program)
    return impl->pipeline.compile_to_module(impl->lowering.arguments(), function,
                                            target);
  // Each kernel lowers on a thread of its own (runConcurrently).
  std::vector<ProgramKernel *> kernels;
  for (const std::unique_ptr<ProgramKernel> &kernel : impl->program->kernels)
    kernels.push_back(kernel.get());
  std::vector<Module> modules(kernels.size(), Module("", target));
  runConcurrently(kernels.size(), [&](size_t i) {
    modules[i] = kernels[i]->pipeline.compile_to_module(
        kernels[i]->lowering.arguments(), kernels[i]->function + kernelSuffix,
        target);
  });
  return link_modules(function, modules);
}

/// Adds `part`'s times, counts and notes (each distinct note once) to
/// `total`.
static void addStats(KernelCompileStats &total,
                     const KernelCompileStats &part) {
  total.lowering += part.lowering;
  total.llvm += part.llvm;
  total.link += part.link;
  total.load += part.load;
  total.runtime += part.runtime;
  total.jit += part.jit;
  total.runtimeCompiled |= part.runtimeCompiled;
  total.hits += part.hits;
  total.misses += part.misses;
  std::istringstream lines(part.notes);
  for (std::string line; std::getline(lines, line);)
    if (total.notes.find(line + "\n") == std::string::npos)
      total.notes += line + "\n";
}

void ModelPipeline::compileJit(const Target &target, const CacheOptions &cache,
                               KernelCompileStats &stats) {
  if (impl->compiled)
    return;
  // The model's kernels and, decoding a model with chunks, its step
  // kernels, or streaming a sum over the whole sequence, its totals
  // kernel, compiled together.
  // Each with the suffix of its kernels' function names.
  std::vector<std::pair<Impl *, const char *>> impls = {{impl.get(), ""}};
  if (impl->step)
    impls.push_back({impl->step->impl.get(), "_step"});
  if (impl->totals)
    impls.push_back({impl->totals->impl.get(), "_totals"});
  for (auto &entry : impls)
    entry.first->maxBufferBytes = codegen::maxBufferBytes(target);
  struct Unit {
    Pipeline *pipeline;
    const Lowering *lowering;
    std::string function;
    std::unique_ptr<NativeKernel> *native;
  };
  std::vector<Unit> units;
  for (auto [each, suffix] : impls) {
    if (each->program)
      for (const std::unique_ptr<ProgramKernel> &kernel :
           each->program->kernels)
        units.push_back({&kernel->pipeline, &kernel->lowering,
                         kernel->function + suffix, &kernel->native});
    else
      units.push_back({&each->pipeline, &each->lowering,
                       cIdentifier(each->name) + suffix, &each->native});
  }
  // ATTNC_HALIDE_JIT=1: every kernel through Halide's in-memory JIT, to
  // compare the two paths (docs/performance.md).
  const char *forced = std::getenv("ATTNC_HALIDE_JIT");
  bool native = NativeKernel::supports(target) &&
                !(forced && std::string(forced) == "1");
  if (native) {
    // The kernels (distinct Halide pipelines: Halide's compiler is
    // thread-safe) and the runtime, when the cache lacks it, compile at
    // once, one per hardware thread; stage times add up over them.
    std::vector<KernelCompileStats> each(units.size() + 1);
    std::vector<std::string> errors(units.size());
    runConcurrently(units.size() + 1, [&](size_t i) {
      if (i == units.size()) {
        NativeKernel::prepareRuntime(target, cache, each[i]);
        return;
      }
      const Unit &unit = units[i];
      *unit.native = NativeKernel::load(
          *unit.pipeline, unit.lowering->arguments(), unit.function,
          unit.lowering->source, target, cache, each[i], errors[i]);
    });
    size_t compiled = 0;
    for (const KernelCompileStats &part : each) {
      addStats(stats, part);
      compiled += part.misses + part.runtimeCompiled;
    }
    stats.threads = std::max(
        stats.threads, std::min(compiled, concurrentWorkers(each.size())));
    // A kernel that cannot be loaded compiles in memory, and so do the
    // others (one runtime per process); said once.
    for (size_t i = 0; i < units.size() && native; ++i)
      if (!*units[i].native) {
        stats.notes += "note: " + errors[i] +
                       "; compiling in memory instead (not cached)\n";
        native = false;
      }
    if (native) {
      for (auto &entry : impls)
        entry.first->compiled = true;
      return;
    }
  }
  for (Unit &unit : units) {
    unit.native->reset();
    auto start = SteadyClock::now();
    unit.pipeline->jit_handlers().custom_malloc = BufferPool::allocate;
    unit.pipeline->jit_handlers().custom_free = BufferPool::release;
    unit.pipeline->compile_jit(target);
    stats.jit += millisSince(start);
  }
  for (auto &entry : impls)
    entry.first->compiled = true;
}

/// The result of a kernel that failed with `message` (and, when it was
/// loaded from a shared object, Halide's error `code`), as
/// ModelPipeline::run documents it; `what` names the kernel.
static runtime::Result kernelFailure(const std::string &message, int code,
                                     const std::string &what) {
  // Resource failures are the run's size, not a bug: Halide refuses a
  // buffer over its limit before allocating, and the pool reports a
  // failed allocation.
  if (size_t bytes = BufferPool::instance().takeFailedBytes())
    return runtime::Result::error(ATTN_ERROR_OUT_OF_MEMORY,
                                  "out of memory: " + what +
                                      " could not allocate " +
                                      formatBytes(int64_t(bytes)));
  if (code == halide_error_code_buffer_allocation_too_large ||
      code == halide_error_code_buffer_extents_too_large ||
      message.find("exceeds the maximum size") != std::string::npos)
    return runtime::Result::error(
        ATTN_ERROR_OUT_OF_MEMORY,
        what + " needs a buffer larger than Halide 14 allows (2^31 - 1 "
               "bytes): " + message);
  return runtime::Result::error(
      ATTN_ERROR_RUNTIME, "internal error: " + what +
                              " failed (a bug in attnc; please report "
                              "it): " + message);
}

bool packWeightArena(const WeightArena &arena,
                     const std::vector<Buffer<float>> &weights, float *into) {
  if (weights.size() != arena.offsets.size())
    return false;
  for (size_t i = 0; i < weights.size(); ++i) {
    const std::vector<int64_t> &shape = arena.shapes[i];
    bool fits = weights[i].dimensions() == int(shape.size());
    for (int d = 0; fits && d < weights[i].dimensions(); ++d)
      fits = weights[i].dim(d).extent() == shape[shape.size() - 1 - d];
    if (!fits)
      return false;
  }
  for (size_t i = 0; i < weights.size(); ++i) {
    const Buffer<float> &weight = weights[i];
    float *to = into + arena.offsets[i];
    bool dense = true;
    int64_t stride = 1;
    for (int d = 0; d < weight.dimensions(); ++d) {
      dense = dense && weight.dim(d).stride() == stride;
      stride *= weight.dim(d).extent();
    }
    if (dense) { // as the JIT and the Python module make them
      std::memcpy(to, weight.data(), weight.size_in_bytes());
      continue;
    }
    // Dense in the arena, whatever the weight's strides.
    std::vector<int> extents;
    for (int d = 0; d < weight.dimensions(); ++d)
      extents.push_back(weight.dim(d).extent());
    Buffer<float> place(to, extents);
    for (int d = 0; d < weight.dimensions(); ++d)
      place.translate(d, weight.dim(d).min());
    place.copy_from(weight);
  }
  return true;
}

/// A weight arena for one call, from the buffer pool (which counts it in
/// the run's peak and keeps its pages for the next call).
struct PooledArena {
  float *data = nullptr;
  PooledArena() = default;
  PooledArena(const PooledArena &) = delete;
  PooledArena &operator=(const PooledArena &) = delete;
  ~PooledArena() { BufferPool::instance().give(data); }
};

static runtime::Result arenaMisfit(const std::string &what) {
  return runtime::Result::error(
      ATTN_ERROR_SHAPE, what + ": its weights do not fit its weight arena "
                               "(their count or shapes differ from the "
                               "model's)");
}

static runtime::Result arenaOutOfMemory(const std::string &what,
                                        const WeightArena &arena) {
  return runtime::Result::error(ATTN_ERROR_OUT_OF_MEMORY,
                                "out of memory: " + what +
                                    " could not allocate its weights' "
                                    "packed copy, " +
                                    formatBytes(arena.bytes()));
}

/// The buffers `lowering`'s kernel takes for `weights` (its order): its
/// weight arena, packed into memory that `allocate` gives (null: out of
/// memory), or the weights themselves; an error naming `what` when they do
/// not fit the arena or memory fails.
static runtime::Result
kernelWeights(const Lowering &lowering,
              const std::vector<Buffer<float>> &weights,
              const std::function<float *(const WeightArena &)> &allocate,
              std::vector<Buffer<float>> &taken, const std::string &what) {
  const WeightArena &arena = lowering.arena;
  if (!arena.used()) {
    taken = weights;
    return runtime::Result::success();
  }
  float *data = allocate(arena);
  if (!data)
    return arenaOutOfMemory(what, arena);
  if (!packWeightArena(arena, weights, data))
    return arenaMisfit(what);
  taken = {Buffer<float>(data, int(arena.elements))};
  return runtime::Result::success();
}

/// kernelWeights for one call, its arena in `memory`.
static runtime::Result kernelWeights(const Lowering &lowering,
                                     const std::vector<Buffer<float>> &weights,
                                     PooledArena &memory,
                                     std::vector<Buffer<float>> &taken,
                                     const std::string &what) {
  auto pooled = [&memory](const WeightArena &arena) {
    memory.data = static_cast<float *>(
        BufferPool::instance().take(size_t(arena.bytes())));
    return memory.data;
  };
  return kernelWeights(lowering, weights, pooled, taken, what);
}

/// kernelWeights into a new call of `into`, its arena held by `into`.
static runtime::Result packCall(const Lowering &lowering,
                                const std::vector<Buffer<float>> &weights,
                                WeightPack &into, const std::string &what) {
  auto held = [&into](const WeightArena &arena) -> float * {
    try {
      return into.arenas.emplace_back(size_t(arena.elements)).data();
    } catch (const std::bad_alloc &) {
      return nullptr;
    }
  };
  into.calls.emplace_back();
  return kernelWeights(lowering, weights, held, into.calls.back(), what);
}

/// Runs one compiled kernel (its shared object, or Halide's JIT through
/// `pipeline` and `lowering`'s parameters) on `args` and `weights` into
/// `outputs`; `what` names it in messages.
static runtime::Result runKernel(Pipeline &pipeline, Lowering &lowering,
                                 NativeKernel *native,
                                 const std::vector<Buffer<float>> &args,
                                 const std::vector<Buffer<float>> &weights,
                                 std::vector<Buffer<void>> &outputs,
                                 const std::string &what) {
  if (native) {
    std::vector<halide_buffer_t *> buffers;
    for (const std::vector<Buffer<float>> *list : {&args, &weights})
      for (const Buffer<float> &buffer : *list)
        buffers.push_back(const_cast<Buffer<float> &>(buffer).raw_buffer());
    for (Buffer<void> &output : outputs)
      buffers.push_back(output.raw_buffer());
    std::string message;
    int code = native->call(buffers, message);
    return code == 0 ? runtime::Result::success()
                     : kernelFailure(message, code, what);
  }
  size_t arg = 0;
  for (ImageParam &param : lowering.inputParams)
    param.set(args[arg++]);
  if (lowering.streaming()) {
    lowering.streamOffset.set(args[arg++]);
    for (Lowering::StreamCarry &carry : lowering.streamCarries)
      carry.in.set(args[arg++]);
  }
  if (lowering.arena.used())
    lowering.weightArena.set(weights[0]);
  else
    for (size_t i = 0; i < weights.size(); ++i)
      lowering.weightParams[i].set(weights[i]);
  Realization realization(outputs);
  try {
    pipeline.realize(realization);
  } catch (const Halide::Error &e) {
    return kernelFailure(e.what(), halide_error_code_generic_error, what);
  }
  return runtime::Result::success();
}

/// A buffer's shape in MLIR order (outermost first).
static std::vector<int64_t> shapeOf(const Buffer<float> &buffer) {
  std::vector<int64_t> shape;
  for (int d = buffer.dimensions() - 1; d >= 0; --d)
    shape.push_back(buffer.dim(d).extent());
  return shape;
}

runtime::Result checkTokenIds(const TensorInfo &info,
                              const Buffer<float> &buffer) {
  if (info.dtype != "i32" || info.idBound <= 0)
    return runtime::Result::success();
  std::string bad;
  buffer.for_each_element([&](const int *at) {
    if (!bad.empty())
      return;
    int32_t id;
    std::memcpy(&id, &buffer(at), 4);
    if (id >= 0 && id < info.idBound)
      return;
    // The position in MLIR order, as the .npy file or array indexes it.
    std::vector<int64_t> where;
    for (int d = buffer.dimensions(); d-- > 0;)
      where.push_back(at[d]);
    bad = runtime::tokenIdOutOfRange(id, where, "input '" + info.name + "'",
                                     info.idBound);
  });
  return bad.empty() ? runtime::Result::success()
                     : runtime::Result::error(ATTN_ERROR_ARGUMENT, bad);
}

/// Whether two kernels read their weights from arenas of one layout.
static bool sameLayout(const WeightArena &a, const WeightArena &b) {
  return a.offsets == b.offsets && a.shapes == b.shapes &&
         a.elements == b.elements;
}

runtime::Result
ModelPipeline::Impl::pack(const std::vector<Buffer<float>> &weights,
                          WeightPack &into) const {
  into = WeightPack();
  if (!program) {
    std::string what = "the kernel of model '" + name + "'";
    runtime::Result packed = packCall(lowering, weights, into, what);
    if (!packed.ok() || !totals)
      return packed;
    // A streamed sum's totals kernel lowers the same function: its arena
    // is the kernel's, read from the same copy.
    const Lowering &sum = totals->impl->lowering;
    if (sameLayout(sum.arena, lowering.arena)) {
      into.calls.push_back(into.calls.front());
      return packed;
    }
    return packCall(sum, weights, into, "the totals " + what);
  }
  // A layer's weights are its kernel's arguments (attn-hoist-weights):
  // what the steps pack is the glue's own.
  for (const Step &step : program->steps) {
    std::vector<Buffer<float>> given;
    for (const Slot &slot : step.weights)
      given.push_back(weights.at(slot.index)); // Slot::Weight
    runtime::Result packed =
        packCall(step.kernel->lowering, given, into,
                 "the kernel of '" + step.label + "' in model '" + name + "'");
    if (!packed.ok())
      return packed;
  }
  return runtime::Result::success();
}

runtime::Result
ModelPipeline::packWeights(const std::vector<Buffer<float>> &weights,
                           WeightPack &pack) const {
  return impl->pack(weights, pack);
}

runtime::Result ModelPipeline::run(const std::vector<Buffer<float>> &inputs,
                                   const std::vector<Buffer<float>> &weights,
                                   std::vector<Buffer<float>> &outputs,
                                   const WeightPack *pack) {
  if (pack && pack->calls.empty())
    pack = nullptr; // default-constructed: nothing packed
  // Token ids first: an id outside its table is the caller's error, found
  // before any kernel runs (the kernels clamp it all the same).
  const std::vector<TensorInfo> &infos = this->inputs();
  for (size_t i = 0; i < inputs.size() && i < infos.size(); ++i)
    if (runtime::Result ids = checkTokenIds(infos[i], inputs[i]); !ids.ok())
      return ids;
  if (impl->options.streamRows > 0) {
    // With key/value caches (a model decoded), one block of every row:
    // the run's rows then see the whole sequence (GAU divides its scores
    // by its length), as the whole run's do.
    const TensorInfo &first = this->inputs().front();
    int64_t length = inputs.front().dim(streamRowDim(first)).extent();
    int64_t rows = impl->caches() ? std::max(length, impl->options.streamRows)
                                  : impl->options.streamRows;
    return runStreamed(this->inputs(), this->outputs(), rows, inputs, outputs,
                       *impl->sequenceBlocks(weights, length, pack));
  }
  if (impl->program)
    return impl->runProgram(inputs, weights, outputs, nullptr, 0, pack);
  std::string what = "the kernel of model '" + impl->name + "'";
  PooledArena arena; // this call's packed weights, without a pack
  std::vector<Buffer<float>> taken;
  runtime::Result result =
      pack ? runtime::Result::success()
           : kernelWeights(impl->lowering, weights, arena, taken, what);
  if (!result.ok())
    return result;
  std::vector<Buffer<void>> views(outputs.begin(), outputs.end());
  result = runKernel(impl->pipeline, impl->lowering, impl->native.get(), inputs,
                     pack ? pack->calls.front() : taken, views, what);
  if (result.ok())
    for (Buffer<void> &view : views)
      view.copy_to_host(); // results of GPU kernels back to the caller
  return result;
}

runtime::Result
ModelPipeline::decoder(const std::vector<Buffer<float>> &weights,
                       int64_t capacity, std::unique_ptr<Decoder> &decoder) {
  if (impl->options.streamRows == 0)
    return runtime::Result::error(
        ATTN_ERROR_ARGUMENT, "model '" + impl->name +
                                 "' was not compiled to stream: decoding "
                                 "needs CodegenOptions::streamRows");
  if (impl->totals)
    return runtime::Result::error(
        ATTN_ERROR_ARGUMENT,
        "model '" + impl->name +
            "' sums over the whole sequence (non-causal), which a decoded "
            "row has not seen; only causal models decode");
  for (const std::vector<CarryShape> &call : streamCarries())
    for (const CarryShape &carry : call)
      if (carry.sizedByCapacity())
        if (runtime::Result fits = runtime::checkCacheCapacity(
                impl->name, capacity, carryElements(carry));
            !fits.ok())
          return fits;
  if (!impl->caches())
    capacity = kMaxDecodedRows; // no cache to size
  return Decoder::create(inputs(), outputs(), int(impl->options.streamRows),
                         impl->step ? int(commitRows()) : 1, int(stepRows()),
                         capacity, impl->sequenceBlocks(weights, capacity),
                         decoder);
}

bool ModelPipeline::decodesWithCache() const { return impl->caches(); }

bool ModelPipeline::Impl::caches() const {
  if (!program)
    return hasCaches(lowering);
  for (const std::unique_ptr<ProgramKernel> &kernel : program->kernels)
    if (hasCaches(kernel->lowering))
      return true;
  return false;
}

/// A streamed program's blocks: the steps in order on each block, each
/// with its own carries (a layer kernel called N times carries N states).
struct ModelPipeline::Impl::ProgramBlocks : SequenceBlocks {
  ProgramBlocks(Impl &impl, std::vector<Buffer<float>> weights,
                int64_t capacity, const WeightPack *given)
      : impl(impl), weights(std::move(weights)), pack(given) {
    for (const Step &step : impl.program->steps)
      states.emplace_back(step.kernel->lowering, capacity);
    // Each step's weights packed once for every block (a failure is
    // reported by the first block, whose steps then pack their own).
    if (!pack && impl.pack(this->weights, ownPack).ok())
      pack = &ownPack;
  }
  runtime::Result run(const std::vector<Buffer<float>> &inputs,
                      const std::vector<Buffer<float>> &outputs, int rows,
                      bool step) override {
    std::vector<Buffer<float>> out = outputs;
    if (step && !impl.step)
      return noStepKernel();
    Impl &kernels = step ? *impl.step->impl : impl;
    runtime::Result ran = kernels.runProgram(inputs, weights, out, &states,
                                             rows, step ? nullptr : pack);
    // Every step's carries advance together, or none (a failed step).
    if (ran.ok())
      for (StreamState &state : states)
        state.advance(rows);
    return ran;
  }
  void reset() override {
    for (StreamState &state : states)
      state.reset();
  }
  int64_t stateBytes() const override {
    int64_t total = 0;
    for (const StreamState &state : states)
      total += state.bytes();
    return total;
  }

  Impl &impl;
  std::vector<Buffer<float>> weights;
  std::vector<StreamState> states;
  /// The weights of impl's steps (not the step kernels'): the caller's, or
  /// ownPack.
  const WeightPack *pack;
  WeightPack ownPack;
};

std::unique_ptr<SequenceBlocks>
ModelPipeline::Impl::sequenceBlocks(const std::vector<Buffer<float>> &weights,
                                    int64_t capacity, const WeightPack *given) {
  if (program)
    return std::make_unique<ProgramBlocks>(*this, weights, capacity, given);
  // The weights packed once for every block of the sequence (pack(): the
  // kernel's, then the totals kernel's), or the caller's pack.
  auto owned = std::make_shared<WeightPack>();
  runtime::Result packed =
      given ? runtime::Result::success() : pack(weights, *owned);
  const WeightPack *use = given ? given : owned.get();
  auto runnerOf = [&](Impl &kernel, size_t call, const std::string &what) {
    // A decoding step kernel has no arena: the weights as they are.
    std::vector<Buffer<float>> own = weights;
    return [&kernel, owned, use, call, packed, own,
            what](const std::vector<Buffer<float>> &args,
                  std::vector<Buffer<void>> &results) -> runtime::Result {
      if (!packed.ok())
        return packed;
      const std::vector<Buffer<float>> &taken =
          call < use->calls.size() ? use->calls[call] : own;
      if (kernel.lowering.arena.used() && call >= use->calls.size())
        return runtime::Result::error(
            ATTN_ERROR_RUNTIME, "internal error: " + what +
                                    " has a weight arena that nothing packed "
                                    "(a bug in attnc; please report it)");
      return runKernel(kernel.pipeline, kernel.lowering, kernel.native.get(),
                       args, taken, results, what);
    };
  };
  std::string what = "the kernel of model '" + name + "'";
  BlockRunner stepRunner, totalsRunner;
  if (step)
    stepRunner = runnerOf(*step->impl, size_t(-1),
                          "the step kernel of model '" + name + "'");
  if (totals)
    totalsRunner =
        runnerOf(*totals->impl, 1, "the totals kernel of model '" + name + "'");
  return streamBlocks(lowering, runnerOf(*this, 0, what), stepRunner,
                      totalsRunner, capacity);
}

/// The argument of `step` whose memory its result `r` of `shape` takes
/// over (Step::inPlaceArg, when the shapes agree), or null.
static const Slot *inPlaceSource(const Step &step, size_t r,
                                 const std::vector<std::vector<int64_t>> &args,
                                 const std::vector<int64_t> &shape) {
  if (r != 0 || step.inPlaceArg < 0 || args.at(step.inPlaceArg) != shape)
    return nullptr;
  return &step.args[step.inPlaceArg];
}

runtime::Result
ModelPipeline::Impl::runProgram(const std::vector<Buffer<float>> &inputs,
                                const std::vector<Buffer<float>> &weights,
                                std::vector<Buffer<float>> &outputs,
                                std::vector<StreamState> *states, int rows,
                                const WeightPack *pack) {
  // Temporaries come from the pool: a repeated run reuses their pages, and
  // the peak-memory figure counts them.
  struct Free {
    void operator()(float *p) const { BufferPool::instance().give(p); }
  };
  std::vector<Buffer<float>> temps(program->temps);
  std::vector<std::unique_ptr<float, Free>> memory(program->temps);
  auto release = [&](size_t temp) {
    temps[temp].device_free();
    temps[temp] = Buffer<float>();
    memory[temp].reset();
  };
  auto buffer = [&](const Slot &slot) -> const Buffer<float> & {
    return slot.in(inputs, weights, outputs, temps);
  };
  for (size_t k = 0; k < program->steps.size(); ++k) {
    const Step &step = program->steps[k];
    std::vector<Buffer<float>> args, stepWeights;
    std::vector<std::vector<int64_t>> argShapes;
    for (const Slot &slot : step.args) {
      args.push_back(buffer(slot));
      argShapes.push_back(shapeOf(args.back()));
    }
    for (const Slot &slot : step.weights)
      stepWeights.push_back(buffer(slot));
    std::string what =
        "the kernel of '" + step.label + "' in model '" + name + "'";
    // Its weight arena's copy for this step, unless packed already.
    PooledArena arena;
    if (pack)
      stepWeights = pack->calls.at(k);
    else if (runtime::Result packed = kernelWeights(
                 step.kernel->lowering, std::vector<Buffer<float>>(stepWeights),
                 arena, stepWeights, what);
             !packed.ok())
      return packed;
    std::vector<Buffer<void>> views;
    for (size_t r = 0; r < step.results.size(); ++r) {
      const Slot &slot = step.results[r];
      if (slot.kind == Slot::Temp) {
        std::vector<int64_t> shape =
            Program::resultShape(step.resultShapes[r], argShapes);
        if (const Slot *source = inPlaceSource(step, r, argShapes, shape)) {
          memory[slot.index] = std::move(memory[source->index]);
          temps[slot.index] = temps[source->index];
          views.push_back(buffer(slot));
          continue;
        }
        float *data = static_cast<float *>(BufferPool::instance().take(
            std::max<size_t>(size_t(f32Bytes(shape)), 4)));
        if (!data)
          return runtime::Result::error(
              ATTN_ERROR_OUT_OF_MEMORY,
              "out of memory: the result of '" + step.label +
                  "' of model '" + name + "' needs " +
                  formatBytes(f32Bytes(shape)));
        memory[slot.index].reset(data);
        std::vector<int> sizes(shape.rbegin(), shape.rend());
        temps[slot.index] = Buffer<float>(data, sizes);
      }
      views.push_back(buffer(slot));
    }
    ProgramKernel &kernel = *step.kernel;
    auto runner = [&](const std::vector<Buffer<float>> &kernelArgs,
                      std::vector<Buffer<void>> &results) {
      return runKernel(kernel.pipeline, kernel.lowering, kernel.native.get(),
                       kernelArgs, stepWeights, results, what);
    };
    runtime::Result result =
        states ? (*states)[k].run(args, views, rows, runner)
               : runner(args, views);
    if (!result.ok())
      return result;
    for (size_t t = 0; t < program->temps; ++t)
      if (program->lastUse[t] == k && temps[t].defined())
        release(t);
  }
  for (const auto &[index, slot] : program->outputCopies) {
    Buffer<float> source = buffer(slot);
    source.copy_to_host();
    outputs[index].copy_from(source);
  }
  for (Buffer<float> &output : outputs)
    output.copy_to_host(); // results of GPU kernels back to the caller
  return runtime::Result::success();
}

int64_t ModelPipeline::maxBufferBytes() const {
  return impl->lowering.streaming() ? ((int64_t(1) << 31) - 1) * 4
                                    : impl->maxBufferBytes;
}

runtime::Result ModelPipeline::withStreamHint(runtime::Result result) const {
  if (result.ok() || result.status != ATTN_ERROR_OUT_OF_MEMORY ||
      impl->streamHint == 0)
    return result;
  std::string rows = std::to_string(impl->streamHint);
  result.message += "; model '" + impl->name +
                    "' can run over blocks of rows with the memory of one "
                    "block: --stream-rows " + rows +
                    " (Python: stream_rows=" + rows + ")";
  return result;
}

runtime::Result ModelPipeline::checkResources(
    const std::vector<std::vector<int64_t>> &inputShapes,
    const std::vector<std::vector<int64_t>> &outputShapes) const {
  int64_t ioBytes = 0;
  runtime::Result fits;
  // Streamed, a kernel sees blocks of the inputs and outputs, never the
  // whole (Stream.h): the target's one-buffer limit is the blocks', and a
  // whole one is limited by Halide's 32-bit strides (maxBufferBytes()).
  bool streamed = impl->lowering.streaming();
  // `cut`: the input or output streaming cuts into blocks (null: a weight).
  auto add = [&](const std::string &what, const std::vector<int64_t> &shape,
                 const TensorInfo *cut) {
    fits = checkBufferSize(what, shape, maxBufferBytes());
    if (fits.ok() && streamed && cut)
      fits = checkBufferSize(what,
                             blockShape(shape, streamRowAxis(*cut),
                                        impl->options.streamRows),
                             impl->maxBufferBytes);
    if (fits.ok())
      ioBytes = saturatingAdd(ioBytes, f32Bytes(shape));
    return fits.ok();
  };
  for (size_t i = 0; i < inputShapes.size(); ++i)
    if (!add("input '" + inputs()[i].name + "'", inputShapes[i],
             &inputs()[i]))
      return withStreamHint(fits);
  for (const TensorInfo &weight : weights())
    if (!add("weight '" + weight.name + "'", weight.shape, nullptr))
      return fits;
  for (size_t i = 0; i < outputShapes.size(); ++i)
    if (!add("output '" + outputs()[i].name + "'", outputShapes[i],
             &outputs()[i]))
      return withStreamHint(fits);
  // What the kernels see: blocks when streamed.
  std::vector<std::vector<int64_t>> seen = inputShapes, seenOut = outputShapes;
  for (auto [shapes, infos] : {std::tie(seen, inputs()),
                               std::tie(seenOut, outputs())})
    for (size_t i = 0; streamed && i < shapes.size(); ++i)
      shapes[i] = blockShape(shapes[i], streamRowAxis(infos[i]),
                             impl->options.streamRows);
  if (impl->program)
    return withStreamHint(impl->checkProgram(seen, seenOut, ioBytes));
  const Lowering &lowering = impl->lowering;
  // The weights' arena is a copy of them (a streamed sum's totals kernel
  // reads the same one).
  fits =
      checkStoredBuffers(lowering.stored, lowering.inputParams, seen, ioBytes,
                         lowering.arena.bytes(), impl->maxBufferBytes);
  return withStreamHint(fits);
}

runtime::Result ModelPipeline::Impl::checkProgram(
    const std::vector<std::vector<int64_t>> &inputShapes,
    const std::vector<std::vector<int64_t>> &outputShapes,
    int64_t ioBytes) const {
  std::vector<std::vector<int64_t>> weightShapes, tempShapes(program->temps);
  for (const TensorInfo &weight : program->weights)
    weightShapes.push_back(weight.shape);
  auto shapeOf = [&](const Slot &slot) -> const std::vector<int64_t> & {
    return slot.in(inputShapes, weightShapes, outputShapes, tempShapes);
  };
  int64_t liveBytes = 0; // the temporaries alive during a step
  // The steps' weight arenas, all held by a pack (WeightPack).
  int64_t copyBytes = 0;
  for (const Step &step : program->steps)
    copyBytes = saturatingAdd(copyBytes, step.kernel->lowering.arena.bytes());
  std::vector<bool> handedOn(program->temps); // memory a result took over
  for (size_t k = 0; k < program->steps.size(); ++k) {
    const Step &step = program->steps[k];
    std::vector<std::vector<int64_t>> argShapes;
    for (const Slot &slot : step.args)
      argShapes.push_back(shapeOf(slot));
    for (size_t r = 0; r < step.results.size(); ++r) {
      if (step.results[r].kind != Slot::Temp)
        continue;
      std::vector<int64_t> shape =
          Program::resultShape(step.resultShapes[r], argShapes);
      runtime::Result fits = checkBufferSize(
          "the result of '" + step.label + "'", shape, maxBufferBytes);
      if (!fits.ok())
        return fits;
      tempShapes[step.results[r].index] = shape;
      if (const Slot *source = inPlaceSource(step, r, argShapes, shape))
        handedOn[source->index] = true;
      else
        liveBytes = saturatingAdd(liveBytes, f32Bytes(shape));
    }
    const Lowering &lowering = step.kernel->lowering;
    runtime::Result fits = checkStoredBuffers(
        lowering.stored, lowering.inputParams, argShapes,
        saturatingAdd(ioBytes, liveBytes), copyBytes, maxBufferBytes);
    if (!fits.ok())
      return fits;
    for (size_t t = 0; t < program->temps; ++t)
      if (program->lastUse[t] == k && !tempShapes[t].empty() && !handedOn[t])
        liveBytes -= f32Bytes(tempShapes[t]);
  }
  return runtime::Result::success();
}

const WeightArena &ModelPipeline::weightArena() const {
  static const WeightArena none;
  return impl->program ? none : impl->lowering.arena;
}

std::vector<ModelPipeline::Kernel> ModelPipeline::kernels() const {
  std::vector<Kernel> result;
  if (impl->program)
    for (const std::unique_ptr<ProgramKernel> &kernel : impl->program->kernels)
      result.push_back({kernel->function, kernel->calls});
  return result;
}

} // namespace attnc::codegen
