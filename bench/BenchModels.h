//===- BenchModels.h - the models attnc-bench measures ----------*- C++ -*-===//
//
// This file declares the benchmark's models and the wrapper that runs them:
// the .attn sources of the layers (FLASH causal and non-causal, GAU
// causal, MHSA causal; fp32, d = 512, e = 1024, s = 128, C = 256, batch 1),
// which sequence lengths each is measured at, and BenchModel, which
// compiles a source through the same driver and JIT as `attnc bench`,
// binds random weights and inputs for one n, and times runs. It also
// times the dense stages as standalone `y = x @ w` models against sgemm.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_BENCH_BENCHMODELS_H
#define ATTNC_BENCH_BENCHMODELS_H

#include "bench/BenchUtil.h"

#include "codegen/Jit.h"
#include "driver/Session.h"


#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace attnc::bench {

/// A dense stage [n, k] x [k, n_out] of a layer.
struct DenseShape {
  int64_t k, n;
};

/// One layer configuration to measure.
struct BenchSpec {
  std::string family;      ///< flash, gau or mhsa (for --only).
  std::string label;       ///< "FLASH causal".
  std::string source;      ///< .attn text; runtime dims n (seq) and b (batch).
  std::string peerModel;   ///< torch_peer.py --model value.
  std::vector<int64_t> ns; ///< Sequence lengths.
  std::vector<DenseShape> denses; ///< Input and output dense stages.
  int64_t intermediateWidth;      ///< Width of the input dense's output.
};

/// The layers to measure: every shape of the issue, or a few for --quick;
/// only those of `family` when it is not empty.
std::vector<BenchSpec> benchSpecs(bool quick, const std::string &family);

/// A model compiled through the JIT, with random weights (seed 1).
class BenchModel {
public:
  /// Loads, lowers and JIT-compiles `source` with `schedule`; diagnostics
  /// go to stderr and the result is null on failure.
  static std::unique_ptr<BenchModel> compile(const std::string &source,
                                             driver::SchedulePolicy schedule);

  /// Random inputs (seed 1) for sequence length `n`, batch 1; outputs
  /// allocated. Aborts with a message if the model rejects them.
  void bind(int64_t n);
  /// Frees the bound inputs and outputs.
  void release();

  void runOnce();
  Timing time(const TimingPolicy &policy);

  /// FLOPs of one call at the bound n, or at `n` (spec §5, countFlops).
  double flops() const { return flops(boundN); }
  double flops(int64_t n) const;
  /// Bytes of the bound inputs and outputs and of the weights.
  int64_t tensorBytes() const;
  double compileSeconds() const { return compileTime; }

private:
  BenchModel() = default;
  std::unique_ptr<driver::Session> session; ///< Keeps the IR for countFlops.
  std::unique_ptr<codegen::JitModel> jit;
  codegen::TensorMap inputs, weights, outputs;
  codegen::WeightPack pack; ///< The weights as the kernels take them.
  int64_t boundN = 0;
  double compileTime = 0;
};

/// Median times (ms) of [n, k] x [k, nOut] as an attnc `y = x @ w` model
/// (compiled once per (k, nOut)) and as cblas_sgemm, measured one after
/// the other per `policy`. Needs haveBlas().
std::pair<double, double> timeDense(int64_t n, int64_t k, int64_t nOut,
                                    const TimingPolicy &policy);

} // namespace attnc::bench

#endif // ATTNC_BENCH_BENCHMODELS_H
