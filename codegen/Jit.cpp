//===- Jit.cpp - run a model pipeline on the host through the JIT ---------===//
//
// This file implements JitModel's shape checks and buffer plumbing, and the
// deterministic random weights and inputs.
//
//===----------------------------------------------------------------------===//
#include "codegen/Jit.h"
#include "codegen/Decode.h"
#include "codegen/Resources.h"
#include "runtime/Safetensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>

namespace attnc::codegen {

std::unique_ptr<JitModel>
JitModel::create(std::unique_ptr<ModelPipeline> pipeline,
                 mlir::func::FuncOp func, const Halide::Target &target,
                 const CacheOptions &cache, KernelCompileStats &stats,
                 const std::string &autoscheduler) {
  try {
    pipeline->compileJit(target, cache, stats);
  } catch (const Halide::Error &error) {
    // A pipeline that one of Halide's autoschedulers scheduled (attnc
    // gives it the plain algorithm, every op naive) and Halide rejects.
    if (!autoscheduler.empty())
      func.emitError() << "Halide's " << autoscheduler
                       << " schedule of this model does not compile in "
                          "Halide: "
                       << error.what();
    else
      func.emitError() << "internal error while compiling the pipeline: "
                       << error.what();
    return nullptr;
  }
  std::unique_ptr<JitModel> model(new JitModel());
  model->model = std::move(pipeline);
  return model;
}

runtime::Result JitModel::checkWeights(const TensorMap &weights) const {
  using runtime::Result;
  for (const TensorInfo &info : model->weights()) {
    auto it = weights.find(info.name);
    if (it == weights.end()) {
      return Result::error(ATTN_ERROR_MISSING, "missing weight '" + info.name +
                                                   "' with shape " +
                                                   info.shapeString());
    }
    if (it->second.shape != info.shape)
      return Result::error(ATTN_ERROR_SHAPE,
                           "weight '" + info.name + "' has shape " +
                               it->second.shapeString() +
                               " but the model expects " + info.shapeString());
  }
  return Result::success();
}

runtime::Result JitModel::outputShapes(
    const std::map<std::string, std::vector<int64_t>> &inputs,
    std::vector<std::vector<int64_t>> &outputShapes) const {
  using runtime::Result;
  std::map<std::string, std::pair<int64_t, std::string>> bound; // dim -> size, from
  for (const TensorInfo &info : model->inputs()) {
    auto it = inputs.find(info.name);
    if (it == inputs.end()) {
      return Result::error(ATTN_ERROR_ARGUMENT, "missing input '" + info.name +
                                                    "' with shape " +
                                                    info.shapeString());
    }
    const std::vector<int64_t> &shape = it->second;
    bool ok = shape.size() == info.shape.size();
    for (size_t i = 0; ok && i < info.shape.size(); ++i)
      ok = info.shape[i] < 0 ? shape[i] >= 1 : shape[i] == info.shape[i];
    if (!ok) {
      std::string message = "input '" + info.name + "' has shape " +
                            runtime::shapeString(shape) +
                            " but the model expects " + info.shapeString();
      for (int64_t size : shape)
        if (size == 0)
          message += " (a dimension of size 0 is not allowed)";
      return Result::error(ATTN_ERROR_SHAPE, message);
    }
    for (size_t i = 0; i < info.shape.size(); ++i) {
      if (info.shape[i] >= 0)
        continue;
      auto [entry, inserted] =
          bound.emplace(info.dims[i], std::make_pair(shape[i], info.name));
      if (!inserted && entry->second.first != shape[i]) {
        return Result::error(
            ATTN_ERROR_SHAPE,
            "runtime dim '" + info.dims[i] + "' is " +
                std::to_string(entry->second.first) + " in input '" +
                entry->second.second + "' but " + std::to_string(shape[i]) +
                " in input '" + info.name + "'");
      }
    }
  }
  for (const auto &entry : inputs) {
    bool known = false;
    for (const TensorInfo &info : model->inputs())
      known |= info.name == entry.first;
    if (!known) {
      std::string names;
      for (const TensorInfo &info : model->inputs())
        names += (names.empty() ? "" : ", ") + info.name;
      return Result::error(ATTN_ERROR_ARGUMENT,
                           "unknown input '" + entry.first +
                               "'; the model's inputs are " + names);
    }
  }
  std::vector<std::vector<int64_t>> inputShapes;
  for (const TensorInfo &info : model->inputs())
    inputShapes.push_back(inputs.at(info.name));
  outputShapes.clear();
  for (const TensorInfo &info : model->outputs()) {
    std::vector<int64_t> shape;
    for (size_t i = 0; i < info.shape.size(); ++i) {
      if (info.shape[i] >= 0) {
        shape.push_back(info.shape[i]);
        continue;
      }
      auto it = bound.find(info.dims[i]);
      if (it == bound.end())
        return Result::error(ATTN_ERROR_SHAPE,
                             "cannot size output '" + info.name +
                                 "': runtime dim '" + info.dims[i] +
                                 "' is not the size of any input");
      shape.push_back(it->second.first);
    }
    outputShapes.push_back(shape);
  }
  // Sizes first: nothing is allocated for a run that cannot fit.
  return model->checkResources(inputShapes, outputShapes);
}

runtime::Result JitModel::prepare(const TensorMap &inputs,
                                  const TensorMap &weights,
                                  TensorMap &outputs) const {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (const auto &[name, tensor] : inputs)
    shapes[name] = tensor.shape;
  // Token ids and floats are both 4-byte elements: the element type is
  // checked by name.
  for (const TensorInfo &info : model->inputs()) {
    auto it = inputs.find(info.name);
    if (it == inputs.end() || it->second.dtype == info.dtype)
      continue;
    return runtime::Result::error(
        ATTN_ERROR_DTYPE,
        "input '" + info.name + "' " +
            (info.dtype == "i32"
                 ? "holds token ids: give integers (.npy '<i4' or '<i8')"
                 : "holds floats: give float32 (.npy '<f4')") +
            ", not " + (it->second.dtype == "i32" ? "integers" : "floats"));
  }
  std::vector<std::vector<int64_t>> outShapes;
  runtime::Result checked = outputShapes(shapes, outShapes);
  if (checked.ok())
    checked = checkWeights(weights);
  if (!checked.ok())
    return checked;
  outputs.clear();
  for (size_t i = 0; i < outShapes.size(); ++i)
    outputs[model->outputs()[i].name] = HostTensor(outShapes[i]);
  return runtime::Result::success();
}

Halide::Buffer<float> hostView(const float *data,
                               const std::vector<int64_t> &shape) {
  std::vector<int> sizes(shape.rbegin(), shape.rend());
  return Halide::Buffer<float>(const_cast<float *>(data), sizes);
}

static Halide::Buffer<float> view(const HostTensor &t) {
  return hostView(t.data.data(), t.shape);
}

/// The model's weights as views, in the order of its weights().
static std::vector<Halide::Buffer<float>>
weightViews(const ModelPipeline &model, const TensorMap &weights) {
  std::vector<Halide::Buffer<float>> views;
  for (const TensorInfo &info : model.weights())
    views.push_back(view(weights.at(info.name)));
  return views;
}

runtime::Result JitModel::runBuffers(
    const std::vector<Halide::Buffer<float>> &inputs, const TensorMap &weights,
    std::vector<Halide::Buffer<float>> &outputs, const WeightPack *pack) {
  return model->run(inputs, weightViews(*model, weights), outputs, pack);
}

runtime::Result JitModel::packWeights(const TensorMap &weights,
                                      WeightPack &pack) const {
  if (runtime::Result checked = checkWeights(weights); !checked.ok())
    return checked;
  return model->packWeights(weightViews(*model, weights), pack);
}

runtime::Result JitModel::decoder(const TensorMap &weights, int64_t capacity,
                                  std::unique_ptr<Decoder> &decoder) {
  if (runtime::Result checked = checkWeights(weights); !checked.ok())
    return checked;
  return model->decoder(weightViews(*model, weights), capacity, decoder);
}

runtime::Result JitModel::runPrepared(const TensorMap &inputs,
                                      const TensorMap &weights,
                                      TensorMap &outputs,
                                      const WeightPack *pack) {
  std::vector<Halide::Buffer<float>> in, out;
  for (const TensorInfo &info : model->inputs())
    in.push_back(view(inputs.at(info.name)));
  for (const TensorInfo &info : model->outputs())
    out.push_back(view(outputs.at(info.name)));
  return runBuffers(in, weights, out, pack);
}

runtime::Result JitModel::run(const TensorMap &inputs, const TensorMap &weights,
                              TensorMap &outputs) {
  runtime::Result prepared = prepare(inputs, weights, outputs);
  return prepared.ok() ? runPrepared(inputs, weights, outputs) : prepared;
}

runtime::Result loadWeights(const ModelPipeline &model, const std::string &file,
                            int64_t randomSeed, TensorMap &weights) {
  using runtime::Result;
  if (randomSeed >= 0) {
    int64_t total = 0;
    for (const TensorInfo &info : model.weights()) {
      Result fits = checkBufferSize("weight '" + info.name + "'", info.shape);
      if (!fits.ok())
        return fits;
      total += f32Bytes(info.shape);
    }
    Result fits = checkFitsMemory("the model's weights need", total);
    if (!fits.ok())
      return fits;
    weights = randomWeights(model.weights(), uint64_t(randomSeed));
    return Result::success();
  }
  if (file.empty())
    return Result::success();
  runtime::SafetensorsFile contents;
  Result result = runtime::readSafetensors(file, contents);
  if (!result.ok())
    return result;
  std::vector<std::string> extra;
  for (runtime::SafetensorsTensor &tensor : contents.tensors) {
    bool used = std::any_of(
        model.weights().begin(), model.weights().end(),
        [&](const TensorInfo &info) { return info.name == tensor.name; });
    if (!used) {
      extra.push_back("'" + tensor.name + "' " + tensor.shapeString());
      continue;
    }
    weights[tensor.name] = std::move(static_cast<HostTensor &>(tensor));
  }
  if (!extra.empty()) {
    std::string message = file + " has " + std::to_string(extra.size()) +
                          " tensor(s) the model does not use: ";
    for (size_t i = 0; i < extra.size(); ++i)
      message += (i ? ", " : "") + extra[i];
    return Result::error(ATTN_ERROR_ARGUMENT, message);
  }
  return Result::success();
}

static uint64_t mix(uint64_t seed, const std::string &name) {
  // FNV-1a over the name, mixed with the seed: stable across platforms.
  uint64_t hash = 1469598103934665603ull ^ (seed * 0x9E3779B97F4A7C15ull);
  for (unsigned char c : name) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  return hash;
}

static bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

HostTensor randomTensor(const std::vector<int64_t> &shape, uint64_t seed,
                        const std::string &name) {
  HostTensor t(shape);
  std::mt19937_64 rng(mix(seed, name));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (float &value : t.data)
    value = normal(rng);
  return t;
}

HostTensor randomInput(const TensorInfo &info,
                       const std::vector<int64_t> &shape, uint64_t seed) {
  if (info.dtype != "i32")
    return randomTensor(shape, seed, info.name);
  // Token ids, uniform over the rows of the tables that read them.
  HostTensor t(shape);
  t.dtype = "i32";
  std::mt19937_64 rng(mix(seed, info.name));
  std::uniform_int_distribution<int32_t> id(
      0, int32_t(std::max<int64_t>(info.idBound, 1) - 1));
  for (float &value : t.data) {
    int32_t bits = id(rng);
    std::memcpy(&value, &bits, 4);
  }
  return t;
}

TensorMap randomWeights(const std::vector<TensorInfo> &weights, uint64_t seed) {
  TensorMap result;
  for (const TensorInfo &info : weights) {
    HostTensor t = randomTensor(info.shape, seed, info.name);
    const std::string &name = info.name;
    bool gain = endsWith(name, "norm.weight") || endsWith(name, "gamma");
    bool offset = endsWith(name, "bias") || endsWith(name, "beta") ||
                  endsWith(name, "rel_pos");
    float scale = gain || offset ? 0.1f
                  : info.shape.size() >= 2
                      ? 1.0f / std::sqrt(float(info.shape[info.shape.size() - 2]))
                      : 0.1f;
    for (float &value : t.data)
      value = (gain ? 1.0f : 0.0f) + scale * value;
    result[name] = std::move(t);
  }
  return result;
}

runtime::Result boundShape(const TensorInfo &info, const std::string &role,
                           const std::map<std::string, int64_t> &dims,
                           std::vector<int64_t> &shape) {
  using runtime::Result;
  shape.clear();
  for (size_t i = 0; i < info.shape.size(); ++i) {
    if (info.shape[i] >= 0) {
      shape.push_back(info.shape[i]);
      continue;
    }
    auto it = dims.find(info.dims[i]);
    if (it == dims.end())
      return Result::error(ATTN_ERROR_ARGUMENT,
                           role + " '" + info.name + "' has runtime dim '" +
                               info.dims[i] + "'; give its size with --dim " +
                               info.dims[i] + "=<size>");
    if (it->second < 1)
      return Result::error(ATTN_ERROR_ARGUMENT,
                           "runtime dim '" + info.dims[i] +
                               "' must be at least 1, not " +
                               std::to_string(it->second));
    shape.push_back(it->second);
  }
  return Result::success();
}

double outputDifference(const TensorMap &got, const TensorMap &reference,
                        std::string *worstOutput) {
  double worst = 0;
  for (const auto &[name, want] : reference) {
    auto it = got.find(name);
    double relative = INFINITY;
    if (it != got.end() && it->second.shape == want.shape) {
      double scale = 0, diff = 0;
      for (size_t i = 0; i < want.data.size(); ++i) {
        scale = std::max(scale, double(std::fabs(want.data[i])));
        double d = std::fabs(double(it->second.data[i]) - want.data[i]);
        if (!(d <= diff)) // NaN counts as worse than anything
          diff = std::isnan(d) ? INFINITY : d;
      }
      // Not finite when the reference's own output is not.
      relative = !std::isfinite(scale) ? INFINITY
                 : scale > 0           ? diff / scale
                                       : diff;
    }
    if (worstOutput && (worstOutput->empty() || relative > worst))
      *worstOutput = name;
    worst = std::max(worst, relative);
  }
  return worst;
}

runtime::Result inputShapes(const std::vector<TensorInfo> &inputs,
                            const std::map<std::string, int64_t> &dims,
                            std::vector<std::vector<int64_t>> &shapes,
                            int64_t maxBytes) {
  using runtime::Result;
  shapes.clear();
  for (const TensorInfo &info : inputs) {
    std::vector<int64_t> shape;
    if (Result bound = boundShape(info, "input", dims, shape); !bound.ok())
      return bound;
    Result fits =
        checkBufferSize("input '" + info.name + "'", shape, maxBytes);
    if (!fits.ok())
      return fits;
    shapes.push_back(shape);
  }
  // Each input fits one buffer (so no sum overflows); together they must
  // fit the machine before anything is allocated for them.
  int64_t bytes = 0;
  for (const std::vector<int64_t> &shape : shapes)
    bytes = saturatingAdd(bytes, f32Bytes(shape));
  return checkFitsMemory("the inputs need", bytes);
}

} // namespace attnc::codegen
