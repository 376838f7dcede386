//===- FileIO.cpp - byte sources and whole-file reads and writes ----------===//
//
// This file implements the file and memory byte sources and the whole-file
// helpers with std::ifstream, std::ofstream and std::filesystem only.
//
//===----------------------------------------------------------------------===//
#include "runtime/FileIO.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

using namespace attnc::runtime;
namespace fs = std::filesystem;

std::string attnc::runtime::lastSystemError() {
  int code = errno;
  if (code == 0)
    return "unknown error";
  std::string text = std::generic_category().message(code);
  if (!text.empty() && text[0] >= 'A' && text[0] <= 'Z')
    text[0] = static_cast<char>(text[0] - 'A' + 'a');
  return text;
}

bool MemorySource::read(uint64_t offset, void *dst, size_t n) {
  if (offset > length || n > length - offset)
    return false;
  if (n)
    std::memcpy(dst, bytes + offset, n);
  return true;
}

Result FileSource::open(const std::string &path) {
  std::error_code ec;
  fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status)) {
    std::string reason = ec ? ec.message() : "no such file or directory";
    if (!reason.empty() && reason[0] >= 'A' && reason[0] <= 'Z')
      reason[0] = static_cast<char>(reason[0] - 'A' + 'a');
    return Result::error(ATTN_ERROR_IO,
                         "cannot open " + quote(path) + ": " + reason);
  }
  if (!fs::is_regular_file(status))
    return Result::error(ATTN_ERROR_IO,
                         "cannot open " + quote(path) + ": not a regular file");
  errno = 0;
  stream.open(path, std::ios::binary);
  if (!stream)
    return Result::error(ATTN_ERROR_IO, "cannot open " + quote(path) + ": " +
                                            lastSystemError());
  stream.seekg(0, std::ios::end);
  std::streamoff end = stream.tellg();
  stream.seekg(0, std::ios::beg);
  if (!stream || end < 0)
    return Result::error(ATTN_ERROR_IO,
                         "cannot determine the size of " + quote(path));
  length = static_cast<uint64_t>(end);
  return Result::success();
}

bool FileSource::read(uint64_t offset, void *dst, size_t n) {
  if (offset > length || n > length - offset)
    return false;
  if (n == 0)
    return true;
  stream.clear();
  stream.seekg(static_cast<std::streamoff>(offset), std::ios::beg);
  stream.read(static_cast<char *>(dst), static_cast<std::streamsize>(n));
  return static_cast<size_t>(stream.gcount()) == n;
}

Result attnc::runtime::readWholeFile(const std::string &path,
                                     std::string &bytes) {
  FileSource source;
  Result opened = source.open(path);
  if (!opened.ok())
    return opened;
  bytes.assign(static_cast<size_t>(source.size()), '\0');
  if (!source.read(0, bytes.data(), bytes.size()))
    return Result::error(ATTN_ERROR_IO, "cannot read " + quote(path));
  return Result::success();
}

Result attnc::runtime::writeWholeFile(const std::string &path,
                                      const std::string &bytes) {
  errno = 0;
  std::ofstream stream(path, std::ios::binary | std::ios::trunc);
  if (!stream)
    return Result::error(ATTN_ERROR_IO, "cannot create " + quote(path) + ": " +
                                            lastSystemError());
  stream.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  stream.close();
  if (!stream)
    return Result::error(ATTN_ERROR_IO, "cannot write " + quote(path) + ": " +
                                            lastSystemError());
  return Result::success();
}
