//===- Resources.cpp - sizes of a run, checked before allocation ----------===//
//
// This file implements the size arithmetic and limits of Resources.h.
//
//===----------------------------------------------------------------------===//
#include "codegen/Resources.h"
#include "codegen/LoweringImpl.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstdio>
#include <limits>
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

runtime::Result checkFitsMemory(const std::string &needs, int64_t bytes,
                                const std::string &detail) {
  int64_t budget = physicalMemoryBytes();
  std::string name = "this machine's memory";
  if (const char *limit = std::getenv("ATTNC_MEMORY_LIMIT")) {
    std::string text = limit;
    size_t digits = 0;
    while (digits < text.size() && std::isdigit((unsigned char)text[digits]))
      ++digits;
    std::string suffix = text.substr(digits);
    int shift = suffix.empty()                      ? 0
                : suffix == "K" || suffix == "k"    ? 10
                : suffix == "M" || suffix == "m"    ? 20
                : suffix == "G" || suffix == "g"    ? 30
                                                    : -1;
    if (digits == 0 || digits > 12 || shift < 0)
      return runtime::Result::error(
          ATTN_ERROR_ARGUMENT,
          "ATTNC_MEMORY_LIMIT='" + text +
              "' is not a size (bytes, or a number with K, M or G: 512M)");
    int64_t value = std::stoll(text.substr(0, digits)) << shift;
    if (budget <= 0 || value < budget) {
      budget = value;
      name = "ATTNC_MEMORY_LIMIT";
    }
  }
  if (budget > 0 && bytes > budget)
    return runtime::Result::error(ATTN_ERROR_OUT_OF_MEMORY,
                                  needs + " " + formatBytes(bytes) + detail +
                                      ", more than " + name + ", " +
                                      formatBytes(budget));
  return runtime::Result::success();
}

static std::string shapeText(const std::vector<int64_t> &shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

runtime::Result checkBufferSize(const std::string &what,
                                const std::vector<int64_t> &shape,
                                int64_t maxBytes) {
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
  if (bytes > maxBytes)
    return tooLarge(" needs " + formatBytes(bytes) +
                    "; one buffer is limited to " + std::to_string(maxBytes) +
                    " bytes (Halide 14 without large buffers: a target with "
                    "the large_buffers feature, e.g. --target "
                    "host-large_buffers, lifts the limit)");
  return runtime::Result::success();
}

int64_t saturatingAdd(int64_t a, int64_t b) {
  if (b > 0 && a > std::numeric_limits<int64_t>::max() - b)
    return std::numeric_limits<int64_t>::max();
  return a + b;
}

int64_t maxBufferBytes(const Halide::Target &target) {
  return target.has_feature(Halide::Target::LargeBuffers)
             ? std::numeric_limits<int64_t>::max()
             : kMaxBufferBytes;
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
                   int64_t ioBytes, int64_t copyBytes, int64_t maxBytes) {
  std::map<std::string, Halide::Expr> bound;
  for (size_t i = 0; i < inputParams.size() && i < inputShapes.size(); ++i) {
    const std::vector<int64_t> &shape = inputShapes[i];
    for (size_t d = 0; d < shape.size(); ++d) // Halide dim d: MLIR axis rank-1-d
      bound[inputParams[i].name() + ".extent." + std::to_string(d)] =
          Halide::Expr(int32_t(shape[shape.size() - 1 - d]));
  }
  // Bytes of the buffers alive at each top-level op (StoredBuffer::first
  // .. last); each buffer is below maxBytes, so with saturating sums
  // nothing overflows.
  std::map<size_t, int64_t> change; // op index -> bytes allocated there
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
        "buffer '" + buffer.name + "' (" + buffer.origin + ")",
        shape, maxBytes);
    if (!fits.ok())
      return fits;
    change[buffer.first] = saturatingAdd(change[buffer.first], f32Bytes(shape));
    change[buffer.last + 1] -= f32Bytes(shape);
  }
  int64_t live = 0, peak = 0;
  for (const auto &[op, bytes] : change) {
    live = saturatingAdd(live, bytes);
    peak = std::max(peak, live);
  }
  // `stored` holds the op results and the whole-tensor stages an op's
  // lowering adds (attention's transposed keys and packed values,
  // Lowering::addStoredStage); its smaller stages (operand panels, tables)
  // come on top: measured within 10% (FLASH, GAU, MHSA against the buffer
  // pool's peak; docs/performance.md).
  std::string copy = copyBytes > 0 ? "; the weights packed for the kernel: " +
                                         formatBytes(copyBytes)
                                   : "";
  int64_t fixed = saturatingAdd(ioBytes, copyBytes);
  return checkFitsMemory(
      "the run needs about",
      saturatingAdd(fixed, saturatingAdd(peak, peak / 10)),
      " (inputs, weights and outputs: " + formatBytes(ioBytes) + copy +
          "; the op results stored at once: " + formatBytes(peak) +
          ", and 10% for the stages beside them)");
}

} // namespace attnc::codegen
