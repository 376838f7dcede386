//===- Aot.cpp - ahead-of-time compilation of a model pipeline ------------===//
//
// This file implements compileAot and the generator of <model>.h, the C
// wrapper around the Halide kernel. The wrapper is header-only (static
// inline functions) so an application needs nothing but the generated
// library, the attnc runtime and a C or C++ compiler.
//
//===----------------------------------------------------------------------===//
#include "codegen/Aot.h"
#include "codegen/Program.h"
#include "codegen/Stream.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"

#include <fstream>
#include <functional>
#include <set>
#include <sstream>

namespace attnc::codegen {

std::string cIdentifier(const std::string &name) {
  std::string out;
  for (char c : name)
    out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0])))
    out = "_" + out;
  return out;
}

static std::string shapeArray(const TensorInfo &info) {
  std::ostringstream os;
  os << "{";
  for (size_t i = 0; i < info.shape.size(); ++i)
    os << (i ? ", " : "") << info.shape[i];
  os << "}";
  return os.str();
}

static std::string dimNameArray(const TensorInfo &info) {
  std::ostringstream os;
  os << "{";
  for (size_t i = 0; i < info.dims.size(); ++i)
    os << (i ? ", " : "")
       << (info.dims[i].empty() ? "NULL" : "\"" + info.dims[i] + "\"");
  os << "}";
  return os.str();
}

/// A C expression for axis `axis` (MLIR order) of the tensor in `slot`.
static std::string axisExpr(const Program &program, const Slot &slot,
                            size_t axis) {
  switch (slot.kind) {
  case Slot::Input:
    return cIdentifier(program.inputs[slot.index].name) + "->shape[" +
           std::to_string(axis) + "]";
  case Slot::Output:
    return cIdentifier(program.outputs[slot.index].name) + "->shape[" +
           std::to_string(axis) + "]";
  case Slot::Weight:
    return std::to_string(program.weights[slot.index].shape[axis]);
  case Slot::Temp:
    break;
  }
  return "t" + std::to_string(slot.index) + "_shape[" + std::to_string(axis) +
         "]";
}

/// Emits the packing of `weights` (the buffers of a kernel's weights
/// `infos`, in its order) into the arena `id` (attnc_pack_weights) and
/// returns the arena's buffer, which replaces them in the call; the caller
/// emits `free(id)` after it. A kernel without an arena keeps `weights`.
static std::vector<std::string>
packWeights(std::ostream &os, const WeightArena &arena,
            const std::vector<TensorInfo> &infos,
            const std::vector<std::string> &weights, const std::string &id) {
  if (!arena.used())
    return weights;
  auto list = [](const std::vector<std::string> &items) {
    std::string text = "{";
    for (size_t i = 0; i < items.size(); ++i)
      text += (i ? ", " : "") + items[i];
    return text + "}";
  };
  std::vector<std::string> offsets, sizes;
  for (size_t i = 0; i < infos.size(); ++i) {
    offsets.push_back(std::to_string(arena.offsets[i]));
    sizes.push_back(std::to_string(infos[i].numElements()));
  }
  os << "  {\n    const halide_buffer_t *const weights[] = " << list(weights)
     << ";\n    static const int64_t offsets[] = " << list(offsets)
     << ", sizes[] = " << list(sizes) << ";\n"
     << "    error = attnc_pack_weights(&" << id << ", &" << id << "_buf, "
     << id << "_dims, " << arena.elements << ", " << weights.size()
     << ", weights, offsets, sizes);\n  }\n"
     << "  if (error != 0) goto fail;\n";
  return {"&" + id + "_buf"};
}

/// The body of <m>_run for a program: each step's temporaries allocated,
/// its kernel called (the C expression `callee(function)` names it), the
/// temporaries it read last freed; on a failure, every temporary freed
/// before the `fail:` label that maps the error.
/// Streamed (decoding), `stepArgs[k]` are the buffers step k's kernel
/// takes after its arguments (the offset and its carries) and
/// `stepResults[k]` those after its results (the carries' next values).
static void
generateProgramRun(std::ostream &os, const Program &program,
                   const std::vector<std::string> &buffers,
                   const std::function<std::string(const std::string &)> &callee,
                   const std::vector<std::vector<std::string>> &stepArgs,
                   const std::vector<std::vector<std::string>> &stepResults) {
  // `buffers` holds the inputs', the weights' and the outputs' in order.
  auto first = buffers.begin();
  size_t inputs = program.inputs.size(), weights = program.weights.size();
  std::vector<std::string> inputBuffers(first, first + inputs),
      weightBuffers(first + inputs, first + inputs + weights),
      outputBuffers(first + inputs + weights, buffers.end()), tempBuffers;
  for (size_t t = 0; t < program.temps; ++t)
    tempBuffers.push_back("&t" + std::to_string(t) + "_buf");
  auto bufferOf = [&](const Slot &slot) -> const std::string & {
    return slot.in(inputBuffers, weightBuffers, outputBuffers, tempBuffers);
  };
  // The temporaries a step writes (one that became an output is not).
  std::vector<size_t> rank(program.temps, 0);
  std::vector<bool> written(program.temps, false);
  for (const Step &step : program.steps)
    for (size_t r = 0; r < step.results.size(); ++r)
      if (step.results[r].kind == Slot::Temp) {
        rank[step.results[r].index] = step.resultShapes[r].size();
        written[step.results[r].index] = true;
      }
  bool arenas = false;
  for (const Step &step : program.steps)
    arenas |= step.kernel->lowering.arena.used();
  if (arenas)
    os << "  float *attnc_arena = NULL; halide_buffer_t attnc_arena_buf; "
          "halide_dimension_t attnc_arena_dims[1];\n";
  for (size_t t = 0; t < program.temps; ++t) {
    if (!written[t])
      continue;
    size_t n = std::max<size_t>(rank[t], 1);
    os << "  float *t" << t << " = NULL; int64_t t" << t << "_shape[" << n
       << "]; halide_buffer_t t" << t << "_buf; halide_dimension_t t" << t
       << "_dims[" << n << "];\n";
  }
  for (size_t k = 0; k < program.steps.size(); ++k) {
    const Step &step = program.steps[k];
    os << "  /* step " << k << ": " << step.label << " ("
       << step.kernel->function << ") */\n"
       << "  step = \"" << step.label << "\";\n";
    for (size_t r = 0; r < step.results.size(); ++r) {
      const Slot &slot = step.results[r];
      if (slot.kind != Slot::Temp)
        continue;
      std::string t = "t" + std::to_string(slot.index);
      const std::vector<AxisSize> &sizes = step.resultShapes[r];
      std::string bytes = "sizeof(float)";
      for (size_t a = 0; a < sizes.size(); ++a) {
        os << "  " << t << "_shape[" << a << "] = "
           << (sizes[a].size >= 0
                   ? std::to_string(sizes[a].size)
                   : axisExpr(program, step.args[sizes[a].arg], sizes[a].axis))
           << ";\n";
        bytes += " * (size_t)" + t + "_shape[" + std::to_string(a) + "]";
      }
      os << "  " << t << " = (float *)malloc(" << bytes << ");\n"
         << "  if (!" << t
         << ") { error = halide_error_code_out_of_memory; goto fail; }\n"
         << "  attnc_buffer(&" << t << "_buf, " << t << "_dims, " << t << ", "
         << sizes.size() << ", " << t << "_shape);\n";
    }
    std::vector<std::string> args, weightArgs;
    for (const Slot &slot : step.args)
      args.push_back(bufferOf(slot));
    if (k < stepArgs.size())
      args.insert(args.end(), stepArgs[k].begin(), stepArgs[k].end());
    for (const Slot &slot : step.weights)
      weightArgs.push_back(bufferOf(slot));
    const Lowering &lowering = step.kernel->lowering;
    weightArgs = packWeights(os, lowering.arena, lowering.weights, weightArgs,
                             "attnc_arena");
    args.insert(args.end(), weightArgs.begin(), weightArgs.end());
    for (const Slot &slot : step.results)
      args.push_back(bufferOf(slot));
    if (k < stepResults.size())
      args.insert(args.end(), stepResults[k].begin(), stepResults[k].end());
    os << "  error = " << callee(step.kernel->function) << "(";
    for (size_t i = 0; i < args.size(); ++i)
      os << (i ? ", " : "") << args[i];
    os << ");\n";
    if (lowering.arena.used())
      os << "  free(attnc_arena); attnc_arena = NULL;\n";
    os << "  if (error != 0) goto fail;\n";
    for (size_t t = 0; t < program.temps; ++t)
      if (written[t] && program.lastUse[t] == k)
        os << "  free(t" << t << "); t" << t << " = NULL;\n";
  }
  for (const auto &[index, slot] : program.outputCopies) {
    const TensorInfo &out = program.outputs[index];
    std::string id = cIdentifier(out.name), bytes = "sizeof(float)";
    for (size_t a = 0; a < out.shape.size(); ++a)
      bytes += " * (size_t)" + id + "->shape[" + std::to_string(a) + "]";
    std::string source = bufferOf(slot) + "->host";
    os << "  memcpy(" << id << "->data, " << source << ", " << bytes << ");\n";
  }
  os << "  return ATTN_OK;\nfail:\n";
  if (arenas)
    os << "  free(attnc_arena);\n";
  for (size_t t = 0; t < program.temps; ++t)
    if (written[t])
      os << "  free(t" << t << ");\n";
}

/// The suffix of variant `i`'s kernel functions ("" when there is one).
static std::string variantSuffix(size_t i, size_t count) {
  return count > 1 ? "_v" + std::to_string(i) : "";
}

/// The C parameter type of model input `in`: token ids or an f32 tensor.
static std::string inputType(const TensorInfo &in) {
  return in.dtype == "i32" ? "const attn_ids *" : "const attn_tensor *";
}

/// The shape check of tensor `t` (a parameter of the same name) against
/// `expected` (MLIR order, < 0: any size), binding its runtime dims in the
/// function's `boundNames` table; ids are checked against their table.
static void generateCheck(std::ostream &os, const TensorInfo &t,
                          const char *role,
                          const std::vector<int64_t> &expected) {
  std::string id = cIdentifier(t.name);
  std::string what = std::string(role) + " '" + t.name + "'";
  TensorInfo shaped = t;
  shaped.shape = expected;
  os << "  {\n    static const int64_t expected[] = " << shapeArray(shaped)
     << ";\n"
     << "    static const char *const names[] = " << dimNameArray(t) << ";\n";
  if (t.dtype == "i32")
    os << "    status = attn_ids_check(" << id << ", \"" << what << "\", "
       << t.shape.size() << ", expected, names, " << t.idBound << ");\n";
  else
    os << "    status = attn_tensor_check(" << id << ", \"" << what << "\", "
       << t.shape.size() << ", expected, names);\n";
  os << "    if (status != ATTN_OK) return status;\n"
     << "    status = attnc_bind_dims(\"" << what << "\", " << id << "->rank, "
     << id << "->shape, expected, names, boundNames, boundSizes, &bound);\n"
     << "    if (status != ATTN_OK) return status;\n  }\n";
}

/// Declares the halide_buffer_t of `t` whose data is `data`: a weight's
/// pointer (`w->...`, with its static shape) or the tensor parameter of
/// that name (its data and shape); appends its address to `buffers`.
static void declareBuffer(std::ostream &os, std::vector<std::string> &buffers,
                          const TensorInfo &t, const std::string &data) {
  std::string id = "b" + std::to_string(buffers.size());
  os << "  halide_buffer_t " << id << "; halide_dimension_t " << id << "_dims["
     << std::max<size_t>(t.shape.size(), 1) << "];\n";
  if (data.rfind("w->", 0) == 0)
    os << "  { static const int64_t shape[] = " << shapeArray(t) << ";\n"
       << "    attnc_buffer(&" << id << ", " << id << "_dims, " << data << ", "
       << t.shape.size() << ", shape); }\n";
  else
    os << "  attnc_buffer(&" << id << ", " << id << "_dims, (const float *)"
       << data << "->data, " << t.shape.size() << ", " << data
       << "->shape);\n";
  buffers.push_back("&" + id);
}

/// The end of a generated entry point `function` after its `fail:` label:
/// the kernel's error as a status and a message naming the step.
static void generateFailure(std::ostream &os, const std::string &function) {
  os << "  {\n"
     << "    char message[768];\n"
     << "    attn_status code = ATTN_ERROR_RUNTIME;\n"
     << "    const char *what = \"the kernel failed\";\n"
     << "    if (error == halide_error_code_out_of_memory) {\n"
     << "      code = ATTN_ERROR_OUT_OF_MEMORY;\n"
     << "      what = \"out of memory in the kernel\";\n"
     << "    } else if (error == halide_error_code_buffer_argument_is_null) "
        "{\n"
     << "      code = ATTN_ERROR_ARGUMENT;\n"
     << "      what = \"a weight's pointer is NULL (fill the weights with "
        "the _weights_bind function)\";\n"
     << "    } else if (error == halide_error_code_buffer_allocation_too_large "
        "||\n"
     << "               error == halide_error_code_buffer_extents_too_large) "
        "{\n"
     << "      code = ATTN_ERROR_OUT_OF_MEMORY;\n"
     << "      what = \"a buffer of the kernel would exceed 2^31 - 1 bytes at "
        "this size\";\n"
     << "    }\n"
     << "    snprintf(message, sizeof message, \"" << function
     << ": %s%s%s (Halide error %d: %s)\", what,\n"
     << "             step[0] ? \" at \" : \"\", step, error, "
        "attnc_halide_message);\n"
     << "    return attn_set_error(code, message);\n"
     << "  }\n}\n\n";
}

/// The kernel calls on `buffers` (the inputs', the weights' and the
/// outputs'): the model's kernel `function` (through `callee`), or a
/// program's steps; streamed, with `callArgs` and `callResults` per call
/// (generateProgramRun). Ends with the `fail:` label.
static void generateCalls(
    std::ostream &os, const ModelPipeline &pipeline,
    const std::vector<std::string> &buffers,
    const std::function<std::string(const std::string &)> &callee,
    const std::string &function,
    const std::vector<std::vector<std::string>> &callArgs = {},
    const std::vector<std::vector<std::string>> &callResults = {}) {
  os << "  attnc_halide_message[0] = '\\0';\n"
     << "  halide_set_error_handler(attnc_halide_error);\n";
  if (const Program *program = pipeline.program()) {
    generateProgramRun(os, *program, buffers, callee, callArgs, callResults);
    return;
  }
  auto weights = buffers.begin() + pipeline.inputs().size();
  auto outputs = weights + pipeline.weights().size();
  std::vector<std::string> args(buffers.begin(), weights);
  if (!callArgs.empty())
    args.insert(args.end(), callArgs[0].begin(), callArgs[0].end());
  const WeightArena &arena = pipeline.weightArena();
  if (arena.used())
    os << "  float *attnc_arena = NULL; halide_buffer_t attnc_arena_buf; "
          "halide_dimension_t attnc_arena_dims[1];\n";
  std::vector<std::string> weightArgs =
      packWeights(os, arena, pipeline.weights(),
                  std::vector<std::string>(weights, outputs), "attnc_arena");
  args.insert(args.end(), weightArgs.begin(), weightArgs.end());
  args.insert(args.end(), outputs, buffers.end());
  if (!callResults.empty())
    args.insert(args.end(), callResults[0].begin(), callResults[0].end());
  os << "  error = " << callee(function) << "(";
  for (size_t i = 0; i < args.size(); ++i)
    os << (i ? ", " : "") << args[i];
  os << ");\n";
  if (arena.used())
    os << "  free(attnc_arena);\n";
  os << "  if (error != 0) goto fail;\n"
     << "  return ATTN_OK;\n"
     << "fail:\n";
}

/// `dims` as a C initializer list of the C expressions `sizes`.
static std::string initializer(const std::vector<std::string> &sizes) {
  std::string text = "{";
  for (size_t i = 0; i < sizes.size(); ++i)
    text += (i ? ", " : "") + sizes[i];
  return text + "}";
}

/// One block's shape of `t` for decoding (MLIR order, C expressions): the
/// batch dims 1, the rows `rows`, the features static (compileAot checks).
static std::vector<std::string> blockDims(const TensorInfo &t,
                                          const std::string &rows) {
  std::vector<std::string> dims;
  size_t rowAxis = streamRowAxis(t);
  for (size_t d = 0; d < t.shape.size(); ++d)
    dims.push_back(d < rowAxis    ? "1"
                   : d == rowAxis ? rows
                                  : std::to_string(t.shape[d]));
  return dims;
}

/// The elements of one row of `t` (the product of its features).
static int64_t rowElements(const TensorInfo &t) {
  int64_t elements = 1;
  for (size_t d = streamRowAxis(t) + 1; d < t.shape.size(); ++d)
    elements *= t.shape[d];
  return elements;
}

/// One of a decoding library's block functions (attn_decode_block_fn):
/// `fn`, which runs the kernels of `kernels` (`kernel` for one pipeline, a
/// program's each with `suffix`) on one block with its offset and carries.
static void generateBlockFunction(std::ostream &os,
                                  const ModelPipeline &kernels,
                                  const std::string &m, const std::string &fn,
                                  const std::string &kernel,
                                  const std::string &suffix,
                                  const std::string &doc) {
  const std::vector<TensorInfo> &inputs = kernels.inputs();
  const std::vector<TensorInfo> &outputs = kernels.outputs();
  std::vector<std::vector<ModelPipeline::CarryShape>> calls =
      kernels.streamCarries();
  os << "/* " << doc << " (attn_decode_block_fn): the kernels with the\n"
     << " * block's offset and carries. */\n"
     << "static attn_status " << fn << "(const void *model, int32_t rows,\n"
     << "    int64_t offset, const void *const *inputs, float *const *outputs,\n"
     << "    const float *const *carries, float *const *nexts) {\n"
     << "  const " << m << "_weights *w = (const " << m
     << "_weights *)model;\n"
     << "  int error;\n"
     << "  const char *step = \"\";\n"
     << "  float position = (float)offset;\n"
     << "  static const int64_t position_shape[1] = {1};\n"
     << "  halide_buffer_t position_buf; halide_dimension_t "
        "position_dims[1];\n"
     << "  attnc_buffer(&position_buf, position_dims, &position, 1, "
        "position_shape);\n"
     << "  (void)carries; (void)nexts;\n";
  // The block's tensors, named as <m>_run's parameters (the program's
  // generated steps read their shapes).
  auto blockTensor = [&](const TensorInfo &t, const std::string &data,
                         const char *constness) {
    std::string id = cIdentifier(t.name);
    os << "  attn_tensor " << id << "_block = {(float *)" << data << ", "
       << t.shape.size() << ", " << initializer(blockDims(t, "rows"))
       << "};\n"
       << "  " << constness << "attn_tensor *" << id << " = &" << id
       << "_block;\n";
  };
  for (size_t i = 0; i < inputs.size(); ++i)
    blockTensor(inputs[i], "inputs[" + std::to_string(i) + "]", "const ");
  for (size_t i = 0; i < outputs.size(); ++i)
    blockTensor(outputs[i], "outputs[" + std::to_string(i) + "]", "");
  // Each call's offset and carries, and the carries' next values.
  std::vector<std::vector<std::string>> callArgs, callResults;
  size_t carry = 0;
  for (const std::vector<ModelPipeline::CarryShape> &carries : calls) {
    callArgs.push_back({"&position_buf"});
    callResults.emplace_back();
    for (const ModelPipeline::CarryShape &shape : carries) {
      std::string c = "c" + std::to_string(carry), at = std::to_string(carry);
      const std::vector<int> &sizes = shape.sizes;
      std::vector<std::string> dims;
      for (size_t d = sizes.size(); d-- > 0;)
        dims.push_back(std::to_string(sizes[d]));
      size_t rank = sizes.size();
      std::string declare = "  halide_buffer_t " + c + "_in, " + c +
                            "_next; halide_dimension_t " + c + "_in_dims[" +
                            std::to_string(rank) + "], " + c + "_next_dims[" +
                            std::to_string(rank) + "];\n";
      if (!shape.cache) {
        os << "  static const int64_t " << c << "_shape[] = "
           << initializer(dims) << ";\n"
           << declare << "  attnc_buffer(&" << c << "_in, " << c
           << "_in_dims, carries[" << at << "], " << rank << ", " << c
           << "_shape);\n"
           << "  attnc_buffer(&" << c << "_next, " << c << "_next_dims, nexts["
           << at << "], " << rank << ", " << c << "_shape);\n";
      } else if (shape.sizedByCapacity()) {
        // A key/value cache: the rows so far, and the block's rows of the
        // same array written in place (their first row at `offset`).
        int64_t width = carryElements(shape);
        std::vector<std::string> sofar = dims, block = dims;
        sofar[rank - 2] = "offset + rows";
        block[rank - 2] = "rows";
        os << "  int64_t " << c << "_sofar[] = " << initializer(sofar)
           << ", " << c << "_rows[] = " << initializer(block) << ";\n"
           << declare << "  attnc_buffer(&" << c << "_in, " << c
           << "_in_dims, carries[" << at << "], " << rank << ", " << c
           << "_sofar);\n"
           << "  attnc_buffer(&" << c << "_next, " << c << "_next_dims, nexts["
           << at << "] + offset * " << width << ", " << rank << ", " << c
           << "_rows);\n"
           << "  " << c << "_next_dims[1].min = (int32_t)offset;\n";
      } else {
        // A chunk cache of C rows: all of them, and in place the rows the
        // block writes (runtime::cacheRows).
        int64_t size = sizes[1], width = carryElements(shape) / size;
        std::vector<std::string> block = dims;
        block[rank - 2] = c + "_count";
        os << "  int64_t " << c << "_first = offset % " << size << ", " << c
           << "_count = rows < " << size << " - " << c << "_first ? rows : "
           << size << " - " << c << "_first;\n"
           << "  static const int64_t " << c << "_shape[] = "
           << initializer(dims) << ";\n"
           << "  int64_t " << c << "_rows[] = " << initializer(block)
           << ";\n"
           << declare << "  attnc_buffer(&" << c << "_in, " << c
           << "_in_dims, carries[" << at << "], " << rank << ", " << c
           << "_shape);\n"
           << "  attnc_buffer(&" << c << "_next, " << c << "_next_dims, nexts["
           << at << "] + " << c << "_first * " << width << ", " << rank
           << ", " << c << "_rows);\n"
           << "  " << c << "_next_dims[1].min = (int32_t)" << c
           << "_first;\n";
      }
      callArgs.back().push_back("&" + c + "_in");
      callResults.back().push_back("&" + c + "_next");
      ++carry;
    }
  }
  std::vector<std::string> buffers;
  for (const TensorInfo &in : inputs)
    declareBuffer(os, buffers, in, cIdentifier(in.name));
  for (const TensorInfo &wt : kernels.weights())
    declareBuffer(os, buffers, wt, "w->" + cIdentifier(wt.name));
  for (const TensorInfo &out : outputs)
    declareBuffer(os, buffers, out, cIdentifier(out.name));
  auto callee = [&](const std::string &function) {
    return kernels.program() ? function + suffix : function;
  };
  generateCalls(os, kernels, buffers, callee, kernel, callArgs, callResults);
  generateFailure(os, fn);
}

/// Decoding in a library (`attnc compile --decode`): <m>_decode_block, the
/// streamed kernels of `decoding` on one block, and for a model with
/// chunks <m>_decode_step, its step kernels (the runtime's
/// attn_decode_block_fn), and the state API over attn_decoder:
/// <m>_state_new/free/reset/length/bytes, <m>_prefill and <m>_step.
static void generateDecoding(std::ostream &os, const ModelPipeline &decoding,
                             const std::string &m) {
  const std::vector<TensorInfo> &inputs = decoding.inputs();
  const std::vector<TensorInfo> &outputs = decoding.outputs();
  std::vector<std::vector<ModelPipeline::CarryShape>> calls =
      decoding.streamCarries();
  bool cached = decoding.decodesWithCache();
  const ModelPipeline *step = decoding.stepKernels();
  os << "/*===-- Incremental decoding (attnc compile --decode) "
        "--------------------===*/\n\n";
  generateBlockFunction(os, decoding, m, m + "_decode_block",
                        m + "_decode_kernel", "_decode",
                        "A block of " + std::to_string(decoding.streamRows()) +
                            " rows or fewer, whole chunks, of a decoded "
                            "sequence");
  if (step)
    generateBlockFunction(os, *step, m, m + "_decode_step",
                          m + "_step_kernel", "_step",
                          "A block within one chunk (" +
                              std::to_string(decoding.stepRows()) +
                              " rows or fewer) of a decoded sequence");
  // The state: an attn_decoder of this model.
  auto rowArray = [](const std::vector<int64_t> &elements) {
    std::vector<std::string> text;
    for (int64_t e : elements)
      text.push_back(std::to_string(e));
    if (text.empty())
      text.push_back("0");
    return initializer(text);
  };
  std::vector<int64_t> inRows, outRows, elements, carryCaches;
  for (const TensorInfo &in : inputs)
    inRows.push_back(rowElements(in));
  for (const TensorInfo &out : outputs)
    outRows.push_back(rowElements(out));
  for (const std::vector<ModelPipeline::CarryShape> &carries : calls)
    for (const ModelPipeline::CarryShape &shape : carries) {
      elements.push_back(carryElements(shape)); // a cache's per row
      carryCaches.push_back(shape.sizedByCapacity() ? 1 : shape.cache ? 2 : 0);
    }
  os << "/** One sequence of model " << m
     << " decoded incrementally: what its kernels carry\n"
     << " * from row to row, "
     << (cached ? "its key/value caches of `capacity` rows"
                : "constant in its length")
     << ". */\n"
     << "typedef attn_decoder " << m << "_state;\n\n"
     << "/** A new state at the start of a sequence, on weights `w`, which "
        "must\n * outlive it. Free it with " << m << "_state_free."
     << (cached ? " The model attends over the whole\n * sequence: its "
                  "key/value caches hold `capacity` tokens, the most the\n"
                  " * sequence will hold."
                : "")
     << " */\n"
     << "static inline attn_status " << m << "_state_new(const " << m
     << "_weights *w, " << (cached ? "int64_t capacity, " : "") << m
     << "_state **out) {\n"
     << "  static const int64_t inRows[] = " << rowArray(inRows) << ";\n"
     << "  static const int64_t outRows[] = " << rowArray(outRows) << ";\n"
     << "  static const int64_t carries[] = " << rowArray(elements)
     << ";\n"
     << "  static const int32_t caches[] = " << rowArray(carryCaches)
     << ";\n"
     << "  attn_decoder_layout layout;\n"
     << "  if (out) *out = NULL;\n"
     << "  if (!w) return attn_set_error(ATTN_ERROR_ARGUMENT, \"" << m
     << "_state_new: the weights are NULL\");\n"
     << "  layout.model = \"" << m << "\";\n"
     << "  layout.block_rows = " << decoding.streamRows() << ";\n"
     << "  layout.inputs = " << inputs.size() << ";\n"
     << "  layout.outputs = " << outputs.size() << ";\n"
     << "  layout.carries = " << elements.size() << ";\n"
     << "  layout.input_row_elements = inRows;\n"
     << "  layout.output_row_elements = outRows;\n"
     << "  layout.carry_elements = carries;\n"
     << "  layout.run_block = " << m << "_decode_block;\n"
     << "  layout.unit_rows = " << (step ? decoding.commitRows() : 1)
     << ";\n"
     << "  layout.run_step = "
     << (step ? m + "_decode_step" : std::string("NULL")) << ";\n"
     << "  layout.step_rows = " << decoding.stepRows() << ";\n"
     << "  layout.carry_caches = caches;\n"
     << "  layout.capacity = " << (cached ? "capacity" : "0") << ";\n"
     << "  return attn_decoder_new(&layout, w, out);\n}\n\n";
  // The rest of the state's API forwards to the runtime's decoder.
  struct Forward {
    const char *doc, *result, *name, *constness, *callee;
  };
  for (const Forward &f :
       {Forward{"Frees a state; NULL is a no-op.", "void", "free", "",
                "attn_decoder_free"},
        Forward{"Back to the start of a sequence.", "void", "reset", "",
                "attn_decoder_reset"},
        Forward{"Rows (tokens) the sequence holds.", "int64_t", "length",
                "const ", "attn_decoder_length"},
        Forward{"The state's bytes, the same at every length.", "int64_t",
                "bytes", "const ", "attn_decoder_state_bytes"}})
    os << "/** " << f.doc << " */\n"
       << "static inline " << f.result << " " << m << "_state_" << f.name
       << "(" << f.constness << m << "_state *state) {\n  "
       << (std::string(f.result) == "void" ? "" : "return ") << f.callee
       << "(state);\n}\n";
  os << "\n";

  // Prefill: whole tensors of one sequence.
  os << "/** Appends a prompt of n rows to the sequence: inputs";
  for (const TensorInfo &in : inputs) {
    std::vector<std::string> dims = blockDims(in, "n");
    os << " " << in.name << " " << (in.dtype == "i32" ? "i32" : "f32") << "[";
    for (size_t d = 0; d < dims.size(); ++d)
      os << (d ? ", " : "") << dims[d];
    os << "]";
  }
  os << ";\n * each output receives the prompt's n rows, or is NULL (not "
        "wanted). */\n"
     << "static inline attn_status " << m << "_prefill(" << m
     << "_state *state";
  for (const TensorInfo &in : inputs)
    os << ", " << inputType(in) << cIdentifier(in.name);
  for (const TensorInfo &out : outputs)
    os << ", attn_tensor *" << cIdentifier(out.name);
  os << ") {\n"
     << "  const char *boundNames[" << inputs.size() + outputs.size()
     << "]; int64_t boundSizes[" << inputs.size() + outputs.size()
     << "]; int bound = 0;\n"
     << "  attn_status status;\n"
     << "  if (!state) return attn_set_error(ATTN_ERROR_ARGUMENT, \"" << m
     << "_prefill: the state is NULL\");\n";
  // Batch dims 1, the rows any size (the same in all), the features.
  auto prefillShape = [](const TensorInfo &t) {
    std::vector<int64_t> shape = blockShape(t.shape, streamRowAxis(t), 1);
    shape[streamRowAxis(t)] = -1;
    return shape;
  };
  for (const TensorInfo &in : inputs)
    generateCheck(os, in, "input", prefillShape(in));
  for (const TensorInfo &out : outputs) {
    os << "  if (" << cIdentifier(out.name) << ")\n";
    generateCheck(os, out, "output", prefillShape(out));
  }
  const TensorInfo &first = inputs.front();
  os << "  {\n    const void *in[] = {";
  for (size_t i = 0; i < inputs.size(); ++i)
    os << (i ? ", " : "") << cIdentifier(inputs[i].name) << "->data";
  os << "};\n    float *out[] = {";
  for (size_t i = 0; i < outputs.size(); ++i) {
    std::string id = cIdentifier(outputs[i].name);
    os << (i ? ", " : "") << id << " ? " << id << "->data : NULL";
  }
  os << "};\n"
     << "    return attn_decoder_append(state, " << cIdentifier(first.name)
     << "->shape[" << streamRowAxis(first) << "], in, out);\n  }\n}\n\n";

  // Step: one row of each input and output.
  os << "/** Appends one row (a token) to the sequence:";
  for (const TensorInfo &in : inputs)
    os << " " << in.name
       << (in.dtype == "i32" ? " a token id"
                             : " " + std::to_string(rowElements(in)) +
                                   " floats");
  os << ";\n * each output receives the row's "
     << "outputs, or is NULL (not wanted). */\n"
     << "static inline attn_status " << m << "_step(" << m << "_state *state";
  for (const TensorInfo &in : inputs)
    os << (in.dtype == "i32" ? ", int32_t " : ", const float *")
       << cIdentifier(in.name);
  for (const TensorInfo &out : outputs)
    os << ", float *" << cIdentifier(out.name);
  os << ") {\n"
     << "  if (!state) return attn_set_error(ATTN_ERROR_ARGUMENT, \"" << m
     << "_step: the state is NULL\");\n";
  for (const TensorInfo &in : inputs) {
    std::string id = cIdentifier(in.name);
    if (in.dtype != "i32") {
      os << "  if (!" << id << ") return attn_set_error(ATTN_ERROR_ARGUMENT, "
         << "\"" << m << "_step: input '" << in.name << "' is NULL\");\n";
      continue;
    }
    if (in.idBound <= 0)
      continue;
    os << "  if (" << id << " < 0 || " << id << " >= " << in.idBound
       << ") {\n"
       << "    char message[256];\n"
       << "    snprintf(message, sizeof message, \"" << m
       << "_step: token id %ld of input '" << in.name
       << "' is out of range: the embedding table has " << in.idBound
       << " rows (ids 0.." << in.idBound - 1 << ")\", (long)" << id
       << ");\n"
       << "    return attn_set_error(ATTN_ERROR_ARGUMENT, message);\n  }\n";
  }
  os << "  {\n    const void *in[] = {";
  for (size_t i = 0; i < inputs.size(); ++i)
    os << (i ? ", " : "") << (inputs[i].dtype == "i32" ? "&" : "")
       << cIdentifier(inputs[i].name);
  os << "};\n    float *out[] = {";
  for (size_t i = 0; i < outputs.size(); ++i)
    os << (i ? ", " : "") << cIdentifier(outputs[i].name);
  os << "};\n    return attn_decoder_append(state, 1, in, out);\n  }\n}\n\n";
}

std::string generateWrapperHeader(const std::vector<AotVariant> &variants,
                                  const ModelPipeline *decoding,
                                  const std::string &name) {
  const ModelPipeline &pipeline = *variants.front().pipeline;
  const std::string m = name.empty() ? pipeline.name() : name;
  // The kernel `function` of the variant the run chose.
  auto callee = [&](const std::string &function) {
    if (variants.size() == 1)
      return function;
    std::string text = "(";
    for (size_t i = 0; i + 1 < variants.size(); ++i)
      text += "variant == " + std::to_string(i) + " ? " + function +
              variantSuffix(i, variants.size()) + " : ";
    return text + function + variantSuffix(variants.size() - 1, variants.size()) +
           ")";
  };
  std::ostringstream os;
  std::string guard = "ATTNC_MODEL_" + cIdentifier(m) + "_H";
  os << "/* " << m << ".h: generated by `attnc compile`; do not edit.\n"
     << " *\n"
     << " * C entry point of model '" << pipeline.name() << "'. Link lib" << m
     << ".a and the attnc runtime\n"
     << " * (libAttnRuntime.a), plus -lpthread -ldl.\n"
     << " *\n"
     << " *   attn_weights *set; " << m << "_weights w;\n"
     << " *   attn_weights_load(\"w.safetensors\", &set);\n"
     << " *   " << m << "_weights_bind(set, &w);       // checks names and shapes\n"
     << " *   " << m << "_run(&w, ";
  for (const TensorInfo &in : pipeline.inputs())
    os << "&" << cIdentifier(in.name) << ", ";
  for (size_t i = 0; i < pipeline.outputs().size(); ++i)
    os << (i ? ", " : "") << "&" << cIdentifier(pipeline.outputs()[i].name);
  os << ");\n"
     << " *\n"
     << " * Tensors are caller-owned f32 arrays in C order (attn_tensor),\n"
     << " * token ids int32 arrays (attn_ids).\n";
  for (const TensorInfo &in : pipeline.inputs())
    os << " *   input  " << in.name << " : " << in.dtype << in.shapeString()
       << "\n";
  for (const TensorInfo &out : pipeline.outputs())
    os << " *   output " << out.name << " : f32" << out.shapeString() << "\n";
  os << " * Schedules: "
     << (pipeline.scheduleSource().empty() ? "attn-tile's defaults"
                                           : pipeline.scheduleSource())
     << ".\n";
  if (variants.size() > 1) {
    os << " * Variants: " << variants.size()
       << ", each with the schedules tuned for its sizes; a run takes the one\n"
       << " * tuned for the sizes nearest to its own (in log size):\n";
    for (size_t i = 0; i < variants.size(); ++i) {
      os << " *   variant " << i << ":";
      for (const auto &[dim, size] : variants[i].dims)
        os << " " << dim << "=" << size;
      os << " (" << variants[i].pipeline->scheduleSource() << ")\n";
    }
  }
  if (decoding)
    os << " * Decoding (--decode): one sequence at a time, a state per "
          "sequence:\n"
       << " *   " << m << "_state *s; " << m << "_state_new(&w, "
       << (decoding->decodesWithCache() ? "capacity, " : "") << "&s);\n"
       << " *   " << m << "_prefill(s, prompt..., outputs or NULL);   "
          "// the prompt's rows\n"
       << " *   " << m << "_step(s, one row or token id, its outputs);   "
          "// per token\n"
       << " *   " << m << "_state_free(s);\n";
  os
     << " * Every function returns ATTN_OK or an error status; the message is\n"
     << " * attn_error_message().\n"
     << " */\n"
     << "#ifndef " << guard << "\n#define " << guard << "\n\n"
     << "#include \"attn_runtime.h\"\n"
     << "#include \"" << m << "_kernel.h\"\n\n"
     << "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n\n"
     << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";

  // Helpers shared by every generated header.
  os << "#ifndef ATTNC_WRAPPER_HELPERS\n#define ATTNC_WRAPPER_HELPERS\n"
     << "#ifdef __cplusplus\n#define ATTNC_THREAD_LOCAL thread_local\n"
     << "#else\n#define ATTNC_THREAD_LOCAL _Thread_local\n#endif\n"
     << "/* The last message of Halide's runtime on this thread. */\n"
     << "static ATTNC_THREAD_LOCAL char attnc_halide_message[512];\n"
     << "/* Halide's default handler aborts the process; this one keeps the\n"
     << "   message for the status the wrapper returns. */\n"
     << "static void attnc_halide_error(void *user_context, const char *m) "
        "{\n"
     << "  size_t len;\n  (void)user_context;\n"
     << "  snprintf(attnc_halide_message, sizeof attnc_halide_message, "
        "\"%s\", m);\n"
     << "  len = strlen(attnc_halide_message);\n"
     << "  while (len > 0 && attnc_halide_message[len - 1] == '\\n')\n"
     << "    attnc_halide_message[--len] = '\\0';\n"
     << "}\n\n"
     << "/* Describes a C-order tensor to Halide (innermost dim first). */\n"
     << "static inline void attnc_buffer(halide_buffer_t *b, "
        "halide_dimension_t *dims,\n"
     << "                                const float *data, int32_t rank, "
        "const int64_t *shape) {\n"
     << "  int64_t stride = 1;\n"
     << "  memset(b, 0, sizeof(*b));\n"
     << "  for (int32_t i = 0; i < rank; ++i) {\n"
     << "    int32_t axis = rank - 1 - i;\n"
     << "    dims[i].min = 0;\n"
     << "    dims[i].extent = (int32_t)shape[axis];\n"
     << "    dims[i].stride = (int32_t)stride;\n"
     << "    dims[i].flags = 0;\n"
     << "    stride *= shape[axis];\n"
     << "  }\n"
     << "  b->host = (uint8_t *)data;\n"
     << "  b->type.code = halide_type_float;\n"
     << "  b->type.bits = 32;\n"
     << "  b->type.lanes = 1;\n"
     << "  b->dimensions = rank;\n"
     << "  b->dim = dims;\n"
     << "}\n\n"
     << "/* Binds each runtime dim of `t` (expected[i] < 0) in `bound`, by "
        "name. */\n"
     << "static inline attn_status attnc_bind_dims(const char *what, int32_t "
        "rank,\n"
     << "    const int64_t *shape, const int64_t *expected, const char *const "
        "*names,\n"
     << "    const char **boundNames, int64_t *boundSizes, int *count) {\n"
     << "  char message[256];\n"
     << "  for (int32_t i = 0; i < rank; ++i) {\n"
     << "    int k;\n"
     << "    if (expected[i] >= 0) continue;\n"
     << "    for (k = 0; k < *count; ++k)\n"
     << "      if (strcmp(boundNames[k], names[i]) == 0) break;\n"
     << "    if (k == *count) {\n"
     << "      boundNames[k] = names[i]; boundSizes[k] = shape[i]; "
        "++*count;\n"
     << "    } else if (boundSizes[k] != shape[i]) {\n"
     << "      snprintf(message, sizeof message, \"%s has %s = %lld, but an "
        "earlier tensor has %s = %lld\",\n"
     << "               what, names[i], (long long)shape[i], names[i], "
        "(long long)boundSizes[k]);\n"
     << "      return attn_set_error(ATTN_ERROR_SHAPE, message);\n"
     << "    }\n"
     << "  }\n"
     << "  return ATTN_OK;\n"
     << "}\n#endif\n\n";
  // Its own guard: a header of an attnc without it may come first.
  os << "#ifndef ATTNC_PACK_WEIGHTS_HELPER\n"
     << "#define ATTNC_PACK_WEIGHTS_HELPER\n"
     << "/* A kernel's weights packed into one new buffer of `elements` "
        "floats, *arena\n"
     << "   (its weight arena, described by `b`): weight i, `sizes[i]` "
        "floats, at\n"
     << "   offsets[i]. 0, or the Halide error: a weight's pointer is NULL, "
        "or out of\n"
     << "   memory. The caller frees *arena. */\n"
     << "static inline int attnc_pack_weights(float **arena, "
        "halide_buffer_t *b,\n"
     << "    halide_dimension_t *dims, int64_t elements, int count,\n"
     << "    const halide_buffer_t *const *weights, const int64_t *offsets,\n"
     << "    const int64_t *sizes) {\n"
     << "  int i;\n"
     << "  *arena = NULL;\n"
     << "  for (i = 0; i < count; ++i)\n"
     << "    if (!weights[i]->host) return "
        "halide_error_code_buffer_argument_is_null;\n"
     << "  *arena = (float *)malloc((size_t)elements * sizeof(float));\n"
     << "  if (!*arena) return halide_error_code_out_of_memory;\n"
     << "  for (i = 0; i < count; ++i)\n"
     << "    memcpy(*arena + offsets[i], weights[i]->host, (size_t)sizes[i] "
        "* sizeof(float));\n"
     << "  attnc_buffer(b, dims, *arena, 1, &elements);\n"
     << "  return 0;\n"
     << "}\n#endif\n\n";

  // Weights struct and binder.
  os << "/** Weights of model " << m
     << ": one pointer per weight, owned by the attn_weights set. */\n"
     << "typedef struct " << m << "_weights {\n";
  for (const TensorInfo &w : pipeline.weights())
    os << "  const float *" << cIdentifier(w.name) << "; /* \"" << w.name
       << "\" f32" << w.shapeString() << " */\n";
  if (pipeline.weights().empty())
    os << "  int unused; /* the model has no weights */\n";
  os << "} " << m << "_weights;\n\n"
     << "/** Fills `w` from `set`, checking that every weight is present with "
        "its shape. */\n"
     << "static inline attn_status " << m
     << "_weights_bind(const attn_weights *set, " << m << "_weights *w) {\n"
     << "  attn_status status = ATTN_OK;\n";
  for (const TensorInfo &w : pipeline.weights())
    os << "  {\n    static const int64_t shape[] = " << shapeArray(w) << ";\n"
       << "    status = attn_weights_get(set, \"" << w.name << "\", "
       << w.shape.size() << ", shape, &w->" << cIdentifier(w.name) << ");\n"
       << "    if (status != ATTN_OK) return status;\n  }\n";
  os << "  (void)set; (void)w;\n  return status;\n}\n\n";

  if (variants.size() > 1) {
    // The nearest tuned sizes: the least product of max(a, b) / min(a, b)
    // over the dims (the least sum of |log a - log b|; no libm needed).
    const std::map<std::string, int64_t> &first = variants.front().dims;
    os << "/** The variant " << m
       << "_run takes for runtime dims `names` = `sizes` (`count` of\n"
       << " * them): the one tuned for the nearest sizes (in log size). */\n"
       << "static inline int " << m
       << "_variant(const char *const *names, const int64_t *sizes, int "
          "count) {\n"
       << "  static const char *const tunedNames[] = {";
    size_t d = 0;
    for (const auto &entry : first)
      os << (d++ ? ", " : "") << "\"" << entry.first << "\"";
    os << "};\n  static const int64_t tuned[" << variants.size() << "]["
       << first.size() << "] = {";
    for (size_t i = 0; i < variants.size(); ++i) {
      os << (i ? ", " : "") << "{";
      size_t k = 0;
      for (const auto &entry : variants[i].dims)
        os << (k++ ? ", " : "") << entry.second;
      os << "}";
    }
    os << "};\n"
       << "  double best = 0;\n"
       << "  int v, d, k, chosen = 0;\n"
       << "  for (v = 0; v < " << variants.size() << "; ++v) {\n"
       << "    double ratio = 1;\n"
       << "    for (d = 0; d < " << first.size() << "; ++d) {\n"
       << "      double size = 1, want = (double)tuned[v][d];\n"
       << "      for (k = 0; k < count; ++k)\n"
       << "        if (strcmp(names[k], tunedNames[d]) == 0 && sizes[k] > 0)\n"
       << "          size = (double)sizes[k];\n"
       << "      ratio *= size > want ? size / want : want / size;\n"
       << "    }\n"
       << "    if (v == 0 || ratio < best) { best = ratio; chosen = v; }\n"
       << "  }\n"
       << "  return chosen;\n}\n\n";
  }

  // Run.
  os << "/** Runs model " << m << ". Checks every shape first. */\n"
     << "static inline attn_status " << m << "_run(const " << m
     << "_weights *w";
  for (const TensorInfo &in : pipeline.inputs())
    os << ", " << inputType(in) << cIdentifier(in.name);
  for (const TensorInfo &out : pipeline.outputs())
    os << ", attn_tensor *" << cIdentifier(out.name);
  // One entry per runtime dim the inputs and outputs can bind.
  std::set<std::string> runtimeDims;
  size_t unnamed = 0;
  for (const auto *tensors : {&pipeline.inputs(), &pipeline.outputs()})
    for (const TensorInfo &t : *tensors)
      for (size_t i = 0; i < t.shape.size(); ++i)
        if (t.shape[i] >= 0)
          continue;
        else if (t.dims[i].empty())
          ++unnamed;
        else
          runtimeDims.insert(t.dims[i]);
  size_t table = std::max<size_t>(runtimeDims.size() + unnamed, 1);
  os << ") {\n"
     << "  const char *boundNames[" << table << "]; int64_t boundSizes["
     << table << "]; int bound = 0;\n"
     << "  attn_status status;\n"
     << "  int error;\n"
     << "  const char *step = \"\"; /* the step running (a layer or glue), for messages */\n";
  for (const TensorInfo &in : pipeline.inputs())
    generateCheck(os, in, "input", in.shape);
  for (const TensorInfo &out : pipeline.outputs())
    generateCheck(os, out, "output", out.shape);
  os << "  if (!w) return attn_set_error(ATTN_ERROR_ARGUMENT, \"" << m
     << "_run: the weights are NULL\");\n";
  if (variants.size() > 1)
    os << "  const int variant = " << m
       << "_variant(boundNames, boundSizes, bound);\n";
  std::vector<std::string> buffers;
  for (const TensorInfo &in : pipeline.inputs())
    declareBuffer(os, buffers, in, cIdentifier(in.name));
  for (const TensorInfo &wt : pipeline.weights())
    declareBuffer(os, buffers, wt, "w->" + cIdentifier(wt.name));
  for (const TensorInfo &out : pipeline.outputs())
    declareBuffer(os, buffers, out, cIdentifier(out.name));
  generateCalls(os, pipeline, buffers, callee, m + "_kernel");
  generateFailure(os, m + "_run");
  if (decoding)
    generateDecoding(os, *decoding, m);
  os << "#ifdef __cplusplus\n} /* extern \"C\" */\n#endif\n\n#endif /* " << guard
     << " */\n";
  return os.str();
}

mlir::LogicalResult
printLoweredStmt(ModelPipeline &pipeline, const Halide::Target &target,
                 llvm::raw_ostream &os,
                 llvm::function_ref<mlir::InFlightDiagnostic()> emitError) {
  llvm::SmallString<128> path;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("attnc", "stmt", path))
    return emitError() << "cannot create a temporary file for the statement: "
                       << ec.message();
  try {
    pipeline.compileToModule(pipeline.name() + "_kernel", target)
        .compile({{Halide::OutputFileType::stmt, std::string(path)}});
  } catch (const Halide::Error &e) {
    llvm::sys::fs::remove(path);
    return emitError() << "internal error: cannot lower model '"
                       << pipeline.name() << "': " << e.what();
  }
  std::ifstream in(std::string(path.str()));
  std::stringstream text;
  text << in.rdbuf();
  llvm::sys::fs::remove(path);
  os << text.str();
  return mlir::success();
}

/// Whether two tensor lists name the same tensors with the same shapes.
static bool sameTensors(const std::vector<TensorInfo> &a,
                        const std::vector<TensorInfo> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || a[i].shape != b[i].shape ||
        a[i].dims != b[i].dims)
      return false;
  return true;
}

/// Whether `b` is `a` with other schedules: the same tensors, and for a
/// program the same steps calling kernels of the same names (<m>_run is
/// generated once for every variant).
static bool sameModel(const ModelPipeline &a, const ModelPipeline &b) {
  if (!sameTensors(a.inputs(), b.inputs()) ||
      !sameTensors(a.weights(), b.weights()) ||
      !sameTensors(a.outputs(), b.outputs()) || !a.program() != !b.program())
    return false;
  if (!a.program())
    return true;
  const Program &p = *a.program(), &q = *b.program();
  if (p.steps.size() != q.steps.size() || p.temps != q.temps)
    return false;
  for (size_t k = 0; k < p.steps.size(); ++k)
    if (p.steps[k].kernel->function != q.steps[k].kernel->function ||
        !(p.steps[k].args == q.steps[k].args) ||
        !(p.steps[k].results == q.steps[k].results))
      return false;
  return true;
}

mlir::LogicalResult
compileAot(const std::vector<AotVariant> &variants, ModelPipeline *decoding,
           const Halide::Target &target, const std::string &dir,
           const std::string &name, std::vector<std::string> &written,
           llvm::function_ref<mlir::InFlightDiagnostic()> emitError) {
  const ModelPipeline &first = *variants.front().pipeline;
  const std::string m = name.empty() ? first.name() : name;
  for (const AotVariant &variant : variants)
    if (!sameModel(first, *variant.pipeline) ||
        variant.dims.size() != variants.front().dims.size())
      return emitError() << "the tuned variants of model '" << m
                         << "' differ in more than their schedules; compile "
                            "it with one set of tuned sizes";
  // A decoder keeps blocks of one sequence: the features must be static.
  if (decoding)
    for (const auto *tensors : {&first.inputs(), &first.outputs()})
      for (const TensorInfo &t : *tensors)
        for (size_t d = streamRowAxis(t) + 1; d < t.shape.size(); ++d)
          if (t.shape[d] < 0)
            return emitError()
                   << "decoding keeps blocks of '" << t.name << "' "
                   << t.shapeString() << ", whose axis " << d << " ('"
                   << t.dims[d] << "') must then have a static size";
  std::string library = dir + "/lib" + m + ".a";
  std::string kernelHeader = dir + "/" + m + "_kernel.h";
  std::string wrapper = dir + "/" + m + ".h";
  try {
    std::vector<Halide::Module> modules;
    for (size_t i = 0; i < variants.size(); ++i) {
      std::string suffix = variantSuffix(i, variants.size());
      modules.push_back(variants[i].pipeline->compileToModule(
          m + "_kernel" + suffix, target, suffix));
    }
    if (decoding) {
      modules.push_back(decoding->compileToModule(m + "_decode_kernel",
                                                  target, "_decode"));
      if (ModelPipeline *step = decoding->stepKernels())
        modules.push_back(
            step->compileToModule(m + "_step_kernel", target, "_step"));
    }
    Halide::Module module = modules.size() == 1
                                ? modules.front()
                                : Halide::link_modules(m + "_kernel", modules);
    module.compile({{Halide::OutputFileType::static_library, library},
                    {Halide::OutputFileType::c_header, kernelHeader}});
  } catch (const Halide::Error &e) {
    return emitError() << "cannot compile model '" << m << "' for target "
                       << target.to_string() << ": " << e.what();
  }
  std::ofstream out(wrapper);
  out << generateWrapperHeader(variants, decoding, m);
  if (!out)
    return emitError() << "cannot write '" << wrapper << "'";
  written.insert(written.end(), {library, kernelHeader, wrapper});
  return mlir::success();
}

} // namespace attnc::codegen
