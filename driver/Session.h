//===- Session.h - one compilation of one model -------------------*- C++ -*-===//
//
// This file declares Session, the one code path that compiles a model:
// it owns the MLIR context, the source (the front end's result or parsed
// IR), the layer-level copy of the model, the target and the options, and
// runs the stages in order up to the one a client asks for:
//
//   load (.attn or IR) → Imported → Primitives → Scheduled → Pipeline
//                                                             ├ jit()
//                                                             ├ compileAot()
//                                                             └ printStmt()
//
// `attnc` (emit, run, bench, compile), attnc-bench, the end-to-end test
// helper and the model generator's checker are thin clients: none of them
// chains passes or builds pipelines itself. The schedule policy and the
// target are parsed once, here.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DRIVER_SESSION_H
#define ATTNC_DRIVER_SESSION_H

#include "codegen/Codegen.h"
#include "codegen/Jit.h"
#include "dsl/Import/Frontend.h"
#include "passes/Passes.h"
#include "target/TargetModel.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <Halide.h>

#include <functional>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class SourceMgr;
} // namespace llvm

namespace mlir {
class SourceMgrDiagnosticHandler;
} // namespace mlir

namespace attnc::driver {

/// The stages of a compilation, in order. Each names the IR a session holds
/// once it has run that far (and the `--emit` that prints it).
enum class Stage {
  Empty,      ///< Nothing loaded yet.
  Imported,   ///< Layer-level attn IR (`--emit=attn`).
  Primitives, ///< After attn-lower-to-primitives (`--emit=attn-primitives`).
  Scheduled,  ///< After attn-schedule{target, policy}
              ///< (`--emit=attn-scheduled`).
  Pipeline,   ///< The model's Halide pipeline (`--emit=halide-stmt`, JIT, AOT).
};

/// How schedules are chosen: attn-tile's cost model, or the naive baseline
/// (`strategy = naive`: every stage at root, serial, scalar); a policy of
/// the scheduling pass (passes/Passes.h), not of codegen.
using mlir::attn::parseSchedulePolicy;
using mlir::attn::unknownSchedulePolicy;
using mlir::attn::SchedulePolicy;

/// What a session compiles for.
struct SessionOptions {
  std::string model;      ///< The model to compile; "" = the file's only one.
  /// A Halide target string or a target family (TargetModel::parse).
  std::string target = "host";
  SchedulePolicy schedule = SchedulePolicy::Default;
  /// With a GPU target: run its schedules' loop nests on the host (blocks in
  /// parallel, threads serially), to check what they compute without a GPU
  /// (tests; CodegenOptions::gpuOnHost).
  bool gpuOnHost = false;
  /// Where the JIT keeps compiled kernels (codegen/CompileCache.h).
  codegen::CacheOptions cache;
  /// A tuning database (`attnc tune --db`): after attn-tile, its fastest
  /// schedules replace the defaults (attn-apply-tuning), chosen for the
  /// runtime dims `tuningDims` (empty: the largest tuned sizes).
  std::string tuningDb;
  std::map<std::string, int64_t> tuningDims;
  /// Halide's autoscheduler (codegen/Autoschedule.h) instead of attn-tile's
  /// schedules, or "". With one, `schedule` is Naive (the plain algorithm
  /// for the autoscheduler to schedule) and `estimates` and `threads` are
  /// the sizes and threads it schedules for.
  std::string autoscheduler;
  std::map<std::string, int64_t> estimates;
  int threads = 1;
  /// > 0: the JIT runs the model over blocks of this many rows
  /// (CodegenOptions::streamRows, codegen/Stream.h).
  int64_t streamRows = 0;
  /// Compile for incremental decoding (codegen/Decode.h): streamed, in
  /// blocks of `streamRows` rows or, when 0, the smallest blocks the model
  /// streams in (codegen::smallestStreamRows: its chunk).
  bool decode = false;
};

/// Registers every dialect attnc's IR uses on `context`, and turns off
/// MLIR's dump of an op after an error reported on it.
void prepareContext(mlir::MLIRContext &context);

/// One compilation of one model. Diagnostics go to the stream given at
/// construction: the front end's with source lines and carets, then MLIR's
/// at .attn locations. Every step returns false after reporting its error.
class Session {
public:
  Session(SessionOptions options, llvm::raw_ostream &diagOS);
  ~Session();
  Session(const Session &) = delete;
  Session &operator=(const Session &) = delete;

  /// Runs the front end on the .attn file at `path` ("-" for stdin) up to
  /// import (stage Imported).
  bool loadFile(const std::string &path);
  /// The same on .attn text named `bufferName` in diagnostics.
  bool loadSource(llvm::StringRef source, llvm::StringRef bufferName);
  /// Parses attn IR text (one model function, layer or primitive level).
  bool loadIR(llvm::StringRef text, llvm::StringRef bufferName = "<ir>");

  /// Runs the stages after the current one up to `stage`; true at once when
  /// the session is already there.
  bool runTo(Stage stage);
  Stage stage() const { return current; }

  const SessionOptions &options() const { return opts; }
  mlir::MLIRContext &context() { return *ctx; }
  /// The front end's result (.attn sources; its AST and checked models).
  const dsl::FrontendResult &frontend() const { return front; }
  /// The IR as of the current stage.
  mlir::ModuleOp module();
  /// The selected model in module() (from stage Pipeline on: until then
  /// the stages transform every model of the file).
  mlir::func::FuncOp model() { return selected; }
  /// The selected model before layer expansion (from stage Pipeline on):
  /// what FLOP counts and the fp64 reference read.
  mlir::func::FuncOp layerModel() { return layerSelected; }
  /// The target, parsed once (valid after a successful load): the Halide
  /// target codegen compiles for and the budgets attn-tile fits.
  const target::TargetModel &target() const { return targetModel; }
  /// What codegen is asked to do for this session's policy and target.
  codegen::CodegenOptions codegenOptions() const;

  /// The model's pipeline (after runTo(Stage::Pipeline)).
  codegen::ModelPipeline &pipeline() { return *built; }

  /// Runs to Pipeline and JIT-compiles it for the host; the session gives up
  /// its pipeline to the result. Null on failure (a GPU target needs a
  /// usable GPU unless gpuOnHost).
  std::unique_ptr<codegen::JitModel> jit();
  /// Runs to Pipeline and compiles it for the target into `outputDir`
  /// (created if missing; lib<name>.a, <name>.h); `name` "" = the model's. The files written are
  /// appended to `written`. With a tuning database (and no tuningDims) that
  /// holds schedules tuned at several sizes of the model's runtime dims,
  /// the library holds one variant per tuned size and dispatches on the
  /// run's sizes (codegen::compileAot). With `decode`, the library also
  /// decodes incrementally (<name>_state_new, _prefill, _step): a model
  /// that does not stream is refused at the op.
  bool compileAot(const std::string &outputDir, const std::string &name,
                  std::vector<std::string> &written, bool decode = false);
  /// Runs to Pipeline and prints Halide's lowered statement for the target.
  bool printStmt(llvm::raw_ostream &os);

  /// Wall time of each compile stage this session ran, in milliseconds.
  struct CompileTimes {
    double mlir = 0;    ///< The pass pipelines (lower, schedule).
    double codegen = 0; ///< attn IR to Halide Funcs (the pipeline, or each kernel).
    double halide = 0;  ///< All of jit() after codegen: the sum of `stages`
                        ///< and what they leave out.
    /// jit()'s stages (Halide lowering, LLVM, link, load, runtime, in-memory
    /// JIT) and the compile cache's hits and misses.
    codegen::KernelCompileStats stages;
    size_t kernels = 1; ///< Halide pipelines compiled: one, or a program's kernels.
  };
  const CompileTimes &compileTimes() const { return times; }

private:
  bool imported(dsl::FrontendResult result);
  bool loaded(mlir::OwningOpRef<mlir::ModuleOp> ir);
  /// Reports a session-level error (no source location: a file that cannot
  /// be opened, a target that needs a GPU) as `error: ...`; false.
  bool error(const llvm::Twine &message);
  /// Emits errors at the selected model (codegen's compile steps).
  std::function<mlir::InFlightDiagnostic()> errorAtModel();
  bool select();
  bool lower();
  bool schedule();
  /// attn-schedule (and attn-apply-tuning for `tuningDims`) on `module`.
  bool scheduleModule(mlir::ModuleOp module,
                      const std::map<std::string, int64_t> &tuningDims);
  /// The tuned sizes of the database to build AOT variants for: those with
  /// the model's runtime dims, when there are two or more; else none.
  std::vector<std::map<std::string, int64_t>> variantSizes();
  bool buildPipeline();
  CompileTimes times;

  SessionOptions opts;
  llvm::raw_ostream &diagOS;
  std::unique_ptr<mlir::MLIRContext> ctx;
  dsl::FrontendResult front;
  std::unique_ptr<llvm::SourceMgr> irSourceMgr;
  std::unique_ptr<mlir::SourceMgrDiagnosticHandler> handler;
  mlir::OwningOpRef<mlir::ModuleOp> ir;          ///< IR-text sources
  mlir::OwningOpRef<mlir::ModuleOp> layerModule; ///< copy before expansion
  /// With a tuning database: a copy of the primitive IR before scheduling,
  /// to schedule again for other tuned sizes (compileAot's variants).
  mlir::OwningOpRef<mlir::ModuleOp> unscheduled;
  mlir::func::FuncOp selected, layerSelected;
  target::TargetModel targetModel;
  std::unique_ptr<codegen::ModelPipeline> built;
  Stage current = Stage::Empty;
};

/// The model called `name`, or the only model when `name` is empty. Emits
/// an error listing the models when there is no such (unique) model.
mlir::func::FuncOp findModel(mlir::ModuleOp module, llvm::StringRef name);

/// Forward FLOPs of one call of `model` (layer-level or primitive IR) with
/// the runtime dims bound as in `dims` (multiply-add = 2; spec §5 for the
/// layer templates, 2*M*K*N for products and 2*n*m*(dk+dv) per head for
/// attention otherwise).
double countFlops(mlir::func::FuncOp model,
                  const std::map<std::string, int64_t> &dims);

} // namespace attnc::driver

#endif // ATTNC_DRIVER_SESSION_H
