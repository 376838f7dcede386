//===- NormPrimitives.cpp - norms, scale-offset and RoPE ------------------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements the fp64 reference of the feature-axis primitives of
// dsl/IR/AttnNormOps.td: layer_norm (biased variance, eps inside the sqrt),
// scale_norm (one scalar gain), rms_norm, scale_offset, and rope along the
// sequence axis in the half-split and interleaved layouts (spec §2.4.2).
//
//===----------------------------------------------------------------------===//

#include "tests/reference/Primitives.h"

#include <cmath>
#include <functional>

namespace attnc::ref {

namespace {

[[noreturn]] void fail(const std::string &message) {
  throw std::runtime_error("reference: " + message);
}

/// Throws unless `t` (when given) is a rank-1 tensor of `f` elements.
void checkFeatureVector(const Tensor *t, int64_t f, const char *what) {
  if (t && (t->rank() != 1 || t->dim(0) != f))
    fail(std::string(what) + " must be [" + std::to_string(f) + "], got " +
         Tensor::shapeString(t->shape));
}

/// The number of rows of x seen as [rows, f].
int64_t rowsOf(const Tensor &x) {
  if (x.rank() < 1)
    fail("norms need rank >= 1");
  return x.dim(-1) == 0 ? 0 : x.numel() / x.dim(-1);
}

} // namespace

Tensor layerNorm(const Tensor &x, const Tensor *weight, const Tensor *bias,
                 double eps) {
  const int64_t rows = rowsOf(x), f = x.dim(-1);
  checkFeatureVector(weight, f, "layer_norm weight");
  checkFeatureVector(bias, f, "layer_norm bias");
  Tensor result(x.shape);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = r * f;
    double mean = 0.0;
    for (int64_t c = 0; c < f; ++c)
      mean += x[base + c];
    mean /= static_cast<double>(f);
    double var = 0.0;
    for (int64_t c = 0; c < f; ++c)
      var += (x[base + c] - mean) * (x[base + c] - mean);
    var /= static_cast<double>(f); // biased variance
    const double inv = 1.0 / std::sqrt(var + eps);
    for (int64_t c = 0; c < f; ++c) {
      double value = (x[base + c] - mean) * inv;
      if (weight)
        value *= (*weight)[c];
      if (bias)
        value += (*bias)[c];
      result[base + c] = value;
    }
  }
  return result;
}

/// x * rsqrt(mean(x^2) + eps) * gain(c) per row: RMSNorm, and ScaleNorm
/// with one gain for every column.
static Tensor rmsScaled(const Tensor &x, double eps,
                        const std::function<double(int64_t)> &gain,
                        bool clamp = false) {
  const int64_t rows = rowsOf(x), f = x.dim(-1);
  Tensor result(x.shape);
  for (int64_t r = 0; r < rows; ++r) {
    double meanSquare = 0.0;
    for (int64_t c = 0; c < f; ++c)
      meanSquare += x[r * f + c] * x[r * f + c];
    meanSquare /= static_cast<double>(f);
    const double inv = clamp ? 1.0 / std::max(std::sqrt(meanSquare), eps)
                             : 1.0 / std::sqrt(meanSquare + eps);
    for (int64_t c = 0; c < f; ++c)
      result[r * f + c] = x[r * f + c] * inv * gain(c);
  }
  return result;
}

Tensor scaleNorm(const Tensor &x, const Tensor &alpha, double eps,
                 bool clamp) {
  checkFeatureVector(&alpha, 1, "scale_norm alpha");
  return rmsScaled(x, eps, [&](int64_t) { return alpha[0]; }, clamp);
}

Tensor rmsNorm(const Tensor &x, const Tensor *weight, double eps) {
  checkFeatureVector(weight, x.dim(-1), "rms_norm weight");
  return rmsScaled(x, eps,
                   [&](int64_t c) { return weight ? (*weight)[c] : 1.0; });
}

Tensor scaleOffset(const Tensor &x, const Tensor &gamma, const Tensor &beta) {
  const int64_t rows = rowsOf(x), f = x.dim(-1);
  checkFeatureVector(&gamma, f, "scale_offset gamma");
  checkFeatureVector(&beta, f, "scale_offset beta");
  Tensor result(x.shape);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < f; ++c)
      result[r * f + c] = x[r * f + c] * gamma[c] + beta[c];
  return result;
}

Tensor sinusoidal(const Tensor &x, double base) {
  if (x.rank() < 2 || x.dim(-1) % 2 != 0)
    fail("sinusoidal needs rank >= 2 and an even feature width");
  const int64_t n = x.dim(-2), d = x.dim(-1), h = d / 2;
  const int64_t rows = x.numel() / (n * d);
  Tensor result(x.shape);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t p = 0; p < n; ++p)
      for (int64_t i = 0; i < h; ++i) {
        const double theta =
            static_cast<double>(p) *
            std::pow(base, -2.0 * static_cast<double>(i) / double(d));
        result[(r * n + p) * d + i] = std::sin(theta);
        result[(r * n + p) * d + h + i] = std::cos(theta);
      }
  return result;
}

Tensor rope(const Tensor &x, RopeMode mode, int64_t rotaryDims, double base) {
  if (x.rank() < 2)
    fail("rope needs rank >= 2");
  const int64_t n = x.dim(-2), f = x.dim(-1);
  if (rotaryDims < 1 || rotaryDims % 2 != 0 || rotaryDims > f)
    fail("rope rotary_dims " + std::to_string(rotaryDims) +
         " must be positive, even and <= " + std::to_string(f));
  if (!(base > 0.0))
    fail("rope base must be > 0");
  const int64_t half = rotaryDims / 2;
  const int64_t batch = n * f == 0 ? 0 : x.numel() / (n * f);
  Tensor result = x; // features r..f-1 pass through
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t p = 0; p < n; ++p) {
      const int64_t rowBase = (b * n + p) * f;
      for (int64_t i = 0; i < half; ++i) {
        // theta[p, i] = p * base^(-2i / r)
        const double invFreq =
            std::pow(base, -2.0 * static_cast<double>(i) /
                               static_cast<double>(rotaryDims));
        const double theta = static_cast<double>(p) * invFreq;
        const double cs = std::cos(theta), sn = std::sin(theta);
        const int64_t ia = mode == RopeMode::Half ? i : 2 * i;
        const int64_t ib = mode == RopeMode::Half ? i + half : 2 * i + 1;
        const double a = x[rowBase + ia], bValue = x[rowBase + ib];
        result[rowBase + ia] = a * cs - bValue * sn;
        result[rowBase + ib] = bValue * cs + a * sn;
      }
    }
  return result;
}

} // namespace attnc::ref
