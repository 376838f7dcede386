//===- AttnVerify.cpp - shared verifier helpers of the attn ops -----------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements the checks declared in AttnVerify.h. They follow the
// house style for diagnostics: lowercase, no trailing period, and the
// offending values in the message.
//
//===----------------------------------------------------------------------===//

#include "dsl/IR/AttnVerify.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace mlir;

namespace mlir::attn::detail {

/// Formats one dim, `?` when dynamic.
static std::string formatDim(int64_t dim) {
  return ShapedType::isDynamic(dim) ? std::string("?") : std::to_string(dim);
}

std::string formatShape(llvm::ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::interleave(
      shape, os, [&](int64_t dim) { os << formatDim(dim); }, "x");
  return os.str();
}

bool dimsCompatible(int64_t a, int64_t b) {
  return a == b || ShapedType::isDynamic(a) || ShapedType::isDynamic(b);
}

int64_t mergeDims(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) ? b : a;
}

LogicalResult verifyRank(Operation *op, llvm::StringRef name,
                         RankedTensorType type, int64_t rank) {
  if (type.getRank() == rank)
    return success();
  return op->emitOpError() << name << " must have rank " << rank
                           << " but has rank " << type.getRank();
}

LogicalResult verifyMinRank(Operation *op, llvm::StringRef name,
                            RankedTensorType type, int64_t minRank) {
  if (type.getRank() >= minRank)
    return success();
  return op->emitOpError() << name << " must have rank >= " << minRank
                           << " but has rank " << type.getRank();
}

LogicalResult verifyVector(Operation *op, llvm::StringRef name,
                           RankedTensorType type, int64_t expected,
                           llvm::StringRef meaning) {
  if (failed(verifyRank(op, name, type, 1)))
    return failure();
  int64_t length = type.getDimSize(0);
  if (dimsCompatible(length, expected))
    return success();
  return op->emitOpError() << name << " has " << length
                           << " entries but must have " << expected << " ("
                           << meaning << ")";
}

LogicalResult verifyPositive(Operation *op, llvm::StringRef name,
                             int64_t value) {
  if (value > 0)
    return success();
  return op->emitOpError() << name << " must be positive but is " << value;
}

LogicalResult verifyPositive(Operation *op, llvm::StringRef name,
                             double value) {
  if (value > 0.0)
    return success();
  return op->emitOpError() << name << " must be positive but is " << value;
}

LogicalResult verifyDimsAgree(Operation *op, llvm::StringRef what, int64_t a,
                              int64_t b) {
  if (dimsCompatible(a, b))
    return success();
  return op->emitOpError() << what << " differ: " << a << " vs " << b;
}

LogicalResult verifyHeadsDivide(Operation *op, int64_t heads,
                                llvm::StringRef what, int64_t dim) {
  if (ShapedType::isDynamic(dim) || dim % heads == 0)
    return success();
  return op->emitOpError() << "heads " << heads << " does not divide the "
                           << what << " " << dim;
}

LogicalResult verifyResultShape(Operation *op, llvm::StringRef name,
                                RankedTensorType type,
                                llvm::ArrayRef<int64_t> expected) {
  llvm::ArrayRef<int64_t> shape = type.getShape();
  bool matches = shape.size() == expected.size() &&
                 llvm::all_of(llvm::zip_equal(shape, expected), [](auto dims) {
                   return dimsCompatible(std::get<0>(dims), std::get<1>(dims));
                 });
  if (matches)
    return success();
  return op->emitOpError() << name << " type " << type
                           << " does not match the expected shape "
                           << formatShape(expected);
}

LogicalResult verifySameElementType(Operation *op) {
  Type first;
  auto check = [&](Type type) -> LogicalResult {
    auto shaped = llvm::dyn_cast<ShapedType>(type);
    if (!shaped)
      return success();
    Type element = shaped.getElementType();
    if (!first)
      first = element;
    if (element == first)
      return success();
    return op->emitOpError() << "element types differ: " << first << " and "
                             << element;
  };
  for (Type type : op->getOperandTypes())
    if (failed(check(type)))
      return failure();
  for (Type type : op->getResultTypes())
    if (failed(check(type)))
      return failure();
  return success();
}

LogicalResult verifyBroadcastBinaryOp(Operation *op) {
  if (failed(verifySameElementType(op)))
    return failure();
  auto a = llvm::cast<RankedTensorType>(op->getOperand(0).getType());
  auto b = llvm::cast<RankedTensorType>(op->getOperand(1).getType());
  auto result = llvm::cast<RankedTensorType>(op->getResult(0).getType());
  int64_t rank = std::max(a.getRank(), b.getRank());
  llvm::SmallVector<int64_t> shape(rank);
  for (int64_t i = 0; i < rank; ++i) {
    int64_t offsetA = rank - a.getRank(), offsetB = rank - b.getRank();
    int64_t dimA = i < offsetA ? 1 : a.getDimSize(i - offsetA);
    int64_t dimB = i < offsetB ? 1 : b.getDimSize(i - offsetB);
    if (dimA == 1)
      shape[i] = dimB;
    else if (dimB == 1)
      shape[i] = dimA;
    else if (dimsCompatible(dimA, dimB))
      shape[i] = mergeDims(dimA, dimB);
    else
      return op->emitOpError()
             << "operand shapes " << formatShape(a.getShape()) << " and "
             << formatShape(b.getShape()) << " do not broadcast";
  }
  return verifyResultShape(op, "result", result, shape);
}

LogicalResult verifyQueryKeyValue(Operation *op, RankedTensorType q,
                                  RankedTensorType k, RankedTensorType v,
                                  llvm::SmallVectorImpl<int64_t> &resultShape) {
  if (failed(verifyMinRank(op, "q", q, 2)) ||
      failed(verifyMinRank(op, "k", k, 2)) ||
      failed(verifyMinRank(op, "v", v, 2)))
    return failure();
  int64_t rank = q.getRank();
  if (k.getRank() != rank || v.getRank() != rank)
    return op->emitOpError()
           << "q, k and v must have the same rank but have ranks " << rank
           << ", " << k.getRank() << " and " << v.getRank();
  resultShape.clear();
  for (int64_t i = 0; i + 2 < rank; ++i) {
    int64_t dq = q.getDimSize(i), dk = k.getDimSize(i), dv = v.getDimSize(i);
    if (!dimsCompatible(dq, dk) || !dimsCompatible(dq, dv) ||
        !dimsCompatible(dk, dv))
      return op->emitOpError()
             << "batch dim " << i << " differs between q, k and v: "
             << formatDim(dq) << ", " << formatDim(dk) << " and "
             << formatDim(dv);
    resultShape.push_back(mergeDims(mergeDims(dq, dk), dv));
  }
  if (failed(verifyDimsAgree(op, "q and k feature dims",
                             q.getDimSize(rank - 1), k.getDimSize(rank - 1))) ||
      failed(verifyDimsAgree(op, "k and v sequence dims",
                             k.getDimSize(rank - 2), v.getDimSize(rank - 2))))
    return failure();
  resultShape.push_back(q.getDimSize(rank - 2));
  resultShape.push_back(v.getDimSize(rank - 1));
  return success();
}

LogicalResult verifyT5Buckets(Operation *op, bool causal, int64_t buckets,
                              int64_t maxDistance) {
  int64_t minBuckets = causal ? 2 : 4;
  if (buckets < minBuckets)
    return op->emitOpError() << "num_buckets must be >= " << minBuckets
                             << " but is " << buckets;
  if (!causal && buckets % 2 != 0)
    return op->emitOpError()
           << "num_buckets must be even when not causal but is " << buckets;
  int64_t exact = (causal ? buckets : buckets / 2) / 2;
  if (maxDistance <= exact)
    return op->emitOpError() << "max_distance must exceed the " << exact
                             << " exact buckets but is " << maxDistance;
  return success();
}

LogicalResult verifyLayerOp(Operation *op, RankedTensorType x,
                            llvm::StringRef layerName, double eps) {
  if (failed(verifyMinRank(op, "x", x, 2)))
    return failure();
  int64_t d = x.getShape().back();
  if (ShapedType::isDynamic(d))
    return op->emitOpError()
           << "x must have a static feature dim (axis -1) but has type " << x;
  if (failed(verifyPositive(op, "feature dim d", d)))
    return failure();
  if (layerName.empty())
    return op->emitOpError() << "layer_name must not be empty";
  return verifyPositive(op, "eps", eps);
}

} // namespace mlir::attn::detail
