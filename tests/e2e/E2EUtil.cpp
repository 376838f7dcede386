//===- E2EUtil.cpp - compile, run and compare models in tests -------------===//
//
// This file implements the end-to-end test helpers (see E2EUtil.h).
//
//===----------------------------------------------------------------------===//
#include "tests/e2e/E2EUtil.h"


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

/// The session options of `attnc run`: the Default schedule is
/// attn-schedule's for `scheduleTarget`; a GPU target's schedules run on the
/// host.
static driver::SessionOptions optionsFor(driver::SchedulePolicy schedule,
                                         const Halide::Target &scheduleTarget) {
  driver::SessionOptions options;
  options.target = scheduleTarget.to_string();
  options.schedule = schedule;
  options.gpuOnHost = true;
  return options;
}

/// Compiles what `load` puts into a fresh session with `options`.
static std::unique_ptr<CompiledModel>
compile(const driver::SessionOptions &options,
        llvm::function_ref<bool(driver::Session &)> load,
        const std::function<void(mlir::ModuleOp)> &reschedule = {}) {
  auto m = std::make_unique<CompiledModel>();
  m->diagOS = std::make_unique<llvm::raw_string_ostream>(m->diagnostics);
  m->session = std::make_unique<driver::Session>(options, *m->diagOS);
  m->loaded = load(*m->session);
  if (m->loaded && reschedule &&
      m->session->runTo(driver::Stage::Scheduled))
    reschedule(m->session->module());
  if (m->loaded) {
    m->jit = m->session->jit();
    m->layerFunc = m->session->layerModel();
  }
  m->diagOS->flush();
  return m;
}

std::unique_ptr<CompiledModel> compileAttn(const std::string &source,
                                           driver::SchedulePolicy schedule,
                                           const Halide::Target &scheduleTarget) {
  return compileAttn(source, optionsFor(schedule, scheduleTarget));
}

std::unique_ptr<CompiledModel>
compileAttn(const std::string &source, const driver::SessionOptions &options) {
  return compile(options, [&](driver::Session &session) {
    return session.loadSource(source, "test.attn");
  });
}

std::unique_ptr<CompiledModel>
compileAttn(const std::string &source, const Halide::Target &scheduleTarget,
            const std::function<void(mlir::ModuleOp)> &reschedule) {
  return compile(
      optionsFor(driver::SchedulePolicy::Default, scheduleTarget),
      [&](driver::Session &session) {
        return session.loadSource(source, "test.attn");
      },
      reschedule);
}

std::unique_ptr<CompiledModel> compileExample(const std::string &file,
                                              driver::SchedulePolicy schedule,
                                              const Halide::Target &scheduleTarget) {
  std::ifstream in(std::string(ATTNC_EXAMPLES_DIR) + "/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  return compileAttn(ss.str(), schedule, scheduleTarget);
}

std::unique_ptr<CompiledModel> compileIR(const std::string &text,
                                         driver::SchedulePolicy schedule,
                                         const Halide::Target &scheduleTarget) {
  return compile(optionsFor(schedule, scheduleTarget),
                 [&](driver::Session &session) {
    return session.loadIR(text, "test.mlir");
  });
}

codegen::TensorMap randomInputs(const codegen::JitModel &model,
                                const std::map<std::string, int64_t> &dims,
                                uint64_t seed) {
  auto &pipeline = const_cast<codegen::JitModel &>(model).pipeline();
  std::vector<std::vector<int64_t>> shapes;
  runtime::Result bound = codegen::inputShapes(pipeline.inputs(), dims, shapes);
  EXPECT_TRUE(bound.ok()) << bound.message;
  codegen::TensorMap inputs;
  for (size_t i = 0; i < shapes.size(); ++i)
    inputs[pipeline.inputs()[i].name] =
        codegen::randomInput(pipeline.inputs()[i], shapes[i], seed);
  return inputs;
}

codegen::TensorMap runJit(CompiledModel &model, const codegen::TensorMap &inputs,
                          const codegen::TensorMap &weights) {
  codegen::TensorMap outputs;
  runtime::Result ran = model.jit->run(inputs, weights, outputs);
  EXPECT_TRUE(ran.ok()) << ran.message;
  return outputs;
}

std::map<std::string, ref::Tensor> runReference(CompiledModel &model,
                                                const codegen::TensorMap &inputs,
                                                const codegen::TensorMap &weights) {
  std::vector<ref::Tensor> in;
  for (const codegen::TensorInfo &info : model.jit->pipeline().inputs()) {
    const codegen::HostTensor &t = inputs.at(info.name);
    in.push_back(t.dtype == "i32" ? ref::Tensor::fromInt32Bits(t.shape, t.data)
                                  : ref::Tensor::fromFloat(t.shape, t.data));
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
