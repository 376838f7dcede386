//===- Tensor.h - a dense f32 tensor owned by the host ------------*- C++ -*-===//
//
// This file declares HostTensor, the one tensor type of attnc's host code:
// the .npy reader and writer, the safetensors reader (each tensor it reads
// is one), the JIT runner's inputs, weights and outputs, and the tools'
// random tensors.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_TENSOR_H
#define ATTNC_RUNTIME_TENSOR_H

#include <cstdint>
#include <string>
#include <vector>

namespace attnc::runtime {

/// Bytes of an f32 tensor of `shape`; -1 when an extent is negative or the
/// product overflows int64.
int64_t f32Bytes(const std::vector<int64_t> &shape);

/// `[2, 300, 512]`.
std::string shapeString(const std::vector<int64_t> &shape);

/// The message of a token id outside its embedding table's `bound` rows:
/// `token id 50 at [0, 1] of input 'ids' is out of range: ...`, where
/// `what` is "input 'ids'" and `position` its index in C order.
std::string tokenIdOutOfRange(int64_t id, const std::vector<int64_t> &position,
                              const std::string &what, int64_t bound);

/// A dense f32 tensor in C order, owned by the host.
struct HostTensor {
  /// The shape; empty for a scalar (rank 0).
  std::vector<int64_t> shape;
  /// The elements in C order; as many as the product of the shape.
  std::vector<float> data;
  /// "f32", or "i32" for token ids, whose int32 bits `data` holds (the
  /// kernels read every input as 4-byte elements; codegen/Codegen.h,
  /// TensorInfo::dtype).
  std::string dtype = "f32";

  HostTensor() = default;
  /// Zeros of `shape`, whose size the caller has checked (a negative extent
  /// or an overflowing product gives no elements).
  explicit HostTensor(std::vector<int64_t> shape);
  /// The element count; -1 when an extent is negative or the tensor's
  /// bytes overflow int64.
  int64_t numElements() const;
  /// `[2, 300, 512]`.
  std::string shapeString() const;
};

} // namespace attnc::runtime

#endif // ATTNC_RUNTIME_TENSOR_H
