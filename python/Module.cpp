//===- Module.cpp - the attnc Python module's bindings (pybind11) ---------===//
//
// This file implements attnc._attnc, the C++ half of the Python package
// (python/attnc/__init__.py is the API users call): a compiled model
// (Session + JitModel, as `attnc run` holds them) that runs on numpy's
// memory without copies, and the AOT compiler and the stage printer as
// functions. The Python half converts torch tensors (DLPack) and
// non-contiguous arrays before they get here; this file checks every array
// it is given (dtype, layout, shape) all the same.
//
// Errors are Python exceptions: attnc.CompileError carries the located
// diagnostics the CLI prints (file:line:col, source line, caret);
// attnc.InputError (also a ValueError) a wrong, missing or unknown input or
// weight; attnc.Error anything else (a file that cannot be read, a run too
// large for memory, a kernel's failure).
//
// Runs release the GIL: the kernel reads and writes only the arrays it was
// given, kept alive by the caller's frame. One run at a time in a process
// (a mutex): Halide's thread pool is the process's, and a run uses every
// thread it is allowed.
//
//===----------------------------------------------------------------------===//
#include "codegen/Aot.h"
#include "codegen/Decode.h"
#include "codegen/Jit.h"
#include "codegen/Stopwatch.h"
#include "driver/Session.h"
#include "dsl/Import/Frontend.h"
#include "dsl/Syntax/AST.h"
#include "tune/TuningDb.h"

#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdlib>
#include <dlfcn.h>
#include <mutex>
#include <thread>

namespace py = pybind11;

namespace attnc::python {
namespace {

using codegen::TensorInfo;
using codegen::TensorMap;
using runtime::Result;

/// The C++ side of the module's exception classes (translated in
/// PYBIND11_MODULE below).
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct CompileError : Error {
  using Error::Error;
};
struct InputError : Error {
  using Error::Error;
};

/// The Python classes of the three (made once, in PYBIND11_MODULE).
PyObject *errorClass, *compileErrorClass, *inputErrorClass;

/// Raises the exception for a runtime status: the caller's mistakes (a
/// missing, unknown or misshapen tensor, a bad argument) are InputError.
[[noreturn]] void raise(const Result &result) {
  switch (result.status) {
  case ATTN_ERROR_MISSING:
  case ATTN_ERROR_SHAPE:
  case ATTN_ERROR_DTYPE:
  case ATTN_ERROR_ARGUMENT:
    throw InputError(result.message);
  default:
    throw Error(result.message);
  }
}

/// Diagnostics as the CLI prints them, without the last newline.
std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  return text;
}

/// The session options of a load, compile or emit; `schedule` is default,
/// naive or tuned (tuned needs `tuningDb`). Halide's autoschedulers are
/// the CLI's (`attnc run --schedule`): they schedule for one run's sizes.
driver::SessionOptions sessionOptions(const std::string &model,
                                      const std::string &target,
                                      const std::string &schedule,
                                      const std::string &tuningDb) {
  bool tuned = schedule == "tuned";
  std::optional<driver::SchedulePolicy> policy =
      tuned ? driver::SchedulePolicy::Default
            : driver::parseSchedulePolicy(schedule);
  if (!policy)
    throw InputError(driver::unknownSchedulePolicy(schedule) +
                     ", or tuned (with tuning_db)");
  if (tuned && tuningDb.empty())
    throw InputError("schedule='tuned' takes its schedules from a tuning "
                     "database: give tuning_db (attnc tune makes one)");
  driver::SessionOptions options{model, target, *policy};
  options.tuningDb = tuningDb;
  return options;
}

/// A tensor's description: (name, shape with runtime dims by name, dtype).
py::list describe(const std::vector<TensorInfo> &tensors) {
  py::list out;
  for (const TensorInfo &info : tensors) {
    py::list shape;
    for (size_t i = 0; i < info.shape.size(); ++i) {
      if (info.shape[i] >= 0)
        shape.append(info.shape[i]);
      else
        shape.append(info.dims[i]);
    }
    const char *dtype = info.dtype == "i32" ? "int32" : "float32";
    out.append(py::make_tuple(info.name, py::tuple(shape), dtype));
  }
  return out;
}

/// `value` as a numpy array; InputError naming it when it is none (the
/// Python half converts tensors and sequences before they get here).
py::array asArray(py::handle value, const char *role, const std::string &name) {
  if (!py::isinstance<py::array>(value))
    throw InputError(std::string(role) + " '" + name + "' is a " +
                     std::string(py::str(py::type::of(value).attr("__name__"))) +
                     ", not a numpy array");
  return py::reinterpret_borrow<py::array>(value);
}

/// The shape of `array`, checked to be memory a kernel can read in place:
/// float32 (int32 for token ids, `ids`), C-contiguous, aligned. `role` and
/// `name` name it in errors.
std::vector<int64_t> checkedShape(const py::array &array, const char *role,
                                  const std::string &name, bool ids = false) {
  if (ids && !array.dtype().is(py::dtype::of<int32_t>()))
    throw InputError(std::string(role) + " '" + name + "' has dtype " +
                     std::string(py::str(array.dtype())) +
                     " but it holds token ids, int32 (convert it with "
                     ".astype(numpy.int32))");
  if (!ids && !array.dtype().is(py::dtype::of<float>()))
    throw InputError(std::string(role) + " '" + name + "' has dtype " +
                     std::string(py::str(array.dtype())) +
                     " but attnc models take float32 (convert it with "
                     ".astype(numpy.float32))");
  if (!(array.flags() & py::array::c_style))
    throw InputError(std::string(role) + " '" + name +
                     "' is not C-contiguous (numpy.ascontiguousarray makes a "
                     "copy that is)");
  if (reinterpret_cast<uintptr_t>(array.data()) % alignof(float) != 0)
    throw InputError(std::string(role) + " '" + name +
                     "' is not aligned to 4 bytes");
  return std::vector<int64_t>(array.shape(), array.shape() + array.ndim());
}

/// One run at a time in the process (the file comment).
std::mutex runMutex;

/// Sets the threads of Halide's runtime (the cached kernels' runtime,
/// loaded with RTLD_GLOBAL by codegen/NativeKernel.cpp); HL_NUM_THREADS,
/// set before compiling, covers a runtime not loaded yet.
/// Only when the count changes: the call takes the pool's lock, which its
/// workers, spinning after a run, contend for (0.05 ms a call, measured).
/// Called under runMutex.
void setRuntimeThreads(int threads) {
  static int current = 0;
  using Setter = int (*)(int);
  if (threads == current)
    return;
  if (auto set = reinterpret_cast<Setter>(
          dlsym(RTLD_DEFAULT, "halide_set_num_threads"))) {
    set(threads);
    current = threads;
  }
}

/// A model compiled for the host with its weights: attnc.Model's state.
class Model {
public:
  Model(const std::string &path, const std::string &model,
        const std::string &target, const std::string &schedule, int threads,
        const std::string &tuningDb,
        const std::map<std::string, int64_t> &tuningDims,
        const std::string &cacheDir, bool cache, int64_t streamRows,
        bool decode)
      : threads(threads) {
    driver::SessionOptions options =
        sessionOptions(model, target, schedule, tuningDb);
    options.tuningDims = tuningDims;
    options.cache.enabled = cache;
    options.cache.directory = cacheDir;
    if (streamRows < 0)
      throw InputError("stream_rows must be positive, or None to run the "
                       "whole sequence at once");
    options.streamRows = streamRows;
    options.decode = decode;
    options.threads =
        threads > 0 ? threads
                    : int(std::max(1u, std::thread::hardware_concurrency()));
    if (threads > 0)
      setenv("HL_NUM_THREADS", std::to_string(threads).c_str(), 1);
    session = std::make_unique<driver::Session>(options, diagOS);
    {
      py::gil_scoped_release unlocked;
      if (session->loadFile(path))
        jit = session->jit();
    }
    if (!jit)
      throw CompileError(trimmed(diagnostics));
  }

  const codegen::ModelPipeline &pipeline() const { return jit->pipeline(); }

  /// Warnings the compilation printed (the Python half passes them to
  /// warnings.warn).
  std::string warnings() { return trimmed(diagnostics); }

  void loadWeights(const std::string &file, int64_t randomSeed) {
    auto loaded = std::make_shared<TensorMap>();
    if (Result read = codegen::loadWeights(jit->pipeline(), file, randomSeed,
                                           *loaded);
        !read.ok())
      raise(read);
    replaceWeights(std::move(loaded));
  }

  /// The weights for later runs; the pack of the old ones goes.
  void replaceWeights(std::shared_ptr<TensorMap> given) {
    weights = std::move(given);
    std::lock_guard<std::mutex> lock(runMutex);
    pack = codegen::WeightPack();
    packed = nullptr;
  }

  /// Weights from arrays (copied: the model keeps its own).
  void setWeights(const py::dict &arrays) {
    TensorMap given;
    std::vector<std::string> unknown;
    for (auto [key, value] : arrays) {
      std::string name = py::str(key);
      bool known = false;
      for (const TensorInfo &info : pipeline().weights())
        known |= info.name == name;
      if (!known) {
        unknown.push_back("'" + name + "'");
        continue;
      }
      py::array array = asArray(value, "weight", name);
      runtime::HostTensor tensor(checkedShape(array, "weight", name));
      std::copy_n(static_cast<const float *>(array.data()),
                  tensor.data.size(), tensor.data.data());
      given[name] = std::move(tensor);
    }
    if (!unknown.empty()) {
      std::string message = "the model has no weight";
      message += unknown.size() > 1 ? "s " : " ";
      for (size_t i = 0; i < unknown.size(); ++i)
        message += (i ? ", " : "") + unknown[i];
      throw InputError(message);
    }
    replaceWeights(std::make_shared<TensorMap>(std::move(given)));
  }

  void checkWeights() const {
    if (Result checked = jit->checkWeights(*weights); !checked.ok())
      raise(checked);
  }

  /// Runs on `inputs` (name -> float32 C-contiguous array), writing into
  /// `outputs` where given (name -> array of the output's shape) and into
  /// new arrays otherwise; returns every output by name.
  py::dict run(const py::dict &inputs, const py::dict &outputs) {
    std::map<std::string, py::array> in;
    std::map<std::string, std::vector<int64_t>> shapes;
    for (auto [key, value] : inputs) {
      std::string name = py::str(key);
      in[name] = asArray(value, "input", name);
      bool ids = false;
      for (const TensorInfo &info : pipeline().inputs())
        ids |= info.name == name && info.dtype == "i32";
      shapes[name] = checkedShape(in[name], "input", name, ids);
    }
    std::vector<std::vector<int64_t>> outShapes;
    if (Result checked = jit->outputShapes(shapes, outShapes); !checked.ok())
      raise(checked);
    checkWeights();

    py::dict result;
    std::vector<Halide::Buffer<float>> inBuffers, outBuffers;
    std::vector<std::pair<const char *, const char *>> read;
    lastBuffers.clear();
    for (const TensorInfo &info : pipeline().inputs()) {
      const py::array &array = in.at(info.name);
      const auto *data = static_cast<const float *>(array.data());
      inBuffers.push_back(codegen::hostView(data, shapes.at(info.name)));
      read.emplace_back(reinterpret_cast<const char *>(data),
                        reinterpret_cast<const char *>(data) + array.nbytes());
      lastBuffers[info.name] = reinterpret_cast<uintptr_t>(data);
    }
    for (size_t i = 0; i < outShapes.size(); ++i) {
      const std::string &name = pipeline().outputs()[i].name;
      py::array array;
      if (outputs.contains(name)) {
        array = asArray(outputs[name.c_str()], "output", name);
        std::vector<int64_t> shape = checkedShape(array, "output", name);
        if (shape != outShapes[i])
          throw InputError("output '" + name + "' has shape " +
                           runtime::shapeString(shape) +
                           " but this run writes " +
                           runtime::shapeString(outShapes[i]));
        if (!array.writeable())
          throw InputError("output '" + name + "' is read-only");
      } else {
        array = py::array_t<float>(outShapes[i]);
      }
      auto *data = static_cast<float *>(array.mutable_data());
      const char *begin = reinterpret_cast<const char *>(data);
      for (const auto &[from, to] : read)
        if (begin < to && from < begin + array.nbytes())
          throw InputError("output '" + name +
                           "' shares memory with an input; attnc does not "
                           "run in place");
      outBuffers.push_back(codegen::hostView(data, outShapes[i]));
      lastBuffers[name] = reinterpret_cast<uintptr_t>(data);
      result[name.c_str()] = array;
    }
    for (auto [key, value] : outputs) {
      std::string name = py::str(key);
      if (!result.contains(name))
        throw InputError("unknown output '" + name + "'");
    }
    Result ran;
    std::shared_ptr<TensorMap> current = weights; // as set_weights left them
    {
      py::gil_scoped_release unlocked;
      std::lock_guard<std::mutex> lock(runMutex);
      if (threads > 0)
        setRuntimeThreads(threads);
      // The weights packed once for their kernels (they are replaced,
      // never changed: `packed` holds the set the pack was made from).
      if (packed != current) {
        ran = jit->packWeights(*current, pack);
        packed = ran.ok() ? current : nullptr;
      }
      auto start = SteadyClock::now();
      if (packed)
        ran = jit->runBuffers(inBuffers, *current, outBuffers, &pack);
      lastRunMs = millisSince(start);
    }
    if (!ran.ok())
      raise(ran);
    return result;
  }

  /// Data addresses of the buffers the last run gave the kernel, by tensor
  /// name (for checking that nothing was copied).
  std::map<std::string, uintptr_t> lastBuffers;
  /// The last run's time inside the kernel call (ms), without the
  /// module's checks and conversions (bench/python_overhead.py).
  double lastRunMs = 0;

  py::dict compileTimes() const {
    const driver::Session::CompileTimes &t = session->compileTimes();
    py::dict out;
    out["mlir_ms"] = t.mlir;
    out["codegen_ms"] = t.codegen;
    out["halide_lowering_ms"] = t.stages.lowering;
    out["llvm_ms"] = t.stages.llvm;
    out["link_ms"] = t.stages.link;
    out["load_ms"] = t.stages.load;
    out["cache_hits"] = t.stages.hits;
    out["cache_misses"] = t.stages.misses;
    return out;
  }

private:
  int threads;
  std::string diagnostics;
  llvm::raw_string_ostream diagOS{diagnostics};
  std::unique_ptr<driver::Session> session;
  std::unique_ptr<codegen::JitModel> jit;
  /// Replaced, never changed, by load_weights and set_weights: a decoder
  /// keeps the weights it was made with.
  std::shared_ptr<TensorMap> weights = std::make_shared<TensorMap>();
  /// `weights` as the kernels take them (runMutex), and the set it packs.
  codegen::WeightPack pack;
  std::shared_ptr<TensorMap> packed;
  friend class SequenceDecoder;
};

/// attnc.Decoder's state: one sequence of a model loaded with decode=True,
/// decoded incrementally (codegen/Decode.h).
class SequenceDecoder {
public:
  SequenceDecoder(Model &model, int64_t capacity)
      : model(model), weights(model.weights) {
    model.checkWeights();
    if (Result made = model.jit->decoder(*weights, capacity, decoder);
        !made.ok())
      raise(made);
    const TensorInfo &first = model.pipeline().inputs().front();
    seqDim = first.dims[codegen::streamRowAxis(first)];
  }

  /// Appends the rows of `inputs` (name -> array: batch dims 1, the same
  /// rows in each); returns the outputs of those rows by name.
  py::dict append(const py::dict &inputs) {
    const codegen::ModelPipeline &pipeline = model.pipeline();
    std::vector<Halide::Buffer<float>> in, out;
    std::vector<py::array> keep;
    int64_t rows = -1;
    for (const TensorInfo &info : pipeline.inputs()) {
      if (!inputs.contains(info.name))
        throw InputError("missing input '" + info.name + "'");
      py::array array = asArray(inputs[info.name.c_str()], "input", info.name);
      std::vector<int64_t> shape =
          checkedShape(array, "input", info.name, info.dtype == "i32");
      // The rows of the first input size the outputs; Decoder::append
      // checks every shape.
      if (rows < 0 && shape.size() == info.shape.size())
        rows = shape[codegen::streamRowAxis(info)];
      in.push_back(codegen::hostView(
          static_cast<const float *>(array.data()), shape));
      keep.push_back(array);
    }
    py::dict result;
    for (const TensorInfo &info : pipeline.outputs()) {
      std::vector<int64_t> shape = info.shape;
      for (size_t d = 0; d < shape.size(); ++d)
        if (info.dims[d] == seqDim)
          shape[d] = std::max<int64_t>(rows, 1);
        else if (shape[d] < 0)
          shape[d] = 1;
      py::array_t<float> array(shape);
      out.push_back(codegen::hostView(array.mutable_data(), shape));
      result[info.name.c_str()] = array;
    }
    Result ran;
    {
      py::gil_scoped_release unlocked;
      std::lock_guard<std::mutex> lock(runMutex);
      if (model.threads > 0)
        setRuntimeThreads(model.threads);
      ran = decoder->append(in, out);
    }
    if (!ran.ok())
      raise(ran);
    return result;
  }

  // Under runMutex: another thread's append may be running.
  void reset() {
    std::lock_guard<std::mutex> lock(runMutex);
    decoder->reset();
  }
  int64_t length() const {
    std::lock_guard<std::mutex> lock(runMutex);
    return decoder->length();
  }
  int64_t stateBytes() const { return decoder->stateBytes(); }
  int blockRows() const { return decoder->blockRows(); }

private:
  Model &model;
  std::shared_ptr<TensorMap> weights;
  std::unique_ptr<codegen::Decoder> decoder;
  std::string seqDim;
};

/// attnc.compile: lib<name>.a and <name>.h in `outputDir`; the paths.
std::vector<std::string> compileLibrary(const std::string &path,
                                        const std::string &outputDir,
                                        const std::string &model,
                                        const std::string &target,
                                        const std::string &name,
                                        const std::string &schedule,
                                        const std::string &tuningDb,
                                        bool decode) {
  if (!name.empty() && name != codegen::cIdentifier(name))
    throw InputError("name '" + name + "' is not a C identifier");
  std::string diagnostics;
  llvm::raw_string_ostream diagOS(diagnostics);
  driver::Session session(sessionOptions(model, target, schedule, tuningDb),
                          diagOS);
  std::vector<std::string> written;
  bool ok;
  {
    py::gil_scoped_release unlocked;
    ok = session.loadFile(path) &&
         session.compileAot(outputDir, name, written, decode);
  }
  if (!ok)
    throw CompileError(trimmed(diagnostics));
  return written;
}

/// attnc.emit: the text of `attnc --emit=<stage>`.
std::string emitStage(const std::string &path, const std::string &stage,
                      const std::string &model, const std::string &target,
                      const std::string &schedule) {
  static const std::map<std::string, driver::Stage> stages = {
      {"attn", driver::Stage::Imported},
      {"attn-primitives", driver::Stage::Primitives},
      {"attn-scheduled", driver::Stage::Scheduled},
      {"halide-stmt", driver::Stage::Pipeline}};
  std::string diagnostics, text;
  llvm::raw_string_ostream diagOS(diagnostics), os(text);
  if (stage == "ast") {
    auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
    if (std::error_code ec = buffer.getError())
      throw Error("cannot open '" + path + "': " + ec.message());
    dsl::FrontendResult result = dsl::runFrontend(
        std::move(*buffer), dsl::FrontendStage::Parse, diagOS);
    if (!result.ok)
      throw CompileError(trimmed(diagnostics));
    dsl::dumpAST(*result.ast, *result.sourceMgr, os);
    return text;
  }
  auto it = stages.find(stage);
  if (it == stages.end())
    throw InputError("unknown stage '" + stage +
                     "'; the stages are ast, attn, attn-primitives, "
                     "attn-scheduled and halide-stmt");
  driver::Session session(sessionOptions(model, target, schedule, ""), diagOS);
  bool ok = session.loadFile(path);
  if (ok && it->second == driver::Stage::Pipeline) {
    ok = session.printStmt(os);
  } else if (ok && (ok = session.runTo(it->second))) {
    session.module()->print(os);
    os << "\n";
  }
  if (!ok)
    throw CompileError(trimmed(diagnostics));
  return text;
}

} // namespace
} // namespace attnc::python

PYBIND11_MODULE(_attnc, m) {
  using namespace attnc::python;
  m.doc() = "attnc's compiled models (the C++ half of the attnc package)";
  m.attr("__version__") = attnc::tune::attncVersion();

  errorClass = PyErr_NewException("attnc.Error", PyExc_RuntimeError, nullptr);
  compileErrorClass =
      PyErr_NewException("attnc.CompileError", errorClass, nullptr);
  py::tuple inputBases =
      py::make_tuple(py::handle(errorClass), py::handle(PyExc_ValueError));
  inputErrorClass =
      PyErr_NewException("attnc.InputError", inputBases.ptr(), nullptr);
  m.attr("Error") = py::handle(errorClass);
  m.attr("CompileError") = py::handle(compileErrorClass);
  m.attr("InputError") = py::handle(inputErrorClass);
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown)
        std::rethrow_exception(thrown);
    } catch (const CompileError &e) {
      PyErr_SetString(compileErrorClass, e.what());
    } catch (const InputError &e) {
      PyErr_SetString(inputErrorClass, e.what());
    } catch (const Error &e) {
      PyErr_SetString(errorClass, e.what());
    }
  });

  py::class_<Model>(m, "Model")
      .def(py::init<const std::string &, const std::string &,
                    const std::string &, const std::string &, int,
                    const std::string &, const std::map<std::string, int64_t> &,
                    const std::string &, bool, int64_t, bool>(),
           py::arg("path"), py::arg("model"), py::arg("target"),
           py::arg("schedule"), py::arg("threads"), py::arg("tuning_db"),
           py::arg("tuning_dims"), py::arg("cache_dir"), py::arg("cache"),
           py::arg("stream_rows"), py::arg("decode"))
      .def("inputs",
           [](const Model &model) { return describe(model.pipeline().inputs()); })
      .def("outputs",
           [](const Model &model) { return describe(model.pipeline().outputs()); })
      .def("weights",
           [](const Model &model) { return describe(model.pipeline().weights()); })
      .def("warnings", &Model::warnings)
      .def("load_weights", &Model::loadWeights, py::arg("file"),
           py::arg("random_seed"))
      .def("set_weights", &Model::setWeights, py::arg("arrays"))
      .def("check_weights", &Model::checkWeights)
      .def("run", &Model::run, py::arg("inputs"), py::arg("outputs"))
      .def_readonly("last_buffers", &Model::lastBuffers)
      .def_readonly("last_run_ms", &Model::lastRunMs)
      .def("compile_times", &Model::compileTimes);

  py::class_<SequenceDecoder>(m, "Decoder")
      .def(py::init<Model &, int64_t>(), py::arg("model"), py::arg("capacity"),
           py::keep_alive<1, 2>())
      .def("append", &SequenceDecoder::append, py::arg("inputs"))
      .def("reset", &SequenceDecoder::reset)
      .def_property_readonly("length", &SequenceDecoder::length)
      .def_property_readonly("state_bytes", &SequenceDecoder::stateBytes)
      .def_property_readonly("block_rows", &SequenceDecoder::blockRows);

  m.def("compile", &compileLibrary, py::arg("path"), py::arg("out_dir"),
        py::arg("model"), py::arg("target"), py::arg("name"),
        py::arg("schedule"), py::arg("tuning_db"), py::arg("decode"));
  m.def("emit", &emitStage, py::arg("path"), py::arg("stage"),
        py::arg("model"), py::arg("target"), py::arg("schedule"));
}
