//===- BenchModels.cpp - the models attnc-bench measures ------------------===//
//
// This file implements the benchmark's model table and BenchModel (see
// BenchModels.h). The models are written as .attn text here so that the
// program needs no files at run time; they use the layer templates, so
// they measure what `attnc bench` measures on the equivalent file.
//
//===----------------------------------------------------------------------===//
#include "bench/BenchModels.h"

#include <cstdio>
#include <cstdlib>
#include <map>

namespace attnc::bench {

namespace {
/// A one-layer model over x : f32[b, n, 512] with the layer call `layer`.
std::string layerSource(const std::string &name, const std::string &layer) {
  return "model " + name +
         " {\n"
         "  dim d = 512\n"
         "  dim n : seq\n"
         "  dim b : batch\n"
         "  input  x : f32[b, n, d]\n"
         "  output y : f32[b, n, d]\n"
         "  y = " +
         layer +
         "\n"
         "}\n";
}

/// y = x @ w with x : f32[b, n, k] and w : f32[k, nOut].
std::string denseSource(int64_t k, int64_t nOut) {
  return "model dense {\n"
         "  dim n : seq\n"
         "  dim b : batch\n"
         "  input  x : f32[b, n, " +
         std::to_string(k) +
         "]\n"
         "  param  w : f32[" +
         std::to_string(k) + ", " + std::to_string(nOut) +
         "]\n"
         "  output y = x @ w\n"
         "}\n";
}
} // namespace

std::vector<BenchSpec> benchSpecs(bool quick, const std::string &family) {
  const int64_t d = 512, e = 1024, s = 128;
  std::vector<DenseShape> gauDenses = {{d, 2 * e + s}, {e, d}};
  std::vector<DenseShape> mhsaDenses = {{d, 3 * d}, {d, d}};
  std::vector<int64_t> flashNs = {1024, 2048, 4096, 8192, 16384, 32768};
  // Issue 13 asks for GAU and MHSA from 1k to 16k tokens.
  std::vector<int64_t> quadNs = {1024, 2048, 4096, 8192, 16384};
  std::vector<BenchSpec> all = {
      {"flash", "FLASH causal",
       layerSource("flash_causal", "flash(x, e = 1024, s = 128, chunk = 256, "
                                   "causal = true)"),
       "flash_causal", quick ? std::vector<int64_t>{1024, 2048} : flashNs,
       gauDenses, 2 * e + s},
      {"flash", "FLASH non-causal",
       layerSource("flash_noncausal", "flash(x, e = 1024, s = 128, "
                                      "chunk = 256, causal = false)"),
       "flash_noncausal", quick ? std::vector<int64_t>{1024} : flashNs,
       gauDenses, 2 * e + s},
      {"gau", "GAU causal",
       layerSource("gau_causal", "gau(x, e = 1024, s = 128, causal = true, "
                                 "max_len = 512)"),
       "gau_causal", quick ? std::vector<int64_t>{1024} : quadNs, gauDenses,
       2 * e + s},
      {"mhsa", "MHSA causal",
       layerSource("mhsa_causal", "mhsa(x, heads = 8, causal = true)"),
       "mhsa_causal", quick ? std::vector<int64_t>{1024} : quadNs, mhsaDenses,
       3 * d},
  };
  std::vector<BenchSpec> specs;
  for (BenchSpec &spec : all)
    if (family.empty() || spec.family == family)
      specs.push_back(std::move(spec));
  return specs;
}

std::unique_ptr<BenchModel>
BenchModel::compile(const std::string &source, driver::SchedulePolicy schedule) {
  std::unique_ptr<BenchModel> m(new BenchModel());
  driver::SessionOptions options;
  options.schedule = schedule;
  m->session = std::make_unique<driver::Session>(options, llvm::errs());
  if (!m->session->loadSource(source, "bench.attn"))
    return nullptr;
  double start = nowSeconds();
  m->jit = m->session->jit();
  if (!m->jit)
    return nullptr;
  m->compileTime = nowSeconds() - start;
  m->weights = codegen::randomWeights(m->jit->pipeline().weights(), 1);
  if (runtime::Result packed = m->jit->packWeights(m->weights, m->pack);
      !packed.ok()) {
    std::fprintf(stderr, "attnc-bench: %s\n", packed.message.c_str());
    std::exit(1);
  }
  return m;
}

void BenchModel::bind(int64_t n) {
  release();
  std::map<std::string, int64_t> dims = {{"n", n}, {"b", 1}};
  std::vector<std::vector<int64_t>> shapes;
  const auto &infos = jit->pipeline().inputs();
  runtime::Result bound = codegen::inputShapes(infos, dims, shapes);
  if (bound.ok()) {
    for (size_t i = 0; i < infos.size(); ++i)
      inputs[infos[i].name] = codegen::randomInput(infos[i], shapes[i], 1);
    bound = jit->prepare(inputs, weights, outputs);
    if (bound.ok()) {
      boundN = n;
      return;
    }
  }
  std::fprintf(stderr, "attnc-bench: cannot bind n = %lld: %s\n", (long long)n,
               bound.message.c_str());
  std::exit(1);
}

void BenchModel::release() {
  inputs.clear();
  outputs.clear();
  boundN = 0;
}

void BenchModel::runOnce() {
  runtime::Result ran = jit->runPrepared(inputs, weights, outputs, &pack);
  if (!ran.ok()) {
    std::fprintf(stderr, "error: %s\n", ran.message.c_str());
    std::exit(1);
  }
}

Timing BenchModel::time(const TimingPolicy &policy) {
  return timeRuns([this] { runOnce(); }, policy);
}

double BenchModel::flops(int64_t n) const {
  return driver::countFlops(session->layerModel(), {{"n", n}, {"b", 1}});
}

int64_t BenchModel::tensorBytes() const {
  int64_t elements = 0;
  for (const codegen::TensorMap *map : {&inputs, &weights, &outputs})
    for (const auto &entry : *map)
      elements += entry.second.numElements();
  return elements * int64_t(sizeof(float));
}

std::pair<double, double> timeDense(int64_t n, int64_t k, int64_t nOut,
                                    const TimingPolicy &policy) {
  static std::map<std::pair<int64_t, int64_t>, std::unique_ptr<BenchModel>>
      models;
  std::unique_ptr<BenchModel> &model = models[{k, nOut}];
  if (!model)
    model = BenchModel::compile(denseSource(k, nOut),
                                driver::SchedulePolicy::Default);
  if (!model) {
    std::fprintf(stderr, "attnc-bench: cannot compile the dense model\n");
    std::exit(1);
  }
  model->bind(n);
  double attncMs = model->time(policy).median();
  model->release();
  double blasMs = timeSgemm(n, nOut, k, policy).median();
  return {attncMs, blasMs};
}

} // namespace attnc::bench
