//===- Primitives.h - fp64 reference of the attn primitive ops --*- C++ -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file declares one function per primitive op of the attn dialect
// (dsl/IR/AttnPrimitiveOps.td, AttnNormOps.td, AttnAttentionOps.td), each
// computing exactly the op description in double precision with plain loops:
// elementwise maths with numpy broadcasting, contractions and shape ops,
// norms, scale-offset, RoPE, attention with a score callback and a
// structural mask, the relative-position biases, linear attention and
// FLASH's chunked linear term. Errors (shape mismatches, bad attributes)
// throw std::runtime_error. Nothing here depends on MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TESTS_REFERENCE_PRIMITIVES_H
#define ATTNC_TESTS_REFERENCE_PRIMITIVES_H

#include "tests/reference/Tensor.h"

#include <functional>

namespace attnc::ref {

//===----------------------------------------------------------------------===//
// Enums mirroring the dialect's attributes (AttnAttrs.td)
//===----------------------------------------------------------------------===//

/// Normalisation of a layer input.
enum class NormKind { LayerNorm, ScaleNorm, RmsNorm };
/// Relative position bias of a GAU/FLASH layer.
enum class RelPosKind { None, Toeplitz, T5 };
/// Feature map phi of linear attention.
enum class FeatureMap { Identity, Elu1, Relu, Silu, Exp };
/// Activation of a GLU FFN.
enum class Activation { Silu, Gelu, Relu, Sigmoid, Tanh };
/// Row normalisation of attention scores.
enum class Normalize { None, Softmax };
/// Pairing of rotary dims: (i, i + r/2) or (2i, 2i + 1).
enum class RopeMode { Half, Interleaved };
/// Kind of a structural attention mask.
enum class MaskKind { None, Causal, Window, Chunk, Band, CausalChunk };

/// A structural mask (`#attn.mask<kind size>`).
struct Mask {
  MaskKind kind = MaskKind::None;
  int64_t size = 0;

  /// Whether query i sees key j:
  /// none: always; causal: j <= i; window W: 0 <= i - j < W;
  /// chunk C: i / C == j / C; band W: |i - j| < W;
  /// causal_chunk C: i / C == j / C and j <= i.
  bool keeps(int64_t i, int64_t j) const;
};

//===----------------------------------------------------------------------===//
// Scalar functions
//===----------------------------------------------------------------------===//

/// x * sigmoid(x).
double siluScalar(double x);
/// 0.5 * x * (1 + erf(x / sqrt(2))).
double geluScalar(double x);
/// 1 / (1 + exp(-x)).
double sigmoidScalar(double x);
/// phi(x) of a linear-attention feature map (elu1: elu(x) + 1).
double featureScalar(FeatureMap feature, double x);
/// act(x) of a GLU activation.
double activationScalar(Activation activation, double x);
/// x / y, and 0 where y == 0 (attn.div_or_zero; a normalised linear
/// attention row with no weighted key).
double divOrZeroScalar(double x, double y);

//===----------------------------------------------------------------------===//
// Elementwise ops (Primitives.cpp)
//===----------------------------------------------------------------------===//

/// The numpy broadcast of two shapes; throws if they are incompatible.
std::vector<int64_t> broadcastShapes(const std::vector<int64_t> &a,
                                     const std::vector<int64_t> &b);

/// attn.add: a + b with numpy broadcasting.
Tensor add(const Tensor &a, const Tensor &b);
/// attn.sub: a - b with numpy broadcasting.
Tensor sub(const Tensor &a, const Tensor &b);
/// attn.mul: a * b with numpy broadcasting.
Tensor mul(const Tensor &a, const Tensor &b);
/// attn.div: a / b with numpy broadcasting.
Tensor div(const Tensor &a, const Tensor &b);
/// attn.div_or_zero: a / b, or 0 where b == 0, with numpy broadcasting.
Tensor divOrZero(const Tensor &a, const Tensor &b);
/// attn.pow: powf(a, b) with numpy broadcasting.
Tensor pow(const Tensor &a, const Tensor &b);

/// attn.neg: -x.
Tensor neg(const Tensor &x);
/// attn.silu: x * sigmoid(x).
Tensor silu(const Tensor &x);
/// attn.gelu: exact erf form.
Tensor gelu(const Tensor &x);
/// attn.relu: max(x, 0).
Tensor relu(const Tensor &x);
/// attn.sigmoid: 1 / (1 + exp(-x)).
Tensor sigmoid(const Tensor &x);
/// attn.exp.
Tensor exp(const Tensor &x);
/// attn.tanh.
Tensor tanh(const Tensor &x);
/// attn.sqrt.
Tensor sqrt(const Tensor &x);

//===----------------------------------------------------------------------===//
// Contractions and shape ops (Primitives.cpp)
//===----------------------------------------------------------------------===//

/// attn.matmul: a [..., m, k] times b [k, n] (shared) or b [..., k, n]
/// (same rank, same batch dims) -> [..., m, n].
Tensor matmul(const Tensor &a, const Tensor &b);
/// attn.dense: x [..., k] @ w [k, n] + bias [n] -> [..., n].
Tensor dense(const Tensor &x, const Tensor &w, const Tensor &bias);
/// attn.split: consecutive parts of the last axis with the given sizes.
std::vector<Tensor> split(const Tensor &x, const std::vector<int64_t> &sizes);
/// attn.transpose: swaps the last two axes.
Tensor transpose(const Tensor &x);
/// attn.row: row `index` of a rank-2 tensor.
Tensor row(const Tensor &p, int64_t index);
/// attn.embedding: table [V, d] rows at ids [...] -> [..., d]; throws
/// std::runtime_error for an id outside 0..V-1.
Tensor embedding(const Tensor &ids, const Tensor &table);

//===----------------------------------------------------------------------===//
// Norms, scale-offset, RoPE (NormPrimitives.cpp)
//===----------------------------------------------------------------------===//

/// attn.layer_norm over the last axis (biased variance, eps inside the
/// sqrt); a null weight counts as 1, a null bias as 0.
Tensor layerNorm(const Tensor &x, const Tensor *weight, const Tensor *bias,
                 double eps);
/// attn.scale_norm: x * rsqrt(mean(x^2) + eps) * alpha[0], or with clamp
/// x / max(sqrt(mean(x^2)), eps) * alpha[0].
Tensor scaleNorm(const Tensor &x, const Tensor &alpha, double eps,
                 bool clamp = false);
/// attn.rms_norm: x * rsqrt(mean(x^2) + eps) * weight (null weight = 1).
Tensor rmsNorm(const Tensor &x, const Tensor *weight, double eps);
/// attn.scale_offset: x * gamma + beta per feature.
Tensor scaleOffset(const Tensor &x, const Tensor &gamma, const Tensor &beta);
/// attn.sinusoidal: for x [..., n, d], sin(p * base^(-2i/d)) in feature i
/// < d/2 and cos of the same angle in feature d/2 + i, at position p.
Tensor sinusoidal(const Tensor &x, double base);
/// attn.rope on x [..., n, f], positions 0..n-1 on axis -2,
/// theta[p, i] = p * base^(-2i / r), i < r / 2, r = rotaryDims; the pair
/// (a, b) = (i, i + r/2) (half) or (2i, 2i + 1) (interleaved) becomes
/// (a cos - b sin, b cos + a sin); features r..f-1 pass through.
Tensor rope(const Tensor &x, RopeMode mode, int64_t rotaryDims, double base);

//===----------------------------------------------------------------------===//
// Attention (AttentionPrimitives.cpp)
//===----------------------------------------------------------------------===//

/// The score of one (query i, key j) pair from the head's dot product qk and
/// the key length n (the `score` region of attn.attention).
using ScoreFn =
    std::function<double(double qk, int64_t i, int64_t j, int64_t n)>;

/// attn.attention: q [..., n, H*dk], k [..., m, H*dk], v [..., m, H*dv];
/// per batch entry and head S[i, j] = score(q_h[i] . k_h[j], i, j, m);
/// normalize none keeps S on kept entries and 0 elsewhere; softmax
/// normalises over the kept keys (a row without kept keys, or whose kept
/// scores are all -inf, is 0). Result [..., n, H*dv].
Tensor attention(const Tensor &q, const Tensor &k, const Tensor &v,
                 const ScoreFn &score, Mask mask, Normalize normalize,
                 int64_t heads);

/// attn.rel_pos_bias: w[clamp(j - i, -(M-1), M-1) + M - 1], M = maxLen;
/// w must be [2M - 1].
double relPosBias(const Tensor &w, int64_t i, int64_t j, int64_t maxLen);

/// The T5 bucket of relative position relPos = j - i (spec §7.1; the log
/// part in float32 as torch computes it).
int64_t t5Bucket(int64_t relPos, bool causal, int64_t numBuckets,
                 int64_t maxDistance);
/// attn.t5_bias: emb[t5Bucket(j - i)] * scale; emb must be [numBuckets].
double t5Bias(const Tensor &emb, int64_t i, int64_t j, bool causal,
              int64_t numBuckets, int64_t maxDistance, double scale);

/// attn.linear_attn: num[i] = sum_j (phi(q_i) . phi(k_j)) v_j,
/// den[i] = sum_j phi(q_i) . phi(k_j), over all j or j <= i when causal
/// (needs n == m); result = scale * num / den (normalize) or scale * num.
Tensor linearAttn(const Tensor &q, const Tensor &k, const Tensor &v,
                  FeatureMap feature, bool causal, bool normalize,
                  double scale);

/// attn.chunked_linear: result[i] = scale * q[i] @ sum_j k[j]^T v[j] over
/// the keys of earlier chunks (j / C < i / C) when causal, over all keys
/// otherwise; q, k, v share the sequence length.
Tensor chunkedLinear(const Tensor &q, const Tensor &k, const Tensor &v,
                     int64_t chunk, bool causal, double scale);

} // namespace attnc::ref

#endif // ATTNC_TESTS_REFERENCE_PRIMITIVES_H
