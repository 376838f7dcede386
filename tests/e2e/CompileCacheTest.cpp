//===- CompileCacheTest.cpp - the JIT's persistent compile cache ----------===//
//
// A repeated layer stack compiles one layer kernel; a second compile of the
// same model loads every kernel from the cache and computes the same thing;
// damaged entries are recompiled with a note, never loaded; `--no-cache`
// leaves no files; the directory keeps to its size limit by evicting the
// least recently used entries; concurrent writers of one entry both succeed;
// the distinct kernels of a model compile at once, into the same code.
//
//===----------------------------------------------------------------------===//
#include "E2EUtil.h"

#include "codegen/CompileCache.h"
#include "codegen/NativeKernel.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

namespace attnc {
namespace {

namespace fs = std::filesystem;
using codegen::CacheOptions;
using codegen::KernelCompileStats;
using codegen::TensorMap;

/// A fresh directory under the test's temporary directory.
std::string freshDir(const std::string &name) {
  std::string dir = (fs::temp_directory_path() /
                     ("attnc-cache-test-" + std::to_string(getpid()) + "-" +
                      name))
                        .string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

struct Compiled {
  std::string diagnostics;
  std::unique_ptr<driver::Session> session;
  std::unique_ptr<codegen::JitModel> jit;
  KernelCompileStats stats;
};

/// A session with `cache` that `load` fills, JIT-compiled.
Compiled compileWith(const CacheOptions &cache,
                     const std::function<bool(driver::Session &)> &load) {
  Compiled c;
  llvm::raw_string_ostream os(c.diagnostics);
  driver::SessionOptions options;
  options.cache = cache;
  c.session = std::make_unique<driver::Session>(options, os);
  if (load(*c.session))
    c.jit = c.session->jit();
  c.stats = c.session->compileTimes().stages;
  os.flush();
  return c;
}

Compiled compileExample(const std::string &file, const CacheOptions &cache) {
  return compileWith(cache, [&](driver::Session &session) {
    return session.loadFile(std::string(ATTNC_EXAMPLES_DIR) + "/" + file);
  });
}

TensorMap run(Compiled &c, uint64_t seed) {
  TensorMap weights = codegen::randomWeights(c.jit->pipeline().weights(), seed);
  TensorMap inputs;
  for (const codegen::TensorInfo &info : c.jit->pipeline().inputs()) {
    std::vector<int64_t> shape;
    for (int64_t size : info.shape)
      shape.push_back(size < 0 ? 19 : size);
    inputs[info.name] = codegen::randomTensor(shape, seed, info.name);
  }
  TensorMap outputs;
  runtime::Result result = c.jit->run(inputs, weights, outputs);
  EXPECT_TRUE(result.ok()) << result.message;
  return outputs;
}

/// The kernel entries (not the runtime's) of a cache directory.
std::vector<std::string> kernelObjects(const std::string &dir) {
  std::vector<std::string> objects;
  for (const fs::directory_entry &entry : fs::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".so" && name.rfind("runtime-", 0) != 0)
      objects.push_back(entry.path().string());
  }
  return objects;
}

TEST(CompileCacheTest, RepeatEightCompilesOneLayerKernelAndHitsOnTheSecondRun) {
  CacheOptions cache;
  cache.directory = freshDir("repeat");
  Compiled cold = compileExample("flash_lm.attn", cache);
  ASSERT_TRUE(cold.jit) << cold.diagnostics;
  std::vector<codegen::ModelPipeline::Kernel> kernels =
      cold.jit->pipeline().kernels();
  ASSERT_EQ(kernels.size(), 2u); // one layer kernel for 8 layers, the glue
  EXPECT_EQ(kernels[0].calls.size(), 8u);
  EXPECT_EQ(cold.stats.misses, 2u);
  EXPECT_EQ(cold.stats.hits, 0u);
  EXPECT_GT(cold.stats.llvm, 0.0);
  EXPECT_EQ(kernelObjects(cache.directory).size(), 2u);

  Compiled warm = compileExample("flash_lm.attn", cache);
  ASSERT_TRUE(warm.jit) << warm.diagnostics;
  EXPECT_EQ(warm.stats.hits, 2u);
  EXPECT_EQ(warm.stats.misses, 0u);
  EXPECT_EQ(warm.stats.lowering, 0.0); // nothing lowered or compiled
  EXPECT_EQ(warm.stats.llvm, 0.0);
  EXPECT_TRUE(warm.diagnostics.empty()) << warm.diagnostics;

  TensorMap first = run(cold, 3), second = run(warm, 3);
  ASSERT_EQ(first.at("y").data.size(), second.at("y").data.size());
  EXPECT_EQ(first.at("y").data, second.at("y").data); // the same code
  fs::remove_all(cache.directory);
}

/// Damages the one kernel entry of `dir` with `damage` (given its path),
/// recompiles flash.attn through the cache and checks
/// the note, the miss and the output against `want`.
void expectRecompiled(const std::string &dir, const TensorMap &want,
                      const std::function<void(const std::string &)> &damage,
                      const std::string &note) {
  std::vector<std::string> objects = kernelObjects(dir);
  ASSERT_EQ(objects.size(), 1u);
  damage(objects[0]);
  CacheOptions cache;
  cache.directory = dir;
  Compiled again = compileExample("flash.attn", cache);
  ASSERT_TRUE(again.jit) << again.diagnostics;
  EXPECT_NE(again.diagnostics.find(note), std::string::npos)
      << again.diagnostics;
  EXPECT_EQ(again.stats.misses, 1u);
  EXPECT_EQ(again.stats.hits, 0u);
  EXPECT_EQ(run(again, 4).at("y").data, want.at("y").data);
  // The entry is whole again: the next compile hits.
  Compiled next = compileExample("flash.attn", cache);
  ASSERT_TRUE(next.jit) << next.diagnostics;
  EXPECT_EQ(next.stats.hits, 1u) << next.diagnostics;
}

void writeFile(const std::string &path, const std::string &data) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream data;
  data << in.rdbuf();
  return data.str();
}

TEST(CompileCacheTest, CorruptEntriesAreRecompiledNeverLoaded) {
  CacheOptions cache;
  cache.directory = freshDir("corrupt");
  Compiled cold = compileExample("flash.attn", cache);
  ASSERT_TRUE(cold.jit) << cold.diagnostics;
  TensorMap want = run(cold, 4);
  // Unload it: dlopen would hand back a loaded object of the same path.
  cold.jit.reset();

  {
    SCOPED_TRACE("a truncated entry");
    expectRecompiled(cache.directory, want,
                   [](const std::string &entry) {
                     fs::resize_file(entry, fs::file_size(entry) / 2);
                   },
                   "is corrupt (its description is damaged)");
  }
  {
    SCOPED_TRACE("a flipped byte");
    expectRecompiled(cache.directory, want,
                   [](const std::string &entry) {
                     std::string data = readFile(entry);
                     data[data.size() / 2] ^= 0x40;
                     writeFile(entry, data);
                   },
                   "is corrupt (its object's checksum differs)");
  }
  {
    SCOPED_TRACE("a damaged trailer");
    expectRecompiled(cache.directory, want,
                   [](const std::string &entry) {
                     std::string data = readFile(entry);
                     writeFile(entry, data.substr(0, data.size() - 64) +
                                          std::string(64, 'x'));
                   },
                   "is corrupt (its description is damaged)");
  }
  {
    SCOPED_TRACE("an object that is not a kernel, with a matching description");
    expectRecompiled(
      cache.directory, want,
      [](const std::string &entry) {
        std::string junk = "not an ELF object";
        writeFile(entry, junk + codegen::cacheTrailer(junk));
      },
      "does not load");
  }
  fs::remove_all(cache.directory);
}

TEST(CompileCacheTest, NoCacheReadsAndWritesNothing) {
  std::string dir = freshDir("nocache");
  CacheOptions cache;
  cache.directory = dir;
  cache.enabled = false;
  Compiled c = compileExample("flash.attn", cache);
  ASSERT_TRUE(c.jit) << c.diagnostics;
  EXPECT_EQ(c.stats.misses, 1u);
  EXPECT_TRUE(fs::is_empty(dir));
  run(c, 5);
  fs::remove_all(dir);
}

/// An entry of `bytes` bytes under `key`.
std::optional<std::string> insert(codegen::CompileCache &cache,
                                  const std::string &key, size_t bytes) {
  std::string error;
  std::optional<std::string> path = cache.insert(
      key,
      [&](const std::string &output) {
        writeFile(output, std::string(bytes, char('a' + key.size() % 26)));
        return std::string();
      },
      error);
  EXPECT_TRUE(path) << error;
  return path;
}

TEST(CompileCacheTest, LeastRecentlyUsedEntriesAreEvicted) {
  std::string dir = freshDir("evict");
  // Four entries of 1000 bytes and a trailer do not fit in 3500.
  codegen::CompileCache cache(dir, 3500);
  std::string notes;
  insert(cache, "aaaa", 1000);
  insert(cache, "bbbb", 1000);
  insert(cache, "cccc", 1000);
  // Make the use times distinct, then use the oldest again.
  auto now = fs::file_time_type::clock::now();
  fs::last_write_time(dir + "/aaaa.so", now - std::chrono::seconds(30));
  fs::last_write_time(dir + "/bbbb.so", now - std::chrono::seconds(20));
  fs::last_write_time(dir + "/cccc.so", now - std::chrono::seconds(10));
  ASSERT_TRUE(cache.lookup("aaaa", notes)); // aaaa is now the newest
  insert(cache, "dddd", 1000);              // over the limit: bbbb goes
  EXPECT_TRUE(cache.lookup("aaaa", notes));
  EXPECT_FALSE(cache.lookup("bbbb", notes));
  EXPECT_TRUE(cache.lookup("cccc", notes));
  EXPECT_TRUE(cache.lookup("dddd", notes));
  EXPECT_LE(cache.sizeBytes(), 3500u);
  EXPECT_TRUE(notes.empty()) << notes;
  fs::remove_all(dir);
}

TEST(CompileCacheTest, ConcurrentWritersOfOneEntryBothSucceed) {
  std::string dir = freshDir("race");
  std::vector<std::thread> writers;
  std::vector<std::optional<std::string>> paths(4);
  for (size_t i = 0; i < paths.size(); ++i)
    writers.emplace_back([&, i] {
      codegen::CompileCache cache(dir, uint64_t(1) << 30);
      std::string error;
      paths[i] = cache.insert(
          "samekey",
          [&](const std::string &output) {
            std::string data(100000, char('a' + i));
            std::ofstream out(output, std::ios::binary);
            for (size_t k = 0; k < data.size(); k += 1000) {
              out.write(data.data() + k, 1000);
              std::this_thread::yield();
            }
            return std::string();
          },
          error);
      EXPECT_TRUE(paths[i]) << error;
    });
  for (std::thread &writer : writers)
    writer.join();
  codegen::CompileCache cache(dir, uint64_t(1) << 30);
  std::string notes;
  EXPECT_TRUE(cache.lookup("samekey", notes)) << notes;
  EXPECT_TRUE(notes.empty()) << notes;
  // No temporary file is left behind.
  size_t files = 0;
  for (const fs::directory_entry &entry : fs::directory_iterator(dir)) {
    EXPECT_EQ(entry.path().filename().string().rfind(".tmp", 0),
              std::string::npos)
        << entry.path();
    ++files;
  }
  EXPECT_EQ(files, 1u);
  fs::remove_all(dir);
}

/// Restores an environment variable when it goes out of scope.
struct SavedEnv {
  explicit SavedEnv(const char *name) : name(name) {
    if (const char *value = std::getenv(name))
      saved = value;
  }
  ~SavedEnv() {
    if (saved)
      setenv(name, saved->c_str(), 1);
    else
      unsetenv(name);
  }
  const char *name;
  std::optional<std::string> saved;
};

/// Four distinct kernels (a GAU layer, a FLASH layer, the glue between
/// and after them) for compileConcurrently.
const char *kMixedStack = R"(
model mixed {
  dim d = 128
  dim n : seq
  dim b : batch
  input  x : f32[b, n, d]
  param  g : f32[1]
  output y : f32[b, n, d]
  h = repeat 2 gau(x, e = 256, s = 64, causal = true, max_len = 64) as g
  k = scale_norm(h, g)
  f = repeat 2 flash(k, e = 256, s = 64, chunk = 32, causal = true) as f
  y = scale_norm(f, g)
}
)";

Compiled compileSource(const std::string &source, const CacheOptions &cache) {
  return compileWith(cache, [&](driver::Session &session) {
    return session.loadSource(source, "mixed.attn");
  });
}

TEST(CompileCacheTest, KernelsCompileAtOnceAndMatchTheInMemoryJit) {
  CacheOptions cache;
  cache.directory = freshDir("concurrent");
  Compiled cold = compileSource(kMixedStack, cache);
  ASSERT_TRUE(cold.jit) << cold.diagnostics;
  size_t kernels = cold.jit->pipeline().kernels().size();
  EXPECT_GE(kernels, 3u);
  EXPECT_EQ(cold.stats.misses, kernels);
  EXPECT_EQ(kernelObjects(cache.directory).size(), kernels);
  // Every compiling thread counted once (the runtime is already loaded in
  // this process, so only the kernels compile).
  EXPECT_EQ(cold.stats.threads,
            std::min<size_t>(
                kernels, std::max(1u, std::thread::hardware_concurrency())));
  TensorMap concurrent = run(cold, 5);

  Compiled warm = compileSource(kMixedStack, cache);
  ASSERT_TRUE(warm.jit) << warm.diagnostics;
  EXPECT_EQ(warm.stats.hits, kernels);
  EXPECT_EQ(warm.stats.threads, 1u); // nothing compiled
  EXPECT_EQ(run(warm, 5).at("y").data, concurrent.at("y").data);

  SavedEnv forced("ATTNC_HALIDE_JIT");
  setenv("ATTNC_HALIDE_JIT", "1", 1);
  Compiled inMemory = compileSource(kMixedStack, cache);
  ASSERT_TRUE(inMemory.jit) << inMemory.diagnostics;
  EXPECT_GT(inMemory.stats.jit, 0.0);
  EXPECT_EQ(run(inMemory, 5).at("y").data, concurrent.at("y").data);
  fs::remove_all(cache.directory);
}

TEST(CompileCacheTest, DirectoryAndLimitFollowTheOptionsThenTheEnvironment) {
  SavedEnv dirEnv("ATTNC_CACHE_DIR"), xdgEnv("XDG_CACHE_HOME"),
      homeEnv("HOME"), sizeEnv("ATTNC_CACHE_SIZE");
  CacheOptions options;
  std::string notes;
  setenv("ATTNC_CACHE_DIR", "/tmp/from-env", 1);
  EXPECT_EQ(codegen::cacheDirectory(options), "/tmp/from-env");
  options.directory = "/tmp/from-option";
  EXPECT_EQ(codegen::cacheDirectory(options), "/tmp/from-option");
  options.directory.clear();
  unsetenv("ATTNC_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  EXPECT_EQ(codegen::cacheDirectory(options), "/tmp/xdg/attnc");
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/tmp/home", 1);
  EXPECT_EQ(codegen::cacheDirectory(options), "/tmp/home/.cache/attnc");

  setenv("ATTNC_CACHE_SIZE", "64M", 1);
  EXPECT_EQ(codegen::cacheLimit(options, notes), uint64_t(64) << 20);
  setenv("ATTNC_CACHE_SIZE", "lots", 1);
  EXPECT_EQ(codegen::cacheLimit(options, notes), uint64_t(1) << 30);
  EXPECT_NE(notes.find("ignoring ATTNC_CACHE_SIZE='lots'"), std::string::npos);
  unsetenv("ATTNC_CACHE_SIZE");
}

} // namespace
} // namespace attnc
