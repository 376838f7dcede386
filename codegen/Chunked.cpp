//===- Chunked.cpp - attn -> Halide: the chunk-parallel form --------------===//
//
// This file lowers the ops attn-chunk produces: chunk (zero padding past n)
// and unchunk are index remaps (chunk, by default, computed in its
// consumers' loops: a stored copy only moves data); chunk_state and state_apply are batched
// products (one GEMM per chunk, see Gemm.h); chunk_scan is a serial scan
// over chunks (exclusive) or a sum (total), vectorised over the state.
//
//===----------------------------------------------------------------------===//
#include "codegen/Gemm.h"
#include "codegen/LoweringImpl.h"

#include <optional>

namespace attnc::codegen {

using namespace Halide;
namespace attn = mlir::attn;

static mlir::LogicalResult lowerChunk(Lowering &lowering, attn::ChunkOp op) {
  const HTensor &x = lowering.get(op.getX());
  int size = static_cast<int>(op.getChunk());
  Expr n = x.extents[x.rank() - 2];
  HTensor t;
  t.func = Func("chunk");
  t.extents.assign(x.extents.begin(), x.extents.end() - 2);
  std::vector<Var> vars = makeVars(t.rank() + 3, "c");
  Index batch(vars.begin(), vars.end() - 3);
  if (lowering.options.chunkStep) {
    // Decoding's step kernel: the block's rows, within one chunk, are the
    // chunk (their consumers see n rows, not C: a step computes its own).
    t.extents.insert(t.extents.end(), {Expr(1), n, x.extents.back()});
    define(t.func, vars,
           x.at(withTail(batch, {vars[vars.size() - 2], vars.back()})));
    lowering.set(op, t); // a view: inlined into its consumers
    return mlir::success();
  }
  t.extents.push_back((n + (size - 1)) / size);
  t.extents.push_back(size);
  t.extents.push_back(x.extents.back());
  Expr pos = vars[vars.size() - 3] * size + vars[vars.size() - 2];
  Expr value = x.at(withTail(batch, {clamp(pos, 0, n - 1), vars.back()}));
  // Rows before n are the likely case: Halide's loop partitioning gives
  // the consumers' loops a steady state without the padding's select (a
  // chunk read in place costs a compare and a blend per row otherwise).
  define(t.func, vars, select(pos < n, likely(value), 0.0f));
  lowering.scheduleElementwise(t, vars);
  lowering.set(op, t);
  return mlir::success();
}

static mlir::LogicalResult lowerUnchunk(Lowering &lowering, attn::UnchunkOp op) {
  // Lowered already: a view of FLASH's attention accumulators, which its
  // output projection computes in its row blocks (lowerTiledAttention).
  if (lowering.has(op.getResult()))
    return mlir::success();
  const HTensor &y = lowering.get(op.getY());
  const HTensor &like = lowering.get(op.getLike());
  int size = static_cast<int>(
      mlir::cast<mlir::RankedTensorType>(op.getY().getType())
          .getDimSize(y.rank() - 2));
  HTensor t;
  t.func = Func("unchunk");
  t.extents = like.extents;
  t.extents.back() = y.extents.back();
  std::vector<Var> vars = makeVars(t.rank(), "u");
  Index batch(vars.begin(), vars.end() - 2);
  Expr pos = vars[vars.size() - 2];
  // The step kernel's rows are its one chunk's (lowerChunk).
  Index at = lowering.options.chunkStep
                 ? withTail(batch, {0, pos, vars.back()})
                 : withTail(batch, {pos / size, pos % size, vars.back()});
  define(t.func, vars, y.at(at));
  lowering.set(op, t); // a view: inlined into its consumers
  return mlir::success();
}

/// Groups of chunks when the chunk states are read only by their total:
/// ceil(chunks / kStateGroups) chunks a group, at most kChunksPerGroup, so
/// kStateGroups groups or more (parallel tasks for a few cores) once there
/// are that many chunks; each group is one product over its chunks' tokens
/// (a task packs its values' column panels over them: 256 KiB for 4 FLASH
/// chunks of 256 and 64 columns).
static constexpr int kStateGroups = 8;
static constexpr int kChunksPerGroup = 4;

/// Whether `op`'s states are read only by the total of a whole-sequence
/// CPU pipeline, which may then sum groups of chunks instead (the groups'
/// states fewer to store and to sum: non-causal FLASH at n = 8192 stores 4
/// MiB of states instead of 16). Its operands are attn.chunk's, which read
/// zeros past the last chunk.
static bool groupsChunks(const Lowering &lowering, attn::ChunkStateOp op) {
  auto scan = mlir::dyn_cast_or_null<attn::ChunkScanOp>(
      attn::getOnlyUser(op.getResult()));
  return scan && !scan.getExclusive() &&
         op.getK().getDefiningOp<attn::ChunkOp>() &&
         op.getV().getDefiningOp<attn::ChunkOp>() && !lowering.streaming() &&
         !lowering.options.chunkStep && !lowering.autoscheduled() &&
         GemmTile::onCpu(lowering.schedule());
}

static mlir::LogicalResult lowerChunkState(Lowering &lowering,
                                           attn::ChunkStateOp op) {
  const HTensor &k = lowering.get(op.getK());
  const HTensor &v = lowering.get(op.getV());
  size_t rank = k.rank();
  HTensor t;
  t.func = Func("chunk_state");
  t.extents.assign(k.extents.begin(), k.extents.end() - 2);
  t.extents.push_back(k.extents.back());
  t.extents.push_back(v.extents.back());
  std::vector<Var> vars = makeVars(t.rank(), "s");
  GemmOperands gemm;
  gemm.rows = k.extents.back();
  gemm.cols = v.extents.back();
  Expr size = k.extents[rank - 2];
  gemm.depth = size;
  gemm.scale = static_cast<float>(op.getScale());
  // states[g][a][e] = sum_t k[g][t][a] * v[g][t][e]. Grouped, the chunk
  // axis holds groups of `per` chunks instead, g's tokens t the group's
  // chunks' one after the other; chunks past the last read zeros (attn.chunk
  // pads them), and the total sums the groups.
  Expr per = 1;
  if (groupsChunks(lowering, op)) {
    Expr chunks = k.extents[rank - 3];
    per = min((chunks + (kStateGroups - 1)) / kStateGroups, kChunksPerGroup);
    t.extents[rank - 3] = (chunks + per - 1) / per;
    gemm.depth = per * size;
  }
  auto tokenOf = [per, size](Index batch, const Expr &tok) {
    if (Internal::is_const_one(per))
      return withTail(batch, {tok});
    Expr group = batch.back();
    batch.back() = group * per + tok / size;
    return withTail(batch, {tok % size});
  };
  gemm.lhs = [&k, tokenOf](const Index &batch, const Expr &a, const Expr &tok) {
    Index at = tokenOf(batch, tok);
    at.push_back(a);
    return k.at(at);
  };
  gemm.rhs = [&v, tokenOf](const Index &batch, const Expr &tok, const Expr &e) {
    Index at = tokenOf(batch, tok);
    at.push_back(e);
    return v.at(at);
  };
  gemm.parallelOverBatch = true;
  gemm.batchedRhs = true;
  defineGemm(lowering, t, vars, gemm);
  lowering.set(op, t);
  return mlir::success();
}

/// The step kernel's chunk of the chunk states `scan` sums: its size and
/// the block's rows (the chunked keys' rows before chunking).
static mlir::LogicalResult stepChunk(Lowering &lowering, attn::ChunkScanOp scan,
                                     Expr &rows, Expr &size) {
  auto state = scan.getStates().getDefiningOp<attn::ChunkStateOp>();
  auto chunk = state ? state.getK().getDefiningOp<attn::ChunkOp>() : nullptr;
  if (!chunk)
    return scan.emitError() << "internal error: decoding's step kernel "
                               "needs the chunk states of chunked keys";
  const HTensor &x = lowering.get(chunk.getX());
  rows = x.extents[x.rank() - 2];
  size = int(chunk.getChunk());
  return mlir::success();
}

/// Whether an exclusive scan may sum its chunk states in their own stage:
/// they are a chunk_state product's result (its output stage, one pure
/// definition that an update can follow), and nothing else reads them.
/// Not under Halide's autoschedulers: Adams2019's schedule of that stage
/// computed wrong sums (FLASH's causal template, relative error 7e18; the
/// cause, Halide's or the formulation's, was not found).
static bool scansInPlace(const Lowering &lowering, attn::ChunkScanOp op,
                         const HTensor &states) {
  return !lowering.autoscheduled() &&
         op.getStates().getDefiningOp<attn::ChunkStateOp>() &&
         mlir::attn::getOnlyUser(op.getStates()) == op.getOperation() &&
         states.materialized && states.func.defined() &&
         !states.func.has_update_definition();
}

static mlir::LogicalResult lowerChunkScan(Lowering &lowering,
                                          attn::ChunkScanOp op) {
  const HTensor &states = lowering.get(op.getStates());
  HTensor t;
  t.func = Func(op.getExclusive() ? "chunk_prefix" : "chunk_total");
  t.extents = states.extents;
  std::vector<Var> vars = makeVars(t.rank(), "p");
  size_t rank = vars.size();
  Index batch(vars.begin(), vars.end() - 3);
  Var a = vars[rank - 2], e = vars[rank - 1];
  Expr chunks = states.extents[rank - 3];
  // One state [batch..., s, e] (the shape without the chunks): a carry's
  // when streamed (Stream.h), or the total's; its vars, and a carry's
  // value at them.
  std::vector<Expr> carryExtents(states.extents.begin(),
                                 states.extents.end() - 3);
  carryExtents.push_back(states.extents[rank - 2]);
  carryExtents.push_back(states.extents.back());
  std::vector<Var> stateVars(vars.begin(), vars.end() - 3); // batch...
  stateVars.push_back(a);
  stateVars.push_back(e);
  Index at = withTail(batch, {a, e});
  auto carried = [&](const Lowering::StreamCarry &c) {
    return HTensor{c.in, c.extents}.at(at);
  };
  // The sum of every chunk's state.
  auto sumOfChunks = [&] {
    RDom g(0, chunks, "g");
    return sum(states.at(withTail(batch, {g, a, e})));
  };
  if (op.getExclusive()) {
    // Chunk 0 of a block sees the earlier blocks' states, the carry, and
    // the carry's next value adds this block's.
    std::optional<Lowering::StreamCarry> carry, partial;
    if (lowering.streaming())
      carry = lowering.addStreamCarry(carryExtents);
    // Decoding: the completed chunks' sum (`carry`) and, apart, the state
    // of the current chunk's rows so far (`partial`), which the step
    // kernel grows and adds to the sum once the chunk is complete.
    if (carry && lowering.options.decode)
      partial = lowering.addStreamCarry(carryExtents);
    if (!carry && scansInPlace(lowering, op, states)) {
      RDom g(1, max(chunks - 1, 0), "g");
      // The chunk states' own stage sums them, chunk by chunk (an
      // inclusive scan), and each chunk's prefix is the sum up to the
      // chunk before it: no second buffer, and no pass writing zeros over
      // it first (3.6 ms of 139 at FLASH's n = 8192).
      Func sums = states.func;
      std::vector<Var> sv = sums.args(); // Halide order: e, a, chunk, batch
      std::vector<Expr> cur(sv.begin(), sv.end()), prev(sv.begin(), sv.end());
      cur[2] = g;
      prev[2] = g - 1;
      sums(cur) = sums(cur) + sums(prev);
      // Each state row `a` scans over the chunks.
      lowering.addScanUpdate(sums, sv[0], sv[1], {sv[0], g, sv[1]});
      Expr chunk = vars[rank - 3];
      define(t.func, vars,
             select(chunk > 0,
                    states.at(withTail(batch, {max(chunk - 1, 0), a, e})),
                    0.0f));
      lowering.set(op, t); // a view: inlined into its consumers
      return mlir::success();
    }
    Expr first = 0.0f;
    if (carry)
      first = carried(*carry);
    if (partial && !lowering.options.chunkStep)
      first = first + carried(*partial); // whole chunks from here on
    define(t.func, vars, first);
    if (lowering.options.chunkStep && partial) {
      // One chunk: its prefix is the carry, read in place (a view).
      Lowering::StreamCarry &sum = *carry, &part = *partial;
      Index only = withTail(batch, {0, a, e});
      Expr rows, size;
      if (mlir::failed(stepChunk(lowering, op, rows, size)))
        return mlir::failure();
      // Complete when the block's rows end the chunk.
      Expr complete = lowering.rowOffset() % size + rows == size;
      Expr grown = carried(part) + states.at(only);
      Lowering::defineCarryNext(
          sum, stateVars, select(complete, carried(sum) + grown, carried(sum)));
      Lowering::defineCarryNext(part, stateVars, select(complete, 0.0f, grown));
      lowering.set(op, t);
      return mlir::success();
    }
    RDom g(1, max(chunks - 1, 0), "g");
    Index cur = withTail(batch, {g, a, e}), prev = withTail(batch, {g - 1, a, e});
    std::vector<Expr> curRev(cur.rbegin(), cur.rend()),
        prevRev(prev.rbegin(), prev.rend());
    t.func(curRev) = t.func(prevRev) + states.at(prev);
    lowering.addInternalStage(t.func, vars);
    // Each state row `a` scans over the chunks.
    lowering.addScanUpdate(t.func, e, a, {e, g, a});
    if (carry) {
      Index last = withTail(batch, {chunks - 1, a, e});
      std::vector<Expr> lastRev(last.rbegin(), last.rend());
      Lowering::defineCarryNext(*carry, stateVars,
                                t.func(lastRev) + states.at(last));
      if (partial) // whole chunks: no partial one after the block
        Lowering::defineCarryNext(*partial, stateVars, 0.0f);
    }
  } else if (lowering.streaming()) {
    // Streamed in two sweeps (Stream.h): the total is a carry, which the
    // first sweep's kernel sums block by block and the second's reads,
    // divided by the sequence's rows (length_of) between the sweeps.
    Lowering::StreamCarry &carry = lowering.addStreamCarry(carryExtents);
    carry.total = true;
    carry.perRow = bool(op.getLengthOf());
    Expr total = carried(carry);
    define(t.func, vars, total);
    Expr next = total;
    if (lowering.options.streamTotals)
      next += sumOfChunks();
    Lowering::defineCarryNext(carry, stateVars, next);
  } else {
    // The total over all chunks, once per batch entry, seen by every chunk.
    Func total("chunk_total_sum");
    Expr value = sumOfChunks();
    if (mlir::Value lengthOf = op.getLengthOf()) {
      const HTensor &like = lowering.get(lengthOf);
      value = value / cast<float>(like.extents[like.rank() - 2]);
    }
    define(total, stateVars, value);
    lowering.addInternalStage(total, stateVars);
    std::vector<Expr> reversed(stateVars.rbegin(), stateVars.rend());
    define(t.func, vars, total(reversed));
  }
  t.materialized = true;
  lowering.set(op, t);
  return mlir::success();
}

static mlir::LogicalResult lowerStateApply(Lowering &lowering,
                                           attn::StateApplyOp op) {
  const HTensor &q = lowering.get(op.getQ());
  const HTensor &states = lowering.get(op.getStates());
  HTensor t;
  t.func = Func("state_apply");
  t.extents = q.extents;
  t.extents.back() = states.extents.back();
  std::vector<Var> vars = makeVars(t.rank(), "a");
  GemmOperands gemm;
  gemm.rows = q.extents[q.rank() - 2];
  gemm.cols = states.extents.back();
  gemm.depth = q.extents.back();
  gemm.lhs = [&q](const Index &batch, const Expr &i, const Expr &r) {
    return q.at(withTail(batch, {i, r}));
  };
  gemm.rhs = [&states](const Index &batch, const Expr &r, const Expr &e) {
    return states.at(withTail(batch, {r, e}));
  };
  gemm.parallelOverBatch = true;
  gemm.batchedRhs = true;
  defineGemm(lowering, t, vars, gemm);
  lowering.set(op, t);
  return mlir::success();
}

mlir::LogicalResult lowerChunked(Lowering &lowering, mlir::Operation *op) {
  if (auto chunk = mlir::dyn_cast<attn::ChunkOp>(op))
    return lowerChunk(lowering, chunk);
  if (auto unchunk = mlir::dyn_cast<attn::UnchunkOp>(op))
    return lowerUnchunk(lowering, unchunk);
  if (auto state = mlir::dyn_cast<attn::ChunkStateOp>(op))
    return lowerChunkState(lowering, state);
  if (auto scan = mlir::dyn_cast<attn::ChunkScanOp>(op))
    return lowerChunkScan(lowering, scan);
  if (auto apply = mlir::dyn_cast<attn::StateApplyOp>(op))
    return lowerStateApply(lowering, apply);
  return op->emitError() << "internal error: '" << op->getName()
                         << "' reached the wrong lowering";
}

} // namespace attnc::codegen
