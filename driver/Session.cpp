//===- Session.cpp - one compilation of one model -------------------------===//
//
// This file implements Session (see Session.h): loading, model selection,
// the named pipelines (attn-lower-to-primitives, attn-schedule), the Halide
// pipeline and its products (JIT, AOT, lowered statement).
//
//===----------------------------------------------------------------------===//
#include "driver/Session.h"

#include "codegen/Aot.h"
#include "codegen/Stopwatch.h"
#include "codegen/Stream.h"
#include "tune/TuningDb.h"
#include "passes/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"

#include <chrono>
#include <set>

namespace attnc::driver {

void prepareContext(mlir::MLIRContext &context) {
  mlir::DialectRegistry registry;
  dsl::registerImportDialects(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
  // attnc's errors point at the .attn source. MLIR would follow an error
  // reported on an op with a dump of the op (a whole model function for
  // codegen's "supports f32 tensors ... only"): IR for compiler developers,
  // who have attn-opt and `--emit=` for it.
  context.printOpOnDiagnostic(false);
}

Session::Session(SessionOptions options, llvm::raw_ostream &diagOS)
    : opts(std::move(options)), diagOS(diagOS),
      ctx(std::make_unique<mlir::MLIRContext>()) {
  prepareContext(*ctx);
}

Session::~Session() = default;

bool Session::error(const llvm::Twine &message) {
  // MLIR would print a diagnostic without a location as "<unknown>:0:".
  diagOS << "error: " << message << "\n";
  return false;
}

std::function<mlir::InFlightDiagnostic()> Session::errorAtModel() {
  // At the model's location, without MLIR's dump of the function.
  return [this] { return mlir::emitError(selected.getLoc()); };
}

bool Session::loadFile(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/true);
  if (std::error_code ec = buffer.getError())
    return error("cannot open '" + path + "': " + ec.message());
  return imported(dsl::runFrontend(std::move(*buffer), dsl::FrontendStage::Import,
                                   diagOS, ctx.get()));
}

bool Session::loadSource(llvm::StringRef source, llvm::StringRef bufferName) {
  return imported(dsl::runFrontend(source, bufferName, dsl::FrontendStage::Import,
                                   diagOS, ctx.get()));
}

bool Session::imported(dsl::FrontendResult result) {
  // The handler reads the source manager that the move below frees.
  handler.reset();
  front = std::move(result);
  if (!front.ok)
    return false;
  // From here on MLIR's diagnostics show the .attn line and a caret too.
  handler = std::make_unique<mlir::SourceMgrDiagnosticHandler>(
      *front.sourceMgr, ctx.get(), diagOS);
  return loaded(std::move(front.module));
}

bool Session::loadIR(llvm::StringRef text, llvm::StringRef bufferName) {
  auto sourceMgr = std::make_unique<llvm::SourceMgr>();
  sourceMgr->AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, bufferName), llvm::SMLoc());
  // The new handler first: the old one may read the source manager that
  // the second assignment frees.
  handler = std::make_unique<mlir::SourceMgrDiagnosticHandler>(
      *sourceMgr, ctx.get(), diagOS);
  irSourceMgr = std::move(sourceMgr);
  mlir::OwningOpRef<mlir::ModuleOp> parsed =
      mlir::parseSourceFile<mlir::ModuleOp>(*irSourceMgr, ctx.get());
  if (!parsed)
    return false;
  return loaded(std::move(parsed));
}

bool Session::loaded(mlir::OwningOpRef<mlir::ModuleOp> module) {
  ir = std::move(module);
  std::string message;
  std::optional<target::TargetModel> parsed =
      target::TargetModel::parse(opts.target, message);
  if (!parsed)
    return error(message);
  targetModel = std::move(*parsed);
  current = Stage::Imported;
  return true;
}

mlir::ModuleOp Session::module() { return ir ? *ir : mlir::ModuleOp(); }

codegen::CodegenOptions Session::codegenOptions() const {
  codegen::CodegenOptions options;
  options.gpu = targetModel.isGpu();
  options.gpuOnHost = options.gpu && opts.gpuOnHost;
  options.autoscheduler = opts.autoscheduler;
  options.estimates = opts.estimates;
  options.autoscheduleTarget = targetModel.halide();
  options.autoscheduleThreads = opts.threads;
  options.streamRows = opts.streamRows;
  return options;
}

bool Session::runTo(Stage stage) {
  if (current == Stage::Empty)
    return error("nothing to compile: no model was loaded");
  while (current < stage) {
    bool ok = false;
    auto start = std::chrono::steady_clock::now();
    switch (current) {
    case Stage::Imported:
      ok = lower();
      times.mlir += millisSince(start);
      break;
    case Stage::Primitives:
      ok = schedule();
      times.mlir += millisSince(start);
      break;
    case Stage::Scheduled:
      ok = buildPipeline();
      times.codegen += millisSince(start);
      break;
    case Stage::Empty:
    case Stage::Pipeline:
      break;
    }
    if (!ok)
      return false;
    current = Stage(int(current) + 1);
  }
  return true;
}

bool Session::select() {
  selected = findModel(*ir, opts.model);
  if (!selected)
    return false;
  layerSelected = findModel(*layerModule, selected.getSymName());
  return true;
}

bool Session::lower() {
  // The layer-level IR, kept for FLOP counts and the fp64 reference.
  layerModule = mlir::cast<mlir::ModuleOp>((*ir)->clone());
  mlir::PassManager pm(ctx.get());
  mlir::attn::buildLowerToPrimitivesPipeline(pm);
  return mlir::succeeded(pm.run(*ir));
}

bool Session::schedule() {
  if (!opts.autoscheduler.empty() && targetModel.isGpu())
    return error("Halide's " + opts.autoscheduler +
                 " autoscheduler is compared on CPU targets only; target '" +
                 opts.target + "' is a GPU target");
  if (!opts.autoscheduler.empty() && !opts.tuningDb.empty())
    return error("a tuning database holds attn-tile's schedules; it does not "
                 "apply to Halide's " + opts.autoscheduler + " autoscheduler");
  if (opts.schedule == SchedulePolicy::Naive && targetModel.isGpu())
    return error("the naive schedule is a CPU baseline (scalar, serial loops "
                 "at root); target '" + opts.target +
                 "' needs GPU schedules: use --schedule default");
  if (!opts.tuningDb.empty() && opts.schedule != SchedulePolicy::Default)
    return error("a tuning database replaces the default schedules; it does "
                 "not apply to --schedule naive");
  if (!opts.tuningDb.empty())
    unscheduled = mlir::cast<mlir::ModuleOp>((*ir)->clone());
  return scheduleModule(*ir, opts.tuningDims);
}

bool Session::scheduleModule(mlir::ModuleOp module,
                             const std::map<std::string, int64_t> &tuningDims) {
  mlir::PassManager pm(ctx.get());
  mlir::attn::buildSchedulePipeline(pm, targetModel, opts.schedule);
  if (!opts.tuningDb.empty())
    pm.addPass(mlir::attn::createApplyTuningPass(opts.tuningDb, targetModel,
                                                 tuningDims));
  return mlir::succeeded(pm.run(module));
}

std::vector<std::map<std::string, int64_t>> Session::variantSizes() {
  if (opts.tuningDb.empty() || !opts.tuningDims.empty() || !unscheduled)
    return {};
  std::string why;
  std::unique_ptr<tune::TuningDb> db =
      tune::TuningDb::open(opts.tuningDb, /*create=*/false, why);
  if (!db)
    return {}; // attn-apply-tuning has reported it
  std::set<std::string> runtimeDims;
  for (const auto *tensors : {&built->inputs(), &built->outputs()})
    for (const codegen::TensorInfo &t : *tensors)
      for (const std::string &dim : t.dims)
        if (!dim.empty())
          runtimeDims.insert(dim);
  std::vector<std::map<std::string, int64_t>> sizes;
  for (std::map<std::string, int64_t> &dims :
       db->tunedDims(targetModel.halideString(), tune::attncVersion())) {
    std::set<std::string> names;
    for (const auto &entry : dims)
      names.insert(entry.first);
    if (names == runtimeDims)
      sizes.push_back(std::move(dims));
  }
  if (sizes.size() < 2)
    sizes.clear();
  return sizes;
}

/// `options` for decoding `model`: blocks of its decodeRows (unless
/// streamRows is set) of whole chunks.
static void decodeOptions(codegen::CodegenOptions &options,
                          mlir::func::FuncOp model) {
  options.decode = true;
  if (options.streamRows == 0)
    options.streamRows = codegen::decodeRows(model);
  options.commitRows = codegen::smallestStreamRows(model);
}

bool Session::buildPipeline() {
  if (!select())
    return false;
  codegen::CodegenOptions options = codegenOptions();
  if (opts.decode)
    decodeOptions(options, selected);
  built = codegen::ModelPipeline::build(selected, options);
  if (built && !built->kernels().empty())
    times.kernels = built->kernels().size();
  return built != nullptr;
}

std::unique_ptr<codegen::JitModel> Session::jit() {
  if (!runTo(Stage::Pipeline) || !built)
    return nullptr;
  codegen::CodegenOptions options = codegenOptions();
  if (options.gpu && !options.gpuOnHost &&
      !Halide::host_supports_target_device(targetModel.halide())) {
    error("target '" + opts.target +
          "' needs a GPU, and none is usable here; use 'attnc compile' to "
          "build for it");
    return nullptr;
  }
  // GPU schedules checked on the host run as host code.
  Halide::Target jitTarget =
      options.gpuOnHost ? Halide::get_host_target() : targetModel.halide();
  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<codegen::JitModel> model = codegen::JitModel::create(
      std::move(built), selected, jitTarget, opts.cache, times.stages,
      options.autoscheduler);
  times.halide += millisSince(start);
  diagOS << times.stages.notes;
  times.stages.notes.clear();
  return model;
}

bool Session::compileAot(const std::string &outputDir, const std::string &name,
                         std::vector<std::string> &written, bool decode) {
  if (!runTo(Stage::Pipeline) || !built)
    return false;
  // Decoding: the model streamed in blocks of its chunk (as generate runs
  // it), refused at the op that does not stream.
  std::unique_ptr<codegen::ModelPipeline> decoding;
  if (decode) {
    codegen::CodegenOptions options = codegenOptions();
    decodeOptions(options, selected);
    decoding = codegen::ModelPipeline::build(selected, options);
    if (!decoding)
      return false;
  }
  if (std::error_code ec = llvm::sys::fs::create_directories(outputDir))
    return error("cannot create '" + outputDir + "': " + ec.message());
  // One variant per tuned size, each scheduled from the primitive IR again;
  // or the pipeline built already.
  std::vector<codegen::AotVariant> variants;
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules;
  std::vector<std::unique_ptr<codegen::ModelPipeline>> pipelines;
  for (const std::map<std::string, int64_t> &dims : variantSizes()) {
    modules.push_back(mlir::cast<mlir::ModuleOp>(unscheduled->clone()));
    if (!scheduleModule(*modules.back(), dims))
      return false;
    mlir::func::FuncOp model =
        findModel(*modules.back(), selected.getSymName());
    if (!model)
      return false;
    pipelines.push_back(codegen::ModelPipeline::build(model, codegenOptions()));
    if (!pipelines.back())
      return false;
    variants.push_back({pipelines.back().get(), dims});
  }
  if (variants.empty())
    variants.push_back({built.get(), {}});
  return mlir::succeeded(
      codegen::compileAot(variants, decoding.get(), targetModel.halide(),
                          outputDir, name, written, errorAtModel()));
}

bool Session::printStmt(llvm::raw_ostream &os) {
  if (!runTo(Stage::Pipeline) || !built)
    return false;
  return mlir::succeeded(codegen::printLoweredStmt(
      *built, targetModel.halide(), os, errorAtModel()));
}

mlir::func::FuncOp findModel(mlir::ModuleOp module, llvm::StringRef name) {
  std::vector<mlir::func::FuncOp> models;
  for (auto func : module.getOps<mlir::func::FuncOp>())
    if (func->hasAttr("attn.model"))
      models.push_back(func);
  std::string names;
  for (mlir::func::FuncOp func : models) {
    names += (names.empty() ? "" : ", ") + func.getSymName().str();
    if (!name.empty() && func.getSymName() == name)
      return func;
  }
  if (name.empty() && models.size() == 1)
    return models.front();
  if (name.empty())
    mlir::emitError(module.getLoc())
        << "the file defines " << models.size() << " models (" << names
        << "); choose one with --model";
  else
    mlir::emitError(module.getLoc())
        << "no model named '" << name << "'; the file defines " << names;
  return nullptr;
}

} // namespace attnc::driver
