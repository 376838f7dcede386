//===- CompileCache.cpp - compiled kernels kept on disk -------------------===//
//
// This file implements the cache directory of CompileCache.h: lookups that
// verify an entry before anyone loads it, inserts by rename, and eviction of
// the least recently used entries.
//
//===----------------------------------------------------------------------===//
#include "codegen/CompileCache.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/SHA256.h"

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <pwd.h>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace attnc::codegen {

namespace fs = std::filesystem;

/// Every entry ends with a trailer of kTrailerBytes: this header, the
/// object's size and its SHA-256, padded with spaces to a newline.
static constexpr const char *kTrailerHeader = "attnc-cache-entry 1";
static constexpr size_t kTrailerBytes = 128;
static constexpr uint64_t kDefaultLimit = uint64_t(1) << 30;

std::string sha256Hex(const std::string &data) {
  auto hash = llvm::SHA256::hash(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(data.data()), data.size()));
  return llvm::toHex(hash, /*LowerCase=*/true);
}

static std::string environment(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "";
}

std::string cacheDirectory(const CacheOptions &options) {
  if (!options.directory.empty())
    return options.directory;
  if (std::string dir = environment("ATTNC_CACHE_DIR"); !dir.empty())
    return dir;
  if (std::string xdg = environment("XDG_CACHE_HOME"); !xdg.empty())
    return xdg + "/attnc";
  std::string home = environment("HOME");
  if (home.empty())
    if (const passwd *user = getpwuid(getuid()))
      home = user->pw_dir ? user->pw_dir : "";
  return (home.empty() ? std::string("/tmp") : home) + "/.cache/attnc";
}

uint64_t cacheLimit(const CacheOptions &options, std::string &notes) {
  if (options.maxBytes)
    return options.maxBytes;
  std::string text = environment("ATTNC_CACHE_SIZE");
  if (text.empty())
    return kDefaultLimit;
  char *end = nullptr;
  errno = 0;
  unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  uint64_t scale = 1;
  if (end && *end) {
    switch (*end) {
    case 'K': case 'k': scale = uint64_t(1) << 10; break;
    case 'M': case 'm': scale = uint64_t(1) << 20; break;
    case 'G': case 'g': scale = uint64_t(1) << 30; break;
    default: scale = 0; break;
    }
    if (end[1] != '\0')
      scale = 0;
  }
  if (errno || end == text.c_str() || scale == 0 || value == 0 ||
      value > UINT64_MAX / scale) {
    notes += "note: ignoring ATTNC_CACHE_SIZE='" + text +
             "' (expected a number of bytes, optionally with K, M or G); "
             "the cache keeps up to 1 GiB\n";
    return kDefaultLimit;
  }
  return uint64_t(value) * scale;
}

CompileCache::CompileCache(std::string directory, uint64_t maxBytes)
    : dir(std::move(directory)), limit(maxBytes) {}

static std::string readFile(const std::string &path, bool &ok) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream data;
  data << in.rdbuf();
  ok = bool(in) || in.eof();
  return data.str();
}

std::string cacheTrailer(const std::string &object) {
  std::string trailer = std::string(kTrailerHeader) + " size " +
                        std::to_string(object.size()) + " sha256 " +
                        sha256Hex(object);
  trailer.resize(kTrailerBytes - 1, ' ');
  return trailer + "\n";
}

std::optional<std::string> CompileCache::lookup(const std::string &key,
                                                std::string &notes) {
  std::string path = dir + "/" + key + ".so";
  if (::access(path.c_str(), F_OK) != 0)
    return std::nullopt; // no entry
  bool ok = false;
  std::string data = readFile(path, ok);
  std::string problem;
  if (!ok) {
    problem = "it cannot be read";
  } else if (data.size() < kTrailerBytes) {
    problem = "it has " + std::to_string(data.size()) + " bytes, fewer than "
              "its description";
  } else {
    std::istringstream fields(data.substr(data.size() - kTrailerBytes));
    std::string header, version, sizeWord, hashWord, hash;
    uint64_t size = 0;
    fields >> header >> version >> sizeWord >> size >> hashWord >> hash;
    if (header + " " + version != kTrailerHeader || sizeWord != "size" ||
        hashWord != "sha256" || hash.size() != 64)
      problem = "its description is damaged";
    else if (size != data.size() - kTrailerBytes)
      problem = "its object has " +
                std::to_string(data.size() - kTrailerBytes) + " bytes, not " +
                std::to_string(size);
    else if (sha256Hex(data.substr(0, size)) != hash)
      problem = "its object's checksum differs";
  }
  if (!problem.empty()) {
    notes += "note: compile cache entry " + path + " is corrupt (" + problem +
             "); recompiling\n";
    std::remove(path.c_str());
    return std::nullopt;
  }
  utimensat(AT_FDCWD, path.c_str(), nullptr, 0); // used now
  return path;
}

std::optional<std::string> CompileCache::insert(
    const std::string &key,
    const std::function<std::string(const std::string &)> &build,
    std::string &error) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    error = "cannot create the compile cache directory " + dir + ": " +
            ec.message();
    return std::nullopt;
  }
  std::string temp = dir + "/.tmp-" + key.substr(0, 16) + "-XXXXXX";
  int fd = mkstemp(temp.data());
  if (fd < 0) {
    error = "cannot create a file in " + dir + ": " + std::strerror(errno);
    return std::nullopt;
  }
  ::close(fd);
  try {
    error = build(temp);
  } catch (...) {
    std::remove(temp.c_str());
    throw;
  }
  bool ok = false;
  std::string object = error.empty() ? readFile(temp, ok) : std::string();
  if (error.empty() && (!ok || object.empty()))
    error = "the compiled kernel " + temp + " is missing or empty";
  if (error.empty()) {
    // The description goes into the same file, so that one rename makes
    // the whole entry: concurrent writers of one key each install a
    // consistent entry, and the last one stays.
    std::ofstream out(temp, std::ios::binary | std::ios::app);
    out << cacheTrailer(object);
    out.close();
    if (!out)
      error = "cannot write " + temp + ": " + std::strerror(errno);
  }
  std::string path = dir + "/" + key + ".so";
  if (error.empty() && std::rename(temp.c_str(), path.c_str()) != 0)
    error = "cannot write " + path + ": " + std::strerror(errno);
  if (!error.empty()) {
    std::remove(temp.c_str());
    return std::nullopt;
  }
  evict(key);
  return path;
}

namespace {
struct Entry {
  std::string path;
  uint64_t bytes = 0;
  fs::file_time_type used;
};
} // namespace

static std::vector<Entry> listEntries(const std::string &dir) {
  std::vector<Entry> entries;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const fs::path &path = it->path();
    std::string name = path.filename().string();
    std::error_code statError;
    fs::file_time_type used = fs::last_write_time(path, statError);
    if (statError)
      continue;
    // A writer that was killed leaves its temporary file: gone after a day.
    if (name.rfind(".tmp-", 0) == 0) {
      if (used < fs::file_time_type::clock::now() - std::chrono::hours(24))
        fs::remove(path, statError);
      continue;
    }
    if (path.extension() != ".so")
      continue;
    Entry entry;
    entry.path = path.string();
    entry.bytes = fs::file_size(path, statError);
    entry.used = used;
    entries.push_back(std::move(entry));
  }
  return entries;
}

uint64_t CompileCache::sizeBytes() const {
  uint64_t total = 0;
  for (const Entry &entry : listEntries(dir))
    total += entry.bytes;
  return total;
}

size_t CompileCache::evict(const std::string &keep) {
  std::vector<Entry> entries = listEntries(dir);
  uint64_t total = 0;
  for (const Entry &entry : entries)
    total += entry.bytes;
  if (total <= limit)
    return 0;
  std::sort(entries.begin(), entries.end(),
            [](const Entry &a, const Entry &b) { return a.used < b.used; });
  std::string kept = dir + "/" + keep + ".so";
  size_t removed = 0;
  for (const Entry &entry : entries) {
    if (total <= limit)
      break;
    if (entry.path == kept)
      continue;
    std::remove(entry.path.c_str());
    total -= std::min(total, entry.bytes);
    ++removed;
  }
  return removed;
}

} // namespace attnc::codegen
