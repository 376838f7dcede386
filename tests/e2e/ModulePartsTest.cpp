//===- ModulePartsTest.cpp - a kernel's module compiled in parts ----------===//
//
// splitModule gives each lowered function one part that defines it and
// stand-ins everywhere else; compileObjects' objects define each symbol
// once strongly (the stand-ins are weak); weakenSymbols reports what is not
// an ELF object or lacks a symbol; the linked parts compute what Halide's
// JIT does. Whole models through the parts:
// CompileCacheTest.KernelsCompileAtOnceAndMatchTheInMemoryJit.
//
//===----------------------------------------------------------------------===//
#include "codegen/ModuleParts.h"
#include "codegen/NativeKernel.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>

namespace attnc {
namespace {

namespace fs = std::filesystem;
using codegen::ModulePart;

/// A pipeline of three parallel loops: its module has a kernel and three
/// closures.
struct Parallel {
  Halide::ImageParam in{Halide::Float(32), 2, "in"};
  Halide::Func out{"c"};
  Parallel() {
    Halide::Var x("x"), y("y");
    Halide::Func a("a"), b("b");
    a(x, y) = in(x, y) * 2.0f + Halide::cast<float>(x);
    b(x, y) = a(x, y) + Halide::cast<float>(y);
    out(x, y) = b(x, y) * a(x, y);
    a.compute_root().parallel(y);
    b.compute_root().parallel(y);
    out.parallel(y);
  }
  Halide::Module module() {
    Halide::Target target = Halide::get_host_target()
                                .with_feature(Halide::Target::NoRuntime)
                                .with_feature(Halide::Target::NoBoundsQuery);
    return out.compile_to_module({in}, "parts_kernel", target);
  }
};

Halide::Module parallelModule() { return Parallel().module(); }

/// `nm`'s symbol kinds of the defined symbols in `object` ('T', 'W', ...).
std::map<std::string, char> definedSymbols(const std::string &object) {
  std::map<std::string, char> kinds;
  FILE *pipe = popen(("nm --defined-only " + object).c_str(), "r");
  if (!pipe)
    return kinds;
  char line[1024];
  while (std::fgets(line, sizeof line, pipe)) {
    std::istringstream fields(line);
    std::string address, kind, name;
    if (fields >> address >> kind >> name)
      kinds[name] = kind[0];
  }
  pclose(pipe);
  return kinds;
}

std::string freshDir(const std::string &name) {
  std::string dir =
      (fs::temp_directory_path() /
       ("attnc-parts-test-" + std::to_string(getpid()) + "-" + name))
          .string();
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST(ModulePartsTest, EachFunctionIsDefinedInOnePartAndStandsInElsewhere) {
  Halide::Module module = parallelModule();
  ASSERT_GE(module.functions().size(), 3u);
  std::vector<ModulePart> parts = codegen::splitModule(module, 2);
  ASSERT_EQ(parts.size(), 2u);
  std::map<std::string, int> defined;
  for (const ModulePart &part : parts) {
    std::set<std::string> standIns(part.standIns.begin(), part.standIns.end());
    ASSERT_EQ(part.module.functions().size(), module.functions().size());
    for (const auto &function : part.module.functions())
      if (!standIns.count(function.name))
        ++defined[function.name];
  }
  for (const auto &function : module.functions())
    EXPECT_EQ(defined[function.name], 1) << function.name;
  // The kernel's argv wrapper and metadata stand in with it.
  size_t withKernel = 0;
  for (const ModulePart &part : parts)
    for (const std::string &name : part.standIns)
      withKernel +=
          name == "parts_kernel_argv" || name == "parts_kernel_metadata";
  EXPECT_EQ(withKernel, 2u);
}

TEST(ModulePartsTest, OneFunctionOrOneThreadIsOnePart) {
  Halide::ImageParam in(Halide::Float(32), 1, "in");
  Halide::Var x("x");
  Halide::Func f("f");
  f(x) = in(x) + 1.0f;
  Halide::Module single = f.compile_to_module(
      {in}, "single_kernel",
      Halide::get_host_target().with_feature(Halide::Target::NoRuntime));
  ASSERT_EQ(single.functions().size(), 1u);
  EXPECT_EQ(codegen::splitModule(single, 2).size(), 1u);
  EXPECT_TRUE(codegen::splitModule(single, 2)[0].standIns.empty());
  EXPECT_EQ(codegen::splitModule(parallelModule(), 1).size(), 1u);
}

TEST(ModulePartsTest, ObjectsDefineEachSymbolOnceStrongly) {
  Halide::Module module = parallelModule();
  std::string dir = freshDir("objects");
  double millis = 0;
  std::vector<std::string> objects =
      codegen::compileObjects(module, dir, 2, millis);
  ASSERT_EQ(objects.size(), 2u);
  EXPECT_GT(millis, 0.0);
  std::map<std::string, std::string> kinds; // symbol -> kinds over objects
  for (const std::string &object : objects)
    for (const auto &[name, kind] : definedSymbols(object))
      kinds[name] += kind;
  std::vector<std::string> names = {"parts_kernel", "parts_kernel_argv",
                                    "parts_kernel_metadata"};
  for (const auto &function : module.functions())
    names.push_back(function.name);
  for (const std::string &name : names) {
    std::string seen = kinds[name];
    std::sort(seen.begin(), seen.end());
    EXPECT_EQ(seen, "TW") << name; // one definition, one weak stand-in
  }
  fs::remove_all(dir);
}

TEST(ModulePartsTest, LinkedPartsComputeWhatHalidesJitDoes) {
  // The parts linked as NativeKernel links them, run on the process's
  // runtime: every closure must be its real definition, not a stand-in.
  std::string dir = freshDir("linked");
  codegen::CacheOptions cache;
  cache.directory = dir;
  codegen::KernelCompileStats stats;
  ASSERT_EQ(codegen::NativeKernel::prepareRuntime(Halide::get_host_target(),
                                                  cache, stats),
            "");
  Parallel pipeline;
  double millis = 0;
  std::vector<std::string> objects =
      codegen::compileObjects(pipeline.module(), dir, 2, millis);
  ASSERT_EQ(objects.size(), 2u);
  std::string shared = dir + "/parts.so";
  ASSERT_EQ(std::system(("cc -shared -o " + shared + " " + objects[0] + " " +
                         objects[1])
                            .c_str()),
            0);
  void *handle = dlopen(shared.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto argv =
      reinterpret_cast<int (*)(void **)>(dlsym(handle, "parts_kernel_argv"));
  ASSERT_NE(argv, nullptr);

  Halide::Buffer<float> input(37, 29), output(37, 29);
  for (int y = 0; y < 29; ++y)
    for (int x = 0; x < 37; ++x)
      input(x, y) = float((x * 7 + y * 13) % 11) - 5.0f;
  void *args[] = {input.raw_buffer(), output.raw_buffer()};
  ASSERT_EQ(argv(args), 0);
  pipeline.in.set(input);
  Halide::Buffer<float> expected = pipeline.out.realize({37, 29});
  for (int y = 0; y < 29; ++y)
    for (int x = 0; x < 37; ++x)
      ASSERT_EQ(output(x, y), expected(x, y)) << x << ", " << y;
  dlclose(handle);
  fs::remove_all(dir);
}

TEST(ModulePartsTest, WeakenSymbolsReportsWhatItCannotDo) {
  std::string dir = freshDir("errors");
  std::string text = dir + "/not-an-object.o";
  std::ofstream(text) << "not an ELF object\n";
  EXPECT_NE(codegen::weakenSymbols(text, {"f"}).find("is not an ELF64"),
            std::string::npos);
  EXPECT_NE(
      codegen::weakenSymbols(dir + "/missing.o", {"f"}).find("cannot read"),
      std::string::npos);
  double millis = 0;
  std::vector<std::string> objects =
      codegen::compileObjects(parallelModule(), dir, 1, millis);
  ASSERT_EQ(objects.size(), 1u);
  EXPECT_NE(codegen::weakenSymbols(objects[0], {"no_such_symbol"})
                .find("does not define no_such_symbol"),
            std::string::npos);
  fs::remove_all(dir);
}

} // namespace
} // namespace attnc
