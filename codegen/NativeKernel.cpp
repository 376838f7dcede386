//===- NativeKernel.cpp - kernels compiled to shared objects --------------===//
//
// This file implements NativeKernel: the cache key, compiling a kernel to an
// object and linking it, the process's one Halide runtime, and calling a
// loaded kernel.
//
//===----------------------------------------------------------------------===//
#include "codegen/NativeKernel.h"

#include "codegen/BufferPool.h"
#include "codegen/ModuleParts.h"
#include "codegen/Stopwatch.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <filesystem>
#include <functional>
#include <link.h>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace attnc::codegen {

namespace fs = std::filesystem;
using Clock = SteadyClock;

//===----------------------------------------------------------------------===//
// Identities
//===----------------------------------------------------------------------===//

namespace {
struct BuildIdSearch {
  uintptr_t address = 0;
  std::string id;
};
} // namespace

static int findBuildId(dl_phdr_info *info, size_t, void *data) {
  auto *search = static_cast<BuildIdSearch *>(data);
  bool contains = false;
  for (int i = 0; i < info->dlpi_phnum && !contains; ++i) {
    const ElfW(Phdr) &segment = info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + segment.p_vaddr;
    contains = segment.p_type == PT_LOAD && search->address >= start &&
               search->address < start + segment.p_memsz;
  }
  if (!contains)
    return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_NOTE)
      continue;
    const char *note =
        reinterpret_cast<const char *>(info->dlpi_addr + segment.p_vaddr);
    const char *end = note + segment.p_memsz;
    while (note + sizeof(ElfW(Nhdr)) <= end) {
      const auto *header = reinterpret_cast<const ElfW(Nhdr) *>(note);
      const char *name = note + sizeof(ElfW(Nhdr));
      const unsigned char *desc = reinterpret_cast<const unsigned char *>(
          name + ((header->n_namesz + 3) & ~3u));
      if (header->n_type == NT_GNU_BUILD_ID && header->n_namesz == 4 &&
          std::memcmp(name, "GNU", 4) == 0) {
        static const char *digits = "0123456789abcdef";
        for (unsigned k = 0; k < header->n_descsz; ++k) {
          search->id += digits[desc[k] >> 4];
          search->id += digits[desc[k] & 15];
        }
        return 1;
      }
      note = reinterpret_cast<const char *>(desc) +
             ((header->n_descsz + 3) & ~3u);
    }
  }
  return 1; // the object, without a build-id
}

std::string buildIdentity(const void *address) {
  BuildIdSearch search;
  search.address = reinterpret_cast<uintptr_t>(address);
  dl_iterate_phdr(findBuildId, &search);
  if (!search.id.empty())
    return "build-id " + search.id;
  Dl_info info{};
  std::string path = "/proc/self/exe"; // the main program names itself oddly
  if (dladdr(address, &info) && info.dli_fname && info.dli_fname[0] == '/')
    path = info.dli_fname;
  struct stat st {};
  std::string file = fs::weakly_canonical(path).string();
  if (::stat(file.c_str(), &st) != 0)
    return "unknown build of " + file;
  return file + " " + std::to_string(st.st_size) + " " +
         std::to_string(st.st_mtim.tv_sec) + "." +
         std::to_string(st.st_mtim.tv_nsec);
}

/// Halide's build, once per process (what the runtime depends on).
static const std::string &halideIdentity() {
  static const std::string identity =
      "Halide " +
      buildIdentity(reinterpret_cast<const void *>(&Halide::get_host_target));
  return identity;
}

/// attnc's build and Halide's, once per process (what kernels depend on).
static const std::string &toolIdentity() {
  static const std::string identity =
      "attnc " + buildIdentity(reinterpret_cast<const void *>(&buildIdentity)) +
      "; " + halideIdentity();
  return identity;
}

//===----------------------------------------------------------------------===//
// Compiling and linking
//===----------------------------------------------------------------------===//

static std::string shellQuote(const std::string &text) {
  std::string quoted = "'";
  for (char c : text)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

/// Links `objects` into the shared object `output` with the system compiler
/// ($ATTNC_LINKER, else cc); an error message, or "".
static std::string linkShared(const std::vector<std::string> &objects,
                              const std::string &output,
                              const std::string &libraries = "") {
  const char *linker = std::getenv("ATTNC_LINKER");
  std::string command = shellQuote(linker && *linker ? linker : "cc") +
                        " -shared -o " + shellQuote(output);
  for (const std::string &object : objects)
    command += " " + shellQuote(object);
  if (!libraries.empty())
    command += " " + libraries;
  FILE *pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe)
    return "cannot run the linker: " + std::string(std::strerror(errno));
  std::string output_text;
  char chunk[512];
  while (size_t got = std::fread(chunk, 1, sizeof chunk, pipe))
    output_text.append(chunk, got);
  int status = pclose(pipe);
  if (status != 0) {
    std::string why = output_text;
    while (!why.empty() && (why.back() == '\n' || why.back() == ' '))
      why.pop_back();
    if (why.empty())
      why = status > 0 && WIFEXITED(status)
                ? "exit status " + std::to_string(WEXITSTATUS(status))
                : "status " + std::to_string(status);
    return "linking a shared object failed (" + command + "): " + why;
  }
  return "";
}

/// A temporary directory that is removed with everything in it.
namespace {
class TempDir {
public:
  TempDir() {
    std::error_code ec;
    fs::path tmp = fs::temp_directory_path(ec);
    std::string base = (ec ? std::string("/tmp") : tmp.string()) +
                       "/attnc-XXXXXX";
    if (mkdtemp(base.data()))
      path = base;
  }
  ~TempDir() {
    std::error_code ec;
    if (!path.empty())
      fs::remove_all(path, ec);
  }
  std::string path;
};
} // namespace

/// Writes an entry through `cache` (or, without one, into a private
/// directory): the path of the object to load.
static std::optional<std::string>
fetchOrBuild(const CacheOptions &options, const std::string &key,
             const std::function<std::string(const std::string &)> &build,
             KernelCompileStats &stats, TempDir &scratch, bool &hit,
             std::string &error) {
  hit = false;
  bool buildFailed = false;
  auto tracked = [&](const std::string &output) {
    std::string failure = build(output);
    buildFailed = !failure.empty();
    return failure;
  };
  if (options.enabled) {
    std::string notes;
    CompileCache cache(cacheDirectory(options), cacheLimit(options, notes));
    auto start = Clock::now();
    std::optional<std::string> found = cache.lookup(key, notes);
    stats.load += millisSince(start);
    stats.notes += notes;
    if (found) {
      hit = true;
      return found;
    }
    std::optional<std::string> made = cache.insert(key, tracked, error);
    if (made || buildFailed)
      return made;
    // An unusable cache directory is not the user's compile failing; said
    // once, though the runtime and every kernel meet it.
    std::string note = "note: " + error + "; compiling without the cache\n";
    if (stats.notes.find(note) == std::string::npos)
      stats.notes += note;
    error.clear();
  }
  if (scratch.path.empty()) {
    error = "cannot create a temporary directory";
    return std::nullopt;
  }
  CompileCache privateDir(scratch.path, UINT64_MAX);
  return privateDir.insert(key, build, error);
}

//===----------------------------------------------------------------------===//
// The runtime
//===----------------------------------------------------------------------===//

namespace {
/// The Halide runtime every loaded kernel of this process calls.
struct Runtime {
  std::mutex mutex;
  bool loaded = false;
  std::string key;   ///< The runtime target's key.
  std::string error; ///< Why it could not be loaded ("" = not tried).
  std::mutex errorMutex;
  std::string lastError; ///< What the kernels reported since the last call.

  static Runtime &instance() {
    static Runtime runtime;
    return runtime;
  }
};
} // namespace

static void reportError(void *, const char *message) {
  Runtime &runtime = Runtime::instance();
  std::lock_guard<std::mutex> lock(runtime.errorMutex);
  runtime.lastError += message ? message : "";
}

/// The runtime target of kernels for `target`: its OS and architecture (the
/// CPU features change kernels, not the runtime).
static Halide::Target runtimeTarget(const Halide::Target &target) {
  return Halide::Target(target.os, target.arch, target.bits);
}

/// Loads (compiling it once per cache) the runtime for `target`; "" or why not.
static std::string ensureRuntime(const Halide::Target &target,
                                 const CacheOptions &cache,
                                 KernelCompileStats &stats) {
  Runtime &runtime = Runtime::instance();
  std::lock_guard<std::mutex> lock(runtime.mutex);
  Halide::Target rtTarget = runtimeTarget(target);
  std::string key =
      "runtime-" + sha256Hex("attnc-runtime 1\n" + halideIdentity() + "\n" +
                             rtTarget.to_string())
                       .substr(0, 40);
  if (runtime.loaded)
    return runtime.key == key
               ? ""
               : "this process already runs kernels on the runtime for "
                 "another target";
  if (!runtime.error.empty())
    return runtime.error;
  auto start = Clock::now();
  auto build = [&](const std::string &output) {
    TempDir scratch;
    std::string object = scratch.path + "/runtime.o";
    try {
      Halide::compile_standalone_runtime(object, rtTarget);
    } catch (const Halide::Error &e) {
      return std::string("compiling Halide's runtime failed: ") + e.what();
    }
    return linkShared({object}, output, "-lpthread -ldl -lm");
  };
  TempDir scratch;
  bool hit = false;
  std::string error;
  KernelCompileStats own; // all of it is the runtime's time
  own.notes = stats.notes;
  std::optional<std::string> path =
      fetchOrBuild(cache, key, build, own, scratch, hit, error);
  stats.notes = own.notes;
  stats.runtimeCompiled = path && !hit;
  if (!path) {
    runtime.error = error;
    return error;
  }
  void *handle = dlopen(path->c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!handle) {
    stats.runtime += millisSince(start);
    runtime.error = std::string("cannot load Halide's runtime: ") + dlerror();
    return runtime.error;
  }
  // Kernels bind to the first definition in the process's global scope:
  // install the handlers there.
  using MallocSetter = void *(*)(void *(*)(void *, size_t));
  using FreeSetter = void *(*)(void (*)(void *, void *));
  using ErrorSetter = void *(*)(void (*)(void *, const char *));
  auto setMalloc = reinterpret_cast<MallocSetter>(
      dlsym(RTLD_DEFAULT, "halide_set_custom_malloc"));
  auto setFree = reinterpret_cast<FreeSetter>(
      dlsym(RTLD_DEFAULT, "halide_set_custom_free"));
  auto setError = reinterpret_cast<ErrorSetter>(
      dlsym(RTLD_DEFAULT, "halide_set_error_handler"));
  if (!setMalloc || !setFree || !setError) {
    runtime.error = "Halide's runtime lacks its handler functions";
    return runtime.error;
  }
  setMalloc(&BufferPool::allocate<void>);
  setFree(&BufferPool::release<void>);
  setError(&reportError);
  runtime.loaded = true;
  runtime.key = key;
  stats.runtime += millisSince(start);
  return "";
}

//===----------------------------------------------------------------------===//
// NativeKernel
//===----------------------------------------------------------------------===//

std::string NativeKernel::prepareRuntime(const Halide::Target &target,
                                         const CacheOptions &cache,
                                         KernelCompileStats &stats) {
  return ensureRuntime(target, cache, stats);
}

bool NativeKernel::supports(const Halide::Target &target) {
  using T = Halide::Target;
  if (target.os != T::Linux || target.has_gpu_feature())
    return false;
  for (T::Feature feature :
       {T::Debug, T::Profile, T::ProfileByTimer, T::TraceLoads, T::TraceStores,
        T::TraceRealizations, T::TracePipeline, T::MSAN, T::TSAN, T::ASAN,
        T::SanitizerCoverage, T::Matlab, T::HexagonDma, T::OpenGLCompute,
        T::JIT})
    if (target.has_feature(feature))
      return false;
  return true;
}

NativeKernel::~NativeKernel() {
  if (handle)
    dlclose(handle);
}

/// The argument list as part of the key: names, kinds, types, dimensions.
static std::string describe(const std::vector<Halide::Argument> &arguments) {
  std::string text;
  for (const Halide::Argument &arg : arguments) {
    std::ostringstream type;
    type << arg.type;
    text += arg.name + ":" + std::to_string(int(arg.kind)) + ":" + type.str() +
            ":" + std::to_string(arg.dimensions) + "\n";
  }
  return text;
}

std::unique_ptr<NativeKernel>
NativeKernel::load(Halide::Pipeline &pipeline,
                   const std::vector<Halide::Argument> &arguments,
                   const std::string &function, const std::string &source,
                   const Halide::Target &target, const CacheOptions &cache,
                   KernelCompileStats &stats, std::string &error) {
  if (!supports(target)) {
    error = "target '" + target.to_string() + "' runs in Halide's JIT";
    return nullptr;
  }
  std::unique_ptr<NativeKernel> kernel(new NativeKernel());
  kernel->cacheKey =
      sha256Hex("attnc-kernel 1\n" + toolIdentity() + "\n" +
                target.to_string() + "\n" + function + "\n" +
                describe(arguments) + source)
          .substr(0, 40);

  // The runtime is the process's; every call passes allocated buffers, so
  // the bounds-query path is never taken (without it lowering and LLVM do
  // about 8% less work).
  Halide::Target kernelTarget = target.with_feature(Halide::Target::NoRuntime)
                                    .with_feature(Halide::Target::NoBoundsQuery);
  auto build = [&](const std::string &output) -> std::string {
    TempDir scratch;
    // A Halide::Error propagates: the caller reports it as the JIT's.
    auto start = Clock::now();
    Halide::Module module =
        pipeline.compile_to_module(arguments, function, kernelTarget);
    stats.lowering += millisSince(start);
    // LLVM compiles the module's functions in two parts at once
    // (ModuleParts.h): about half the time of one on two cores.
    size_t cores = std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::string> objects = compileObjects(
        module, scratch.path, std::min<size_t>(cores, 2), stats.llvm);
    start = Clock::now();
    std::string linked = linkShared(objects, output);
    stats.link += millisSince(start);
    return linked;
  };
  TempDir scratch;
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool hit = false;
    std::optional<std::string> path =
        fetchOrBuild(cache, kernel->cacheKey, build, stats, scratch, hit, error);
    if (!path)
      return nullptr;
    // The kernel binds to the runtime's symbols when it is loaded; the
    // runtime is compiled (when the cache lacks it) beside the kernels
    // (prepareRuntime), or here.
    error = ensureRuntime(target, cache, stats);
    if (!error.empty())
      return nullptr;
    auto start = Clock::now();
    kernel->handle = dlopen(path->c_str(), RTLD_NOW | RTLD_LOCAL);
    const char *why = kernel->handle ? nullptr : dlerror();
    if (kernel->handle) {
      kernel->argv = reinterpret_cast<int (*)(void **)>(
          dlsym(kernel->handle, (function + "_argv").c_str()));
      using Metadata = const halide_filter_metadata_t *(*)();
      auto metadata = reinterpret_cast<Metadata>(
          dlsym(kernel->handle, (function + "_metadata").c_str()));
      const halide_filter_metadata_t *meta = metadata ? metadata() : nullptr;
      bool matches = kernel->argv && meta &&
                     meta->num_arguments >= int(arguments.size());
      for (size_t i = 0; matches && i < arguments.size(); ++i)
        matches = arguments[i].name == meta->arguments[i].name;
      if (!matches) {
        why = "its function or arguments are not the kernel's";
        dlclose(kernel->handle);
        kernel->handle = nullptr;
        kernel->argv = nullptr;
      }
    }
    stats.load += millisSince(start);
    if (kernel->handle) {
      ++(hit ? stats.hits : stats.misses);
      return kernel;
    }
    if (!hit) {
      error = std::string("cannot load the compiled kernel ") + *path + ": " +
              why;
      return nullptr;
    }
    // A cached object that does not load is corrupt: compile it again.
    stats.notes += "note: compile cache entry " + *path + " does not load (" +
                   why + "); recompiling\n";
    std::remove(path->c_str());
  }
  error = "the compiled kernel " + function + " does not load";
  return nullptr;
}

int NativeKernel::call(const std::vector<halide_buffer_t *> &buffers,
                       std::string &message) {
  Runtime &runtime = Runtime::instance();
  {
    std::lock_guard<std::mutex> lock(runtime.errorMutex);
    runtime.lastError.clear();
  }
  std::vector<void *> args(buffers.begin(), buffers.end());
  int code = argv(args.data());
  std::lock_guard<std::mutex> lock(runtime.errorMutex);
  message = runtime.lastError;
  return code;
}

} // namespace attnc::codegen
