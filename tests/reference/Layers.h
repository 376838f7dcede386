//===- Layers.h - fp64 reference of the attn layer templates ----*- C++ -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file declares one function per layer op of the attn dialect
// (dsl/IR/AttnLayerOps.td), written straight from spec/flash.md with plain
// loops in double precision and independently of the primitives in
// Primitives.h: GAU (§2.2), FLASH as the chunked algorithm of §3.2 with the
// padding of §3.5, softmax MHSA, multi-head linear attention, local
// (window/block) attention and the GLU FFN. Each takes x : [..., n, d], a
// weight map keyed `<layer_name>.<part>` (names and shapes of the op
// descriptions) and a config mirroring the op's attributes. A missing or
// mis-shaped weight throws std::runtime_error naming it.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TESTS_REFERENCE_LAYERS_H
#define ATTNC_TESTS_REFERENCE_LAYERS_H

#include "tests/reference/Primitives.h"

#include <map>
#include <string>

namespace attnc::ref {

/// Weights by name (`<layer_name>.<part>`), e.g. `l0.uvz.weight`.
using WeightMap = std::map<std::string, Tensor>;

/// The weight `name`, checked against `shape`; throws std::runtime_error
/// naming the weight when it is missing or has another shape.
const Tensor &lookupWeight(const WeightMap &weights, const std::string &name,
                           const std::vector<int64_t> &shape);

/// FLASH-pytorch's options of attn.gau and attn.flash (AttnLayerOps.td),
/// off by default.
struct GatedOptions {
  int64_t numBuckets = 32, maxDistance = 128; ///< rel_pos = T5
  int64_t ropeDims = 0;                       ///< 0: all of s
  RopeMode ropeMode = RopeMode::Half;
  bool shiftTokens = false; ///< the first ceil(d/2) features from row t-1
  bool normClamp = false;   ///< scale_norm: x / max(rms(x), eps) * g
};

/// Attributes of attn.gau.
struct GauConfig {
  std::string layerName = "l0";
  int64_t e = 0, s = 0;
  bool causal = false;
  NormKind norm = NormKind::LayerNorm;
  int64_t maxLen = 512;
  RelPosKind relPos = RelPosKind::Toeplitz;
  bool rope = true;
  double eps = 1e-5;
  GatedOptions options;
};

/// Attributes of attn.flash.
struct FlashConfig {
  std::string layerName = "l0";
  int64_t e = 0, s = 0, chunk = 256;
  bool causal = false;
  NormKind norm = NormKind::LayerNorm;
  RelPosKind relPos = RelPosKind::Toeplitz;
  bool rope = true;
  double eps = 1e-5;
  GatedOptions options;
  bool linByLength = false; ///< non-causal: the state / n instead of / C
};

/// Attributes of attn.mhsa.
struct MhsaConfig {
  std::string layerName = "l0";
  int64_t heads = 1;
  bool causal = false;
  NormKind norm = NormKind::LayerNorm;
  double eps = 1e-5;
};

/// Attributes of attn.linear_attention.
struct LinearAttentionConfig {
  std::string layerName = "l0";
  int64_t heads = 1;
  bool causal = false;
  FeatureMap feature = FeatureMap::Elu1;
  NormKind norm = NormKind::LayerNorm;
  double eps = 1e-5;
};

/// Attributes of attn.local_attention.
struct LocalAttentionConfig {
  std::string layerName = "l0";
  int64_t heads = 1, window = 1;
  bool causal = false, block = false;
  NormKind norm = NormKind::LayerNorm;
  double eps = 1e-5;
};

/// Attributes of attn.glu_ffn.
struct GluFfnConfig {
  std::string layerName = "l0";
  int64_t hidden = 0;
  Activation activation = Activation::Silu;
  NormKind norm = NormKind::LayerNorm;
  double eps = 1e-5;
};

/// Intermediate values of one GAU/FLASH evaluation for property tests, each
/// [..., n, e] (for `lin`, all zero in a GAU): the gate u, the local
/// (quadratic) term A @ v and the global linear term, before gating.
struct GauTrace {
  Tensor u, quad, lin;
};

/// attn.gau (spec §2.2): pre-norm GAU with relu(q.k / n + bias)^2, n the
/// sequence length, and the residual.
Tensor gau(const Tensor &x, const WeightMap &weights, const GauConfig &config,
           GauTrace *trace = nullptr);

/// attn.flash (spec §3.2 and §3.5): mixed chunk attention computed chunk by
/// chunk on projections zero-padded to a multiple of C.
Tensor flash(const Tensor &x, const WeightMap &weights,
             const FlashConfig &config, GauTrace *trace = nullptr);

/// attn.mhsa: softmax(q_h k_h^T / sqrt(d / H)) v_h per head, pre-norm,
/// residual.
Tensor mhsa(const Tensor &x, const WeightMap &weights,
            const MhsaConfig &config);

/// attn.linear_attention: phi(q_i) S_i / (phi(q_i) . z_i) per head.
Tensor linearAttention(const Tensor &x, const WeightMap &weights,
                       const LinearAttentionConfig &config);

/// attn.local_attention: softmax attention per head restricted to the
/// window/block mask of the op description.
Tensor localAttention(const Tensor &x, const WeightMap &weights,
                      const LocalAttentionConfig &config);

/// attn.glu_ffn: (act(a) * act(b)) @ W_out + b_out + x with a, b the two
/// halves of Norm(x) @ W_in + b_in.
Tensor gluFfn(const Tensor &x, const WeightMap &weights,
              const GluFfnConfig &config);

} // namespace attnc::ref

#endif // ATTNC_TESTS_REFERENCE_LAYERS_H
