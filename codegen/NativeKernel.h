//===- NativeKernel.h - kernels compiled to shared objects --------*- C++ -*-===//
//
// This file declares how the JIT compiles a CPU kernel when it can keep the
// result: Halide lowers the pipeline to an object without a runtime, the
// system compiler links it into a shared object, and the process loads it
// with dlopen. Every loaded kernel calls into one Halide runtime per process
// (itself a shared object, compiled once per machine and target, and kept in
// the cache too), whose allocator is the JIT's buffer pool and whose error
// handler reports to the caller. This is the path of the persistent compile
// cache (CompileCache.h): Halide 14's own JIT (Pipeline::compile_jit) can
// neither save nor load compiled code.
//
// A kernel's cache key is the SHA-256 of everything its code depends on: the
// format version, attnc's build (the ELF build-id of the code that lowers
// it), Halide's build, the target, the kernel's function name and argument
// list, and the scheduled attn IR it was lowered from with the codegen
// options (`source`). Changing any of them is a miss, never a stale hit.
//
// GPU targets, and targets whose runtime differs (profiling, tracing,
// debugging, sanitizers), keep Halide's in-memory JIT: supports() says which.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_CODEGEN_NATIVEKERNEL_H
#define ATTNC_CODEGEN_NATIVEKERNEL_H

#include "codegen/CompileCache.h"

#include <Halide.h>

#include <memory>
#include <string>
#include <vector>

namespace attnc::codegen {

/// A kernel loaded from a shared object.
class NativeKernel {
public:
  ~NativeKernel();
  NativeKernel(const NativeKernel &) = delete;
  NativeKernel &operator=(const NativeKernel &) = delete;

  /// Whether kernels for `target` can be compiled and loaded this way.
  static bool supports(const Halide::Target &target);

  /// Compiles `pipeline` as the function `function` with `arguments`
  /// (followed by its outputs) for `target`, or loads it from the cache.
  /// `source` is the kernel's scheduled IR and codegen options (part of the
  /// key). Null with `error` set when it cannot: the caller then compiles
  /// in memory.
  static std::unique_ptr<NativeKernel>
  load(Halide::Pipeline &pipeline, const std::vector<Halide::Argument> &arguments,
       const std::string &function, const std::string &source,
       const Halide::Target &target, const CacheOptions &cache,
       KernelCompileStats &stats, std::string &error);

  /// Compiles (or finds in the cache) and loads the Halide runtime that
  /// kernels for `target` call, once per process; what `load` does before
  /// it loads a kernel, here to run beside the kernels' compilation. ""
  /// or why it cannot.
  static std::string prepareRuntime(const Halide::Target &target,
                                    const CacheOptions &cache,
                                    KernelCompileStats &stats);

  /// Runs the kernel on `buffers` (its arguments, then its outputs). Returns
  /// Halide's error code (0 on success); `message` gets what the runtime
  /// reported.
  int call(const std::vector<halide_buffer_t *> &buffers, std::string &message);

  /// The key the kernel was cached under.
  const std::string &key() const { return cacheKey; }

private:
  NativeKernel() = default;
  void *handle = nullptr;
  int (*argv)(void **) = nullptr;
  std::string cacheKey;
};

/// The ELF build-id (hex) of the loaded object that contains `address`, or,
/// without one, its path, size and modification time.
std::string buildIdentity(const void *address);

} // namespace attnc::codegen

#endif // ATTNC_CODEGEN_NATIVEKERNEL_H
