//===- Differential.h - generated models vs the fp64 reference ----*- C++ -*-===//
//
// This file declares the differential checker of generated models: compile
// one model with a schedule variant (Default, Naive, or the CUDA schedules
// run on the host), run it through the JIT at each binding of its runtime
// dims with deterministic random weights and inputs, evaluate the same
// layer-level IR with the independent fp64 reference, and classify what
// happened. Nothing here uses GoogleTest assertions, so the same code backs
// the unit test and the attnc-modelgen campaign. By default the checks run
// in forked child processes (one per model), so that a crash, an abort or a
// hang of the compiler is an outcome (Crash, Timeout), not the end of the
// campaign.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TESTS_FUZZ_DIFFERENTIAL_H
#define ATTNC_TESTS_FUZZ_DIFFERENTIAL_H

#include "tests/fuzz/ModelGenerator.h"

#include <functional>
#include <string>
#include <vector>

namespace attnc::fuzz {

/// The schedules a model is checked with (as in tests/e2e), and Streamed:
/// the default schedules compiled for decoding (codegen/Decode.h) and run
/// over blocks of the model's chunk, carries between them. A model that
/// does not stream (not causal, attention over the whole sequence, no
/// sequence dim) is Ok with the message "not streamed: ..." for Streamed.
enum class Variant { Default, Naive, CudaOnHost, Streamed };

/// What one check found.
enum class Outcome {
  Ok,               ///< compiled, ran, within tolerance at every binding
  FrontendRejected, ///< the front end rejected the text: a generator bug
  InternalError,    ///< a diagnostic says "internal error", or the JIT run failed
  CompileError,     ///< another diagnostic after the front end (passes, codegen)
  Mismatch,         ///< relative error above the tolerance, or NaN
  ReferenceError,   ///< the fp64 reference threw (an op it does not know)
  Crash,            ///< the child process died on a signal or exited early
  Timeout,          ///< the child process ran past the time limit
};

/// "default", "naive", "cuda-on-host", "streamed".
const char *variantName(Variant variant);
const char *outcomeName(Outcome outcome);   ///< "ok", "internal-error", ...
/// Parses a variant name as variantName prints it; false if unknown.
bool parseVariant(const std::string &name, Variant &variant);
/// Every outcome, in enum order (for summaries).
const std::vector<Outcome> &allOutcomes();
/// Every variant, in enum order.
const std::vector<Variant> &allVariants();

/// How to check.
struct CheckOptions {
  std::vector<Variant> variants = allVariants();
  /// Normwise relative error allowed: max |y - ref| / max |ref| over each
  /// output. On generated models fp32 kernels (blocked, vectorised,
  /// reassociated sums) stay within ~1e-6 of fp64 (the worst seen: 6e-7);
  /// the e2e tests use 1e-4 on fixed models. 1e-3 leaves room for chains of
  /// norms, softmax and squared scores on unlucky inputs, while a wrong
  /// mask, offset, bias or missing term changes outputs by 1e-2 or more.
  double tolerance = 1e-3;
  uint64_t weightSeed = 11;
  uint64_t inputSeed = 5;
  /// Run each check in a forked child (crashes and hangs become outcomes).
  bool isolate = true;
  /// CPU-time limit of one isolated check (a check that neither computes nor
  /// answers is killed after ten times this of wall-clock time).
  double timeoutSeconds = 300;
};

/// The outcome of one model with one variant.
struct VariantResult {
  Variant variant = Variant::Default;
  Outcome outcome = Outcome::Ok;
  std::string message; ///< diagnostics, error text, or the error found
  double error = 0;    ///< worst relative error over the bindings run
  DimBinding dims;     ///< the binding that failed (Mismatch, JIT errors)
  double seconds = 0;  ///< wall time of the check
};

/// Checks `source` with `variant` at every binding in `dims` (an empty list
/// runs nothing after compiling). Runs in a child process when
/// options.isolate.
VariantResult checkVariant(const std::string &source,
                           const std::vector<DimBinding> &dims, Variant variant,
                           const CheckOptions &options);

/// Checks a generated model with each variant of `options`, in order. When
/// options.isolate, one child process runs them one after the other (the
/// JIT's start-up, ~0.7 s, is paid once); if a check kills it, a new child
/// runs the remaining variants.
std::vector<VariantResult> checkModel(const GeneratedModel &model,
                                      const CheckOptions &options);

/// checkModel for each model, up to `parallel` models at once (with
/// parallel > 1, options.isolate must be set); results in model order.
std::vector<std::vector<VariantResult>>
checkModels(const std::vector<GeneratedModel> &models, const CheckOptions &options,
            int parallel);

/// The isolation under checkModel: runs check(v) for each of `variants` in
/// order, in one forked child that streams each result back as soon as it
/// has it. A check that kills the child is a Crash; one that uses more than
/// `timeoutSeconds` of CPU time, or ten times that of wall-clock time
/// without a result, is killed and is a Timeout (waiting for a core on a
/// busy machine is not a hang). A new child runs the remaining variants.
std::vector<VariantResult>
runIsolated(std::vector<Variant> variants,
            const std::function<VariantResult(Variant)> &check, double timeoutSeconds);

/// True when `a` and `b` are the same failure: the same outcome and, for
/// compile and internal errors, the same message apart from numbers and
/// locations (what the reducer must keep).
bool sameFailure(const VariantResult &a, const VariantResult &b);

/// The key sameFailure compares: the outcome's name, and for compile,
/// internal and reference errors the first line of the message without
/// numbers and locations.
std::string failureKey(const VariantResult &result);

} // namespace attnc::fuzz

#endif // ATTNC_TESTS_FUZZ_DIFFERENTIAL_H
