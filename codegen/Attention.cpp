//===- Attention.cpp - attn -> Halide: quadratic attention ----------------===//
//
// This file lowers attn.attention: per batch entry, head and query row i,
// the scores S[j] = score(q_h[i] . k_h[j], i, j, m) over the keys the mask
// keeps (the score region is translated to a Halide expression), optional
// softmax, and the weighted sum of values. With `compute = tile` it runs in
// blocks of queries x keys as register-tiled GEMMs per block (softmax
// online: one sweep, rescaling as row maxima grow), skipping blocks the
// mask removes; with `compute = row` one
// row of scores at a time. No n x m score matrix is ever stored. Blocked
// attention on CUDA is in AttentionGpu.cpp; the score-region translation
// (arith/math ops, rel_pos_bias, t5_bias) in ScoreRegion.cpp; FLASH's
// fusion with its state term and output projection in AttentionFusion.cpp.
//
//===----------------------------------------------------------------------===//
#include "codegen/AttentionFusion.h"
#include "codegen/Gemm.h"
#include "codegen/LoweringImpl.h"
#include "codegen/ScoreRegion.h"
#include "codegen/Stream.h"

#include <cfloat>

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

Expr blockKept(attn::MaskAttr mask, int rowBlock, int keyBlock,
               const Expr &rowLo, const Expr &keyLo) {
  // Chunk masks skip nothing: with a predicate on the chunks (by division,
  // or key block == query block when blocks hold whole chunks) Halide 14
  // folds the elementwise chunk mask into a wrong condition (tests/e2e
  // LocalBlocks failed), so attn-tile schedules chunk-masked attention row
  // by row instead.
  int size = static_cast<int>(mask.getSize());
  Expr rowHi = rowLo + rowBlock - 1, keyHi = keyLo + keyBlock - 1;
  switch (mask.getKind()) {
  case attn::MaskKind::none: return Internal::const_true();
  case attn::MaskKind::causal: return keyLo <= rowHi;
  case attn::MaskKind::window: return keyLo <= rowHi && keyHi > rowLo - size;
  case attn::MaskKind::band: return keyLo < rowHi + size && keyHi > rowLo - size;
  case attn::MaskKind::chunk:
  case attn::MaskKind::causal_chunk:
    return Internal::const_true();
  }
  return Internal::const_true();
}

/// The keys query row `row` visits in row-wise attention, as an index over
/// `dom`: every key with the mask as a predicate, or for a sliding window
/// only the window's keys j = row - (w - 1) + r, r < w. Iterating the window
/// itself keeps Halide 14's loop partitioning right:
/// with a predicate over all keys, a windowed stage consumed by another
/// windowed stage (two stacked layers, Naive schedule) lost the loop over
/// its rows past the first window (docs/reliability.md).
static Expr keysOf(attn::MaskAttr mask, const Expr &row, const Expr &keys,
                   const std::string &name, RDom &dom) {
  if (mask.getKind() == attn::MaskKind::window) {
    int size = static_cast<int>(mask.getSize());
    dom = RDom(0, size, name);
    Expr j = row - (size - 1) + dom;
    dom.where(j >= 0 && j < keys);
    // The predicate skips keys before the first; the clamp tells bounds
    // inference so (it does not apply predicates to what a stage reads).
    return clamp(j, 0, keys - 1);
  }
  dom = RDom(0, keys, name);
  dom.where(maskKeeps(mask, row, dom));
  return dom;
}

namespace {
/// Where row-wise attention reads its keys and values (MLIR-order index,
/// the key row second-last): the op's k and v, or a streamed block's with
/// the caches before it (lowerCachedAttention).
struct KeySource {
  std::function<Expr(const Index &)> key, value;
  Expr rows;     ///< Key rows to iterate (the mask keeps those it keeps).
  Expr count;    ///< The key count the score region sees.
  Expr rowShift; ///< Query row i is row i + rowShift of the keys.
};
} // namespace

static mlir::LogicalResult lowerRowAttention(Lowering &lowering,
                                             attn::AttentionOp attention,
                                             attn::Strategy strategy,
                                             const KeySource &keys);

int featuresPerHead(attn::AttentionOp attention, mlir::Value value) {
  return static_cast<int>(mlir::cast<mlir::RankedTensorType>(value.getType())
                              .getShape()
                              .back()) /
         static_cast<int>(attention.getHeads());
}

mlir::LogicalResult
defineBlockScores(Lowering &lowering, attn::AttentionOp attention,
                  const std::vector<Var> &sVars, const std::string &name,
                  const KeyAccess &key, Func &qk, RDom &r, Expr &score) {
  const HTensor &q = lowering.get(attention.getQ());
  size_t rank = q.rank();
  Expr rows = q.extents[rank - 2];
  Expr keys = lowering.get(attention.getK()).extents[rank - 2];
  int dk = featuresPerHead(attention, attention.getQ());
  Index batch(sVars.begin(), sVars.begin() + (rank - 2));
  Var h = sVars[rank - 2], i = sVars[rank - 1], j = sVars[rank];
  qk = Func(name + "_qk");
  define(qk, sVars, 0.0f);
  r = RDom(0, dk, name + "_r");
  std::vector<Expr> at(sVars.rbegin(), sVars.rend());
  qk(at) = qk(at) + q.at(withTail(batch, {clamp(i, 0, rows - 1), h * dk + r})) *
                        key(batch, h * dk + r, j);
  ScoreEnv env{callAt(qk, toIndex(sVars)), i, j, keys};
  return lowerScoreRegion(lowering, attention, env, score);
}

/// Blocked attention (compute = tile). With T = split_k, queries and keys
/// are cut into blocks of T; for each batch entry, query block and head (in
/// parallel) and each key block the mask keeps:
///   W    = f(Q_blk K_blk^T) masked          (register-tiled GEMM over dk)
///   acc += W V_blk                          (register-tiled GEMM over T)
/// With softmax, W = exp(score - m_b) (0 where masked) with m_b the row's
/// maximum over the block, l_b = the row sums of W, and the accumulators
/// (acc, l, m) take each block online: m' = max(m, m_b), and acc, l and the
/// block's W V, l_b are scaled by exp(m - m') and exp(m_b - m') before they
/// add. The output is acc / l (0 for a row without kept keys). Two T x T
/// blocks (scores and weights) are the largest score buffers, and key
/// blocks a mask removes entirely (the upper half of causal attention) are
/// skipped: the loop over key blocks carries the mask as a
/// predicate that Halide turns into loop bounds. FLASH's chunk attention may
/// instead be computed in the row blocks of its output projection
/// (rowBlockProduct), which then run in parallel.
static mlir::LogicalResult lowerTiledAttention(Lowering &lowering,
                                               attn::AttentionOp attention,
                                               attn::ScheduleAttr attr) {
  const HTensor &q = lowering.get(attention.getQ());
  const HTensor &k = lowering.get(attention.getK());
  const HTensor &v = lowering.get(attention.getV());
  size_t rank = q.rank();
  size_t batchRank = rank - 2;
  Expr rows = q.extents[rank - 2], keys = k.extents[rank - 2];
  Expr width = v.extents.back();
  int dk = featuresPerHead(attention, attention.getQ()),
      dv = featuresPerHead(attention, attention.getV());
  bool softmax = attention.getNormalize() == attn::Normalize::softmax;
  GemmTile tile = GemmTile::of(attr);
  int block = static_cast<int>(attr.getSplitK());
  Expr keyBlocks = (keys + block - 1) / block;
  attn::MaskAttr mask = attention.getMask();
  auto kept = [&](const Expr &rowBlock, const Expr &keyBlock) {
    return blockKept(mask, block, block, rowBlock * block, keyBlock * block);
  };

  // Keys transposed per batch entry, kT[..., r, j] = k[..., j, r], over
  // whole key blocks (rows past the end repeat the last key; their weights
  // are zero), so that the score tiles load contiguous, unclamped vectors.
  Func kT("keys_t");
  std::vector<Var> tVars = makeVars(rank, "t");
  define(kT, tVars,
         k.at(withTail(Index(tVars.begin(), tVars.end() - 2),
                       {clamp(tVars[rank - 1], 0, keys - 1), tVars[rank - 2]})));
  lowering.addTransposeStage(kT, tVars);
  Index batchExtents(q.extents.begin(), q.extents.begin() + batchRank);
  lowering.addStoredStage(
      kT, withTail(batchExtents, {k.extents.back(), keyBlocks * block}));

  // One block of masked scores of head h, [batch..., h, i, j]: a register
  // tile accumulator of q_h k_h^T (computed per tile of the block) and the
  // score function; `masked` where the mask drops (i, j) or j is past the
  // keys. `name` names its stages.
  std::vector<Var> sVars = makeVars(rank + 1, "s"); // batch..., h, i, j
  Index sBatch(sVars.begin(), sVars.begin() + batchRank);
  Var sh = sVars[rank - 2], si = sVars[rank - 1], sj = sVars[rank];
  auto scoreBlock = [&](const std::string &name, Func &qk, RDom &r,
                        Expr &score) {
    auto key = [&](const Index &batch, const Expr &feature, const Expr &j) {
      return callAt(kT, withTail(batch, {feature, j}));
    };
    return defineBlockScores(lowering, attention, sVars, name, key, qk, r,
                             score);
  };
  Expr keep = maskKeeps(mask, si, sj) && sj < keys;
  // Rows are addressed as (query block rb, row ii in the block).
  std::vector<Var> bVars = makeVars(batchRank + 3, "a"); // batch..., h, rb, ii
  Index bBatch(bVars.begin(), bVars.begin() + batchRank);
  Var bh = bVars[batchRank], brb = bVars[batchRank + 1],
      bii = bVars[batchRank + 2];
  Expr blockRow = brb * block + bii;

  // Per key block kb: output tiles [batch..., h, kb, i, c], and per row
  // [batch..., h, kb, i] (the block's row maxima and row sums).
  std::vector<Var> pVars = makeVars(rank + 2, "p");
  Index pBatch(pVars.begin(), pVars.begin() + batchRank);
  Var ph = pVars[batchRank], pkb = pVars[batchRank + 1],
      pi = pVars[batchRank + 2], pc = pVars[batchRank + 3];
  std::vector<Var> lVars(pVars.begin(), pVars.end() - 1);

  // One block of scores of head h and its weights. Without softmax the
  // weights are f(score), 0 where masked, computed per register tile of
  // the score GEMM. With softmax the block's masked scores (-inf where
  // masked) are stored first, each row's maximum m_b over the block is
  // taken, and the weights are exp(score - m_b): relative to the block's
  // own maximum, so no sweep over the other key blocks comes first (the
  // accumulator below rescales when a later block's maximum is larger).
  Func weights("attention_weights"), scores("attention_scores"), qk;
  Func blockMax("attention_block_max");
  RDom qkR, jm;
  {
    Expr score;
    if (mlir::failed(scoreBlock("attention", qk, qkR, score)))
      return mlir::failure();
    if (softmax) {
      define(scores, sVars, select(keep, score, -INFINITY));
      // Starts at the lowest finite float, so that a row the mask removes
      // from the whole block has a finite maximum (its weights are 0).
      define(blockMax, lVars, -FLT_MAX);
      jm = RDom(0, block, "jm");
      std::vector<Expr> at(lVars.rbegin(), lVars.rend());
      blockMax(at) =
          max(blockMax(at),
              callAt(scores, withTail(pBatch, {ph, pi, pkb * block + jm})));
      Expr stored = callAt(scores, toIndex(sVars));
      score = exp(stored -
                  callAt(blockMax, withTail(sBatch, {sh, sj / block, si})));
    }
    define(weights, sVars, select(keep, score, 0.0f));
  }

  // One output register tile of one key block: the sum over the block's T
  // keys; with softmax the weights' row sums.
  bool wholeColumnTiles = dv % tile.tileX() == 0;
  // How the output tiles read the values. Rows of the values are often a
  // projection's width apart (6 KiB in MHSA, 8.5 KiB in FLASH), which maps
  // a key block's rows of one tile column to a few cache sets: read in
  // place, the block left L1 before the next row tile came back to it. So
  // they are read packed, a key block's rows of one tile column
  // contiguous:
  // - `byHead`: heads of one column tile (MHSA's 64 features) whose key
  //   blocks several query blocks read are packed once, whole, by a stage
  //   [batch..., h, j, c] (the values' size again; examples/mhsa.attn at
  //   n = 8192 took 0.938x the time of reading in place, 0.978x with
  //   per-block panels);
  // - `panel`: otherwise each key block and column tile packs its own
  //   panel [batch..., j, c] inside the attention: a chunk's own keys in
  //   FLASH have one query block, and GAU's 1024-wide values would need an
  //   n x e buffer (+16% peak memory at n = 8192, for 1% less time);
  // - `inPlace`: values of one head and one column tile stored alone are
  //   contiguous already.
  // Columns are clamped (inColumns) when rounded-up tiles reach past the
  // last one.
  enum class ValuesRead { inPlace, panel, byHead };
  const int64_t *staticRows = Internal::as_const_int(rows);
  bool sharedKeyBlocks = !staticRows || *staticRows > block;
  ValuesRead valuesRead = ValuesRead::panel;
  if (dv <= tile.tileX()) {
    bool stored = v.materialized && Internal::can_prove(width == dv);
    valuesRead = stored            ? ValuesRead::inPlace
                 : sharedKeyBlocks ? ValuesRead::byHead
                                   : ValuesRead::panel;
  }
  bool byHead = valuesRead == ValuesRead::byHead;
  // A column of the values (or of FLASH's states, as wide) that rounded-up
  // tiles and vectors may ask for past the last one.
  auto inColumns = [&](const Expr &col) {
    return wholeColumnTiles ? col : clamp(col, 0, width - 1);
  };
  auto valueAt = [&](const Index &batch, const Expr &j, const Expr &col) {
    return v.at(withTail(batch, {clamp(j, 0, keys - 1), inColumns(col)}));
  };
  Func valuesPanel(byHead ? "attention_values_by_head"
                          : "attention_values_panel");
  std::vector<Var> vVars = makeVars(batchRank + (byHead ? 3 : 2), "v");
  Index vBatch(vVars.begin(), vVars.begin() + batchRank);
  Var vj = vVars[vVars.size() - 2], vc = vVars.back();
  if (valuesRead != ValuesRead::inPlace)
    define(valuesPanel, vVars,
           byHead ? valueAt(vBatch, vj, vVars[batchRank] * dv + vc)
                  : valueAt(vBatch, vj, vc));
  auto packedValue = [&](const Expr &key) {
    switch (valuesRead) {
    case ValuesRead::inPlace:
      return valueAt(pBatch, key, ph * dv + pc);
    case ValuesRead::byHead:
      return callAt(valuesPanel, withTail(pBatch, {ph, key, pc}));
    case ValuesRead::panel:
      break;
    }
    return callAt(valuesPanel, withTail(pBatch, {key, ph * dv + pc}));
  };
  Func partial("attention_tile");
  define(partial, pVars, 0.0f);
  RDom jj(0, block, "jj");
  {
    std::vector<Expr> at(pVars.rbegin(), pVars.rend());
    Expr key = pkb * block + jj;
    partial(at) = partial(at) +
                  callAt(weights, withTail(pBatch, {ph, pi, key})) *
                      packedValue(key);
  }
  Func rowSum("attention_row_sum");
  RDom jl(0, block, "jl");
  if (softmax) {
    define(rowSum, lVars, 0.0f);
    std::vector<Expr> at(lVars.rbegin(), lVars.rend());
    rowSum(at) = rowSum(at) +
                 callAt(weights, withTail(pBatch, {ph, pi, pkb * block + jl}));
  }

  // Accumulators of one query block over the key blocks it needs,
  // [batch..., h, rb, ii, c]: the weighted values, and with softmax the
  // row sum and the maximum m so far (the same in every column). Both
  // sums are relative to m, a block's to its own maximum m_b: whichever of
  // the two is lower is scaled by exp(lower - higher) before they add (the
  // online softmax of FlashAttention), so each block's scores are computed
  // once.
  Var ac("ac");
  Func acc("attention_acc");
  RDom kd(0, keyBlocks, "kd");

  // FLASH's linear term, lq . states per chunk, when the sum that adds it
  // to this attention can take it from here (absorbableStateTerm): one
  // register-tiled product per output tile [batch..., h, i, c], the
  // accumulators' initial value. The sum then aliases this attention, and
  // nothing reads the state product's own stage.
  StateTerm absorbed;
  if (!softmax)
    absorbed = absorbableStateTerm(lowering, attention);
  attn::StateApplyOp stateTerm = absorbed.product;
  // Computed in the row blocks of the product that reads it: the
  // accumulators' chunk and query block axes are one, the query block of
  // the sequence gb (a row block's gb are whole, so Halide's bounds of a
  // row block are exact), from which the chunk gb / perChunk and the block
  // in the chunk are derived.
  mlir::Operation *consumer =
      rowBlockProduct(lowering, attention, absorbed, block, rows);
  Var gb("agb");
  Index accBatch = bBatch;
  Expr accBlock = brb, accRow = blockRow;
  std::vector<Var> aVars = bVars;
  // Query blocks per chunk (the chunk's rows are static when there is a
  // consumer).
  int perChunk =
      consumer ? int(*Internal::as_const_int(rows) / block) : 0;
  if (consumer) {
    accBatch.back() = gb / perChunk;
    // Not gb % perChunk: Halide bounds a % of a point by the divisor.
    accBlock = gb - (gb / perChunk) * perChunk;
    accRow = accBlock * block + bii;
    aVars.assign(bVars.begin(), bVars.begin() + (batchRank - 1));
    aVars.insert(aVars.end(), {bh, gb, bii});
  }
  aVars.push_back(ac);
  kd.where(kept(accBlock, kd));
  Func stateTile("attention_state_tile"), statesPanel("attention_states_panel");
  std::vector<Var> nVars = makeVars(rank + 1, "n"); // batch..., h, i, c
  std::vector<Var> kVars = makeVars(batchRank + 2, "k"); // batch..., r, c
  if (stateTerm) {
    const HTensor &lq = lowering.get(stateTerm.getQ());
    const HTensor &states = lowering.get(stateTerm.getStates());
    Index nBatch(nVars.begin(), nVars.begin() + batchRank);
    Var nh = nVars[batchRank], ni = nVars[batchRank + 1],
        nc = nVars[batchRank + 2];
    define(stateTile, nVars, 0.0f);
    RDom rs(0, lq.extents.back(), "rs");
    // The states' columns of one tile column, packed: rows of states are
    // e floats apart (a power of two in FLASH), which maps a column of
    // them to a few cache sets. Its columns are clamped (inColumns).
    define(statesPanel, kVars,
           states.at(withTail(Index(kVars.begin(), kVars.end() - 2),
                              {kVars[batchRank], inColumns(kVars.back())})));
    std::vector<Expr> at(nVars.rbegin(), nVars.rend());
    stateTile(at) = stateTile(at) +
                    lq.at(withTail(nBatch, {clamp(ni, 0, rows - 1), rs})) *
                        callAt(statesPanel,
                               withTail(nBatch, {rs, nh * dv + nc}));
    stateTile.update().reorder(nc, ni, rs);
    lowering.aliasTo(absorbed.sum, absorbed.attended);
    // The state product's own stage is never computed: not a stored
    // buffer (the memory check and the peak estimate count those).
    HTensor unread = lowering.get(stateTerm.getResult());
    unread.materialized = false;
    lowering.set(stateTerm.getResult(), unread);
  }
  {
    std::vector<Expr> at(aVars.rbegin(), aVars.rend());
    Expr add = callAt(partial, withTail(accBatch, {bh, kd, accRow, ac}));
    if (softmax) {
      acc(at) = Tuple(0.0f, 0.0f, -FLT_MAX);
      Expr sums = acc(at)[0], total = acc(at)[1], m = acc(at)[2];
      Expr blockTotal = callAt(rowSum, withTail(accBatch, {bh, kd, accRow}));
      Expr mb = callAt(blockMax, withTail(accBatch, {bh, kd, accRow}));
      // The clamp keeps the argument finite while m is still -FLT_MAX, and
      // in exp's normal range: exp(-87) is 1.6e-38, which leaves nothing of
      // a side that low and makes no subnormal.
      Expr scale = exp(max(-abs(m - mb), -87.0f));
      auto merged = [&](const Expr &sofar, const Expr &fresh) {
        return select(mb > m, sofar * scale + fresh, sofar + fresh * scale);
      };
      acc(at) = Tuple(merged(sums, add), merged(total, blockTotal), max(m, mb));
    } else {
      acc(at) = stateTerm
                    ? callAt(stateTile, withTail(accBatch, {bh, accRow, ac}))
                    : Expr(0.0f);
      acc(at) = acc(at) + add;
    }
  }

  HTensor out;
  out.func = Func("attention");
  out.extents = lowering.extentsLike(
      attention,
      withTail(Index(q.extents.begin(), q.extents.end() - 1), {width}));
  std::vector<Var> oVars = makeVars(rank, "o");
  Index oBatch(oVars.begin(), oVars.end() - 2);
  Var orow = oVars[rank - 2], ocol = oVars[rank - 1];
  {
    Index accAt = withTail(oBatch, {ocol / dv, orow / block, orow % block,
                                    ocol % dv});
    if (consumer) {
      // The chunk and the query block in it are one axis of the
      // accumulators.
      Expr chunk = oBatch.back();
      accAt.assign(oBatch.begin(), oBatch.end() - 1);
      accAt.insert(accAt.end(),
                   {ocol / dv, chunk * perChunk + orow / block,
                    orow % block, ocol % dv});
    }
    std::vector<Expr> at(accAt.rbegin(), accAt.rend());
    Expr value;
    if (softmax) {
      Expr total = acc(at)[1];
      value = select(total > 0.0f, acc(at)[0] / total, 0.0f);
    } else {
      value = acc(at);
    }
    define(out.func, oVars, value);
  }
  out.materialized = consumer == nullptr;
  if (consumer) {
    // The sum the gate reads is a view of the accumulators by sequence
    // row: row pos is row pos % block of query block pos / block (a chunk
    // holds whole query blocks). The product computes them per row block;
    // the attention's own result and the unchunk of it are never computed.
    auto unchunk = mlir::cast<attn::UnchunkOp>(
        absorbed.attended.getDefiningOp());
    HTensor view;
    view.func = Func("attention_rows");
    view.extents = lowering.get(unchunk.getLike()).extents;
    view.extents.back() = width;
    std::vector<Var> vars = makeVars(view.rank(), "ar");
    Expr pos = vars[vars.size() - 2], col = vars.back();
    Index at(vars.begin(), vars.end() - 2);
    at.insert(at.end(), {col / dv, pos / block, pos % block, col % dv});
    std::vector<Expr> reversed(at.rbegin(), at.rend());
    define(view.func, vars, acc(reversed));
    lowering.set(absorbed.attended, view);
    lowering.computeInRowBlocks(consumer, acc, /*tasksOverBatch=*/true);
  }

  // Schedule: batch entries, query blocks and heads in parallel (or the
  // consumer product's row blocks, above).
  if (!consumer) {
    Var qb("qb"), qr("qr"), oh("oh"), oc("oc");
    out.func.compute_root()
        .split(ocol, oh, oc, dv, TailStrategy::GuardWithIf)
        .split(orow, qb, qr, block, TailStrategy::GuardWithIf)
        .reorder(oc, qr, oh, qb);
    // A head's last vector shifts inwards over columns of the same head
    // (written again with the same values). With GuardWithIf and a static
    // sequence length, Halide 14 wrote the first vector of each head twice
    // and never its last columns when a head's width was not a multiple of
    // the vector (softmax, heads of 5 columns in vectors of 4: NaN from the
    // buffer pool; model generator, campaign 8).
    if (dv >= tile.vector)
      out.func.vectorize(oc, tile.vector, TailStrategy::ShiftInwards);
    std::vector<Var> outer(oBatch.size() + 2);
    for (size_t d = 0; d < oBatch.size(); ++d)
      outer[d] = oVars[d];
    outer[oBatch.size()] = qb;
    outer[oBatch.size() + 1] = oh;
    Var task = fuseOuter(out.func, outer, outer.size());
    if (attr.getParallel())
      out.func.parallel(task);
    acc.compute_at(out.func, task);
  }
  // The accumulators in register tiles: the key blocks' sums (the update),
  // and the state term's product (the initial value). Each stage's loops
  // have names of their own: a loop level names a loop by its var.
  struct TileLoops {
    Var co, ci, rt, ri;
  };
  auto accTiles = [&](Stage stage, const TileLoops &l,
                      std::vector<VarOrRVar> outer) {
    std::vector<VarOrRVar> order = {l.ci, l.ri, l.rt, l.co};
    order.insert(order.end(), outer.begin(), outer.end());
    // (Computed in a product's row blocks, the chunk axis is part of gb.)
    for (size_t d = consumer ? batchRank - 1 : batchRank; d-- > 0;)
      order.push_back(bVars[d]);
    stage.split(ac, l.co, l.ci, tile.tileX(), TailStrategy::RoundUp)
        .split(bii, l.rt, l.ri, tile.tileY, TailStrategy::RoundUp)
        .reorder(order)
        .vectorize(l.ci, tile.vector);
  };
  TileLoops keyLoops{Var("co"), Var("ci"), Var("rt"), Var("ri")};
  if (stateTerm) {
    TileLoops stateLoops{Var("sco"), Var("sci"), Var("srt"), Var("sri")};
    accTiles(acc, stateLoops, {consumer ? gb : brb, bh});
    statesPanel.compute_at(acc, stateLoops.co)
        .vectorize(kVars.back(), tile.vector);
    scheduleRegisterTile(stateTile, nVars[batchRank + 2], nVars[batchRank + 1],
                         LoopLevel(acc, stateLoops.rt), tile);
  } else {
    acc.vectorize(ac, tile.vector);
  }
  accTiles(acc.update(), keyLoops, {kd.x, consumer ? gb : brb, bh});
  Var rt = keyLoops.rt;
  if (byHead) {
    lowering.addStoredStage(
        valuesPanel,
        // Rounded-up tiles realise tileX columns per head.
        withTail(batchExtents, {width / dv, keyBlocks * block,
                                Expr(tile.tileX())}));
    // Whole key blocks per task, fused with the batch entries and heads
    // into one parallel loop.
    Var jb("vjb"), jr("vjr");
    valuesPanel.compute_root()
        .split(vj, jb, jr, block, TailStrategy::RoundUp)
        .vectorize(vc, tile.vector);
    std::vector<Var> outer(vVars.begin(), vVars.begin() + batchRank + 1);
    outer.push_back(jb);
    Var task = fuseOuter(valuesPanel, outer, outer.size());
    if (attr.getParallel())
      valuesPanel.parallel(task);
  } else if (valuesRead == ValuesRead::panel) {
    valuesPanel.compute_at(acc, keyLoops.co).vectorize(vc, tile.vector);
  }
  partial.update().reorder(pc, pi, jj.x, pkb);
  scheduleRegisterTile(partial, pc, pi, LoopLevel(acc, rt), tile);

  // A block of scores or weights at `at`: register tiles of its
  // accumulator, j vectorised.
  auto blockTiles = [&](Func blockFunc, Func accumulator, const RDom &r,
                        const LoopLevel &at) {
    Var jo("jo"), ji("ji"), io("io"), ii("ii");
    blockFunc.compute_at(at)
        .tile(sj, si, jo, io, ji, ii, tile.tileX(), tile.tileY,
              TailStrategy::RoundUp)
        .vectorize(ji, tile.vector);
    accumulator.update().reorder(sj, si, r.x);
    scheduleRegisterTile(accumulator, sj, si, LoopLevel(blockFunc, jo), tile);
  };
  LoopLevel perKeyBlock(acc, kd.x);
  if (!softmax) {
    blockTiles(weights, qk, qkR, perKeyBlock);
  } else {
    blockTiles(scores, qk, qkR, perKeyBlock);
    // Whole vectors (the scores' tiles round up too). With Halide's default
    // tail (ShiftInwards), the loop over the last key block read the
    // block's row maximum as a vector with one index in every lane, which
    // Halide 14's flatten_nested_ramps divides by its stride, 0: SIGFPE
    // while compiling causal softmax with a relative-position bias
    // (AttentionTest.SoftmaxWithARelativePositionBiasMatchesTheFp64Reference).
    weights.compute_at(perKeyBlock)
        .vectorize(sj, tile.vector, TailStrategy::RoundUp);
    // Row maxima and row sums of a block, in vector lanes along the row.
    for (auto [rowFunc, r] : {std::pair{blockMax, jm}, std::pair{rowSum, jl}})
      reduceInLanes(rowFunc, r, tile.vector, [&, f = rowFunc]() mutable {
        f.compute_at(perKeyBlock); // a handle: the same Func
        return LoopLevel(f, pi);
      });
  }
  lowering.set(attention, out);
  return mlir::success();
}

/// Key (or value) row j of a block's attention whose earlier rows are
/// cached: row j of `cache` (of `cacheRows` rows) before `first`, else row
/// j - first of the block's `t` (of `rows` rows). With `chunked`, `t` and
/// the index have a chunk axis before the rows that the cache lacks.
static std::function<Expr(const Index &)>
cacheThenBlock(const HTensor &t, const Lowering::StreamCarry &cache,
               Expr cacheRows, Expr first, Expr rows, bool chunked) {
  return [&t, cache, cacheRows, first, rows, chunked](const Index &at) {
    size_t rowAxis = at.size() - 2;
    Expr j = at[rowAxis];
    Index cached = at, fresh = at;
    if (chunked)
      cached.erase(cached.begin() + (rowAxis - 1));
    cached[cached.size() - 2] = clamp(j, 0, cacheRows - 1);
    fresh[rowAxis] = clamp(j - first, 0, rows - 1);
    std::vector<Expr> reversed(cached.rbegin(), cached.rend());
    return select(j < first, cache.in(reversed), t.at(fresh));
  };
}

/// Streamed attention over the whole sequence (decoding a GAU or MHSA
/// layer, CodegenOptions::decode): the keys and values of the rows before
/// the block come from two cache carries [batch..., capacity, width], whose
/// `next` are the block's rows [offset, offset + rows) of the same memory
/// (StreamState writes them in place). Query row i of the block is row
/// offset + i of the sequence, and the score region sees offset + rows keys
/// (GAU divides its scores by that length: the last row of each block is
/// the whole run's over the sequence so far). Row by row: a step's block
/// is a few rows.
static mlir::LogicalResult lowerCachedAttention(Lowering &lowering,
                                                attn::AttentionOp attention) {
  const HTensor &k = lowering.get(attention.getK());
  const HTensor &v = lowering.get(attention.getV());
  size_t rank = k.rank();
  Expr offset = lowering.rowOffset();
  Expr rows = k.extents[rank - 2];
  // Rows [offset, offset + rows) of the cache: the block's.
  auto cacheOf = [&](const HTensor &t) {
    std::vector<Expr> extents = t.extents;
    extents[rank - 2] = Expr(); // the capacity, the caller's
    Lowering::StreamCarry carry = lowering.addStreamCarry(extents,
                                                          /*cache=*/true);
    std::vector<Var> vars = makeVars(rank, "kv");
    Index row = toIndex(vars);
    row[rank - 2] = vars[rank - 2] - offset;
    Lowering::defineCarryNext(carry, vars, t.at(row));
    return carry;
  };
  Lowering::StreamCarry keyCache = cacheOf(k), valueCache = cacheOf(v);
  Expr capacity = keyCache.in.dim(1).extent();
  // Row j of the sequence: the cache's before the block, else the block's.
  auto rowOf = [&](const HTensor &t, const Lowering::StreamCarry &cache) {
    return cacheThenBlock(t, cache, capacity, offset, rows, /*chunked=*/false);
  };
  KeySource keys{rowOf(k, keyCache), rowOf(v, valueCache), capacity,
                 offset + rows, offset};
  return lowerRowAttention(lowering, attention, attn::Strategy::rows, keys);
}

/// Decoding attention within chunks (CodegenOptions::decode): the keys
/// and values of the current chunk also go into two chunk caches
/// [batch..., C, width] (cache carries of C rows, written in place). The
/// block kernel runs whole chunks as usual and writes its last chunk's
/// rows. The step kernel (chunkStep) runs a block within one chunk: its
/// rows are rows [j0, j0 + rows) of the chunk, j0 = offset % C, and it
/// reads the chunk's rows before j0 from the caches and writes its own;
/// row by row, as lowerCachedAttention. Sets `stepped` when it lowered
/// the attention (the step kernel).
static mlir::LogicalResult lowerChunkCachedAttention(
    Lowering &lowering, attn::AttentionOp attention, bool &stepped) {
  const HTensor &k = lowering.get(attention.getK());
  const HTensor &v = lowering.get(attention.getV());
  size_t rank = k.rank(); // batch..., chunks, C (or the step's rows), width
  Expr size = int(attention.getK().getDefiningOp<attn::ChunkOp>().getChunk());
  bool step = lowering.options.chunkStep;
  Expr j0 = lowering.rowOffset() % size;
  Expr rows = lowering.get(
      attention.getK().getDefiningOp<attn::ChunkOp>().getX()).extents[rank - 3];
  // Rows of chunk `chunk` of `t` (its chunk axis dropped from `at`).
  auto chunkRow = [rank](const HTensor &t, Index at, const Expr &chunk,
                         const Expr &row) {
    at.insert(at.begin() + (rank - 3), chunk);
    at[rank - 2] = row;
    return t.at(at);
  };
  auto cacheOf = [&](const HTensor &t) {
    std::vector<Expr> extents = t.extents;
    extents.erase(extents.begin() + (rank - 3));
    extents[rank - 3] = size; // the chunk's rows
    Lowering::StreamCarry carry =
        lowering.addStreamCarry(extents, /*cache=*/true);
    std::vector<Var> vars = makeVars(rank - 1, "kc");
    Index at = toIndex(vars);
    Expr row = vars[rank - 3];
    Lowering::defineCarryNext(
        carry, vars,
        step ? chunkRow(t, at, 0, clamp(row - j0, 0, rows - 1))
             : chunkRow(t, at, t.extents[rank - 3] - 1, row));
    return carry;
  };
  Lowering::StreamCarry keyCache = cacheOf(k), valueCache = cacheOf(v);
  stepped = step;
  if (!step)
    return mlir::success();
  // Row j of the chunk: the cache's before j0, else the block's.
  auto rowOf = [&](const HTensor &t, const Lowering::StreamCarry &cache) {
    return cacheThenBlock(t, cache, size, j0, rows, /*chunked=*/true);
  };
  // All C rows (an RDom's bounds cannot read the offset): the causal mask
  // keeps those up to the query's, which Halide makes the loop's bounds.
  KeySource keys{rowOf(k, keyCache), rowOf(v, valueCache), size, size, j0};
  return lowerRowAttention(lowering, attention, attn::Strategy::rows, keys);
}

mlir::LogicalResult lowerAttention(Lowering &lowering, mlir::Operation *op) {
  auto attention = mlir::cast<attn::AttentionOp>(op);
  for (mlir::Value operand :
       {attention.getQ(), attention.getK(), attention.getV()}) {
    auto type = mlir::cast<mlir::RankedTensorType>(operand.getType());
    if (type.isDynamicDim(type.getRank() - 1))
      return attention.emitError()
             << "code generation needs the feature dims of attention's q, k "
                "and v to be static, but one is " << operand.getType();
  }
  // Streamed over the whole sequence: with the key/value caches.
  if (lowering.streaming() && !attendsWithinChunks(attention))
    return lowerCachedAttention(lowering, attention);
  // Decoded within chunks: with the chunk caches.
  if (lowering.streaming() && lowering.options.decode) {
    bool stepped = false;
    if (mlir::failed(lowerChunkCachedAttention(lowering, attention, stepped)))
      return mlir::failure();
    if (stepped)
      return mlir::success();
  }
  // The schedule's algorithm: blocked (CPU register tiles, or GPU blocks
  // staged in shared memory); rows or materialized scores below; naive.
  attn::ScheduleAttr attr = lowering.schedule();
  if (attr.getStrategy() == attn::Strategy::blocked)
    return attr.isOnGpu() ? lowerGpuTiledAttention(lowering, attention, attr)
                          : lowerTiledAttention(lowering, attention, attr);
  const HTensor &k = lowering.get(attention.getK());
  const HTensor &v = lowering.get(attention.getV());
  Expr keyLength = k.extents[k.rank() - 2];
  KeySource keys{[&](const Index &at) { return k.at(at); },
                 [&](const Index &at) { return v.at(at); },
                 keyLength, keyLength, Expr(0)};
  return lowerRowAttention(lowering, attention, attr.getStrategy(), keys);
}

static mlir::LogicalResult lowerRowAttention(Lowering &lowering,
                                             attn::AttentionOp attention,
                                             attn::Strategy strategy,
                                             const KeySource &keys) {
  const HTensor &q = lowering.get(attention.getQ());
  const HTensor &v = lowering.get(attention.getV());
  int dk = featuresPerHead(attention, attention.getQ());
  int dv = featuresPerHead(attention, attention.getV());
  size_t batchRank = q.rank() - 2;
  Expr keyLength = keys.rows;

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
  Expr qk = sum(q.at(qIndex) * keys.key(kIndex));
  ScoreEnv env{qk, i + keys.rowShift, j, keys.count};
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
  RDom key;
  Expr keyAt =
      keysOf(attention.getMask(), oi + keys.rowShift, keyLength, "key", key);
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
  vIndex.push_back(keyAt);
  vIndex.push_back(c);
  Expr head = c / dv;
  Expr value;
  std::vector<Func> rowFuncs = {scores};
  if (attention.getNormalize() == attn::Normalize::softmax) {
    // Row max and sum over the kept keys; a row with no kept key gives 0.
    std::vector<Var> rVars(sVars.begin(), sVars.end() - 1); // batch, h, i
    Index rIndex(rVars.begin(), rVars.end());
    RDom kept;
    Expr keptAt = keysOf(attention.getMask(), i + keys.rowShift, keyLength,
                         "kept", kept);
    Func rowMax("row_max"), weights("softmax_weights"), rowSum("row_sum");
    Index sAtKept = rIndex;
    sAtKept.push_back(keptAt);
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
                   sum(scoreAt(weights, head, oi, keyAt) * keys.value(vIndex)) /
                       total,
                   0.0f);
    rowFuncs = {scores, rowMax, weights, rowSum};
    if (!lowering.rowScratch()) {
      // GPU: row statistics at root, scores and weights recomputed inline.
      lowering.addInternalStage(rowMax, rVars, /*perRow=*/true);
      lowering.addInternalStage(rowSum, rVars, /*perRow=*/true);
      rowFuncs.clear();
    }
  } else {
    value = sum(scoreAt(scores, head, oi, keyAt) * keys.value(vIndex));
  }
  define(out.func, oVars, value);
  LoopLevel row = lowering.scheduleElementwise(out, oVars, /*fuseRows=*/false);
  // CPU: scores and row statistics live for one query row at a time
  // (`rows`), or whole score matrices are computed first (`materialized`).
  if (lowering.rowScratch() && out.materialized && !lowering.autoscheduled())
    for (Func &f : rowFuncs) {
      if (strategy == attn::Strategy::materialized)
        f.compute_root();
      else
        f.compute_at(row);
    }
  lowering.set(attention, out);
  return mlir::success();
}

} // namespace attnc::codegen
