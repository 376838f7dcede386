//===- Lowering.cpp - attn dialect to Halide: the function walk -----------===//
//
// This file implements the walk over one model function: inputs become
// ImageParams with runtime extents, `attn.weight`s become ImageParams named
// after the weight, every op is handed to its family's lowering (one file
// per family), and the returned values become the pipeline's outputs. It
// also holds ModelPipeline and the target parser.
//
//===----------------------------------------------------------------------===//
#include "codegen/LoweringImpl.h"
#include "codegen/Aot.h"
#include "codegen/Resources.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <utility>

namespace attnc::codegen {

using namespace Halide;

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

static TensorInfo describe(const std::string &name, mlir::RankedTensorType type,
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
                                       bool fuseRows) {
  mlir::attn::ScheduleAttr attr = schedule();
  if (attr && attr.getCompute() == mlir::attn::ComputeAt::inlined)
    return LoopLevel::inlined(); // computed inside its kernel's anchor
  tensor.materialized = true;
  if (vars.empty()) { // a scalar: no loops to schedule
    tensor.func.compute_root();
    return LoopLevel::root();
  }
  assert(attr && "lowerOp admits no scheduled stage without a schedule");
  return applySchedule(tensor.func, vars, attr, fuseRows);
}

/// The loop level of one row of `func` under the naive schedule: the
/// second innermost var (or the root for one var).
static LoopLevel naiveRowLevel(Func func, const std::vector<Var> &vars) {
  return vars.size() >= 2 ? LoopLevel(func, vars[vars.size() - 2])
                          : LoopLevel::root();
}

LoopLevel Lowering::applySchedule(Func func, const std::vector<Var> &vars,
                                  mlir::attn::ScheduleAttr attr, bool fuseRows) {
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
  Var rows = fuseRows ? fuseOuter(func, vars, vars.size() - 1)
                      : vars[vars.size() - 2];
  if (attr.getParallel())
    func.parallel(rows);
  return LoopLevel(func, rows);
}

void Lowering::addInternalStage(Func func, std::vector<Var> vars, bool perRow,
                                TailStrategy tail) {
  mlir::attn::ScheduleAttr attr = internalSchedule();
  assert(attr && "internal stages belong to a scheduled op");
  pendingSchedules.push_back(
      [this, attr, func, vars = std::move(vars), perRow, tail] {
        scheduleInternal(attr, func, vars, perRow, tail);
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
                                TailStrategy tail) {
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
    // Per-row stages: every var is a row.
    Var rows = fuseOuter(func, vars, vars.size());
    if (attr.getParallel())
      func.parallel(rows);
    return;
  }
  if (attr.getVector() > 1)
    func.vectorize(vars.back(), int(attr.getVector()), tail);
  Var rows = fuseOuter(func, vars, vars.size() - 1);
  if (attr.getParallel())
    func.parallel(rows);
}

void Lowering::scheduleScan(mlir::attn::ScheduleAttr attr, Func func,
                            const Var &col, const Var &row,
                            const std::vector<VarOrRVar> &order) {
  if (attr.getStrategy() == mlir::attn::Strategy::naive)
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
  if (!producer || !mlir::attn::isProduct(producer) ||
      !producer->getResult(0).hasOneUse())
    return nullptr;
  mlir::Operation *user = *producer->getResult(0).getUsers().begin();
  // A member of the product's own kernel that attn-tile inlined.
  return scheduledInline(user) &&
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
  // An activation or residual add that a product applies in its output
  // stage (attn-fuse's epilogue) is an alias of the product.
  for (mlir::Value operand : op->getOperands())
    if (mlir::Operation *producer = operand.getDefiningOp();
        producer && epilogueOf(producer) == op) {
      set(op->getResult(0), get(operand));
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
            attn::DivOp, attn::PowOp, attn::NegOp, attn::SiluOp, attn::GeluOp,
            attn::ReluOp, attn::SigmoidOp, attn::ExpOp, attn::TanhOp,
            attn::SqrtOp, attn::ScaleOffsetOp>(family(lowerElementwise))
      .Case<attn::SplitOp, attn::TransposeOp, attn::RowOp>(
          family(lowerShapeOps))
      .Case<attn::LayerNormOp, attn::RmsNormOp, attn::ScaleNormOp,
            attn::RopeOp>(family(lowerNorms))
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

mlir::LogicalResult Lowering::lowerFunction(mlir::func::FuncOp func) {
  if (mlir::failed(checkStaticExtents(func)))
    return mlir::failure();
  // Inputs: one ImageParam each, extents from the buffer at run time.
  for (auto [index, arg] : llvm::enumerate(func.getArguments())) {
    auto type = mlir::dyn_cast<mlir::RankedTensorType>(arg.getType());
    if (!type || !type.getElementType().isF32())
      return func.emitError() << "code generation supports f32 tensors only, "
                                 "but input "
                              << index << " is " << arg.getType();
    auto name = func.getArgAttrOfType<mlir::StringAttr>(index, "attn.name");
    auto dims = func.getArgAttrOfType<mlir::ArrayAttr>(index, "attn.dims");
    TensorInfo info = describe(name ? name.str() : "arg" + std::to_string(index),
                               type, dims);
    ImageParam param(Float(32), type.getRank(),
                     paramName("in", index, info.name));
    // Buffers start at 0 (the JIT and the AOT wrapper make them so): index
    // arithmetic then keeps its alignment (tiles, packed panels).
    for (int d = 0; d < type.getRank(); ++d)
      param.dim(d).set_min(0);
    HTensor tensor;
    tensor.func = param;
    for (int64_t i = 0; i < type.getRank(); ++i)
      tensor.extents.push_back(type.isDynamicDim(i)
                                   ? param.dim(type.getRank() - 1 - i).extent()
                                   : Expr(int(type.getDimSize(i))));
    tensor.materialized = true;
    inputParams.push_back(param);
    inputs.push_back(info);
    params[arg] = param;
    set(arg, tensor);
  }

  std::map<std::string, std::pair<HTensor, ImageParam>> weightByName;
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
        ImageParam param(Float(32), type.getRank(),
                         paramName("w", weightParams.size(), name));
        for (int d = 0; d < type.getRank(); ++d)
          param.dim(d).set_min(0);
        HTensor tensor;
        tensor.func = param;
        for (int64_t size : type.getShape())
          tensor.extents.push_back(Expr(int(size)));
        tensor.materialized = true;
        weightParams.push_back(param);
        weights.push_back(describe(name, type, nullptr));
        it = weightByName.emplace(name, std::make_pair(tensor, param)).first;
      }
      set(weight, it->second.first);
      params[weight] = it->second.second;
      continue;
    }
    if (auto ret = mlir::dyn_cast<mlir::func::ReturnOp>(op)) {
      for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
        const HTensor &result = get(value);
        auto type = mlir::cast<mlir::RankedTensorType>(value.getType());
        auto name = func.getResultAttrOfType<mlir::StringAttr>(index, "attn.name");
        auto dims = func.getResultAttrOfType<mlir::ArrayAttr>(index, "attn.dims");
        outputs.push_back(describe(
            name ? name.str() : "out" + std::to_string(index), type, dims));
        Func out(argumentName("out", index, outputs.back().name));
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
        if (externStages.erase(result.func.name())) {
          // A layer kernel's result: its extern stage writes the output
          // buffer itself (no copy of b * n * d floats per model).
          out = result.func;
        } else {
          std::vector<Var> vars = makeVars(result.rank(), "o");
          define(out, vars, result.at(toIndex(vars)));
          HTensor wrapped{out, result.extents};
          scheduleElementwise(wrapped, vars);
        }
        for (int d = 0; d < out.dimensions(); ++d)
          out.output_buffer().dim(d).set_min(0);
        outputFuncs.push_back(out);
      }
      continue;
    }
    if (mlir::isa<mlir::arith::ConstantOp>(op))
      continue; // scalar constants are read where a score region uses them
    if (auto call = mlir::dyn_cast<mlir::func::CallOp>(op)) {
      if (mlir::failed(lowerCall(call)))
        return mlir::failure();
      continue;
    }
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

Lowering::~Lowering() = default;

std::string Lowering::paramName(const std::string &prefix, size_t index,
                                const std::string &name) const {
  if (!orderedParamNames)
    return argumentName(prefix, index, name);
  char ordinal[16]; // "k0003_": sorts as the argument order
  std::snprintf(ordinal, sizeof ordinal, "k%04zu_",
                inputParams.size() + weightParams.size());
  return ordinal + cIdentifier(name);
}

std::vector<Argument> LayerKernel::arguments() const {
  std::vector<Argument> args;
  for (const ImageParam &param : lowering.inputParams)
    args.push_back(param);
  for (const ImageParam &param : lowering.weightParams)
    args.push_back(param);
  args.push_back(Argument("__user_context", Argument::InputScalar, Handle(),
                          0, ArgumentEstimates{}));
  return args;
}

mlir::LogicalResult Lowering::lowerCall(mlir::func::CallOp call) {
  auto callee = mlir::SymbolTable::lookupNearestSymbolFrom<mlir::func::FuncOp>(
      call, call.getCalleeAttr());
  auto layer = call->getAttrOfType<mlir::StringAttr>(
      mlir::attn::AttnDialect::getLayerAttrName());
  if (!callee || callee.isExternal() || !layer || call.getNumResults() != 1)
    return call.emitError()
           << "code generation supports calls of layer functions only (a "
              "function with a body and one result, called with "
           << mlir::attn::AttnDialect::getLayerAttrName()
           << "; attn-outline-layers makes them)";
  LayerKernel *&kernel = kernelBySymbol[callee.getSymName().str()];
  if (!kernel) {
    auto owned = std::make_unique<LayerKernel>(options);
    owned->function = cIdentifier(callee.getSymName().str());
    owned->lowering.orderedParamNames = true;
    if (mlir::failed(owned->lowering.lowerFunction(callee)))
      return mlir::failure();
    if (owned->lowering.outputFuncs.size() != 1)
      return callee.emitError() << "a layer function must return one tensor";
    // The layer's sizes are its input's, and its result has the input's
    // type: the kernel reads the input over its output's region, which is
    // then also its answer to a bounds query (sizes that came from a query
    // buffer's extent would be undefined).
    if (callee.getFunctionType().getInput(0) !=
        callee.getFunctionType().getResult(0))
      return callee.emitError()
             << "a layer function's result must have its first argument's "
                "type";
    ImageParam &input = owned->lowering.inputParams.front();
    Func output = owned->lowering.outputFuncs.front();
    for (int d = 0; d < input.dimensions(); ++d)
      input.dim(d).set_extent(output.output_buffer().dim(d).extent());
    owned->pipeline = Pipeline(owned->lowering.outputFuncs);
    // The JIT calls the kernel with its arguments in Halide's inferred
    // order, which must be the function's (hence orderedParamNames).
    std::vector<Argument> inferred = owned->pipeline.infer_arguments();
    std::vector<Argument> declared = owned->arguments();
    declared.pop_back(); // the user context, which inference leaves out
    bool same = inferred.size() == declared.size();
    for (size_t i = 0; same && i < inferred.size(); ++i)
      same = inferred[i].name == declared[i].name;
    if (!same)
      return callee.emitError()
             << "internal error: Halide orders the arguments of layer kernel '"
             << owned->function << "' differently from the function";
    kernel = owned.get();
    kernels.push_back(std::move(owned));
  }
  kernel->layers.push_back(layer.str());

  std::vector<ExternFuncArgument> args;
  std::vector<HTensor> operands;
  for (mlir::Value operand : call.getOperands()) {
    auto param = params.find(operand);
    if (param != params.end()) {
      args.push_back(ExternFuncArgument(param->second));
      operands.push_back(get(operand));
      continue;
    }
    HTensor tensor = get(operand);
    if (!tensor.materialized) { // an extern stage reads a buffer
      tensor.func.compute_root();
      tensor.materialized = true;
    }
    args.push_back(ExternFuncArgument(tensor.func));
    operands.push_back(tensor);
  }
  // The kernel's allocations and errors go through the caller's handlers.
  args.push_back(Internal::Variable::make(Handle(), "__user_context"));

  mlir::Value result = call.getResult(0);
  HTensor tensor;
  tensor.func = Func("layer_" + cIdentifier(layer.str())); // layer_lm_3
  int rank = mlir::cast<mlir::RankedTensorType>(result.getType()).getRank();
  DeviceAPI device =
      options.gpu && !options.gpuOnHost ? DeviceAPI::CUDA : DeviceAPI::Host;
  tensor.func.define_extern(kernel->function, args, Float(32), rank,
                            NameMangling::C, device);
  tensor.func.compute_root();
  tensor.extents = extentsLike(result, operands.front().extents);
  // Exactly the layer's tensor: a consumer that needed more would be an
  // error, never a kernel run at another length.
  std::vector<Var> resultVars = tensor.func.args();
  for (int d = 0; d < rank; ++d)
    tensor.func.bound(resultVars[d], 0, tensor.extents[rank - 1 - d]);
  tensor.materialized = true;
  externStages.insert(tensor.func.name());

  // The kernel's own buffers, sized for this call, for checkResources.
  std::map<std::string, Expr> extentOf;
  const std::vector<ImageParam> &kernelParams = kernel->lowering.inputParams;
  for (size_t i = 0; i < kernelParams.size() && i < operands.size(); ++i) {
    const std::vector<Expr> &extents = operands[i].extents;
    for (size_t d = 0; d < extents.size(); ++d) // Halide dim d: axis rank-1-d
      extentOf[kernelParams[i].name() + ".extent." + std::to_string(d)] =
          extents[extents.size() - 1 - d];
  }
  for (const StoredBuffer &buffer : kernel->lowering.stored) {
    StoredBuffer sized{layer.str() + ": " + buffer.name, buffer.origin, {}};
    for (const Expr &extent : buffer.extents)
      sized.extents.push_back(Internal::substitute(extentOf, extent));
    stored.push_back(std::move(sized));
  }
  set(result, tensor);
  return mlir::success();
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

void Lowering::collectStoredBuffers(mlir::func::FuncOp func) {
  std::set<std::string> seen;
  func.walk<mlir::WalkOrder::PreOrder>([&](mlir::Operation *op) {
    if (mlir::isa<mlir::attn::WeightOp, mlir::attn::KernelOp>(op))
      return;
    for (mlir::Value result : op->getResults()) {
      auto it = values.find(result);
      if (it == values.end() || !it->second.materialized ||
          !seen.insert(it->second.func.name()).second)
        continue;
      stored.push_back({it->second.func.name(),
                        "'" + op->getName().getStringRef().str() + "' at " +
                            locationText(op->getLoc()),
                        it->second.extents});
    }
  });
}

//===----------------------------------------------------------------------===//
// Buffer pool of the JIT
//===----------------------------------------------------------------------===//

namespace {
/// Keeps the buffers a run frees for later allocations of this run and of
/// the next runs, so repeated inference does not pay for fresh pages
/// (first-touch faults and zeroing) on every call. A request takes the
/// smallest cached block that holds it (and is at most twice its size); at
/// most kCachedLimit bytes stay cached. It also counts the bytes live at
/// once, the pipeline's peak footprint (BufferPoolStats).
class BufferPool {
public:
  static void *allocate(JITUserContext *, size_t size) {
    return instance().take(size);
  }
  static void release(JITUserContext *, void *ptr) { instance().give(ptr); }

  static BufferPool &instance() {
    static BufferPool pool;
    return pool;
  }
  BufferPoolStats stats() {
    std::lock_guard<std::mutex> lock(mutex);
    return {peakLive, cached};
  }
  void resetPeak() {
    std::lock_guard<std::mutex> lock(mutex);
    peakLive = live;
  }
  /// The size of the last allocation that failed (0: none), and resets it.
  size_t takeFailedBytes() {
    std::lock_guard<std::mutex> lock(mutex);
    return std::exchange(failedBytes, 0);
  }

private:
  static constexpr size_t kHeader = 64;
  static constexpr size_t kCachedLimit = size_t(4) << 30;

  void *take(size_t size) {
    size_t total = (size + kHeader + 4095) / 4096 * 4096;
    std::lock_guard<std::mutex> lock(mutex);
    char *base = nullptr;
    auto it = blocks.lower_bound(total);
    if (it != blocks.end() && it->first <= 2 * total) {
      base = static_cast<char *>(it->second);
      cached -= it->first;
      blocks.erase(it);
    } else {
      base = static_cast<char *>(std::aligned_alloc(4096, total));
      if (!base) {
        failedBytes = size;
        return nullptr;
      }
      *reinterpret_cast<size_t *>(base) = total;
    }
    live += *reinterpret_cast<size_t *>(base);
    peakLive = std::max(peakLive, live);
    return base + kHeader;
  }
  void give(void *ptr) {
    if (!ptr)
      return;
    char *base = static_cast<char *>(ptr) - kHeader;
    size_t total = *reinterpret_cast<size_t *>(base);
    std::lock_guard<std::mutex> lock(mutex);
    live -= total;
    if (cached + total > kCachedLimit) {
      std::free(base);
      return;
    }
    blocks.emplace(total, base);
    cached += total;
  }

  std::mutex mutex;
  std::multimap<size_t, void *> blocks;
  size_t cached = 0, live = 0, peakLive = 0, failedBytes = 0;
};
} // namespace

BufferPoolStats bufferPoolStats() { return BufferPool::instance().stats(); }
void resetBufferPoolPeak() { BufferPool::instance().resetPeak(); }

//===----------------------------------------------------------------------===//
// ModelPipeline
//===----------------------------------------------------------------------===//

struct ModelPipeline::Impl {
  // The lowerings keep a reference to the options: this copy's.
  explicit Impl(const CodegenOptions &given)
      : options(given), lowering(options) {}
  std::string name;
  CodegenOptions options;
  Lowering lowering;
  Pipeline pipeline;
  bool compiled = false;
};

ModelPipeline::ModelPipeline() = default;
ModelPipeline::~ModelPipeline() = default;

std::unique_ptr<ModelPipeline> ModelPipeline::build(mlir::func::FuncOp model,
                                                    const CodegenOptions &options) {
  std::unique_ptr<ModelPipeline> result(new ModelPipeline());
  result->impl = std::make_unique<Impl>(options);
  result->impl->name = model.getSymName().str();
  try {
    Lowering &lowering = result->impl->lowering;
    if (mlir::failed(lowering.lowerFunction(model)))
      return nullptr;
    result->impl->pipeline = Pipeline(lowering.outputFuncs);
    std::map<std::string, JITExtern> externs;
    for (const std::unique_ptr<LayerKernel> &kernel : lowering.kernels)
      externs.emplace(kernel->function, JITExtern(kernel->pipeline));
    if (!externs.empty())
      result->impl->pipeline.set_jit_externs(externs);
  } catch (const Halide::Error &error) {
    model.emitError() << "internal error in code generation: " << error.what();
    return nullptr;
  }
  return result;
}

const std::string &ModelPipeline::name() const { return impl->name; }
const std::vector<TensorInfo> &ModelPipeline::inputs() const {
  return impl->lowering.inputs;
}
const std::vector<TensorInfo> &ModelPipeline::weights() const {
  return impl->lowering.weights;
}
const std::vector<TensorInfo> &ModelPipeline::outputs() const {
  return impl->lowering.outputs;
}
Pipeline &ModelPipeline::pipeline() { return impl->pipeline; }

std::vector<Argument> ModelPipeline::arguments() const {
  std::vector<Argument> args;
  for (const ImageParam &param : impl->lowering.inputParams)
    args.push_back(param);
  for (const ImageParam &param : impl->lowering.weightParams)
    args.push_back(param);
  return args;
}

std::vector<ModelPipeline::Kernel> ModelPipeline::kernels() const {
  std::vector<Kernel> result;
  for (const std::unique_ptr<LayerKernel> &kernel : impl->lowering.kernels)
    result.push_back({kernel->function, kernel->layers});
  return result;
}

Module ModelPipeline::compileToModule(const std::string &function,
                                      const Target &target) {
  const std::vector<std::unique_ptr<LayerKernel>> &kernels =
      impl->lowering.kernels;
  if (kernels.empty())
    return impl->pipeline.compile_to_module(arguments(), function, target);
  // The model's function passes its user context on to the kernels.
  Target withContext = target.with_feature(Target::UserContext);
  std::vector<Module> modules = {
      impl->pipeline.compile_to_module(arguments(), function, withContext)};
  for (const std::unique_ptr<LayerKernel> &kernel : kernels)
    modules.push_back(kernel->pipeline.compile_to_module(
        kernel->arguments(), kernel->function, withContext));
  return link_modules(function, modules);
}

bool ModelPipeline::takesUserContext() const {
  return !impl->lowering.kernels.empty();
}

void ModelPipeline::compileJit(const Target &target) {
  if (impl->compiled)
    return;
  std::vector<Pipeline *> pipelines = {&impl->pipeline};
  for (const std::unique_ptr<LayerKernel> &kernel : impl->lowering.kernels)
    pipelines.push_back(&kernel->pipeline);
  for (Pipeline *pipeline : pipelines) {
    pipeline->jit_handlers().custom_malloc = BufferPool::allocate;
    pipeline->jit_handlers().custom_free = BufferPool::release;
  }
  impl->pipeline.compile_jit(target); // and the kernels it calls
  impl->compiled = true;
}

runtime::Result ModelPipeline::run(const std::vector<Buffer<float>> &inputs,
                                   const std::vector<Buffer<float>> &weights,
                                   std::vector<Buffer<float>> &outputs) {
  Lowering &lowering = impl->lowering;
  for (size_t i = 0; i < inputs.size(); ++i)
    lowering.inputParams[i].set(inputs[i]);
  for (size_t i = 0; i < weights.size(); ++i)
    lowering.weightParams[i].set(weights[i]);
  std::vector<Buffer<void>> views(outputs.begin(), outputs.end());
  Realization realization(views);
  try {
    impl->pipeline.realize(realization);
    for (Buffer<void> &view : views)
      view.copy_to_host(); // results of GPU kernels back to the caller
  } catch (const Halide::Error &e) {
    // Resource failures are the run's size, not a bug: Halide refuses a
    // buffer over its limit before allocating, and the pool reports a
    // failed allocation.
    std::string what = e.what();
    if (size_t bytes = BufferPool::instance().takeFailedBytes())
      return runtime::Result::error(
          ATTN_ERROR_OUT_OF_MEMORY, "out of memory: the kernel of model '" +
                                        impl->name + "' could not allocate " +
                                        formatBytes(int64_t(bytes)));
    if (what.find("exceeds the maximum size") != std::string::npos)
      return runtime::Result::error(
          ATTN_ERROR_OUT_OF_MEMORY,
          "the kernel of model '" + impl->name +
              "' needs a buffer larger than Halide 14 allows (2^31 - 1 "
              "bytes): " + what);
    return runtime::Result::error(
        ATTN_ERROR_RUNTIME,
        "internal error: the kernel of model '" + impl->name +
            "' failed (a bug in attnc; please report it): " + what);
  }
  return runtime::Result::success();
}

runtime::Result ModelPipeline::checkResources(
    const std::vector<std::vector<int64_t>> &inputShapes,
    const std::vector<std::vector<int64_t>> &outputShapes) const {
  const Lowering &lowering = impl->lowering;
  int64_t ioBytes = 0;
  runtime::Result fits;
  auto add = [&](const std::string &what, const std::vector<int64_t> &shape) {
    fits = checkBufferSize(what, shape);
    if (fits.ok())
      ioBytes += f32Bytes(shape); // each < 2^31, and at most a few thousand
    return fits.ok();
  };
  for (size_t i = 0; i < inputShapes.size(); ++i)
    if (!add("input '" + lowering.inputs[i].name + "'", inputShapes[i]))
      return fits;
  for (const TensorInfo &weight : lowering.weights)
    if (!add("weight '" + weight.name + "'", weight.shape))
      return fits;
  for (size_t i = 0; i < outputShapes.size(); ++i)
    if (!add("output '" + lowering.outputs[i].name + "'", outputShapes[i]))
      return fits;
  return checkStoredBuffers(lowering.stored, lowering.inputParams, inputShapes,
                            ioBytes);
}

} // namespace attnc::codegen
