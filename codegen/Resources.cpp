//===- Resources.cpp - sizes of a run, checked before allocation ----------===//
//
// This file implements the size arithmetic and limits of Resources.h.
//
//===----------------------------------------------------------------------===//
#include "codegen/Resources.h"
#include "codegen/LoweringImpl.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <unistd.h>

namespace attnc::codegen {

std::string formatBytes(int64_t bytes) {
  char text[96];
  std::snprintf(text, sizeof text, "%lld bytes (%.2f GiB)",
                static_cast<long long>(bytes), double(bytes) / (1 << 30));
  return text;
}

int64_t physicalMemoryBytes() {
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || pageSize <= 0)
    return 0;
  return int64_t(pages) * int64_t(pageSize);
}

static std::string shapeText(const std::vector<int64_t> &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

runtime::Result checkBufferSize(const std::string &what,
                                const std::vector<int64_t> &shape) {
  auto tooLarge = [&](const std::string &why,
                      attn_status status = ATTN_ERROR_OUT_OF_MEMORY) {
    return runtime::Result::error(status, what + " " + shapeText(shape) + why);
  };
  for (int64_t size : shape)
    if (size > kMaxExtent)
      return tooLarge(" has an axis of " + std::to_string(size) +
                      " elements; an axis is limited to " +
                      std::to_string(kMaxExtent));
  int64_t bytes = f32Bytes(shape);
  if (bytes < 0)
    return tooLarge(" has more elements than a 64-bit count holds",
                    ATTN_ERROR_SHAPE); // as attn_tensor_check says
  if (bytes > kMaxBufferBytes)
    return tooLarge(" needs " + formatBytes(bytes) +
                    "; one buffer is limited to " +
                    std::to_string(kMaxBufferBytes) +
                    " bytes (Halide 14 without large buffers)");
  return runtime::Result::success();
}

runtime::Result parseDimSize(const std::string &spec, const std::string &text,
                             int64_t &size) {
  size = 0;
  bool ok = !text.empty() && text.size() <= 10;
  for (char c : text)
    ok = ok && c >= '0' && c <= '9';
  if (ok)
    size = std::stoll(text);
  if (!ok || size < 1 || size > kMaxExtent)
    return runtime::Result::error(
        ATTN_ERROR_ARGUMENT, "invalid size in --dim " + spec +
                                 ": a runtime dim is an integer from 1 to " +
                                 std::to_string(kMaxExtent));
  return runtime::Result::success();
}

/// The value of `extent` with the inputs' extents bound, or -1 when it is
/// not a constant then.
static int64_t evaluateExtent(const Halide::Expr &extent,
                              const std::map<std::string, Halide::Expr> &bound) {
  Halide::Expr value = Halide::Internal::simplify(
      Halide::Internal::substitute(bound, Halide::cast<int64_t>(extent)));
  const int64_t *constant = Halide::Internal::as_const_int(value);
  return constant ? *constant : -1;
}

runtime::Result
checkStoredBuffers(const std::vector<StoredBuffer> &stored,
                   const std::vector<Halide::ImageParam> &inputParams,
                   const std::vector<std::vector<int64_t>> &inputShapes,
                   int64_t ioBytes) {
  std::map<std::string, Halide::Expr> bound;
  for (size_t i = 0; i < inputParams.size() && i < inputShapes.size(); ++i) {
    const std::vector<int64_t> &shape = inputShapes[i];
    for (size_t d = 0; d < shape.size(); ++d) // Halide dim d: MLIR axis rank-1-d
      bound[inputParams[i].name() + ".extent." + std::to_string(d)] =
          Halide::Expr(int32_t(shape[shape.size() - 1 - d]));
  }
  int64_t largest = 0;
  for (const StoredBuffer &buffer : stored) {
    std::vector<int64_t> shape;
    bool known = true;
    for (const Halide::Expr &extent : buffer.extents) {
      shape.push_back(evaluateExtent(extent, bound));
      known = known && shape.back() >= 0;
    }
    if (!known)
      continue; // checked by Halide when it allocates
    runtime::Result fits = checkBufferSize(
        "buffer '" + buffer.name + "' (the result of " + buffer.origin + ")",
        shape);
    if (!fits.ok())
      return fits;
    largest = std::max(largest, f32Bytes(shape));
  }
  int64_t memory = physicalMemoryBytes();
  if (memory > 0 && ioBytes + largest > memory)
    return runtime::Result::error(
        ATTN_ERROR_OUT_OF_MEMORY,
        "the run needs at least " + formatBytes(ioBytes + largest) +
            " (inputs, weights and outputs: " + formatBytes(ioBytes) +
            "; largest stored buffer: " + formatBytes(largest) +
            "), more than this machine's memory, " + formatBytes(memory));
  return runtime::Result::success();
}

} // namespace attnc::codegen
