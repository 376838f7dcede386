//===- Safetensors.h - read and write safetensors files ---------*- C++ -*-===//
//
// This file declares the safetensors reader and writer of the runtime. A
// safetensors file is an 8-byte little-endian header length N, N bytes of
// UTF-8 JSON mapping tensor names to {"dtype", "shape", "data_offsets"}
// (plus an optional "__metadata__" object of strings), then the data; the
// offsets count from the first byte after the header.
//
// The reader validates the whole header before it allocates anything, then
// loads F32 tensors as they are and converts F16 and BF16 to f32; other
// dtypes are rejected with ATTN_ERROR_DTYPE. Tensors must lie inside the
// data section and must not overlap; gaps between them are tolerated. Every
// error message starts with the file name. The writer produces F32 files with the header padded with
// spaces to a multiple of 8 bytes, as the reference implementation does.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_SAFETENSORS_H
#define ATTNC_RUNTIME_SAFETENSORS_H

#include "runtime/Error.h"
#include "runtime/FileIO.h"
#include "runtime/Tensor.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attnc::runtime {

/// One tensor loaded from a safetensors file, converted to f32.
struct SafetensorsTensor : HostTensor {
  /// The tensor's name in the file.
  std::string name;
  /// The dtype it was stored with in the file ("F32", "F16" or "BF16").
  std::string dtype;
};

/// The contents of a safetensors file.
struct SafetensorsFile {
  /// The tensors, sorted by name.
  std::vector<SafetensorsTensor> tensors;
  /// The "__metadata__" entries, if any.
  std::map<std::string, std::string> metadata;
};

/// A tensor to write: a name, a shape and f32 data in C order that the
/// caller keeps alive during the write.
struct SafetensorsTensorRef {
  std::string name;
  std::vector<int64_t> shape;
  const float *data = nullptr;
};

/// The largest header the reader accepts (the reference implementation's
/// limit too).
constexpr uint64_t kMaxSafetensorsHeader = 100u * 1024 * 1024;

/// Reads the safetensors file at \p path into \p out.
Result readSafetensors(const std::string &path, SafetensorsFile &out);

/// Parses a safetensors file held in memory; \p displayName stands for the
/// file in messages.
Result parseSafetensors(const void *bytes, size_t size,
                        const std::string &displayName, SafetensorsFile &out);

/// Serializes \p tensors (and \p metadata) as an F32 safetensors file into
/// \p bytes. Fails with ATTN_ERROR_ARGUMENT on empty, reserved or duplicate
/// names, negative sizes, overflowing shapes or missing data.
Result serializeSafetensors(const std::vector<SafetensorsTensorRef> &tensors,
                            const std::map<std::string, std::string> &metadata,
                            std::string &bytes);

/// Writes \p tensors (and \p metadata) as an F32 safetensors file to
/// \p path, replacing it.
Result
writeSafetensors(const std::string &path,
                 const std::vector<SafetensorsTensorRef> &tensors,
                 const std::map<std::string, std::string> &metadata = {});

/// Converts an IEEE 754 binary16 value to f32 exactly (subnormals, infinities
/// and NaNs included).
float halfToFloat(uint16_t bits);

/// Converts a bfloat16 value to f32 exactly.
float bfloat16ToFloat(uint16_t bits);

/// Returns the size in bytes of one element of safetensors dtype \p dtype,
/// or 0 if the dtype is unknown.
size_t safetensorsDtypeSize(const std::string &dtype);

/// Reads a safetensors file from \p source; the general form of
/// readSafetensors and parseSafetensors.
Result readSafetensors(ByteSource &source, const std::string &displayName,
                       SafetensorsFile &out);

} // namespace attnc::runtime

#endif // ATTNC_RUNTIME_SAFETENSORS_H
