//===- Composed.h - layer ops composed from reference primitives -*- C++ -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file declares the second, independent formulation of every layer op:
// the layer written as a composition of the primitive references of
// Primitives.h, in the form `attn-expand-layers` is expected to produce
// (FLASH as attention with a causal_chunk/chunk mask and relu(qk/C + bias)^2
// plus chunked_linear). Tests compare it with the direct layer references
// of Layers.h, and it gives random weight sets of the right names and
// shapes for any layer config.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TESTS_REFERENCE_COMPOSED_H
#define ATTNC_TESTS_REFERENCE_COMPOSED_H

#include "tests/reference/Layers.h"

namespace attnc::ref::composed {

/// attn.gau from primitives: norm, dense, silu, split, scale_offset, rope
/// (half, all s dims, base 10000), attention(mask none/causal,
/// score relu(qk / n + rel_pos_bias)^2), gating, dense, residual.
Tensor gau(const Tensor &x, const WeightMap &weights, const GauConfig &config,
           GauTrace *trace = nullptr);

/// attn.flash from primitives: as gau with four scale_offset rows, local
/// attention(mask causal_chunk/chunk C, score relu(qk / C + bias)^2) and
/// chunked_linear(chunk C, scale 1/C) on the unpadded sequence.
Tensor flash(const Tensor &x, const WeightMap &weights,
             const FlashConfig &config, GauTrace *trace = nullptr);

/// attn.mhsa from primitives: attention(softmax, score qk / sqrt(dh)).
Tensor mhsa(const Tensor &x, const WeightMap &weights,
            const MhsaConfig &config);

/// attn.linear_attention from primitives: linear_attn per head (normalize,
/// scale 1).
Tensor linearAttention(const Tensor &x, const WeightMap &weights,
                       const LinearAttentionConfig &config);

/// attn.local_attention from primitives: attention(softmax) with the mask
/// window W / band W / chunk W / causal_chunk W.
Tensor localAttention(const Tensor &x, const WeightMap &weights,
                      const LocalAttentionConfig &config);

/// attn.glu_ffn from primitives.
Tensor gluFfn(const Tensor &x, const WeightMap &weights,
              const GluFfnConfig &config);

/// Random weights (uniform in [-scale, scale), norm gains around 1) with
/// the names and shapes of each layer for model width d.
WeightMap randomWeights(const GauConfig &config, int64_t d, uint64_t seed,
                        double scale = 0.5);
WeightMap randomWeights(const FlashConfig &config, int64_t d, uint64_t seed,
                        double scale = 0.5);
/// Weights of mhsa, linear_attention and local_attention (`L.qkv`, `L.out`).
WeightMap randomQkvWeights(const std::string &layerName, NormKind norm,
                           int64_t d, uint64_t seed, double scale = 0.5);
WeightMap randomWeights(const GluFfnConfig &config, int64_t d, uint64_t seed,
                        double scale = 0.5);

} // namespace attnc::ref::composed

#endif // ATTNC_TESTS_REFERENCE_COMPOSED_H
