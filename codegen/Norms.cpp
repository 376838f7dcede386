//===- Norms.cpp - attn -> Halide: normalisations and RoPE ----------------===//
//
// This file lowers layer_norm (two-pass mean and biased variance),
// scale_norm, rms_norm (their row statistics summed in vector lanes on
// CPUs), rope and token_shift, and builds the RoPE tables: the angle
// p * base^(-2i/r) reaches thousands of radians at long sequences, where
// float32 would lose the phase, so it is formed and reduced modulo 2 pi in
// double precision; only the sine and cosine of the reduced angle are
// evaluated in float32. One table serves every rope op with the same base
// and width. On CPUs the tables are memoized (Halide's runtime cache): a
// layer kernel that runs once per layer, or a model run again at the same
// length, computes them once.
//
//===----------------------------------------------------------------------===//
#include "codegen/Gemm.h"
#include "codegen/LoweringImpl.h"

#include <cctype>
#include <cmath>
#include <sstream>

namespace attnc::codegen {

using namespace Halide;
namespace attn = mlir::attn;

/// At most this many unrolled loops over the halves of rope's features
/// (two rotated halves and the features passed through).
static constexpr int kMaxRopePeriods = 4;
/// CPU RoPE tables take cos and sin at the multiples of kRopeStep positions
/// and at the first kRopeStep positions only (Lowering::ropeTables).
static constexpr int kRopeStep = 64;

namespace {
/// Per-row reductions over the last axis of `in`.
struct RowStats {
  std::vector<Var> rowVars; ///< MLIR order, all axes but the last.
  Index rowIndex;
  Expr width;
};

RowStats rowStats(const HTensor &in) {
  RowStats stats;
  stats.rowVars = makeVars(in.rank() - 1, "r");
  stats.rowIndex = toIndex(stats.rowVars);
  stats.width = in.extents.back();
  return stats;
}

Expr atRow(const HTensor &in, const Index &row, const Expr &c) {
  Index index = row;
  index.push_back(c);
  return in.at(index);
}

} // namespace

static Expr callRow(const Func &f, const std::vector<Var> &rowVars) {
  std::vector<Expr> reversed(rowVars.rbegin(), rowVars.rend());
  return f(reversed);
}

/// The product whose row blocks compute the row statistics of `norm`, or
/// null: the only reader of the norm, inlined in its kernel, with the norm
/// as its left operand, where computesInRowBlocks, and row sums in vector
/// lanes. Each row block then sums the rows it stages while they are in
/// cache, on its own task, instead of one more sweep over the input.
static mlir::Operation *statsInRowBlocksOf(const Lowering &lowering,
                                           mlir::Operation *norm) {
  attn::ScheduleAttr own = attn::ScheduleAttr::lookup(norm);
  if (!lowering.vectorRowSums() || !own ||
      own.getCompute() != attn::ComputeAt::inlined)
    return nullptr;
  mlir::Value result = norm->getResult(0);
  mlir::Operation *user = attn::getOnlyUser(result);
  if (!user || user->getOperand(0) != result ||
      user->getBlock() != norm->getBlock() ||
      !computesInRowBlocks(lowering, user))
    return nullptr;
  return user;
}

/// The mean over the last axis of `term(c)`, per row: an internal stage
/// `name` that holds the row sums (in vector lanes on a CPU), divided by
/// the width where it is read; computed in the row blocks of `product`
/// when there is one (statsInRowBlocksOf).
static Expr rowMean(Lowering &lowering, const std::string &name,
                    const RowStats &s,
                    const std::function<Expr(const Expr &)> &term,
                    mlir::Operation *product) {
  Func total(name);
  RDom r(0, s.width, name + "_r");
  if (lowering.vectorRowSums()) {
    define(total, s.rowVars, 0.0f);
    Expr at = callRow(total, s.rowVars);
    std::vector<Expr> row(s.rowVars.rbegin(), s.rowVars.rend());
    total(row) = at + term(r);
    lowering.addRowSum(total, s.rowVars, r, product);
  } else {
    define(total, s.rowVars, sum(term(r)));
    lowering.addInternalStage(total, s.rowVars, /*perRow=*/true);
  }
  return callRow(total, s.rowVars) / cast<float>(s.width);
}

/// `mean(x^2)` over the last axis, per row.
static Expr meanSquare(Lowering &lowering, const HTensor &in, const RowStats &s,
                       mlir::Operation *product) {
  return rowMean(
      lowering, "mean_square", s,
      [&](const Expr &c) {
        Expr x = atRow(in, s.rowIndex, c);
        return x * x;
      },
      product);
}

std::pair<Func, Func> Lowering::ropeTables(double base, int half) {
  auto key = std::make_pair(base, half);
  auto it = ropeCache.find(key);
  if (it != ropeCache.end())
    return it->second;
  Var i("i"), p("p");
  Func invFreq("rope_inv_freq");
  invFreq(i) = pow(Expr(base), -cast<double>(i) / Expr(double(half)));
  if (!autoscheduled())
    invFreq.compute_root();
  // position * frequency i, reduced to [0, 2 pi) in double precision.
  auto angle = [&](const Expr &position) {
    Expr theta = cast<double>(position) * invFreq(i);
    const double twoPi = 2.0 * M_PI;
    return theta - Expr(twoPi) * floor(theta / Expr(twoPi));
  };
  // Memoized, a table is looked up by the address of its name in the loaded
  // code (not the name), an instance number of the compiling process, its
  // tags and its bounds (the runtime also compares the buffer's shape). A
  // kernel loaded where an unloaded one was, compiled by another process,
  // found that one's tables (rope's output 6.5 off; tests/python/
  // test_numerics.py, test_rope_tables_*). The tags are what the values
  // depend on: the kernel (its source's hash), which table, base and half.
  // Not the target: the same source compiled for another target computes
  // the same formulas, at most an ulp of a double apart (FMA contraction).
  // A tagged value's own inputs are not searched for parameters: a table
  // that came to depend on a runtime parameter would need it as a tag.
  auto tagged = [&](Expr value, int table) {
    return memoize_tag(std::move(value), Expr(sourceHash), Expr(table),
                       Expr(base), Expr(half));
  };
  // Their names carry base and half too (one table per pair and kernel).
  std::ostringstream tag;
  tag.precision(17);
  tag << "_b" << base << "_h" << half;
  std::string suffix = tag.str();
  for (char &c : suffix)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  // Streamed, each block's positions are new: a memoized table would only
  // fill the runtime's cache, whose evictions then cost more than the table
  // (a decoding step at context 16k took 3x one at 1k).
  bool cpuTables = !options.gpu && !autoscheduled();
  bool memoized = cpuTables && !streaming();
  Func cosTable(memoized ? "rope_cos" + suffix : "rope_cos"),
      sinTable(memoized ? "rope_sin" + suffix : "rope_sin");
  if (cpuTables) {
    // Halide's cos and sin are libm calls per lane on a CPU (4.6 ms for a
    // streamed block of 8192 rows and 64 frequencies, in each kernel of a
    // two-sweep model). They are taken only at the positions a that are
    // multiples of kRopeStep and at b = 0 .. kRopeStep - 1, in double
    // precision, and an entry is their angle sum, cos((a + b) f) = cos(af)
    // cos(bf) - sin(af) sin(bf), rounded to float once: whole-sequence,
    // streamed and decoding kernels compute the same tables.
    Var a("a");
    Func coarseCos("rope_cos_coarse"), coarseSin("rope_sin_coarse"),
        fineCos("rope_cos_fine" + suffix), fineSin("rope_sin_fine" + suffix);
    coarseCos(i, a) = cos(angle(a * kRopeStep));
    coarseSin(i, a) = sin(angle(a * kRopeStep));
    fineCos(i, a) = tagged(cos(angle(a)), 0);
    fineSin(i, a) = tagged(sin(angle(a)), 1);
    Expr step = p / kRopeStep, within = p % kRopeStep;
    Expr cosValue = cast<float>(coarseCos(i, step) * fineCos(i, within) -
                                coarseSin(i, step) * fineSin(i, within));
    Expr sinValue = cast<float>(coarseSin(i, step) * fineCos(i, within) +
                                coarseCos(i, step) * fineSin(i, within));
    cosTable(i, p) = memoized ? tagged(cosValue, 2) : cosValue;
    sinTable(i, p) = memoized ? tagged(sinValue, 3) : sinValue;
    for (Func *table : {&coarseCos, &coarseSin, &fineCos, &fineSin})
      addInternalStage(*table, {a, i}, /*perRow=*/false, TailStrategy::RoundUp,
                       /*rowBlocks=*/true);
    // The fine tables are the same in every kernel call (Halide bounds
    // p % kRopeStep by 0 .. kRopeStep - 1 even for a decoding step's one
    // row, whose step took 1.9x the time without them memoized).
    fineCos.memoize();
    fineSin.memoize();
  } else {
    Expr reduced = cast<float>(angle(p));
    cosTable(i, p) = cos(reduced);
    sinTable(i, p) = sin(reduced);
  }
  // Whole vectors of columns: a table is a function of its indices only, so
  // the columns past `half` are harmless. Halide 14 mis-compiled the guarded
  // tail of a table of one vector and one column (campaign seed 11575:
  // both vectors of the loop stored the first one's columns; RopeTest).
  for (Func *table : {&cosTable, &sinTable}) {
    addInternalStage(*table, {p, i}, /*perRow=*/false, TailStrategy::RoundUp,
                     /*rowBlocks=*/true);
    if (memoized)
      table->memoize();
  }
  return ropeCache[key] = {cosTable, sinTable};
}

namespace {
/// RoPEs of `z * gamma[i] + beta[i]` for consecutive rows i of the same
/// gamma and beta, with the same rotation and schedule: the heads of
/// FLASH's and GAU's z (queries and keys). They are one stage of
/// [heads, rows..., s] (one pass over z, one loop nest to compile), and each
/// rope's result is its head's slice.
struct RopeHeads {
  mlir::Value z, gamma, beta;
  int64_t firstRow = 0;
  llvm::SmallVector<attn::RopeOp> ropes; ///< By row, from firstRow.
};
} // namespace

/// The head `rope` computes: its input's scale_offset of z, read by it alone
/// and computed where it is read (not a stage of its own, which the heads'
/// stage would bypass), with rows of gamma and beta by the same index.
struct RopeHead {
  mlir::Value z, gamma, beta;
  int64_t row = 0;
};
static std::optional<RopeHead> ropeHead(attn::RopeOp rope) {
  auto so = rope.getX().getDefiningOp<attn::ScaleOffsetOp>();
  if (!so || !so->hasOneUse())
    return std::nullopt;
  attn::ScheduleAttr soSchedule = attn::ScheduleAttr::lookup(so);
  if (!soSchedule || soSchedule.getCompute() != attn::ComputeAt::inlined)
    return std::nullopt;
  auto gamma = so.getGamma().getDefiningOp<attn::RowOp>();
  auto beta = so.getBeta().getDefiningOp<attn::RowOp>();
  if (!gamma || !beta || gamma.getIndex() != beta.getIndex())
    return std::nullopt;
  return RopeHead{so.getX(), gamma.getP(), beta.getP(),
                  int64_t(gamma.getIndex())};
}

/// The position in `body` of the first top-level op that reads `value`,
/// through kernel results and the ops computed where they are read (inlined,
/// or views without a schedule).
static size_t
firstReader(mlir::Value value, mlir::Block &body,
            const llvm::DenseMap<mlir::Operation *, size_t> &position) {
  size_t first = position.size();
  llvm::SmallVector<mlir::Value> work = {value};
  while (!work.empty()) {
    mlir::Value next = work.pop_back_val();
    for (mlir::OpOperand &use : next.getUses()) {
      mlir::Operation *user = use.getOwner();
      if (mlir::isa<attn::KernelYieldOp>(user)) {
        work.push_back(user->getParentOp()->getResult(use.getOperandNumber()));
        continue;
      }
      attn::ScheduleAttr attr = attn::ScheduleAttr::lookup(user);
      if (!attr || attr.getCompute() == attn::ComputeAt::inlined) {
        llvm::append_range(work, user->getResults());
        continue;
      }
      mlir::Operation *top = user;
      while (top->getBlock() != &body)
        top = top->getParentOp();
      first = std::min(first, position.lookup(top));
    }
  }
  return first;
}

/// Whether a top-level op strictly between positions `from` and `to` of
/// `order` stores a result (computes a stage at root).
static bool storesBetween(const std::vector<mlir::Operation *> &order,
                          size_t from, size_t to) {
  for (size_t i = from + 1; i < to && i < order.size(); ++i) {
    mlir::WalkResult stores = order[i]->walk([](mlir::Operation *op) {
      attn::ScheduleAttr attr = attn::ScheduleAttr::lookup(op);
      return attr && attr.getCompute() != attn::ComputeAt::inlined
                 ? mlir::WalkResult::interrupt()
                 : mlir::WalkResult::advance();
    });
    if (stores.wasInterrupted())
      return true;
  }
  return false;
}

/// The heads `rope` is one of, when there are two or more and every value
/// they read is lowered already (rope is the first of them in block order).
static std::optional<RopeHeads> ropeHeads(const Lowering &lowering,
                                          attn::RopeOp rope) {
  std::optional<RopeHead> head = ropeHead(rope);
  if (!head)
    return std::nullopt;
  RopeHeads heads;
  heads.z = head->z;
  heads.gamma = head->gamma;
  heads.beta = head->beta;
  if (!lowering.has(heads.z) || !lowering.has(heads.gamma) ||
      !lowering.has(heads.beta))
    return std::nullopt;
  attn::ScheduleAttr schedule = attn::ScheduleAttr::lookup(rope);
  if (!schedule || schedule.getCompute() == attn::ComputeAt::inlined)
    return std::nullopt; // each head computed where it is read
  std::map<int64_t, attn::RopeOp> byRow;
  for (mlir::Operation *user : heads.z.getUsers()) {
    auto other = mlir::dyn_cast<attn::ScaleOffsetOp>(user);
    if (!other || !other->hasOneUse())
      continue;
    auto sibling = mlir::dyn_cast<attn::RopeOp>(*other->getUsers().begin());
    if (!sibling || sibling.getType() != rope.getType() ||
        sibling.getMode() != rope.getMode() ||
        sibling.getRotaryDims() != rope.getRotaryDims() ||
        sibling.getBase() != rope.getBase() ||
        attn::ScheduleAttr::lookup(sibling) != schedule)
      continue;
    std::optional<RopeHead> siblingHead = ropeHead(sibling);
    if (!siblingHead || siblingHead->z != heads.z ||
        siblingHead->gamma != heads.gamma || siblingHead->beta != heads.beta)
      continue;
    if (!byRow.emplace(siblingHead->row, sibling).second)
      return std::nullopt; // two heads of one row: left apart
  }
  // Heads whose first readers have a stored stage between them stay in
  // separate stages: one stage would keep the later heads alive beside it
  // (FLASH's linear keys, read by the chunk states before the chunk scan,
  // and the other three, read after it).
  mlir::Block &body =
      rope->getParentOfType<mlir::func::FuncOp>().getBody().front();
  std::vector<mlir::Operation *> order;
  llvm::DenseMap<mlir::Operation *, size_t> position;
  for (mlir::Operation &op : body) {
    position[&op] = order.size();
    order.push_back(&op);
  }
  std::vector<std::pair<size_t, int64_t>> readAt; // first reader, row
  for (auto [row, sibling] : byRow)
    readAt.push_back({firstReader(sibling.getResult(), body, position), row});
  std::sort(readAt.begin(), readAt.end());
  int64_t ownRow = head->row;
  std::vector<int64_t> group;
  for (size_t i = 0; i < readAt.size(); ++i) {
    if (i > 0 && storesBetween(order, readAt[i - 1].first, readAt[i].first)) {
      if (llvm::is_contained(group, ownRow))
        break;
      group.clear();
    }
    group.push_back(readAt[i].second);
  }
  if (group.size() < 2)
    return std::nullopt;
  std::sort(group.begin(), group.end());
  heads.firstRow = group.front();
  for (auto [index, row] : llvm::enumerate(group)) {
    if (row != heads.firstRow + int64_t(index))
      return std::nullopt;
    heads.ropes.push_back(byRow.at(row));
  }
  return heads;
}

static mlir::LogicalResult lowerRope(Lowering &lowering, attn::RopeOp rope) {
  // Lowered already: a head of the stage its first sibling computed.
  if (lowering.has(rope.getResult()))
    return mlir::success();
  std::optional<RopeHeads> heads = ropeHeads(lowering, rope);
  const HTensor &in = lowering.get(heads ? heads->z : rope.getX());
  int half = static_cast<int>(rope.getRotaryDims() / 2);
  int width = static_cast<int>(
      mlir::cast<mlir::RankedTensorType>(rope.getType()).getShape().back());
  auto [cosTable, sinTable] = lowering.ropeTables(rope.getBase(), half);
  HTensor t;
  t.func = Func("rope");
  t.extents = in.extents;
  if (heads)
    t.extents.insert(t.extents.begin(), Expr(int(heads->ropes.size())));
  std::vector<Var> vars = makeVars(t.rank(), "e");
  // The input's index: the vars after the head's.
  Index index(vars.begin() + (heads ? 1 : 0), vars.end());
  // Positions: the row, after the block's first row when streamed.
  Expr c = vars.back(), pos = vars[vars.size() - 2];
  if (lowering.streaming())
    pos += lowering.rowOffset();
  auto x = [&](Expr feature) {
    Index shifted = index;
    shifted.back() = clamp(feature, 0, width - 1);
    Expr value = in.at(shifted);
    if (!heads)
      return value;
    Expr row = vars.front() + int(heads->firstRow);
    return value * lowering.get(heads->gamma).at({row, shifted.back()}) +
           lowering.get(heads->beta).at({row, shifted.back()});
  };
  Expr value;
  if (rope.getMode() == attn::RopeMode::half) {
    Expr pair = clamp(select(c < half, c, c - half), 0, half - 1);
    Expr cs = cosTable(pair, pos), sn = sinTable(pair, pos);
    value = select(c < half, x(c) * cs - x(c + half) * sn,
                   c < 2 * half, x(c) * cs + x(c - half) * sn, x(c));
  } else {
    Expr pair = clamp(c / 2, 0, half - 1);
    Expr cs = cosTable(pair, pos), sn = sinTable(pair, pos);
    value = select(c >= 2 * half, x(c),
                   c % 2 == 0, x(c) * cs - x(c + 1) * sn,
                   x(c) * cs + x(c - 1) * sn);
  }
  define(t.func, vars, value);
  // Half mode on vectors that fit a half: loops over each half of the
  // features apart, in which the selects above are decided at compile
  // time and the partner feature is a dense vector load, not a gather.
  attn::ScheduleAttr attr = lowering.schedule();
  int vector = attr ? static_cast<int>(attr.getVector()) : 1;
  int period = 0;
  if (rope.getMode() == attn::RopeMode::half && half % vector == 0 &&
      (width + half - 1) / half <= kMaxRopePeriods)
    period = half;
  lowering.scheduleElementwise(t, vars, /*fuseRows=*/true, period,
                               /*leadingHeads=*/heads.has_value());
  if (!heads) {
    lowering.set(rope, t);
    return mlir::success();
  }
  // (set() may move the values `in` refers to.)
  std::vector<Expr> headExtents = in.extents;
  std::vector<Var> headVars(vars.begin() + 1, vars.end());
  for (auto [h, sibling] : llvm::enumerate(heads->ropes)) {
    assert((sibling == rope || !lowering.has(sibling.getResult())) &&
           "a head's rope is lowered after the first of its heads");
    HTensor slice;
    slice.func = Func("rope_head");
    slice.extents = headExtents;
    slice.materialized = t.materialized;
    slice.storedIn = t.func.name();
    slice.storedExtents = t.extents;
    Index at = toIndex(headVars);
    at.insert(at.begin(), Expr(int(h)));
    define(slice.func, headVars, t.at(at));
    lowering.set(sibling, slice);
  }
  return mlir::success();
}

mlir::LogicalResult lowerNorms(Lowering &lowering, mlir::Operation *op) {
  if (mlir::isa<attn::LayerNormOp, attn::RmsNormOp, attn::ScaleNormOp>(op)) {
    const HTensor &in = lowering.get(op->getOperand(0));
    RowStats s = rowStats(in);
    mlir::Operation *product = statsInRowBlocksOf(lowering, op);
    HTensor t;
    t.func = Func(op->getName().stripDialect().str());
    t.extents = in.extents;
    std::vector<Var> vars = s.rowVars;
    vars.push_back(Var("c"));
    Expr c = vars.back();
    Expr x = in.at(toIndex(vars));
    Expr value;
    if (auto ln = mlir::dyn_cast<attn::LayerNormOp>(op)) {
      // Two passes: the mean, then the mean of the squared deviations.
      Expr mean = rowMean(
          lowering, "ln_mean", s,
          [&](const Expr &c) { return atRow(in, s.rowIndex, c); }, product);
      Expr var = rowMean(
          lowering, "ln_var", s,
          [&](const Expr &c) {
            Expr centred = atRow(in, s.rowIndex, c) - mean;
            return centred * centred;
          },
          product);
      float eps = static_cast<float>(ln.getEps());
      value = (x - mean) * (1.0f / sqrt(var + eps));
      if (ln.getWeight())
        value = value * lowering.get(ln.getWeight()).at({c});
      if (ln.getBias())
        value = value + lowering.get(ln.getBias()).at({c});
    } else if (auto rms = mlir::dyn_cast<attn::RmsNormOp>(op)) {
      Expr ms = meanSquare(lowering, in, s, product);
      value = x * (1.0f / sqrt(ms + static_cast<float>(rms.getEps())));
      if (rms.getWeight())
        value = value * lowering.get(rms.getWeight()).at({c});
    } else {
      auto sn = mlir::cast<attn::ScaleNormOp>(op);
      Expr ms = meanSquare(lowering, in, s, product);
      float eps = static_cast<float>(sn.getEps());
      Expr inverse = sn.getClamp() ? 1.0f / max(sqrt(ms), eps)
                                   : 1.0f / sqrt(ms + eps);
      value = x * inverse * lowering.get(sn.getAlpha()).at({Expr(0)});
    }
    define(t.func, vars, value);
    lowering.scheduleElementwise(t, vars);
    lowering.set(op->getResult(0), t);
    return mlir::success();
  }
  if (auto rope = mlir::dyn_cast<attn::RopeOp>(op))
    return lowerRope(lowering, rope);
  if (auto sinusoidal = mlir::dyn_cast<attn::SinusoidalOp>(op)) {
    const HTensor &in = lowering.get(sinusoidal.getX());
    int width = static_cast<int>(
        mlir::cast<mlir::RankedTensorType>(sinusoidal.getType())
            .getShape()
            .back());
    int half = width / 2;
    // RoPE's tables: p * base^(-i / half) = p * base^(-2i / d).
    auto [cosTable, sinTable] =
        lowering.ropeTables(sinusoidal.getBase(), half);
    HTensor t;
    t.func = Func("sinusoidal");
    t.extents = in.extents;
    std::vector<Var> vars = makeVars(t.rank(), "q");
    Expr c = vars.back(), pos = vars[vars.size() - 2];
    if (lowering.streaming())
      pos += lowering.rowOffset();
    define(t.func, vars,
           select(c < half, sinTable(clamp(c, 0, half - 1), pos),
                  cosTable(clamp(c - half, 0, half - 1), pos)));
    lowering.scheduleElementwise(t, vars);
    lowering.set(sinusoidal, t);
    return mlir::success();
  }
  if (auto shift = mlir::dyn_cast<attn::TokenShiftOp>(op)) {
    const HTensor &in = lowering.get(shift.getX());
    HTensor t;
    t.func = Func("token_shift");
    t.extents = in.extents;
    std::vector<Var> vars = makeVars(t.rank(), "t");
    Index index = toIndex(vars), previous = index;
    Expr c = vars.back(), row = vars[vars.size() - 2];
    int dims = int(shift.getDims());
    previous[previous.size() - 2] = max(row - 1, 0);
    Expr before = 0.0f; // what row 0 sees
    if (lowering.streaming()) {
      // Streamed (Stream.h): row 0 of a block sees the previous block's
      // last row, which this block's carries to the next.
      std::vector<Expr> extents(in.extents.begin(), in.extents.end() - 2);
      extents.push_back(1);
      extents.push_back(dims);
      const Lowering::StreamCarry &carry = lowering.addStreamCarry(extents);
      Index first = index;
      first[first.size() - 2] = 0;
      first.back() = clamp(c, 0, dims - 1);
      before = HTensor{carry.in, carry.extents}.at(first);
      Index last = index;
      last[last.size() - 2] = in.extents[in.rank() - 2] - 1;
      Lowering::defineCarryNext(carry, vars, in.at(last));
    }
    Expr shifted = select(row > 0, in.at(previous), before);
    define(t.func, vars, select(c < dims, shifted, in.at(index)));
    lowering.scheduleElementwise(t, vars);
    lowering.set(shift, t);
    return mlir::success();
  }
  return op->emitError() << "internal error: '" << op->getName()
                         << "' reached the wrong lowering";
}

} // namespace attnc::codegen
