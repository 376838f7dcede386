//===- Stream.cpp - a chunked model run over blocks of rows ---------------===//
//
// This file implements streaming (Stream.h): the check that a model can run
// block by block, and the loop that runs its kernel over the blocks. The
// kernel's own part (the offset input RoPE reads, the carries chunk_scan
// and token_shift take and return) is in the lowerings of those ops
// (Norms.cpp, Chunked.cpp).
//
//===----------------------------------------------------------------------===//
#include "codegen/Stream.h"

#include "dsl/IR/AttnOps.h"

#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseSet.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace attnc::codegen {

using namespace Halide;
namespace attn = mlir::attn;

/// Whether `value` is computed from weights and constants only (through
/// transposes): the same for every row of the sequence.
static bool weightOnly(mlir::Value value) {
  while (auto transpose = value.getDefiningOp<attn::TransposeOp>())
    value = transpose.getX();
  return value.getDefiningOp<attn::WeightOp>() ||
         value.getDefiningOp<attn::ConstantOp>();
}

bool attendsWithinChunks(attn::AttentionOp attention) {
  for (mlir::Value operand :
       {attention.getQ(), attention.getK(), attention.getV()})
    if (!operand.getDefiningOp<attn::ChunkOp>())
      return false;
  return true;
}

/// Why `op` keeps a streamed model from running block by block, or "".
static std::string whyNotStreamable(mlir::Operation *op,
                                    const CodegenOptions &options) {
  int64_t rows = options.streamRows;
  bool decode = options.decode;
  if (mlir::isa<attn::ConstantOp, attn::AddOp, attn::SubOp, attn::MulOp,
                attn::DivOp, attn::DivOrZeroOp, attn::PowOp, attn::NegOp,
                attn::SiluOp, attn::GeluOp, attn::ReluOp, attn::SigmoidOp,
                attn::ExpOp, attn::TanhOp, attn::SqrtOp, attn::ScaleOffsetOp,
                attn::SplitOp, attn::RowOp, attn::LayerNormOp, attn::RmsNormOp,
                attn::ScaleNormOp, attn::RopeOp, attn::TokenShiftOp,
                attn::EmbeddingOp, attn::SinusoidalOp, attn::DenseOp,
                attn::WeightOp, attn::UnchunkOp, attn::ChunkStateOp,
                attn::StateApplyOp, attn::KernelOp, attn::KernelYieldOp,
                mlir::arith::ConstantOp, mlir::func::ReturnOp>(op))
    return "";
  if (auto chunk = mlir::dyn_cast<attn::ChunkOp>(op)) {
    // The step kernel's blocks lie within a chunk (Decode.h).
    if (options.chunkStep || rows % int64_t(chunk.getChunk()) == 0)
      return "";
    return "its chunks of " + std::to_string(chunk.getChunk()) +
           " rows do not divide the blocks of " + std::to_string(rows) +
           " rows; give --stream-rows a multiple of " +
           std::to_string(chunk.getChunk());
  }
  if (auto scan = mlir::dyn_cast<attn::ChunkScanOp>(op)) {
    auto type = mlir::cast<mlir::RankedTensorType>(scan.getType());
    if (type.isDynamicDim(type.getRank() - 1) ||
        type.isDynamicDim(type.getRank() - 2))
      return "its state's size is not static";
    if (scan.getExclusive() || !decode)
      return ""; // a total: two sweeps (StreamState::endTotals)
    return "it sums the chunk states of the whole sequence (non-causal "
           "FLASH), which a decoded row has not seen; only causal models "
           "decode";
  }
  if (auto attention = mlir::dyn_cast<attn::AttentionOp>(op)) {
    attn::MaskKind mask = attention.getMask().getKind();
    if (attendsWithinChunks(attention))
      return !decode || mask == attn::MaskKind::causal ||
                     mask == attn::MaskKind::window
                 ? ""
                 : "its rows attend to later rows of their chunk (a "
                   "non-causal model), which a decoded row has not seen; "
                   "only causal models decode";
    // Decoding keeps the keys and values of the earlier rows (a cache).
    std::string size = std::to_string(attention.getMask().getSize());
    if (mask == attn::MaskKind::window)
      return "its window of " + size +
             " rows reaches back into the rows before the block, whose keys "
             "and values are not kept from block to block (not built yet)";
    if (mask == attn::MaskKind::chunk || mask == attn::MaskKind::causal_chunk)
      return "it attends within blocks of " + size +
             " rows, but attn-chunk did not cut it into chunks (a softmax "
             "over non-causal blocks, whose last block's padding it would "
             "see, or a score that reads the positions or the length); not "
             "streamed yet";
    if (mask != attn::MaskKind::causal)
      return "it attends to later rows of the sequence (mask '" +
             attn::stringifyMaskKind(mask).str() +
             "'), which the block does not hold; only causal attention "
             "keeps a key/value cache";
    if (!decode)
      return "it attends over the whole sequence (keys of every earlier "
             "block), not within chunks; decoding (attnc generate) keeps "
             "them in a key/value cache";
    return "";
  }
  // A product with a weight keeps rows apart (a head: `h @ table`).
  if (auto matmul = mlir::dyn_cast<attn::MatmulOp>(op))
    if (weightOnly(matmul.getB()))
      return "";
  if (auto transpose = mlir::dyn_cast<attn::TransposeOp>(op))
    if (weightOnly(transpose.getX()))
      return "";
  if (mlir::isa<attn::TransposeOp, attn::MatmulOp>(op))
    return "a matmul or transpose of activations mixes the sequence's rows";
  // Linear attention over its own rows is in chunks by now (attn-chunk).
  if (mlir::isa<attn::LinearAttnOp, attn::ChunkedLinearOp>(op))
    return "linear attention over keys that are not the queries' rows "
           "(another sequence) is not cut into chunks, and sums over the "
           "whole sequence of keys";
  return "it is not one of the ops a streamed kernel supports";
}

/// Whether `op` is a chunk_scan total, which streams in two sweeps.
static bool sumsWholeSequence(mlir::Operation *op) {
  auto scan = mlir::dyn_cast<attn::ChunkScanOp>(op);
  return scan && !scan.getExclusive();
}

/// Why the total `scan` computes cannot be summed by a first sweep of
/// `model`'s blocks, or "": its function must be the model's (a program's
/// layer kernels run block after block, each layer's next sweep would need
/// the whole output of the layer before), and no other total may feed its
/// states (that total is only known after the first sweep).
static std::string whyNotTwoSweeps(mlir::Operation *scan,
                                   mlir::func::FuncOp model) {
  if (scan->getParentOfType<mlir::func::FuncOp>() != model)
    return "it sums the chunk states of the whole sequence (non-causal "
           "FLASH) in a layer of its own (a repeated or outlined layer): "
           "each layer would need a sweep over the whole output of the one "
           "before; only a model of one kernel streams in two sweeps";
  // What the scan reads, through the values the regions of fused
  // kernels (attn.kernel) use from outside them too.
  llvm::SmallVector<mlir::Operation *> work = {scan};
  llvm::DenseSet<mlir::Operation *> seen;
  bool dependent = false;
  while (!work.empty() && !dependent) {
    work.pop_back_val()->walk([&](mlir::Operation *op) {
      for (mlir::Value operand : op->getOperands()) {
        mlir::Operation *def = operand.getDefiningOp();
        if (!def || !seen.insert(def).second)
          continue;
        dependent |= def != scan && sumsWholeSequence(def);
        work.push_back(def);
      }
    });
  }
  if (dependent)
    return "its chunk states depend on another sum over the whole "
           "sequence (two non-causal layers in one kernel), which a first "
           "sweep cannot know; only one such sum streams";
  return "";
}

/// Walks the ops of `func` (not the function itself) and, in place of each
/// call of a function with a body, that function's ops; stops when `visit`
/// interrupts. Calls do not recurse (attn-outline-layers makes none that
/// do).
static mlir::WalkResult walkWithCallees(
    mlir::func::FuncOp func,
    llvm::function_ref<mlir::WalkResult(mlir::Operation *)> visit) {
  return func.walk([&](mlir::Operation *op) {
    if (op == func.getOperation())
      return mlir::WalkResult::advance();
    if (auto call = mlir::dyn_cast<mlir::func::CallOp>(op)) {
      auto callee =
          mlir::SymbolTable::lookupNearestSymbolFrom<mlir::func::FuncOp>(
              call, call.getCalleeAttr());
      if (callee && !callee.isExternal() && callee != func)
        return walkWithCallees(callee, visit);
    }
    return visit(op);
  });
}

mlir::LogicalResult checkStreamable(mlir::func::FuncOp func,
                                    const CodegenOptions &options) {
  int64_t rows = options.streamRows;
  // Decoding (Decode.h) runs streamed kernels too: its messages say so.
  const char *subject = options.decode ? "decoding" : "--stream-rows";
  if (options.gpu)
    return mlir::emitError(func.getLoc())
           << subject << " runs on CPU targets only";
  if (!options.autoscheduler.empty())
    return mlir::emitError(func.getLoc())
           << subject << " runs attnc's own schedules, not Halide's "
              "autoschedulers";
  if (rows >= kMaxDecodedRows)
    return mlir::emitError(func.getLoc())
           << "--stream-rows must be below 2^24, got " << rows;
  std::string seqDim;
  if (auto dims =
          func->getAttrOfType<mlir::DictionaryAttr>("attn.runtime_dims"))
    for (mlir::NamedAttribute entry : dims)
      if (mlir::cast<mlir::StringAttr>(entry.getValue()).getValue() == "seq") {
        if (!seqDim.empty())
          return mlir::emitError(func.getLoc())
                 << subject << " needs one sequence dim, but model '"
                 << func.getSymName() << "' has '" << seqDim << "' and '"
                 << entry.getName().str() << "'";
        seqDim = entry.getName().str();
      }
  if (seqDim.empty())
    return mlir::emitError(func.getLoc())
           << subject << " needs a sequence dim (`dim n : seq`), and "
              "model '"
           << func.getSymName() << "' has none";
  // Every input and output: the sequence dim on its row axis, the same
  // batch dims before it.
  std::vector<TensorInfo> tensors;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    mlir::FailureOr<TensorInfo> info = describeArgument(func, i);
    if (mlir::failed(info))
      return mlir::failure();
    tensors.push_back(*info);
  }
  for (unsigned i = 0; i < func.getNumResults(); ++i)
    tensors.push_back(describeResult(func, i));
  // The batch dims: those before the first tensor's rows.
  const TensorInfo &front = tensors.front();
  auto frontBatch = front.dims.begin() + streamRowAxis(front);
  for (const TensorInfo &info : tensors) {
    size_t axis = streamRowAxis(info);
    bool rowAxis = info.dims.size() >= 1 && info.dims[axis] == seqDim;
    bool leading = rowAxis && std::equal(info.dims.begin(),
                                         info.dims.begin() + axis,
                                         front.dims.begin(), frontBatch);
    if (!rowAxis || !leading ||
        std::count(info.dims.begin(), info.dims.end(), seqDim) != 1)
      return mlir::emitError(func.getLoc())
             << subject << " cuts every input and output into blocks of "
                "rows, but '"
             << info.name << "' " << info.shapeString() << " does not have '"
             << seqDim << "' as its rows ("
             << (info.dtype == "i32" ? "last" : "second-last")
             << " axis) after the batch dims of '" << front.name << "'";
    // Each block is one batch entry: a kernel compiled for a static batch
    // of several would read past the one it is given.
    for (size_t d = 0; d < axis; ++d)
      if (info.shape[d] > 1)
        return mlir::emitError(func.getLoc())
               << subject << " runs one sequence of a batch at a time, but '"
               << info.name << "' " << info.shapeString()
               << " has a static batch dim of " << info.shape[d]
               << " (declare a runtime one: `dim b : batch`)";
  }
  // The model's ops and those of the functions it calls (a program's
  // layers and glue).
  auto check = [&](mlir::Operation *op) {
    if (op->getParentOfType<attn::AttentionOp>())
      return mlir::WalkResult::advance(); // a score region's scalar ops
    std::string why = whyNotStreamable(op, options);
    if (why.empty() && sumsWholeSequence(op))
      why = whyNotTwoSweeps(op, func);
    if (why.empty())
      return mlir::WalkResult::advance();
    // At the op's .attn location, without MLIR's dump of the op.
    mlir::emitError(op->getLoc())
        << subject << " cannot run model '" << func.getSymName()
        << "' block by block: '" << op->getName() << "' here: " << why;
    return mlir::WalkResult::interrupt();
  };
  return mlir::failure(walkWithCallees(func, check).wasInterrupted());
}

/// `rows` combined with each chunk size of `func` in turn.
static int64_t overChunks(mlir::func::FuncOp func, int64_t rows,
                          int64_t (*combine)(int64_t, int64_t)) {
  walkWithCallees(func, [&](mlir::Operation *op) {
    if (auto chunk = mlir::dyn_cast<attn::ChunkOp>(op))
      rows = combine(rows, int64_t(chunk.getChunk()));
    return mlir::WalkResult::advance();
  });
  return rows;
}

int64_t smallestStreamRows(mlir::func::FuncOp func) {
  return overChunks(func, 1, std::lcm<int64_t, int64_t>);
}

int64_t stepRows(mlir::func::FuncOp func) {
  return overChunks(func, 0, std::gcd<int64_t, int64_t>);
}

int64_t decodeRows(mlir::func::FuncOp func) {
  int64_t rows = smallestStreamRows(func);
  bool cached = false;
  walkWithCallees(func, [&](mlir::Operation *op) {
    if (auto attention = mlir::dyn_cast<attn::AttentionOp>(op))
      cached |= !attendsWithinChunks(attention);
    return mlir::WalkResult::advance();
  });
  // Blocks of at least 64 rows: a prefill reads the weights once per block.
  return cached ? rows * ((64 + rows - 1) / rows) : rows;
}

int64_t suggestedStreamRows(mlir::func::FuncOp func,
                            CodegenOptions options) {
  options.streamRows = 8192;
  // The check's diagnostics are for a user who asked to stream: dropped.
  mlir::ScopedDiagnosticHandler quiet(
      func.getContext(), [](mlir::Diagnostic &) { return mlir::success(); });
  return mlir::succeeded(checkStreamable(func, options))
             ? options.streamRows
             : 0;
}

size_t streamRowAxis(const TensorInfo &info) {
  size_t rank = info.shape.size();
  if (info.dtype == "i32")
    return rank - 1;
  return rank >= 2 ? rank - 2 : 0;
}

std::vector<int64_t> blockShape(std::vector<int64_t> shape, size_t rowAxis,
                                int64_t rows) {
  for (size_t d = 0; d < rowAxis; ++d)
    shape[d] = 1;
  if (rowAxis < shape.size())
    shape[rowAxis] = std::min(shape[rowAxis], rows);
  return shape;
}

Buffer<float> blockOf(const Buffer<float> &whole, int rowDim, int64_t entry,
                      int first, int count) {
  Runtime::Buffer<float> block = whole.get()->cropped(rowDim, first, count);
  for (int d = rowDim + 1; d < block.dimensions(); ++d) {
    int extent = whole.dim(d).extent();
    block.crop(d, int(entry % extent), 1);
    entry /= extent;
  }
  std::vector<int> mins(block.dimensions(), 0);
  block.set_min(mins);
  halide_buffer_t *raw = block.raw_buffer();
  for (int d = rowDim + 1; d < block.dimensions(); ++d)
    raw->dim[d].stride = raw->dim[d - 1].stride * raw->dim[d - 1].extent;
  return Buffer<float>(std::move(block));
}

std::vector<int> carrySizes(const Lowering::StreamCarry &carry,
                            int64_t capacity) {
  std::vector<int> sizes;
  size_t rank = carry.extents.size();
  for (size_t d = rank; d-- > 0;) {
    if (carry.sizedByCapacity() && d + 2 == rank) {
      sizes.push_back(int(capacity));
      continue;
    }
    const int64_t *size = Internal::as_const_int(carry.extents[d]);
    sizes.push_back(d + 2 >= rank && size ? int(*size) : 1);
  }
  return sizes;
}

bool hasCaches(const Lowering &lowering) {
  for (const Lowering::StreamCarry &carry : lowering.streamCarries)
    if (carry.sizedByCapacity())
      return true;
  return false;
}

bool hasTotals(const Lowering &lowering) {
  for (const Lowering::StreamCarry &carry : lowering.streamCarries)
    if (carry.total)
      return true;
  return false;
}

StreamState::StreamState(const Lowering &lowering, int64_t capacity)
    : offset(1), capacity(capacity) {
  for (const Lowering::StreamCarry &carry : lowering.streamCarries) {
    std::vector<int> sizes = carrySizes(carry, capacity);
    carries.emplace_back(sizes);
    // A cache's next value is a view of its own rows (run()).
    nexts.push_back(carry.cache ? Buffer<float>() : Buffer<float>(sizes));
    caches.push_back(carry.cache);
    sizedByCapacity.push_back(carry.sizedByCapacity());
    totals.push_back(carry.total);
    perRow.push_back(carry.perRow);
  }
  reset();
}

void StreamState::reset() {
  for (Buffer<float> &carry : carries)
    carry.fill(0.0f);
  at = 0;
}

int64_t StreamState::bytes() const {
  int64_t total = 4;
  for (const std::vector<Buffer<float>> *list : {&carries, &nexts})
    for (const Buffer<float> &carry : *list)
      if (carry.defined())
        total += int64_t(carry.size_in_bytes());
  return total;
}

runtime::Result StreamState::run(const std::vector<Buffer<float>> &inputs,
                                 const std::vector<Buffer<void>> &outputs,
                                 int rows, const BlockRunner &runBlock) {
  if (at + rows > kMaxDecodedRows)
    return runtime::Result::error(
        ATTN_ERROR_ARGUMENT,
        "a streamed sequence holds at most 2^24 rows (positions are "
        "passed as floats), and this block ends at row " +
            std::to_string(at + rows));
  if (at + rows > capacity)
    return runtime::Result::error(
        ATTN_ERROR_ARGUMENT,
        "the key/value cache holds " + std::to_string(capacity) +
            " rows (the decoder's capacity), and this block ends at row " +
            std::to_string(at + rows));
  offset(0) = float(at);
  std::vector<Buffer<float>> args = inputs;
  args.push_back(offset);
  std::vector<Buffer<void>> results = outputs;
  for (size_t c = 0; c < carries.size(); ++c) {
    if (!caches[c]) {
      args.push_back(carries[c]);
      results.push_back(nexts[c]);
      continue;
    }
    // A cache (its row dim is dim 1): a capacity's rows so far, the keys
    // the block's attention iterates, or a chunk cache's C rows; and in
    // place, the rows the block writes (CacheRows).
    runtime::CacheRows write =
        runtime::cacheRows(carries[c].dim(1).extent(), at, rows);
    args.push_back(sizedByCapacity[c]
                       ? Buffer<float>(carries[c].get()->cropped(
                             1, 0, int(at + rows)))
                       : carries[c]);
    results.push_back(Buffer<float>(
        carries[c].get()->cropped(1, int(write.first), int(write.count))));
  }
  return runBlock(args, results);
}

void StreamState::advance(int rows) {
  runtime::advanceCarries(carries, nexts, caches);
  at += rows;
}

void StreamState::endTotals(int64_t rows) {
  for (size_t c = 0; c < carries.size(); ++c) {
    if (!totals[c])
      carries[c].fill(0.0f);
    else if (perRow[c])
      carries[c].for_each_value(
          [rows](float &value) { value /= float(rows); });
  }
  at = 0;
}

runtime::Result noStepKernel() {
  return runtime::Result::error(
      ATTN_ERROR_ARGUMENT, "internal error: a step without a step kernel");
}

runtime::Result
SequenceBlocks::sumTotals(const std::vector<Buffer<float>> &inputs, int rows) {
  return runtime::Result::error(
      ATTN_ERROR_ARGUMENT, "internal error: a first sweep without a totals "
                           "kernel");
}

namespace {
/// A streamed pipeline's blocks: one StreamState.
class StreamBlocks : public SequenceBlocks {
public:
  StreamBlocks(const Lowering &lowering, BlockRunner runner,
               BlockRunner stepRunner, BlockRunner totalsRunner,
               int64_t capacity)
      : state(lowering, capacity), runner(std::move(runner)),
        stepRunner(std::move(stepRunner)),
        totalsRunner(std::move(totalsRunner)) {}
  runtime::Result run(const std::vector<Buffer<float>> &inputs,
                      const std::vector<Buffer<float>> &outputs, int rows,
                      bool step) override {
    if (step && !stepRunner)
      return noStepKernel();
    // Without the first sweep, the totals would be zero: a wrong answer.
    if (totalsRunner && !summed)
      return runtime::Result::error(
          ATTN_ERROR_ARGUMENT, "internal error: a block of a model that sums "
                               "over the whole sequence before its totals");
    std::vector<Buffer<void>> views(outputs.begin(), outputs.end());
    runtime::Result ran =
        state.run(inputs, views, rows, step ? stepRunner : runner);
    if (ran.ok())
      state.advance(rows);
    return ran;
  }
  void reset() override {
    state.reset();
    summed = false;
  }
  int64_t stateBytes() const override { return state.bytes(); }
  bool sweepsTwice() const override { return bool(totalsRunner); }
  runtime::Result sumTotals(const std::vector<Buffer<float>> &inputs,
                            int rows) override {
    if (!totalsRunner)
      return SequenceBlocks::sumTotals(inputs, rows);
    // The totals kernel's results are the carries' next values only.
    runtime::Result ran = state.run(inputs, {}, rows, totalsRunner);
    if (ran.ok())
      state.advance(rows);
    return ran;
  }
  void endTotals(int64_t rows) override {
    state.endTotals(rows);
    summed = true;
  }

private:
  StreamState state;
  BlockRunner runner, stepRunner, totalsRunner;
  bool summed = false; ///< The first sweep has ended (endTotals).
};
} // namespace

std::unique_ptr<SequenceBlocks>
streamBlocks(const Lowering &lowering, BlockRunner runner,
             BlockRunner stepRunner, BlockRunner totalsRunner,
             int64_t capacity) {
  return std::make_unique<StreamBlocks>(lowering, std::move(runner),
                                        std::move(stepRunner),
                                        std::move(totalsRunner), capacity);
}

int streamRowDim(const TensorInfo &info) {
  return int(info.shape.size() - 1 - streamRowAxis(info));
}

/// The Halide dim of each tensor's rows.
static std::vector<int> rowDims(const std::vector<TensorInfo> &infos) {
  std::vector<int> dims;
  for (const TensorInfo &info : infos)
    dims.push_back(streamRowDim(info));
  return dims;
}

runtime::Result runStreamed(const std::vector<TensorInfo> &inputInfos,
                            const std::vector<TensorInfo> &outputInfos,
                            int64_t rows,
                            const std::vector<Buffer<float>> &inputs,
                            std::vector<Buffer<float>> &outputs,
                            SequenceBlocks &blocks) {
  std::vector<int> inRows = rowDims(inputInfos),
                   outRows = rowDims(outputInfos);
  const Buffer<float> &first = inputs.front();
  int length = first.dim(inRows[0]).extent();
  int block = int(rows);
  int64_t entries = 1;
  for (int d = inRows[0] + 1; d < first.dimensions(); ++d)
    entries *= first.dim(d).extent();
  for (int64_t entry = 0; entry < entries; ++entry) {
    auto inputsOf = [&](int start, int count) {
      std::vector<Buffer<float>> in;
      for (size_t i = 0; i < inputs.size(); ++i)
        in.push_back(blockOf(inputs[i], inRows[i], entry, start, count));
      return in;
    };
    blocks.reset();
    // A sum over the whole sequence first (its totals kernel's sweep).
    for (int start = 0; blocks.sweepsTwice() && start < length;
         start += block) {
      int count = std::min(block, length - start);
      if (runtime::Result ran = blocks.sumTotals(inputsOf(start, count),
                                                 count);
          !ran.ok())
        return ran;
    }
    if (blocks.sweepsTwice())
      blocks.endTotals(length);
    for (int start = 0; start < length; start += block) {
      int count = std::min(block, length - start);
      std::vector<Buffer<float>> in = inputsOf(start, count), out;
      for (size_t i = 0; i < outputs.size(); ++i)
        out.push_back(blockOf(outputs[i], outRows[i], entry, start, count));
      if (runtime::Result ran = blocks.run(in, out, count, /*step=*/false);
          !ran.ok())
        return ran;
    }
  }
  return runtime::Result::success();
}

} // namespace attnc::codegen
