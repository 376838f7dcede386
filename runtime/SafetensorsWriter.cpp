//===- SafetensorsWriter.cpp - write F32 safetensors files ----------------===//
//
// This file implements the safetensors writer: it validates the tensors,
// builds the JSON header (tensors in the given order, offsets packed one
// after the other), pads it with spaces to a multiple of 8 bytes as the
// reference implementation does, and appends the data as little-endian f32.
// Files are streamed to disk tensor by tensor rather than built in memory.
//
//===----------------------------------------------------------------------===//
#include "runtime/Json.h"
#include "runtime/Safetensors.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

using namespace attnc::runtime;

namespace {

/// Validates \p tensors and builds the padded header, length field
/// included, into \p prefix.
Result buildPrefix(const std::vector<SafetensorsTensorRef> &tensors,
                   const std::map<std::string, std::string> &metadata,
                   std::string &prefix) {
  std::string header = "{";
  if (!metadata.empty()) {
    header += "\"__metadata__\":{";
    bool first = true;
    for (const auto &entry : metadata) {
      if (!first)
        header += ",";
      first = false;
      appendJsonString(header, entry.first);
      header += ":";
      appendJsonString(header, entry.second);
    }
    header += "}";
  }
  std::set<std::string> seen;
  uint64_t offset = 0;
  for (const SafetensorsTensorRef &tensor : tensors) {
    std::string what = "tensor " + quote(tensor.name);
    if (tensor.name.empty())
      return Result::error(ATTN_ERROR_ARGUMENT,
                           "tensor names must not be empty");
    if (tensor.name == "__metadata__")
      return Result::error(ATTN_ERROR_ARGUMENT,
                           "tensor name '__metadata__' is reserved");
    if (!seen.insert(tensor.name).second)
      return Result::error(ATTN_ERROR_ARGUMENT,
                           "duplicate tensor name " + quote(tensor.name));
    int64_t count;
    if (!shapeElementCount(tensor.shape.data(), tensor.shape.size(), count) ||
        static_cast<uint64_t>(count) > UINT64_MAX / 8)
      return Result::error(
          ATTN_ERROR_ARGUMENT,
          what + " has an invalid shape " +
              formatShape(tensor.shape.data(), tensor.shape.size()));
    if (count > 0 && !tensor.data)
      return Result::error(ATTN_ERROR_ARGUMENT, what + " has no data");
    uint64_t bytes = static_cast<uint64_t>(count) * 4;
    if (header.size() > 1)
      header += ",";
    appendJsonString(header, tensor.name);
    header += ":{\"dtype\":\"F32\",\"shape\":[";
    for (size_t i = 0; i < tensor.shape.size(); ++i)
      header += (i ? "," : "") + std::to_string(tensor.shape[i]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + bytes) + "]}";
    offset += bytes;
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');
  prefix.clear();
  appendLittleEndian(prefix, header.size(), 8);
  prefix += header;
  return Result::success();
}

/// Appends the elements of \p tensor as little-endian f32 to \p out.
void appendData(std::string &out, const SafetensorsTensorRef &tensor) {
  int64_t count = 0;
  shapeElementCount(tensor.shape.data(), tensor.shape.size(), count);
  size_t start = out.size();
  out.resize(start + static_cast<size_t>(count) * 4);
  for (int64_t i = 0; i < count; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &tensor.data[i], 4);
    for (int b = 0; b < 4; ++b)
      out[start + 4 * static_cast<size_t>(i) + b] =
          static_cast<char>((bits >> (8 * b)) & 0xff);
  }
}

} // namespace

Result attnc::runtime::serializeSafetensors(
    const std::vector<SafetensorsTensorRef> &tensors,
    const std::map<std::string, std::string> &metadata, std::string &bytes) {
  try {
    Result r = buildPrefix(tensors, metadata, bytes);
    if (!r.ok())
      return r;
    for (const SafetensorsTensorRef &tensor : tensors)
      appendData(bytes, tensor);
    return Result::success();
  } catch (const std::bad_alloc &) {
    bytes.clear();
    return Result::error(ATTN_ERROR_OUT_OF_MEMORY,
                         "out of memory while serializing safetensors");
  }
}

Result attnc::runtime::writeSafetensors(
    const std::string &path, const std::vector<SafetensorsTensorRef> &tensors,
    const std::map<std::string, std::string> &metadata) {
  try {
    std::string chunk;
    Result r = buildPrefix(tensors, metadata, chunk);
    if (!r.ok())
      return Result::error(r.status, path + ": " + r.message);
    errno = 0;
    std::ofstream stream(path, std::ios::binary | std::ios::trunc);
    if (!stream)
      return Result::error(ATTN_ERROR_IO, "cannot create " + quote(path) +
                                              ": " + lastSystemError());
    stream.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    for (const SafetensorsTensorRef &tensor : tensors) {
      chunk.clear();
      appendData(chunk, tensor);
      stream.write(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    }
    stream.close();
    if (!stream)
      return Result::error(ATTN_ERROR_IO, "cannot write " + quote(path));
    return Result::success();
  } catch (const std::bad_alloc &) {
    return Result::error(ATTN_ERROR_OUT_OF_MEMORY,
                         path + ": out of memory while writing");
  }
}
