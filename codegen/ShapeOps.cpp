//===- ShapeOps.cpp - attn -> Halide: re-indexing ops and embedding ------===//
//
// This file lowers the ops that only re-index their operand. Split,
// transpose and row are inlined into their consumers (no storage of their
// own); embedding, a gather of table rows at token ids, is a row-wise stage
// with its schedule.
//
//===----------------------------------------------------------------------===//
#include "codegen/LoweringImpl.h"

namespace attnc::codegen {

using namespace Halide;
namespace attn = mlir::attn;

mlir::LogicalResult lowerShapeOps(Lowering &lowering, mlir::Operation *op) {
  if (auto embedding = mlir::dyn_cast<attn::EmbeddingOp>(op)) {
    // Token ids arrive in a 4-byte buffer like every input (TensorInfo::
    // dtype): their bits are the int32 ids. They were checked before the
    // run (ModelPipeline::run); the clamp keeps any id inside the table.
    const HTensor &ids = lowering.get(embedding.getIds());
    const HTensor &table = lowering.get(embedding.getTable());
    int rows = int(embedding.getTable().getType().getDimSize(0));
    HTensor t;
    t.func = Func("embedding");
    t.extents = ids.extents;
    t.extents.push_back(table.extents.back());
    std::vector<Var> vars = makeVars(t.rank(), "m");
    Index at = toIndex(vars);
    Expr c = at.back();
    at.pop_back();
    Expr id = clamp(reinterpret(Int(32), ids.at(at)), 0, rows - 1);
    define(t.func, vars, table.at({id, c}));
    lowering.scheduleElementwise(t, vars);
    lowering.set(embedding, t);
    return mlir::success();
  }
  if (auto split = mlir::dyn_cast<attn::SplitOp>(op)) {
    // A copy: setting a result may grow the value map, and a reference into
    // it would dangle for the next result (a SIGSEGV under the Naive
    // schedule, found by the model generator).
    const HTensor in = lowering.get(split.getX());
    int64_t offset = 0;
    for (auto [result, size] : llvm::zip(split.getResults(), split.getSizes())) {
      HTensor t;
      t.func = Func("split");
      t.extents = in.extents;
      t.extents.back() = Expr(int(size));
      std::vector<Var> vars = makeVars(t.rank(), "s");
      Index index = toIndex(vars);
      index.back() = index.back() + int(offset);
      define(t.func, vars, in.at(index));
      lowering.set(result, t);
      offset += size;
    }
    return mlir::success();
  }
  if (auto transpose = mlir::dyn_cast<attn::TransposeOp>(op)) {
    const HTensor &in = lowering.get(transpose.getX());
    HTensor t;
    t.func = Func("transpose");
    t.extents = in.extents;
    std::swap(t.extents[t.rank() - 1], t.extents[t.rank() - 2]);
    std::vector<Var> vars = makeVars(t.rank(), "t");
    Index index = toIndex(vars);
    std::swap(index[index.size() - 1], index[index.size() - 2]);
    define(t.func, vars, in.at(index));
    lowering.set(transpose, t);
    return mlir::success();
  }
  if (auto row = mlir::dyn_cast<attn::RowOp>(op)) {
    const HTensor &in = lowering.get(row.getP());
    HTensor t;
    t.func = Func("row");
    t.extents = {in.extents[1]};
    Var c("c");
    t.func(c) = in.at({Expr(int(row.getIndex())), c});
    lowering.set(row, t);
    return mlir::success();
  }
  return op->emitError() << "internal error: '" << op->getName()
                         << "' reached the wrong lowering";
}

} // namespace attnc::codegen
