//===- Composed.cpp - layer ops composed from reference primitives --------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements the primitive-level formulation of each layer op
// (Composed.h) using only the functions of Primitives.h, and the random
// weight sets used by the tests.
//
//===----------------------------------------------------------------------===//

#include "tests/reference/Composed.h"

#include <cmath>

namespace attnc::ref::composed {

namespace {

const Tensor &w(const WeightMap &weights, const std::string &L,
                const std::string &part) {
  auto it = weights.find(L + "." + part);
  if (it == weights.end())
    throw std::runtime_error("reference: missing weight '" + L + "." + part +
                             "'");
  return it->second;
}

/// Norm(x) with the layer's norm weights, from the norm primitives.
Tensor norm(const Tensor &x, const WeightMap &weights, const std::string &L,
            NormKind kind, double eps) {
  switch (kind) {
  case NormKind::LayerNorm:
    return layerNorm(x, &w(weights, L, "norm.weight"),
                     &w(weights, L, "norm.bias"), eps);
  case NormKind::ScaleNorm:
    return scaleNorm(x, w(weights, L, "norm.weight"), eps);
  case NormKind::RmsNorm:
    return rmsNorm(x, &w(weights, L, "norm.weight"), eps);
  }
  throw std::runtime_error("reference: unknown norm");
}

/// Concatenation along the last axis.
Tensor concatLast(const std::vector<Tensor> &parts) {
  std::vector<int64_t> shape = parts.front().shape;
  int64_t total = 0;
  for (const Tensor &part : parts)
    total += part.dim(-1);
  shape.back() = total;
  Tensor result(shape);
  const int64_t rows = result.numel() / total;
  int64_t start = 0;
  for (const Tensor &part : parts) {
    const int64_t f = part.dim(-1);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < f; ++c)
        result[r * total + start + c] = part[r * f + c];
    start += f;
  }
  return result;
}

/// The shared part of gau and flash: u, v and the scale-offset (and
/// rotated) rows of z, one per row of gamma/beta.
struct GauInputs {
  Tensor u, v;
  std::vector<Tensor> heads;
};

GauInputs gauInputs(const Tensor &x, const WeightMap &weights,
                    const std::string &L, NormKind kind, double eps, int64_t e,
                    int64_t s, int64_t rows, bool useRope) {
  Tensor uvz = silu(dense(norm(x, weights, L, kind, eps),
                          w(weights, L, "uvz.weight"), w(weights, L, "uvz.bias")));
  std::vector<Tensor> parts = split(uvz, {e, e, s});
  GauInputs in{parts[0], parts[1], {}};
  for (int64_t r = 0; r < rows; ++r) {
    Tensor head = scaleOffset(parts[2], row(w(weights, L, "gamma"), r),
                              row(w(weights, L, "beta"), r));
    in.heads.push_back(useRope ? rope(head, RopeMode::Half, s, 10000.0) : head);
  }
  return in;
}

/// (u * o) @ W_out + b_out + x.
Tensor gatedOutput(const Tensor &u, const Tensor &o, const Tensor &x,
                   const WeightMap &weights, const std::string &L) {
  return add(dense(mul(u, o), w(weights, L, "out.weight"),
                   w(weights, L, "out.bias")),
             x);
}

/// h = Norm(x); q, k, v = split(h @ W_qkv + b_qkv, [d, d, d]).
std::vector<Tensor> qkv(const Tensor &x, const WeightMap &weights,
                        const std::string &L, NormKind kind, double eps) {
  const int64_t d = x.dim(-1);
  return split(dense(norm(x, weights, L, kind, eps),
                     w(weights, L, "qkv.weight"), w(weights, L, "qkv.bias")),
               {d, d, d});
}

/// Softmax attention with score qk / sqrt(dh) and the output projection.
Tensor softmaxLayer(const Tensor &x, const WeightMap &weights,
                    const std::string &L, int64_t heads, NormKind kind,
                    double eps, Mask mask) {
  std::vector<Tensor> p = qkv(x, weights, L, kind, eps);
  const double scale =
      1.0 / std::sqrt(static_cast<double>(x.dim(-1) / heads));
  Tensor o = attention(
      p[0], p[1], p[2],
      [scale](double qk, int64_t, int64_t, int64_t) { return qk * scale; },
      mask, Normalize::Softmax, heads);
  return add(dense(o, w(weights, L, "out.weight"), w(weights, L, "out.bias")),
             x);
}

} // namespace

Tensor gau(const Tensor &x, const WeightMap &weights, const GauConfig &config,
           GauTrace *trace) {
  GauInputs in = gauInputs(x, weights, config.layerName, config.norm,
                           config.eps, config.e, config.s, 2, config.rope);
  const Tensor *relPos = config.relPos == RelPosKind::Toeplitz
                             ? &w(weights, config.layerName, "rel_pos")
                             : nullptr;
  const int64_t M = config.maxLen;
  Tensor av = attention(
      in.heads[0], in.heads[1], in.v,
      [relPos, M](double qk, int64_t i, int64_t j, int64_t n) {
        double r = std::max(
            qk / static_cast<double>(n) + (relPos ? relPosBias(*relPos, i, j, M) : 0.0),
            0.0);
        return r * r;
      },
      Mask{config.causal ? MaskKind::Causal : MaskKind::None, 0},
      Normalize::None, 1);
  if (trace)
    *trace = GauTrace{in.u, av, Tensor(av.shape)};
  return gatedOutput(in.u, av, x, weights, config.layerName);
}

Tensor flash(const Tensor &x, const WeightMap &weights,
             const FlashConfig &config, GauTrace *trace) {
  GauInputs in = gauInputs(x, weights, config.layerName, config.norm,
                           config.eps, config.e, config.s, 4, config.rope);
  const Tensor *relPos = config.relPos == RelPosKind::Toeplitz
                             ? &w(weights, config.layerName, "rel_pos")
                             : nullptr;
  const int64_t C = config.chunk;
  // Inside one chunk j - i is the within-chunk distance, so the bias of the
  // global (i, j) with max_len C is FLASH's B[i mod C, j mod C].
  Tensor quad = attention(
      in.heads[0], in.heads[1], in.v,
      [relPos, C](double qk, int64_t i, int64_t j, int64_t) {
        double r = std::max(qk / static_cast<double>(C) +
                                (relPos ? relPosBias(*relPos, i, j, C) : 0.0),
                            0.0);
        return r * r;
      },
      Mask{config.causal ? MaskKind::CausalChunk : MaskKind::Chunk, C},
      Normalize::None, 1);
  Tensor lin = chunkedLinear(in.heads[2], in.heads[3], in.v, C, config.causal,
                             1.0 / static_cast<double>(C));
  if (trace)
    *trace = GauTrace{in.u, quad, lin};
  return gatedOutput(in.u, add(quad, lin), x, weights, config.layerName);
}

Tensor mhsa(const Tensor &x, const WeightMap &weights,
            const MhsaConfig &config) {
  return softmaxLayer(x, weights, config.layerName, config.heads, config.norm,
                      config.eps,
                      Mask{config.causal ? MaskKind::Causal : MaskKind::None, 0});
}

Tensor localAttention(const Tensor &x, const WeightMap &weights,
                      const LocalAttentionConfig &config) {
  MaskKind kind = config.block
                      ? (config.causal ? MaskKind::CausalChunk : MaskKind::Chunk)
                      : (config.causal ? MaskKind::Window : MaskKind::Band);
  return softmaxLayer(x, weights, config.layerName, config.heads, config.norm,
                      config.eps, Mask{kind, config.window});
}

Tensor linearAttention(const Tensor &x, const WeightMap &weights,
                       const LinearAttentionConfig &config) {
  std::vector<Tensor> p =
      qkv(x, weights, config.layerName, config.norm, config.eps);
  const int64_t H = config.heads, dh = x.dim(-1) / H;
  std::vector<int64_t> sizes(static_cast<size_t>(H), dh);
  std::vector<Tensor> q = split(p[0], sizes), k = split(p[1], sizes),
                      v = split(p[2], sizes), o;
  for (int64_t h = 0; h < H; ++h)
    o.push_back(linearAttn(q[static_cast<size_t>(h)], k[static_cast<size_t>(h)],
                           v[static_cast<size_t>(h)], config.feature,
                           config.causal, true, 1.0));
  return add(dense(concatLast(o), w(weights, config.layerName, "out.weight"),
                   w(weights, config.layerName, "out.bias")),
             x);
}

Tensor gluFfn(const Tensor &x, const WeightMap &weights,
              const GluFfnConfig &config) {
  const std::string &L = config.layerName;
  std::vector<Tensor> ab =
      split(dense(norm(x, weights, L, config.norm, config.eps),
                  w(weights, L, "in.weight"), w(weights, L, "in.bias")),
            {config.hidden, config.hidden});
  auto act = [&](const Tensor &t) {
    switch (config.activation) {
    case Activation::Silu:
      return silu(t);
    case Activation::Gelu:
      return gelu(t);
    case Activation::Relu:
      return relu(t);
    case Activation::Sigmoid:
      return sigmoid(t);
    case Activation::Tanh:
      return ref::tanh(t);
    }
    throw std::runtime_error("reference: unknown activation");
  };
  return add(dense(mul(act(ab[0]), act(ab[1])), w(weights, L, "out.weight"),
                   w(weights, L, "out.bias")),
             x);
}

//===----------------------------------------------------------------------===//
// Random weights
//===----------------------------------------------------------------------===//

namespace {

/// Adds the norm weights of a layer (gains around 1, biases around 0).
void addNorm(WeightMap &m, const std::string &L, NormKind kind, int64_t d,
             uint64_t seed) {
  int64_t gains = kind == NormKind::ScaleNorm ? 1 : d;
  m[L + ".norm.weight"] = add(randomTensor({gains}, seed, 0.2), Tensor::scalar(1.0));
  if (kind == NormKind::LayerNorm)
    m[L + ".norm.bias"] = randomTensor({d}, seed + 1, 0.2);
}

WeightMap gauLike(const std::string &L, NormKind kind, int64_t d, int64_t e,
                  int64_t s, int64_t rows, int64_t relLen, uint64_t seed,
                  double scale) {
  WeightMap m;
  addNorm(m, L, kind, d, seed);
  m[L + ".uvz.weight"] = randomTensor({d, 2 * e + s}, seed + 2, scale);
  m[L + ".uvz.bias"] = randomTensor({2 * e + s}, seed + 3, scale);
  m[L + ".gamma"] = randomTensor({rows, s}, seed + 4, 1.0);
  m[L + ".beta"] = randomTensor({rows, s}, seed + 5, scale);
  if (relLen > 0)
    m[L + ".rel_pos"] = randomTensor({relLen}, seed + 6, scale);
  m[L + ".out.weight"] = randomTensor({e, d}, seed + 7, scale);
  m[L + ".out.bias"] = randomTensor({d}, seed + 8, scale);
  return m;
}

} // namespace

WeightMap randomWeights(const GauConfig &c, int64_t d, uint64_t seed,
                        double scale) {
  return gauLike(c.layerName, c.norm, d, c.e, c.s, 2,
                 c.relPos == RelPosKind::Toeplitz ? 2 * c.maxLen - 1 : 0, seed,
                 scale);
}

WeightMap randomWeights(const FlashConfig &c, int64_t d, uint64_t seed,
                        double scale) {
  return gauLike(c.layerName, c.norm, d, c.e, c.s, 4,
                 c.relPos == RelPosKind::Toeplitz ? 2 * c.chunk - 1 : 0, seed,
                 scale);
}

WeightMap randomQkvWeights(const std::string &L, NormKind kind, int64_t d,
                           uint64_t seed, double scale) {
  WeightMap m;
  addNorm(m, L, kind, d, seed);
  m[L + ".qkv.weight"] = randomTensor({d, 3 * d}, seed + 2, scale);
  m[L + ".qkv.bias"] = randomTensor({3 * d}, seed + 3, scale);
  m[L + ".out.weight"] = randomTensor({d, d}, seed + 4, scale);
  m[L + ".out.bias"] = randomTensor({d}, seed + 5, scale);
  return m;
}

WeightMap randomWeights(const GluFfnConfig &c, int64_t d, uint64_t seed,
                        double scale) {
  WeightMap m;
  addNorm(m, c.layerName, c.norm, d, seed);
  m[c.layerName + ".in.weight"] = randomTensor({d, 2 * c.hidden}, seed + 2, scale);
  m[c.layerName + ".in.bias"] = randomTensor({2 * c.hidden}, seed + 3, scale);
  m[c.layerName + ".out.weight"] = randomTensor({c.hidden, d}, seed + 4, scale);
  m[c.layerName + ".out.bias"] = randomTensor({d}, seed + 5, scale);
  return m;
}

} // namespace attnc::ref::composed
