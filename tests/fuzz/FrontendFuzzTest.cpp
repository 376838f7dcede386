//===- FrontendFuzzTest.cpp - mutation smoke test of the front end --------===//
//
// This file feeds thousands of random mutations of the example models (fixed
// seed, so failures reproduce) through the whole front end: parse, check
// and import to the attn dialect. Every mutant must either be rejected with
// at least one located user diagnostic, or import to IR that verifies; the
// accepted ones then go through the passes and the building of their Halide
// pipelines. A crash, a hang, an internal error or a rejection without a
// diagnostic fails.
//
//===----------------------------------------------------------------------===//
#include "codegen/Codegen.h"
#include "dsl/Import/Frontend.h"
#include "driver/Session.h"

#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

using namespace attnc::dsl;

namespace {

const char *const kExamples[] = {"flash.attn",      "flash_bidir.attn",
                                 "gau.attn",        "mhsa.attn",
                                 "linear.attn",     "local.attn",
                                 "custom_gau.attn", "flash_lm.attn"};

/// Fragments that are likely to reach deep into the parser and checker.
const char *const kFragments[] = {
    "model", "dim", "input", "output", "param", "repeat", "as", "{", "}",
    "(", ")", "[", "]", ",", ":", "=", "@", "+", "-", "*", "/", "^", ".T",
    "0", "1", "-1", "3", "2.5", "1e400", "99999999999999999999", "1e", "seq",
    "batch", "causal", "window(0)", "window(7)", "chunk(3)", "none", "true",
    "x", "n", "d", "b", "e", "s", "qk", "i", "j", "flash(x)", "gau(x)",
    "mhsa(x, heads = 3)", "split(x, [1, 2])", "f32", "f16", "f64", "#",
    "\n", "\xff", "\t", "layer_norm(x)", "rope(x, dims = 3)",
    "attention(x, x, x)", "rel_pos_bias(x)", "t5_bias(x)", "x[5]", "x[0]",
    "sqrt(-1)", "d / 0", "d / 3", "repeat 2000 flash(x)", "output y = x",
    "y = x", "u, v = split(x, [256, 256])", "scale_norm(x, x)", "transpose(x)",
};

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string mutate(const std::string &source, std::mt19937 &rng) {
  std::string s = source;
  auto pick = [&](size_t bound) {
    return bound == 0 ? size_t(0)
                      : std::uniform_int_distribution<size_t>(0, bound - 1)(rng);
  };
  int edits = 1 + static_cast<int>(pick(4));
  for (int e = 0; e < edits; ++e) {
    size_t pos = pick(s.size() + 1);
    size_t len = 1 + pick(12);
    switch (pick(7)) {
    case 0: // delete a range
      s.erase(pos, len);
      break;
    case 1: // duplicate a range
      s.insert(pos, s.substr(pick(s.size() + 1), len));
      break;
    case 2: // insert a fragment
      s.insert(pos, std::string(" ") +
                        kFragments[pick(std::size(kFragments))] + " ");
      break;
    case 3: // replace one byte
      if (!s.empty())
        s[pick(s.size())] = static_cast<char>(pick(256));
      break;
    case 4: // truncate
      s.resize(pos);
      break;
    case 5: { // swap two lines
      std::vector<std::string> lines;
      std::stringstream ss(s);
      for (std::string line; std::getline(ss, line);)
        lines.push_back(line);
      if (lines.size() > 1)
        std::swap(lines[pick(lines.size())], lines[pick(lines.size())]);
      s.clear();
      for (const std::string &line : lines)
        s += line + "\n";
      break;
    }
    case 6: // replace a number-like or name-like token with a fragment
      s.replace(pos, std::min(len, s.size() - std::min(pos, s.size())),
                kFragments[pick(std::size(kFragments))]);
      break;
    }
  }
  return s;
}

TEST(FrontendFuzzTest, MutatedExamplesNeverCrashOrFailSilently) {
  mlir::MLIRContext context;
  std::mt19937 rng(20261129);
  constexpr int kMutantsPerExample = 500;
  int accepted = 0, rejected = 0;
  for (const char *name : kExamples) {
    std::string original =
        readFile(std::string(ATTNC_EXAMPLES_DIR) + "/" + name);
    ASSERT_FALSE(original.empty()) << "cannot read example " << name;
    for (int m = 0; m < kMutantsPerExample; ++m) {
      std::string mutant = mutate(original, rng);
      std::string diagnostics;
      llvm::raw_string_ostream os(diagnostics);
      FrontendResult result =
          runFrontend(mutant, name, FrontendStage::Import, os, &context);
      os.flush();
      ASSERT_EQ(diagnostics.find("internal error"), std::string::npos)
          << "mutant " << m << " of " << name << ":\n"
          << mutant << "\n---\n"
          << diagnostics;
      if (result.ok) {
        ++accepted;
        continue;
      }
      ++rejected;
      ASSERT_TRUE(result.diags->hasErrors())
          << "mutant " << m << " of " << name
          << " was rejected without a diagnostic:\n"
          << mutant;
      const Diagnostic &first = result.diags->diagnostics().front();
      EXPECT_GT(first.line, 0u) << "diagnostic without a location: "
                                << first.message << "\n" << mutant;
    }
  }
  // Both outcomes must occur, or the mutations are not exercising anything.
  EXPECT_GT(accepted, 50);
  EXPECT_GT(rejected, 1000);
  std::printf("fuzz: %d mutants accepted, %d rejected\n", accepted, rejected);
}

TEST(FrontendFuzzTest, AcceptedMutantsLowerAndGenerateWithoutInternalErrors) {
  // Every mutant the front end accepts must also get through the passes
  // (attn-lower-to-primitives, attn-tile) and the building of its Halide
  // pipeline, or be rejected there with a located diagnostic; never a crash
  // and never an internal error.
  std::mt19937 rng(77);
  int generated = 0;
  for (const char *name : kExamples) {
    std::string original =
        readFile(std::string(ATTNC_EXAMPLES_DIR) + "/" + name);
    for (int m = 0; m < 300; ++m) {
      std::string mutant = mutate(original, rng);
      std::string diagnostics;
      llvm::raw_string_ostream os(diagnostics);
      attnc::driver::Session session({}, os);
      if (!session.loadSource(mutant, name))
        continue;
      if (!session.runTo(attnc::driver::Stage::Scheduled)) {
        EXPECT_FALSE(diagnostics.empty()) << "silent pass failure:\n" << mutant;
        continue;
      }
      for (auto func : session.module().getOps<mlir::func::FuncOp>()) {
        auto pipeline = attnc::codegen::ModelPipeline::build(
            func, session.codegenOptions());
        ++generated;
        if (!pipeline)
          EXPECT_FALSE(diagnostics.empty()) << "silent codegen failure:\n"
                                            << mutant;
      }
      os.flush();
      ASSERT_EQ(diagnostics.find("internal error"), std::string::npos)
          << "mutant " << m << " of " << name << ":\n"
          << mutant << "\n---\n"
          << diagnostics;
    }
  }
  EXPECT_GT(generated, 20);
  std::printf("fuzz: %d accepted mutants generated pipelines\n", generated);
}

TEST(FrontendFuzzTest, ExamplesImportCleanly) {
  mlir::MLIRContext context;
  for (const char *name : kExamples) {
    std::string source = readFile(std::string(ATTNC_EXAMPLES_DIR) + "/" + name);
    std::string diagnostics;
    llvm::raw_string_ostream os(diagnostics);
    FrontendResult result =
        runFrontend(source, name, FrontendStage::Import, os, &context);
    EXPECT_TRUE(result.ok) << name << ":\n" << os.str();
  }
}

} // namespace
