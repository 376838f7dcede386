//===- AttnSchedule.cpp - #attn.schedule: syntax and rules ----------------===//
//
// Part of attnc, a compiler for attention layers.
//
//===----------------------------------------------------------------------===//
//
// This file implements `#attn.schedule<key = value, ...>` (ScheduleAttr): its
// parser (any subset of the parameters, in any order), its printer (a fixed
// order, defaults omitted, `compute` always printed) and the rules that make
// a schedule legal on its own, on every target. Target budgets (lanes,
// registers, caches, GPU threads, shared memory) live with the target model
// and are checked by `verifyScheduleFor` in passes/ScheduleVerifier.cpp.
//
//===----------------------------------------------------------------------===//

#include "dsl/IR/AttnDialect.h"
#include "dsl/IR/AttnOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::attn;

/// Largest vector a schedule may ask for (lanes of f32).
static constexpr int64_t kMaxVectorLanes = 64;
/// The largest value of any schedule parameter: products of a few of them
/// (threads per block, panel bytes) then stay far inside int64.
static constexpr int64_t kMaxScheduleValue = int64_t(1) << 20;

//===----------------------------------------------------------------------===//
// Accessors
//===----------------------------------------------------------------------===//

ScheduleAttr ScheduleAttr::lookup(Operation *op) {
  return op->getAttrOfType<ScheduleAttr>(getScheduleAttrName());
}

ScheduleParams ScheduleAttr::getParams() const {
  ScheduleParams params;
  params.strategy = getStrategy();
  params.tileX = getTileX();
  params.tileY = getTileY();
  params.vector = getVector();
  params.unrollX = getUnrollX();
  params.unrollY = getUnrollY();
  params.splitK = getSplitK();
  params.rowBlock = getRowBlock();
  params.stageLhs = getStageLhs();
  params.packRhs = getPackRhs();
  params.parallel = getParallel();
  params.compute = getCompute();
  params.gpuThreadsX = getGpuThreadsX();
  params.gpuThreadsY = getGpuThreadsY();
  params.shared = getShared();
  return params;
}

//===----------------------------------------------------------------------===//
// Syntax
//===----------------------------------------------------------------------===//

namespace {
/// The keys of `#attn.schedule`, in printing order.
enum class Key {
  strategy,
  tile,
  vector,
  unroll,
  splitK,
  rowBlock,
  stageLhs,
  packRhs,
  parallel,
  gpuThreads,
  shared,
  compute
};
constexpr const char *kKeyNames[] = {
    "strategy",  "tile",     "vector",   "unroll",      "split_k",
    "row_block", "stage_lhs", "pack_rhs", "parallel", "gpu_threads",
    "shared",    "compute"};
constexpr unsigned kNumKeys = sizeof(kKeyNames) / sizeof(kKeyNames[0]);
} // namespace

/// Parses `[a, b]`.
static ParseResult parsePair(AsmParser &parser, int64_t &a, int64_t &b) {
  return failure(parser.parseLSquare() || parser.parseInteger(a) ||
                 parser.parseComma() || parser.parseInteger(b) ||
                 parser.parseRSquare());
}

/// Parses `true` or `false` as the value of `key`.
static ParseResult parseBool(AsmParser &parser, StringRef key, bool &value) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef word;
  if (parser.parseKeyword(&word))
    return failure();
  if (word != "true" && word != "false")
    return parser.emitError(loc)
           << "schedule " << key << " must be true or false but is '" << word
           << "'";
  value = word == "true";
  return success();
}

/// Parses a keyword naming a case of an enum (`symbolize` maps it) as the
/// value of `key`; `expected` lists the cases for the message.
template <typename Enum>
static ParseResult parseEnum(AsmParser &parser, StringRef key,
                             std::optional<Enum> (*symbolize)(StringRef),
                             StringRef expected, Enum &value) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef word;
  if (parser.parseKeyword(&word))
    return failure();
  std::optional<Enum> parsed = symbolize(word);
  if (!parsed)
    return parser.emitError(loc) << "unknown schedule " << key << " '" << word
                                 << "', expected " << expected;
  value = *parsed;
  return success();
}

/// Parses the value of `key` into `params`.
static ParseResult parseValue(AsmParser &parser, Key key,
                              ScheduleParams &params) {
  switch (key) {
  case Key::strategy:
    return parseEnum(parser, "strategy", symbolizeStrategy,
                     "loops, naive, gemm, rows, materialized or blocked",
                     params.strategy);
  case Key::tile:
    return parsePair(parser, params.tileX, params.tileY);
  case Key::vector:
    return parser.parseInteger(params.vector);
  case Key::unroll:
    return parsePair(parser, params.unrollX, params.unrollY);
  case Key::splitK:
    return parser.parseInteger(params.splitK);
  case Key::rowBlock:
    return parser.parseInteger(params.rowBlock);
  case Key::stageLhs:
    return parseBool(parser, "stage_lhs", params.stageLhs);
  case Key::packRhs:
    return parseBool(parser, "pack_rhs", params.packRhs);
  case Key::parallel:
    return parseBool(parser, "parallel", params.parallel);
  case Key::gpuThreads:
    return parsePair(parser, params.gpuThreadsX, params.gpuThreadsY);
  case Key::shared:
    return parseBool(parser, "shared", params.shared);
  case Key::compute:
    return parseEnum(parser, "compute", symbolizeComputeAt, "root or inline",
                     params.compute);
  }
  llvm_unreachable("unknown schedule key");
}

/// Parses `<>` or `<key = value, ...>` with keys strategy, tile, vector,
/// unroll, split_k, row_block, stage_lhs, pack_rhs, parallel, gpu_threads,
/// shared and compute,
/// each at most once.
Attribute ScheduleAttr::parse(AsmParser &parser, Type) {
  SMLoc start = parser.getCurrentLocation();
  if (parser.parseLess())
    return {};
  ScheduleParams params;
  if (failed(parser.parseOptionalGreater())) {
    bool seen[kNumKeys] = {};
    do {
      SMLoc loc = parser.getCurrentLocation();
      StringRef name;
      if (parser.parseKeyword(&name))
        return {};
      const auto *found = llvm::find(kKeyNames, name);
      if (found == std::end(kKeyNames)) {
        parser.emitError(loc)
            << "unknown schedule parameter '" << name
            << "', expected strategy, tile, vector, unroll, split_k, "
               "row_block, stage_lhs, pack_rhs, parallel, gpu_threads, "
               "shared or compute";
        return {};
      }
      unsigned index = found - std::begin(kKeyNames);
      if (seen[index]) {
        parser.emitError(loc)
            << "schedule parameter '" << name << "' appears twice";
        return {};
      }
      seen[index] = true;
      if (parser.parseEqual() ||
          parseValue(parser, static_cast<Key>(index), params))
        return {};
    } while (succeeded(parser.parseOptionalComma()));
    if (parser.parseGreater())
      return {};
  }
  return ScheduleAttr::getChecked([&] { return parser.emitError(start); },
                                  parser.getContext(), params);
}

void ScheduleAttr::print(AsmPrinter &printer) const {
  printer << '<';
  auto pair = [&](StringRef key, int64_t a, int64_t b) {
    printer << key << " = [" << a << ", " << b << "], ";
  };
  if (getStrategy() != Strategy::loops)
    printer << "strategy = " << stringifyStrategy(getStrategy()) << ", ";
  if (isTiled())
    pair("tile", getTileX(), getTileY());
  if (getVector() != 1)
    printer << "vector = " << getVector() << ", ";
  if (getUnrollX() != 1 || getUnrollY() != 1)
    pair("unroll", getUnrollX(), getUnrollY());
  if (getSplitK() != 0)
    printer << "split_k = " << getSplitK() << ", ";
  if (getRowBlock() != 0)
    printer << "row_block = " << getRowBlock() << ", ";
  if (getStageLhs())
    printer << "stage_lhs = true, ";
  if (getPackRhs())
    printer << "pack_rhs = true, ";
  if (getParallel())
    printer << "parallel = true, ";
  if (getGpuThreadsX() != 0 || getGpuThreadsY() != 0)
    pair("gpu_threads", getGpuThreadsX(), getGpuThreadsY());
  if (getShared())
    printer << "shared = true, ";
  printer << "compute = " << stringifyComputeAt(getCompute()) << '>';
}

//===----------------------------------------------------------------------===//
// Rules
//===----------------------------------------------------------------------===//

/// Prints `[a, b]` into a diagnostic.
static InFlightDiagnostic &&pairTo(InFlightDiagnostic &&diag, int64_t a,
                                   int64_t b) {
  return std::move(diag << "[" << a << ", " << b << "]");
}

/// Names the first loop parameter `p` sets (one that an inlined or naive
/// stage may not set), or returns an empty string if there is none.
static std::string loopParameterOf(const ScheduleParams &p) {
  auto pair = [](StringRef key, int64_t a, int64_t b) {
    return (key + " [" + Twine(a) + ", " + Twine(b) + "]").str();
  };
  if (p.tileX != 1 || p.tileY != 1)
    return pair("tile", p.tileX, p.tileY);
  if (p.vector != 1)
    return ("vector " + Twine(p.vector)).str();
  if (p.unrollX != 1 || p.unrollY != 1)
    return pair("unroll", p.unrollX, p.unrollY);
  if (p.splitK != 0)
    return ("split_k " + Twine(p.splitK)).str();
  if (p.rowBlock != 0)
    return ("row_block " + Twine(p.rowBlock)).str();
  if (p.stageLhs)
    return "stage_lhs = true";
  if (p.packRhs)
    return "pack_rhs = true";
  if (p.parallel)
    return "parallel = true";
  if (p.gpuThreadsX != 0 || p.gpuThreadsY != 0)
    return pair("gpu_threads", p.gpuThreadsX, p.gpuThreadsY);
  if (p.shared)
    return "shared = true";
  return "";
}

LogicalResult
ScheduleAttr::verifyParams(function_ref<InFlightDiagnostic()> emitError,
                           const ScheduleParams &p) {
  // Magnitudes first, so that no rule below overflows.
  for (auto [name, value] :
       {std::pair<const char *, int64_t>{"tile", p.tileX}, {"tile", p.tileY},
        {"vector", p.vector}, {"unroll", p.unrollX}, {"unroll", p.unrollY},
        {"split_k", p.splitK}, {"row_block", p.rowBlock},
        {"gpu_threads", p.gpuThreadsX},
        {"gpu_threads", p.gpuThreadsY}})
    if (value > kMaxScheduleValue)
      return emitError() << "schedule " << name << " value " << value
                         << " exceeds the largest schedule value "
                         << kMaxScheduleValue;
  // Sizes.
  if (p.tileX < 1 || p.tileY < 1)
    return pairTo(emitError() << "schedule tile ", p.tileX, p.tileY)
           << " must be positive";
  if (p.vector < 1)
    return emitError() << "schedule vector " << p.vector << " must be positive";
  if (p.unrollX < 1 || p.unrollY < 1)
    return pairTo(emitError() << "schedule unroll ", p.unrollX, p.unrollY)
           << " must be positive";
  if (p.splitK < 0)
    return emitError() << "schedule split_k " << p.splitK
                       << " must be non-negative (0 = not split)";
  if (p.rowBlock < 0)
    return emitError() << "schedule row_block " << p.rowBlock
                       << " must be non-negative (0 = not blocked)";
  bool onGpu = p.gpuThreadsX != 0 || p.gpuThreadsY != 0;
  if (onGpu && (p.gpuThreadsX < 1 || p.gpuThreadsY < 1))
    return pairTo(emitError() << "schedule gpu_threads ", p.gpuThreadsX,
                  p.gpuThreadsY)
           << " must be both 0 (not on a GPU) or both positive";

  // An inlined stage has no loops, the naive baseline no parameters.
  StringRef strategy = stringifyStrategy(p.strategy);
  if (p.compute == ComputeAt::inlined) {
    std::string loop = loopParameterOf(p);
    if (!loop.empty())
      return emitError() << "schedule compute = inline has no loops of its "
                            "own but sets "
                         << loop;
    if (p.strategy != Strategy::loops)
      return emitError() << "schedule compute = inline is computed in its "
                            "consumers' loops and has no strategy, but sets "
                            "strategy = "
                         << strategy;
  }
  if (p.strategy == Strategy::naive) {
    std::string loop = loopParameterOf(p);
    if (!loop.empty())
      return emitError() << "schedule strategy = naive is scalar, serial "
                            "loops at root and sets no loop parameter, but "
                            "sets "
                         << loop;
  }

  // Register-blocked products on a CPU: vector accumulators, row blocks.
  if (p.rowBlock != 0 && (p.strategy != Strategy::gemm || onGpu))
    return emitError() << "schedule row_block is for strategy = gemm on a "
                          "CPU";
  for (auto [name, set] : {std::pair<const char *, bool>{"stage_lhs",
                                                         p.stageLhs},
                           {"pack_rhs", p.packRhs}})
    if (set && (p.strategy != Strategy::gemm || onGpu))
      return emitError() << "schedule " << name
                         << " = true is for strategy = gemm on a CPU";
  if (p.strategy == Strategy::gemm && !onGpu) {
    if (p.rowBlock == 0 || p.rowBlock % p.tileY != 0)
      return emitError() << "schedule strategy = gemm on a CPU needs "
                            "row_block (rows per parallel task, here "
                         << p.rowBlock << ") to be a multiple of tile y "
                         << p.tileY;
  }

  // Blocked attention on a CPU: square blocks of split_k queries by split_k
  // keys, each swept by vector register tiles; on a GPU, staged blocks.
  if (p.strategy == Strategy::blocked && !onGpu) {
    if (p.vector < 2 || p.tileX < 2 || p.tileY < 2)
      return emitError() << "schedule strategy = blocked on a CPU needs a "
                            "vector register tile (tile x, tile y and vector "
                            "> 1)";
    if (p.splitK == 0 || p.splitK % p.tileX != 0 || p.splitK % p.tileY != 0)
      return pairTo(emitError() << "schedule strategy = blocked needs split_k "
                                   "(the block, here "
                                << p.splitK << ") to be a multiple of tile ",
                    p.tileX, p.tileY);
  }
  if (p.strategy == Strategy::blocked && onGpu && !p.shared)
    return emitError() << "schedule strategy = blocked on a GPU stages its "
                          "blocks in shared memory: it needs shared = true";
  if (p.strategy == Strategy::materialized && onGpu)
    return emitError() << "schedule strategy = materialized is for CPUs but "
                          "sets gpu_threads";

  // Vectors and unrolling inside the tile.
  if (!llvm::isPowerOf2_64(p.vector))
    return emitError() << "schedule vector " << p.vector
                       << " is not a power of two";
  if (p.vector > kMaxVectorLanes)
    return emitError() << "schedule vector " << p.vector << " exceeds "
                       << kMaxVectorLanes << " lanes";
  bool vectorTiled = p.vector > 1 && p.tileX > 1;
  if (vectorTiled && p.tileX % p.vector != 0)
    return emitError() << "schedule vector " << p.vector
                       << " does not divide tile x " << p.tileX;
  int64_t vectorsAcross = vectorTiled ? p.tileX / p.vector : p.tileX;
  if (vectorsAcross % p.unrollX != 0) {
    if (vectorTiled)
      return emitError() << "schedule unroll x " << p.unrollX
                         << " does not divide the " << vectorsAcross
                         << " vectors of tile x " << p.tileX;
    return emitError() << "schedule unroll x " << p.unrollX
                       << " does not divide tile x " << p.tileX;
  }
  if (p.tileY % p.unrollY != 0)
    return emitError() << "schedule unroll y " << p.unrollY
                       << " does not divide tile y " << p.tileY;

  // GPU mapping.
  if (onGpu) {
    if (p.tileX % p.gpuThreadsX != 0 || p.tileY % p.gpuThreadsY != 0)
      return pairTo(pairTo(emitError() << "schedule gpu_threads ",
                           p.gpuThreadsX, p.gpuThreadsY)
                        << " does not divide tile ",
                    p.tileX, p.tileY);
    if (p.vector > 1)
      return pairTo(emitError() << "schedule vector " << p.vector
                                << " cannot be combined with gpu_threads ",
                    p.gpuThreadsX, p.gpuThreadsY)
             << " (a GPU thread is scalar)";
  }
  if (p.shared && !onGpu)
    return emitError() << "schedule shared = true needs gpu_threads";
  if (p.shared && p.splitK == 0)
    return emitError() << "schedule shared = true needs split_k (the depth of "
                          "the operand panels staged per reduction step)";
  if (p.shared && p.strategy != Strategy::gemm &&
      p.strategy != Strategy::blocked)
    return emitError() << "schedule shared = true stages the operands of "
                          "strategy = gemm or blocked, not "
                       << strategy;
  return success();
}

LogicalResult ScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   Strategy strategy, int64_t tileX,
                                   int64_t tileY, int64_t vector,
                                   int64_t unrollX, int64_t unrollY,
                                   int64_t splitK, int64_t rowBlock,
                                   bool stageLhs, bool packRhs,
                                   bool parallel, ComputeAt compute,
                                   int64_t gpuThreadsX, int64_t gpuThreadsY,
                                   bool shared) {
  ScheduleParams params;
  params.strategy = strategy;
  params.tileX = tileX;
  params.tileY = tileY;
  params.vector = vector;
  params.unrollX = unrollX;
  params.unrollY = unrollY;
  params.splitK = splitK;
  params.rowBlock = rowBlock;
  params.stageLhs = stageLhs;
  params.packRhs = packRhs;
  params.parallel = parallel;
  params.compute = compute;
  params.gpuThreadsX = gpuThreadsX;
  params.gpuThreadsY = gpuThreadsY;
  params.shared = shared;
  return verifyParams(emitError, params);
}

LogicalResult
mlir::attn::verifyScheduleForOp(Operation *op, const ScheduleParams &schedule,
                                function_ref<InFlightDiagnostic()> emitError) {
  // Only elementwise stages, norms and chunk's re-index are computed in
  // their consumers.
  if (schedule.compute == ComputeAt::inlined && !isElementwise(op) &&
      !isNorm(op) && !isa<ChunkOp>(op))
    return emitError() << "schedule compute = inline is for elementwise ops, "
                          "norms and attn.chunk, not '"
                       << op->getName() << "'";
  // Each class of op has its algorithms; naive fits every op.
  Strategy strategy = schedule.strategy;
  if (strategy != Strategy::naive && schedule.compute != ComputeAt::inlined) {
    bool product = isa<ProductOpInterface>(op);
    bool attention = isa<AttentionOp>(op);
    bool fits = product     ? strategy == Strategy::gemm
                : attention ? llvm::is_contained({Strategy::rows,
                                                  Strategy::materialized,
                                                  Strategy::blocked},
                                                 strategy)
                            : strategy == Strategy::loops;
    if (!fits)
      return emitError() << "schedule strategy = " << stringifyStrategy(strategy)
                         << " is not an algorithm of '" << op->getName()
                         << "', which takes "
                         << (product     ? "gemm or naive"
                             : attention ? "rows, materialized, blocked or naive"
                                         : "loops or naive");
  }
  // CPU staging of a product's operands.
  if (auto product = dyn_cast<ProductOpInterface>(op)) {
    if (schedule.stageLhs && !product.fusesOperandStages())
      return emitError() << "schedule stage_lhs = true: '" << op->getName()
                         << "' does not stage its left operand (attn.dense "
                            "and attn.matmul do)";
  }
  if (!schedule.shared)
    return success();
  // Shared-memory staging: a product's operand panels per step, or blocked
  // attention's weights and values per key block.
  if (auto attention = dyn_cast<AttentionOp>(op)) {
    int64_t width =
        cast<RankedTensorType>(attention.getV().getType()).getShape().back();
    int64_t perHead = ShapedType::isDynamic(width)
                          ? width
                          : width / static_cast<int64_t>(attention.getHeads());
    if (ShapedType::isDynamic(perHead) || perHead % schedule.tileX != 0)
      return emitError() << "schedule tile x " << schedule.tileX
                         << " must divide the value columns per head ("
                         << (ShapedType::isDynamic(perHead)
                                 ? std::string("dynamic")
                                 : std::to_string(perHead))
                         << ") for blocked attention on a GPU";
    int64_t keys = schedule.splitK;
    if (keys % schedule.gpuThreadsX != 0)
      return emitError() << "schedule split_k " << keys
                         << " (keys per block) must be a multiple of "
                            "gpu_threads x "
                         << schedule.gpuThreadsX;
    auto q = cast<RankedTensorType>(attention.getQ().getType());
    if (q.isDynamicDim(q.getRank() - 1))
      return emitError() << "blocked attention on a GPU needs a static "
                            "number of query features";
    return success();
  }
  return success(); // a product's panels: the strategy rules above
}
