//===- Jit.h - run a model pipeline on the host through the JIT ---*- C++ -*-===//
//
// This file declares JitModel: a ModelPipeline compiled for the host,
// with the checks that make running it safe from the shell or a test:
// input shapes against the model (runtime dims bound consistently, >= 1),
// every weight present with its shape, outputs allocated from the bound
// dims. It also declares the deterministic random weights and inputs
// behind `--random-weights SEED`.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_JIT_H
#define ATTNC_CODEGEN_JIT_H

#include "codegen/Codegen.h"
#include "codegen/Resources.h"
#include "runtime/Tensor.h"

#include <map>
#include <string>
#include <vector>

namespace attnc::codegen {

/// The runtime's tensor (runtime/Tensor.h): what the readers return and
/// the JIT runs on.
using runtime::HostTensor;

using TensorMap = std::map<std::string, HostTensor>;

/// A model compiled for the host and ready to run.
class JitModel {
public:
  /// JIT-compiles `pipeline`, built from `model`, for `target`, through
  /// the compile cache `cache` (ModelPipeline::compileJit); what it cost is
  /// added to `stats`. Errors are emitted as MLIR diagnostics at the
  /// model's location (one that Halide raises is Halide's autoscheduler's
  /// when `autoscheduler`, the name of the one that scheduled the
  /// pipeline, is set); returns null on failure.
  static std::unique_ptr<JitModel>
  create(std::unique_ptr<ModelPipeline> pipeline, mlir::func::FuncOp model,
         const Halide::Target &target, const CacheOptions &cache,
         KernelCompileStats &stats, const std::string &autoscheduler = "");

  ModelPipeline &pipeline() { return *model; }
  const ModelPipeline &pipeline() const { return *model; }

  /// Binds runtime dims from the inputs and allocates the outputs. The
  /// runtime's statuses, as the generated C wrapper returns them:
  /// ATTN_ERROR_MISSING for a missing weight, ATTN_ERROR_ARGUMENT for a
  /// missing or unknown input, ATTN_ERROR_SHAPE with the
  /// tensor and both shapes on a mismatch, ATTN_ERROR_OUT_OF_MEMORY for a
  /// run that cannot fit (checkResources).
  runtime::Result prepare(const TensorMap &inputs, const TensorMap &weights,
                          TensorMap &outputs) const;

  /// Runs on tensors already checked by prepare(); a kernel's failure as
  /// ModelPipeline::run reports it. With `pack` (packWeights(weights)), the
  /// kernels read the weights as they were packed, with no copy per run.
  runtime::Result runPrepared(const TensorMap &inputs, const TensorMap &weights,
                              TensorMap &outputs,
                              const WeightPack *pack = nullptr);

  /// `weights`, checked by checkWeights(), packed for the kernels' weight
  /// arenas (ModelPipeline::packWeights), for runs that hold them unchanged:
  /// a run then copies no weights.
  runtime::Result packWeights(const TensorMap &weights, WeightPack &pack) const;

  /// prepare() + runPrepared().
  runtime::Result run(const TensorMap &inputs, const TensorMap &weights,
                      TensorMap &outputs);

  /// prepare()'s check of the weights: each of the model's present, with
  /// its shape (ATTN_ERROR_MISSING, ATTN_ERROR_SHAPE).
  runtime::Result checkWeights(const TensorMap &weights) const;
  /// prepare()'s checks of the inputs' shapes (by name): every input given,
  /// none unknown, runtime dims bound consistently; then the outputs' shapes
  /// (in the order of pipeline().outputs()) and checkResources.
  runtime::Result
  outputShapes(const std::map<std::string, std::vector<int64_t>> &inputs,
               std::vector<std::vector<int64_t>> &outputs) const;
  /// Runs on caller-owned memory: `inputs` and `outputs` are Halide views
  /// (innermost dim first) in the order of pipeline().inputs() and
  /// outputs(), with the shapes checkWeights() and outputShapes() accepted.
  /// The Python module runs on numpy's memory this way, without copies.
  runtime::Result runBuffers(const std::vector<Halide::Buffer<float>> &inputs,
                             const TensorMap &weights,
                             std::vector<Halide::Buffer<float>> &outputs,
                             const WeightPack *pack = nullptr);

  /// checkWeights(), then a decoder of one sequence (Decode.h) of a model
  /// compiled for decoding (SessionOptions::decode) on `weights`, which
  /// must outlive it; `capacity` as ModelPipeline::decoder takes it.
  runtime::Result decoder(const TensorMap &weights, int64_t capacity,
                          std::unique_ptr<Decoder> &decoder);

private:
  std::unique_ptr<ModelPipeline> model;
};

/// The weights of `model` for a run: read from the safetensors file
/// `file`, or deterministic random ones for `randomSeed` >= 0 (after
/// checking they fit in memory), or none when the model has none. A file
/// holding tensors the model does not use is an error naming them (a
/// checkpoint for another model); `attnc run --weights | --random-weights`
/// and the Python module's `weights=` | `random_weights=`.
runtime::Result loadWeights(const ModelPipeline &model, const std::string &file,
                            int64_t randomSeed, TensorMap &weights);

/// The view Halide runs on (innermost dim first) of C-order f32 memory of
/// `shape`.
Halide::Buffer<float> hostView(const float *data,
                               const std::vector<int64_t> &shape);

/// Deterministic random weights for every weight of `model` (seeded by
/// `seed` and the weight's name, so adding a layer does not change the
/// others): norm gains and scale-offset gammas 1 + 0.1 N(0,1); biases,
/// betas and relative-position tables 0.1 N(0,1); matrices [in, out]
/// N(0, 1/in).
TensorMap randomWeights(const std::vector<TensorInfo> &weights, uint64_t seed);

/// A deterministic N(0,1) tensor of `shape`, seeded by `seed` and `name`.
HostTensor randomTensor(const std::vector<int64_t> &shape, uint64_t seed,
                        const std::string &name);
/// A random input for `info` of `shape`: randomTensor's N(0, 1) floats, or
/// for token ids (TensorInfo::dtype "i32") ids uniform in 0..idBound-1.
HostTensor randomInput(const TensorInfo &info,
                       const std::vector<int64_t> &shape, uint64_t seed);

/// The shape (MLIR order) of `info`, the model's `role` ("input",
/// "output"), with its runtime dims bound from `dims`; ATTN_ERROR_ARGUMENT
/// naming the tensor and the dim when one is missing from `dims`, or
/// naming the dim when its size is below 1.
runtime::Result boundShape(const TensorInfo &info, const std::string &role,
                           const std::map<std::string, int64_t> &dims,
                           std::vector<int64_t> &shape);

/// The largest difference between two sets of outputs, relative to the
/// largest magnitude of each of `reference`'s outputs (absolute where that
/// is 0); infinity for a NaN, an output `got` lacks or shapes that differ,
/// or a reference that is not finite. `worstOutput`, when given, gets the
/// name of the output where it is largest.
double outputDifference(const TensorMap &got, const TensorMap &reference,
                        std::string *worstOutput = nullptr);

/// Shapes of the inputs with runtime dims bound from `dims` (`n` -> 1024);
/// ATTN_ERROR_ARGUMENT when a runtime dim is missing from `dims` or below
/// 1, ATTN_ERROR_OUT_OF_MEMORY when an input would exceed the limits of one
/// buffer (Resources.h; `maxBytes`: ModelPipeline::maxBufferBytes).
runtime::Result inputShapes(const std::vector<TensorInfo> &inputs,
                            const std::map<std::string, int64_t> &dims,
                            std::vector<std::vector<int64_t>> &shapes,
                            int64_t maxBytes = kMaxBufferBytes);

} // namespace attnc::codegen

#endif // ATTNC_CODEGEN_JIT_H
