//===- Tensor.h - fp64 tensors of the attnc reference -----------*- C++ -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file defines the tensor type of the independent fp64 reference
// (tests/reference/): a shape and a flat vector of doubles in C order (the
// last axis contiguous), with element access, conversion from and to float
// data, a deterministic random fill for tests and comparison helpers. The
// reference shares no code with the code generator; it only needs this
// header and the C++ standard library.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_TESTS_REFERENCE_TENSOR_H
#define ATTNC_TESTS_REFERENCE_TENSOR_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

namespace attnc::ref {

/// A dense tensor of doubles in C order (row-major, last axis contiguous).
/// A rank-0 tensor (empty shape) holds one element.
struct Tensor {
  std::vector<int64_t> shape;
  std::vector<double> data;

  /// An empty rank-0 tensor with no data (a placeholder).
  Tensor() = default;

  /// A tensor of the given shape filled with zeros.
  explicit Tensor(std::vector<int64_t> shape) : shape(std::move(shape)) {
    data.assign(static_cast<size_t>(numelOf(this->shape)), 0.0);
  }

  /// A tensor of the given shape filled with `value`.
  static Tensor filled(std::vector<int64_t> shape, double value) {
    Tensor t(std::move(shape));
    std::fill(t.data.begin(), t.data.end(), value);
    return t;
  }

  /// A tensor of the given shape holding `values` (C order); throws if the
  /// number of values does not match the shape.
  Tensor(std::vector<int64_t> shape, std::vector<double> values)
      : shape(std::move(shape)), data(std::move(values)) {
    if (static_cast<int64_t>(data.size()) != numelOf(this->shape))
      throw std::runtime_error("reference tensor: " +
                               std::to_string(data.size()) +
                               " values for shape " + shapeString(this->shape));
  }

  /// A tensor of the given shape holding float `values` widened to double.
  static Tensor fromFloat(std::vector<int64_t> shape,
                          const std::vector<float> &values) {
    return Tensor(std::move(shape),
                  std::vector<double>(values.begin(), values.end()));
  }

  /// Token ids held as int32 bits in floats (runtime::HostTensor with
  /// dtype "i32"), as exact doubles.
  static Tensor fromInt32Bits(std::vector<int64_t> shape,
                              const std::vector<float> &bits) {
    std::vector<double> values(bits.size());
    for (size_t i = 0; i < bits.size(); ++i) {
      int32_t id;
      std::memcpy(&id, &bits[i], sizeof id);
      values[i] = id;
    }
    return Tensor(std::move(shape), std::move(values));
  }

  /// A tensor of the given shape copied from `numelOf(shape)` floats.
  static Tensor fromFloat(std::vector<int64_t> shape, const float *values) {
    int64_t count = numelOf(shape);
    return Tensor(std::move(shape),
                  std::vector<double>(values, values + count));
  }

  /// A rank-0 tensor holding `value`.
  static Tensor scalar(double value) { return Tensor({}, {value}); }

  /// The number of elements of a tensor of shape `shape`.
  static int64_t numelOf(const std::vector<int64_t> &shape) {
    int64_t count = 1;
    for (int64_t extent : shape) {
      if (extent < 0)
        throw std::runtime_error("reference tensor: negative extent in " +
                                 shapeString(shape));
      count *= extent;
    }
    return count;
  }

  /// `[2, 3, 4]`-style text of a shape, for error messages.
  static std::string shapeString(const std::vector<int64_t> &shape) {
    std::string text = "[";
    for (size_t i = 0; i < shape.size(); ++i)
      text += (i ? ", " : "") + std::to_string(shape[i]);
    return text + "]";
  }

  /// The number of elements.
  int64_t numel() const { return static_cast<int64_t>(data.size()); }
  /// The number of axes.
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  /// The extent of `axis`; negative axes count from the end.
  int64_t dim(int64_t axis) const {
    if (axis < 0)
      axis += rank();
    if (axis < 0 || axis >= rank())
      throw std::runtime_error("reference tensor: axis out of range for " +
                               shapeString(shape));
    return shape[static_cast<size_t>(axis)];
  }

  /// The flat (C-order) offset of a full multi-index.
  int64_t offset(std::initializer_list<int64_t> index) const {
    if (static_cast<int64_t>(index.size()) != rank())
      throw std::runtime_error("reference tensor: index of rank " +
                               std::to_string(index.size()) + " for shape " +
                               shapeString(shape));
    int64_t flat = 0;
    size_t axis = 0;
    for (int64_t i : index) {
      if (i < 0 || i >= shape[axis])
        throw std::runtime_error("reference tensor: index out of range for " +
                                 shapeString(shape));
      flat = flat * shape[axis++] + i;
    }
    return flat;
  }

  /// Element at a full multi-index, e.g. `t.at({b, i, j})`.
  double &at(std::initializer_list<int64_t> index) {
    return data[static_cast<size_t>(offset(index))];
  }
  double at(std::initializer_list<int64_t> index) const {
    return data[static_cast<size_t>(offset(index))];
  }

  /// Element at a flat C-order position.
  double &operator[](int64_t flat) { return data[static_cast<size_t>(flat)]; }
  double operator[](int64_t flat) const {
    return data[static_cast<size_t>(flat)];
  }

  /// The same data with another shape of the same element count.
  Tensor reshaped(std::vector<int64_t> newShape) const {
    return Tensor(std::move(newShape), data);
  }

  /// The data rounded to float.
  std::vector<float> toFloat() const {
    return std::vector<float>(data.begin(), data.end());
  }
};

/// The largest |a - b| over all elements; throws if the shapes differ.
inline double maxAbsDiff(const Tensor &a, const Tensor &b) {
  if (a.shape != b.shape)
    throw std::runtime_error("maxAbsDiff: shapes " +
                             Tensor::shapeString(a.shape) + " and " +
                             Tensor::shapeString(b.shape) + " differ");
  double worst = 0.0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    double diff = std::fabs(a[i] - b[i]);
    if (std::isnan(diff))
      return diff;
    worst = std::max(worst, diff);
  }
  return worst;
}

/// True if the shapes agree and |a - b| <= atol + rtol * |b| everywhere
/// (numpy.allclose with `b` as the expected value).
inline bool allClose(const Tensor &a, const Tensor &b, double rtol = 1e-12,
                     double atol = 1e-12) {
  if (a.shape != b.shape)
    return false;
  for (int64_t i = 0; i < a.numel(); ++i)
    if (!(std::fabs(a[i] - b[i]) <= atol + rtol * std::fabs(b[i])))
      return false;
  return true;
}

/// A tensor of uniform values in [-scale, scale) from a fixed 64-bit
/// generator (SplitMix64), identical on every platform for the same seed.
inline Tensor randomTensor(std::vector<int64_t> shape, uint64_t seed,
                           double scale = 1.0) {
  Tensor t(std::move(shape));
  uint64_t state = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
  for (double &value : t.data) {
    state += 0x9E3779B97F4A7C15ull;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    double unit = static_cast<double>(z >> 11) * 0x1.0p-53; // [0, 1)
    value = scale * (2.0 * unit - 1.0);
  }
  return t;
}

} // namespace attnc::ref

#endif // ATTNC_TESTS_REFERENCE_TENSOR_H
