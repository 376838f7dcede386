//===- Npy.cpp - read and write .npy arrays of float32 --------------------===//
//
// This file implements the .npy reader (magic, version, header dict, data
// size) with a small parser for the Python dict literal that numpy writes,
// and the writer, which pads the header with spaces and a newline so that
// the data starts at a multiple of 64 bytes, as numpy does.
//
//===----------------------------------------------------------------------===//
#include "runtime/Npy.h"
#include "runtime/FileIO.h"

#include <cstring>
#include <limits>
#include <string_view>

using namespace attnc::runtime;

namespace {

const char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

/// Parses the header dict {'descr': '<f4', 'fortran_order': False,
/// 'shape': (2, 3), } into its three fields.
class NpyHeaderParser {
public:
  NpyHeaderParser(std::string_view text, const std::string &file)
      : text(text), file(file) {}

  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;

  Result parse() {
    bool sawDescr = false, sawOrder = false, sawShape = false;
    skipSpace();
    if (!consume('{'))
      return fail(ATTN_ERROR_FORMAT, "header is not a dict");
    while (true) {
      skipSpace();
      if (consume('}'))
        break;
      std::string key;
      if (!parseString(key))
        return fail(ATTN_ERROR_FORMAT, "expected a quoted key in the header");
      skipSpace();
      if (!consume(':'))
        return fail(ATTN_ERROR_FORMAT, "expected ':' after key " + quote(key));
      skipSpace();
      Result r = Result::success();
      if (key == "descr" && !sawDescr) {
        sawDescr = true;
        if (!parseString(descr))
          return fail(ATTN_ERROR_DTYPE,
                      "descr is not a dtype string; structured dtypes are not "
                      "supported, expected '<f4'");
      } else if (key == "fortran_order" && !sawOrder) {
        sawOrder = true;
        if (text.substr(pos, 4) == "True") {
          fortranOrder = true;
          pos += 4;
        } else if (text.substr(pos, 5) == "False") {
          pos += 5;
        } else {
          return fail(ATTN_ERROR_FORMAT, "fortran_order is not True or False");
        }
      } else if (key == "shape" && !sawShape) {
        sawShape = true;
        r = parseShape();
      } else if (key == "descr" || key == "fortran_order" || key == "shape") {
        return fail(ATTN_ERROR_FORMAT,
                    "duplicate key " + quote(key) + " in the header");
      } else {
        return fail(ATTN_ERROR_FORMAT,
                    "unknown key " + quote(key) + " in the header");
      }
      if (!r.ok())
        return r;
      skipSpace();
      if (consume(','))
        continue;
      if (consume('}'))
        break;
      return fail(ATTN_ERROR_FORMAT, "expected ',' or '}' in the header");
    }
    skipSpace();
    if (pos != text.size())
      return fail(ATTN_ERROR_FORMAT, "unexpected data after the header dict");
    if (!sawDescr || !sawOrder || !sawShape)
      return fail(ATTN_ERROR_FORMAT, std::string("header has no '") +
                                         (!sawDescr   ? "descr"
                                          : !sawOrder ? "fortran_order"
                                                      : "shape") +
                                         "' key");
    return Result::success();
  }

private:
  std::string_view text;
  const std::string &file;
  size_t pos = 0;

  Result fail(attn_status status, const std::string &what) const {
    return Result::error(status, file + ": " + what);
  }
  bool consume(char c) {
    if (pos < text.size() && text[pos] == c) {
      ++pos;
      return true;
    }
    return false;
  }
  void skipSpace() {
    while (pos < text.size() && (text[pos] == ' ' || text[pos] == '\t' ||
                                 text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }
  bool isDigit() const {
    return pos < text.size() && text[pos] >= '0' && text[pos] <= '9';
  }

  /// Parses a '...' or "..." literal without escapes.
  bool parseString(std::string &out) {
    if (pos >= text.size() || (text[pos] != '\'' && text[pos] != '"'))
      return false;
    char delimiter = text[pos];
    size_t end = text.find(delimiter, pos + 1);
    if (end == std::string_view::npos)
      return false;
    std::string_view body = text.substr(pos + 1, end - pos - 1);
    if (body.find('\\') != std::string_view::npos)
      return false;
    out.assign(body.data(), body.size());
    pos = end + 1;
    return true;
  }

  Result parseShape() {
    if (!consume('('))
      return fail(ATTN_ERROR_FORMAT, "shape is not a tuple");
    while (true) {
      skipSpace();
      if (consume(')'))
        return Result::success();
      if (!isDigit())
        return fail(ATTN_ERROR_FORMAT,
                    "shape entries must be non-negative integers");
      int64_t value = 0;
      while (isDigit()) {
        int digit = text[pos++] - '0';
        if (value > (std::numeric_limits<int64_t>::max() - digit) / 10)
          return fail(ATTN_ERROR_FORMAT, "shape entry overflows");
        value = value * 10 + digit;
      }
      consume('L'); // Python 2 long literals
      if (shape.size() == kMaxNpyRank)
        return fail(ATTN_ERROR_SHAPE, "rank exceeds the maximum of " +
                                          std::to_string(kMaxNpyRank));
      shape.push_back(value);
      skipSpace();
      if (consume(')'))
        return Result::success();
      if (!consume(','))
        return fail(ATTN_ERROR_FORMAT, "expected ',' or ')' in the shape");
    }
  }
};

Result readChecked(ByteSource &source, const std::string &file, HostTensor &out) {
  auto fail = [&](attn_status status, const std::string &what) {
    return Result::error(status, file + ": " + what);
  };
  uint64_t size = source.size();
  unsigned char prefix[12];
  if (size < 10 || !source.read(0, prefix, 10) ||
      std::memcmp(prefix, kMagic, kMagicSize) != 0)
    return fail(ATTN_ERROR_FORMAT, "not a .npy file (bad magic)");
  unsigned major = prefix[6], minor = prefix[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    return fail(ATTN_ERROR_FORMAT, "unsupported .npy version " +
                                       std::to_string(major) + "." +
                                       std::to_string(minor));
  uint64_t headerStart = major == 1 ? 10 : 12;
  if (major != 1 && (size < 12 || !source.read(10, prefix + 10, 2)))
    return fail(ATTN_ERROR_FORMAT, "truncated header length");
  uint64_t headerSize = readLittleEndian(prefix + 8, major == 1 ? 2 : 4);
  if (headerSize > size - headerStart)
    return fail(ATTN_ERROR_FORMAT,
                "header length " + std::to_string(headerSize) +
                    " exceeds the file size of " + std::to_string(size) +
                    " bytes (truncated file?)");
  if (headerSize > kMaxNpyHeader)
    return fail(ATTN_ERROR_FORMAT,
                "header length " + std::to_string(headerSize) +
                    " exceeds the limit of " + std::to_string(kMaxNpyHeader));
  std::string header(static_cast<size_t>(headerSize), '\0');
  if (!source.read(headerStart, header.data(), header.size()))
    return fail(ATTN_ERROR_IO, "cannot read the header");
  NpyHeaderParser parser(header, file);
  Result r = parser.parse();
  if (!r.ok())
    return r;
  // float32, or integers for token ids (held as int32 bits, Tensor.h).
  bool ids = parser.descr == "<i4" || parser.descr == "<i8";
  if (parser.descr != "<f4" && !ids)
    return fail(ATTN_ERROR_DTYPE, "dtype " + quote(parser.descr) +
                                      " is not supported, expected '<f4' "
                                      "(little-endian float32), or '<i4' or "
                                      "'<i8' for token ids");
  uint64_t width = parser.descr == "<i8" ? 8 : 4;
  if (parser.fortranOrder && parser.shape.size() > 1)
    return fail(ATTN_ERROR_FORMAT, "fortran_order arrays are not supported, "
                                   "save the array in C order");
  int64_t count;
  std::string shapeText = formatShape(parser.shape.data(), parser.shape.size());
  if (!shapeElementCount(parser.shape.data(), parser.shape.size(), count) ||
      static_cast<uint64_t>(count) > std::numeric_limits<uint64_t>::max() / 8)
    return fail(ATTN_ERROR_FORMAT, "shape " + shapeText + " overflows");
  uint64_t dataStart = headerStart + headerSize;
  uint64_t needed = static_cast<uint64_t>(count) * width;
  uint64_t available = size - dataStart;
  if (available < needed)
    return fail(ATTN_ERROR_FORMAT,
                "truncated data: shape " + shapeText + " needs " +
                    std::to_string(needed) + " bytes of " +
                    (ids ? "integer" : "float32") + " data but " +
                    std::to_string(available) + " bytes follow the header");
  if (available > needed)
    return fail(ATTN_ERROR_FORMAT, std::to_string(available - needed) +
                                       " unexpected bytes after the data of "
                                       "shape " +
                                       shapeText);
  out.shape = parser.shape;
  out.data.resize(static_cast<size_t>(count));
  std::vector<unsigned char> raw(static_cast<size_t>(needed));
  if (!source.read(dataStart, raw.data(), raw.size()))
    return fail(ATTN_ERROR_IO, "cannot read the data");
  out.dtype = ids ? "i32" : "f32";
  for (size_t i = 0; i < out.data.size(); ++i) {
    uint64_t value = readLittleEndian(&raw[width * i], int(width));
    if (width == 8) {
      int64_t id = static_cast<int64_t>(value);
      if (id < std::numeric_limits<int32_t>::min() ||
          id > std::numeric_limits<int32_t>::max())
        return fail(ATTN_ERROR_FORMAT,
                    "token id " + std::to_string(id) + " at element " +
                        std::to_string(i) + " does not fit in int32");
    }
    uint32_t bits = static_cast<uint32_t>(value);
    std::memcpy(&out.data[i], &bits, 4);
  }
  return Result::success();
}

Result readGuarded(ByteSource &source, const std::string &file, HostTensor &out) {
  out = HostTensor();
  Result r;
  try {
    r = readChecked(source, file, out);
  } catch (const std::bad_alloc &) {
    r = Result::error(ATTN_ERROR_OUT_OF_MEMORY, file + ": out of memory");
  }
  if (!r.ok())
    out = HostTensor();
  return r;
}

} // namespace

Result attnc::runtime::readNpy(const std::string &path, HostTensor &out) {
  out = HostTensor();
  FileSource source;
  Result opened = source.open(path);
  if (!opened.ok())
    return opened;
  return readGuarded(source, path, out);
}

Result attnc::runtime::parseNpy(const void *bytes, size_t size,
                                const std::string &displayName, HostTensor &out) {
  MemorySource source(bytes, size);
  return readGuarded(source, displayName, out);
}

Result attnc::runtime::serializeNpy(const std::vector<int64_t> &shape,
                                    const float *data, std::string &bytes) {
  int64_t count;
  if (shape.size() > kMaxNpyRank)
    return Result::error(ATTN_ERROR_ARGUMENT, "rank " +
                                                  std::to_string(shape.size()) +
                                                  " exceeds the maximum of " +
                                                  std::to_string(kMaxNpyRank));
  if (!shapeElementCount(shape.data(), shape.size(), count) ||
      static_cast<uint64_t>(count) > std::numeric_limits<uint64_t>::max() / 8)
    return Result::error(ATTN_ERROR_ARGUMENT,
                         "invalid shape " +
                             formatShape(shape.data(), shape.size()));
  if (count > 0 && !data)
    return Result::error(ATTN_ERROR_ARGUMENT, "array has no data");
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < shape.size(); ++i)
    dict += (i ? ", " : "") + std::to_string(shape[i]);
  dict += shape.size() == 1 ? ",), }" : "), }";
  // Pad so that magic + version + length + dict + '\n' is a multiple of 64.
  size_t lengthBytes = dict.size() + 11 > 65535 ? 4 : 2;
  size_t fixed = kMagicSize + 2 + lengthBytes;
  dict.append((64 - (fixed + dict.size() + 1) % 64) % 64, ' ');
  dict += '\n';
  try {
    bytes.assign(kMagic, kMagicSize);
    bytes += static_cast<char>(lengthBytes == 2 ? 1 : 2);
    bytes += '\0';
    appendLittleEndian(bytes, dict.size(), lengthBytes);
    bytes += dict;
    bytes.reserve(bytes.size() + static_cast<size_t>(count) * 4);
    for (int64_t i = 0; i < count; ++i) {
      uint32_t bits;
      std::memcpy(&bits, &data[i], 4);
      appendLittleEndian(bytes, bits, 4);
    }
  } catch (const std::bad_alloc &) {
    bytes.clear();
    return Result::error(ATTN_ERROR_OUT_OF_MEMORY,
                         "out of memory while serializing an array");
  }
  return Result::success();
}

Result attnc::runtime::writeNpy(const std::string &path,
                                const std::vector<int64_t> &shape,
                                const float *data) {
  std::string bytes;
  Result r = serializeNpy(shape, data, bytes);
  if (!r.ok())
    return Result::error(r.status, path + ": " + r.message);
  return writeWholeFile(path, bytes);
}

Result attnc::runtime::writeNpy(const std::string &path,
                                const HostTensor &array) {
  int64_t count;
  if (!shapeElementCount(array.shape.data(), array.shape.size(), count) ||
      static_cast<uint64_t>(count) != array.data.size())
    return Result::error(
        ATTN_ERROR_ARGUMENT,
        path + ": shape " +
            formatShape(array.shape.data(), array.shape.size()) +
            " does not match the " + std::to_string(array.data.size()) +
            " elements");
  return writeNpy(path, array.shape, array.data.data());
}
