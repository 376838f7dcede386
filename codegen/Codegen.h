//===- Codegen.h - attn dialect to Halide pipelines ---------------*- C++ -*-===//
//
// This file declares the code generator: it turns one primitive-level model
// function (after attn-expand-layers) into a Halide pipeline, or into a
// program of one pipeline per called function (codegen/Program.h), whose inputs
// are the model's inputs and weights, with runtime dims (seq, batch) left as
// runtime extents so that one compiled pipeline serves every n and batch.
// The pipeline can be JIT-compiled and run, or compiled ahead of time.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_CODEGEN_H
#define ATTNC_CODEGEN_CODEGEN_H

#include "codegen/CompileCache.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Support/LogicalResult.h"
#include "runtime/Error.h"

#include <Halide.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace attnc::codegen {

/// One tensor crossing the pipeline boundary (input, weight or output).
struct TensorInfo {
  std::string name;           ///< .attn name, or the weight's full name.
  std::vector<int64_t> shape; ///< MLIR order; -1 for a runtime dim.
  std::vector<std::string> dims; ///< Runtime dim name per axis, "" if static.
  /// "f32", or "i32" for an input of token ids (held in a 4-byte buffer
  /// like the floats; the kernel reinterprets its bits).
  std::string dtype = "f32";
  /// For token ids: the rows of the smallest embedding table reading them,
  /// so ids must be in 0..idBound-1; 0 otherwise.
  int64_t idBound = 0;

  int64_t numElements() const; ///< Product of static dims; -1 if any runtime.
  std::string shapeString() const; ///< `[b, n, 512]`.
};

/// Where a kernel's weights lie in the one f32 buffer it reads them from
/// (Lowering::weightArena): weight i (in the order of the kernel's
/// weights), of shapes[i] (MLIR order), at element offsets[i], dense in C
/// order, each offset a multiple of kAlign from the buffer's start; the
/// buffer holds `elements`. Callers pack the weights into it
/// (packWeightArena, WeightPack; the generated C wrapper for each call).
/// Empty offsets: the kernel takes one buffer per weight.
struct WeightArena {
  static constexpr int64_t kAlign = 16; ///< Floats: 64 bytes.
  std::vector<int64_t> offsets;
  std::vector<std::vector<int64_t>> shapes;
  int64_t elements = 0;

  bool used() const { return !offsets.empty(); }
  int64_t bytes() const { return elements * int64_t(sizeof(float)); }
  /// Appends a weight of static `shape`; returns its offset.
  int64_t add(const std::vector<int64_t> &shape);
};

/// Packs `weights` (in the kernel's order, any strides) into `into`, which
/// holds arena.elements floats; false, with nothing read, unless each
/// weight has exactly its shape in the arena.
bool packWeightArena(const WeightArena &arena,
                     const std::vector<Halide::Buffer<float>> &weights,
                     float *into);

/// A model's weights as its kernels take them (ModelPipeline::packWeights),
/// for runs that reuse them: per kernel call (the model's kernel and its
/// streamed totals kernel, or each step of a program), the buffers its
/// kernel takes for its weights: its weight arena packed once, or the
/// weights themselves (a kernel without an arena: GPU, decoding), which
/// the caller keeps alive and unchanged while the pack is used.
struct WeightPack {
  std::vector<std::vector<Halide::Buffer<float>>> calls;
  std::vector<std::vector<float>> arenas; ///< The arenas' memory.

  WeightPack() = default;
  // `calls` view `arenas`: a move keeps their memory, a copy would not.
  WeightPack(WeightPack &&) = default;
  WeightPack &operator=(WeightPack &&) = default;
  WeightPack(const WeightPack &) = delete;
  WeightPack &operator=(const WeightPack &) = delete;
};

/// How codegen realises the schedules of the IR (which it applies as they
/// are: the schedule policy, default or naive, is attn-tile's).
struct CodegenOptions {
  /// Map root stages onto GPU blocks and threads (CUDA targets).
  bool gpu = false;
  /// With `gpu`: run the GPU schedules' loop nests on the host (blocks in
  /// parallel, threads serially, shared stages in host memory), to check
  /// what they compute on a machine without a GPU (see GpuLoops.h).
  bool gpuOnHost = false;
  /// Halide's autoscheduler to schedule the pipeline with (Autoschedule.h:
  /// "Mullapudi2016", "Li2018" or "Adams2019"), or "" for attn-tile's
  /// schedules. With one, codegen applies no schedule of its own (the IR's
  /// strategy should be naive: the plain algorithm) and the autoscheduler
  /// schedules every Func for the sizes below.
  std::string autoscheduler;
  /// With `autoscheduler`: the runtime dims' values it schedules for, the
  /// target and the threads it may use.
  std::map<std::string, int64_t> estimates;
  Halide::Target autoscheduleTarget;
  int autoscheduleThreads = 1;
  /// > 0: the pipeline is the kernel of one block of this many rows of the
  /// model's sequence dim, and ModelPipeline::run runs it block after block
  /// (Stream.h: models whose only mixing across rows is chunked, e.g.
  /// FLASH and linear attention; memory is that of a block, not of the
  /// sequence).
  int64_t streamRows = 0;
  /// The streamed kernel is for decoding (Decode.h): checkStreamable's
  /// errors say so, and attention over the whole sequence (causal) keeps a
  /// key/value cache.
  bool decode = false;
  /// Decoding: the block kernel runs blocks whose rows are a multiple of
  /// this and start at one (the model's chunks, smallestStreamRows; 0:
  /// streamRows); the step kernel (chunkStep) the rows between.
  int64_t commitRows = 0;
  /// Decoding: the kernel is the step kernel, whose block lies within one
  /// chunk of each chunked attention (a step, or the rows of a prefill
  /// past its last whole chunk; streamRows is then the most rows such a
  /// block holds). Attention within chunks reads the chunk's earlier rows
  /// from its chunk caches, and a causal chunk prefix adds the block to
  /// the current chunk's partial state (Decode.h).
  bool chunkStep = false;
  /// Streaming a model that sums over the whole sequence (non-causal
  /// FLASH's chunk_scan total): the kernel is the first sweep's, the
  /// totals kernel. Its results are only the carries' next values, each
  /// total carry the sum so far plus the block's (Stream.h); the model's
  /// kernel, the second sweep's, reads the totals and keeps them.
  bool streamTotals = false;
};

struct Program;
class Decoder;

/// ATTN_ERROR_ARGUMENT naming the first token id of `buffer` (the input
/// `info`, Halide order) outside 0..idBound-1 and where it is, or success.
runtime::Result checkTokenIds(const TensorInfo &info,
                              const Halide::Buffer<float> &buffer);

/// A model lowered to a Halide pipeline.
class ModelPipeline {
public:
  /// Lowers `model` (primitive ops only). On failure, emits an MLIR error at
  /// the offending op's location and returns null.
  static std::unique_ptr<ModelPipeline> build(mlir::func::FuncOp model,
                                              const CodegenOptions &options);
  ~ModelPipeline();

  const std::string &name() const;
  /// Where the schedules came from: attn-apply-tuning's summary, or ""
  /// (attn-tile's).
  const std::string &scheduleSource() const;
  const std::vector<TensorInfo> &inputs() const;
  const std::vector<TensorInfo> &weights() const;
  const std::vector<TensorInfo> &outputs() const;

  /// A function the model calls (a layer function or glue, made by
  /// attn-outline-layers), compiled once and run by the model per call.
  struct Kernel {
    std::string function;           ///< Its C name.
    std::vector<std::string> calls; ///< The layer each call computes.
  };
  /// The model's kernels; none when the model is one pipeline.
  std::vector<Kernel> kernels() const;
  /// The program of a model that calls functions, or null (Program.h).
  const Program *program() const;
  /// Where the kernel's weights lie in its one weight buffer; unused for a
  /// program (each kernel has its own: ProgramKernel::lowering) and where
  /// the kernel takes a buffer per weight.
  const WeightArena &weightArena() const;

  /// Streamed (CodegenOptions::streamRows; else 0 and none): the rows of
  /// one block, the unit of whole chunks decoding runs them in
  /// (CodegenOptions::commitRows), and the carries of each kernel call in
  /// the order the calls run (one call for a pipeline, one per step for a
  /// program).
  int64_t streamRows() const;
  int64_t commitRows() const;
  /// Decoding a model with chunks: the step kernels (the same model
  /// compiled with CodegenOptions::chunkStep, its kernels' carries the
  /// same) and the most rows of their blocks; else null and 0.
  ModelPipeline *stepKernels() const;
  int64_t stepRows() const;
  /// Streaming a model that sums over the whole sequence: whether a run
  /// takes two sweeps over the blocks, the totals kernel's
  /// (CodegenOptions::streamTotals) and then the model's.
  bool streamsTwice() const;
  struct CarryShape {
    /// Halide order, one sequence's (carrySizes in Stream.h); a cache's
    /// rows (dim 1) 0: the decoder's capacity.
    std::vector<int> sizes;
    bool cache = false; ///< A cache (Lowering::StreamCarry).
    /// A key/value cache of the decoder's capacity, else a chunk's.
    bool sizedByCapacity() const { return cache && sizes.at(1) == 0; }
    bool operator==(const CarryShape &other) const {
      return sizes == other.sizes && cache == other.cache;
    }
  };
  std::vector<std::vector<CarryShape>> streamCarries() const;

  /// The model lowered for `target`: the function `function` (inputs,
  /// weights, then outputs), or, for a program, each kernel's function
  /// (its name followed by `kernelSuffix`) in one module named `function`.
  Halide::Module compileToModule(const std::string &function,
                                 const Halide::Target &target,
                                 const std::string &kernelSuffix = "");

  /// JIT-compiles the pipeline (each kernel of a program) for `target`,
  /// once; later calls are no-ops. CPU kernels are compiled to shared
  /// objects and kept in the compile cache `cache` (NativeKernel.h); the
  /// others, and any that cannot be linked or loaded here (with a note in
  /// `stats`), by Halide's in-memory JIT. Throws Halide::Error when Halide
  /// fails.
  void compileJit(const Halide::Target &target, const CacheOptions &cache,
                  KernelCompileStats &stats);

  /// Checks, before anything is allocated, that a run with these shapes
  /// (MLIR order, one per input and output) fits: every buffer the pipeline
  /// stores within the one-buffer limit of the target it was compiled for
  /// (maxBufferBytes: 2 GiB without large_buffers), and the run within the
  /// machine's memory. ATTN_ERROR_OUT_OF_MEMORY with a message naming the
  /// buffer and its bytes otherwise.
  runtime::Result
  checkResources(const std::vector<std::vector<int64_t>> &inputShapes,
                 const std::vector<std::vector<int64_t>> &outputShapes) const;
  /// `result` with, when it is an out-of-memory error and the model could
  /// stream (not streamed now), the --stream-rows that would run it.
  runtime::Result withStreamHint(runtime::Result result) const;
  /// The one-buffer limit checkResources applies to a whole input or output
  /// (after compileJit). Streamed (CodegenOptions::streamRows), kernels see
  /// blocks of them, which checkResources checks against the target's
  /// limit, and a whole tensor is limited only by Halide's 32-bit strides:
  /// 2^31 - 1 floats.
  int64_t maxBufferBytes() const;

  /// Runs the JIT-compiled pipeline. Buffers are in the order of inputs(),
  /// weights() and outputs(), in Halide order (innermost dim first), and
  /// must already have the right shapes (JitModel::prepare checks them).
  /// When the kernel reports a failure: an allocation that failed or
  /// exceeds Halide's limits is ATTN_ERROR_OUT_OF_MEMORY; anything else is
  /// ATTN_ERROR_RUNTIME with a message that says it is an internal error.
  /// With `pack` (packWeights of these weights), the kernels read the
  /// weights from it; without, each kernel call packs its weight arena into
  /// a block of the buffer pool (0.46 ms for FLASH's 6.4 MB), and a
  /// streamed run packs once for its sequence.
  runtime::Result run(const std::vector<Halide::Buffer<float>> &inputs,
                      const std::vector<Halide::Buffer<float>> &weights,
                      std::vector<Halide::Buffer<float>> &outputs,
                      const WeightPack *pack = nullptr);

  /// `weights` (as run() takes them) packed for every kernel call of a run
  /// (WeightPack); ATTN_ERROR_SHAPE when they do not fit an arena's layout,
  /// ATTN_ERROR_OUT_OF_MEMORY when its copy cannot be allocated. In a
  /// program the layers' weights are their kernels' arguments
  /// (attn-hoist-weights): a pack holds the glue functions' own.
  runtime::Result packWeights(const std::vector<Halide::Buffer<float>> &weights,
                              WeightPack &pack) const;

  /// A decoder of one sequence of a streamed model, one pipeline or a
  /// program (Decode.h; its blocks are CodegenOptions::streamRows rows), on
  /// `weights` (as run() takes them). This pipeline and the weights'
  /// memory must outlive the decoder. ATTN_ERROR_ARGUMENT when the model
  /// was not compiled to stream.
  /// A model that attends over the whole sequence (GAU, MHSA: its
  /// decoder keeps a key/value cache, decodesWithCache()) needs the
  /// `capacity`, the most rows a sequence will hold (ATTN_ERROR_ARGUMENT
  /// past it); others ignore it.
  runtime::Result decoder(const std::vector<Halide::Buffer<float>> &weights,
                          int64_t capacity, std::unique_ptr<Decoder> &decoder);
  bool decodesWithCache() const;

private:
  ModelPipeline();
  /// build() without the step kernels or the totals kernel.
  static std::unique_ptr<ModelPipeline>
  buildKernels(mlir::func::FuncOp model, const CodegenOptions &options);
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// The floats of one sequence's value of `carry`; a key/value cache's per
/// row.
int64_t carryElements(const ModelPipeline::CarryShape &carry);

/// Memory of the JIT's buffer pool (shared by every JIT-compiled model).
struct BufferPoolStats {
  size_t peakLiveBytes = 0; ///< Most bytes in use at once since the reset.
  size_t cachedBytes = 0;   ///< Freed blocks kept for reuse.
};
BufferPoolStats bufferPoolStats();
/// Starts a new peak measurement (at the bytes live now).
void resetBufferPoolPeak();

} // namespace attnc::codegen

#endif // ATTNC_CODEGEN_CODEGEN_H
