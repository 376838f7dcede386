//===- ScheduleSpace.cpp - the legal schedules of an op on a target -------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements forEachSchedule: the schedule space a tuner searches,
// and the signatures that key a tuned schedule in a tuning database.
// For an op and a target it walks a grid of candidate points for the op's
// class (getScheduleShape) and yields those that the verifier accepts: the
// dialect's rules (ScheduleAttr::verifyParams, verifyScheduleForOp) and the
// target's budgets (verifyScheduleFor). The grid's bounds are documented at
// forEachSchedule in Passes.h; within them, every point the verifier accepts
// is yielded, and nothing else.
//
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dsl/IR/AttnOps.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"

#include <array>

using namespace mlir;
using namespace mlir::attn;

namespace {

/// The powers of two from `low` to `high`.
std::vector<int64_t> powersOf2(int64_t low, int64_t high) {
  std::vector<int64_t> values;
  for (int64_t v = low; v <= high; v *= 2)
    values.push_back(v);
  return values;
}

/// The divisors of `n` (n >= 1).
std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> values;
  for (int64_t d = 1; d <= n; ++d)
    if (n % d == 0)
      values.push_back(d);
  return values;
}

/// Walks the grid of one op. `yield` returns false to stop; so does every
/// walker here once it has.
class SpaceWalker {
public:
  SpaceWalker(Operation *op, const TargetModel &target,
              function_ref<bool(const ScheduleParams &)> yield)
      : op(op), target(target), yield(yield) {}

  void walk() {
    ScheduleShape shape = getScheduleShape(op);
    switch (shape.kind) {
    case ScheduleShape::None:
      return;
    case ScheduleShape::Inlined: {
      ScheduleParams p;
      p.compute = ComputeAt::inlined;
      offer(p);
      return;
    }
    case ScheduleShape::Product:
      target.isGpu() ? gpuTiles(Strategy::gemm, /*staged=*/true)
                     : cpuTiles(Strategy::gemm, 8, 8, kSplits, kRowTiles);
      break;
    case ScheduleShape::Reindex: {
      ScheduleParams p;
      p.compute = ComputeAt::inlined;
      if (!offer(p))
        return;
      [[fallthrough]]; // or stored, as a row-wise stage
    }
    case ScheduleShape::Rowwise:
      target.isGpu() ? gpuTiles(Strategy::loops, /*staged=*/false)
                     : cpuLoops();
      break;
    case ScheduleShape::Attention:
      target.isGpu() ? gpuAttention() : cpuAttention();
      break;
    }
    ScheduleParams naive; // the baseline (rejected on a GPU by the target)
    naive.strategy = Strategy::naive;
    offer(naive);
  }

private:
  /// split_k values tried for products: not split, or power-of-two blocks.
  static constexpr int64_t kSplits[] = {0,    16,   32,   64,   128,  256,
                                        512,  1024, 2048, 4096, 8192, 16384};
  /// Register tiles of rows per parallel task of a CPU GEMM (row_block /
  /// tile y); 0 = no row_block.
  static constexpr int64_t kRowTiles[] = {1, 4, kGemmRowTiles,
                                          kGemmEntryRowTiles};
  static constexpr int64_t kNoRowBlock[] = {0};
  /// Keys per block of blocked CPU attention (192: whole 4 x 6 vector
  /// tiles of 64 columns and 6 rows, the cost model's choice for softmax).
  static constexpr int64_t kKeyBlocks[] = {16, 32, 64, 128, 192, 256, 512};

  /// Yields `p` if the verifier accepts it; false once the walk must stop.
  bool offer(const ScheduleParams &p) {
    if (stopped)
      return false;
    auto emitError = [&] { return mlir::emitError(op->getLoc()); };
    accepted = succeeded(verifyScheduleForOp(op, p, emitError)) &&
               succeeded(verifyScheduleFor(p, target, emitError, op));
    if (!accepted)
      return true;
    stopped = !yield(p);
    return !stopped;
  }

  /// CPU vector widths: scalar, then powers of two up to the lanes.
  std::vector<int64_t> vectors() const {
    return powersOf2(1, target.vectorLanes);
  }

  /// CPU loops of a row-wise stage: tile x = vector * (1..8 vectors),
  /// vector 1 up to the lanes, tile y = 1..64 rows per iteration of the row
  /// loop (powers of two), serial or parallel rows. (Unrolling is for
  /// register tiles; these loops have none.)
  void cpuLoops() {
    for (int64_t vector : vectors())
      for (int64_t across = 1; across <= 8; ++across)
        for (int64_t rows : powersOf2(1, 64))
          for (bool parallel : {false, true}) {
            ScheduleParams p;
            p.vector = vector;
            p.tileX = vector * across;
            p.tileY = rows;
            p.parallel = parallel;
            if (!offer(p))
              return;
          }
  }

  /// CPU register tiles of `strategy`: tile x = vector * (1..maxAcross
  /// vectors), tile y in 1..maxRows, every unroll dividing them, each
  /// split_k of `splits`, row_block = tile y * each of `rowTiles` (0: none),
  /// serial or parallel rows; for gemm each staging of the operands.
  void cpuTiles(Strategy strategy, int64_t maxAcross, int64_t maxRows,
                ArrayRef<int64_t> splits, ArrayRef<int64_t> rowTiles) {
    for (int64_t vector : vectors())
      for (int64_t across = 1; across <= maxAcross; ++across)
        for (int64_t rows = 1; rows <= maxRows; ++rows)
          for (int64_t unrollX : divisors(across))
            for (int64_t unrollY : divisors(rows))
              for (int64_t split : splits)
                for (int64_t tiles : rowTiles)
                  for (bool parallel : {false, true}) {
                    ScheduleParams p;
                    p.strategy = strategy;
                    p.vector = vector;
                    p.tileX = vector * across;
                    p.tileY = rows;
                    p.unrollX = unrollX;
                    p.unrollY = unrollY;
                    p.splitK = split;
                    p.rowBlock = tiles * rows;
                    p.parallel = parallel;
                    if (!offer(p))
                      return;
                    if (strategy == Strategy::gemm && accepted &&
                        !offerStagings(p))
                      return;
                  }
  }

  /// The CPU staging variants of an accepted gemm point `p`: stage_lhs,
  /// pack_rhs, or both. Their rules only add to the point's (the op must
  /// allow them), so a rejected point has no accepted variant and is not
  /// varied.
  bool offerStagings(ScheduleParams p) {
    for (auto [stageLhs, packRhs] : {std::pair{true, false}, {false, true},
                                     {true, true}}) {
      p.stageLhs = stageLhs;
      p.packRhs = packRhs;
      if (!offer(p))
        return false;
    }
    return true;
  }

  /// GPU tiles of `strategy`: powers of two 1..64 per axis over every
  /// power-of-two thread count dividing them; products also with operand
  /// panels staged in shared memory (split_k 4..64).
  void gpuTiles(Strategy strategy, bool staged) {
    for (int64_t tileX : powersOf2(1, 64))
      for (int64_t tileY : powersOf2(1, 64))
        for (int64_t threadsX : powersOf2(1, tileX))
          for (int64_t threadsY : powersOf2(1, tileY)) {
            ScheduleParams p;
            p.strategy = strategy;
            p.tileX = tileX;
            p.tileY = tileY;
            p.gpuThreadsX = threadsX;
            p.gpuThreadsY = threadsY;
            if (!offer(p))
              return;
            if (!staged)
              continue;
            p.shared = true;
            for (int64_t split : powersOf2(4, 64)) {
              p.splitK = split;
              if (!offer(p))
                return;
            }
          }
  }

  /// CPU attention: one query row at a time (`rows`) or whole score
  /// matrices (`materialized`), each vectorised by every width, serial or
  /// parallel; and blocks of queries x keys (`blocked`): the register tiles
  /// of cpuTiles (up to 4 vectors x 8 rows) with blocks of 16..512 keys.
  void cpuAttention() {
    for (Strategy strategy : {Strategy::rows, Strategy::materialized})
      for (int64_t vector : vectors())
        for (bool parallel : {false, true}) {
          ScheduleParams p;
          p.strategy = strategy;
          p.vector = vector;
          p.parallel = parallel;
          if (!offer(p))
            return;
        }
    cpuTiles(Strategy::blocked, 4, 8, kKeyBlocks, kNoRowBlock);
  }

  /// GPU attention: one thread per output element (`rows`: the tiles of
  /// gpuTiles without staging), and `blocked` attention: tile x 16..256 value
  /// columns, tile y 16..64 queries, threads 8..16 per axis, 8..64 keys per
  /// step staged in shared memory.
  void gpuAttention() {
    gpuTiles(Strategy::rows, /*staged=*/false);
    for (int64_t tileX : powersOf2(16, 256))
      for (int64_t tileY : powersOf2(16, 64))
        for (int64_t threadsX : powersOf2(8, 16))
          for (int64_t threadsY : powersOf2(8, 16))
            for (int64_t keys : powersOf2(8, 64)) {
              ScheduleParams p;
              p.strategy = Strategy::blocked;
              p.tileX = tileX;
              p.tileY = tileY;
              p.gpuThreadsX = threadsX;
              p.gpuThreadsY = threadsY;
              p.splitK = keys;
              p.shared = true;
              if (!offer(p))
                return;
            }
  }

  Operation *op;
  const TargetModel &target;
  function_ref<bool(const ScheduleParams &)> yield;
  bool stopped = false;
  /// Whether the verifier accepted the last point offered.
  bool accepted = false;
};

} // namespace

void mlir::attn::forEachSchedule(
    Operation *op, const TargetModel &target,
    function_ref<bool(const ScheduleParams &)> yield) {
  // The verifier explains each rejected point; the walk only needs the
  // verdict.
  ScopedDiagnosticHandler silence(op->getContext(),
                                  [](Diagnostic &) { return success(); });
  SpaceWalker(op, target, yield).walk();
}

std::vector<ScheduleParams>
mlir::attn::enumerateSchedules(Operation *op, const TargetModel &target) {
  std::vector<ScheduleParams> space;
  forEachSchedule(op, target, [&](const ScheduleParams &p) {
    space.push_back(p);
    return true;
  });
  return space;
}

//===----------------------------------------------------------------------===//
// Tuning signatures
//===----------------------------------------------------------------------===//

bool mlir::attn::isTunable(Operation *op) {
  ScheduleAttr schedule = ScheduleAttr::lookup(op);
  // An inlined member of a kernel has no loops to tune; a chunk's inlining
  // is one of its choices.
  return schedule &&
         op->getDiscardableAttr(ScheduleAttr::getScheduleAttrName()) &&
         (schedule.getCompute() != ComputeAt::inlined ||
          getScheduleShape(op).kind == ScheduleShape::Reindex);
}

Operation *mlir::attn::tuningUnit(Operation *op) {
  if (auto kernel = dyn_cast_or_null<KernelOp>(op->getParentOp()))
    return kernel;
  return op;
}

/// The text that tuningSignature hashes: every op of `unit` in order with
/// its name, attributes (sorted, without schedules and layer names),
/// operands (a value made inside the unit by its number, one from outside
/// by its first-use number and type) and result types.
static std::string signatureText(Operation *unit) {
  std::string text;
  llvm::raw_string_ostream os(text);
  llvm::DenseMap<Value, unsigned> inside, outside;
  auto number = [](llvm::DenseMap<Value, unsigned> &map, Value value) {
    return map.try_emplace(value, map.size()).first->second;
  };
  unit->walk<WalkOrder::PreOrder>([&](Operation *op) {
    os << op->getName() << "(";
    for (Value operand : op->getOperands()) {
      if (inside.count(operand))
        os << "%" << inside[operand] << ",";
      else
        os << "^" << number(outside, operand) << ":" << operand.getType()
           << ",";
    }
    os << "){";
    for (NamedAttribute attr : op->getAttrDictionary()) {
      if (attr.getName() == ScheduleAttr::getScheduleAttrName() ||
          attr.getName() == "layer_name")
        continue;
      os << attr.getName().strref() << "=" << attr.getValue() << ";";
    }
    os << "}->(";
    for (Value result : op->getResults())
      os << "%" << number(inside, result) << ":" << result.getType() << ",";
    os << ")";
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments())
          os << "[%" << number(inside, arg) << ":" << arg.getType() << "]";
    os << "\n";
  });
  return os.str();
}

std::string mlir::attn::tuningSignature(Operation *op) {
  std::string text = signatureText(tuningUnit(op));
  std::array<uint8_t, 32> hash = llvm::SHA256::hash(
      llvm::ArrayRef<uint8_t>(reinterpret_cast<const uint8_t *>(text.data()),
                              text.size()));
  return llvm::toHex(llvm::ArrayRef<uint8_t>(hash).take_front(12),
                     /*LowerCase=*/true);
}

std::string mlir::attn::tuningLabel(Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << op->getName().getStringRef();
  if (op->getNumResults() == 1)
    if (auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType())) {
      os << " ";
      llvm::interleave(
          type.getShape(), os,
          [&](int64_t size) {
            if (ShapedType::isDynamic(size))
              os << "?";
            else
              os << size;
          },
          "x");
    }
  if (tuningUnit(op) != op)
    os << " (kernel)";
  return os.str();
}
