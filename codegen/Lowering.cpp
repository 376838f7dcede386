//===- Lowering.cpp - attn dialect to Halide: the function walk -----------===//
//
// This file implements the walk over one model function: inputs become
// ImageParams with runtime extents, `attn.weight`s become ImageParams named
// after the weight, every op is handed to its family's lowering (one file
// per family), and the returned values become the pipeline's outputs.
//
//===----------------------------------------------------------------------===//
#include "codegen/LoweringImpl.h"
#include "codegen/Resources.h"
#include "codegen/Stream.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/xxhash.h"

#include <functional>
#include <map>
#include <set>
#include <utility>

namespace attnc::codegen {

using namespace Halide;

/// Rows per parallel task of an internal per-row stage (row statistics):
/// one row of a few hundred elements is too little work for a task.
static constexpr int kRowsPerTask = 64;

/// Fuses the row `vars` of `stage` and, when `parallel`, runs blocks of
/// kRowsPerTask rows in parallel; returns the loop of one row.
static Var parallelRows(Stage stage, const std::vector<Var> &vars,
                        bool parallel) {
  Var rows = fuseOuter(stage, vars, vars.size());
  if (!parallel)
    return rows;
  Var block(rows.name() + "_block"), row(rows.name() + "_in");
  stage.split(rows, block, row, kRowsPerTask, TailStrategy::GuardWithIf)
      .parallel(block);
  return row;
}

Expr HTensor::at(const Index &index) const {
  std::vector<Expr> reversed(index.rbegin(), index.rend());
  return func(reversed);
}

std::vector<Var> makeVars(size_t rank, const std::string &prefix) {
  std::vector<Var> vars;
  for (size_t i = 0; i < rank; ++i)
    vars.emplace_back(prefix + std::to_string(i));
  return vars;
}

Index toIndex(const std::vector<Var> &vars) {
  return Index(vars.begin(), vars.end());
}

Index withTail(Index index, std::initializer_list<Expr> tail) {
  index.insert(index.end(), tail.begin(), tail.end());
  return index;
}

Expr callAt(const Func &func, const Index &index) {
  std::vector<Expr> reversed(index.rbegin(), index.rend());
  return func(reversed);
}

void define(Func &func, const std::vector<Var> &vars, const Expr &value) {
  std::vector<Var> reversed(vars.rbegin(), vars.rend());
  func(reversed) = value;
}

int64_t WeightArena::add(const std::vector<int64_t> &shape) {
  // Held below 2^62 (a layout that large is never used: Lowering checks
  // it against one buffer's limit).
  constexpr int64_t kHuge = int64_t(1) << 62;
  int64_t count = 1;
  for (int64_t size : shape)
    if (__builtin_mul_overflow(count, size, &count) || count > kHuge)
      count = kHuge;
  int64_t offset = (elements + kAlign - 1) / kAlign * kAlign;
  offsets.push_back(offset);
  shapes.push_back(shape);
  elements = std::min(offset + count, kHuge);
  return offset;
}

int64_t TensorInfo::numElements() const {
  int64_t count = 1;
  for (int64_t size : shape) {
    if (size < 0)
      return -1;
    count *= size;
  }
  return count;
}

std::string TensorInfo::shapeString() const {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    out += i ? ", " : "";
    out += shape[i] < 0 ? dims[i] : std::to_string(shape[i]);
  }
  return out + "]";
}

/// A C identifier for a Halide argument, unique by its index.
static std::string argumentName(const std::string &prefix, size_t index,
                                const std::string &name) {
  std::string out = prefix + std::to_string(index) + "_";
  for (char c : name)
    out += (std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
  return out;
}

TensorInfo describe(const std::string &name, mlir::RankedTensorType type,
                    mlir::ArrayAttr dims) {
  TensorInfo info;
  info.name = name;
  for (int64_t i = 0; i < type.getRank(); ++i) {
    info.shape.push_back(type.isDynamicDim(i) ? -1 : type.getDimSize(i));
    std::string dim;
    if (dims && static_cast<int64_t>(dims.size()) == type.getRank())
      dim = mlir::cast<mlir::StringAttr>(dims[i]).str();
    info.dims.push_back(type.isDynamicDim(i) && dim.empty() ? "?" : dim);
  }
  return info;
}

/// The rows of the smallest embedding table that reads the token ids
/// `ids` (a function argument), through the calls of a program of kernels;
/// 0 when none does. An error at any other reader.
static mlir::FailureOr<int64_t> tokenIdBound(mlir::Value ids) {
  int64_t bound = 0;
  for (mlir::OpOperand &use : ids.getUses()) {
    mlir::Operation *user = use.getOwner();
    int64_t rows = 0;
    if (auto embedding = mlir::dyn_cast<mlir::attn::EmbeddingOp>(user)) {
      rows = embedding.getTable().getType().getDimSize(0);
    } else if (auto call = mlir::dyn_cast<mlir::func::CallOp>(user)) {
      auto callee = mlir::SymbolTable::lookupNearestSymbolFrom<
          mlir::func::FuncOp>(call, call.getCalleeAttr());
      if (!callee || callee.isExternal())
        return call.emitError() << "internal error: no body for "
                                << call.getCallee();
      mlir::FailureOr<int64_t> inner =
          tokenIdBound(callee.getArgument(use.getOperandNumber()));
      if (mlir::failed(inner))
        return mlir::failure();
      rows = *inner;
    } else {
      return user->emitError() << "code generation reads token ids (i32) "
                                  "only with attn.embedding";
    }
    if (rows > 0)
      bound = bound ? std::min(bound, rows) : rows;
  }
  return bound;
}

mlir::FailureOr<TensorInfo> describeArgument(mlir::func::FuncOp func,
                                             unsigned index) {
  mlir::Value arg = func.getArgument(index);
  auto type = mlir::dyn_cast<mlir::RankedTensorType>(arg.getType());
  bool ids = type && type.getElementType().isSignlessInteger(32);
  if (!type || (!type.getElementType().isF32() && !ids)) {
    func.emitError() << "code generation supports f32 tensors and i32 token "
                        "ids only, but input "
                     << index << " is " << arg.getType();
    return mlir::failure();
  }
  auto name = func.getArgAttrOfType<mlir::StringAttr>(index, "attn.name");
  auto dims = func.getArgAttrOfType<mlir::ArrayAttr>(index, "attn.dims");
  TensorInfo info = describe(
      name ? name.str() : "arg" + std::to_string(index), type, dims);
  if (ids) {
    info.dtype = "i32";
    mlir::FailureOr<int64_t> bound = tokenIdBound(arg);
    if (mlir::failed(bound))
      return mlir::failure();
    info.idBound = *bound;
  }
  return info;
}

TensorInfo describeResult(mlir::func::FuncOp func, unsigned index) {
  auto type =
      mlir::cast<mlir::RankedTensorType>(func.getResultTypes()[index]);
  auto name = func.getResultAttrOfType<mlir::StringAttr>(index, "attn.name");
  auto dims = func.getResultAttrOfType<mlir::ArrayAttr>(index, "attn.dims");
  return describe(name ? name.str() : "out" + std::to_string(index), type,
                  dims);
}

std::vector<Expr> Lowering::extentsLike(mlir::Value value,
                                        const std::vector<Expr> &from) {
  auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
  std::vector<Expr> extents;
  for (int64_t i = 0; i < type.getRank(); ++i)
    extents.push_back(type.isDynamicDim(i) ? from.at(i)
                                           : Expr(int(type.getDimSize(i))));
  return extents;
}

LoopLevel Lowering::scheduleElementwise(HTensor &tensor,
                                        const std::vector<Var> &vars,
                                        bool fuseRows, int period,
                                        bool leadingHeads) {
  mlir::attn::ScheduleAttr attr = schedule();
  if (attr && attr.getCompute() == mlir::attn::ComputeAt::inlined)
    return LoopLevel::inlined(); // computed inside its kernel's anchor
  tensor.materialized = true;
  if (autoscheduled())
    return LoopLevel::inlined(); // the autoscheduler's to place
  if (vars.empty()) { // a scalar: no loops to schedule
    tensor.func.compute_root();
    return LoopLevel::root();
  }
  assert(attr && "lowerOp admits no scheduled stage without a schedule");
  return applySchedule(tensor.func, vars, attr, fuseRows, period, leadingHeads);
}

/// The loop level of one row of `func` under the naive schedule: the
/// second innermost var (or the root for one var).
static LoopLevel naiveRowLevel(Func func, const std::vector<Var> &vars) {
  return vars.size() >= 2 ? LoopLevel(func, vars[vars.size() - 2])
                          : LoopLevel::root();
}

LoopLevel Lowering::applySchedule(Func func, const std::vector<Var> &vars,
                                  mlir::attn::ScheduleAttr attr, bool fuseRows,
                                  int period, bool leadingHeads) {
  func.compute_root();
  if (attr.getStrategy() == mlir::attn::Strategy::naive)
    return naiveRowLevel(func, vars);
  Var x = vars.back();
  if (attr.isOnGpu()) {
    // A block computes one tile; each thread computes tile / gpu_threads
    // elements, interleaved so that neighbouring threads touch neighbouring
    // columns (coalesced), unrolled. Batch axes are a third grid dimension.
    GpuLoops gpu = gpuLoops();
    int tileX = int(attr.getTileX()), tileY = int(attr.getTileY());
    int threadsX = int(attr.getGpuThreadsX()),
        threadsY = int(attr.getGpuThreadsY());
    Var bx("bx"), by("by"), xi("xi"), yi("yi"), tx("tx"), ty("ty"), ux("ux"),
        uy("uy");
    if (vars.size() < 2) {
      func.split(x, bx, xi, tileX, TailStrategy::GuardWithIf)
          .split(xi, ux, tx, threadsX, TailStrategy::GuardWithIf)
          .reorder(ux, tx, bx)
          .unroll(ux);
      gpu.threads(func, {tx});
      gpu.blocks(func, {bx});
      return LoopLevel::root();
    }
    func.tile(x, vars[vars.size() - 2], bx, by, xi, yi, tileX, tileY,
              TailStrategy::GuardWithIf)
        .tile(xi, yi, ux, uy, tx, ty, threadsX, threadsY,
              TailStrategy::GuardWithIf);
    // Row blocks of every batch entry on grid x (up to 2^31 - 1 blocks;
    // grid y and z stop at 65535), column blocks on grid y.
    std::vector<Var> rowLoops(vars.begin(), vars.end() - 2);
    rowLoops.push_back(by);
    Var rows = fuseOuter(func, rowLoops, rowLoops.size());
    func.reorder(ux, uy, tx, ty, rows, bx).unroll(ux).unroll(uy);
    gpu.threads(func, {tx, ty});
    gpu.blocks(func, {rows, bx});
    return LoopLevel::root();
  }
  int vector = int(attr.getVector()), tileX = int(attr.getTileX());
  if (period > 0) {
    Var xp(x.name() + "_period"), xc(x.name() + "_cyc");
    func.split(x, xp, xc, period, TailStrategy::GuardWithIf).unroll(xp);
    x = xc;
    tileX = std::min(tileX, period);
  }
  if (tileX > vector && tileX > 1) {
    Var xo(x.name() + "_tile"), xi(x.name() + "_in");
    func.split(x, xo, xi, tileX, TailStrategy::GuardWithIf);
    if (vector > 1)
      func.vectorize(xi, vector, TailStrategy::GuardWithIf);
  } else if (vector > 1) {
    func.vectorize(x, vector, TailStrategy::GuardWithIf);
  }
  if (vars.size() < 2)
    return LoopLevel::root();
  // tile y rows per iteration of the outer (parallel) loop: a task large
  // enough that the thread pool's cost per task does not show.
  std::vector<Var> outer(vars.begin() + (leadingHeads ? 1 : 0), vars.end() - 1);
  Var row = outer.back();
  int tileY = int(attr.getTileY());
  if (tileY > 1) {
    Var rowTile(row.name() + "_tile"), rowIn(row.name() + "_in");
    func.split(row, rowTile, rowIn, tileY, TailStrategy::GuardWithIf);
    outer.back() = rowTile;
    row = rowIn;
  }
  if (leadingHeads) {
    // ..., the rows of a tile, the heads, the tile, the batch entries.
    std::vector<VarOrRVar> order;
    if (tileY > 1)
      order.push_back(row);
    order.push_back(vars.front());
    for (auto it = outer.rbegin(); it != outer.rend(); ++it)
      order.push_back(*it);
    func.reorder(order);
  }
  Var rows = fuseRows ? fuseOuter(func, outer, outer.size()) : outer.back();
  if (attr.getParallel())
    func.parallel(rows);
  return LoopLevel(func, row);
}

void Lowering::addInternalStage(Func func, std::vector<Var> vars, bool perRow,
                                TailStrategy tail, bool rowBlocks) {
  mlir::attn::ScheduleAttr attr = internalSchedule();
  assert(attr && "internal stages belong to a scheduled op");
  pendingSchedules.push_back(
      [this, attr, func, vars = std::move(vars), perRow, tail, rowBlocks] {
        scheduleInternal(attr, func, vars, perRow, tail, /*transpose=*/false,
                         rowBlocks);
      });
}

void Lowering::addTransposeStage(Func func, std::vector<Var> vars) {
  mlir::attn::ScheduleAttr attr = internalSchedule();
  assert(attr && vars.size() >= 2 && "a transpose of a scheduled op");
  pendingSchedules.push_back([this, attr, func, vars = std::move(vars)] {
    scheduleInternal(attr, func, vars, /*perRow=*/false,
                     TailStrategy::GuardWithIf, /*transpose=*/true);
  });
}

bool Lowering::vectorRowSums() const {
  mlir::attn::ScheduleAttr attr = internalSchedule();
  return rowScratch() && attr && !autoscheduled() &&
         attr.getStrategy() != mlir::attn::Strategy::naive &&
         attr.getVector() > 1;
}

void Lowering::addRowSum(Func total, std::vector<Var> rowVars, RDom r,
                         mlir::Operation *product) {
  mlir::attn::ScheduleAttr attr = internalSchedule();
  assert(vectorRowSums() && "a row sum in lanes needs a CPU vector");
  if (product)
    computeInRowBlocks(product, total, /*tasksOverBatch=*/false);
  pendingSchedules.push_back([this, attr, total, rowVars = std::move(rowVars),
                              r, inRowBlocks = product != nullptr] {
    scheduleRowSum(attr, total, rowVars, r, inRowBlocks);
  });
}

void Lowering::addScanUpdate(Func func, Var col, Var row,
                             std::vector<VarOrRVar> order) {
  mlir::attn::ScheduleAttr attr = internalSchedule();
  assert(attr && "internal stages belong to a scheduled op");
  pendingSchedules.push_back(
      [this, attr, func, col, row, order = std::move(order)] {
        scheduleScan(attr, func, col, row, order);
      });
}

void Lowering::scheduleInternal(mlir::attn::ScheduleAttr attr, Func func,
                                const std::vector<Var> &vars, bool perRow,
                                TailStrategy tail, bool transpose,
                                bool rowBlocks) {
  if (autoscheduled())
    return;
  func.compute_root();
  if (vars.empty() || attr.getStrategy() == mlir::attn::Strategy::naive)
    return;
  if (attr.isOnGpu()) {
    int threadsX = int(attr.getGpuThreadsX()),
        threadsY = int(attr.getGpuThreadsY());
    Var bx("bx"), by("by"), tx("tx"), ty("ty");
    if (vars.size() >= 2)
      gpuLoops().tile(func, vars.back(), vars[vars.size() - 2], bx, by, tx, ty,
                      threadsX, threadsY, TailStrategy::GuardWithIf);
    else
      gpuLoops().tile(func, vars.back(), bx, tx, threadsX * threadsY,
                      TailStrategy::GuardWithIf);
    return;
  }
  if (perRow || vars.size() == 1) {
    // Per-row stages: every var is a row; a parallel task takes a block of
    // rows (one row is too little work for a task).
    parallelRows(func, vars, parallelRowStats(attr));
    return;
  }
  if (transpose && attr.getVector() > 1) {
    // A vector of the input's rows (the last var) sweeps every column; the
    // vectors of rows are the tasks.
    size_t rank = vars.size();
    Var row = vars[rank - 1], col = vars[rank - 2];
    Var block(row.name() + "_block"), lane(row.name() + "_lane");
    func.split(row, block, lane, int(attr.getVector()), tail)
        .reorder(lane, col, block)
        .vectorize(lane);
    std::vector<Var> outer(vars.begin(), vars.end() - 2);
    outer.push_back(block);
    Var task = fuseOuter(func, outer, outer.size());
    if (attr.getParallel())
      func.parallel(task);
    return;
  }
  if (attr.getVector() > 1)
    func.vectorize(vars.back(), int(attr.getVector()), tail);
  if (rowBlocks) {
    parallelRows(func, std::vector<Var>(vars.begin(), vars.end() - 1),
                 attr.getParallel());
    return;
  }
  Var rows = fuseOuter(func, vars, vars.size() - 1);
  if (attr.getParallel())
    func.parallel(rows);
}

bool Lowering::parallelRowStats(mlir::attn::ScheduleAttr attr) const {
  // A decoding step's few rows are one task. Split into tasks of
  // kRowsPerTask rows, the fused rows of a static batch of one took
  // Halide 14 bounds that reached batch entry 1 - n (MHSA decoded over
  // x : f32[1, n, 8]: "internal error ... Input buffer in0_x is accessed
  // at -6"; found by the model generator, campaign 6).
  return attr.getParallel() && !options.decode;
}

void Lowering::scheduleRowSum(mlir::attn::ScheduleAttr attr, Func total,
                              const std::vector<Var> &rowVars, const RDom &r,
                              bool inRowBlocks) {
  // lanes(lane, row...) sums the terms lane, lane + v, ...; the update of
  // `total` then adds the v lanes. In a product's row blocks the block's
  // rows run in turn on the block's task (the product computes `total`),
  // their loops kept apart: with the row vars fused, as parallelRows does
  // at root, Halide 14 read FLASH's input at row 16351 of 8192 (batch 1).
  reduceInLanes(total, r, int(attr.getVector()), [&] {
    if (inRowBlocks)
      return LoopLevel(total, rowVars.back());
    total.compute_root();
    parallelRows(total, rowVars, parallelRowStats(attr));
    Var row = parallelRows(total.update(), rowVars, parallelRowStats(attr));
    return LoopLevel(total, row);
  });
}

void reduceInLanes(Func total, const RDom &r, int vector,
                   const std::function<LoopLevel()> &place) {
  RVar outer("ro"), inner("ri");
  Var lane("lane");
  Func lanes = total.update()
                   .split(r.x, outer, inner, vector, TailStrategy::GuardWithIf)
                   .rfactor(inner, lane);
  lanes.compute_at(place()).vectorize(lane);
  lanes.update().vectorize(lane);
}

void Lowering::scheduleScan(mlir::attn::ScheduleAttr attr, Func func,
                            const Var &col, const Var &row,
                            const std::vector<VarOrRVar> &order) {
  if (attr.getStrategy() == mlir::attn::Strategy::naive || autoscheduled())
    return;
  Stage stage = func.update();
  if (attr.isOnGpu()) {
    gpuLoops().tile(stage, col, row, Var("bx"), Var("by"), Var("tx"), Var("ty"),
                    int(attr.getGpuThreadsX()), int(attr.getGpuThreadsY()),
                    TailStrategy::GuardWithIf);
    return;
  }
  if (!order.empty())
    stage.reorder(order);
  if (attr.getVector() > 1)
    stage.vectorize(col, int(attr.getVector()), TailStrategy::GuardWithIf);
  if (attr.getParallel())
    stage.parallel(row);
}

Var fuseOuter(Stage stage, const std::vector<Var> &vars, size_t count) {
  // vars are MLIR order: vars[count - 1] is the innermost of the group.
  Var fused = vars[count - 1];
  for (size_t i = count - 1; i-- > 0;) {
    Var next(fused.name() + "_" + vars[i].name());
    stage.fuse(fused, vars[i], next);
    fused = next;
  }
  return fused;
}

/// Whether `op` carries `compute = inline`.
static bool scheduledInline(mlir::Operation *op) {
  mlir::attn::ScheduleAttr attr = mlir::attn::ScheduleAttr::lookup(op);
  return attr && attr.getCompute() == mlir::attn::ComputeAt::inlined;
}

mlir::Operation *Lowering::epilogueOf(mlir::Operation *producer) const {
  mlir::Operation *user = producer && mlir::attn::isProduct(producer)
                              ? mlir::attn::getOnlyUser(producer->getResult(0))
                              : nullptr;
  // A member of the product's own kernel that attn-tile inlined.
  return user && scheduledInline(user) &&
                 mlir::attn::getEpilogueProduct(user) == producer
             ? user
             : nullptr;
}

/// Checks that the schedule `attr` of a scheduled stage (`what`, reported
/// at `op`) is there and fits the target's kind: attn-tile gives every such
/// stage a schedule and verifies it against the target; codegen applies it
/// and invents none.
static mlir::LogicalResult checkSchedule(mlir::Operation *op,
                                         const llvm::Twine &what,
                                         mlir::attn::ScheduleAttr attr,
                                         bool gpu) {
  if (!attr)
    return op->emitError()
           << "code generation needs an attn.schedule on " << what
           << " (attn-tile gives every compute op and model result one: "
              "attnc runs it, attn-opt --attn-schedule)";
  if (attr.getCompute() == mlir::attn::ComputeAt::inlined)
    return mlir::success();
  if (gpu && !attr.isOnGpu())
    return op->emitError() << "schedule " << attr
                           << " has no gpu_threads, but the target is a GPU";
  if (!gpu && attr.isOnGpu())
    return op->emitError() << "schedule " << attr
                           << " sets gpu_threads, but the target is a CPU";
  return mlir::success();
}

mlir::LogicalResult Lowering::lowerOp(mlir::Operation *op) {
  currentOp = op;
  currentSchedule = ownerSchedule = mlir::attn::ScheduleAttr::lookup(op);
  if (mlir::attn::needsSchedule(op) &&
      mlir::failed(checkSchedule(op, "'" + op->getName().getStringRef() + "'",
                                 currentSchedule, options.gpu)))
    return mlir::failure();
  if (currentSchedule &&
      currentSchedule.getCompute() == mlir::attn::ComputeAt::inlined) {
    auto kernel = mlir::dyn_cast<mlir::attn::KernelOp>(op->getParentOp());
    mlir::Operation *anchor = kernel ? kernel.getAnchor() : nullptr;
    ownerSchedule =
        anchor ? mlir::attn::ScheduleAttr::lookup(anchor) : nullptr;
    // A norm's statistics are stages of their own: they take the loops of
    // the kernel it is computed in.
    if (mlir::attn::isNorm(op) &&
        (!ownerSchedule ||
         ownerSchedule.getCompute() == mlir::attn::ComputeAt::inlined))
      return op->emitError()
             << "schedule compute = inline on a norm needs an attn.kernel "
                "whose anchor has loops of its own (its statistics run in "
                "them)";
  }
  if (auto alias = aliases.find(op); alias != aliases.end()) {
    set(op->getResult(0), get(alias->second));
    return mlir::success();
  }
  // The family defines the op's Funcs (and schedules its result); the
  // schedules of the internal stages it declared are applied after.
  pendingSchedules.clear();
  mlir::LogicalResult lowered = lowerFamily(op);
  if (mlir::succeeded(lowered))
    for (const std::function<void()> &apply : pendingSchedules)
      apply();
  pendingSchedules.clear();
  return lowered;
}

mlir::LogicalResult Lowering::lowerFamily(mlir::Operation *op) {
  namespace attn = mlir::attn;
  auto family = [&](auto lower) {
    return [this, lower](mlir::Operation *member) {
      return lower(*this, member);
    };
  };
  return llvm::TypeSwitch<mlir::Operation *, mlir::LogicalResult>(op)
      .Case<attn::ConstantOp, attn::AddOp, attn::SubOp, attn::MulOp,
            attn::DivOp, attn::DivOrZeroOp, attn::PowOp, attn::NegOp,
            attn::SiluOp, attn::GeluOp, attn::ReluOp, attn::SigmoidOp,
            attn::ExpOp, attn::TanhOp, attn::SqrtOp, attn::ScaleOffsetOp>(
          family(lowerElementwise))
      .Case<attn::SplitOp, attn::TransposeOp, attn::RowOp, attn::EmbeddingOp>(
          family(lowerShapeOps))
      .Case<attn::LayerNormOp, attn::RmsNormOp, attn::ScaleNormOp, attn::RopeOp,
            attn::SinusoidalOp, attn::TokenShiftOp>(family(lowerNorms))
      .Case<attn::MatmulOp, attn::DenseOp>(family(lowerMatmul))
      .Case<attn::AttentionOp>(family(lowerAttention))
      .Case<attn::LinearAttnOp, attn::ChunkedLinearOp>(
          family(lowerLinearAttention))
      .Case<attn::ChunkOp, attn::UnchunkOp, attn::ChunkStateOp,
            attn::ChunkScanOp, attn::StateApplyOp>(family(lowerChunked))
      .Default([](mlir::Operation *other) -> mlir::LogicalResult {
        return other->emitError()
               << "code generation does not support '" << other->getName()
               << "'"
               << (mlir::isa<attn::GauOp, attn::FlashOp, attn::MhsaOp,
                             attn::LinearAttentionOp, attn::LocalAttentionOp,
                             attn::GluFfnOp>(other)
                       ? " (run attn-expand-layers first)"
                       : "");
      });
}

/// Halide extents are 32-bit: a static axis beyond that is a user error at
/// the op (or the function, for arguments), not a silent truncation.
static mlir::LogicalResult checkStaticExtents(mlir::func::FuncOp func) {
  auto tooLarge = [](mlir::Type type) {
    auto tensor = mlir::dyn_cast<mlir::RankedTensorType>(type);
    if (!tensor)
      return false;
    for (int64_t size : tensor.getShape())
      if (!mlir::ShapedType::isDynamic(size) && size > kMaxExtent)
        return true;
    return false;
  };
  auto message = [](mlir::InFlightDiagnostic diag,
                    mlir::Type type) -> mlir::LogicalResult {
    diag << "code generation supports axes of at most " << kMaxExtent
         << " elements, but a tensor here is " << type;
    return mlir::failure();
  };
  for (mlir::Type type : func.getFunctionType().getInputs())
    if (tooLarge(type))
      return message(func.emitError(), type);
  for (mlir::Type type : func.getFunctionType().getResults())
    if (tooLarge(type))
      return message(func.emitError(), type);
  mlir::WalkResult walk = func.walk([&](mlir::Operation *op) {
    for (mlir::Type type : op->getResultTypes())
      if (tooLarge(type)) {
        (void)message(op->emitError(), type);
        return mlir::WalkResult::interrupt();
      }
    return mlir::WalkResult::advance();
  });
  return mlir::failure(walk.wasInterrupted());
}

/// Tells Halide what every caller guarantees of a buffer of `type`: it
/// starts at 0 (the JIT and the AOT wrapper make them so, and index
/// arithmetic then keeps its alignment: tiles, packed panels), it is dense
/// in C order, and its static dims have their sizes. Strides and extents
/// then fold to constants where the type is static, as they do for the
/// buffers Halide allocates itself; a call that breaks them fails Halide's
/// checks instead of computing something else.
static void constrainDense(OutputImageParam buffer,
                           mlir::RankedTensorType type) {
  int rank = int(type.getRank());
  for (int d = 0; d < rank; ++d) {
    Internal::Dimension dim = buffer.dim(d);
    dim.set_min(0);
    int64_t size = type.getDimSize(rank - 1 - d);
    if (size != mlir::ShapedType::kDynamic)
      dim.set_extent(int(size));
    if (d > 0)
      dim.set_stride(buffer.dim(d - 1).stride() * buffer.dim(d - 1).extent());
  }
}

Expr Lowering::rowOffset() const {
  return streaming() ? cast<int>(streamOffset(0)) : Expr(0);
}

/// The value an attn.kernel yields as its result `value`, or null when
/// `value` is not a kernel's result.
static mlir::Value yieldedBy(mlir::Value value) {
  auto result = mlir::dyn_cast<mlir::OpResult>(value);
  auto kernel =
      result ? mlir::dyn_cast<mlir::attn::KernelOp>(result.getOwner()) : nullptr;
  return kernel ? kernel.getYield().getValues()[result.getResultNumber()]
                : mlir::Value();
}

mlir::LogicalResult Lowering::lowerFunction(mlir::func::FuncOp func) {
  source = kernelSource(func, options);
  sourceHash = llvm::xxh3_64bits(source);
  if (mlir::failed(checkStaticExtents(func)))
    return mlir::failure();
  if (streaming()) {
    if (!streamChecked && mlir::failed(checkStreamable(func, options)))
      return mlir::failure();
    streamOffset = ImageParam(Float(32), 1, "stream_offset");
    streamOffset.dim(0).set_bounds(0, 1);
  }
  // Inputs: one ImageParam each, extents from the buffer at run time.
  for (auto [index, arg] : llvm::enumerate(func.getArguments())) {
    mlir::FailureOr<TensorInfo> described = describeArgument(func, index);
    if (mlir::failed(described))
      return mlir::failure();
    const TensorInfo &info = *described;
    auto type = mlir::cast<mlir::RankedTensorType>(arg.getType());
    ImageParam param(Float(32), type.getRank(),
                     argumentName("in", index, info.name));
    constrainDense(param, type);
    HTensor tensor;
    tensor.func = param;
    for (int64_t i = 0; i < type.getRank(); ++i)
      tensor.extents.push_back(type.isDynamicDim(i)
                                   ? param.dim(type.getRank() - 1 - i).extent()
                                   : Expr(int(type.getDimSize(i))));
    tensor.materialized = true;
    inputParams.push_back(param);
    inputs.push_back(info);
    set(arg, tensor);
  }

  // The values returned once and read by nothing else, for the products
  // that write their outputs (claimOutput): a result an attn.kernel
  // returns is its yielded value. (A stage that is an output and is read
  // again, by another output's copy, is left to a copy.)
  if (auto ret = mlir::dyn_cast<mlir::func::ReturnOp>(
          func.getBody().front().getTerminator()))
    for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
      outputNames.push_back(
          argumentName("out", index, describeResult(func, index).name));
      if (!value.hasOneUse())
        continue;
      returnedAt[value] = unsigned(index);
      mlir::Value yielded = yieldedBy(value);
      if (yielded && yielded.hasOneUse())
        returnedAt[yielded] = unsigned(index);
    }

  // The weights' arena: their bytes, each name once, within one buffer.
  WeightArena layout;
  std::set<std::string> named;
  for (auto weight : func.getBody().front().getOps<mlir::attn::WeightOp>()) {
    auto type = mlir::cast<mlir::RankedTensorType>(weight.getType());
    if (named.insert(weight.getName().str()).second)
      layout.add(type.getShape().vec());
  }
  // On a CPU, where they fit one buffer, except for decoding (whose
  // kernels run a step per token and would pack the weights as often) and
  // Halide's autoschedulers (which are given each weight's shape).
  if (!options.gpu && !options.decode && !autoscheduled() &&
      layout.elements <= kMaxBufferBytes / 4 && layout.used()) {
    arena = std::move(layout);
    weightArena = ImageParam(Float(32), 1, "weights");
    weightArena.dim(0).set_bounds(0, int(arena.elements));
  }

  std::map<std::string, HTensor> weightByName;
  for (mlir::Operation &op : func.getBody().front()) {
    if (auto weight = mlir::dyn_cast<mlir::attn::WeightOp>(op)) {
      auto type = mlir::cast<mlir::RankedTensorType>(weight.getType());
      std::string name = weight.getName().str();
      if (!type.getElementType().isF32())
        return weight.emitError() << "code generation supports f32 weights "
                                     "only, but '"
                                  << name << "' is " << type;
      auto it = weightByName.find(name);
      if (it == weightByName.end()) {
        HTensor tensor;
        if (arena.used()) {
          // A view of the arena: weight(i, j) = arena[offset + i*cols + j],
          // its offset the layout's above (weights in the same order).
          std::vector<Var> vars = makeVars(type.getRank(), "w");
          Expr at = Expr(int(arena.offsets.at(weights.size())));
          int64_t stride = 1;
          for (int64_t d = type.getRank() - 1; d >= 0; --d) {
            at += vars[d] * int(stride);
            stride *= type.getDimSize(d);
          }
          Func view(argumentName("w", weights.size(), name));
          define(view, vars, weightArena(at));
          tensor.func = view;
        } else {
          ImageParam param(Float(32), type.getRank(),
                           argumentName("w", weightParams.size(), name));
          constrainDense(param, type);
          weightParams.push_back(param);
          tensor.func = param;
        }
        for (int64_t size : type.getShape())
          tensor.extents.push_back(Expr(int(size)));
        tensor.materialized = true;
        weights.push_back(describe(name, type, nullptr));
        it = weightByName.emplace(name, tensor).first;
      }
      set(weight, it->second);
      continue;
    }
    if (auto ret = mlir::dyn_cast<mlir::func::ReturnOp>(op)) {
      for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
        const HTensor &result = get(value);
        outputs.push_back(describeResult(func, index));
        outputExtents.push_back(result.extents);
        auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
        // A stream carry's `next` is computed after the outputs: it may read
        // an argument the output has overwritten, so none is in place.
        bool carries = !streamCarries.empty();
        auto claimed = claimedOutputs.find(unsigned(index));
        if (claimed != claimedOutputs.end()) {
          if (!result.func.function().same_as(
                  claimed->second.first.function()))
            return ret.emitError()
                   << "internal error: result " << index
                   << " was to be written by its product, which is not "
                      "what the function returns";
          // The product stored its result in the output (claimOutput).
          outputAfterInputs.push_back(claimed->second.second && !carries);
          constrainDense(result.func.output_buffer(), type);
          outputFuncs.push_back(result.func);
          continue;
        }
        mlir::Operation *producer = value.getDefiningOp();
        outputAfterInputs.push_back(
            !options.gpu && !carries && result.materialized && producer &&
            !mlir::isa<mlir::attn::WeightOp>(producer));
        Func out(outputNames[index]);
        // The copy's schedule is the result's attribute (attn-tile's).
        currentOp = nullptr;
        currentSchedule = ownerSchedule =
            func.getResultAttrOfType<mlir::attn::ScheduleAttr>(
                index, mlir::attn::ScheduleAttr::getScheduleAttrName());
        if (result.rank() > 0 &&
            mlir::failed(checkSchedule(
                ret, "result " + llvm::Twine(index) + " of the model",
                currentSchedule, options.gpu)))
          return mlir::failure();
        std::vector<Var> vars = makeVars(result.rank(), "o");
        define(out, vars, result.at(toIndex(vars)));
        HTensor wrapped{out, result.extents};
        scheduleElementwise(wrapped, vars);
        constrainDense(out.output_buffer(), type);
        outputFuncs.push_back(out);
      }
      continue;
    }
    if (mlir::isa<mlir::arith::ConstantOp>(op))
      continue; // scalar constants are read where a score region uses them
    if (auto kernel = mlir::dyn_cast<mlir::attn::KernelOp>(op)) {
      // Members in order; their schedules (inline, epilogue) fuse them.
      for (mlir::Operation &member :
           kernel.getBody().front().without_terminator())
        if (mlir::failed(lowerOp(&member)))
          return mlir::failure();
      for (auto [result, value] :
           llvm::zip(kernel.getResults(), kernel.getYield().getValues()))
        set(result, get(value));
      continue;
    }
    if (mlir::failed(lowerOp(&op)))
      return mlir::failure();
  }
  collectStoredBuffers(func);
  return mlir::success();
}

/// Constrains `buffer` to mins 0 and `extents` (MLIR order).
static void setBounds(OutputImageParam buffer,
                      const std::vector<Expr> &extents) {
  int rank = int(extents.size());
  for (int d = 0; d < rank; ++d)
    if (extents[rank - 1 - d].defined()) // not a cache's rows
      buffer.dim(d).set_bounds(0, extents[rank - 1 - d]);
}

std::optional<Func>
Lowering::claimOutput(mlir::Value value,
                      llvm::function_ref<bool()> afterInputs) {
  auto returned = returnedAt.find(value);
  if (options.gpu || options.chunkStep || autoscheduled() ||
      returned == returnedAt.end() ||
      claimedOutputs.count(returned->second))
    return std::nullopt;
  Func stage(outputNames[returned->second]);
  claimedOutputs.insert({returned->second, {stage, afterInputs()}});
  return stage;
}

bool Lowering::readsNoArgument(mlir::Value value) const {
  llvm::SmallVector<mlir::Value> work{value};
  llvm::DenseSet<mlir::Value> seen;
  while (!work.empty()) {
    mlir::Value next = work.pop_back_val();
    if (!seen.insert(next).second)
      continue;
    mlir::Operation *producer = next.getDefiningOp();
    if (!producer) {
      // An argument: the function's (a hoisted weight is read as a weight:
      // never a temporary a result takes over), or a score region's index.
      auto argument = mlir::cast<mlir::BlockArgument>(next);
      auto func = mlir::dyn_cast<mlir::func::FuncOp>(
          argument.getOwner()->getParentOp());
      if (func &&
          !func.getArgAttr(argument.getArgNumber(),
                           mlir::attn::AttnDialect::getWeightArgAttrName()))
        return false;
      continue;
    }
    if (mlir::isa<mlir::attn::WeightOp, mlir::arith::ConstantOp>(producer))
      continue;
    if (mlir::Value yielded = yieldedBy(next)) {
      work.push_back(yielded);
      continue;
    }
    auto it = values.find(next);
    if (it != values.end() && it->second.materialized)
      continue; // stored before the stages that read it
    // Read inline: whatever the op reads, its region's too.
    producer->walk([&](mlir::Operation *nested) {
      llvm::append_range(work, nested->getOperands());
    });
  }
  return true;
}

void Lowering::defineCarryNext(const StreamCarry &carry,
                               const std::vector<Var> &vars,
                               const Expr &value) {
  Func next = carry.next; // a handle to the carry's Func
  define(next, vars, value);
  std::vector<Expr> extents = carry.extents;
  if (carry.cache) // the rows the block writes: the caller's view
    extents[extents.size() - 2] = Expr();
  setBounds(next.output_buffer(), extents);
  // A chunk prefix [s, e] is written every block (every decoded step):
  // vectorised, its rows in parallel (not a cache's few rows, nor a
  // shifted row: a parallel loop of one task costs a thread pool call).
  next.vectorize(vars.back(), 16, TailStrategy::GuardWithIf);
  const Expr &rowExtent = extents[extents.size() - 2];
  const int64_t *rows =
      rowExtent.defined() ? Internal::as_const_int(rowExtent) : nullptr;
  if (rows && *rows > 1)
    next.parallel(vars[vars.size() - 2]);
}

Lowering::StreamCarry &
Lowering::addStreamCarry(const std::vector<Expr> &extents, bool cache) {
  std::string name = "stream_carry" + std::to_string(streamCarries.size());
  StreamCarry carry;
  carry.extents = extents;
  carry.cache = cache;
  carry.in = ImageParam(Float(32), int(extents.size()), name);
  carry.next = Func(name + "_next");
  setBounds(carry.in, carry.extents);
  if (cache) // rows [0, capacity); `next` its rows of the block
    carry.in.dim(1).set_min(0);
  streamCarries.push_back(carry);
  return streamCarries.back();
}

std::vector<Argument> Lowering::arguments() const {
  std::vector<Argument> args;
  for (const ImageParam &param : inputParams)
    args.push_back(param);
  if (streaming()) {
    args.push_back(streamOffset);
    for (const StreamCarry &carry : streamCarries)
      args.push_back(carry.in);
  }
  if (weightArena.defined())
    args.push_back(weightArena);
  for (const ImageParam &param : weightParams)
    args.push_back(param);
  return args;
}

/// `model.attn:12:7`, or the location as MLIR prints it.
static std::string locationText(mlir::Location loc) {
  if (auto file = loc->findInstanceOf<mlir::FileLineColLoc>())
    return (file.getFilename().str() + ":" + std::to_string(file.getLine()) +
            ":" + std::to_string(file.getColumn()));
  std::string text;
  llvm::raw_string_ostream os(text);
  os << loc;
  return os.str();
}

/// `'attn.dense' at model.attn:12:7`.
static std::string opAt(mlir::Operation *op) {
  return "'" + op->getName().getStringRef().str() + "' at " +
         locationText(op->getLoc());
}

void Lowering::addStoredStage(const Func &func, std::vector<Expr> extents) {
  if (!currentOp)
    return;
  StoredBuffer buffer;
  buffer.name = func.name();
  buffer.origin = "a stage of " + opAt(currentOp);
  buffer.extents = std::move(extents);
  storedStages.push_back({std::move(buffer), currentOp});
}

void Lowering::collectStoredBuffers(mlir::func::FuncOp func) {
  // Top-level op indices; a kernel's members take their kernel's.
  mlir::Block &body = func.getBody().front();
  llvm::DenseMap<mlir::Operation *, size_t> position;
  size_t end = 0;
  for (mlir::Operation &op : body)
    position[&op] = end++;
  auto topLevel = [&](mlir::Operation *op) {
    while (op->getBlock() != &body)
      op = op->getParentOp();
    return position.lookup(op);
  };
  // The last top-level op that reads `value`, following the values that
  // read it without being stored (views, inlined ops, a kernel's results)
  // or that are the same stage (an epilogue applied in a product's output
  // stage is an alias of the product).
  std::function<size_t(mlir::Value)> lastRead = [&](mlir::Value value) {
    auto self = values.find(value);
    std::string name =
        self != values.end() ? self->second.func.name() : std::string();
    mlir::Operation *producer = value.getDefiningOp();
    size_t last = producer ? topLevel(producer) : 0;
    for (mlir::OpOperand &use : value.getUses()) {
      mlir::Operation *user = use.getOwner();
      if (mlir::isa<mlir::func::ReturnOp>(user))
        return end; // the copy-out stages run last
      if (auto yield = mlir::dyn_cast<mlir::attn::KernelYieldOp>(user)) {
        mlir::Value result =
            yield->getParentOp()->getResult(use.getOperandNumber());
        last = std::max(last, lastRead(result));
        continue;
      }
      last = std::max(last, topLevel(user));
      for (mlir::Value read : user->getResults()) {
        auto it = values.find(read);
        if (it != values.end() &&
            (!it->second.materialized || it->second.func.name() == name))
          last = std::max(last, lastRead(read));
      }
    }
    return last;
  };
  // A product that writes its output (claimOutput) stores in the caller's
  // buffer, which the inputs and outputs count.
  std::set<std::string> seen;
  std::map<std::string, size_t> sharedStage; ///< storedIn -> its buffer
  for (const auto &[index, claimed] : claimedOutputs)
    seen.insert(claimed.first.name());
  func.walk<mlir::WalkOrder::PreOrder>([&](mlir::Operation *op) {
    if (mlir::isa<mlir::attn::WeightOp, mlir::attn::KernelOp>(op))
      return;
    for (mlir::Value result : op->getResults()) {
      auto it = values.find(result);
      if (it == values.end() || !it->second.materialized)
        continue;
      const HTensor &tensor = it->second;
      bool slice = !tensor.storedIn.empty();
      const std::string &name = slice ? tensor.storedIn : tensor.func.name();
      if (!seen.insert(name).second) {
        // A slice's stage lives while any slice is read (slices are
        // lowered, and walked, in block order).
        if (slice) {
          StoredBuffer &buffer = stored[sharedStage.at(name)];
          buffer.last = std::max(buffer.last, lastRead(result));
        }
        continue;
      }
      if (slice)
        sharedStage[name] = stored.size();
      stored.push_back({name, "the result of " + opAt(op),
                        slice ? tensor.storedExtents : tensor.extents,
                        topLevel(op), lastRead(result)});
    }
  });
  // An op's stages (FLASH's transposed keys) are read until the product
  // that computes its result in its row blocks, if one does.
  for (auto &[buffer, op] : storedStages) {
    buffer.first = topLevel(op);
    mlir::Operation *reader = storedUntil.lookup(op);
    buffer.last = reader ? topLevel(reader) : buffer.first;
    stored.push_back(buffer);
  }
}

} // namespace attnc::codegen
