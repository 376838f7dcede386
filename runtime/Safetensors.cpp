//===- Safetensors.cpp - read safetensors files ---------------------------===//
//
// This file implements the safetensors reader: it checks the header length
// against the file size, parses the JSON header strictly, validates every
// entry (dtype, shape, offsets, sizes, overlaps) before allocating tensor
// memory, then reads and converts the data. The writer lives in
// SafetensorsWriter.cpp.
//
//===----------------------------------------------------------------------===//
#include "runtime/Safetensors.h"
#include "runtime/Json.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

using namespace attnc::runtime;

namespace {

/// A validated header entry, not yet loaded.
struct Entry {
  std::string name;
  std::string dtype;
  size_t dtypeSize = 0;
  std::vector<int64_t> shape;
  int64_t count = 0;
  uint64_t begin = 0;
  uint64_t end = 0;
};

bool isLittleEndianHost() {
  const uint16_t probe = 1;
  unsigned char first;
  std::memcpy(&first, &probe, 1);
  return first == 1;
}

std::string formatOffsets(uint64_t begin, uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + "]";
}

/// Validates the header of one file and collects its entries.
class HeaderReader {
public:
  HeaderReader(const std::string &file, uint64_t dataSize)
      : file(file), dataSize(dataSize) {}

  Result fail(attn_status status, const std::string &what) const {
    return Result::error(status, file + ": " + what);
  }

  /// Reads the top-level object into entries (sorted by name) and metadata.
  Result read(const JsonValue &root, std::vector<Entry> &entries,
              std::map<std::string, std::string> &metadata) {
    if (root.kind != JsonValue::Kind::Object)
      return fail(ATTN_ERROR_FORMAT, std::string("header is ") +
                                         root.kindName() +
                                         ", expected a JSON object");
    std::map<std::string, Entry> byName;
    bool sawMetadata = false;
    for (size_t i = 0; i < root.keys.size(); ++i) {
      const std::string &key = root.keys[i];
      if (key == "__metadata__") {
        if (sawMetadata)
          return fail(ATTN_ERROR_FORMAT, "duplicate \"__metadata__\" entry");
        sawMetadata = true;
        Result r = readMetadata(root.items[i], metadata);
        if (!r.ok())
          return r;
        continue;
      }
      if (byName.count(key))
        return fail(ATTN_ERROR_FORMAT, "duplicate tensor name " + quote(key));
      Entry entry;
      entry.name = key;
      Result r = readEntry(root.items[i], entry);
      if (!r.ok())
        return r;
      byName.emplace(key, std::move(entry));
    }
    entries.clear();
    for (auto &named : byName)
      entries.push_back(std::move(named.second));
    return checkOverlaps(entries);
  }

private:
  const std::string &file;
  uint64_t dataSize;

  Result readMetadata(const JsonValue &value,
                      std::map<std::string, std::string> &metadata) {
    if (value.kind != JsonValue::Kind::Object)
      return fail(ATTN_ERROR_FORMAT, std::string("\"__metadata__\" is ") +
                                         value.kindName() +
                                         ", expected an object of strings");
    for (size_t i = 0; i < value.keys.size(); ++i) {
      if (value.items[i].kind != JsonValue::Kind::String)
        return fail(ATTN_ERROR_FORMAT,
                    "metadata entry " + quote(value.keys[i]) + " is " +
                        value.items[i].kindName() + ", expected a string");
      if (!metadata.emplace(value.keys[i], value.items[i].text).second)
        return fail(ATTN_ERROR_FORMAT,
                    "duplicate metadata key " + quote(value.keys[i]));
    }
    return Result::success();
  }

  /// Reads a non-negative integer that fits in int64_t.
  bool readSize(const JsonValue &value, int64_t &out) {
    if (value.kind != JsonValue::Kind::Integer || value.integerOverflow ||
        value.integer < 0)
      return false;
    out = value.integer;
    return true;
  }

  std::string describeNumber(const JsonValue &value) {
    if (value.kind == JsonValue::Kind::Integer ||
        value.kind == JsonValue::Kind::Number)
      return value.text;
    return value.kindName();
  }

  Result readEntry(const JsonValue &value, Entry &entry) {
    std::string what = "tensor " + quote(entry.name);
    if (value.kind != JsonValue::Kind::Object)
      return fail(ATTN_ERROR_FORMAT,
                  what + " is " + value.kindName() + ", expected an object");
    for (size_t i = 0; i < value.keys.size(); ++i) {
      const std::string &key = value.keys[i];
      if (key != "dtype" && key != "shape" && key != "data_offsets")
        return fail(ATTN_ERROR_FORMAT, what + " has unknown key " + quote(key));
      for (size_t j = 0; j < i; ++j)
        if (value.keys[j] == key)
          return fail(ATTN_ERROR_FORMAT,
                      what + " has a duplicate key " + quote(key));
    }
    const JsonValue *dtype = value.find("dtype");
    const JsonValue *shape = value.find("shape");
    const JsonValue *offsets = value.find("data_offsets");
    if (!dtype)
      return fail(ATTN_ERROR_FORMAT, what + " has no \"dtype\"");
    if (!shape)
      return fail(ATTN_ERROR_FORMAT, what + " has no \"shape\"");
    if (!offsets)
      return fail(ATTN_ERROR_FORMAT, what + " has no \"data_offsets\"");

    if (dtype->kind != JsonValue::Kind::String)
      return fail(ATTN_ERROR_FORMAT, "dtype of " + what + " is " +
                                         dtype->kindName() +
                                         ", expected a string");
    entry.dtype = dtype->text;
    entry.dtypeSize = safetensorsDtypeSize(entry.dtype);
    if (entry.dtypeSize == 0)
      return fail(ATTN_ERROR_DTYPE,
                  what + " has unknown dtype " + quote(entry.dtype));

    if (shape->kind != JsonValue::Kind::Array)
      return fail(ATTN_ERROR_FORMAT, "shape of " + what + " is " +
                                         shape->kindName() +
                                         ", expected an array");
    for (const JsonValue &size : shape->items) {
      int64_t n;
      if (!readSize(size, n))
        return fail(ATTN_ERROR_FORMAT,
                    "shape of " + what + " has entry " + describeNumber(size) +
                        "; sizes must be non-negative 64-bit integers");
      entry.shape.push_back(n);
    }
    if (!shapeElementCount(entry.shape.data(), entry.shape.size(), entry.count))
      return fail(ATTN_ERROR_FORMAT,
                  "shape " +
                      formatShape(entry.shape.data(), entry.shape.size()) +
                      " of " + what + " overflows");

    if (offsets->kind != JsonValue::Kind::Array || offsets->items.size() != 2)
      return fail(ATTN_ERROR_FORMAT, "data_offsets of " + what +
                                         " must be an array of two integers");
    int64_t begin, end;
    if (!readSize(offsets->items[0], begin) ||
        !readSize(offsets->items[1], end))
      return fail(ATTN_ERROR_FORMAT,
                  "data_offsets of " + what +
                      " must be non-negative 64-bit integers, got [" +
                      describeNumber(offsets->items[0]) + ", " +
                      describeNumber(offsets->items[1]) + "]");
    entry.begin = static_cast<uint64_t>(begin);
    entry.end = static_cast<uint64_t>(end);
    std::string range = formatOffsets(entry.begin, entry.end);
    if (entry.begin > entry.end)
      return fail(ATTN_ERROR_FORMAT, "data_offsets " + range + " of " + what +
                                         " have begin > end");
    if (entry.end > dataSize)
      return fail(ATTN_ERROR_FORMAT, "data_offsets " + range + " of " + what +
                                         " lie outside the data section of " +
                                         std::to_string(dataSize) +
                                         " bytes (truncated file?)");
    uint64_t count = static_cast<uint64_t>(entry.count);
    if (count > std::numeric_limits<uint64_t>::max() / entry.dtypeSize)
      return fail(ATTN_ERROR_FORMAT, "byte size of " + what + " overflows");
    uint64_t bytes = count * entry.dtypeSize;
    if (bytes != entry.end - entry.begin)
      return fail(ATTN_ERROR_FORMAT,
                  what + " of dtype " + entry.dtype + " and shape " +
                      formatShape(entry.shape.data(), entry.shape.size()) +
                      " needs " + std::to_string(bytes) +
                      " bytes but data_offsets " + range + " hold " +
                      std::to_string(entry.end - entry.begin));
    return Result::success();
  }

  Result checkOverlaps(const std::vector<Entry> &entries) {
    std::vector<const Entry *> byOffset;
    for (const Entry &entry : entries)
      if (entry.begin != entry.end)
        byOffset.push_back(&entry);
    std::sort(
        byOffset.begin(), byOffset.end(), [](const Entry *a, const Entry *b) {
          return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
        });
    for (size_t i = 1; i < byOffset.size(); ++i) {
      const Entry &a = *byOffset[i - 1], &b = *byOffset[i];
      if (b.begin < a.end)
        return fail(ATTN_ERROR_FORMAT, "tensors " + quote(a.name) + " " +
                                           formatOffsets(a.begin, a.end) +
                                           " and " + quote(b.name) + " " +
                                           formatOffsets(b.begin, b.end) +
                                           " overlap");
    }
    return Result::success();
  }
};

/// Reads and converts the data of one validated entry.
Result loadEntry(ByteSource &source, uint64_t dataStart,
                 const std::string &file, Entry &entry,
                 SafetensorsTensor &tensor) {
  tensor.name = entry.name;
  tensor.dtype = entry.dtype;
  tensor.shape = std::move(entry.shape);
  size_t count = static_cast<size_t>(entry.count);
  tensor.data.resize(count);
  uint64_t offset = dataStart + entry.begin;
  size_t bytes = static_cast<size_t>(entry.end - entry.begin);
  auto readError = [&] {
    return Result::error(ATTN_ERROR_IO, file + ": cannot read the data of " +
                                            quote(entry.name));
  };
  if (entry.dtype == "F32" && isLittleEndianHost()) {
    if (!source.read(offset, tensor.data.data(), bytes))
      return readError();
    return Result::success();
  }
  std::vector<unsigned char> raw(bytes);
  if (!source.read(offset, raw.data(), bytes))
    return readError();
  for (size_t i = 0; i < count; ++i) {
    if (entry.dtype == "F32") {
      uint32_t bits = static_cast<uint32_t>(readLittleEndian(&raw[4 * i], 4));
      std::memcpy(&tensor.data[i], &bits, 4);
    } else {
      uint16_t bits = static_cast<uint16_t>(readLittleEndian(&raw[2 * i], 2));
      tensor.data[i] =
          entry.dtype == "F16" ? halfToFloat(bits) : bfloat16ToFloat(bits);
    }
  }
  return Result::success();
}

Result readChecked(ByteSource &source, const std::string &file,
                   SafetensorsFile &out) {
  auto fail = [&](attn_status status, const std::string &what) {
    return Result::error(status, file + ": " + what);
  };
  uint64_t fileSize = source.size();
  if (fileSize < 8)
    return fail(ATTN_ERROR_FORMAT,
                "file of " + std::to_string(fileSize) +
                    " bytes is too short for the 8-byte header length");
  unsigned char lengthBytes[8];
  if (!source.read(0, lengthBytes, 8))
    return fail(ATTN_ERROR_IO, "cannot read the header length");
  uint64_t headerSize = readLittleEndian(lengthBytes, 8);
  if (headerSize > fileSize - 8)
    return fail(ATTN_ERROR_FORMAT,
                "header length " + std::to_string(headerSize) +
                    " exceeds the " + std::to_string(fileSize - 8) +
                    " bytes after the length field (truncated or not a "
                    "safetensors file?)");
  if (headerSize > kMaxSafetensorsHeader)
    return fail(ATTN_ERROR_FORMAT, "header length " +
                                       std::to_string(headerSize) +
                                       " exceeds the limit of " +
                                       std::to_string(kMaxSafetensorsHeader));
  if (headerSize < 2)
    return fail(ATTN_ERROR_FORMAT, "header length " +
                                       std::to_string(headerSize) +
                                       " is too small for a JSON object");
  std::string header(static_cast<size_t>(headerSize), '\0');
  if (!source.read(8, header.data(), header.size()))
    return fail(ATTN_ERROR_IO, "cannot read the header");
  JsonValue root;
  Result parsed = parseJson(header, root);
  if (!parsed.ok())
    return fail(parsed.status, "invalid JSON header: " + parsed.message);

  uint64_t dataStart = 8 + headerSize;
  HeaderReader reader(file, fileSize - dataStart);
  std::vector<Entry> entries;
  Result r = reader.read(root, entries, out.metadata);
  if (!r.ok())
    return r;
  for (const Entry &entry : entries)
    if (entry.dtype != "F32" && entry.dtype != "F16" && entry.dtype != "BF16")
      return fail(ATTN_ERROR_DTYPE, "tensor " + quote(entry.name) +
                                        " has dtype " + entry.dtype +
                                        "; only F32, F16 and BF16 can be "
                                        "loaded");
  out.tensors.resize(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    Result loaded =
        loadEntry(source, dataStart, file, entries[i], out.tensors[i]);
    if (!loaded.ok())
      return loaded;
  }
  return Result::success();
}

} // namespace

float attnc::runtime::halfToFloat(uint16_t bits) {
  uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  uint32_t exponent = (bits >> 10) & 0x1fu;
  uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in f32.
    float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -magnitude : magnitude;
  }
  uint32_t result = exponent == 0x1f ? sign | 0x7f800000u | (mantissa << 13)
                                     : sign | ((exponent + 127 - 15) << 23) |
                                           (mantissa << 13);
  float value;
  std::memcpy(&value, &result, 4);
  return value;
}

float attnc::runtime::bfloat16ToFloat(uint16_t bits) {
  uint32_t result = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &result, 4);
  return value;
}

size_t attnc::runtime::safetensorsDtypeSize(const std::string &dtype) {
  static const std::pair<const char *, size_t> sizes[] = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"F64", 8}, {"I64", 8},     {"U64", 8}};
  for (const auto &entry : sizes)
    if (dtype == entry.first)
      return entry.second;
  return 0;
}

Result attnc::runtime::readSafetensors(ByteSource &source,
                                       const std::string &displayName,
                                       SafetensorsFile &out) {
  out = SafetensorsFile();
  Result r;
  try {
    r = readChecked(source, displayName, out);
  } catch (const std::bad_alloc &) {
    r = Result::error(ATTN_ERROR_OUT_OF_MEMORY,
                      displayName + ": out of memory while loading tensors");
  }
  if (!r.ok())
    out = SafetensorsFile();
  return r;
}

Result attnc::runtime::readSafetensors(const std::string &path,
                                       SafetensorsFile &out) {
  out = SafetensorsFile();
  FileSource source;
  Result opened = source.open(path);
  if (!opened.ok())
    return opened;
  return readSafetensors(source, path, out);
}

Result attnc::runtime::parseSafetensors(const void *bytes, size_t size,
                                        const std::string &displayName,
                                        SafetensorsFile &out) {
  MemorySource source(bytes, size);
  return readSafetensors(source, displayName, out);
}
