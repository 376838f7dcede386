//===- Reducer.h - shrink a failing generated model --------------*- C++ -*-===//
//
// This file declares the test-case reducer of the differential tests and the
// writing of reproducers. The reducer works on the generated text, one
// statement per line: it deletes lines, replaces the value of a binding by
// one of the names it uses, deletes keyword arguments, `repeat N` and
// `as NAME`, drops runtime-dim bindings and shrinks the sequence length,
// keeping each change only while the front end accepts the text and the
// check still fails the same way (sameFailure). It is greedy and bounded in
// checks and time: a smaller reproducer, not a minimal one.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TESTS_FUZZ_REDUCER_H
#define ATTNC_TESTS_FUZZ_REDUCER_H

#include "tests/fuzz/Differential.h"

namespace attnc::fuzz {

/// Limits of one reduction.
struct ReduceOptions {
  int maxChecks = 120;         ///< compile-and-run checks at most
  double maxSeconds = 90;      ///< wall time at most
};

/// A (reduced) failing case.
struct Reproducer {
  std::string source;
  std::vector<DimBinding> dims;
  VariantResult failure; ///< the failure of the reduced case
  int checks = 0;        ///< checks the reduction ran
  int accepted = 0;      ///< changes it kept
};

/// Reduces `source` (failing as `failure` at `dims` with failure.variant).
Reproducer reduceFailure(const std::string &source,
                         const std::vector<DimBinding> &dims,
                         const VariantResult &failure, const CheckOptions &check,
                         const ReduceOptions &options = {});

/// True when the front end (parse and check) accepts `source`.
bool frontendAccepts(const std::string &source);

/// Writes DIR/seed<S>-<variant>-<outcome>.attn (reduced), ...-original.attn
/// and ...txt (seed, dims, variant, outcome, message, description); creates
/// DIR if needed. Returns the path of the .attn file, or "" on failure.
std::string writeReproducer(const std::string &dir, const GeneratedModel &model,
                            const VariantResult &original,
                            const Reproducer &reduced);

} // namespace attnc::fuzz

#endif // ATTNC_TESTS_FUZZ_REDUCER_H
