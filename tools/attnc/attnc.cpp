//===- attnc.cpp - the attnc command-line driver --------------------------===//
//
// This file is the thin driver of attnc: it parses flags and calls the
// subcommands (Commands.h) or prints a stage of the compiler:
//
//   attnc model.attn --emit=ast|attn|attn-primitives   print a stage
//   attnc run model.attn [options]                     run through the JIT
//   attnc bench model.attn [options]                   time it, GFLOP/s
//   attnc compile model.attn --target T -o DIR         static library + header
//
// Errors are printed as file:line:col with the source line and a caret;
// the exit code is 1 on any error.
//
//===----------------------------------------------------------------------===//
#include "tools/attnc/Commands.h"
#include "driver/Session.h"
#include "tune/Team.h"
#include "tune/TuningDb.h"

#include "mlir/IR/AsmState.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#ifdef ATTNC_WITH_MIMALLOC
#include <mimalloc.h>
#endif

using namespace attnc;
namespace cl = llvm::cl;

namespace {
/// attnc's own options: --help lists these, not the LLVM and MLIR options
/// the linked libraries register.
cl::OptionCategory attncOptions("attnc options");

enum class Emit { Ast, Attn, Primitives, Scheduled, HalideStmt };

cl::SubCommand runCmd("run", "Run a model through the JIT on .npy or random "
                             "inputs");
cl::SubCommand benchCmd("bench", "Time a model through the JIT and report "
                                 "GFLOP/s");
cl::SubCommand compileCmd("compile", "Compile a model to lib<model>.a and "
                                     "<model>.h");
cl::SubCommand tuneCmd("tune", "Search schedules for this machine and keep "
                               "every measurement in a tuning database");
cl::SubCommand generateCmd("generate", "Generate tokens with a causal "
                                       "language model, decoded one token "
                                       "at a time");
cl::SubCommand dbCmd("db", "Show, check, export, import or merge a tuning "
                           "database: attnc db show|check|export|import|merge "
                           "FILE [ARGS...]");

cl::opt<std::string> inputFile(cl::cat(attncOptions), cl::Positional,
                               cl::desc("<model.attn>"), cl::Required,
                               cl::sub(cl::SubCommand::getTopLevel()),
                               cl::sub(runCmd),
                               cl::sub(generateCmd), cl::sub(benchCmd),
                               cl::sub(compileCmd), cl::sub(tuneCmd));
cl::opt<std::string> modelName(cl::cat(attncOptions), "model",
                               cl::desc("Model to use when the file "
                                        "defines several"),
                               cl::value_desc("name"),
                               cl::sub(cl::SubCommand::getTopLevel()),
                               cl::sub(runCmd),
                               cl::sub(generateCmd), cl::sub(benchCmd),
                               cl::sub(compileCmd), cl::sub(tuneCmd));
cl::opt<Emit> emit(
    cl::cat(attncOptions), "emit", cl::desc("Stage to print"),
    cl::init(Emit::Attn),
    cl::values(clEnumValN(Emit::Ast, "ast", "the parsed AST"),
               clEnumValN(Emit::Attn, "attn",
                          "the attn dialect after import (default)"),
               clEnumValN(Emit::Primitives, "attn-primitives",
                          "the attn dialect after attn-expand-layers and "
                          "attn-chunk"),
               clEnumValN(Emit::Scheduled, "attn-scheduled",
                          "primitive attn IR with attn-tile's schedules for "
                          "--target"),
               clEnumValN(Emit::HalideStmt, "halide-stmt",
                          "Halide's lowered statement (loop nests) for "
                          "--target")));
cl::opt<std::string> outputFile(cl::cat(attncOptions), "o",
                                cl::desc("Output file (emit) or "
                                         "directory (compile)"),
                                cl::value_desc("path"), cl::init("-"),
                                cl::sub(cl::SubCommand::getTopLevel()),
                                cl::sub(compileCmd), cl::sub(dbCmd));
cl::opt<std::string> libraryName(cl::cat(attncOptions), "name",
                                 cl::desc("Name of the generated "
                                          "library, header and C "
                                          "functions (default: the "
                                          "model's name)"),
                                 cl::value_desc("identifier"),
                                 cl::sub(compileCmd));
cl::opt<bool> debugInfo(cl::cat(attncOptions), "mlir-print-debuginfo",
                        cl::desc("Print .attn source locations"),
                        cl::init(false));

// run / bench
cl::opt<std::string> weightsFile(cl::cat(attncOptions), "weights",
                                 cl::desc("Weights (safetensors)"),
                                 cl::value_desc("file"), cl::sub(runCmd),
                                 cl::sub(generateCmd),
                                 cl::sub(benchCmd));
cl::opt<int64_t> randomWeights(cl::cat(attncOptions), "random-weights",
                               cl::desc("Use deterministic random weights"),
                               cl::value_desc("seed"), cl::init(-1),
                               cl::sub(runCmd),
                               cl::sub(generateCmd), cl::sub(benchCmd));
cl::list<std::string> inputs(cl::cat(attncOptions), "input",
                             cl::desc("An input (.npy, f32, C order)"),
                             cl::value_desc("name=file.npy"), cl::sub(runCmd),
                             cl::sub(benchCmd));
cl::list<std::string> outputs(cl::cat(attncOptions), "output",
                              cl::desc("Write an output (.npy)"),
                              cl::value_desc("name=file.npy"), cl::sub(runCmd));
cl::opt<int64_t> randomInputs(cl::cat(attncOptions), "random-inputs",
                              cl::desc("Generate the inputs not given with "
                                       "--input (N(0,1), deterministic)"),
                              cl::value_desc("seed"), cl::init(-1),
                              cl::sub(runCmd), cl::sub(benchCmd));
cl::list<std::string> dims(cl::cat(attncOptions), "dim",
                           cl::desc("Size of a runtime dim for "
                                    "generated inputs"),
                           cl::value_desc("name=size"), cl::sub(runCmd),
                           cl::sub(benchCmd));
cl::opt<int> threads(cl::cat(attncOptions), "threads",
                     cl::desc("Worker threads (default: all cores)"),
                     cl::init(0), cl::sub(runCmd),
                     cl::sub(generateCmd), cl::sub(benchCmd),
                     cl::sub(tuneCmd));
cl::opt<std::string> targetSpec(cl::cat(attncOptions), "target",
                                cl::desc("host, x86-64-linux-avx2, "
                                         "host-cuda-cuda_capability_80, ... (a "
                                         "Halide target) or a target family: "
                                         "generic, x86-64-avx2, x86-64-avx512, "
                                         "cuda"),
                                cl::init("host"), cl::sub(runCmd),
                                cl::sub(benchCmd), cl::sub(compileCmd),
                                cl::sub(cl::SubCommand::getTopLevel()), cl::sub(tuneCmd));
cl::opt<std::string> schedule(cl::cat(attncOptions), "schedule",
                              cl::desc("default or naive; with run and bench also tuned (with --tuning-db) or Halide's autoschedulers mullapudi2016, li2018 or adams2019"), cl::init("default"),
                              cl::sub(runCmd), cl::sub(benchCmd),
                              cl::sub(compileCmd),
                              cl::sub(cl::SubCommand::getTopLevel()));
cl::opt<std::string> saveWeights(cl::cat(attncOptions), "save-weights",
                                 cl::desc("Write the weights used to a "
                                          "safetensors file"),
                                 cl::value_desc("file"), cl::sub(runCmd));
cl::opt<std::string> cacheDir(cl::cat(attncOptions), "cache-dir",
                              cl::desc("Keep compiled kernels here (default: "
                                       "$ATTNC_CACHE_DIR, else "
                                       "$XDG_CACHE_HOME/attnc, else "
                                       "~/.cache/attnc)"),
                              cl::value_desc("dir"), cl::sub(runCmd),
                              cl::sub(generateCmd),
                              cl::sub(benchCmd), cl::sub(tuneCmd));
cl::opt<std::string> tuningDb(cl::cat(attncOptions), "tuning-db",
                              cl::desc("Use the fastest schedules this "
                                       "tuning database (attnc tune --db) "
                                       "recorded for the model's kernels"),
                              cl::value_desc("file"), cl::sub(runCmd),
                              cl::sub(benchCmd), cl::sub(compileCmd));
// tune
cl::list<std::string> tuneDims(cl::cat(attncOptions), "dim",
                               cl::desc("Runtime dim sizes to tune for, e.g. "
                                        "n=1024,8192 (every combination)"),
                               cl::value_desc("name=size,..."),
                               cl::sub(tuneCmd));
cl::opt<std::string> tuneDb(cl::cat(attncOptions), "db",
                            cl::desc("The tuning database to write (created "
                                     "when missing)"),
                            cl::value_desc("file"), cl::sub(tuneCmd));
cl::opt<std::string> budget(cl::cat(attncOptions), "budget",
                            cl::desc("Wall-clock limit: 10m, 90s, 1h"),
                            cl::value_desc("time"), cl::sub(tuneCmd));
cl::opt<int64_t> trials(cl::cat(attncOptions), "trials",
                        cl::desc("Candidates to measure per set of dims"),
                        cl::init(0), cl::sub(tuneCmd));
cl::opt<bool> resume(cl::cat(attncOptions), "resume",
                     cl::desc("Continue the latest run of this model in the "
                              "database (recorded trials are not measured "
                              "again)"),
                     cl::init(false), cl::sub(tuneCmd));
cl::opt<bool> decodeLibrary(cl::cat(attncOptions), "decode",
                            cl::desc("Also compile incremental decoding of "
                                     "a causal model: <name>_state_new, "
                                     "_prefill, _step"),
                            cl::sub(compileCmd));
cl::opt<bool> jsonOutput(cl::cat(attncOptions), "json",
                         cl::desc("Print the result as JSON"), cl::init(false),
                         cl::sub(tuneCmd));
cl::opt<double> tuneMinSeconds(cl::cat(attncOptions), "min-time",
                               cl::desc("Time each candidate for at least "
                                        "this many seconds (and 5 runs)"),
                               cl::init(0.3), cl::sub(tuneCmd));
cl::opt<double> tuneLogEvery(
    cl::cat(attncOptions), "log-every",
    cl::desc("When stderr is not a terminal: a progress line (trials, best "
             "so far, time left) at most every this many seconds while a "
             "kernel is tuned, besides the line per kernel (0: every trial)"),
    cl::value_desc("seconds"), cl::init(60), cl::sub(tuneCmd));
cl::opt<std::string> tuneOrder(
    cl::cat(attncOptions), "order",
    cl::desc("The order candidates are measured in: model (the cost model's "
             "ranking, with points it deems over 2x slower than the default "
             "last) or random (no ranking: to measure what the model gains)"),
    cl::value_desc("model|random"), cl::init("model"), cl::sub(tuneCmd));
cl::opt<uint64_t> seed(cl::cat(attncOptions), "seed",
                       cl::desc("Seed of the search, weights and inputs "
                                "(tune), or of the sampling and the random "
                                "prompt (generate)"),
                       cl::init(1), cl::sub(tuneCmd), cl::sub(generateCmd));
// db
cl::list<std::string> dbArgs(cl::cat(attncOptions), cl::Positional,
                             cl::desc("show|check|export|import|merge FILE "
                                      "[ARGS...]"),
                             cl::OneOrMore, cl::sub(dbCmd));

cl::opt<bool> noCache(cl::cat(attncOptions), "no-cache",
                      cl::desc("Compile every kernel anew; read and write "
                               "no compile cache"),
                      cl::init(false), cl::sub(runCmd),
                      cl::sub(generateCmd), cl::sub(benchCmd),
                      cl::sub(tuneCmd));
cl::opt<int64_t> streamRows(
    cl::cat(attncOptions), "stream-rows",
    cl::desc("Run a chunked model (FLASH, linear attention) over blocks of "
             "this many rows of its sequence, carrying the chunk prefix "
             "between them (non-causal: two sweeps, the first summing the "
             "chunk states): memory of a block, not of the sequence (0: "
             "whole; generate: 0 is blocks of the model's chunk)"),
    cl::value_desc("rows"), cl::init(0), cl::sub(runCmd),
    cl::sub(generateCmd), cl::sub(benchCmd));
cl::opt<int> warmup(cl::cat(attncOptions), "warmup",
                    cl::desc("Untimed runs first"), cl::init(2),
                    cl::sub(benchCmd));
cl::opt<int> iterations(cl::cat(attncOptions), "iterations",
                        cl::desc("Timed runs (at least)"), cl::init(10),
                        cl::sub(benchCmd));
cl::opt<double> minSeconds(cl::cat(attncOptions), "min-time",
                           cl::desc("Keep timing for at least "
                                    "this many seconds"),
                           cl::init(1.0), cl::sub(benchCmd));

// generate
cl::opt<std::string> promptIds(cl::cat(attncOptions), "prompt-ids",
                               cl::desc("The prompt's token ids"),
                               cl::value_desc("id,id,..."),
                               cl::sub(generateCmd));
cl::opt<int64_t> context(cl::cat(attncOptions), "context",
                         cl::desc("A prompt of this many random ids "
                                  "(--seed), to time steps at a context"),
                         cl::value_desc("tokens"), cl::init(0),
                         cl::sub(generateCmd));
cl::opt<int64_t> steps(cl::cat(attncOptions), "steps",
                       cl::desc("Tokens to generate"), cl::init(16),
                       cl::sub(generateCmd));
cl::opt<std::string> sample(cl::cat(attncOptions), "sample",
                            cl::desc("greedy (the largest logit) or random "
                                     "(drawn from the softmax, --seed)"),
                            cl::value_desc("greedy|random"),
                            cl::init("greedy"), cl::sub(generateCmd));
cl::opt<bool> benchGenerate(cl::cat(attncOptions), "bench",
                            cl::desc("Print the timings and the state's "
                                     "bytes only, not the ids"),
                            cl::init(false), cl::sub(generateCmd));

/// The session stage whose IR `--emit` prints.
driver::Stage stageFor(Emit kind) {
  switch (kind) {
  case Emit::Ast:
  case Emit::Attn:
    return driver::Stage::Imported;
  case Emit::Primitives:
    return driver::Stage::Primitives;
  case Emit::Scheduled:
    return driver::Stage::Scheduled;
  case Emit::HalideStmt:
    return driver::Stage::Pipeline;
  }
  return driver::Stage::Imported;
}

int emitAst(llvm::raw_ostream &os) {
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(inputFile, true);
  if (std::error_code ec = buffer.getError()) {
    llvm::WithColor::error(llvm::errs(), "attnc")
        << "cannot open '" << inputFile << "': " << ec.message() << "\n";
    return 1;
  }
  dsl::FrontendResult result = dsl::runFrontend(
      std::move(*buffer), dsl::FrontendStage::Parse, llvm::errs());
  if (!result.ok)
    return 1;
  dsl::dumpAST(*result.ast, *result.sourceMgr, os);
  return 0;
}

int emitCommand() {
  std::string errorMessage;
  auto output = mlir::openOutputFile(outputFile, &errorMessage);
  if (!output) {
    llvm::WithColor::error(llvm::errs(), "attnc") << errorMessage << "\n";
    return 1;
  }
  if (emit == Emit::Ast) {
    if (emitAst(output->os()))
      return 1;
    output->keep();
    return 0;
  }
  std::optional<driver::SchedulePolicy> policy =
      driver::parseSchedulePolicy(schedule);
  if (!policy) {
    llvm::WithColor::error(llvm::errs(), "attnc")
        << driver::unknownSchedulePolicy(schedule) << "\n";
    return 1;
  }
  driver::Session session({modelName, targetSpec, *policy}, llvm::errs());
  if (!session.loadFile(inputFile))
    return 1;
  if (emit == Emit::HalideStmt) {
    if (!session.printStmt(output->os()))
      return 1;
    output->keep();
    return 0;
  }
  if (!session.runTo(stageFor(emit)))
    return 1;
  mlir::OpPrintingFlags flags;
  if (debugInfo)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  session.module()->print(output->os(), flags);
  output->os() << "\n";
  output->keep();
  return 0;
}

driver::RunOptions runOptions() {
  driver::RunOptions o;
  o.file = inputFile;
  o.model = modelName;
  o.weights = weightsFile;
  o.randomWeights = randomWeights;
  o.inputs = inputs;
  o.outputs = outputs;
  o.randomInputs = randomInputs;
  o.dims = dims;
  o.threads = threads;
  o.target = targetSpec;
  o.schedule = schedule;
  o.saveWeights = saveWeights;
  o.warmup = warmup;
  o.iterations = iterations;
  o.minSeconds = minSeconds;
  o.tuningDb = tuningDb;
  o.streamRows = streamRows;
  o.cache.enabled = !noCache;
  o.cache.directory = cacheDir;
  return o;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(attncOptions);
  cl::SetVersionPrinter([](llvm::raw_ostream &os) {
    os << "attnc " << attnc::tune::attncVersion() << " (LLVM "
       << LLVM_VERSION_STRING;
#ifdef ATTNC_WITH_MIMALLOC
    // The allocator compile times depend on (tools/attnc/CMakeLists.txt).
    int version = mi_version();
    os << ", mimalloc " << version / 100 << "." << version / 10 % 10 << "."
       << version % 10;
#endif
    // What `mpirun -np K attnc tune` needs (tune/Team.h).
    if (std::string mpi = attnc::tune::Team::mpiLibrary(); !mpi.empty())
      os << ", " << mpi;
    os << ")\n";
  });
  cl::ParseCommandLineOptions(argc, argv,
                              "attnc: a compiler for attention layers\n");
  if (runCmd)
    return driver::runCommand(runOptions());
  if (benchCmd)
    return driver::benchCommand(runOptions());
  if (tuneCmd) {
    driver::TuneCommandOptions o;
    o.file = inputFile;
    o.model = modelName;
    o.target = targetSpec;
    o.dims = tuneDims;
    o.db = tuneDb;
    o.budget = budget;
    o.trials = trials;
    o.resume = resume;
    o.threads = threads;
    o.minSeconds = tuneMinSeconds;
    o.logEverySeconds = tuneLogEvery;
    o.seed = seed;
    o.order = tuneOrder;
    o.json = jsonOutput;
    o.cache.enabled = !noCache;
    o.cache.directory = cacheDir;
    return driver::tuneCommand(o);
  }
  if (generateCmd) {
    driver::GenerateOptions o;
    o.run = runOptions();
    o.promptIds = promptIds;
    o.context = context;
    o.steps = steps;
    o.sample = sample;
    o.seed = seed;
    o.bench = benchGenerate;
    return driver::generateCommand(o);
  }
  if (dbCmd)
    return driver::dbCommand(dbArgs, outputFile == "-" ? std::string()
                                                       : std::string(outputFile));
  if (compileCmd) {
    driver::CompileOptions o;
    o.file = inputFile;
    o.model = modelName;
    o.target = targetSpec;
    o.outputDir = outputFile == "-" ? "." : std::string(outputFile);
    o.schedule = schedule;
    o.name = libraryName;
    o.tuningDb = tuningDb;
    o.decode = decodeLibrary;
    return driver::compileCommand(o);
  }
  return emitCommand();
}
