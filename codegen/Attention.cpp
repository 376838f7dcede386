//===- Attention.cpp - attn -> Halide: quadratic attention ----------------===//
//
// This file lowers attn.attention: per batch entry, head and query row i,
// the scores S[j] = score(q_h[i] . k_h[j], i, j, m) over the keys the mask
// keeps (the score region is translated to a Halide expression), optional
// softmax, and the weighted sum of values. The Default schedule computes
// one row of scores at a time, so no n x m score matrix is ever stored.
// The score-region translation (arith/math ops, rel_pos_bias, t5_bias) is
// in ScoreRegion.cpp.
//
//===----------------------------------------------------------------------===//
#include "codegen/LoweringImpl.h"
#include "codegen/ScoreRegion.h"

namespace attnc::codegen {

using namespace Halide;
namespace attn = mlir::attn;

Expr maskKeeps(attn::MaskAttr mask, const Expr &i, const Expr &j) {
  int size = static_cast<int>(mask.getSize());
  switch (mask.getKind()) {
  case attn::MaskKind::none: return Internal::const_true();
  case attn::MaskKind::causal: return j <= i;
  case attn::MaskKind::window: return j <= i && i - j < size;
  case attn::MaskKind::band: return abs(i - j) < size;
  case attn::MaskKind::chunk: return i / size == j / size;
  case attn::MaskKind::causal_chunk: return i / size == j / size && j <= i;
  }
  return Internal::const_true();
}

mlir::LogicalResult lowerAttention(Lowering &lowering, mlir::Operation *op,
                                   bool &handled) {
  auto attention = mlir::dyn_cast<attn::AttentionOp>(op);
  handled = static_cast<bool>(attention);
  if (!attention)
    return mlir::success();
  const HTensor &q = lowering.get(attention.getQ());
  const HTensor &k = lowering.get(attention.getK());
  const HTensor &v = lowering.get(attention.getV());
  int heads = static_cast<int>(attention.getHeads());
  auto widthOf = [](mlir::Value value) {
    return static_cast<int>(
        mlir::cast<mlir::RankedTensorType>(value.getType()).getShape().back());
  };
  int dk = widthOf(attention.getQ()) / heads;
  int dv = widthOf(attention.getV()) / heads;
  size_t batchRank = q.rank() - 2;
  Expr keyLength = k.extents[k.rank() - 2];

  // Scores: S[batch..., h, i, j] (MLIR order; j innermost).
  std::vector<Var> sVars = makeVars(batchRank, "b");
  Var h("h"), i("i"), j("j");
  sVars.push_back(h);
  sVars.push_back(i);
  sVars.push_back(j);
  Index batch(sVars.begin(), sVars.begin() + batchRank);
  RDom r(0, dk, "dk");
  Index qIndex = batch, kIndex = batch;
  qIndex.push_back(i);
  qIndex.push_back(h * dk + r);
  kIndex.push_back(j);
  kIndex.push_back(h * dk + r);
  Expr qk = sum(q.at(qIndex) * k.at(kIndex));
  ScoreEnv env{qk, i, j, keyLength};
  Expr score;
  if (mlir::failed(lowerScoreRegion(lowering, attention, env, score)))
    return mlir::failure();
  Func scores("scores");
  define(scores, sVars, score);

  // Output: out[batch..., i, c] with head h = c / dv.
  HTensor out;
  out.func = Func("attention");
  out.extents = q.extents;
  out.extents.back() = v.extents.back();
  out.extents = lowering.extentsLike(attention, out.extents);
  std::vector<Var> oVars = makeVars(batchRank, "b");
  Var oi("oi"), c("c");
  oVars.push_back(oi);
  oVars.push_back(c);
  Index oBatch(oVars.begin(), oVars.begin() + batchRank);
  RDom key(0, keyLength, "key");
  Expr keep = maskKeeps(attention.getMask(), oi, key);
  key.where(keep);
  auto scoreAt = [&](const Func &f, const Expr &head, const Expr &row,
                     const Expr &col) {
    Index index = oBatch;
    index.push_back(head);
    index.push_back(row);
    index.push_back(col);
    std::vector<Expr> reversed(index.rbegin(), index.rend());
    return f(reversed);
  };
  Index vIndex = oBatch;
  vIndex.push_back(key);
  vIndex.push_back(c);
  Expr head = c / dv;
  Expr value;
  std::vector<Func> rowFuncs = {scores};
  if (attention.getNormalize() == attn::Normalize::softmax) {
    // Row max and sum over the kept keys; a row with no kept key gives 0.
    std::vector<Var> rVars(sVars.begin(), sVars.end() - 1); // batch, h, i
    Index rIndex(rVars.begin(), rVars.end());
    RDom kept(0, keyLength, "kept");
    kept.where(maskKeeps(attention.getMask(), i, kept));
    Func rowMax("row_max"), weights("softmax_weights"), rowSum("row_sum");
    Index sAtKept = rIndex;
    sAtKept.push_back(kept);
    std::vector<Expr> sKept(sAtKept.rbegin(), sAtKept.rend());
    define(rowMax, rVars, maximum(scores(sKept)));
    std::vector<Expr> rRev(rIndex.rbegin(), rIndex.rend());
    define(weights, sVars, exp(scores(std::vector<Expr>(sVars.rbegin(), sVars.rend())) -
                               rowMax(rRev)));
    define(rowSum, rVars, sum(weights(sKept)));
    Index sumIndex = oBatch;
    sumIndex.push_back(head);
    sumIndex.push_back(oi);
    std::vector<Expr> sumRev(sumIndex.rbegin(), sumIndex.rend());
    Expr total = rowSum(sumRev);
    value = select(total > 0.0f,
                   sum(scoreAt(weights, head, oi, key) * v.at(vIndex)) / total,
                   0.0f);
    rowFuncs = {scores, rowMax, weights, rowSum};
    if (!lowering.rowScratch()) {
      // GPU: row statistics at root, scores and weights recomputed inline.
      lowering.scheduleRoot(rowMax, rVars, /*vectorize=*/false);
      lowering.scheduleRoot(rowSum, rVars, /*vectorize=*/false);
      rowFuncs.clear();
    }
  } else {
    value = sum(scoreAt(scores, head, oi, key) * v.at(vIndex));
  }
  define(out.func, oVars, value);
  lowering.scheduleElementwise(out, oVars);
  // CPU: scores and row statistics live for one query row at a time.
  if (lowering.rowScratch())
    for (Func &f : rowFuncs)
      f.compute_at(out.func, oi);
  lowering.set(attention, out);
  return mlir::success();
}

} // namespace attnc::codegen
