//===- FileIO.h - byte sources and whole-file reads and writes --*- C++ -*-===//
//
// This file declares the byte-level input and output that the safetensors
// and npy readers share: a ByteSource interface with a file and a memory
// implementation (so the readers run on files without loading them whole,
// and on buffers in tests), and whole-file reads and writes. Every failure
// becomes an ATTN_ERROR_IO Result whose message names the file and the
// reason the operating system gave.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_RUNTIME_FILEIO_H
#define ATTNC_RUNTIME_FILEIO_H

#include "runtime/Error.h"

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

namespace attnc::runtime {

/// Random access to a sequence of bytes of known size.
class ByteSource {
public:
  virtual ~ByteSource() = default;
  /// Returns the total size in bytes.
  virtual uint64_t size() const = 0;
  /// Copies bytes [offset, offset + n) to \p dst; returns false if they
  /// cannot be read (out of range or an I/O error).
  virtual bool read(uint64_t offset, void *dst, size_t n) = 0;
};

/// A ByteSource over a caller-owned buffer.
class MemorySource : public ByteSource {
public:
  MemorySource(const void *bytes, size_t size)
      : bytes(static_cast<const unsigned char *>(bytes)), length(size) {}
  uint64_t size() const override { return length; }
  bool read(uint64_t offset, void *dst, size_t n) override;

private:
  const unsigned char *bytes;
  size_t length;
};

/// A ByteSource over a regular file, opened by open().
class FileSource : public ByteSource {
public:
  /// Opens \p path for reading; fails with ATTN_ERROR_IO if it does not
  /// exist, is not a regular file or cannot be opened.
  Result open(const std::string &path);
  uint64_t size() const override { return length; }
  bool read(uint64_t offset, void *dst, size_t n) override;

private:
  std::ifstream stream;
  uint64_t length = 0;
};

/// Reads the whole file at \p path into \p bytes.
Result readWholeFile(const std::string &path, std::string &bytes);

/// Writes \p bytes to the file at \p path, replacing it.
Result writeWholeFile(const std::string &path, const std::string &bytes);

/// Returns the reason errno gives for the last failed system call, in
/// lowercase ("no such file or directory").
std::string lastSystemError();

/// Reads a little-endian unsigned integer of \p n bytes (n <= 8) at \p p.
inline uint64_t readLittleEndian(const unsigned char *p, size_t n) {
  uint64_t value = 0;
  for (size_t i = n; i-- > 0;)
    value = (value << 8) | p[i];
  return value;
}

/// Appends \p value to \p out as \p n little-endian bytes.
inline void appendLittleEndian(std::string &out, uint64_t value, size_t n) {
  for (size_t i = 0; i < n; ++i)
    out += static_cast<char>((value >> (8 * i)) & 0xff);
}

} // namespace attnc::runtime

#endif // ATTNC_RUNTIME_FILEIO_H
