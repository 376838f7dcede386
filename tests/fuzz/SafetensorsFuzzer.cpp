//===- SafetensorsFuzzer.cpp - libFuzzer target for the safetensors reader ===//
//
// This file is a libFuzzer target for the runtime's safetensors reader
// (header length, strict JSON header, entry validation, F16/BF16
// conversion), run on each input in memory through parseSafetensors. The
// reader must return a status for every input; a successful read must hold
// consistent tensors (sorted names, element counts that match the shapes)
// that the writer, when it accepts them, serializes to a file that reads
// back bit-identically; a failed read must leave nothing behind and give a
// message that starts with the file name. Anything else aborts so that
// libFuzzer reports it.
//
//===----------------------------------------------------------------------===//
#include "runtime/Safetensors.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace attnc::runtime;

namespace {

[[noreturn]] void reportAndAbort(const char *what) {
  std::fprintf(stderr, "SafetensorsFuzzer: %s\n", what);
  std::abort();
}

/// Checks the invariants of a successful read.
void checkFile(const SafetensorsFile &file) {
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    const SafetensorsTensor &tensor = file.tensors[i];
    if (i > 0 && !(file.tensors[i - 1].name < tensor.name))
      reportAndAbort("tensors are not sorted by unique names");
    int64_t count = 0;
    if (!shapeElementCount(tensor.shape.data(), tensor.shape.size(), count) ||
        static_cast<uint64_t>(count) != tensor.data.size())
      reportAndAbort("a tensor's data does not match its shape");
    if (tensor.dtype != "F32" && tensor.dtype != "F16" &&
        tensor.dtype != "BF16")
      reportAndAbort("a tensor of an unsupported dtype was loaded");
  }
}

/// Writes \p file back as F32 safetensors (if the writer accepts its names)
/// and checks that it reads back with the same tensors and metadata.
void checkRoundTrip(const SafetensorsFile &file, const std::string &name) {
  std::vector<SafetensorsTensorRef> refs;
  for (const SafetensorsTensor &tensor : file.tensors)
    refs.push_back({tensor.name, tensor.shape, tensor.data.data()});
  std::string bytes;
  if (!serializeSafetensors(refs, file.metadata, bytes).ok())
    return; // e.g. an empty name, which the writer refuses to produce
  SafetensorsFile again;
  if (!parseSafetensors(bytes.data(), bytes.size(), name, again).ok())
    reportAndAbort("a written file does not read back");
  if (again.metadata != file.metadata ||
      again.tensors.size() != file.tensors.size())
    reportAndAbort("a written file reads back different entries");
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    const SafetensorsTensor &a = file.tensors[i], &b = again.tensors[i];
    if (a.name != b.name || a.shape != b.shape ||
        a.data.size() != b.data.size() ||
        (!a.data.empty() &&
         std::memcmp(a.data.data(), b.data.data(), 4 * a.data.size()) != 0))
      reportAndAbort("a written tensor reads back different");
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string kName = "fuzz.safetensors";
  SafetensorsFile file;
  Result r = parseSafetensors(data, size, kName, file);
  if (r.ok()) {
    checkFile(file);
    checkRoundTrip(file, kName);
    return 0;
  }
  if (r.message.compare(0, kName.size(), kName) != 0)
    reportAndAbort("an error message does not start with the file name");
  if (!file.tensors.empty() || !file.metadata.empty())
    reportAndAbort("a failed read left tensors or metadata behind");
  return 0;
}
