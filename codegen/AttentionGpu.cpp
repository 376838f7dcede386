//===- AttentionGpu.cpp - attn -> Halide: blocked attention on CUDA -------===//
//
// This file lowers attn.attention under a CUDA schedule with shared = true:
// tile = [X, T] (X output columns of one head by T queries per block),
// gpu_threads = [tx, ty] (each thread holds an X/tx by T/ty piece of the
// output in registers), split_k = K (keys per step). Per batch entry, head,
// query block and column block, one CUDA block sweeps the key blocks the
// mask keeps (a predicate on the key-block loop that Halide turns into its
// bounds, so causal attention skips the blocks above the diagonal); per
// step it computes the K x T block of weights into shared memory (each
// thread a register tile of q . k dot products, then the score function and
// the mask), stages the K x X panel of values next to it, and each thread
// adds its piece of weights x values. Softmax takes a first sweep over the
// same key blocks that keeps each row's running maximum and sum of
// exponentials (rescaled when the maximum grows); the weights of the second
// sweep are then exp(score - max) / sum, so the output needs no final
// division. No score matrix larger than a K x T block exists.
//
//===----------------------------------------------------------------------===//
#include "codegen/LoweringImpl.h"
#include "codegen/ScoreRegion.h"

namespace attnc::codegen {

using namespace Halide;
namespace attn = mlir::attn;

mlir::LogicalResult lowerGpuTiledAttention(Lowering &lowering,
                                           attn::AttentionOp attention,
                                           attn::ScheduleAttr attr) {
  const HTensor &q = lowering.get(attention.getQ());
  const HTensor &k = lowering.get(attention.getK());
  const HTensor &v = lowering.get(attention.getV());
  GpuLoops gpu = lowering.gpuLoops();
  size_t rank = q.rank();
  size_t batchRank = rank - 2;
  Expr keys = k.extents[rank - 2];
  int dv = featuresPerHead(attention, attention.getV());
  bool softmax = attention.getNormalize() == attn::Normalize::softmax;
  attn::MaskAttr mask = attention.getMask();
  int tileX = int(attr.getTileX()), tileY = int(attr.getTileY());
  int threadsX = int(attr.getGpuThreadsX()),
      threadsY = int(attr.getGpuThreadsY());
  int block = int(attr.getSplitK());
  Expr keyBlocks = (keys + block - 1) / block;
  auto kept = [&](const Expr &rowBlock, const Expr &keyBlock) {
    return blockKept(mask, tileY, block, rowBlock * tileY, keyBlock * block);
  };

  // Scores of head h over [batch..., h, i, j]: a dot product over dk per
  // (i, j), then the score function; `keep` where the mask keeps (i, j) and
  // j is a key.
  std::vector<Var> sVars = makeVars(rank + 1, "s");
  Index sBatch(sVars.begin(), sVars.begin() + batchRank);
  Var sh = sVars[rank - 2], si = sVars[rank - 1], sj = sVars[rank];
  auto scoreOf = [&](const std::string &name, Func &qk, RDom &r,
                     Expr &score) {
    auto key = [&](const Index &batch, const Expr &feature, const Expr &j) {
      return k.at(withTail(batch, {clamp(j, 0, keys - 1), feature}));
    };
    return defineBlockScores(lowering, attention, sVars, name, key, qk, r,
                             score);
  };
  Expr keep = maskKeeps(mask, si, sj) && sj < keys;

  // A K x T block of scores or weights, computed at `at` in shared memory:
  // each thread a register tile of its dot products.
  auto scheduleBlock = [&](Func blockFunc, Func qk, const RDom &r,
                           const LoopLevel &at) {
    Var wj("wj"), wi("wi");
    blockFunc.compute_at(at)
        .tile(sj, si, wj, wi, block / threadsX, tileY / threadsY,
              TailStrategy::RoundUp)
        .unroll(wj)
        .unroll(wi);
    gpu.shared(blockFunc);
    gpu.threads(blockFunc, {sj, si});
    // Unrolled by the thread's tile: a sequence shorter than the block
    // (constant n = 2) leaves the extents non-constant, and a plain
    // unroll() of those is an internal error in Halide (found by the
    // model generator); the guard is proven away for whole tiles.
    int perThreadX = block / threadsX, perThreadY = tileY / threadsY;
    qk.compute_at(blockFunc, sj)
        .unroll(sj, perThreadX, TailStrategy::GuardWithIf)
        .unroll(si, perThreadY, TailStrategy::GuardWithIf);
    qk.update()
        .reorder(sj, si, r.x)
        .unroll(sj, perThreadX, TailStrategy::GuardWithIf)
        .unroll(si, perThreadY, TailStrategy::GuardWithIf);
  };

  // Queries are addressed as (query block rb, row ii in it): a CUDA block
  // sees one rb, which the key-block predicates can then use as a bound.
  std::vector<Var> bVars = makeVars(batchRank + 3, "a"); // batch..., h, rb, ii
  Index bBatch(bVars.begin(), bVars.begin() + batchRank);
  Var bh = bVars[batchRank], brb = bVars[batchRank + 1],
      bii = bVars[batchRank + 2];
  Expr blockRow = brb * tileY + bii;
  auto outerOf = [&](std::vector<VarOrRVar> inner) {
    // The loops of a block-level stage: `inner`, then rb, h and batch.
    inner.push_back(brb);
    inner.push_back(bh);
    for (size_t d = batchRank; d-- > 0;)
      inner.push_back(bVars[d]);
    return inner;
  };

  // Softmax, first sweep: per row, the running maximum m of the kept scores
  // and the sum l of exp(score - m), rescaled when m grows.
  Func stats("attention_row_stats"), maxScores("attention_max_scores"), maxQk;
  RDom maxR, sweep;
  if (softmax) {
    Expr score;
    if (mlir::failed(scoreOf("attention_max", maxQk, maxR, score)))
      return mlir::failure();
    define(maxScores, sVars, select(keep, score, -INFINITY));
    std::vector<Expr> at(bVars.rbegin(), bVars.rend());
    stats(at) = Tuple(Expr(-INFINITY), Expr(0.0f));
    sweep = RDom(0, block, 0, keyBlocks, "sweep");
    sweep.where(kept(brb, sweep.y));
    Expr s = callAt(maxScores,
                    withTail(bBatch, {bh, blockRow, sweep.y * block + sweep.x}));
    Expr m = stats(at)[0], l = stats(at)[1];
    Expr grown = max(m, s);
    // Nothing kept yet (grown = -inf): the sum stays 0.
    stats(at) = Tuple(grown, select(grown == -INFINITY, 0.0f,
                                    l * exp(m - grown) + exp(s - grown)));
  }

  // The weights of one block: f(score), or exp(score - m) / l; 0 where
  // masked.
  Func weights("attention_weights"), qk;
  RDom qkR;
  {
    Expr score;
    if (mlir::failed(scoreOf("attention", qk, qkR, score)))
      return mlir::failure();
    if (softmax) {
      std::vector<Expr> at(
          {si % tileY, si / tileY, sh});
      for (size_t d = batchRank; d-- > 0;)
        at.push_back(sBatch[d]);
      // A row whose kept keys all score -inf has l = 0: weights 0, as on
      // the CPU.
      Expr total = stats(at)[1];
      keep = keep && total > 0.0f;
      score = exp(score - stats(at)[0]) / total;
    }
    define(weights, sVars, select(keep, score, 0.0f));
  }

  // The values of one key block, [batch..., h, j, c].
  Func values("attention_values");
  std::vector<Var> vVars = makeVars(rank + 1, "v");
  Index vBatch(vVars.begin(), vVars.begin() + batchRank);
  define(values, vVars,
         v.at(withTail(vBatch, {clamp(vVars[rank - 1], 0, keys - 1),
                                vVars[rank - 2] * dv +
                                    clamp(vVars[rank], 0, dv - 1)})));

  // Accumulators of one query block, [batch..., h, rb, ii, c]: the sum over
  // the kept key blocks of weights x values.
  std::vector<Var> aVars = bVars;
  Var ac("ac");
  aVars.push_back(ac);
  Func acc("attention_acc");
  define(acc, aVars, 0.0f);
  RDom r(0, block, 0, keyBlocks, "keys");
  r.where(kept(brb, r.y));
  {
    std::vector<Expr> at(aVars.rbegin(), aVars.rend());
    Expr key = r.y * block + r.x;
    acc(at) = acc(at) +
              callAt(weights, withTail(bBatch, {bh, blockRow, key})) *
                  callAt(values, withTail(bBatch, {bh, key, ac}));
  }

  HTensor out;
  out.func = Func("attention");
  out.extents = lowering.extentsLike(
      attention,
      withTail(Index(q.extents.begin(), q.extents.end() - 1),
               {v.extents.back()}));
  std::vector<Var> oVars = makeVars(rank, "o");
  Index oBatch(oVars.begin(), oVars.end() - 2);
  Var orow = oVars[rank - 2], ocol = oVars[rank - 1];
  // A view of the accumulators (inlined into its consumers).
  define(out.func, oVars,
         callAt(acc, withTail(oBatch, {ocol / dv, orow / tileY, orow % tileY,
                                       ocol % dv})));

  // Schedule: the accumulators at root. Blocks: (column block, query block,
  // head x batch); threads: a contiguous X/tx x T/ty piece each. The
  // key-block loop sits between the block and the thread loops, so one
  // staged block of weights and values serves every thread; within a step
  // each thread keeps its piece in registers.
  int subX = tileX / threadsX, subY = tileY / threadsY;
  Var cb("cb"), ct("ct"), cj("cj"), rt("rt"), ri("ri");
  auto tileAcc = [&](Stage stage, std::vector<VarOrRVar> inner,
                     std::vector<VarOrRVar> middle) {
    stage.split(ac, cb, ct, tileX, TailStrategy::GuardWithIf)
        .split(ct, ct, cj, subX, TailStrategy::GuardWithIf)
        .split(bii, rt, ri, subY, TailStrategy::GuardWithIf);
    std::vector<VarOrRVar> order = {cj, ri};
    order.insert(order.end(), inner.begin(), inner.end());
    order.push_back(ct);
    order.push_back(rt);
    order.insert(order.end(), middle.begin(), middle.end());
    order.push_back(cb);
    stage.reorder(outerOf(order)).unroll(cj).unroll(ri);
    gpu.threads(stage, {ct, rt});
    // Heads and batch entries fused into grid z.
    gpu.blocks(stage, {cb, brb, fuseOuter(stage, bVars, batchRank + 1)});
  };
  acc.compute_root();
  tileAcc(acc, {}, {});
  tileAcc(acc.update(), {r.x}, {r.y});
  scheduleBlock(weights, qk, qkR, LoopLevel(acc, r.y));
  gpu.stage(values, LoopLevel(acc, r.y), threadsX, threadsY);
  if (softmax) {
    // One thread per row sweeps its scores; the block of scores of each
    // step is computed by all threads first. Per CUDA block (its rows).
    // The head's extent is Halide's to infer: with two batch dims (a
    // chunked attention) it could not prove one head per block.
    stats.compute_at(acc, cb)
        .bound_extent(bii, tileY)
        .bound_extent(brb, 1);
    for (size_t d = 0; d < batchRank; ++d)
      stats.bound_extent(bVars[d], 1);
    gpu.shared(stats);
    // The rows dealt over the block's thread grid (tx x ty, more rows in
    // a serial loop), so that the block keeps the threads of the other
    // stages.
    Var sx("sx"), sy("sy"), so("so");
    stats.split(bii, sy, sx, threadsX, TailStrategy::GuardWithIf)
        .split(sy, so, sy, threadsY, TailStrategy::GuardWithIf)
        .reorder(so, sx, sy);
    gpu.threads(stats, {sx, sy});
    Stage update = stats.update();
    update.split(bii, sy, sx, threadsX, TailStrategy::GuardWithIf)
        .split(sy, so, sy, threadsY, TailStrategy::GuardWithIf)
        .reorder(outerOf({sweep.x, so, sx, sy, sweep.y}));
    gpu.threads(update, {sx, sy});
    scheduleBlock(maxScores, maxQk, maxR, LoopLevel(stats, sweep.y));
  }
  lowering.set(attention, out);
  return mlir::success();
}

} // namespace attnc::codegen
