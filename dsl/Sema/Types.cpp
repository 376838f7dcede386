//===- Types.cpp - shapes and tensor types of the .attn front end ---------===//
//
// This file implements printing and broadcasting of symbolic shapes.
//
//===----------------------------------------------------------------------===//
#include "dsl/Sema/Types.h"

namespace attnc::dsl {

std::string Dim::str() const {
  return isStatic() ? std::to_string(size) : runtime;
}

std::string shapeStr(llvm::ArrayRef<Dim> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + shape[i].str();
  return out + "]";
}

std::string TensorType::shapeStr() const { return dsl::shapeStr(shape); }

std::string TensorType::str() const { return dtype + shapeStr(); }

std::optional<Shape> broadcastShapes(const Shape &lhs, const Shape &rhs,
                                     Dim *badLhs, Dim *badRhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  Shape result(rank);
  for (size_t k = 0; k < rank; ++k) {
    const Dim *a = k < lhs.size() ? &lhs[lhs.size() - 1 - k] : nullptr;
    const Dim *b = k < rhs.size() ? &rhs[rhs.size() - 1 - k] : nullptr;
    Dim &out = result[rank - 1 - k];
    if (!a || (a->isStatic() && a->size == 1 && b)) {
      out = *b;
    } else if (!b || (b->isStatic() && b->size == 1)) {
      out = *a;
    } else if (*a == *b) {
      out = *a;
    } else {
      if (badLhs)
        *badLhs = *a;
      if (badRhs)
        *badRhs = *b;
      return std::nullopt;
    }
  }
  return result;
}

} // namespace attnc::dsl
