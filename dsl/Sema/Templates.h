//===- Templates.h - keyword signatures of templates and primitives -*- C++ -*-===//
//
// This file declares the tables that describe every callable of the .attn
// language: the layer templates (gau, flash, mhsa, linear_attention,
// local_attention, glu_ffn) with the paper's defaults, and the keyword
// arguments of the primitives. Semantic analysis checks calls against them;
// docs/dsl.md documents the same tables.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DSL_SEMA_TEMPLATES_H
#define ATTNC_DSL_SEMA_TEMPLATES_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attnc::dsl {

/// What a keyword argument accepts.
enum class KeywordType {
  Size,  ///< A positive constant integer expression (dims allowed).
  Bool,  ///< true or false.
  Float, ///< A constant number.
  Enum,  ///< One of `choices`, written as a bare name.
  Mask,  ///< none | causal | window(w) | chunk(C).
  Score, ///< A scalar expression of qk, i, j, n (attention only).
};

/// One keyword argument and its default.
struct KeywordSpec {
  std::string name;
  KeywordType type;
  std::vector<std::string> choices; ///< Enum values.
  int64_t defaultSize = 0;          ///< Size default ...
  int64_t defaultTimesModelDim = 0; ///< ... or this multiple of d when > 0.
  bool defaultBool = false;
  double defaultFloat = 0;
  bool positive = false; ///< A number that must be > 0 (eps, base).
  std::string defaultEnum;
  bool required = false;
  bool hasDefault = true; ///< False: absent means "not given".
};

/// A resolved keyword value (what MLIRGen turns into an attribute).
struct ConfigValue {
  KeywordType type = KeywordType::Size;
  int64_t size = 0;
  bool boolean = false;
  double number = 0;
  std::string enumValue; ///< Enum choice, or mask kind.
  int64_t maskSize = 0;  ///< window/chunk size of a mask.
};

using Config = std::map<std::string, ConfigValue>;

/// A layer template: `name(x, keywords...)`, one input `[..., n, d]`.
struct TemplateSpec {
  std::string name;
  std::string summary;
  std::vector<KeywordSpec> keywords;
};

/// All layer templates, in documentation order.
const std::vector<TemplateSpec> &layerTemplates();
/// The template called `name`, or null.
const TemplateSpec *findTemplate(llvm::StringRef name);

/// Keyword signatures of primitives that take keywords; empty for the rest.
const std::vector<KeywordSpec> &primitiveKeywords(llvm::StringRef name);

/// Every name the language knows as a callable (templates and primitives),
/// used for "did you mean" suggestions.
const std::vector<std::string> &knownCallables();

/// True for primitives allowed inside an attention `score` expression only.
bool isScoreOnlyFunction(llvm::StringRef name);
/// True for elementwise unary functions (silu, relu, exp, ...).
bool isUnaryFunction(llvm::StringRef name);

/// Weight parts of a template, as documented (`norm.weight`, `uvz.weight`,
/// ...) with their shapes for model width `d` and a resolved config.
struct WeightPart {
  std::string part;
  std::vector<int64_t> shape;
};
std::vector<WeightPart> templateWeights(llvm::StringRef name, int64_t d,
                                        const Config &config);

} // namespace attnc::dsl

#endif // ATTNC_DSL_SEMA_TEMPLATES_H
