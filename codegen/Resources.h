//===- Resources.h - sizes of a run, checked before allocation ---*- C++ -*-===//
//
// This file declares the checks that keep an impossible size from reaching
// an allocator: element counts and byte sizes computed without overflow,
// Halide 14's limits on one buffer (extents and total bytes below 2^31
// without Target::LargeBuffers), and the machine's physical memory. A run
// that cannot fit fails up front with a message that names the buffer and
// the bytes it needs, never with an abort or an "internal error".
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_RESOURCES_H
#define ATTNC_CODEGEN_RESOURCES_H

#include "runtime/Error.h"
#include "runtime/Tensor.h"

#include <Halide.h>

#include <cstdint>
#include <string>
#include <vector>

namespace attnc::codegen {

/// The largest extent of one axis (Halide extents are 32-bit).
constexpr int64_t kMaxExtent = 2147483647;
/// The largest buffer Halide 14 allocates or accepts without
/// Target::LargeBuffers, in bytes.
constexpr int64_t kMaxBufferBytes = 2147483647;

/// Bytes of an f32 tensor (runtime/Tensor.h); -1 on overflow.
using runtime::f32Bytes;

/// a + b for byte counts (b may be negative), held at INT64_MAX instead of
/// overflowing: with large buffers one buffer may hold nearly 2^63 bytes.
int64_t saturatingAdd(int64_t a, int64_t b);

/// `2281718784 bytes (2.12 GiB)`.
std::string formatBytes(int64_t bytes);

/// The machine's physical memory in bytes (0 when unknown).
int64_t physicalMemoryBytes();

/// Checks that `bytes` fit the memory a run may use: the machine's
/// physical memory, or the environment's ATTNC_MEMORY_LIMIT when it is
/// smaller (bytes, or a number with K, M or G: `512M`, `8G`). `needs` says
/// what: "the inputs need". ATTN_ERROR_OUT_OF_MEMORY `<needs> <bytes><detail>,
/// more than this machine's memory, <bytes>` (or `... more than
/// ATTNC_MEMORY_LIMIT, ...`) otherwise; ATTN_ERROR_ARGUMENT when
/// ATTNC_MEMORY_LIMIT is set but not such a size.
runtime::Result checkFitsMemory(const std::string &needs, int64_t bytes,
                                const std::string &detail = "");

/// The most bytes one buffer of a pipeline compiled for `target` may hold:
/// kMaxBufferBytes, or with Halide's large_buffers feature (64-bit buffer
/// indexing) as many as a 64-bit count holds.
int64_t maxBufferBytes(const Halide::Target &target);

/// Checks one buffer of `shape` against kMaxExtent and `maxBytes` (see
/// maxBufferBytes); ATTN_ERROR_OUT_OF_MEMORY with a message naming `what`
/// (e.g. "input 'x'") and the bytes otherwise (ATTN_ERROR_SHAPE when its
/// element count overflows 64 bits, as attn_tensor_check says).
runtime::Result checkBufferSize(const std::string &what,
                                const std::vector<int64_t> &shape,
                                int64_t maxBytes = kMaxBufferBytes);

/// Parses a runtime dim's size given on the command line (`--dim n=SIZE`):
/// decimal digits only, 1 <= size <= kMaxExtent. ATTN_ERROR_ARGUMENT with a
/// message that quotes `spec` otherwise.
runtime::Result parseDimSize(const std::string &spec, const std::string &text,
                             int64_t &size);

struct StoredBuffer;

/// Checks the buffers a run allocates, before any is allocated: each stored
/// buffer (its extents evaluated with the inputs' extents `inputShapes`,
/// MLIR order, bound to `inputParams`) within the one-buffer limit
/// `maxBytes`, and `ioBytes` (inputs, weights and outputs) plus
/// `copyBytes` (the weights packed for weight arenas) plus the stored
/// buffers alive at once (StoredBuffer::first .. last), and 10% of those
/// for the stages beside them, within the machine's physical memory (other
/// processes' use is not counted). ATTN_ERROR_OUT_OF_MEMORY with a message
/// naming the buffer, the op it holds and the bytes otherwise.
runtime::Result
checkStoredBuffers(const std::vector<StoredBuffer> &stored,
                   const std::vector<Halide::ImageParam> &inputParams,
                   const std::vector<std::vector<int64_t>> &inputShapes,
                   int64_t ioBytes, int64_t copyBytes,
                   int64_t maxBytes = kMaxBufferBytes);

} // namespace attnc::codegen

#endif // ATTNC_CODEGEN_RESOURCES_H
