//===- attn_runtime.hpp - header-only C++ wrapper of the C API --*- C++ -*-===//
//
// This file wraps the C API of attn_runtime.h for C++ applications: failing
// calls throw attn::Error (with the status and the message), attn::Weights
// owns a weight set (RAII, move-only), and attn::Tensor describes a
// caller-owned f32 buffer with a shape. It adds no link dependency beyond
// the runtime library itself.
//
//   attn::Weights weights = attn::Weights::load("model.safetensors");
//   const float *wq = weights.get("layer0.wq", {512, 512});
//   attn::Tensor x(input.data(), {batch, n, 512});
//   x.check("input 'x'", {-1, -1, 512}, {"b", "n", nullptr});
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_ATTN_RUNTIME_HPP
#define ATTNC_RUNTIME_ATTN_RUNTIME_HPP

#include "attn_runtime.h"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace attn {

/// A failed runtime call: its status and message.
class Error : public std::runtime_error {
public:
  Error(attn_status status, const std::string &message)
      : std::runtime_error(message), errorStatus(status) {}

  /// The status the failing call returned.
  attn_status status() const noexcept { return errorStatus; }

private:
  attn_status errorStatus;
};

/// Throws attn::Error with this thread's error message unless \p status is
/// ATTN_OK.
inline void check(attn_status status) {
  if (status != ATTN_OK)
    throw Error(status, attn_error_message());
}

/// A non-owning view of a caller-owned dense f32 tensor in C order.
class Tensor {
public:
  /// Describes \p data with \p shape (at most ATTN_MAX_RANK sizes).
  Tensor(float *data, std::initializer_list<int64_t> shape)
      : Tensor(data, std::vector<int64_t>(shape)) {}

  /// Describes \p data with \p shape (at most ATTN_MAX_RANK sizes).
  Tensor(float *data, const std::vector<int64_t> &shape) : raw() {
    if (shape.size() > ATTN_MAX_RANK)
      throw Error(ATTN_ERROR_ARGUMENT, "rank " + std::to_string(shape.size()) +
                                           " exceeds the maximum of " +
                                           std::to_string(ATTN_MAX_RANK));
    raw.data = data;
    raw.rank = static_cast<int32_t>(shape.size());
    for (size_t i = 0; i < shape.size(); ++i)
      raw.shape[i] = shape[i];
  }

  /// Describes the elements of \p storage with \p shape.
  static Tensor of(std::vector<float> &storage,
                   std::initializer_list<int64_t> shape) {
    return Tensor(storage.data(), shape);
  }

  /// The C descriptor, for generated entry points.
  const attn_tensor *get() const noexcept { return &raw; }
  attn_tensor *get() noexcept { return &raw; }

  float *data() const noexcept { return raw.data; }
  int32_t rank() const noexcept { return raw.rank; }
  int64_t dim(int32_t axis) const noexcept { return raw.shape[axis]; }

  /// The shape as a vector.
  std::vector<int64_t> shape() const {
    return std::vector<int64_t>(raw.shape, raw.shape + raw.rank);
  }

  /// The number of elements (the product of the shape).
  int64_t size() const noexcept {
    int64_t n = 1;
    for (int32_t i = 0; i < raw.rank; ++i)
      n *= raw.shape[i];
    return n;
  }

  /// Checks the tensor with attn_tensor_check and throws attn::Error on a
  /// mismatch; entries < 0 in \p expected accept any size >= 1.
  void check(const std::string &name, const std::vector<int64_t> &expected,
             const std::vector<const char *> &dimNames = {}) const {
    attn::check(attn_tensor_check(
        &raw, name.c_str(), static_cast<int32_t>(expected.size()),
        expected.data(),
        dimNames.size() == expected.size() ? dimNames.data() : nullptr));
  }

private:
  attn_tensor raw;
};

/// An owned weight set loaded from a safetensors file; move-only.
class Weights {
public:
  Weights() = default;
  /// Takes ownership of \p handle.
  explicit Weights(attn_weights *handle) noexcept : handle(handle) {}
  Weights(const Weights &) = delete;
  Weights &operator=(const Weights &) = delete;
  Weights(Weights &&other) noexcept : handle(other.release()) {}
  Weights &operator=(Weights &&other) noexcept {
    if (this != &other) {
      attn_weights_free(handle);
      handle = other.release();
    }
    return *this;
  }
  ~Weights() { attn_weights_free(handle); }

  /// Loads the safetensors file at \p path; throws attn::Error on failure.
  static Weights load(const std::string &path) {
    attn_weights *loaded = nullptr;
    attn::check(attn_weights_load(path.c_str(), &loaded));
    return Weights(loaded);
  }

  /// Returns the data of weight \p name after checking its shape (entries
  /// < 0 accept any size); throws attn::Error if it is missing or differs.
  const float *get(const std::string &name,
                   const std::vector<int64_t> &shape) const {
    const float *data = nullptr;
    attn::check(attn_weights_get(handle, name.c_str(),
                                 static_cast<int32_t>(shape.size()),
                                 shape.data(), &data));
    return data;
  }

  /// The number of tensors.
  size_t size() const noexcept { return attn_weights_count(handle); }

  /// The name of tensor \p index (tensors are sorted by name).
  std::string name(size_t index) const {
    const char *text = attn_weights_name(handle, index);
    if (!text)
      throw Error(ATTN_ERROR_ARGUMENT,
                  "weight index " + std::to_string(index) + " out of range");
    return text;
  }

  /// The shape of tensor \p index.
  std::vector<int64_t> shape(size_t index) const {
    int32_t rank = 0;
    const int64_t *dims = attn_weights_shape(handle, index, &rank);
    if (!dims)
      throw Error(ATTN_ERROR_ARGUMENT,
                  "weight index " + std::to_string(index) + " out of range");
    return std::vector<int64_t>(dims, dims + rank);
  }

  /// All names, sorted.
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (size_t i = 0; i < size(); ++i)
      out.push_back(name(i));
    return out;
  }

  /// The C handle (still owned by this object).
  const attn_weights *get() const noexcept { return handle; }

  /// Gives up ownership of the C handle and returns it.
  attn_weights *release() noexcept {
    attn_weights *h = handle;
    handle = nullptr;
    return h;
  }

  explicit operator bool() const noexcept { return handle != nullptr; }

private:
  attn_weights *handle = nullptr;
};

} // namespace attn

#endif // ATTNC_RUNTIME_ATTN_RUNTIME_HPP
