//===- Primitives.cpp - elementwise, contraction and shape ops ------------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements the scalar helpers and the elementwise (numpy
// broadcasting), contraction (matmul, dense) and shape (split, transpose,
// row) primitives of the fp64 reference, each straight from its op
// description in dsl/IR/AttnPrimitiveOps.td.
//
//===----------------------------------------------------------------------===//

#include "tests/reference/Primitives.h"

#include <cmath>

namespace attnc::ref {

namespace {

[[noreturn]] void fail(const std::string &message) {
  throw std::runtime_error("reference: " + message);
}

/// Applies `fn` to every element of x.
template <typename Fn> Tensor mapUnary(const Tensor &x, Fn fn) {
  Tensor result(x.shape);
  for (int64_t i = 0; i < x.numel(); ++i)
    result[i] = fn(x[i]);
  return result;
}

/// Applies `fn` elementwise to the numpy broadcast of a and b.
template <typename Fn>
Tensor mapBinary(const Tensor &a, const Tensor &b, Fn fn) {
  std::vector<int64_t> shape = broadcastShapes(a.shape, b.shape);
  Tensor result(shape);
  const int64_t rank = static_cast<int64_t>(shape.size());
  // Strides of a and b aligned to the result's axes; 0 on broadcast axes.
  auto alignedStrides = [&](const Tensor &t) {
    std::vector<int64_t> strides(static_cast<size_t>(rank), 0);
    int64_t stride = 1;
    for (int64_t axis = t.rank() - 1; axis >= 0; --axis) {
      int64_t out = axis + rank - t.rank();
      int64_t extent = t.shape[static_cast<size_t>(axis)];
      strides[static_cast<size_t>(out)] = extent == 1 ? 0 : stride;
      stride *= extent;
    }
    return strides;
  };
  std::vector<int64_t> sa = alignedStrides(a), sb = alignedStrides(b);
  std::vector<int64_t> index(static_cast<size_t>(rank), 0);
  for (int64_t flat = 0; flat < result.numel(); ++flat) {
    int64_t oa = 0, ob = 0;
    for (int64_t axis = 0; axis < rank; ++axis) {
      oa += index[static_cast<size_t>(axis)] * sa[static_cast<size_t>(axis)];
      ob += index[static_cast<size_t>(axis)] * sb[static_cast<size_t>(axis)];
    }
    result[flat] = fn(a[oa], b[ob]);
    for (int64_t axis = rank - 1; axis >= 0; --axis) {
      if (++index[static_cast<size_t>(axis)] < shape[static_cast<size_t>(axis)])
        break;
      index[static_cast<size_t>(axis)] = 0;
    }
  }
  return result;
}

/// The product of all but the last `keep` extents of `shape`.
int64_t leadingCount(const std::vector<int64_t> &shape, size_t keep) {
  int64_t count = 1;
  for (size_t axis = 0; axis + keep < shape.size(); ++axis)
    count *= shape[axis];
  return count;
}

} // namespace

//===----------------------------------------------------------------------===//
// Scalar functions
//===----------------------------------------------------------------------===//

double sigmoidScalar(double x) { return 1.0 / (1.0 + std::exp(-x)); }

double siluScalar(double x) { return x * sigmoidScalar(x); }

double divOrZeroScalar(double x, double y) { return y == 0.0 ? 0.0 : x / y; }

double geluScalar(double x) {
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

double featureScalar(FeatureMap feature, double x) {
  switch (feature) {
  case FeatureMap::Identity:
    return x;
  case FeatureMap::Elu1:
    return x > 0.0 ? x + 1.0 : std::exp(x); // elu(x) + 1
  case FeatureMap::Relu:
    return x > 0.0 ? x : 0.0;
  case FeatureMap::Silu:
    return siluScalar(x);
  case FeatureMap::Exp:
    return std::exp(x);
  }
  fail("unknown feature map");
}

double activationScalar(Activation activation, double x) {
  switch (activation) {
  case Activation::Silu:
    return siluScalar(x);
  case Activation::Gelu:
    return geluScalar(x);
  case Activation::Relu:
    return x > 0.0 ? x : 0.0;
  case Activation::Sigmoid:
    return sigmoidScalar(x);
  case Activation::Tanh:
    return std::tanh(x);
  }
  fail("unknown activation");
}

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

std::vector<int64_t> broadcastShapes(const std::vector<int64_t> &a,
                                     const std::vector<int64_t> &b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> shape(rank, 1);
  for (size_t back = 0; back < rank; ++back) {
    int64_t ea = back < a.size() ? a[a.size() - 1 - back] : 1;
    int64_t eb = back < b.size() ? b[b.size() - 1 - back] : 1;
    if (ea != eb && ea != 1 && eb != 1)
      fail("cannot broadcast " + Tensor::shapeString(a) + " and " +
           Tensor::shapeString(b));
    shape[rank - 1 - back] = ea == 1 ? eb : ea;
  }
  return shape;
}

Tensor add(const Tensor &a, const Tensor &b) {
  return mapBinary(a, b, [](double x, double y) { return x + y; });
}
Tensor sub(const Tensor &a, const Tensor &b) {
  return mapBinary(a, b, [](double x, double y) { return x - y; });
}
Tensor mul(const Tensor &a, const Tensor &b) {
  return mapBinary(a, b, [](double x, double y) { return x * y; });
}
Tensor div(const Tensor &a, const Tensor &b) {
  return mapBinary(a, b, [](double x, double y) { return x / y; });
}
Tensor divOrZero(const Tensor &a, const Tensor &b) {
  return mapBinary(a, b, divOrZeroScalar);
}
Tensor pow(const Tensor &a, const Tensor &b) {
  return mapBinary(a, b, [](double x, double y) { return std::pow(x, y); });
}

Tensor neg(const Tensor &x) {
  return mapUnary(x, [](double v) { return -v; });
}
Tensor silu(const Tensor &x) { return mapUnary(x, siluScalar); }
Tensor gelu(const Tensor &x) { return mapUnary(x, geluScalar); }
Tensor relu(const Tensor &x) {
  return mapUnary(x, [](double v) { return v > 0.0 ? v : 0.0; });
}
Tensor sigmoid(const Tensor &x) { return mapUnary(x, sigmoidScalar); }
Tensor exp(const Tensor &x) {
  return mapUnary(x, [](double v) { return std::exp(v); });
}
Tensor tanh(const Tensor &x) {
  return mapUnary(x, [](double v) { return std::tanh(v); });
}
Tensor sqrt(const Tensor &x) {
  return mapUnary(x, [](double v) { return std::sqrt(v); });
}

//===----------------------------------------------------------------------===//
// Contractions and shape ops
//===----------------------------------------------------------------------===//

Tensor matmul(const Tensor &a, const Tensor &b) {
  if (a.rank() < 2 || b.rank() < 2)
    fail("matmul needs rank >= 2 operands");
  if (b.rank() != 2 && b.rank() != a.rank())
    fail("matmul: b must have rank 2 or a's rank");
  const int64_t m = a.dim(-2), kDim = a.dim(-1), n = b.dim(-1);
  if (b.dim(-2) != kDim)
    fail("matmul: contracted dims differ: " + Tensor::shapeString(a.shape) +
         " @ " + Tensor::shapeString(b.shape));
  const bool shared = b.rank() == 2;
  if (!shared)
    for (int64_t axis = 0; axis + 2 < a.rank(); ++axis)
      if (a.shape[static_cast<size_t>(axis)] !=
          b.shape[static_cast<size_t>(axis)])
        fail("matmul: batch dims differ: " + Tensor::shapeString(a.shape) +
             " @ " + Tensor::shapeString(b.shape));
  std::vector<int64_t> shape = a.shape;
  shape.back() = n;
  Tensor result(shape);
  const int64_t batch = leadingCount(a.shape, 2);
  for (int64_t bi = 0; bi < batch; ++bi) {
    const int64_t aBase = bi * m * kDim, bBase = shared ? 0 : bi * kDim * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0.0;
        for (int64_t p = 0; p < kDim; ++p)
          sum += a[aBase + i * kDim + p] * b[bBase + p * n + j];
        result[(bi * m + i) * n + j] = sum;
      }
  }
  return result;
}

Tensor dense(const Tensor &x, const Tensor &w, const Tensor &bias) {
  if (x.rank() < 1 || w.rank() != 2 || bias.rank() != 1)
    fail("dense needs x of rank >= 1, w of rank 2 and bias of rank 1");
  const int64_t kDim = w.dim(0), n = w.dim(1);
  if (x.dim(-1) != kDim || bias.dim(0) != n)
    fail("dense: shapes " + Tensor::shapeString(x.shape) + ", " +
         Tensor::shapeString(w.shape) + ", " +
         Tensor::shapeString(bias.shape) + " do not agree");
  std::vector<int64_t> shape = x.shape;
  shape.back() = n;
  Tensor result(shape);
  const int64_t rows = leadingCount(x.shape, 1);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t p = 0; p < kDim; ++p)
        sum += x[r * kDim + p] * w[p * n + j];
      result[r * n + j] = sum + bias[j];
    }
  return result;
}

std::vector<Tensor> split(const Tensor &x, const std::vector<int64_t> &sizes) {
  if (x.rank() < 1)
    fail("split needs rank >= 1");
  const int64_t f = x.dim(-1);
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size < 1)
      fail("split sizes must be >= 1");
    total += size;
  }
  if (total != f)
    fail("split sizes sum to " + std::to_string(total) + ", not " +
         std::to_string(f));
  const int64_t rows = leadingCount(x.shape, 1);
  std::vector<Tensor> parts;
  int64_t start = 0;
  for (int64_t size : sizes) {
    std::vector<int64_t> shape = x.shape;
    shape.back() = size;
    Tensor part(shape);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < size; ++c)
        part[r * size + c] = x[r * f + start + c];
    parts.push_back(std::move(part));
    start += size;
  }
  return parts;
}

Tensor transpose(const Tensor &x) {
  if (x.rank() < 2)
    fail("transpose needs rank >= 2");
  const int64_t a = x.dim(-2), b = x.dim(-1);
  std::vector<int64_t> shape = x.shape;
  std::swap(shape[shape.size() - 2], shape[shape.size() - 1]);
  Tensor result(shape);
  const int64_t batch = leadingCount(x.shape, 2);
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t i = 0; i < a; ++i)
      for (int64_t j = 0; j < b; ++j)
        result[(bi * b + j) * a + i] = x[(bi * a + i) * b + j];
  return result;
}

Tensor row(const Tensor &p, int64_t index) {
  if (p.rank() != 2)
    fail("row needs a rank-2 tensor");
  if (index < 0 || index >= p.dim(0))
    fail("row index " + std::to_string(index) + " out of range for " +
         Tensor::shapeString(p.shape));
  const int64_t c = p.dim(1);
  Tensor result({c});
  for (int64_t j = 0; j < c; ++j)
    result[j] = p[index * c + j];
  return result;
}

Tensor embedding(const Tensor &ids, const Tensor &table) {
  if (table.rank() != 2)
    fail("embedding needs a rank-2 table");
  const int64_t rows = table.dim(0), d = table.dim(1);
  std::vector<int64_t> shape = ids.shape;
  shape.push_back(d);
  Tensor result(shape);
  for (int64_t t = 0; t < ids.numel(); ++t) {
    const double id = ids[t];
    if (id < 0 || id >= static_cast<double>(rows) || id != std::floor(id))
      fail("token id " + std::to_string(id) + " out of range for a table of " +
           std::to_string(rows) + " rows");
    for (int64_t c = 0; c < d; ++c)
      result[t * d + c] = table[static_cast<int64_t>(id) * d + c];
  }
  return result;
}

} // namespace attnc::ref
