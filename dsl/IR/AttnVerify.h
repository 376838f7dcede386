//===- AttnVerify.h - shared verifier helpers of the attn ops ---*- C++ -*-===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file declares the small checks that the attn op verifiers share: rank
// and vector-length rules, dim compatibility (a dynamic dim is compatible with
// any size), numpy broadcasting, and the common rules of the layer ops. Each
// check emits a house-style diagnostic on the op and returns failure.
//
//===----------------------------------------------------------------------===//

#ifndef ATTNC_DSL_IR_ATTNVERIFY_H
#define ATTNC_DSL_IR_ATTNVERIFY_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"

#include <string>

namespace mlir::attn::detail {

/// Formats a shape as `2x?x64` (`?` for a dynamic dim, `scalar` for rank 0).
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// True if the two dims may be equal at run time (equal, or one is dynamic).
bool dimsCompatible(int64_t a, int64_t b);

/// The more precise of two compatible dims: the static one if any.
int64_t mergeDims(int64_t a, int64_t b);

/// `<name> must have rank <rank> but has rank <r>`.
LogicalResult verifyRank(Operation *op, llvm::StringRef name,
                         RankedTensorType type, int64_t rank);

/// `<name> must have rank >= <minRank> but has rank <r>`.
LogicalResult verifyMinRank(Operation *op, llvm::StringRef name,
                            RankedTensorType type, int64_t minRank);

/// Checks that `type` is a vector of `expected` entries (dynamic
/// `expected` or a dynamic length always agree):
/// `<name> has <n> entries but must have <expected> (<meaning>)`.
LogicalResult verifyVector(Operation *op, llvm::StringRef name,
                           RankedTensorType type, int64_t expected,
                           llvm::StringRef meaning);

/// `<name> must be positive but is <value>`.
LogicalResult verifyPositive(Operation *op, llvm::StringRef name,
                             int64_t value);

/// `<name> must be positive but is <value>` for a float attribute.
LogicalResult verifyPositive(Operation *op, llvm::StringRef name,
                             double value);

/// The rules of a T5 bucketed bias (attn.t5_bias, and attn.gau/flash with
/// rel_pos = t5): at least 2 buckets, an even number of at least 4 when not
/// causal, and max_distance past the exact buckets.
LogicalResult verifyT5Buckets(Operation *op, bool causal, int64_t buckets,
                              int64_t maxDistance);

/// `<what> differ: <a> vs <b>` unless the dims are compatible.
LogicalResult verifyDimsAgree(Operation *op, llvm::StringRef what, int64_t a,
                              int64_t b);

/// `heads <h> does not divide the <what> <dim>` (a dynamic dim passes).
LogicalResult verifyHeadsDivide(Operation *op, int64_t heads,
                                llvm::StringRef what, int64_t dim);

/// `<name> type <t> does not match the expected shape <s>`, comparing dim by
/// dim with dynamic dims compatible with anything.
LogicalResult verifyResultShape(Operation *op, llvm::StringRef name,
                                RankedTensorType type,
                                llvm::ArrayRef<int64_t> expected);

/// `element types differ: <a> and <b>` over all tensor operands and results.
LogicalResult verifySameElementType(Operation *op);

/// Verifies a binary elementwise op (a, b) -> result with numpy
/// broadcasting of the shapes of a and b.
LogicalResult verifyBroadcastBinaryOp(Operation *op);

/// Verifies q [..., n, f], k [..., m, f], v [..., m, e] of the attention
/// ops (same rank >= 2, compatible batch dims, feature and sequence dims) and
/// returns the expected result shape [..., n, e].
LogicalResult verifyQueryKeyValue(Operation *op, RankedTensorType q,
                                  RankedTensorType k, RankedTensorType v,
                                  llvm::SmallVectorImpl<int64_t> &resultShape);

/// Verifies the rules that every layer op shares: x of rank >= 2 with a
/// static feature dim d >= 1, a non-empty layer name and eps > 0.
LogicalResult verifyLayerOp(Operation *op, RankedTensorType x,
                            llvm::StringRef layerName, double eps);

} // namespace mlir::attn::detail

#endif // ATTNC_DSL_IR_ATTNVERIFY_H
