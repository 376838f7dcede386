//===- FuzzReplayMain.cpp - run a fuzz target on saved inputs -------------===//
//
// This file is the main() that the fuzz targets link when attnc is built
// without libFuzzer (ATTNC_FUZZ off): it runs LLVMFuzzerTestOneInput once on
// every file named on the command line, and on every regular file of every
// directory named there (sorted by name, not recursive). Arguments that
// start with '-' are libFuzzer flags and are ignored, so one command line
// works for both builds. A failing input aborts inside the target.
//
//===----------------------------------------------------------------------===//
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {

/// Runs the target on the contents of \p path; returns false if it cannot
/// be read.
bool runFile(const std::filesystem::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  std::fprintf(stderr, "running %s (%zu bytes)\n", path.c_str(), bytes.size());
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(bytes.data()),
                         bytes.size());
  return true;
}

} // namespace

int main(int argc, char **argv) {
  namespace fs = std::filesystem;
  size_t count = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.empty() || arg[0] == '-')
      continue;
    std::vector<fs::path> files;
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      for (const fs::directory_entry &entry : fs::directory_iterator(arg, ec))
        if (entry.is_regular_file())
          files.push_back(entry.path());
      std::sort(files.begin(), files.end());
    } else {
      files.push_back(arg);
    }
    for (const fs::path &file : files) {
      if (!runFile(file)) {
        std::fprintf(stderr, "error: cannot read %s\n", file.c_str());
        return 1;
      }
      ++count;
    }
  }
  std::fprintf(stderr, "%zu inputs ran without failure\n", count);
  return 0;
}
