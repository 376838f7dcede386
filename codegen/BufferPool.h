//===- BufferPool.h - the allocator of JIT-compiled kernels -------*- C++ -*-===//
//
// This file declares the buffer pool every kernel the JIT runs allocates
// from, whether Halide's in-memory JIT compiled it or it was loaded from a
// shared object (NativeKernel.h): one pool per process.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_BUFFERPOOL_H
#define ATTNC_CODEGEN_BUFFERPOOL_H

#include "codegen/Codegen.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <utility>

namespace attnc::codegen {

/// Keeps the buffers a run frees for later allocations of this run and of
/// the next runs, so repeated inference does not pay for fresh pages
/// (first-touch faults and zeroing) on every call. A request takes the
/// smallest cached block that holds it (and is at most twice its size); at
/// most kCachedLimit bytes stay cached. It also counts the bytes live at
/// once, the pipeline's peak footprint (BufferPoolStats).
class BufferPool {
public:
  /// Halide's allocator hooks: the JIT's (a JITUserContext) and the
  /// loaded runtime's (halide_set_custom_malloc) have this signature.
  template <typename Context> static void *allocate(Context *, size_t size) {
    return instance().take(size);
  }
  template <typename Context> static void release(Context *, void *ptr) {
    instance().give(ptr);
  }

  /// The process's pool. Never destroyed: Halide's runtime frees what its
  /// memoization cache holds from its own destructor, at exit, after static
  /// objects are gone.
  static BufferPool &instance() {
    static BufferPool *pool = new BufferPool();
    return *pool;
  }
  BufferPoolStats stats() {
    std::lock_guard<std::mutex> lock(mutex);
    return {peakLive, cached};
  }
  void resetPeak() {
    std::lock_guard<std::mutex> lock(mutex);
    peakLive = live;
  }
  /// The size of the last allocation that failed (0: none), and resets it.
  size_t takeFailedBytes() {
    std::lock_guard<std::mutex> lock(mutex);
    return std::exchange(failedBytes, 0);
  }

  /// A block of at least `size` bytes (null when memory is exhausted).
  void *take(size_t size) {
    size_t total = (size + kHeader + 4095) / 4096 * 4096;
    std::lock_guard<std::mutex> lock(mutex);
    char *base = nullptr;
    auto it = blocks.lower_bound(total);
    if (it != blocks.end() && it->first <= 2 * total) {
      base = static_cast<char *>(it->second);
      cached -= it->first;
      blocks.erase(it);
    } else {
      base = static_cast<char *>(std::aligned_alloc(4096, total));
      if (!base) {
        failedBytes = size;
        return nullptr;
      }
      *reinterpret_cast<size_t *>(base) = total;
    }
    live += *reinterpret_cast<size_t *>(base);
    peakLive = std::max(peakLive, live);
    return base + kHeader;
  }
  /// Returns a block from take() (null is ignored).
  void give(void *ptr) {
    if (!ptr)
      return;
    char *base = static_cast<char *>(ptr) - kHeader;
    size_t total = *reinterpret_cast<size_t *>(base);
    std::lock_guard<std::mutex> lock(mutex);
    live -= total;
    if (cached + total > kCachedLimit) {
      std::free(base);
      return;
    }
    blocks.emplace(total, base);
    cached += total;
  }

private:
  /// Room before each block for its size; at least the alignment Halide
  /// assumes of its allocations (halide_malloc_alignment, 128 on x86).
  static constexpr size_t kHeader = 128;
  static constexpr size_t kCachedLimit = size_t(4) << 30;

  std::mutex mutex;
  std::multimap<size_t, void *> blocks;
  size_t cached = 0, live = 0, peakLive = 0, failedBytes = 0;
};

} // namespace attnc::codegen

#endif // ATTNC_CODEGEN_BUFFERPOOL_H
