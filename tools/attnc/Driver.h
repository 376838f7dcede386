//===- Driver.h - the stages behind attnc's subcommands -----------*- C++ -*-===//
//
// This file declares the driver functions shared by attnc's subcommands,
// the end-to-end tests and the benchmarks: load a .attn file through the
// front end, lower it to primitive ops with the named pipeline, pick a
// model, and count its FLOPs by the formulas of the spec (§5).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TOOLS_ATTNC_DRIVER_H
#define ATTNC_TOOLS_ATTNC_DRIVER_H

#include "dsl/Import/Frontend.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <Halide.h>

#include <map>
#include <string>

namespace attnc::driver {

/// Registers every dialect attnc's IR uses on `context`.
void prepareContext(mlir::MLIRContext &context);

/// Runs the front end on the file at `path` ("-" for stdin) up to import.
/// Diagnostics go to `diagOS`; the result's `ok` says whether it worked.
dsl::FrontendResult loadFile(const std::string &path, mlir::MLIRContext &context,
                             llvm::raw_ostream &diagOS);

/// Runs the front end on a string (tests).
dsl::FrontendResult loadSource(llvm::StringRef source, llvm::StringRef name,
                               mlir::MLIRContext &context,
                               llvm::raw_ostream &diagOS);

/// Lowers imported IR in place to primitive ops (attn-lower-to-primitives).
mlir::LogicalResult lowerToPrimitives(mlir::ModuleOp module);

/// attn-tile's name for a Halide target: cuda, x86-64-avx512, x86-64-avx2
/// or generic.
std::string tileTargetFor(const Halide::Target &target);

/// Attaches the default schedules of `target` to primitive IR: attn-fuse,
/// then attn-tile.
mlir::LogicalResult scheduleFor(mlir::ModuleOp module,
                                const Halide::Target &target);

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

#endif // ATTNC_TOOLS_ATTNC_DRIVER_H
