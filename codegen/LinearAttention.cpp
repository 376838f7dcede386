//===- LinearAttention.cpp - attn -> Halide: linear attention -------------===//
//
// This file lowers attn.linear_attn (feature map, normalisation; the
// where attn-chunk has not rewritten it into chunks: the non-causal form
// through the s x e state phi(K)^T V, the causal form through row-wise
// masked scores) and
// attn.chunked_linear, FLASH's global term: per-chunk K^T V states, an
// exclusive prefix over chunks (causal) or their total, then Q . state.
//
//===----------------------------------------------------------------------===//
#include "codegen/LoweringImpl.h"

namespace attnc::codegen {

using namespace Halide;
namespace attn = mlir::attn;

static Expr feature(attn::FeatureMap map, const Expr &x) {
  switch (map) {
  case attn::FeatureMap::identity: return x;
  case attn::FeatureMap::elu1: return select(x > 0.0f, x + 1.0f, exp(x));
  case attn::FeatureMap::relu: return max(x, 0.0f);
  case attn::FeatureMap::silu: return x / (1.0f + exp(-x));
  case attn::FeatureMap::exp: return exp(x);
  }
  return x;
}

/// Materialises `map(t)` elementwise.
static HTensor mapped(Lowering &lowering, const HTensor &t, attn::FeatureMap map,
                      const char *name) {
  HTensor out;
  out.func = Func(name);
  out.extents = t.extents;
  std::vector<Var> vars = makeVars(t.rank(), "f");
  define(out.func, vars, feature(map, t.at(toIndex(vars))));
  lowering.scheduleElementwise(out, vars);
  return out;
}

static mlir::LogicalResult lowerLinearAttn(Lowering &lowering,
                                           attn::LinearAttnOp op) {
  HTensor q = mapped(lowering, lowering.get(op.getQ()), op.getFeature(), "phi_q");
  HTensor k = mapped(lowering, lowering.get(op.getK()), op.getFeature(), "phi_k");
  const HTensor &v = lowering.get(op.getV());
  size_t batchRank = q.rank() - 2;
  Expr s = q.extents.back(), keys = k.extents[k.rank() - 2];
  float scale = static_cast<float>(op.getScale());

  HTensor out;
  out.func = Func("linear_attn");
  out.extents = lowering.extentsLike(op, withTail(Index(q.extents.begin(),
                                                    q.extents.end() - 1),
                                              {v.extents.back()}));
  std::vector<Var> oVars = makeVars(batchRank, "b");
  Var i("i"), e("e");
  oVars.push_back(i);
  oVars.push_back(e);
  Index batch(oVars.begin(), oVars.begin() + batchRank);
  Expr num, den;
  std::vector<Func> rowFuncs;
  if (!op.getCausal()) {
    // state[c, e] = sum_j phi(k[j, c]) v[j, e]; z[c] = sum_j phi(k[j, c]).
    std::vector<Var> sVars = makeVars(batchRank, "b");
    Var sc("sc"), se("se");
    sVars.push_back(sc);
    sVars.push_back(se);
    Index sBatch(sVars.begin(), sVars.begin() + batchRank);
    RDom j(0, keys, "j");
    Func state("kv_state"), z("k_sum");
    define(state, sVars, sum(k.at(withTail(sBatch, {j, sc})) * v.at(withTail(sBatch, {j, se}))));
    std::vector<Var> zVars(sVars.begin(), sVars.end() - 1);
    define(z, zVars, sum(k.at(withTail(sBatch, {j, sc}))));
    lowering.addInternalStage(state, sVars);
    lowering.addInternalStage(z, zVars, /*perRow=*/true);
    RDom c(0, s, "c");
    num = sum(q.at(withTail(batch, {i, c})) * callAt(state, withTail(batch, {c, e})));
    den = sum(q.at(withTail(batch, {i, c})) * callAt(z, withTail(batch, {c})));
  } else {
    // Row-wise masked scores a[j] = phi(q_i) . phi(k_j), j <= i.
    std::vector<Var> aVars = makeVars(batchRank, "b");
    Var ai("ai"), aj("aj");
    aVars.push_back(ai);
    aVars.push_back(aj);
    Index aBatch(aVars.begin(), aVars.begin() + batchRank);
    RDom c(0, s, "c");
    Func scores("linear_scores");
    define(scores, aVars, sum(q.at(withTail(aBatch, {ai, c})) * k.at(withTail(aBatch, {aj, c}))));
    RDom j(0, keys, "j");
    j.where(j <= i);
    num = sum(callAt(scores, withTail(batch, {i, j})) * v.at(withTail(batch, {j, e})));
    den = sum(callAt(scores, withTail(batch, {i, j})));
    rowFuncs.push_back(scores);
  }
  Expr value = op.getNormalize() ? divideOrZero(num, den) : num;
  define(out.func, oVars, scale * value);
  LoopLevel row = lowering.scheduleElementwise(out, oVars, /*fuseRows=*/false);
  if (lowering.rowScratch() && out.materialized && !lowering.autoscheduled())
    for (Func &f : rowFuncs)
      f.compute_at(row);
  lowering.set(op, out);
  return mlir::success();
}

static mlir::LogicalResult lowerChunkedLinear(Lowering &lowering,
                                              attn::ChunkedLinearOp op) {
  const HTensor &q = lowering.get(op.getQ());
  const HTensor &k = lowering.get(op.getK());
  const HTensor &v = lowering.get(op.getV());
  size_t batchRank = q.rank() - 2;
  int chunk = static_cast<int>(op.getChunk());
  Expr n = k.extents[k.rank() - 2];
  Expr chunks = (n + (chunk - 1)) / chunk;
  Expr s = q.extents.back();

  // Per-chunk states S[g, c, e] = sum_{t in chunk g} k[t, c] v[t, e].
  std::vector<Var> sVars = makeVars(batchRank, "b");
  Var g("g"), c("c"), e("e");
  sVars.push_back(g);
  sVars.push_back(c);
  sVars.push_back(e);
  Index sBatch(sVars.begin(), sVars.begin() + batchRank);
  RDom t(0, chunk, "t");
  Expr pos = g * chunk + t;
  t.where(pos < n);
  Expr safe = clamp(pos, 0, n - 1);
  Func states("chunk_states");
  define(states, sVars, sum(k.at(withTail(sBatch, {safe, c})) * v.at(withTail(sBatch, {safe, e}))));
  lowering.addInternalStage(states, sVars);

  // Visible state per chunk: exclusive prefix (causal) or total.
  Func visible("visible_state");
  if (op.getCausal()) {
    define(visible, sVars, 0.0f);
    RDom rg(1, max(chunks - 1, 0), "rg");
    Index cur = withTail(sBatch, {rg, c, e}), prev = withTail(sBatch, {rg - 1, c, e});
    std::vector<Expr> curRev(cur.rbegin(), cur.rend());
    visible(curRev) = callAt(visible, prev) + callAt(states, prev);
    lowering.addScanUpdate(visible, e, c);
  } else {
    std::vector<Var> tVars = sVars;
    RDom all(0, chunks, "all");
    define(visible, tVars, sum(callAt(states, withTail(sBatch, {all, c, e}))));
  }
  lowering.addInternalStage(visible, sVars);

  HTensor out;
  out.func = Func("chunked_linear");
  out.extents = lowering.extentsLike(op, withTail(Index(q.extents.begin(),
                                                    q.extents.end() - 1),
                                              {v.extents.back()}));
  std::vector<Var> oVars = makeVars(batchRank, "b");
  Var i("i"), oe("oe");
  oVars.push_back(i);
  oVars.push_back(oe);
  Index batch(oVars.begin(), oVars.begin() + batchRank);
  RDom rc(0, s, "rc");
  Expr stateIndexChunk = op.getCausal() ? i / chunk : Expr(0);
  Expr value = sum(q.at(withTail(batch, {i, rc})) *
                   callAt(visible, withTail(batch, {stateIndexChunk, rc, oe})));
  define(out.func, oVars, static_cast<float>(op.getScale()) * value);
  lowering.scheduleElementwise(out, oVars);
  lowering.set(op, out);
  return mlir::success();
}

mlir::LogicalResult lowerLinearAttention(Lowering &lowering, mlir::Operation *op) {
  if (auto lin = mlir::dyn_cast<attn::LinearAttnOp>(op))
    return lowerLinearAttn(lowering, lin);
  if (auto chunked = mlir::dyn_cast<attn::ChunkedLinearOp>(op))
    return lowerChunkedLinear(lowering, chunked);
  return op->emitError() << "internal error: '" << op->getName()
                         << "' reached the wrong lowering";
}

} // namespace attnc::codegen
