//===- Types.h - shapes and tensor types of the .attn front end -*- C++ -*-===//
//
// This file declares the symbolic shapes that semantic analysis computes:
// a dimension is either a constant size or a named runtime dim (`seq` or
// `batch`), so that `[b, n, 512]` and `[b, n, 256]` can be compared and
// printed in the user's terms.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DSL_SEMA_TYPES_H
#define ATTNC_DSL_SEMA_TYPES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attnc::dsl {

/// One dimension: a constant size, or a runtime dim known by name.
struct Dim {
  int64_t size = 0;    ///< Valid when `runtime` is empty.
  std::string runtime; ///< Name of the runtime dim, e.g. "n".

  static Dim constant(int64_t size) { return {size, ""}; }
  static Dim named(std::string name) { return {0, std::move(name)}; }
  bool isStatic() const { return runtime.empty(); }
  bool operator==(const Dim &other) const {
    return runtime == other.runtime && (!isStatic() || size == other.size);
  }
  bool operator!=(const Dim &other) const { return !(*this == other); }
  std::string str() const;
};

using Shape = std::vector<Dim>;

/// Element type and shape of a tensor value.
struct TensorType {
  std::string dtype = "f32";
  Shape shape;

  bool operator==(const TensorType &other) const {
    return dtype == other.dtype && shape == other.shape;
  }
  bool operator!=(const TensorType &other) const { return !(*this == other); }
  /// `f32[b, n, 512]`.
  std::string str() const;
  /// `[b, n, 512]`.
  std::string shapeStr() const;
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
};

std::string shapeStr(llvm::ArrayRef<Dim> shape);

/// Numpy-style broadcast of two shapes (aligned at the last axis; equal dims
/// or a constant 1). Returns nullopt when they do not broadcast, with the
/// offending axis pair in `badLhs`/`badRhs`.
std::optional<Shape> broadcastShapes(const Shape &lhs, const Shape &rhs,
                                     Dim *badLhs = nullptr,
                                     Dim *badRhs = nullptr);

} // namespace attnc::dsl

#endif // ATTNC_DSL_SEMA_TYPES_H
