//===- AttentionPrimitives.cpp - attention and positional biases ----------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements the fp64 reference of the primitives of
// dsl/IR/AttnAttentionOps.td and the masks of AttnAttrs.td: attn.attention
// (score callback, structural mask, none/softmax, heads), the learned
// Toeplitz bias (centred clamp), the T5 bucketed bias (spec §7.1, log part
// in float32), kernelised linear attention and FLASH's chunked linear term.
//
//===----------------------------------------------------------------------===//

#include "tests/reference/Primitives.h"

#include <cmath>
#include <limits>

namespace attnc::ref {

namespace {

[[noreturn]] void fail(const std::string &message) {
  throw std::runtime_error("reference: " + message);
}

/// Checks that q, k, v of a sequence op have the same rank >= 2 and the same
/// batch dims, and returns the batch count.
int64_t checkQkv(const char *op, const Tensor &q, const Tensor &k,
                 const Tensor &v) {
  if (q.rank() < 2 || k.rank() != q.rank() || v.rank() != q.rank())
    fail(std::string(op) + ": q, k, v need the same rank >= 2");
  int64_t batch = 1;
  for (int64_t axis = 0; axis + 2 < q.rank(); ++axis) {
    size_t a = static_cast<size_t>(axis);
    if (k.shape[a] != q.shape[a] || v.shape[a] != q.shape[a])
      fail(std::string(op) + ": batch dims of q, k, v differ");
    batch *= q.shape[a];
  }
  if (k.dim(-2) != v.dim(-2))
    fail(std::string(op) + ": k and v have different sequence lengths");
  return batch;
}

} // namespace

bool Mask::keeps(int64_t i, int64_t j) const {
  switch (kind) {
  case MaskKind::None:
    return true;
  case MaskKind::Causal:
    return j <= i;
  case MaskKind::Window:
    return 0 <= i - j && i - j < size;
  case MaskKind::Chunk:
    return i / size == j / size;
  case MaskKind::Band:
    return std::llabs(i - j) < size;
  case MaskKind::CausalChunk:
    return i / size == j / size && j <= i;
  }
  fail("unknown mask kind");
}

Tensor attention(const Tensor &q, const Tensor &k, const Tensor &v,
                 const ScoreFn &score, Mask mask, Normalize normalize,
                 int64_t heads) {
  const int64_t batch = checkQkv("attention", q, k, v);
  if (q.dim(-1) != k.dim(-1))
    fail("attention: q and k have different feature dims");
  if (heads < 1 || q.dim(-1) % heads != 0 || v.dim(-1) % heads != 0)
    fail("attention: heads must be >= 1 and divide the feature dims");
  if (mask.kind != MaskKind::None && mask.kind != MaskKind::Causal &&
      mask.size < 1)
    fail("attention: mask size must be >= 1");
  const int64_t n = q.dim(-2), m = k.dim(-2);
  const int64_t fq = q.dim(-1), fv = v.dim(-1);
  const int64_t dk = fq / heads, dv = fv / heads;
  std::vector<int64_t> shape = q.shape;
  shape.back() = fv;
  Tensor result(shape);
  std::vector<double> weights(static_cast<size_t>(m));
  std::vector<char> kept(static_cast<size_t>(m));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < n; ++i) {
        const double *qi = &q.data[static_cast<size_t>((b * n + i) * fq + h * dk)];
        double rowMax = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < m; ++j) {
          kept[static_cast<size_t>(j)] = mask.keeps(i, j);
          weights[static_cast<size_t>(j)] = 0.0;
          if (!kept[static_cast<size_t>(j)])
            continue;
          const double *kj =
              &k.data[static_cast<size_t>((b * m + j) * fq + h * dk)];
          double qk = 0.0;
          for (int64_t c = 0; c < dk; ++c)
            qk += qi[c] * kj[c];
          double s = score(qk, i, j, m);
          weights[static_cast<size_t>(j)] = s;
          rowMax = std::max(rowMax, s);
        }
        if (normalize == Normalize::Softmax) {
          // Masked entries are -inf; a row without a finite kept score is 0.
          double sum = 0.0;
          for (int64_t j = 0; j < m; ++j) {
            double &w = weights[static_cast<size_t>(j)];
            w = kept[static_cast<size_t>(j)] && rowMax > -INFINITY
                    ? std::exp(w - rowMax)
                    : 0.0;
            sum += w;
          }
          for (int64_t j = 0; j < m; ++j)
            weights[static_cast<size_t>(j)] =
                sum > 0.0 ? weights[static_cast<size_t>(j)] / sum : 0.0;
        }
        double *out = &result.data[static_cast<size_t>((b * n + i) * fv + h * dv)];
        for (int64_t j = 0; j < m; ++j) {
          const double w = weights[static_cast<size_t>(j)];
          if (!kept[static_cast<size_t>(j)])
            continue;
          const double *vj =
              &v.data[static_cast<size_t>((b * m + j) * fv + h * dv)];
          for (int64_t c = 0; c < dv; ++c)
            out[c] += w * vj[c];
        }
      }
  return result;
}

double relPosBias(const Tensor &w, int64_t i, int64_t j, int64_t maxLen) {
  if (maxLen < 1 || w.rank() != 1 || w.dim(0) != 2 * maxLen - 1)
    fail("rel_pos_bias: w must be [2*max_len-1] = [" +
         std::to_string(2 * maxLen - 1) + "], got " +
         Tensor::shapeString(w.shape));
  const int64_t delta = std::min(std::max(j - i, -(maxLen - 1)), maxLen - 1);
  return w[delta + maxLen - 1];
}

int64_t t5Bucket(int64_t relPos, bool causal, int64_t numBuckets,
                 int64_t maxDistance) {
  int64_t nb = numBuckets, ret = 0, r = 0;
  if (causal) {
    r = std::max<int64_t>(-relPos, 0); // future keys -> bucket 0
  } else {
    nb = numBuckets / 2;
    ret = relPos > 0 ? nb : 0;
    r = std::llabs(relPos);
  }
  const int64_t exact = nb / 2;
  if (exact < 1 || maxDistance <= exact)
    fail("t5_bias: bad num_buckets/max_distance");
  if (r < exact)
    return ret + r;
  // The log part in float32, as torch computes it: log(float(r) / exact)
  // in float32, divided by the double log(max_distance / exact) rounded to
  // float32, times (nb - exact), truncated toward zero.
  const float ratio = static_cast<float>(r) / static_cast<float>(exact);
  const float logRatio = std::log(ratio);
  const float logRange = static_cast<float>(
      std::log(static_cast<double>(maxDistance) / static_cast<double>(exact)));
  const float scaled = logRatio / logRange * static_cast<float>(nb - exact);
  const int64_t large = exact + static_cast<int64_t>(scaled);
  return ret + std::min(large, nb - 1);
}

double t5Bias(const Tensor &emb, int64_t i, int64_t j, bool causal,
              int64_t numBuckets, int64_t maxDistance, double scale) {
  if (emb.rank() != 1 || emb.dim(0) != numBuckets)
    fail("t5_bias: emb must be [" + std::to_string(numBuckets) + "], got " +
         Tensor::shapeString(emb.shape));
  return emb[t5Bucket(j - i, causal, numBuckets, maxDistance)] * scale;
}

Tensor linearAttn(const Tensor &q, const Tensor &k, const Tensor &v,
                  FeatureMap feature, bool causal, bool normalize,
                  double scale) {
  const int64_t batch = checkQkv("linear_attn", q, k, v);
  if (q.dim(-1) != k.dim(-1))
    fail("linear_attn: q and k have different feature dims");
  const int64_t n = q.dim(-2), m = k.dim(-2), s = q.dim(-1), e = v.dim(-1);
  if (causal && n != m)
    fail("linear_attn: causal needs n == m");
  std::vector<int64_t> shape = q.shape;
  shape.back() = e;
  Tensor result(shape);
  std::vector<double> num(static_cast<size_t>(e));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < n; ++i) {
      std::fill(num.begin(), num.end(), 0.0);
      double den = 0.0;
      const int64_t last = causal ? i : m - 1; // inclusive j <= i
      for (int64_t j = 0; j <= last; ++j) {
        double kernel = 0.0;
        for (int64_t c = 0; c < s; ++c)
          kernel += featureScalar(feature, q[(b * n + i) * s + c]) *
                    featureScalar(feature, k[(b * m + j) * s + c]);
        den += kernel;
        for (int64_t c = 0; c < e; ++c)
          num[static_cast<size_t>(c)] += kernel * v[(b * m + j) * e + c];
      }
      for (int64_t c = 0; c < e; ++c)
        result[(b * n + i) * e + c] =
            normalize
                ? divOrZeroScalar(scale * num[static_cast<size_t>(c)], den)
                : scale * num[static_cast<size_t>(c)];
    }
  return result;
}

Tensor chunkedLinear(const Tensor &q, const Tensor &k, const Tensor &v,
                     int64_t chunk, bool causal, double scale) {
  const int64_t batch = checkQkv("chunked_linear", q, k, v);
  if (q.dim(-1) != k.dim(-1) || q.dim(-2) != k.dim(-2))
    fail("chunked_linear: q and k must have the same shape");
  if (chunk < 1)
    fail("chunked_linear: chunk must be >= 1");
  const int64_t n = q.dim(-2), s = q.dim(-1), e = v.dim(-1);
  std::vector<int64_t> shape = q.shape;
  shape.back() = e;
  Tensor result(shape);
  std::vector<double> state(static_cast<size_t>(s * e));
  // Adds k[j]^T v[j] for j in [from, to) to the state.
  auto accumulate = [&](int64_t b, int64_t from, int64_t to) {
    for (int64_t j = from; j < to; ++j)
      for (int64_t a = 0; a < s; ++a)
        for (int64_t c = 0; c < e; ++c)
          state[static_cast<size_t>(a * e + c)] +=
              k[(b * n + j) * s + a] * v[(b * n + j) * e + c];
  };
  for (int64_t b = 0; b < batch; ++b) {
    std::fill(state.begin(), state.end(), 0.0);
    if (!causal)
      accumulate(b, 0, n); // the total over all keys
    for (int64_t start = 0; start < n; start += chunk) {
      const int64_t end = std::min(start + chunk, n);
      // Causal: the state holds exactly the keys of chunks before this one.
      for (int64_t i = start; i < end; ++i)
        for (int64_t c = 0; c < e; ++c) {
          double sum = 0.0;
          for (int64_t a = 0; a < s; ++a)
            sum += q[(b * n + i) * s + a] * state[static_cast<size_t>(a * e + c)];
          result[(b * n + i) * e + c] = scale * sum;
        }
      if (causal)
        accumulate(b, start, end);
    }
  }
  return result;
}

} // namespace attnc::ref
