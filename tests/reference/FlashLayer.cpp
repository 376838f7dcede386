//===- FlashLayer.cpp - FLASH mixed chunk attention, chunk by chunk -------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements the fp64 reference of attn.flash as the chunked
// algorithm of spec §3.2 with the padding of spec §3.5: the projections
// quad_q, quad_k, lin_q, lin_k and v are zero-padded after RoPE to G*C rows,
// the local relu² attention runs inside each chunk with padded keys masked,
// the per-chunk states lin_k^T v / C are combined by an exclusive prefix
// over chunks (causal) or a total (non-causal), and the output is sliced
// back to n rows before the gate u is applied.
//
//===----------------------------------------------------------------------===//

#include "tests/reference/LayerUtil.h"

#include <cmath>

namespace attnc::ref {

using namespace detail;

Tensor flash(const Tensor &x, const WeightMap &weights,
             const FlashConfig &config, GauTrace *trace) {
  const LayerShape shape = layerShape(x);
  const int64_t n = shape.n, d = shape.d, e = config.e, s = config.s;
  const int64_t C = config.chunk;
  if (C < 1)
    throw std::runtime_error("reference: flash chunk must be >= 1");
  const std::string &L = config.layerName;
  const Tensor &wUvz = layerWeight(weights, L, "uvz.weight", {d, 2 * e + s});
  const Tensor &bUvz = layerWeight(weights, L, "uvz.bias", {2 * e + s});
  const Tensor &gamma = layerWeight(weights, L, "gamma", {4, s});
  const Tensor &beta = layerWeight(weights, L, "beta", {4, s});
  const GatedOptions &options = config.options;
  const Tensor *relPos =
      config.relPos == RelPosKind::Toeplitz
          ? &layerWeight(weights, L, "rel_pos", {2 * C - 1})
          : nullptr;
  // FLASH-pytorch's T5 bias, scaled by sqrt(s), positions within the chunk.
  const Tensor *t5 =
      config.relPos == RelPosKind::T5
          ? &layerWeight(weights, L, "rel_pos", {options.numBuckets})
          : nullptr;
  const double t5Scale = std::sqrt(static_cast<double>(s));
  // The states' divisor: C, or n (FLASH-pytorch's non-causal linear part).
  const double stateDivisor =
      static_cast<double>(config.linByLength ? n : C);
  const int64_t G = (n + C - 1) / C, padded = G * C;
  Tensor out(x.shape);
  std::vector<int64_t> traceShape = x.shape;
  traceShape.back() = e;
  if (trace)
    trace->u = trace->quad = trace->lin = Tensor(traceShape);

  for (int64_t b = 0; b < shape.batch; ++b) {
    Mat xb = batchRows(x, shape, b);
    Mat uvz = gatedProjection(xb, weights, L, config.norm, config.eps, wUvz,
                              bUvz, options);
    Mat u = columns(uvz, 0, e), z = columns(uvz, 2 * e, s);
    // base[r] = z * gamma[r] + beta[r] for r = quad_q, quad_k, lin_q, lin_k,
    // rotated at the global positions 0..n-1 (= g*C + c).
    Mat heads[4];
    for (int r = 0; r < 4; ++r) {
      heads[r] = Mat(n, s);
      for (int64_t i = 0; i < n; ++i)
        for (int64_t c = 0; c < s; ++c)
          heads[r](i, c) = z(i, c) * gamma[r * s + c] + beta[r * s + c];
      if (config.rope)
        ropeRows(heads[r], options.ropeMode, options.ropeDims);
    }
    // Zero-pad quad_q, quad_k, lin_q, lin_k and v to G*C rows.
    auto pad = [&](const Mat &m) {
      Mat p(padded, m.cols);
      std::copy(m.a.begin(), m.a.end(), p.a.begin());
      return p;
    };
    const Mat qq = pad(heads[0]), kq = pad(heads[1]);
    const Mat ql = pad(heads[2]), kl = pad(heads[3]);
    const Mat v = pad(columns(uvz, e, e));

    // Local quadratic attention inside each chunk (the padded rows are
    // computed too and dropped by the slice at the end).
    Mat quad(padded, e);
    for (int64_t g = 0; g < G; ++g)
      for (int64_t ci = 0; ci < C; ++ci)
        for (int64_t cj = 0; cj < C; ++cj) {
          const int64_t i = g * C + ci, j = g * C + cj;
          if (j >= n)
            continue; // padded key
          if (config.causal && cj > ci)
            continue; // tril, diagonal kept
          double qk = 0.0;
          for (int64_t c = 0; c < s; ++c)
            qk += qq(i, c) * kq(j, c);
          double bias = 0.0;
          if (relPos) {
            int64_t delta = std::min(std::max(cj - ci, -(C - 1)), C - 1);
            bias = (*relPos)[delta + C - 1];
          }
          bias += gatedT5Bias(t5, options, ci, cj, config.causal, t5Scale);
          double r = std::max(qk / static_cast<double>(C) + bias, 0.0);
          for (int64_t c = 0; c < e; ++c)
            quad(i, c) += r * r * v(j, c);
        }

    // Per-chunk states lin_kv[g] = lin_k_g^T v_g / C : [s, e] (/ n with
    // linByLength).
    std::vector<Mat> linKv(static_cast<size_t>(G), Mat(s, e));
    for (int64_t g = 0; g < G; ++g)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t a = 0; a < s; ++a)
          for (int64_t f = 0; f < e; ++f)
            linKv[static_cast<size_t>(g)](a, f) +=
                kl(g * C + c, a) * v(g * C + c, f) / stateDivisor;
    // Combine: mask[g, h] = h < g (causal) or 1 (non-causal).
    Mat lin(padded, e);
    for (int64_t g = 0; g < G; ++g) {
      Mat state(s, e);
      for (int64_t h = 0; h < G; ++h)
        if (!config.causal || h < g)
          for (size_t i = 0; i < state.a.size(); ++i)
            state.a[i] += linKv[static_cast<size_t>(h)].a[i];
      for (int64_t c = 0; c < C; ++c)
        for (int64_t f = 0; f < e; ++f) {
          double sum = 0.0;
          for (int64_t a = 0; a < s; ++a)
            sum += ql(g * C + c, a) * state(a, f);
          lin(g * C + c, f) = sum;
        }
    }

    // Slice [:n], gate, output projection and residual.
    Mat o(n, e);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t f = 0; f < e; ++f)
        o(i, f) = u(i, f) * (quad(i, f) + lin(i, f));
    storeRows(out, shape, b, outputProjection(o, xb, weights, L, d));
    if (trace)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t f = 0; f < e; ++f) {
          const int64_t at = (b * n + i) * e + f;
          trace->u[at] = u(i, f);
          trace->quad[at] = quad(i, f);
          trace->lin[at] = lin(i, f);
        }
  }
  return out;
}

} // namespace attnc::ref
