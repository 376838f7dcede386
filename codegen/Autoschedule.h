//===- Autoschedule.h - Halide's autoschedulers on attnc's pipelines -*- C++ -*-===//
//
// This file declares how a pipeline is scheduled by one of the three
// autoschedulers Debian's Halide 14 ships as plugins (Mullapudi2016, Li2018,
// Adams2019) instead of by attn-tile: the baselines `attnc bench --schedule`
// compares attnc's schedules with. Codegen lowers the plain algorithm (the
// naive strategy) without a schedule step of its own
// (Lowering::autoscheduled); the autoscheduler then schedules every Func for
// the sizes of the run (estimates on every input, weight and output), the
// target and the threads.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_AUTOSCHEDULE_H
#define ATTNC_CODEGEN_AUTOSCHEDULE_H

#include <Halide.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attnc::codegen {

struct CodegenOptions;
struct TensorInfo;
class Lowering;

/// The options `--schedule` accepts for the autoschedulers, lower case.
std::vector<std::string> autoschedulerOptions();

/// Halide's name of the autoscheduler that `--schedule option` names
/// (`mullapudi2016` -> `Mullapudi2016`), or "" when it names none.
std::string autoschedulerName(const std::string &option);

/// Schedules `pipeline` (lowered by `lowering` with options.autoscheduler)
/// with that autoscheduler for inputs and outputs of these shapes (MLIR
/// order, one per lowering.inputs and lowering.outputs): loads its plugin
/// once per process, sets the estimates and runs it. "" on success, or why
/// it could not (a plugin that is missing, the autoscheduler's error).
std::string autoschedule(const Lowering &lowering, Halide::Pipeline &pipeline,
                         const CodegenOptions &options,
                         const std::vector<std::vector<int64_t>> &inputShapes,
                         const std::vector<std::vector<int64_t>> &outputShapes);
/// The same with the shapes that options.estimates give the runtime dims.
std::string autoschedule(const Lowering &lowering, Halide::Pipeline &pipeline,
                         const CodegenOptions &options);

/// The shape the autoscheduler schedules `info` (the model's `role`) for:
/// boundShape's with `dims` (Jit.h); "" or its error, saying that the
/// autoscheduler needs the run's sizes.
std::string autoscheduleShape(const TensorInfo &info, const std::string &role,
                              const std::map<std::string, int64_t> &dims,
                              std::vector<int64_t> &shape);

} // namespace attnc::codegen

#endif // ATTNC_CODEGEN_AUTOSCHEDULE_H
