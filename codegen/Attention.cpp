//===- Attention.cpp - attn -> Halide: quadratic attention ----------------===//
//
// This file lowers attn.attention: per batch entry, head and query row i,
// the scores S[j] = score(q_h[i] . k_h[j], i, j, m) over the keys the mask
// keeps (the score region is translated to a Halide expression), optional
// softmax, and the weighted sum of values. With `compute = tile` (one head,
// no softmax) it runs in blocks of queries x keys as two register-tiled
// GEMMs per block, skipping blocks the mask removes; otherwise the Default
// schedule computes one row of scores at a time. No n x m score matrix is
// ever stored. The score-region translation (arith/math ops, rel_pos_bias,
// t5_bias) is in ScoreRegion.cpp.
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
  case attn::MaskKind::none:
    return Internal::const_true();
  case attn::MaskKind::causal:
    return j <= i;
  case attn::MaskKind::window:
    return j <= i && i - j < size;
  case attn::MaskKind::band:
    return abs(i - j) < size;
  case attn::MaskKind::chunk:
    return i / size == j / size;
  case attn::MaskKind::causal_chunk:
    return i / size == j / size && j <= i;
  }
  return Internal::const_true();
}

/// Whether some query in [rowLo, rowHi] keeps some key in [keyLo, keyHi]
/// under `mask` (conservative: true whenever unsure). Written as bounds on
/// the key block so that Halide trims the loop over key blocks.
static Expr blockKept(attn::MaskAttr mask, const Expr &rowLo, const Expr &rowHi,
                      const Expr &keyLo, const Expr &keyHi) {
  int size = static_cast<int>(mask.getSize());
  switch (mask.getKind()) {
  case attn::MaskKind::none:
    return Internal::const_true();
  case attn::MaskKind::causal:
    return keyLo <= rowHi;
  case attn::MaskKind::window:
    return keyLo <= rowHi && keyHi > rowLo - size;
  case attn::MaskKind::band:
    return keyLo < rowHi + size && keyHi > rowLo - size;
  case attn::MaskKind::chunk:
    return keyLo / size <= rowHi / size && keyHi / size >= rowLo / size;
  case attn::MaskKind::causal_chunk:
    return keyLo <= rowHi && keyHi / size >= rowLo / size;
  }
  return Internal::const_true();
}

/// Blocked attention (compute = tile; one head, no softmax). With T =
/// split_k, queries and keys are cut into blocks of T; for each query block
/// (in parallel) and each key block the mask keeps:
///   weights = f(Q_blk K_blk^T) masked     (register-tiled GEMM over d)
///   acc    += weights V_blk                (register-tiled GEMM over T)
/// so a T x T block of weights is the largest score buffer, and key blocks
/// a mask removes entirely (the upper half of causal attention) are
/// skipped: the loop over key blocks carries the mask as a predicate that
/// Halide turns into loop bounds.
static mlir::LogicalResult lowerTiledAttention(Lowering &lowering,
                                               attn::AttentionOp attention,
                                               attn::ScheduleAttr attr) {
  const HTensor &q = lowering.get(attention.getQ());
  const HTensor &k = lowering.get(attention.getK());
  const HTensor &v = lowering.get(attention.getV());
  size_t rank = q.rank();
  Expr rows = q.extents[rank - 2], keys = k.extents[rank - 2];
  Expr depth = q.extents.back(), width = v.extents.back();
  GemmTile tile;
  tile.vector = static_cast<int>(attr.getVector());
  tile.unrollX = static_cast<int>(attr.getTileX() / attr.getVector());
  tile.tileY = static_cast<int>(attr.getTileY());
  int block = static_cast<int>(attr.getSplitK());
  Expr keyBlocks = (keys + block - 1) / block;

  // Keys transposed per batch entry, kT[..., r, j] = k[..., j, r], over
  // whole key blocks (rows past the end repeat the last key; their weights
  // are zero), so that the score tiles load contiguous, unclamped vectors.
  Func kT("keys_t");
  std::vector<Var> tVars = makeVars(rank, "t");
  define(
      kT, tVars,
      k.at(withTail(Index(tVars.begin(), tVars.end() - 2),
                    {clamp(tVars[rank - 1], 0, keys - 1), tVars[rank - 2]})));
  lowering.scheduleRoot(kT, tVars);

  // Scores of one register tile: qk[..., i, j] = sum_r q[i, r] kT[r, j].
  std::vector<Var> sVars = makeVars(rank, "s");
  Index sBatch(sVars.begin(), sVars.end() - 2);
  Var si = sVars[rank - 2], sj = sVars[rank - 1];
  Func qk("attention_qk");
  define(qk, sVars, 0.0f);
  RDom r(0, depth, "r");
  {
    std::vector<Expr> at(sVars.rbegin(), sVars.rend());
    qk(at) = qk(at) + q.at(withTail(sBatch, {clamp(si, 0, rows - 1), r})) *
                          callAt(kT, withTail(sBatch, {r, sj}));
  }
  // Weights of one block: score and mask (keys past the end weigh 0).
  Func weights("attention_weights");
  ScoreEnv env{callAt(qk, toIndex(sVars)), si, sj, keys};
  Expr score;
  if (mlir::failed(lowerScoreRegion(lowering, attention, env, score)))
    return mlir::failure();
  define(
      weights, sVars,
      select(maskKeeps(attention.getMask(), si, sj) && sj < keys, score, 0.0f));

  // One output register tile of one key block: sum over its T keys.
  std::vector<Var> pVars = makeVars(rank + 1, "p"); // batch..., kb, i, c
  Index pBatch(pVars.begin(), pVars.end() - 3);
  Var pkb = pVars[rank - 2], pi = pVars[rank - 1], pc = pVars[rank];
  const int64_t *staticWidth = Internal::as_const_int(width);
  bool wholeColumnTiles = staticWidth && *staticWidth % tile.tileX() == 0;
  Func partial("attention_tile");
  define(partial, pVars, 0.0f);
  RDom jj(0, block, "jj");
  {
    std::vector<Expr> at(pVars.rbegin(), pVars.rend());
    Expr key = pkb * block + jj;
    Expr col = wholeColumnTiles ? Expr(pc) : clamp(pc, 0, width - 1);
    partial(at) = partial(at) +
                  callAt(weights, withTail(pBatch, {pi, key})) *
                      v.at(withTail(pBatch, {clamp(key, 0, keys - 1), col}));
  }

  // Accumulator of one query block over the key blocks it needs.
  std::vector<Var> aVars = makeVars(rank + 1, "a"); // batch..., rb, ii, c
  Index aBatch(aVars.begin(), aVars.end() - 3);
  Var arb = aVars[rank - 2], aii = aVars[rank - 1], ac = aVars[rank];
  Func acc("attention_acc");
  define(acc, aVars, 0.0f);
  RDom kd(0, keyBlocks, "kd");
  kd.where(blockKept(attention.getMask(), arb * block, arb * block + block - 1,
                     kd * block, kd * block + block - 1));
  {
    std::vector<Expr> at(aVars.rbegin(), aVars.rend());
    acc(at) = acc(at) +
              callAt(partial, withTail(aBatch, {kd, arb * block + aii, ac}));
  }

  HTensor out;
  out.func = Func("attention");
  out.extents = lowering.extentsLike(
      attention,
      withTail(Index(q.extents.begin(), q.extents.end() - 1), {width}));
  std::vector<Var> oVars = makeVars(rank, "o");
  Index oBatch(oVars.begin(), oVars.end() - 2);
  Var orow = oVars[rank - 2], ocol = oVars[rank - 1];
  define(out.func, oVars,
         callAt(acc, withTail(oBatch, {orow / block, orow % block, ocol})));
  out.materialized = true;

  // Schedule: query blocks of every batch entry in parallel.
  Var qb("qb"), qr("qr");
  out.func.compute_root()
      .split(orow, qb, qr, block, TailStrategy::GuardWithIf)
      .vectorize(ocol, tile.vector, TailStrategy::GuardWithIf);
  std::vector<Var> outer(oBatch.size() + 1);
  for (size_t d = 0; d < oBatch.size(); ++d)
    outer[d] = oVars[d];
  outer.back() = qb;
  Var queryBlock = fuseOuter(out.func, outer, outer.size());
  if (attr.getParallel())
    out.func.parallel(queryBlock);

  acc.compute_at(out.func, queryBlock).vectorize(ac, tile.vector);
  Var co("co"), ci("ci"), rt("rt"), ri("ri");
  {
    std::vector<VarOrRVar> order = {ci, ri, rt, co, kd.x, arb};
    for (size_t d = aBatch.size(); d-- > 0;)
      order.push_back(aVars[d]);
    acc.update()
        .split(ac, co, ci, tile.tileX(), TailStrategy::RoundUp)
        .split(aii, rt, ri, tile.tileY, TailStrategy::RoundUp)
        .reorder(order)
        .vectorize(ci, tile.vector);
  }
  partial.update().reorder(pc, pi, jj.x, pkb);
  scheduleRegisterTile(partial, pc, pi, LoopLevel(acc, rt), tile);

  Var jo("jo"), ji("ji"), io("io"), ii("ii");
  weights.compute_at(acc, kd.x)
      .tile(sj, si, jo, io, ji, ii, tile.tileX(), tile.tileY,
            TailStrategy::RoundUp)
      .vectorize(ji, tile.vector);
  qk.update().reorder(sj, si, r.x);
  scheduleRegisterTile(qk, sj, si, LoopLevel(weights, jo), tile);
  lowering.set(attention, out);
  return mlir::success();
}

mlir::LogicalResult lowerAttention(Lowering &lowering, mlir::Operation *op,
                                   bool &handled) {
  auto attention = mlir::dyn_cast<attn::AttentionOp>(op);
  handled = static_cast<bool>(attention);
  if (!attention)
    return mlir::success();
  if (attn::ScheduleAttr attr = lowering.schedule();
      attr && attr.getCompute() == attn::ComputeAt::tile) {
    if (lowering.options.gpu)
      return attention.emitError()
             << "schedule compute = tile is for CPUs, not a CUDA target";
    return lowerTiledAttention(lowering, attention, attr);
  }
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
    define(weights, sVars,
           exp(scores(std::vector<Expr>(sVars.rbegin(), sVars.rend())) -
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
