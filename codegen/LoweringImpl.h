//===- LoweringImpl.h - shared state of the attn -> Halide lowering -*- C++ -*-===//
//
// This file declares the private pieces the per-op-family lowering files
// share: HTensor (a Halide Func with its extents in MLIR axis order), the
// index helpers that reverse MLIR's outermost-first order into Halide's
// innermost-first order, and the Lowering class that maps SSA values to
// HTensors.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_LOWERINGIMPL_H
#define ATTNC_CODEGEN_LOWERINGIMPL_H

#include "codegen/Codegen.h"
#include "codegen/GpuLoops.h"

#include "dsl/IR/AttnOps.h"

#include "llvm/ADT/DenseMap.h"

#include <functional>
#include <map>
#include <optional>

namespace attnc::codegen {

using Index = std::vector<Halide::Expr>; ///< MLIR order, outermost first.

/// A tensor value: a Func indexed innermost-first, with its extents in MLIR
/// order (constants, or expressions of the input buffers' extents).
struct HTensor {
  Halide::Func func;
  std::vector<Halide::Expr> extents;
  bool materialized = false; ///< Has its own schedule (not inlined).
  /// A slice of a stage stored for several values at once (sibling RoPEs'
  /// heads): that stage's Func name and extents (MLIR order). The memory
  /// check counts it once, alive from its first slice's op to the last
  /// read of any slice.
  std::string storedIn;
  std::vector<Halide::Expr> storedExtents;

  size_t rank() const { return extents.size(); }
  /// Calls the Func at an MLIR-order index.
  Halide::Expr at(const Index &index) const;
};

/// Fresh pure vars for a rank-`rank` Func, in MLIR order.
std::vector<Halide::Var> makeVars(size_t rank, const std::string &prefix);
/// Converts MLIR-order vars to an Index.
Index toIndex(const std::vector<Halide::Var> &vars);
/// `index` followed by `tail` (MLIR order).
Index withTail(Index index, std::initializer_list<Halide::Expr> tail);
/// Calls `func` (defined over MLIR-order vars) at an MLIR-order index.
Halide::Expr callAt(const Halide::Func &func, const Index &index);
/// Defines `func(vars...) = value` with vars in MLIR order.
void define(Halide::Func &func, const std::vector<Halide::Var> &vars,
            const Halide::Expr &value);

/// Fuses the outermost `count` vars of `stage` (MLIR order) into one loop
/// and returns it (for a parallel loop over all rows of every batch entry,
/// or one GPU grid axis).
Halide::Var fuseOuter(Halide::Stage stage, const std::vector<Halide::Var> &vars,
                      size_t count);

/// Splits `total`'s update, a reduction over `r` along a row, into
/// `vector` lanes (rfactor): a stage of one partial result per lane, which
/// total's update then combines (a serial reduction would wait on each
/// op's latency). `place` schedules `total` and returns the loop of its
/// update where the lanes are computed (vectorised).
void reduceInLanes(Halide::Func total, const Halide::RDom &r, int vector,
                   const std::function<Halide::LoopLevel()> &place);

/// The activation of a unary attn op applied to `x`, or an undefined Expr
/// when `op` is not an activation.
Halide::Expr applyActivation(mlir::Operation *op, const Halide::Expr &x);
/// a / b, and 0 where b == 0 (attn.div_or_zero: normalised linear
/// attention's row with no weighted key, docs/dsl.md §4.8).
Halide::Expr divideOrZero(const Halide::Expr &a, const Halide::Expr &b);

/// The TensorInfo of a tensor of `type` named `name`, with the runtime dim
/// names `dims` (an `attn.dims` array; null: none).
TensorInfo describe(const std::string &name, mlir::RankedTensorType type,
                    mlir::ArrayAttr dims);
/// Argument `index` of `func` as a model input, or failure after an error
/// at `func` when it is not an f32 tensor.
mlir::FailureOr<TensorInfo> describeArgument(mlir::func::FuncOp func,
                                             unsigned index);
/// Result `index` of `func` as a model output.
TensorInfo describeResult(mlir::func::FuncOp func, unsigned index);

/// What a kernel lowered from `func` depends on, as text for the compile
/// cache's key: the function as printed (without locations) and `options`.
std::string kernelSource(mlir::func::FuncOp func, const CodegenOptions &options);

/// A buffer the pipeline allocates while it runs: a materialised op result,
/// with the op it comes from for messages.
struct StoredBuffer {
  std::string name;                  ///< The Halide Func's name.
  /// `the result of 'attn.dense' at model.attn:12:7`, or `a stage of
  /// 'attn.attention' at ...`.
  std::string origin;
  std::vector<Halide::Expr> extents; ///< MLIR order, as HTensor::extents.
  /// Its lifetime in the function's top-level ops (an attn.kernel counts as
  /// one): the op that stores it and the last that reads it, through views
  /// and inlined ops (a result read by the copy-out stage lives to the end).
  size_t first = 0, last = 0;
};

/// Lowers the ops of one function, in order.
class Lowering {
public:
  Lowering(const CodegenOptions &options) : options(options) {}

  mlir::LogicalResult lowerFunction(mlir::func::FuncOp func);

  /// The function as the compile cache keys its kernel (kernelSource), and
  /// a 64-bit hash of it; set when lowerFunction starts.
  std::string source;
  uint64_t sourceHash = 0;

  std::vector<Halide::ImageParam> inputParams, weightParams;
  /// The kernel's weights in one buffer, decided when lowerFunction starts
  /// (arena.used()): each weight is read from `weightArena` at its offset
  /// (WeightArena), and weightParams is empty. Halide checks each buffer
  /// argument (not null, its type, dims and extents), and its simplifier then
  /// carries every such fact over the whole statement in each of its passes:
  /// one buffer instead of FLASH's nine takes a fifth off a layer's lowering.
  Halide::ImageParam weightArena;
  WeightArena arena;
  /// The pipeline's arguments in call order: inputs (with a streamed
  /// kernel's offset and carries after the model's), then weights (their
  /// arena, or one buffer each; the outputs follow them in the compiled
  /// function: the model's, then the carries' `next`).
  std::vector<Halide::Argument> arguments() const;
  std::vector<TensorInfo> inputs, weights, outputs;
  std::vector<Halide::Func> outputFuncs;
  /// Each output's extents (MLIR order), as HTensor::extents.
  std::vector<std::vector<Halide::Expr>> outputExtents;
  /// Per output: its copy-out stage, computed after every other stage, reads
  /// only a buffer the kernel stores itself (the returned value is a
  /// materialized op result, on a CPU), or the product that writes it
  /// directly (claimOutput) reads the arguments only at the element it
  /// writes; and no stream carry is computed after it. Its output buffer
  /// may then be an input's memory that nothing reads after the kernel
  /// (Step::inPlaceArg).
  std::vector<bool> outputAfterInputs;
  /// Materialised op results in op order, then addStoredStage's stages
  /// (for the resource check).
  std::vector<StoredBuffer> stored;

  /// With options.streamRows (Stream.h), the inputs and outputs of one
  /// block beyond the model's: `streamOffset`, an f32[1] holding the
  /// block's first row (RoPE's positions start there), and the carries
  /// from block to block, zero before the first: per causal chunk_scan the
  /// sum of the earlier blocks' chunk states [batch..., s, e] (decoding:
  /// and the current chunk's partial state, of the same shape), per
  /// token_shift the previous block's last row [batch..., 1, dims]; each
  /// read in `in` and written for the next block in `next`.
  ///
  /// A `cache` carry (decoding's key/value cache of attention over the
  /// whole sequence) holds rows [0, capacity) of a tensor, its capacity the
  /// caller's (its extent undefined in `extents`): the kernel reads the
  /// rows before the block from `in`, and `next` is the block's own rows
  /// [offset, offset + rows), which the caller passes as a view of the same
  /// memory (written in place, never swapped). The kernel's `in` covers
  /// the block's rows too; what it reads of them is never used (a select
  /// takes the block's own keys there), though it may read them while
  /// `next` writes them.
  ///
  /// Decoding's chunk caches are `cache` carries of C static rows: the
  /// rows of the current chunk of a chunked attention's keys or values.
  /// `in` is all C rows, and `next` the rows [offset % C, offset % C +
  /// rows) the block writes (the step kernel; the block kernel writes its
  /// last chunk's rows [0, C)).
  ///
  /// A `total` carry (a chunk_scan total: non-causal FLASH) is the sum of
  /// the whole sequence's chunk states, which a first sweep over the
  /// blocks computes (CodegenOptions::streamTotals: `next` is `in` plus
  /// the block's states) before the second sweep reads it in every block
  /// (`next` is `in`). `perRow`: the second sweep reads the total divided
  /// by the sequence's rows (chunk_scan's length_of), which the caller
  /// divides between the sweeps (a block does not know the length).
  struct StreamCarry {
    Halide::ImageParam in;
    Halide::Func next;
    /// MLIR order; the last two static but a capacity cache's rows.
    std::vector<Halide::Expr> extents;
    bool cache = false;
    bool total = false;
    bool perRow = false;
    /// A cache of the decoder's capacity (its rows not static).
    bool sizedByCapacity() const {
      return cache && !extents[extents.size() - 2].defined();
    }
  };
  Halide::ImageParam streamOffset;
  std::vector<StreamCarry> streamCarries;
  /// Declares a carry of `extents`: its input, bounded exactly, and its
  /// `next`, which the caller defines with defineCarryNext (the reference
  /// is valid until the next carry is added).
  StreamCarry &addStreamCarry(const std::vector<Halide::Expr> &extents,
                              bool cache = false);
  /// Defines `carry.next(vars) = value` and bounds it exactly to the
  /// carry's extents: unbounded, bounds inference sized what `next` reads
  /// by the square of the block (a chunk_scan's projections).
  static void defineCarryNext(const StreamCarry &carry,
                              const std::vector<Halide::Var> &vars,
                              const Halide::Expr &value);
  bool streaming() const { return options.streamRows > 0; }
  /// Streamed: the function is one a program calls, and checkStreamable
  /// accepted the model with it (lowerFunction does not check it alone:
  /// it has no sequence dim of its own).
  bool streamChecked = false;
  /// The position of row 0 of the rows a stage sees: streamOffset's value
  /// when streaming, else 0.
  Halide::Expr rowOffset() const;
  const CodegenOptions &options;

  const HTensor &get(mlir::Value value) const { return values.at(value); }
  bool has(mlir::Value value) const { return values.count(value); }
  void set(mlir::Value value, HTensor tensor) { values[value] = std::move(tensor); }
  /// Extents of a value's tensor type, resolved against known extents.
  std::vector<Halide::Expr> extentsLike(mlir::Value value,
                                        const std::vector<Halide::Expr> &from);

  /// Applies the schedule of the op being lowered (schedule()) to its
  /// result stage `tensor`: nothing of its own under `compute = inline`,
  /// else computed at root with the loops the attribute gives (see
  /// applySchedule). Returns the loop level of one row, for per-row scratch
  /// stages (the root on a GPU). With `fuseRows` false only the row var is
  /// parallel (stages whose reduction domains have data-dependent
  /// predicates keep their batch loops apart, which Halide's bounds
  /// inference needs). A `period` > 0 (CPU) first splits the innermost var
  /// into unrolled loops of `period` elements, inside which the tile and
  /// vector apply: a definition that selects on which period an element
  /// is in (rope's halves) then compiles to one branch per loop. With
  /// `leadingHeads`, vars[0] indexes stages of one shape computed together
  /// (sibling RoPEs' heads): on a CPU its loop runs inside each tile of
  /// rows, so that every head reads the tile's input from cache.
  Halide::LoopLevel scheduleElementwise(HTensor &tensor,
                                        const std::vector<Halide::Var> &vars,
                                        bool fuseRows = true, int period = 0,
                                        bool leadingHeads = false);
  /// Applies an `attn.schedule` attribute to a stage computed at root (see
  /// AttnAttrs.td): `strategy = naive` serial scalar loops; on a GPU the
  /// tile over gpu_threads; on a CPU the innermost var split by tile x and
  /// vectorised (within `period`s, see scheduleElementwise), tile y rows
  /// per iteration of the row loop, which is parallel when the attribute
  /// says so (`leadingHeads`: see scheduleElementwise). Returns the loop
  /// level of one row.
  Halide::LoopLevel applySchedule(Halide::Func func,
                                  const std::vector<Halide::Var> &vars,
                                  mlir::attn::ScheduleAttr attr, bool fuseRows,
                                  int period = 0, bool leadingHeads = false);
  /// Declares an internal stage `func` of the op being lowered (a
  /// transposed operand, row statistics, a table, a state) with MLIR-order
  /// `vars`. A family's lowering defines its Funcs and declares them; the
  /// schedules are applied after the definitions, when the family returns
  /// (lowerOp), from internalSchedule() as of the declaration: the stage is
  /// computed at root with the op's gpu_threads on a GPU (one axis: all of
  /// them along it), on a CPU its vector along the innermost var and its
  /// parallel flag on the rows, nothing more under naive. With `perRow` the
  /// stage is one value per row (a reduction): every var is a row and
  /// nothing is vectorised. `tail` is the vector loop's tail strategy:
  /// RoundUp only for a stage that reads nothing out of bounds when
  /// computed past its extent (a table of its indices). With `rowBlocks` a
  /// parallel task takes kRowsPerTask rows, not one (rows of little work:
  /// RoPE's tables, a row of 64 values).
  void addInternalStage(
      Halide::Func func, std::vector<Halide::Var> vars, bool perRow = false,
      Halide::TailStrategy tail = Halide::TailStrategy::GuardWithIf,
      bool rowBlocks = false);
  /// Declares an internal stage that transposes the last two axes of its
  /// input (vars: batch..., the input's column, the input's row). Scheduled
  /// as addInternalStage, except on a CPU with a vector: one vector of
  /// input rows at a time (those rows stay in L1) sweeps every column, and
  /// the vectors of rows are the parallel tasks. Row-major, each vector
  /// gathers its elements from rows far apart in memory and every column
  /// reloads them.
  void addTransposeStage(Halide::Func func, std::vector<Halide::Var> vars);
  /// Counts a whole-tensor stage that the current op's lowering adds
  /// (transposed keys, packed values), of `extents` (MLIR order), among the
  /// stored buffers of the resource check: alive while the op runs.
  void addStoredStage(const Halide::Func &func,
                      std::vector<Halide::Expr> extents);
  /// Whether per-row sums (addRowSum) run in vector lanes: on a CPU under a
  /// schedule with a vector, as internalSchedule() gives.
  bool vectorRowSums() const;
  /// Declares an internal per-row stage `total`: a pure definition of 0
  /// and one update adding a term over `r`, the reduction along the row.
  /// Scheduled as a per-row stage of addInternalStage, with the sum split
  /// into vector lanes (rfactor) that are added at the end of each row (a
  /// serial sum would wait on each add's latency). Only where
  /// vectorRowSums(). With `product`, computed in its row blocks instead
  /// (computeInRowBlocks), the rows of each block in turn.
  void addRowSum(Halide::Func total, std::vector<Halide::Var> rowVars,
                 Halide::RDom r, mlir::Operation *product = nullptr);
  /// Declares the update of an internal scan `func` (a prefix over chunks)
  /// whose innermost var is `col` and whose row var is `row`; `order`
  /// (innermost first), if given, is its loop order on a CPU. Scheduled
  /// like addInternalStage: the gpu_threads over (col, row) on a GPU, on a
  /// CPU `col` vectorised and `row` parallel when the schedule says so.
  void addScanUpdate(Halide::Func func, Halide::Var col, Halide::Var row,
                     std::vector<Halide::VarOrRVar> order = {});
  /// The op being lowered (its schedule and uses decide fusion).
  mlir::Operation *currentOp = nullptr;
  /// addStoredStage's stages and their ops, for collectStoredBuffers.
  std::vector<std::pair<StoredBuffer, mlir::Operation *>> storedStages;

  /// The `attn.schedule` of the stage being lowered: the op's, or a
  /// function result's for the stage that copies it out. Never null while
  /// a scheduled stage (mlir::attn::needsSchedule) is lowered: lowerOp
  /// rejects an op without one.
  mlir::attn::ScheduleAttr schedule() const { return currentSchedule; }
  /// The schedule whose loops the internal stages of the op being lowered
  /// take (addInternalStage): the op's, or for a member computed inline in
  /// an attn.kernel (a norm in a product's prologue) its anchor's.
  mlir::attn::ScheduleAttr internalSchedule() const { return ownerSchedule; }

  /// Fusion inside an attn.kernel (attn-fuse groups, attn-tile marks the
  /// members computed in the anchor's loops `compute = inline`): the user
  /// of a product that its output stage applies, an activation or a
  /// residual add, or null. The product's lowering makes that user an
  /// alias of the product (aliasTo).
  mlir::Operation *epilogueOf(mlir::Operation *producer) const;

  /// Fusion across ops: `op` lowers to `value`'s tensor instead of its own
  /// definition, because the stage of `value` computes it too (a product's
  /// epilogue, or a sum one of whose terms a stage absorbed; that term's
  /// stage is then read by nothing and never computed).
  void aliasTo(mlir::Operation *op, mlir::Value value) {
    aliases[op] = value;
  }

  /// Fusion into a consumer's loops: `stage` is computed in each row block
  /// of `product`, which reads it through its staged left operand. FLASH's
  /// attention accumulators in its output projection (the attention's own
  /// result is then a view of `stage` and never stored; lowerTiledAttention),
  /// with `tasksOverBatch`: the product's tasks are then the row blocks of
  /// every batch entry, as the attention's were. A norm's row statistics in
  /// the projection that reads the norm (lowerNorms). The product's
  /// lowering takes them once (takeRowBlockStages) and computes them at its
  /// row-block loop.
  void computeInRowBlocks(mlir::Operation *product, Halide::Func stage,
                          bool tasksOverBatch) {
    RowBlockStages &stages = rowBlockStages[product];
    stages.funcs.push_back(stage);
    stages.tasksOverBatch |= tasksOverBatch;
    storedUntil[currentOp] = product;
  }
  struct RowBlockStages {
    std::vector<Halide::Func> funcs;
    bool tasksOverBatch = false;
  };
  RowBlockStages takeRowBlockStages(mlir::Operation *product) {
    auto it = rowBlockStages.find(product);
    if (it == rowBlockStages.end())
      return {};
    RowBlockStages stages = std::move(it->second);
    rowBlockStages.erase(it);
    return stages;
  }

  /// A returned product written straight into its output buffer, with no
  /// copy-out stage: the Func of the output that `value` is (named after
  /// the output; the product defines it, and it becomes the pipeline's
  /// output), or nothing when the value must be copied out: `value` is not
  /// returned, or is returned twice or read by another op too, or another
  /// stage claimed its output, or the pipeline is for a GPU, a decoding
  /// step or an autoscheduler. The caller asks only for a stage that can
  /// be an output (a blocked CPU product whose tiles cover its columns:
  /// GemmTile::onCpu, GemmTile::coversColumns).
  /// `afterInputs`, called once the output is claimed, is the output's
  /// outputAfterInputs: whether the stage reads the function's arguments
  /// only at the element it writes (readsNoArgument), so that the output
  /// may take an input's memory.
  std::optional<Halide::Func>
  claimOutput(mlir::Value value, llvm::function_ref<bool()> afterInputs);
  /// Whether computing `value` reads no argument of the function, except
  /// through stored results (materialised op results, weights).
  bool readsNoArgument(mlir::Value value) const;

  /// cos and sin of the RoPE angles p * base^(-i/half), indexed (i, p);
  /// built once per (base, half).
  std::pair<Halide::Func, Halide::Func> ropeTables(double base, int half);

  /// How GPU loops and shared stages are realised (device or host).
  GpuLoops gpuLoops() const { return GpuLoops(options.gpuOnHost); }

  /// Whether per-row scratch stages can be computed at a row of their
  /// consumer (CPU); on GPU they are inlined instead.
  bool rowScratch() const { return !options.gpu; }

  /// Whether one of Halide's autoschedulers schedules the pipeline
  /// (CodegenOptions::autoscheduler): every schedule step of codegen's own
  /// (compute levels, loops, memoization) is then skipped, as those
  /// autoschedulers ask of the pipelines they are given.
  bool autoscheduled() const { return !options.autoscheduler.empty(); }

private:
  mlir::LogicalResult lowerOp(mlir::Operation *op);
  /// Dispatches `op` to its family's lowering (one TypeSwitch).
  mlir::LogicalResult lowerFamily(mlir::Operation *op);
  /// Fills `stored` from the lowered values of `func`.
  void collectStoredBuffers(mlir::func::FuncOp func);

  /// See schedule() and internalSchedule().
  mlir::attn::ScheduleAttr currentSchedule, ownerSchedule;
  /// The internal stages' schedules, applied after the op's definitions.
  std::vector<std::function<void()>> pendingSchedules;
  void scheduleInternal(mlir::attn::ScheduleAttr attr, Halide::Func func,
                        const std::vector<Halide::Var> &vars, bool perRow,
                        Halide::TailStrategy tail, bool transpose,
                        bool rowBlocks = false);
  /// Whether per-row statistics and stages run in parallel tasks of rows.
  bool parallelRowStats(mlir::attn::ScheduleAttr attr) const;
  void scheduleRowSum(mlir::attn::ScheduleAttr attr, Halide::Func total,
                      const std::vector<Halide::Var> &rowVars,
                      const Halide::RDom &r, bool inRowBlocks);
  void scheduleScan(mlir::attn::ScheduleAttr attr, Halide::Func func,
                    const Halide::Var &col, const Halide::Var &row,
                    const std::vector<Halide::VarOrRVar> &order);
  llvm::DenseMap<mlir::Value, HTensor> values;
  /// See claimOutput: per value returned once and read by nothing else
  /// (and the value an attn.kernel yields as such a result) its output
  /// index, each output's name, and the outputs claimed (index -> stage,
  /// afterInputs).
  llvm::DenseMap<mlir::Value, unsigned> returnedAt;
  std::vector<std::string> outputNames;
  std::map<unsigned, std::pair<Halide::Func, bool>> claimedOutputs;
  /// See aliasTo.
  llvm::DenseMap<mlir::Operation *, mlir::Value> aliases;
  /// See computeInRowBlocks: the stages per product, and the product until
  /// which the stored stages of the op that handed it over are read.
  llvm::DenseMap<mlir::Operation *, RowBlockStages> rowBlockStages;
  llvm::DenseMap<mlir::Operation *, mlir::Operation *> storedUntil;
  std::map<std::pair<double, int>, std::pair<Halide::Func, Halide::Func>>
      ropeCache;
};

// Per-family lowerings, one file each; Lowering::lowerOp dispatches each op
// to its family by type (one TypeSwitch). Each returns failure after
// emitting a diagnostic.
mlir::LogicalResult lowerElementwise(Lowering &lowering, mlir::Operation *op);
mlir::LogicalResult lowerShapeOps(Lowering &lowering, mlir::Operation *op);
mlir::LogicalResult lowerNorms(Lowering &lowering, mlir::Operation *op);
mlir::LogicalResult lowerMatmul(Lowering &lowering, mlir::Operation *op);
mlir::LogicalResult lowerAttention(Lowering &lowering, mlir::Operation *op);
mlir::LogicalResult lowerLinearAttention(Lowering &lowering,
                                         mlir::Operation *op);
mlir::LogicalResult lowerChunked(Lowering &lowering, mlir::Operation *op);

} // namespace attnc::codegen

#endif // ATTNC_CODEGEN_LOWERINGIMPL_H
