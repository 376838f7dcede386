//===- Autoschedule.cpp - Halide's autoschedulers on attnc's pipelines ----===//
//
// This file implements scheduling a lowered pipeline with one of Halide 14's
// autoscheduler plugins (see Autoschedule.h).
//
//===----------------------------------------------------------------------===//
#include "codegen/Autoschedule.h"
#include "codegen/Jit.h"
#include "codegen/LoweringImpl.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <set>

#ifndef ATTNC_HALIDE_AUTOSCHEDULER_DIR
#define ATTNC_HALIDE_AUTOSCHEDULER_DIR "/usr/lib/x86_64-linux-gnu/halide14"
#endif

namespace attnc::codegen {

using namespace Halide;

/// Halide's names of the autoschedulers Debian's Halide 14 ships.
static const char *const kAutoschedulers[] = {"Mullapudi2016", "Li2018",
                                              "Adams2019"};

static std::string lower(std::string text) {
  for (char &c : text)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::vector<std::string> autoschedulerOptions() {
  std::vector<std::string> options;
  for (const char *name : kAutoschedulers)
    options.push_back(lower(name));
  return options;
}

std::string autoschedulerName(const std::string &option) {
  for (const char *name : kAutoschedulers)
    if (lower(name) == option)
      return name;
  return "";
}

/// Loads the plugin that registers `name` with Halide, once per process
/// (registering a name twice is an error in Halide). "" or why not.
static std::string loadPlugin(const std::string &name) {
  static std::mutex mutex;
  static std::set<std::string> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded.count(name))
    return "";
  std::string path = std::string(ATTNC_HALIDE_AUTOSCHEDULER_DIR) +
                     "/libautoschedule_" + lower(name) + ".so";
  if (access(path.c_str(), R_OK) != 0)
    return "Halide's " + name + " autoscheduler is not installed (" + path +
           " is missing; Debian's libhalide14-0-dev ships it)";
  try {
    load_plugin(path);
  } catch (const Error &error) {
    return "cannot load " + path + ": " + error.what();
  }
  loaded.insert(name);
  return "";
}

std::string autoscheduleShape(const TensorInfo &info, const std::string &role,
                              const std::map<std::string, int64_t> &dims,
                              std::vector<int64_t> &shape) {
  runtime::Result bound = boundShape(info, role, dims, shape);
  return bound.ok() ? "" : "the autoscheduler needs the run's sizes: " +
                               bound.message;
}

/// The estimate of a tensor of `shape` (MLIR order): Halide's region,
/// innermost dim first, each from 0.
static Region estimateOf(const std::vector<int64_t> &shape) {
  Region region;
  for (auto it = shape.rbegin(); it != shape.rend(); ++it)
    region.emplace_back(0, int(*it));
  return region;
}

/// The last-level cache's size (bytes), or Halide's generic guess.
static uint64_t lastLevelCache() {
  long bytes = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (bytes <= 0)
    bytes = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return bytes > 0 ? uint64_t(bytes) : MachineParams::generic().last_level_cache_size;
}

std::string autoschedule(const Lowering &lowering, Pipeline &pipeline,
                         const CodegenOptions &options) {
  std::vector<std::vector<int64_t>> inputShapes(lowering.inputs.size()),
      outputShapes(lowering.outputs.size());
  for (size_t i = 0; i < inputShapes.size(); ++i)
    if (std::string error = autoscheduleShape(
            lowering.inputs[i], "input", options.estimates, inputShapes[i]);
        !error.empty())
      return error;
  for (size_t i = 0; i < outputShapes.size(); ++i)
    if (std::string error = autoscheduleShape(
            lowering.outputs[i], "output", options.estimates, outputShapes[i]);
        !error.empty())
      return error;
  return autoschedule(lowering, pipeline, options, inputShapes, outputShapes);
}

std::string autoschedule(const Lowering &lowering, Pipeline &pipeline,
                         const CodegenOptions &options,
                         const std::vector<std::vector<int64_t>> &inputShapes,
                         const std::vector<std::vector<int64_t>> &outputShapes) {
  const std::string &name = options.autoscheduler;
  if (std::string error = loadPlugin(name); !error.empty())
    return error;
  for (size_t i = 0; i < lowering.inputParams.size(); ++i) {
    ImageParam param = lowering.inputParams[i];
    param.set_estimates(estimateOf(inputShapes.at(i)));
  }
  for (size_t i = 0; i < lowering.weightParams.size(); ++i) {
    ImageParam param = lowering.weightParams[i];
    param.set_estimates(estimateOf(lowering.weights[i].shape));
  }
  for (size_t i = 0; i < lowering.outputFuncs.size(); ++i) {
    Func out = lowering.outputFuncs[i];
    out.set_estimates(estimateOf(outputShapes.at(i)));
  }
  // Halide's generic balance (40: a load from the last-level cache costs as
  // much as 40 arithmetic operations); this machine's threads and cache.
  MachineParams machine(std::max(1, options.autoscheduleThreads),
                        lastLevelCache(), 40);
  try {
    AutoSchedulerResults results =
        pipeline.auto_schedule(name, options.autoscheduleTarget, machine);
    if (getenv("ATTNC_DEBUG_AUTOSCHEDULE"))
      fprintf(stderr, "%s\n", results.schedule_source.c_str());
  } catch (const Error &error) {
    return "Halide's " + name + " autoscheduler failed: " + error.what();
  }
  return "";
}

} // namespace attnc::codegen
