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
#include "codegen/Gemm.h"
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

/// Attention over few, statically many keys (the chunks of attn-chunk), one
/// head, no softmax: two batched GEMMs, S = Q K^T and out = f(S) V, with the
/// score function and mask applied to S elementwise in between.
static mlir::LogicalResult lowerBlockAttention(Lowering &lowering,
                                               attn::AttentionOp attention) {
  const HTensor &q = lowering.get(attention.getQ());
  const HTensor &k = lowering.get(attention.getK());
  const HTensor &v = lowering.get(attention.getV());
  size_t rank = q.rank();
  Expr keyLength = k.extents[rank - 2];

  // Keys transposed per batch entry: kT[..., r, j] = k[..., j, r].
  Func kT("keys_t");
  std::vector<Var> tVars = makeVars(rank, "t");
  {
    Index index(tVars.begin(), tVars.end() - 2);
    index.push_back(tVars[rank - 1]);
    index.push_back(tVars[rank - 2]);
    define(kT, tVars, k.at(index));
  }
  lowering.scheduleRoot(kT, tVars);

  HTensor scores;
  scores.func = Func("block_scores");
  scores.extents = q.extents;
  scores.extents.back() = keyLength;
  GemmOperands qkT;
  qkT.rows = q.extents[rank - 2];
  qkT.cols = keyLength;
  qkT.depth = q.extents.back();
  qkT.lhs = [&q](const Index &b, const Expr &i, const Expr &r) {
    return q.at(withTail(b, {i, r}));
  };
  qkT.rhs = [&](const Index &b, const Expr &r, const Expr &j) {
    return callAt(kT, withTail(b, {r, j}));
  };
  qkT.parallelOverBatch = true;
  defineGemm(lowering, scores, makeVars(rank, "q"), qkT);

  // Weights A[..., i, j] = mask ? score(S, i, j, m) : 0.
  HTensor weights;
  weights.func = Func("block_weights");
  weights.extents = scores.extents;
  std::vector<Var> wVars = makeVars(rank, "w");
  Var i = wVars[rank - 2], j = wVars[rank - 1];
  ScoreEnv env{scores.at(toIndex(wVars)), i, j, keyLength};
  Expr score;
  if (mlir::failed(lowerScoreRegion(lowering, attention, env, score)))
    return mlir::failure();
  define(weights.func, wVars,
         select(maskKeeps(attention.getMask(), i, j), score, 0.0f));
  lowering.scheduleElementwise(weights, wVars);

  HTensor out;
  out.func = Func("block_attention");
  out.extents = lowering.extentsLike(attention, withTail(Index(q.extents.begin(),
                                                           q.extents.end() - 1),
                                                     {v.extents.back()}));
  GemmOperands av;
  av.rows = q.extents[rank - 2];
  av.cols = v.extents.back();
  av.depth = keyLength;
  av.lhs = [&weights](const Index &b, const Expr &row, const Expr &key) {
    return weights.at(withTail(b, {row, key}));
  };
  av.rhs = [&v](const Index &b, const Expr &key, const Expr &c) {
    return v.at(withTail(b, {key, c}));
  };
  av.parallelOverBatch = true;
  defineGemm(lowering, out, makeVars(rank, "o"), av);
  lowering.set(attention, out);
  return mlir::success();
}

/// Whether the block (two-GEMM) form applies: CPU default schedule, one
/// head, no softmax, a static number of keys (attention inside chunks).
static bool useBlockForm(Lowering &lowering, attn::AttentionOp attention) {
  auto k = mlir::cast<mlir::RankedTensorType>(attention.getK().getType());
  attn::MaskKind mask = attention.getMask().getKind();
  return !lowering.options.gpu &&
         lowering.options.schedule == ScheduleKind::Default &&
         attention.getHeads() == 1 &&
         attention.getNormalize() == attn::Normalize::none &&
         !k.isDynamicDim(k.getRank() - 2) && k.getDimSize(k.getRank() - 2) <= 1024 &&
         (mask == attn::MaskKind::none || mask == attn::MaskKind::causal);
}

mlir::LogicalResult lowerAttention(Lowering &lowering, mlir::Operation *op,
                                   bool &handled) {
  auto attention = mlir::dyn_cast<attn::AttentionOp>(op);
  handled = static_cast<bool>(attention);
  if (!attention)
    return mlir::success();
  if (useBlockForm(lowering, attention))
    return lowerBlockAttention(lowering, attention);
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
  LoopLevel row = lowering.scheduleElementwise(out, oVars, /*fuseRows=*/false);
  // CPU: scores and row statistics live for one query row at a time.
  mlir::attn::ScheduleAttr attr = lowering.schedule();
  bool atRoot = attr && attr.getCompute() == mlir::attn::ComputeAt::root;
  if (lowering.rowScratch() && out.materialized)
    for (Func &f : rowFuncs) {
      if (atRoot)
        f.compute_root(); // the schedule asks for whole score matrices
      else
        f.compute_at(row);
    }
  lowering.set(attention, out);
  return mlir::success();
}

} // namespace attnc::codegen
