//===- Flops.cpp - forward FLOPs of a model (spec §5) ---------------------===//
//
// This file implements countFlops: the spec's per-layer formulas for layer
// templates (a multiply-add counts 2, elementwise work is omitted), and the
// products and attentions of primitive ops otherwise. Dynamic axes are
// resolved positionally: axis -2 is the sequence, earlier dynamic axes are
// the model's batch dims in declaration order.
//
//===----------------------------------------------------------------------===//
#include "driver/Session.h"

#include "dsl/IR/AttnOps.h"

namespace attnc::driver {

namespace attn = mlir::attn;

namespace {
struct Sizes {
  double seq = 1;
  std::vector<double> batch; ///< Values of the batch dims, in order.

  /// Product of all axes but the last (rows of a [..., n, f] tensor).
  double rows(mlir::Value value) const {
    auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
    double product = 1;
    size_t nextBatch = 0;
    for (int64_t i = 0; i + 1 < type.getRank(); ++i) {
      if (!type.isDynamicDim(i))
        product *= double(type.getDimSize(i));
      else if (i == type.getRank() - 2)
        product *= seq;
      else
        product *= nextBatch < batch.size() ? batch[nextBatch++] : 1.0;
    }
    return product;
  }
  double length(mlir::Value value) const {
    auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
    int64_t axis = type.getRank() - 2;
    return type.isDynamicDim(axis) ? seq : double(type.getDimSize(axis));
  }
  static double width(mlir::Value value) {
    return double(mlir::cast<mlir::RankedTensorType>(value.getType())
                      .getShape()
                      .back());
  }
};
} // namespace

double countFlops(mlir::func::FuncOp model,
                  const std::map<std::string, int64_t> &dims) {
  Sizes sizes;
  if (auto runtime = model->getAttrOfType<mlir::DictionaryAttr>("attn.runtime_dims")) {
    for (mlir::NamedAttribute entry : runtime) {
      auto it = dims.find(entry.getName().str());
      double value = it == dims.end() ? 1.0 : double(it->second);
      if (mlir::cast<mlir::StringAttr>(entry.getValue()).getValue() == "seq")
        sizes.seq = value;
      else
        sizes.batch.push_back(value);
    }
  }
  double total = 0;
  model.walk([&](mlir::Operation *op) {
    if (op->getNumOperands() == 0)
      return;
    mlir::Value x = op->getOperand(0);
    if (!mlir::isa<mlir::RankedTensorType>(x.getType()))
      return;
    double n = sizes.length(x), rows = sizes.rows(x), d = Sizes::width(x);
    double batch = rows / n;
    if (auto gau = mlir::dyn_cast<attn::GauOp>(op)) {
      double e = gau.getE(), s = gau.getS();
      total += batch * (2 * n * d * (3 * e + s) + 2 * n * n * (s + e));
    } else if (auto flash = mlir::dyn_cast<attn::FlashOp>(op)) {
      double e = flash.getE(), s = flash.getS(), c = flash.getChunk();
      total += batch * (2 * n * d * (3 * e + s) + 2 * n * c * (s + e) + 4 * n * s * e);
    } else if (mlir::isa<attn::MhsaOp>(op)) {
      total += batch * (8 * n * d * d + 4 * n * n * d);
    } else if (auto local = mlir::dyn_cast<attn::LocalAttentionOp>(op)) {
      double keys = std::min<double>(double(local.getWindow()), n);
      total += batch * (8 * n * d * d + 4 * n * keys * d);
    } else if (auto lin = mlir::dyn_cast<attn::LinearAttentionOp>(op)) {
      total += batch * (8 * n * d * d + 4 * n * d * d / double(lin.getHeads()));
    } else if (auto glu = mlir::dyn_cast<attn::GluFfnOp>(op)) {
      total += batch * 6 * n * d * double(glu.getHidden());
    } else if (mlir::isa<attn::MatmulOp, attn::DenseOp>(op)) {
      total += 2 * rows * d * Sizes::width(op->getResult(0));
    } else if (auto att = mlir::dyn_cast<attn::AttentionOp>(op)) {
      double m = sizes.length(att.getK());
      total += batch * 2 * n * m * (d + Sizes::width(att.getV()));
    } else if (mlir::isa<attn::LinearAttnOp, attn::ChunkedLinearOp>(op)) {
      total += batch * 4 * n * d * Sizes::width(op->getOperand(2));
    }
  });
  return total;
}

} // namespace attnc::driver
