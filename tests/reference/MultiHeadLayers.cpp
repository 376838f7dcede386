//===- MultiHeadLayers.cpp - mhsa, linear and local attention layers ------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements the fp64 reference of the three multi-head layer ops
// that share the `L.qkv` / `L.out` weights: softmax MHSA, kernelised linear
// attention (in its recurrent state form) and local attention with the
// window/block visibility table of attn.local_attention.
//
//===----------------------------------------------------------------------===//

#include "tests/reference/LayerUtil.h"

#include <cmath>
#include <functional>

namespace attnc::ref {

using namespace detail;

namespace {

/// Computes one head's output o [n, dh] from q, k, v [n, dh].
using HeadFn = std::function<Mat(const Mat &q, const Mat &k, const Mat &v)>;

/// The shared skeleton: h = Norm(x), q, k, v = split(h @ W_qkv + b_qkv),
/// o = concat over heads of headFn(q_h, k_h, v_h), y = o @ W_out + b_out + x.
Tensor multiHeadLayer(const Tensor &x, const WeightMap &weights,
                      const std::string &L, int64_t heads, NormKind norm,
                      double eps, const HeadFn &headFn) {
  const LayerShape shape = layerShape(x);
  const int64_t n = shape.n, d = shape.d;
  if (heads < 1 || d % heads != 0)
    throw std::runtime_error("reference: heads must be >= 1 and divide d");
  const int64_t dh = d / heads;
  const Tensor &wQkv = layerWeight(weights, L, "qkv.weight", {d, 3 * d});
  const Tensor &bQkv = layerWeight(weights, L, "qkv.bias", {3 * d});
  Tensor out(x.shape);
  for (int64_t b = 0; b < shape.batch; ++b) {
    Mat xb = batchRows(x, shape, b);
    Mat qkv = denseRows(normRows(xb, weights, L, norm, eps), wQkv, bQkv);
    Mat o(n, d);
    for (int64_t h = 0; h < heads; ++h) {
      Mat oh = headFn(columns(qkv, h * dh, dh), columns(qkv, d + h * dh, dh),
                      columns(qkv, 2 * d + h * dh, dh));
      for (int64_t i = 0; i < n; ++i)
        for (int64_t c = 0; c < dh; ++c)
          o(i, h * dh + c) = oh(i, c);
    }
    storeRows(out, shape, b, outputProjection(o, xb, weights, L, d));
  }
  return out;
}

/// softmax(q k^T / sqrt(dh)) v over the keys j with visible(i, j).
Mat softmaxHead(const Mat &q, const Mat &k, const Mat &v,
                const std::function<bool(int64_t, int64_t)> &visible) {
  const int64_t n = q.rows, dh = q.cols;
  const double scale = 1.0 / std::sqrt(static_cast<double>(dh));
  Mat o(n, v.cols);
  std::vector<double> logits(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    double rowMax = -INFINITY;
    for (int64_t j = 0; j < n; ++j) {
      if (!visible(i, j))
        continue;
      double dot = 0.0;
      for (int64_t c = 0; c < dh; ++c)
        dot += q(i, c) * k(j, c);
      logits[static_cast<size_t>(j)] = dot * scale;
      rowMax = std::max(rowMax, dot * scale);
    }
    double sum = 0.0;
    for (int64_t j = 0; j < n; ++j)
      if (visible(i, j))
        sum += std::exp(logits[static_cast<size_t>(j)] - rowMax);
    for (int64_t j = 0; j < n; ++j) {
      if (!visible(i, j))
        continue;
      const double p = std::exp(logits[static_cast<size_t>(j)] - rowMax) / sum;
      for (int64_t c = 0; c < v.cols; ++c)
        o(i, c) += p * v(j, c);
    }
  }
  return o;
}

} // namespace

Tensor mhsa(const Tensor &x, const WeightMap &weights,
            const MhsaConfig &config) {
  const bool causal = config.causal;
  return multiHeadLayer(
      x, weights, config.layerName, config.heads, config.norm, config.eps,
      [&](const Mat &q, const Mat &k, const Mat &v) {
        return softmaxHead(q, k, v, [&](int64_t i, int64_t j) {
          return !causal || j <= i;
        });
      });
}

Tensor localAttention(const Tensor &x, const WeightMap &weights,
                      const LocalAttentionConfig &config) {
  const int64_t W = config.window;
  if (W < 1)
    throw std::runtime_error("reference: local_attention window must be >= 1");
  const bool causal = config.causal, block = config.block;
  // The visibility table of attn.local_attention.
  auto visible = [=](int64_t i, int64_t j) {
    if (!block)
      return causal ? (0 <= i - j && i - j < W) : std::llabs(i - j) < W;
    return i / W == j / W && (!causal || j <= i);
  };
  return multiHeadLayer(x, weights, config.layerName, config.heads,
                        config.norm, config.eps,
                        [&](const Mat &q, const Mat &k, const Mat &v) {
                          return softmaxHead(q, k, v, visible);
                        });
}

Tensor linearAttention(const Tensor &x, const WeightMap &weights,
                       const LinearAttentionConfig &config) {
  const FeatureMap feature = config.feature;
  const bool causal = config.causal;
  return multiHeadLayer(
      x, weights, config.layerName, config.heads, config.norm, config.eps,
      [&](const Mat &q, const Mat &k, const Mat &v) {
        const int64_t n = q.rows, dh = q.cols, dv = v.cols;
        Mat phiQ(n, dh), phiK(n, dh);
        for (size_t i = 0; i < q.a.size(); ++i) {
          phiQ.a[i] = featureScalar(feature, q.a[i]);
          phiK.a[i] = featureScalar(feature, k.a[i]);
        }
        // State form: S = sum_j phi(k_j)^T v_j [dh, dv], zsum = sum_j phi(k_j),
        // over all keys, or grown one key at a time (j <= i) when causal.
        Mat state(dh, dv);
        std::vector<double> zsum(static_cast<size_t>(dh), 0.0);
        auto addKey = [&](int64_t j) {
          for (int64_t a = 0; a < dh; ++a) {
            zsum[static_cast<size_t>(a)] += phiK(j, a);
            for (int64_t c = 0; c < dv; ++c)
              state(a, c) += phiK(j, a) * v(j, c);
          }
        };
        if (!causal)
          for (int64_t j = 0; j < n; ++j)
            addKey(j);
        Mat o(n, dv);
        for (int64_t i = 0; i < n; ++i) {
          if (causal)
            addKey(i);
          double den = 0.0;
          for (int64_t a = 0; a < dh; ++a)
            den += phiQ(i, a) * zsum[static_cast<size_t>(a)];
          for (int64_t c = 0; c < dv; ++c) {
            double num = 0.0;
            for (int64_t a = 0; a < dh; ++a)
              num += phiQ(i, a) * state(a, c);
            o(i, c) = num / den;
          }
        }
        return o;
      });
}

} // namespace attnc::ref
