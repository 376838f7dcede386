//===- AttnOps.cpp - attn primitive operations ----------------------------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements the generated op classes of the attn dialect, the
// verifiers of the primitive ops and their hand-written builders. The
// attention ops are in AttnAttentionOps.cpp, the layer ops in AttnLayerOps.cpp
// and the shared helpers in AttnVerify.cpp.
//
//===----------------------------------------------------------------------===//

#include "dsl/IR/AttnOps.h"

#include "dsl/IR/AttnVerify.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace mlir::attn;
using namespace mlir::attn::detail;

#include "dsl/IR/AttnInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "dsl/IR/AttnOps.cpp.inc"

//===----------------------------------------------------------------------===//
// Weights and constants
//===----------------------------------------------------------------------===//

LogicalResult WeightOp::verify() {
  if (getName().empty())
    return emitOpError() << "name must not be empty";
  if (!getType().hasStaticShape())
    return emitOpError() << "result must have a static shape but has type "
                         << getType();
  return success();
}

LogicalResult ConstantOp::verify() {
  return verifyRank(*this, "result", getType(), 0);
}

//===----------------------------------------------------------------------===//
// Contractions and shape ops
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  RankedTensorType a = getA().getType(), b = getB().getType();
  if (failed(verifySameElementType(*this)) ||
      failed(verifyMinRank(*this, "a", a, 2)) ||
      failed(verifyMinRank(*this, "b", b, 2)))
    return failure();
  int64_t rank = a.getRank();
  if (b.getRank() != 2 && b.getRank() != rank)
    return emitOpError() << "b must have rank 2 or the rank of a (" << rank
                         << ") but has rank " << b.getRank();
  SmallVector<int64_t> expected;
  for (int64_t i = 0; i + 2 < rank; ++i) {
    int64_t dim = a.getDimSize(i);
    if (b.getRank() == rank) {
      if (failed(verifyDimsAgree(*this, "a and b batch dims", dim,
                                 b.getDimSize(i))))
        return failure();
      dim = mergeDims(dim, b.getDimSize(i));
    }
    expected.push_back(dim);
  }
  int64_t bRank = b.getRank();
  if (failed(verifyDimsAgree(*this, "a and b contraction dims",
                             a.getDimSize(rank - 1),
                             b.getDimSize(bRank - 2))))
    return failure();
  expected.push_back(a.getDimSize(rank - 2));
  expected.push_back(b.getDimSize(bRank - 1));
  return verifyResultShape(*this, "result", getType(), expected);
}

LogicalResult DenseOp::verify() {
  RankedTensorType x = getX().getType(), w = getW().getType();
  if (failed(verifySameElementType(*this)) ||
      failed(verifyMinRank(*this, "x", x, 1)) ||
      failed(verifyRank(*this, "w", w, 2)) ||
      failed(verifyDimsAgree(*this, "x and w contraction dims",
                             x.getShape().back(), w.getDimSize(0))) ||
      failed(verifyVector(*this, "bias", getBias().getType(), w.getDimSize(1),
                          "the columns of w")))
    return failure();
  SmallVector<int64_t> expected(x.getShape().drop_back());
  expected.push_back(
      mergeDims(w.getDimSize(1), getBias().getType().getDimSize(0)));
  return verifyResultShape(*this, "result", getType(), expected);
}

void SplitOp::build(OpBuilder &builder, OperationState &state, Value x,
                    ArrayRef<int64_t> sizes) {
  auto type = cast<RankedTensorType>(x.getType());
  SmallVector<Type> resultTypes;
  for (int64_t size : sizes) {
    SmallVector<int64_t> shape(type.getShape());
    shape.back() = size;
    resultTypes.push_back(RankedTensorType::get(shape, type.getElementType()));
  }
  build(builder, state, resultTypes, x, sizes);
}

LogicalResult SplitOp::verify() {
  RankedTensorType x = getX().getType();
  if (failed(verifySameElementType(*this)) ||
      failed(verifyMinRank(*this, "x", x, 1)))
    return failure();
  ArrayRef<int64_t> sizes = getSizes();
  if (sizes.size() != getNumResults())
    return emitOpError() << "sizes has " << sizes.size()
                         << " entries but the op has " << getNumResults()
                         << " results";
  int64_t sum = 0;
  for (auto [i, size] : llvm::enumerate(sizes)) {
    if (failed(verifyPositive(*this, "size " + std::to_string(i), size)))
      return failure();
    sum += size;
  }
  int64_t f = x.getShape().back();
  if (!ShapedType::isDynamic(f) && sum != f)
    return emitOpError() << "sizes sum to " << sum << " but the last dim is "
                         << f;
  for (auto [i, size] : llvm::enumerate(sizes)) {
    SmallVector<int64_t> expected(x.getShape().drop_back());
    expected.push_back(size);
    auto type = cast<RankedTensorType>(getResult(i).getType());
    if (failed(verifyResultShape(*this, "result " + std::to_string(i), type,
                                 expected)))
      return failure();
  }
  return success();
}

LogicalResult TransposeOp::verify() {
  RankedTensorType x = getX().getType();
  if (failed(verifySameElementType(*this)) ||
      failed(verifyMinRank(*this, "x", x, 2)))
    return failure();
  SmallVector<int64_t> expected(x.getShape());
  std::swap(expected[expected.size() - 1], expected[expected.size() - 2]);
  return verifyResultShape(*this, "result", getType(), expected);
}

LogicalResult RowOp::verify() {
  RankedTensorType p = getP().getType();
  if (failed(verifySameElementType(*this)) ||
      failed(verifyRank(*this, "p", p, 2)))
    return failure();
  if (!p.hasStaticShape())
    return emitOpError() << "p must have a static shape but has type " << p;
  int64_t index = getIndex(), rows = p.getDimSize(0);
  if (index < 0 || index >= rows)
    return emitOpError() << "index " << index << " is out of range for "
                         << rows << " rows";
  return verifyResultShape(*this, "result", getType(), {p.getDimSize(1)});
}

//===----------------------------------------------------------------------===//
// Norms, scale-offset and RoPE
//===----------------------------------------------------------------------===//

LogicalResult LayerNormOp::verify() {
  RankedTensorType x = getX().getType();
  if (failed(verifySameElementType(*this)) ||
      failed(verifyMinRank(*this, "x", x, 1)))
    return failure();
  int64_t f = x.getShape().back();
  if (getWeight() && failed(verifyVector(*this, "weight",
                                         getWeight().getType(), f,
                                         "the feature dim")))
    return failure();
  if (getBias() && failed(verifyVector(*this, "bias", getBias().getType(), f,
                                       "the feature dim")))
    return failure();
  return verifyPositive(*this, "eps", getEps());
}

LogicalResult ScaleNormOp::verify() {
  if (failed(verifySameElementType(*this)) ||
      failed(verifyMinRank(*this, "x", getX().getType(), 1)) ||
      failed(verifyVector(*this, "alpha", getAlpha().getType(), 1,
                          "one scalar gain")))
    return failure();
  return verifyPositive(*this, "eps", getEps());
}

LogicalResult RmsNormOp::verify() {
  RankedTensorType x = getX().getType();
  if (failed(verifySameElementType(*this)) ||
      failed(verifyMinRank(*this, "x", x, 1)))
    return failure();
  if (getWeight() &&
      failed(verifyVector(*this, "weight", getWeight().getType(),
                          x.getShape().back(), "the feature dim")))
    return failure();
  return verifyPositive(*this, "eps", getEps());
}

LogicalResult ScaleOffsetOp::verify() {
  RankedTensorType x = getX().getType();
  if (failed(verifySameElementType(*this)) ||
      failed(verifyMinRank(*this, "x", x, 1)))
    return failure();
  int64_t f = x.getShape().back();
  if (failed(verifyVector(*this, "gamma", getGamma().getType(), f,
                          "the feature dim")))
    return failure();
  return verifyVector(*this, "beta", getBeta().getType(), f,
                      "the feature dim");
}

LogicalResult RopeOp::verify() {
  RankedTensorType x = getX().getType();
  if (failed(verifyMinRank(*this, "x", x, 2)) ||
      failed(verifyPositive(*this, "rotary_dims", getRotaryDims())))
    return failure();
  int64_t rotary = getRotaryDims(), f = x.getShape().back();
  if (rotary % 2 != 0)
    return emitOpError() << "rotary_dims must be even but is " << rotary;
  if (!ShapedType::isDynamic(f) && rotary > f)
    return emitOpError() << "rotary_dims " << rotary
                         << " exceeds the feature dim " << f;
  return verifyPositive(*this, "base", getBase());
}

LogicalResult EmbeddingOp::verify() {
  RankedTensorType ids = getIds().getType(), table = getTable().getType();
  if (table.getRank() != 2 || !table.hasStaticShape())
    return emitOpError() << "table must have rank 2 and a static shape but "
                            "is "
                         << table;
  SmallVector<int64_t> expected(ids.getShape());
  expected.push_back(table.getDimSize(1));
  RankedTensorType result = getType();
  if (result.getElementType() != table.getElementType() ||
      !llvm::equal(result.getShape(), expected, dimsCompatible))
    return emitOpError() << "result must be ids's shape followed by the "
                            "table's width, with its element type, but is "
                         << result;
  return success();
}

LogicalResult SinusoidalOp::verify() {
  RankedTensorType x = getX().getType();
  if (failed(verifyMinRank(*this, "x", x, 2)))
    return failure();
  int64_t d = x.getShape().back();
  if (ShapedType::isDynamic(d) || d % 2 != 0)
    return emitOpError() << "needs a static, even feature dim but x is " << x;
  return verifyPositive(*this, "base", getBase());
}

LogicalResult TokenShiftOp::verify() {
  RankedTensorType x = getX().getType();
  if (failed(verifyMinRank(*this, "x", x, 2)) ||
      failed(verifyPositive(*this, "dims", getDims())))
    return failure();
  int64_t f = x.getShape().back();
  if (!ShapedType::isDynamic(f) && getDims() > f)
    return emitOpError() << "dims " << getDims() << " exceeds the feature dim "
                         << f;
  return success();
}

//===----------------------------------------------------------------------===//
// Products (ProductOpInterface)
//===----------------------------------------------------------------------===//

/// Extent `axis` (negative from the end) of `value`'s tensor type.
static int64_t extentOf(Value value, int64_t axis) {
  auto type = cast<RankedTensorType>(value.getType());
  return type.getShape()[axis < 0 ? type.getRank() + axis : axis];
}

Value DenseOp::getProductLhs() { return getX(); }
Value DenseOp::getProductRhs() { return getW(); }
int64_t DenseOp::getProductDepth() { return extentOf(getW(), 0); }
bool DenseOp::fusesOperandStages() { return true; }
Value MatmulOp::getProductLhs() { return getA(); }
Value MatmulOp::getProductRhs() { return getB(); }
int64_t MatmulOp::getProductDepth() { return extentOf(getA(), -1); }
bool MatmulOp::fusesOperandStages() { return true; }
// The chunk form's per-chunk products: [s, e] states over the C tokens of a
// chunk, [C, e] outputs over s state rows.
Value ChunkStateOp::getProductLhs() { return getK(); }
Value ChunkStateOp::getProductRhs() { return getV(); }
int64_t ChunkStateOp::getProductDepth() { return extentOf(getK(), -2); }
bool ChunkStateOp::fusesOperandStages() { return false; }
Value StateApplyOp::getProductLhs() { return getQ(); }
Value StateApplyOp::getProductRhs() { return getStates(); }
int64_t StateApplyOp::getProductDepth() { return extentOf(getQ(), -1); }
bool StateApplyOp::fusesOperandStages() { return false; }
