//===- Layers.cpp - GAU, GLU FFN and the shared layer helpers -------------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements the weight lookup, the private layer helpers of
// LayerUtil.h (pre-norm, dense, half-split RoPE, output projection with the
// residual), the GAU layer of spec §2.2 and the GLU FFN of spec §2.1, in
// plain double-precision loops.
//
//===----------------------------------------------------------------------===//

#include "tests/reference/LayerUtil.h"

#include <cmath>

namespace attnc::ref {

const Tensor &lookupWeight(const WeightMap &weights, const std::string &name,
                           const std::vector<int64_t> &shape) {
  auto it = weights.find(name);
  if (it == weights.end())
    throw std::runtime_error("reference: missing weight '" + name +
                             "' (expected shape " + Tensor::shapeString(shape) +
                             ")");
  if (it->second.shape != shape)
    throw std::runtime_error("reference: weight '" + name + "' has shape " +
                             Tensor::shapeString(it->second.shape) +
                             ", expected " + Tensor::shapeString(shape));
  return it->second;
}

namespace detail {

LayerShape layerShape(const Tensor &x) {
  if (x.rank() < 2)
    throw std::runtime_error("reference: a layer input needs rank >= 2, got " +
                             Tensor::shapeString(x.shape));
  LayerShape shape;
  shape.n = x.dim(-2);
  shape.d = x.dim(-1);
  shape.batch = shape.n * shape.d == 0 ? 0 : x.numel() / (shape.n * shape.d);
  return shape;
}

Mat batchRows(const Tensor &x, const LayerShape &shape, int64_t b) {
  Mat m(shape.n, shape.d);
  const int64_t base = b * shape.n * shape.d;
  for (int64_t i = 0; i < shape.n * shape.d; ++i)
    m.a[static_cast<size_t>(i)] = x[base + i];
  return m;
}

void storeRows(Tensor &out, const LayerShape &shape, int64_t b, const Mat &m) {
  const int64_t base = b * shape.n * shape.d;
  for (int64_t i = 0; i < shape.n * shape.d; ++i)
    out[base + i] = m.a[static_cast<size_t>(i)];
}

const Tensor &layerWeight(const WeightMap &weights,
                          const std::string &layerName, const std::string &part,
                          const std::vector<int64_t> &shape) {
  return lookupWeight(weights, layerName + "." + part, shape);
}

Mat normRows(const Mat &x, const WeightMap &weights,
             const std::string &layerName, NormKind norm, double eps,
             bool clamp) {
  const int64_t d = x.cols;
  Mat h(x.rows, d);
  const Tensor &g = layerWeight(weights, layerName, "norm.weight",
                                {norm == NormKind::ScaleNorm ? 1 : d});
  const Tensor *beta = norm == NormKind::LayerNorm
                           ? &layerWeight(weights, layerName, "norm.bias", {d})
                           : nullptr;
  for (int64_t r = 0; r < x.rows; ++r) {
    if (norm == NormKind::LayerNorm) {
      double mean = 0.0, var = 0.0;
      for (int64_t c = 0; c < d; ++c)
        mean += x(r, c);
      mean /= static_cast<double>(d);
      for (int64_t c = 0; c < d; ++c)
        var += (x(r, c) - mean) * (x(r, c) - mean);
      var /= static_cast<double>(d);
      for (int64_t c = 0; c < d; ++c)
        h(r, c) = (x(r, c) - mean) / std::sqrt(var + eps) * g[c] + (*beta)[c];
    } else {
      double meanSquare = 0.0;
      for (int64_t c = 0; c < d; ++c)
        meanSquare += x(r, c) * x(r, c);
      meanSquare /= static_cast<double>(d);
      const double inv = clamp ? 1.0 / std::max(std::sqrt(meanSquare), eps)
                               : 1.0 / std::sqrt(meanSquare + eps);
      for (int64_t c = 0; c < d; ++c)
        h(r, c) = x(r, c) * inv * (norm == NormKind::ScaleNorm ? g[0] : g[c]);
    }
  }
  return h;
}

Mat gatedProjection(const Mat &x, const WeightMap &weights,
                    const std::string &layerName, NormKind norm, double eps,
                    const Tensor &wUvz, const Tensor &bUvz,
                    const GatedOptions &options) {
  Mat h = normRows(x, weights, layerName, norm, eps, options.normClamp);
  if (options.shiftTokens) {
    // Backwards, so that row r - 1 is still unshifted when row r reads it.
    const int64_t shifted = (h.cols + 1) / 2;
    for (int64_t r = h.rows - 1; r >= 0; --r)
      for (int64_t c = 0; c < shifted; ++c)
        h(r, c) = r == 0 ? 0.0 : h(r - 1, c);
  }
  Mat uvz = denseRows(h, wUvz, bUvz);
  for (double &value : uvz.a)
    value = value / (1.0 + std::exp(-value)); // SiLU
  return uvz;
}

Mat denseRows(const Mat &x, const Tensor &w, const Tensor &bias) {
  const int64_t k = w.dim(0), n = w.dim(1);
  if (x.cols != k)
    throw std::runtime_error("reference: dense with mismatched widths");
  Mat y(x.rows, n);
  for (int64_t r = 0; r < x.rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double sum = bias[j];
      for (int64_t p = 0; p < k; ++p)
        sum += x(r, p) * w[p * n + j];
      y(r, j) = sum;
    }
  return y;
}

void ropeRows(Mat &x, RopeMode mode, int64_t dims) {
  const int64_t h = (dims == 0 ? x.cols : dims) / 2;
  for (int64_t p = 0; p < x.rows; ++p)
    for (int64_t i = 0; i < h; ++i) {
      // inv_freq[i] = 10000^(-i / h), theta = p * inv_freq[i]
      const double theta =
          static_cast<double>(p) *
          std::pow(10000.0, -static_cast<double>(i) / static_cast<double>(h));
      const int64_t a = mode == RopeMode::Half ? i : 2 * i;
      const int64_t b = mode == RopeMode::Half ? i + h : 2 * i + 1;
      const double x1 = x(p, a), x2 = x(p, b);
      x(p, a) = x1 * std::cos(theta) - x2 * std::sin(theta);
      x(p, b) = x2 * std::cos(theta) + x1 * std::sin(theta);
    }
}

double gatedT5Bias(const Tensor *table, const GatedOptions &options,
                   int64_t i, int64_t j, bool causal, double scale) {
  if (!table)
    return 0.0;
  return t5Bias(*table, i, j, causal, options.numBuckets, options.maxDistance,
                scale);
}

Mat columns(const Mat &x, int64_t start, int64_t count) {
  Mat y(x.rows, count);
  for (int64_t r = 0; r < x.rows; ++r)
    for (int64_t c = 0; c < count; ++c)
      y(r, c) = x(r, start + c);
  return y;
}

Mat outputProjection(const Mat &o, const Mat &x, const WeightMap &weights,
                     const std::string &layerName, int64_t d) {
  const Tensor &w = layerWeight(weights, layerName, "out.weight", {o.cols, d});
  const Tensor &b = layerWeight(weights, layerName, "out.bias", {d});
  Mat y = denseRows(o, w, b);
  for (size_t i = 0; i < y.a.size(); ++i)
    y.a[i] += x.a[i];
  return y;
}

} // namespace detail

using namespace detail;

Tensor gau(const Tensor &x, const WeightMap &weights, const GauConfig &config,
           GauTrace *trace) {
  const LayerShape shape = layerShape(x);
  const int64_t n = shape.n, d = shape.d, e = config.e, s = config.s;
  const std::string &L = config.layerName;
  const Tensor &wUvz = layerWeight(weights, L, "uvz.weight", {d, 2 * e + s});
  const Tensor &bUvz = layerWeight(weights, L, "uvz.bias", {2 * e + s});
  const Tensor &gamma = layerWeight(weights, L, "gamma", {2, s});
  const Tensor &beta = layerWeight(weights, L, "beta", {2, s});
  const int64_t M = config.maxLen;
  const GatedOptions &options = config.options;
  const Tensor *relPos =
      config.relPos == RelPosKind::Toeplitz
          ? &layerWeight(weights, L, "rel_pos", {2 * M - 1})
          : nullptr;
  // FLASH-pytorch's GAU: T5 scaled by sqrt(d), divided by n with q.k.
  const Tensor *t5 =
      config.relPos == RelPosKind::T5
          ? &layerWeight(weights, L, "rel_pos", {options.numBuckets})
          : nullptr;
  const double t5Scale = std::sqrt(static_cast<double>(d));
  Tensor out(x.shape);
  std::vector<int64_t> traceShape = x.shape;
  traceShape.back() = e;
  if (trace)
    trace->u = trace->quad = trace->lin = Tensor(traceShape);

  for (int64_t b = 0; b < shape.batch; ++b) {
    Mat xb = batchRows(x, shape, b);
    Mat uvz = gatedProjection(xb, weights, L, config.norm, config.eps, wUvz,
                              bUvz, options);
    Mat u = columns(uvz, 0, e), v = columns(uvz, e, e), z = columns(uvz, 2 * e, s);
    Mat q(n, s), k(n, s);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < s; ++c) {
        q(i, c) = z(i, c) * gamma[c] + beta[c];
        k(i, c) = z(i, c) * gamma[s + c] + beta[s + c];
      }
    if (config.rope) {
      ropeRows(q, options.ropeMode, options.ropeDims);
      ropeRows(k, options.ropeMode, options.ropeDims);
    }
    // A[i, j] = relu(q_i . k_j / n + bias[i, j])^2, zero for j > i if causal.
    Mat av(n, e);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        if (config.causal && j > i)
          continue;
        double qk = 0.0;
        for (int64_t c = 0; c < s; ++c)
          qk += q(i, c) * k(j, c);
        double bias = 0.0;
        if (relPos) {
          int64_t delta = std::min(std::max(j - i, -(M - 1)), M - 1);
          bias = (*relPos)[delta + M - 1];
        }
        qk += gatedT5Bias(t5, options, i, j, config.causal, t5Scale);
        double r = std::max(qk / static_cast<double>(n) + bias, 0.0);
        double a = r * r;
        for (int64_t c = 0; c < e; ++c)
          av(i, c) += a * v(j, c);
      }
    Mat o(n, e);
    for (size_t i = 0; i < o.a.size(); ++i)
      o.a[i] = u.a[i] * av.a[i];
    storeRows(out, shape, b, outputProjection(o, xb, weights, L, d));
    if (trace)
      for (int64_t i = 0; i < n * e; ++i) {
        trace->u[b * n * e + i] = u.a[static_cast<size_t>(i)];
        trace->quad[b * n * e + i] = av.a[static_cast<size_t>(i)];
      }
  }
  return out;
}

Tensor gluFfn(const Tensor &x, const WeightMap &weights,
              const GluFfnConfig &config) {
  const LayerShape shape = layerShape(x);
  const int64_t d = shape.d, h = config.hidden;
  const std::string &L = config.layerName;
  const Tensor &wIn = layerWeight(weights, L, "in.weight", {d, 2 * h});
  const Tensor &bIn = layerWeight(weights, L, "in.bias", {2 * h});
  Tensor out(x.shape);
  for (int64_t b = 0; b < shape.batch; ++b) {
    Mat xb = batchRows(x, shape, b);
    Mat ab = denseRows(normRows(xb, weights, L, config.norm, config.eps), wIn,
                       bIn);
    Mat o(shape.n, h);
    for (int64_t i = 0; i < shape.n; ++i)
      for (int64_t c = 0; c < h; ++c)
        o(i, c) = activationScalar(config.activation, ab(i, c)) *
                  activationScalar(config.activation, ab(i, h + c));
    storeRows(out, shape, b, outputProjection(o, xb, weights, L, d));
  }
  return out;
}

} // namespace attnc::ref
