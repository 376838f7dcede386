//===- GeneratorImpl.h - the model builder behind generateModel ---*- C++ -*-===//
//
// This file declares ModelBuilder, the state of one generated model: the
// random source, the declarations and statements written so far, and the
// pool of tensor values a new statement may use. Every value in the pool has
// the model's leading dims ([b, n] or [n]) and a constant last dim, so any
// two values of the same width combine elementwise and any value can feed a
// projection, a norm, RoPE, attention or a layer template. The statement
// kinds are split over ModelGenerator.cpp (elementwise, norms, split, rows,
// products) and GeneratorAttention.cpp (attention, scores, templates).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TESTS_FUZZ_GENERATORIMPL_H
#define ATTNC_TESTS_FUZZ_GENERATORIMPL_H

#include "tests/fuzz/ModelGenerator.h"

#include <random>

namespace attnc::fuzz::detail {

/// A tensor value [lead..., width] bound to a name.
struct Value {
  std::string name;
  int64_t width;
};

/// Builds one model; see GeneratorImpl.h's file comment.
class ModelBuilder {
public:
  ModelBuilder(uint64_t seed, const GeneratorOptions &options);

  /// Writes the whole model.
  GeneratedModel build();

  //===--- randomness (portable: no std:: distributions) ------------------===//
  /// Uniform in [lo, hi].
  int64_t uniform(int64_t lo, int64_t hi);
  /// True with probability `p`.
  bool chance(double p);
  template <typename T> const T &pick(const std::vector<T> &items) {
    return items[uniform(0, int64_t(items.size()) - 1)];
  }
  /// A small random float literal from a fixed list.
  std::string pickNumber(const std::vector<const char *> &literals);

  //===--- text ----------------------------------------------------------===//
  /// A name not used yet, `prefix` followed by a counter.
  std::string fresh(const std::string &prefix);
  /// Declares `param NAME : f32[shape]` and returns NAME, a fresh name
  /// from `prefix` followed by `suffix`. randomWeights draws a param whose
  /// name ends in "gamma" near 1, in "bias"/"beta"/"rel_pos" near 0.
  std::string param(const std::string &prefix,
                    const std::vector<std::string> &shape,
                    const std::string &suffix = "");
  /// A constant dim written as a number or through `d` (d, 2 * d, d / 2).
  std::string widthExpr(int64_t width);
  /// `f32[lead..., width]`.
  std::string typeOf(int64_t width) const;
  /// Binds `expr` to a new name and adds it to the pool.
  Value bind(const std::string &prefix, const std::string &expr, int64_t width);
  void tag(const std::string &feature) { features.insert(feature); }
  void note(const std::string &what) { summary.push_back(what); }

  //===--- operands ------------------------------------------------------===//
  /// A pool value, recent ones more likely.
  const Value &pickValue();
  /// A pool value of `width` other than `avoid`, or a projection of one to
  /// `width`.
  std::string valueOfWidth(int64_t width, const std::string &avoid = "");
  /// `a @ W [+ W_bias]` with fresh params, from `a`'s width to `width`.
  std::string projection(const Value &a, int64_t width, bool bias);
  /// One of the usual feature widths.
  int64_t pickWidth();

  //===--- statements: ModelGenerator.cpp --------------------------------===//
  void genLinear();
  void genBinary();
  void genUnary();
  void genNorm();
  void genSplit();
  void genRows();
  void genStateProduct();
  void genRope();

  //===--- statements: GeneratorAttention.cpp ----------------------------===//
  void genAttention(bool cross);
  void genLinearAttention();
  void genTemplate();
  /// The text of one template call (no repeat, no `as`) on `input`.
  std::string templateCall(const std::string &kind, const std::string &input,
                           int64_t width);
  /// A score expression for attention with `mask` (block size `block`, 0 if
  /// none), `normalized` (softmax) and `dk` features per head.
  std::string score(const std::string &mask, int64_t block, bool normalized,
                    int64_t dk, bool selfAttention);
  /// A bias term of a score: rel_pos_bias or t5_bias of a fresh param.
  std::string scoreBias(const std::string &mask, bool selfAttention);

  //===--- state ---------------------------------------------------------===//
  std::mt19937_64 rng;
  GeneratorOptions options;
  uint64_t seed;

  int64_t d = 32;              ///< the model dim `d`
  std::string seqName = "n";   ///< seq dim (runtime or constant)
  bool seqRuntime = true;
  std::string batchName;       ///< empty: no batch axis
  bool batchRuntime = false;
  int64_t batchConst = 0;
  std::string memName;         ///< cross-attention memory input (lazy)
  int64_t memLength = 0, memWidth = 0;

  std::vector<std::string> decls;    ///< dims, inputs, params, declared outputs
  std::vector<std::string> body;     ///< statements and output assignments
  std::vector<Value> pool;
  std::set<std::string> features;
  std::vector<std::string> summary;
  std::vector<int64_t> blockSizes;   ///< chunks and windows, to choose n
  /// Results of template calls: each must reach an output, because the
  /// reference evaluates dead layers too and their weights would be missing.
  std::vector<Value> templateValues;
  std::map<std::string, int> counters;
  int layerNames = 0;
};

} // namespace attnc::fuzz::detail

#endif // ATTNC_TESTS_FUZZ_GENERATORIMPL_H
