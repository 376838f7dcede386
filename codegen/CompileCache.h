//===- CompileCache.h - compiled kernels kept on disk -------------*- C++ -*-===//
//
// This file declares the JIT's persistent compile cache, as ccache and
// Triton's kernel cache keep theirs: a directory of shared objects, one per
// compiled kernel (and one per Halide runtime), each under a key that hashes
// everything its code depends on (codegen/NativeKernel.h makes the key).
//
// An entry is one file, `<key>.so`: the shared object followed by a trailer
// that names its size and SHA-256 (the dynamic loader ignores bytes after the
// object). Writers write a temporary file and rename it into place, so two
// processes that compile the same kernel at once both succeed, each rename
// installs a whole, consistent entry, and a reader never sees a half-written
// one. A reader checks the object against its trailer before anyone loads
// it: a truncated or damaged entry is a miss (with a note), recompiled and
// replaced, never loaded. Each hit touches the entry; after each insert the
// least recently used entries are removed until the directory is within its
// size limit, and temporary files a killed writer left are removed after a
// day.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_COMPILECACHE_H
#define ATTNC_CODEGEN_COMPILECACHE_H

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace attnc::codegen {

/// Where and whether the JIT keeps what it compiles.
struct CacheOptions {
  /// Off: every kernel is compiled anew into a private temporary directory
  /// and nothing is read from or written to the cache (`--no-cache`).
  bool enabled = true;
  /// "" = the default: $ATTNC_CACHE_DIR, else $XDG_CACHE_HOME/attnc, else
  /// ~/.cache/attnc (`--cache-dir`).
  std::string directory;
  /// 0 = the default: $ATTNC_CACHE_SIZE (bytes, or with a K, M or G
  /// suffix), else 1 GiB.
  uint64_t maxBytes = 0;
};

/// What compiling a model's kernels cost, summed over its kernels (ms), and
/// what the cache did.
struct KernelCompileStats {
  double lowering = 0; ///< Halide lowering (compile_to_module).
  double llvm = 0;     ///< LLVM optimisation and code generation.
  double link = 0;     ///< The system linker.
  double load = 0;     ///< Cache lookups (with their checks) and dlopen.
  double runtime = 0;  ///< Halide's runtime: compiled once per cache, or
                       ///< loaded, once per process.
  double jit = 0;      ///< Halide's in-memory JIT (lowering and LLVM as one),
                       ///< for kernels that are not cached (GPU targets).
  size_t hits = 0, misses = 0;  ///< Kernels found in the cache, compiled.
  bool runtimeCompiled = false; ///< The runtime was not in the cache.
  /// The threads that compiled at once: the stage times above add up over
  /// them, so their sum can exceed the wall-clock compile time.
  size_t threads = 1;
  /// Notes for the user: a corrupt entry recompiled, an unusable cache.
  std::string notes;
};

/// The directory `options` names (the rules above).
std::string cacheDirectory(const CacheOptions &options);
/// The size limit `options` names; a malformed $ATTNC_CACHE_SIZE is the
/// default with a note on `notes`.
uint64_t cacheLimit(const CacheOptions &options, std::string &notes);

/// A cache directory.
class CompileCache {
public:
  /// Uses `directory` (created when missing) with `maxBytes` in all.
  CompileCache(std::string directory, uint64_t maxBytes);

  const std::string &directory() const { return dir; }

  /// The path of the valid entry for `key`, or none. A damaged entry (an
  /// object whose size or hash differ from its trailer, a trailer that
  /// cannot be read) is removed and reported on `notes`. A hit marks the
  /// entry as used now.
  std::optional<std::string> lookup(const std::string &key,
                                    std::string &notes);

  /// Makes the entry for `key`: `build` writes the object to the path it is
  /// given (a temporary file in the directory) and returns an error message,
  /// or "" on success. Returns the entry's object path, or none with the
  /// error in `error`. Then evicts least recently used entries beyond the
  /// limit (never `key`'s).
  std::optional<std::string>
  insert(const std::string &key,
         const std::function<std::string(const std::string &)> &build,
         std::string &error);

  /// Removes least recently used entries until the entries take at most
  /// `maxBytes`, keeping `keep`'s; returns how many it removed.
  size_t evict(const std::string &keep);

  /// Bytes the entries take.
  uint64_t sizeBytes() const;

private:
  std::string dir;
  uint64_t limit;
};

/// Lower-case hex SHA-256 of `data`.
std::string sha256Hex(const std::string &data);
/// The trailer that follows `object` in its entry.
std::string cacheTrailer(const std::string &object);

} // namespace attnc::codegen

#endif // ATTNC_CODEGEN_COMPILECACHE_H
