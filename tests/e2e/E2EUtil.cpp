//===- E2EUtil.cpp - compile, run and compare models in tests -------------===//
//
// This file implements the end-to-end test helpers (see E2EUtil.h).
//
//===----------------------------------------------------------------------===//
#include "tests/e2e/E2EUtil.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

namespace attnc::e2e {

Halide::Target cudaScheduleTarget() {
  return Halide::get_host_target()
      .with_feature(Halide::Target::CUDA)
      .with_feature(Halide::Target::CUDACapability80);
}

static std::unique_ptr<CompiledModel>
finish(std::unique_ptr<CompiledModel> m, mlir::ModuleOp module,
       codegen::ScheduleKind schedule, const Halide::Target &scheduleTarget) {
  llvm::raw_string_ostream os(m->diagnostics);
  mlir::ScopedDiagnosticHandler handler(
      m->context.get(), [&](mlir::Diagnostic &diag) {
        os << diag.getLocation() << ": " << diag.str() << "\n";
        return mlir::success();
      });
  m->layerModule = mlir::cast<mlir::ModuleOp>(module->clone());
  mlir::func::FuncOp func = driver::findModel(module, "");
  if (!func || mlir::failed(driver::lowerToPrimitives(module)))
    return m;
  m->layerFunc = driver::findModel(*m->layerModule, func.getSymName());
  // The Default schedule runs with attn-tile's schedules, as attnc does.
  if (schedule == codegen::ScheduleKind::Default &&
      mlir::failed(driver::scheduleFor(module, scheduleTarget)))
    return m;
  codegen::CodegenOptions options;
  options.schedule = schedule;
  options.gpu = options.gpuOnHost = scheduleTarget.has_gpu_feature();
  m->jit = codegen::JitModel::create(func, options, Halide::get_host_target());
  return m;
}

std::unique_ptr<CompiledModel> compileAttn(const std::string &source,
                                           codegen::ScheduleKind schedule,
                                           const Halide::Target &scheduleTarget) {
  auto m = std::make_unique<CompiledModel>();
  m->context = std::make_unique<mlir::MLIRContext>();
  driver::prepareContext(*m->context);
  llvm::raw_string_ostream os(m->diagnostics);
  m->front = driver::loadSource(source, "test.attn", *m->context, os);
  if (!m->front.ok)
    return m;
  return finish(std::move(m), *m->front.module, schedule, scheduleTarget);
}

std::unique_ptr<CompiledModel> compileExample(const std::string &file,
                                              codegen::ScheduleKind schedule,
                                              const Halide::Target &scheduleTarget) {
  std::ifstream in(std::string(ATTNC_EXAMPLES_DIR) + "/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  return compileAttn(ss.str(), schedule, scheduleTarget);
}

std::unique_ptr<CompiledModel> compileIR(const std::string &text,
                                         codegen::ScheduleKind schedule,
                                         const Halide::Target &scheduleTarget) {
  auto m = std::make_unique<CompiledModel>();
  m->context = std::make_unique<mlir::MLIRContext>();
  driver::prepareContext(*m->context);
  m->parsedModule = mlir::parseSourceString<mlir::ModuleOp>(text, m->context.get());
  if (!m->parsedModule) {
    m->diagnostics = "cannot parse the IR";
    return m;
  }
  return finish(std::move(m), *m->parsedModule, schedule, scheduleTarget);
}

codegen::TensorMap randomInputs(const codegen::JitModel &model,
                                const std::map<std::string, int64_t> &dims,
                                uint64_t seed) {
  auto &pipeline = const_cast<codegen::JitModel &>(model).pipeline();
  std::vector<std::vector<int64_t>> shapes;
  std::string error;
  EXPECT_TRUE(codegen::inputShapes(pipeline.inputs(), dims, shapes, error))
      << error;
  codegen::TensorMap inputs;
  for (size_t i = 0; i < shapes.size(); ++i)
    inputs[pipeline.inputs()[i].name] =
        codegen::randomTensor(shapes[i], seed, pipeline.inputs()[i].name);
  return inputs;
}

codegen::TensorMap runJit(CompiledModel &model, const codegen::TensorMap &inputs,
                          const codegen::TensorMap &weights) {
  codegen::TensorMap outputs;
  std::string error;
  EXPECT_TRUE(model.jit->run(inputs, weights, outputs, error)) << error;
  return outputs;
}

std::map<std::string, ref::Tensor> runReference(CompiledModel &model,
                                                const codegen::TensorMap &inputs,
                                                const codegen::TensorMap &weights) {
  std::vector<ref::Tensor> in;
  for (const codegen::TensorInfo &info : model.jit->pipeline().inputs()) {
    const codegen::HostTensor &t = inputs.at(info.name);
    in.push_back(ref::Tensor::fromFloat(t.shape, t.data));
  }
  ref::WeightMap w;
  for (const auto &[name, t] : weights)
    w[name] = ref::Tensor::fromFloat(t.shape, t.data);
  std::vector<ref::Tensor> out = ref::evaluate(model.layerFunc, in, w);
  std::map<std::string, ref::Tensor> named;
  const auto &infos = model.jit->pipeline().outputs();
  for (size_t i = 0; i < out.size() && i < infos.size(); ++i)
    named[infos[i].name] = std::move(out[i]);
  return named;
}

double relativeError(const codegen::TensorMap &got,
                     const std::map<std::string, ref::Tensor> &want) {
  double worst = 0;
  for (const auto &[name, r] : want) {
    auto it = got.find(name);
    if (it == got.end() || it->second.shape != r.shape) {
      ADD_FAILURE() << "output '" << name << "' is missing or has another shape";
      return INFINITY;
    }
    double maxRef = 0, maxDiff = 0;
    for (size_t i = 0; i < r.data.size(); ++i) {
      maxRef = std::max(maxRef, std::abs(r.data[i]));
      double diff = std::abs(double(it->second.data[i]) - r.data[i]);
      if (std::isnan(diff))
        return INFINITY;
      maxDiff = std::max(maxDiff, diff);
    }
    worst = std::max(worst, maxDiff / std::max(maxRef, 1e-30));
  }
  return worst;
}

} // namespace attnc::e2e
