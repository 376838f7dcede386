//===- ModuleParts.cpp - a kernel's module compiled on two threads --------===//
//
// This file implements splitModule (the parts and their stand-ins),
// weakenSymbols (an ELF64 little-endian symbol table edited in place) and
// compileObjects (the parts compiled at once). See ModuleParts.h.
//
//===----------------------------------------------------------------------===//
#include "codegen/ModuleParts.h"

#include "codegen/Stopwatch.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <fstream>
#include <iterator>
#include <set>
#include <system_error>
#include <thread>

namespace attnc::codegen {

using namespace Halide;
using Halide::Internal::LoweredFunc;

namespace {
/// The size of a function's code, by the loads, stores and calls in its
/// statement (Halide has unrolled and vectorised it already).
class CodeSize : public Internal::IRVisitor {
public:
  size_t count = 0;

protected:
  using Internal::IRVisitor::visit;
  void visit(const Internal::Load *op) override {
    ++count;
    Internal::IRVisitor::visit(op);
  }
  void visit(const Internal::Store *op) override {
    ++count;
    Internal::IRVisitor::visit(op);
  }
  void visit(const Internal::Call *op) override {
    ++count;
    Internal::IRVisitor::visit(op);
  }
};
} // namespace

static size_t codeSize(const LoweredFunc &function) {
  CodeSize size;
  function.body.accept(&size);
  return size.count;
}

/// The symbols Halide defines for `function`: its own, and for an
/// externally visible kernel its argv wrapper and metadata getter.
static std::vector<std::string> symbolsOf(const LoweredFunc &function) {
  std::vector<std::string> names = {function.name};
  if (function.linkage == LinkageType::ExternalPlusArgv ||
      function.linkage == LinkageType::ExternalPlusMetadata)
    names.push_back(function.name + "_argv");
  if (function.linkage == LinkageType::ExternalPlusMetadata)
    names.push_back(function.name + "_metadata");
  return names;
}

std::vector<ModulePart> splitModule(const Module &module, size_t count) {
  const std::vector<LoweredFunc> &functions = module.functions();
  const Target &target = module.target();
  // ELF64 little-endian objects (weakenSymbols), C names (symbolsOf), no
  // runtime, embedded buffers, bitcode or submodules that every part would
  // define again.
  bool splittable =
      count > 1 && functions.size() > 1 && module.submodules().empty() &&
      module.buffers().empty() && module.external_code().empty() &&
      target.os == Target::Linux && target.bits == 64 &&
      (target.arch == Target::X86 || target.arch == Target::ARM) &&
      target.has_feature(Target::NoRuntime) &&
      !target.has_feature(Target::CPlusPlusMangling);
  for (const LoweredFunc &function : functions)
    splittable = splittable &&
                 function.name_mangling != NameMangling::CPlusPlus &&
                 function.name.find("::") == std::string::npos &&
                 function.linkage != LinkageType::Internal;
  if (!splittable)
    return {ModulePart{module, {}}};
  // The largest functions first, each to the part with the least code.
  std::vector<size_t> order(functions.size()), sizes(functions.size());
  for (size_t i = 0; i < functions.size(); ++i) {
    order[i] = i;
    sizes[i] = codeSize(functions[i]);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return sizes[a] != sizes[b] ? sizes[a] > sizes[b] : a < b;
  });
  count = std::min(count, functions.size());
  // (Ties go to the part with fewer functions: every part defines one.)
  std::vector<size_t> partOf(functions.size());
  std::vector<std::pair<size_t, size_t>> load(count, {0, 0}); // code, count
  for (size_t i : order) {
    size_t part = std::min_element(load.begin(), load.end()) - load.begin();
    partOf[i] = part;
    load[part].first += sizes[i];
    ++load[part].second;
  }
  std::vector<ModulePart> parts;
  for (size_t part = 0; part < count; ++part) {
    ModulePart piece{Module(module.name(), target), {}};
    piece.module.set_any_strict_float(module.any_strict_float());
    for (const auto &[from, to] : module.get_metadata_name_map())
      piece.module.remap_metadata_name(from, to);
    for (size_t i = 0; i < functions.size(); ++i) {
      const LoweredFunc &function = functions[i];
      if (partOf[i] == part) {
        piece.module.append(function);
        continue;
      }
      piece.module.append(
          LoweredFunc(function.name, function.args, Internal::Evaluate::make(0),
                      function.linkage, function.name_mangling));
      for (std::string &name : symbolsOf(function))
        piece.standIns.push_back(std::move(name));
    }
    parts.push_back(std::move(piece));
  }
  return parts;
}

//===----------------------------------------------------------------------===//
// ELF symbols
//===----------------------------------------------------------------------===//

template <typename T>
static bool readAt(const std::string &bytes, uint64_t offset, T &value) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T))
    return false;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return true;
}

std::string weakenSymbols(const std::string &path,
                          const std::vector<std::string> &symbols) {
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    if (!in)
      return "cannot read " + path;
    bytes.assign(std::istreambuf_iterator<char>(in),
                 std::istreambuf_iterator<char>());
  }
  // ELF64 (class 2), little-endian (data 1), relocatable (type 1).
  uint16_t type = 0, sectionSize = 0, sections = 0;
  uint64_t sectionsAt = 0;
  static const char magic[4] = {0x7f, 'E', 'L', 'F'};
  if (bytes.size() < 64 || std::memcmp(bytes.data(), magic, 4) != 0 ||
      bytes[4] != 2 || bytes[5] != 1 || !readAt(bytes, 16, type) || type != 1 ||
      !readAt(bytes, 0x28, sectionsAt) || !readAt(bytes, 0x3A, sectionSize) ||
      !readAt(bytes, 0x3C, sections) || sectionSize < 64)
    return path + " is not an ELF64 little-endian object";
  std::set<std::string> wanted(symbols.begin(), symbols.end());
  for (uint16_t s = 0; s < sections; ++s) {
    uint64_t header = sectionsAt + uint64_t(s) * sectionSize;
    uint32_t kind = 0, link = 0;
    uint64_t offset = 0, size = 0, entry = 0;
    if (!readAt(bytes, header + 4, kind) ||
        !readAt(bytes, header + 0x18, offset) ||
        !readAt(bytes, header + 0x20, size) ||
        !readAt(bytes, header + 0x28, link) ||
        !readAt(bytes, header + 0x38, entry))
      return path + ": truncated section headers";
    if (kind != 2 /* SHT_SYMTAB */)
      continue;
    uint64_t namesAt = 0, namesSize = 0;
    uint64_t namesHeader = sectionsAt + uint64_t(link) * sectionSize;
    if (entry < 24 || entry > size || link >= sections ||
        !readAt(bytes, namesHeader + 0x18, namesAt) ||
        !readAt(bytes, namesHeader + 0x20, namesSize) ||
        namesAt > bytes.size() || bytes.size() - namesAt < namesSize ||
        offset > bytes.size() || bytes.size() - offset < size)
      return path + ": malformed symbol table";
    for (uint64_t at = offset; at + entry <= offset + size; at += entry) {
      uint32_t name = 0;
      uint8_t info = 0;
      uint16_t sectionIndex = 0;
      readAt(bytes, at, name);
      readAt(bytes, at + 4, info);
      readAt(bytes, at + 6, sectionIndex);
      if (name >= namesSize)
        continue;
      const char *text = bytes.data() + namesAt + name;
      std::string symbol(text, strnlen(text, namesSize - name));
      // A defined global (binding 1) becomes weak (binding 2).
      if (sectionIndex == 0 || (info >> 4) != 1 || !wanted.erase(symbol))
        continue;
      bytes[at + 4] = char((2 << 4) | (info & 0xf));
    }
  }
  if (!wanted.empty())
    return path + " does not define " + *wanted.begin();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  return out ? "" : "cannot write " + path;
}

//===----------------------------------------------------------------------===//
// Compiling the parts
//===----------------------------------------------------------------------===//

std::vector<std::string> compileObjects(const Module &module,
                                        const std::string &directory,
                                        size_t threads, double &millis) {
  std::vector<ModulePart> parts = splitModule(module, threads);
  std::vector<std::string> objects(parts.size());
  std::vector<double> times(parts.size(), 0.0);
  std::vector<std::string> errors(parts.size());
  std::vector<std::exception_ptr> thrown(parts.size());
  auto compile = [&](size_t i) {
    try {
      auto start = SteadyClock::now();
      objects[i] = directory + "/part" + std::to_string(i) + ".o";
      parts[i].module.compile({{OutputFileType::object, objects[i]}});
      if (!parts[i].standIns.empty())
        errors[i] = weakenSymbols(objects[i], parts[i].standIns);
      times[i] = millisSince(start);
    } catch (...) {
      thrown[i] = std::current_exception();
    }
  };
  std::vector<std::thread> workers;
  try {
    for (size_t i = 1; i < parts.size(); ++i)
      workers.emplace_back(compile, i);
  } catch (const std::system_error &) {
    // No thread to start: the rest on this one.
    for (size_t i = workers.size() + 1; i < parts.size(); ++i)
      compile(i);
  }
  compile(0);
  for (std::thread &worker : workers)
    worker.join();
  for (size_t i = 0; i < parts.size(); ++i) {
    if (thrown[i])
      std::rethrow_exception(thrown[i]);
    millis += times[i];
  }
  for (const std::string &error : errors)
    if (!error.empty()) {
      // A part that cannot be linked with the others: one object instead.
      auto start = SteadyClock::now();
      std::string whole = directory + "/kernel.o";
      module.compile({{OutputFileType::object, whole}});
      millis += millisSince(start);
      return {whole};
    }
  return objects;
}

} // namespace attnc::codegen
