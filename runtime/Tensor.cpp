//===- Tensor.cpp - a dense f32 tensor owned by the host ------------------===//
//
// This file implements HostTensor's element count and printing.
//
//===----------------------------------------------------------------------===//
#include "runtime/Tensor.h"

namespace attnc::runtime {

HostTensor::HostTensor(std::vector<int64_t> s) : shape(std::move(s)) {
  int64_t count = numElements();
  data.assign(static_cast<size_t>(count < 0 ? 0 : count), 0.0f);
}

int64_t f32Bytes(const std::vector<int64_t> &shape) {
  int64_t bytes = int64_t(sizeof(float));
  for (int64_t extent : shape)
    if (extent < 0 || __builtin_mul_overflow(bytes, extent, &bytes))
      return -1;
  return bytes;
}

int64_t HostTensor::numElements() const {
  // Counted in bytes, so that a tensor whose bytes overflow has no count.
  int64_t bytes = f32Bytes(shape);
  return bytes < 0 ? -1 : bytes / int64_t(sizeof(float));
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

std::string tokenIdOutOfRange(int64_t id, const std::vector<int64_t> &position,
                              const std::string &what, int64_t bound) {
  std::string where = runtime::shapeString(position);
  return "token id " + std::to_string(id) + " at " + where + " of " + what +
         " is out of range: the embedding table has " + std::to_string(bound) +
         " rows (ids 0.." + std::to_string(bound - 1) + ")";
}

std::string HostTensor::shapeString() const {
  return runtime::shapeString(shape);
}

} // namespace attnc::runtime
