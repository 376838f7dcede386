//===- Commands.h - attnc's subcommands ----------------------------*- C++ -*-===//
//
// This file declares the options shared by `attnc run` and `attnc bench`
// and the functions that carry out each subcommand. attnc.cpp parses the
// command line into these and calls them.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TOOLS_ATTNC_COMMANDS_H
#define ATTNC_TOOLS_ATTNC_COMMANDS_H

#include "codegen/CompileCache.h"
#include "codegen/Jit.h"
#include "runtime/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace attnc::driver {

/// What `run` and `bench` need to load, bind and execute a model.
struct RunOptions {
  std::string file;
  std::string model;
  std::string weights;              ///< safetensors path, or ""
  int64_t randomWeights = -1;       ///< seed, or -1
  std::vector<std::string> inputs;  ///< NAME=FILE.npy
  std::vector<std::string> outputs; ///< NAME=FILE.npy
  int64_t randomInputs = -1;        ///< seed, or -1
  std::vector<std::string> dims;    ///< NAME=SIZE for random inputs
  int threads = 0;                  ///< 0: all cores
  std::string target = "host";
  std::string schedule = "default";
  std::string saveWeights;          ///< write the weights used, or ""
  codegen::CacheOptions cache;      ///< --cache-dir, --no-cache
  std::string tuningDb;             ///< --tuning-db, or ""
  int64_t streamRows = 0;           ///< --stream-rows, or 0 (whole)
  // bench only
  int warmup = 2;
  int iterations = 10;
  double minSeconds = 1.0;
};

/// The one place where a command's failure (the runtime's status and
/// message: files, tensors, sizes, the kernel) reaches the user, as
/// `error: MESSAGE` on stderr; returns the exit status 1.
int commandFail(const runtime::Result &result);
/// The threads a run's schedules are for: `threads`, which then also sizes
/// Halide's thread pool (HL_NUM_THREADS), or all cores when it is 0.
int runThreads(int threads);
/// A usage error of the command line (ATTN_ERROR_ARGUMENT).
runtime::Result commandUsage(std::string message);
/// The weights `options` name (--weights or --random-weights) for `model`;
/// a model with weights and neither option is ATTN_ERROR_MISSING.
runtime::Result loadRunWeights(const RunOptions &options,
                               const codegen::ModelPipeline &model,
                               codegen::TensorMap &weights);

/// `attnc run`: returns the process exit code.
int runCommand(const RunOptions &options);
/// `attnc bench`: returns the process exit code.
int benchCommand(const RunOptions &options);

/// What `attnc generate` needs: the model and weights as `run` takes them
/// (file, model, weights, random weights, threads, cache, stream rows),
/// and the decoding.
struct GenerateOptions {
  RunOptions run;
  std::string promptIds;         ///< `1,2,3`, or ""
  int64_t context = 0;           ///< a random prompt of this many ids
  int64_t steps = 16;            ///< tokens to generate
  std::string sample = "greedy"; ///< greedy or random (softmax, `seed`)
  uint64_t seed = 1;             ///< of the sampling and the random prompt
  bool bench = false;            ///< timings only, not the ids
};

/// `attnc generate`: returns the process exit code.
int generateCommand(const GenerateOptions &options);

/// What `attnc compile` needs.
struct CompileOptions {
  std::string file;
  std::string model;
  std::string target = "host";
  std::string outputDir;
  std::string name; ///< Files and C functions are named after it; "" = model.
  std::string schedule = "default";
  /// --tuning-db, or "": the largest sizes tuned (a library serves every
  /// length).
  std::string tuningDb;
  /// --decode: the library also decodes incrementally (codegen/Aot.h).
  bool decode = false;
};

/// `attnc compile`: writes lib<model>.a and <model>.h; returns the exit code.
int compileCommand(const CompileOptions &options);

/// What `attnc tune` was given (checked by tuneCommand).
struct TuneCommandOptions {
  std::string file;
  std::string model;
  std::string target = "host";
  std::vector<std::string> dims; ///< NAME=SIZE[,SIZE...]
  std::string db;
  std::string budget;            ///< `10m`, `90s`, `1h`, or ""
  int64_t trials = 0;            ///< 0: none given
  bool resume = false;
  int threads = 0;
  double minSeconds = 0.3;
  double logEverySeconds = 60; ///< Progress lines in a log (--log-every).
  uint64_t seed = 1;
  std::string order = "model"; ///< model or random
  bool json = false;
  codegen::CacheOptions cache;
};

/// `attnc tune`: returns the process exit code.
int tuneCommand(const TuneCommandOptions &options);

/// `attnc db ACTION FILE [ARGS...]` (show, check, export, import, merge);
/// `output` is export's -o. Returns the process exit code.
int dbCommand(const std::vector<std::string> &args, const std::string &output);

} // namespace attnc::driver

#endif // ATTNC_TOOLS_ATTNC_COMMANDS_H
