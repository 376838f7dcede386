//===- ModelGenMain.cpp - attnc-modelgen: differential testing campaigns --===//
//
// This file is the driver of attnc-modelgen, which generates random valid
// models (ModelGenerator.h) and checks each against the fp64 reference with
// the chosen schedule variants (Differential.h), as Csmith and YARPGen
// campaigns do for C compilers:
//
//   attnc-modelgen --seed S --count N --out DIR
//                  [--variants default,naive,cuda-on-host] [--tolerance T]
//                  [--jobs J] [--max-statements K] [--avoid-known-bugs] [--no-reduce]
//                  [--max-seconds T] [--in-process] [--verbose] [--print]
//
// It prints a progress line every 25 models, writes a reproducer of every
// failure to DIR (reduced for the first two failures of each kind), and ends
// with a summary; it exits with 1 when any check failed. `--file F.attn
// [--dims n=7,b=2]...` checks one file instead (a reproducer, say). `--jobs J` runs J
// checks at once, each in its own process. `--print` only prints the generated models; `--in-process`
// runs the checks without forking (faster to debug, but a crash ends it);
// `--verbose` prints every check with its time and error.
//
//===----------------------------------------------------------------------===//
#include "tests/fuzz/Reducer.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

using namespace attnc::fuzz;

namespace {

struct Flags {
  uint64_t seed = 1;
  int count = 1;
  std::string out = "modelgen-failures";
  CheckOptions check;
  GeneratorOptions generator;
  int jobs = 1;
  double maxSeconds = 0;       ///< --max-seconds: stop starting models after
  std::string file;            ///< --file: check this .attn file instead
  std::vector<DimBinding> dims; ///< --dims for --file
  bool print = false, reduce = true, verbose = false;
};

int usage(const char *message) {
  std::fprintf(stderr,
               "attnc-modelgen: %s\nusage: attnc-modelgen --seed S --count N --out DIR "
               "[--variants default,naive,cuda-on-host] [--tolerance T] [--jobs J] [--max-statements K] [--max-seconds T] "
               "[--avoid-known-bugs] [--no-reduce] [--in-process] [--verbose] [--print]\n"
               "       attnc-modelgen --file F.attn [--dims n=7,b=2]... [--variants ...]\n",
               message);
  return 2;
}

bool parseFlags(int argc, char **argv, Flags &flags, std::string &error) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char * {
      if (i + 1 >= argc) {
        error = "missing value after " + arg;
        return nullptr;
      }
      return argv[++i];
    };
    if (arg == "--seed" || arg == "--count" || arg == "--out" ||
        arg == "--variants" || arg == "--tolerance" || arg == "--jobs" ||
        arg == "--file" || arg == "--dims" || arg == "--max-seconds") {
      const char *v = value();
      if (!v)
        return false;
      if (arg == "--seed")
        flags.seed = std::strtoull(v, nullptr, 10);
      else if (arg == "--count")
        flags.count = std::atoi(v);
      else if (arg == "--file")
        flags.file = v;
      else if (arg == "--max-seconds")
        flags.maxSeconds = std::atof(v);
      else if (arg == "--dims") {
        DimBinding binding;
        std::stringstream list(v);
        std::string item;
        while (std::getline(list, item, ',')) {
          size_t eq = item.find('=');
          if (eq == std::string::npos) {
            error = "--dims expects name=size,name=size, got '" + item + "'";
            return false;
          }
          binding[item.substr(0, eq)] = std::atoll(item.c_str() + eq + 1);
        }
        flags.dims.push_back(binding);
      } else if (arg == "--jobs")
        flags.jobs = std::max(1, std::atoi(v));
      else if (arg == "--out")
        flags.out = v;
      else if (arg == "--tolerance")
        flags.check.tolerance = std::atof(v);
      else {
        flags.check.variants.clear();
        std::stringstream list(v);
        std::string name;
        while (std::getline(list, name, ',')) {
          Variant variant;
          if (!parseVariant(name, variant)) {
            error = "unknown variant '" + name + "' (default, naive, cuda-on-host)";
            return false;
          }
          flags.check.variants.push_back(variant);
        }
      }
    } else if (arg == "--print") {
      flags.print = true;
    } else if (arg == "--max-statements") {
      const char *v = value();
      if (!v)
        return false;
      flags.generator.maxStatements = std::max(1, std::atoi(v));
    } else if (arg == "--verbose") {
      flags.verbose = true;
    } else if (arg == "--in-process") {
      flags.check.isolate = false;
    } else if (arg == "--no-reduce") {
      flags.reduce = false;
    } else if (arg == "--avoid-known-bugs") {
      flags.generator.avoidKnownBugs = true;
    } else {
      error = "unknown argument '" + arg + "'";
      return false;
    }
  }
  if (flags.jobs > 1 && !flags.check.isolate) {
    error = "--jobs needs isolated checks (no --in-process)";
    return false;
  }
  if (flags.count < 1 || flags.check.variants.empty()) {
    error = "--count must be at least 1 and --variants not empty";
    return false;
  }
  return true;
}

std::string countsLine(const std::map<Outcome, int> &counts) {
  std::string text;
  for (Outcome outcome : allOutcomes()) {
    auto it = counts.find(outcome);
    if (it != counts.end() && it->second)
      text += std::string(text.empty() ? "" : ", ") + outcomeName(outcome) + " " +
              std::to_string(it->second);
  }
  return text.empty() ? "none" : text;
}

} // namespace

int main(int argc, char **argv) {
  Flags flags;
  std::string error;
  if (!parseFlags(argc, argv, flags, error))
    return usage(error.c_str());
  if (!flags.file.empty()) { // check one file, as a reproducer is rerun
    std::ifstream in(flags.file);
    std::stringstream text;
    text << in.rdbuf();
    if (!in)
      return usage(("cannot read " + flags.file).c_str());
    if (flags.dims.empty())
      flags.dims.push_back({});
    int failures = 0;
    for (Variant variant : flags.check.variants) {
      VariantResult result = checkVariant(text.str(), flags.dims, variant, flags.check);
      std::printf("%s: %s in %.2f s, error %.3g\n%s%s", variantName(variant),
                  outcomeName(result.outcome), result.seconds, result.error,
                  result.message.c_str(),
                  result.message.empty() || result.message.back() == '\n' ? "" : "\n");
      failures += result.outcome != Outcome::Ok;
    }
    return failures ? 1 : 0;
  }
  if (flags.print) {
    for (int i = 0; i < flags.count; ++i) {
      GeneratedModel model = generateModel(flags.seed + i, flags.generator);
      std::cout << "# " << model.description << "\n# dims:";
      for (const DimBinding &binding : model.allDims())
        std::cout << " [" << formatDims(binding) << "]";
      std::cout << "\n" << model.source << "\n";
    }
    return 0;
  }

  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
        .count();
  };
  std::map<Outcome, int> counts; // per check (model x variant)
  std::map<std::string, int> reducedPerKey;
  int generated = 0, modelsOk = 0, checks = 0;
  // Models are checked a few at a time (jobs in parallel); a progress line
  // every 25.
  const int chunk = 2 * flags.jobs;
  int stoppedAt = flags.count;
  for (int first = 0; first < flags.count; first += chunk) {
    if (flags.maxSeconds > 0 && elapsed() > flags.maxSeconds) {
      stoppedAt = first;
      std::printf("stopping after %.0f s (--max-seconds)\n", elapsed());
      break;
    }
    std::vector<GeneratedModel> models;
    for (int i = first; i < std::min(flags.count, first + chunk); ++i)
      models.push_back(generateModel(flags.seed + i, flags.generator));
    std::vector<std::vector<VariantResult>> results =
        checkModels(models, flags.check, flags.jobs);
    for (size_t m = 0; m < models.size(); ++m) {
      const GeneratedModel &model = models[m];
      ++generated;
      bool allOk = true;
      for (const VariantResult &result : results[m]) {
        ++checks;
        ++counts[result.outcome];
        if (flags.verbose)
          std::printf("seed %llu %s: %s in %.2f s, error %.3g (%s)\n",
                      (unsigned long long)model.seed, variantName(result.variant),
                      outcomeName(result.outcome), result.seconds, result.error,
                      model.description.c_str());
        if (result.outcome == Outcome::Ok)
          continue;
        allOk = false;
        std::printf("seed %llu %s: %s (%s)\n", (unsigned long long)model.seed,
                    variantName(result.variant), outcomeName(result.outcome),
                    model.description.c_str());
        std::string line = result.message.substr(0, result.message.find('\n'));
        std::printf("  %s\n", line.substr(0, 400).c_str());
        // Reduce the first two failures of each kind; save the others whole.
        Reproducer reduced{model.source, model.allDims(), result};
        if (flags.reduce && reducedPerKey[failureKey(result)]++ < 2)
          reduced = reduceFailure(model.source, model.allDims(), result, flags.check);
        std::string path = writeReproducer(flags.out, model, result, reduced);
        std::printf("  reproducer: %s (%d checks, %d changes kept)\n", path.c_str(),
                    reduced.checks, reduced.accepted);
        std::fflush(stdout);
      }
      modelsOk += allOk;
    }
    if (generated % 25 < int(models.size()) || generated == flags.count) {
      std::printf("[%d/%d] %.0f s: models ok %d; checks: %s\n", generated,
                  flags.count, elapsed(), modelsOk, countsLine(counts).c_str());
      std::fflush(stdout);
    }
  }
  std::printf("summary: seeds %llu..%llu, %d models generated, %d checks run "
              "(%zu variants), %d models ok, %d checks ok\n",
              (unsigned long long)flags.seed,
              (unsigned long long)(flags.seed + stoppedAt - 1), generated, checks,
              flags.check.variants.size(), modelsOk, counts[Outcome::Ok]);
  std::printf("summary: failures by class:");
  int failures = 0;
  for (Outcome outcome : allOutcomes())
    if (outcome != Outcome::Ok) {
      std::printf(" %s %d;", outcomeName(outcome), counts[outcome]);
      failures += counts[outcome];
    }
  std::printf("\nsummary: total time %.1f s (%.2f s per model)%s\n", elapsed(),
              elapsed() / generated,
              failures ? (", reproducers in " + flags.out).c_str() : "");
  return failures ? 1 : 0;
}
