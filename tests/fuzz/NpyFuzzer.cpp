//===- NpyFuzzer.cpp - libFuzzer target for the .npy reader ---------------===//
//
// This file is a libFuzzer target for the runtime's .npy reader (magic,
// version, header length, Python dict header, data size), run on each input
// in memory through parseNpy. A successful read must hold as many elements
// as its shape says, within the rank limit, and a re-serialized copy must
// read back identically; a failed read must leave the array empty and give
// a message that starts with the file name. Anything else aborts so that
// libFuzzer reports it.
//
//===----------------------------------------------------------------------===//
#include "runtime/Npy.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace attnc::runtime;

namespace {

[[noreturn]] void reportAndAbort(const char *what) {
  std::fprintf(stderr, "NpyFuzzer: %s\n", what);
  std::abort();
}

/// True if \p a and \p b hold the same shape and bit-identical elements.
bool sameArray(const HostTensor &a, const HostTensor &b) {
  return a.shape == b.shape && a.data.size() == b.data.size() &&
         (a.data.empty() ||
          std::memcmp(a.data.data(), b.data.data(), 4 * a.data.size()) == 0);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string kName = "fuzz.npy";
  HostTensor array;
  Result r = parseNpy(data, size, kName, array);
  if (!r.ok()) {
    if (r.message.compare(0, kName.size(), kName) != 0)
      reportAndAbort("an error message does not start with the file name");
    if (!array.shape.empty() || !array.data.empty())
      reportAndAbort("a failed read left data behind");
    return 0;
  }
  int64_t count = 0;
  if (array.shape.size() > kMaxNpyRank ||
      !shapeElementCount(array.shape.data(), array.shape.size(), count) ||
      static_cast<uint64_t>(count) != array.data.size())
    reportAndAbort("the data does not match the shape");
  std::string bytes;
  if (!serializeNpy(array.shape, array.data.data(), bytes).ok())
    reportAndAbort("a read array cannot be serialized");
  HostTensor again;
  if (!parseNpy(bytes.data(), bytes.size(), kName, again).ok() ||
      !sameArray(array, again))
    reportAndAbort("a serialized array does not read back identically");
  return 0;
}
