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

/// The body of <m>_run for a program: each step's temporaries allocated,
/// its kernel called (the C expression `callee(function)` names it), the
/// temporaries it read last freed; on a failure, every temporary freed
/// before the `fail:` label that maps the error.
static void
generateProgramRun(std::ostream &os, const Program &program,
                   const std::vector<std::string> &buffers,
                   const std::function<std::string(const std::string &)> &callee) {
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
  std::vector<size_t> rank(program.temps, 0);
  for (const Step &step : program.steps)
    for (size_t r = 0; r < step.results.size(); ++r)
      if (step.results[r].kind == Slot::Temp)
        rank[step.results[r].index] = step.resultShapes[r].size();
  for (size_t t = 0; t < program.temps; ++t) {
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
    os << "  error = " << callee(step.kernel->function) << "(";
    std::vector<std::string> args;
    for (const Slot &slot : step.args)
      args.push_back(bufferOf(slot));
    for (const Slot &slot : step.weights)
      args.push_back(bufferOf(slot));
    for (const Slot &slot : step.results)
      args.push_back(bufferOf(slot));
    for (size_t i = 0; i < args.size(); ++i)
      os << (i ? ", " : "") << args[i];
    os << ");\n  if (error != 0) goto fail;\n";
    for (size_t t = 0; t < program.temps; ++t)
      if (program.lastUse[t] == k)
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
  for (size_t t = 0; t < program.temps; ++t)
    os << "  free(t" << t << ");\n";
}

/// The suffix of variant `i`'s kernel functions ("" when there is one).
static std::string variantSuffix(size_t i, size_t count) {
  return count > 1 ? "_v" + std::to_string(i) : "";
}

std::string generateWrapperHeader(const std::vector<AotVariant> &variants,
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
     << " * Tensors are caller-owned f32 arrays in C order (attn_tensor).\n";
  for (const TensorInfo &in : pipeline.inputs())
    os << " *   input  " << in.name << " : f32" << in.shapeString() << "\n";
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
     << "static inline attn_status attnc_bind_dims(const char *what, const "
        "attn_tensor *t,\n"
     << "    const int64_t *expected, const char *const *names,\n"
     << "    const char **boundNames, int64_t *boundSizes, int *count) {\n"
     << "  char message[256];\n"
     << "  for (int32_t i = 0; i < t->rank; ++i) {\n"
     << "    int k;\n"
     << "    if (expected[i] >= 0) continue;\n"
     << "    for (k = 0; k < *count; ++k)\n"
     << "      if (strcmp(boundNames[k], names[i]) == 0) break;\n"
     << "    if (k == *count) {\n"
     << "      boundNames[k] = names[i]; boundSizes[k] = t->shape[i]; "
        "++*count;\n"
     << "    } else if (boundSizes[k] != t->shape[i]) {\n"
     << "      snprintf(message, sizeof message, \"%s has %s = %lld, but an "
        "earlier tensor has %s = %lld\",\n"
     << "               what, names[i], (long long)t->shape[i], names[i], "
        "(long long)boundSizes[k]);\n"
     << "      return attn_set_error(ATTN_ERROR_SHAPE, message);\n"
     << "    }\n"
     << "  }\n"
     << "  return ATTN_OK;\n"
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
    os << ", const attn_tensor *" << cIdentifier(in.name);
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
  size_t maxRank = 1;
  auto check = [&](const TensorInfo &t, const char *role) {
    std::string id = cIdentifier(t.name);
    maxRank = std::max(maxRank, t.shape.size());
    os << "  {\n    static const int64_t expected[] = " << shapeArray(t)
       << ";\n"
       << "    static const char *const names[] = " << dimNameArray(t) << ";\n"
       << "    status = attn_tensor_check(" << id << ", \"" << role << " '"
       << t.name << "'\", " << t.shape.size() << ", expected, names);\n"
       << "    if (status != ATTN_OK) return status;\n"
       << "    status = attnc_bind_dims(\"" << role << " '" << t.name << "'\", "
       << id << ", expected, names, boundNames, boundSizes, &bound);\n"
       << "    if (status != ATTN_OK) return status;\n  }\n";
  };
  for (const TensorInfo &in : pipeline.inputs())
    check(in, "input");
  for (const TensorInfo &out : pipeline.outputs())
    check(out, "output");
  os << "  if (!w) return attn_set_error(ATTN_ERROR_ARGUMENT, \"" << m
     << "_run: the weights are NULL\");\n";
  if (variants.size() > 1)
    os << "  const int variant = " << m
       << "_variant(boundNames, boundSizes, bound);\n";
  std::vector<std::string> buffers;
  auto buffer = [&](const TensorInfo &t, const std::string &data) {
    std::string id = "b" + std::to_string(buffers.size());
    os << "  halide_buffer_t " << id << "; halide_dimension_t " << id << "_dims["
       << std::max<size_t>(t.shape.size(), 1) << "];\n";
    if (data.rfind("w->", 0) == 0)
      os << "  { static const int64_t shape[] = " << shapeArray(t) << ";\n"
         << "    attnc_buffer(&" << id << ", " << id << "_dims, " << data << ", "
         << t.shape.size() << ", shape); }\n";
    else
      os << "  attnc_buffer(&" << id << ", " << id << "_dims, " << data
         << "->data, " << t.shape.size() << ", " << data << "->shape);\n";
    buffers.push_back("&" + id);
  };
  for (const TensorInfo &in : pipeline.inputs())
    buffer(in, cIdentifier(in.name));
  for (const TensorInfo &wt : pipeline.weights())
    buffer(wt, "w->" + cIdentifier(wt.name));
  for (const TensorInfo &out : pipeline.outputs())
    buffer(out, cIdentifier(out.name));
  os << "  attnc_halide_message[0] = '\\0';\n"
     << "  halide_set_error_handler(attnc_halide_error);\n";
  const Program *program = pipeline.program();
  if (!program) {
    os << "  error = " << callee(m + "_kernel") << "(";
    for (size_t i = 0; i < buffers.size(); ++i)
      os << (i ? ", " : "") << buffers[i];
    os << ");\n"
       << "  if (error != 0) goto fail;\n"
       << "  return ATTN_OK;\n"
       << "fail:\n";
  } else {
    generateProgramRun(os, *program, buffers, callee);
  }
  os << "  {\n"
     << "    char message[768];\n"
     << "    attn_status code = ATTN_ERROR_RUNTIME;\n"
     << "    const char *what = \"the kernel failed\";\n"
     << "    if (error == halide_error_code_out_of_memory) {\n"
     << "      code = ATTN_ERROR_OUT_OF_MEMORY;\n"
     << "      what = \"out of memory in the kernel\";\n"
     << "    } else if (error == halide_error_code_buffer_allocation_too_large "
        "||\n"
     << "               error == halide_error_code_buffer_extents_too_large) "
        "{\n"
     << "      code = ATTN_ERROR_OUT_OF_MEMORY;\n"
     << "      what = \"a buffer of the kernel would exceed 2^31 - 1 bytes at "
        "this size\";\n"
     << "    }\n"
     << "    snprintf(message, sizeof message, \"" << m
     << "_run: %s%s%s (Halide error %d: %s)\", what,\n"
     << "             step[0] ? \" at \" : \"\", step, error, "
        "attnc_halide_message);\n"
     << "    return attn_set_error(code, message);\n"
     << "  }\n}\n\n"
     << "#ifdef __cplusplus\n} /* extern \"C\" */\n#endif\n\n#endif /* " << guard
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
compileAot(const std::vector<AotVariant> &variants, const Halide::Target &target,
           const std::string &dir, const std::string &name,
           std::vector<std::string> &written,
           llvm::function_ref<mlir::InFlightDiagnostic()> emitError) {
  const ModelPipeline &first = *variants.front().pipeline;
  const std::string m = name.empty() ? first.name() : name;
  for (const TensorInfo &input : first.inputs())
    if (input.dtype != "f32")
      return emitError() << "model '" << m << "' takes token ids (input '"
                         << input.name
                         << "', i32), which libraries do not take yet; "
                            "run it with attnc run or bench";
  for (const AotVariant &variant : variants)
    if (!sameModel(first, *variant.pipeline) ||
        variant.dims.size() != variants.front().dims.size())
      return emitError() << "the tuned variants of model '" << m
                         << "' differ in more than their schedules; compile "
                            "it with one set of tuned sizes";
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
  out << generateWrapperHeader(variants, m);
  if (!out)
    return emitError() << "cannot write '" << wrapper << "'";
  written.insert(written.end(), {library, kernelHeader, wrapper});
  return mlir::success();
}

} // namespace attnc::codegen
