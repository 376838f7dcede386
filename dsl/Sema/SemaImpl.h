//===- SemaImpl.h - the model checker behind checkFile ------------*- C++ -*-===//
//
// This file declares ModelChecker, the private class that implements
// semantic analysis of one model. Sema.cpp holds declarations and bindings,
// SemaExpr.cpp expressions and constants, SemaCalls.cpp calls.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DSL_SEMA_SEMAIMPL_H
#define ATTNC_DSL_SEMA_SEMAIMPL_H

#include "dsl/Sema/Sema.h"

#include <map>
#include <optional>
#include <set>

namespace attnc::dsl {

class ModelChecker {
public:
  ModelChecker(ModelAST &model, DiagnosticEngine &diags)
      : model(model), diags(diags) {}

  /// Checks the whole model; nullopt after reporting errors.
  std::optional<CheckedModel> check();

private:
  enum class SymKind { ConstDim, RuntimeDim, Tensor, Output };
  struct Symbol {
    SymKind kind = SymKind::Tensor;
    llvm::SMLoc loc;
    int64_t value = 0;       ///< ConstDim.
    TensorType type;         ///< Tensor; Output once assigned.
    std::optional<TensorType> declaredType; ///< Output with a ': type'.
    size_t outputIndex = 0;  ///< Output.
    llvm::SMLoc assignLoc;   ///< Output.
    bool poisoned = false;   ///< Definition had errors: stay quiet on use.
    RuntimeDimKind runtimeKind = RuntimeDimKind::Seq; ///< RuntimeDim.
  };

  // Sema.cpp: declarations, bindings, symbols.
  bool define(const Ident &id, Symbol symbol);
  const Symbol *lookup(const Expr &nameExpr);
  /// A declared type; i32 (token ids) only when `allowTokenIds`.
  std::optional<TensorType> checkType(const TypeSpec &spec, bool allowRuntime,
                                      llvm::StringRef what,
                                      bool allowTokenIds = false);
  void checkDim(const DimDecl &dim);
  void checkTensorDecl(const TensorDecl &decl);
  void checkBinding(Binding &bind);
  void assignOutput(const Ident &name, Expr &value);

  // SemaExpr.cpp: expressions and constants.
  SemaInfo *checkExpr(Expr &expr, bool scoreContext);
  SemaInfo *checkTensorExpr(Expr &expr);
  SemaInfo *checkBinary(Expr &expr, bool scoreContext);
  SemaInfo *annotate(Expr &expr, SemaInfo info);
  /// Evaluates a constant integer expression of numbers and constant dims.
  std::optional<int64_t> evalInteger(const Expr &expr, llvm::StringRef what);
  /// As evalInteger, and the value must be at least 1.
  std::optional<int64_t> evalSize(const Expr &expr, llvm::StringRef what);
  /// Evaluates a constant number expression.
  std::optional<double> evalNumber(const Expr &expr, llvm::StringRef what);

  // SemaCalls.cpp: calls.
  SemaInfo *checkCall(Expr &call, bool scoreContext);
  SemaInfo *checkTemplateCall(Expr &call, int64_t repeat, Expr *repeatExpr);
  /// embedding(ids, table): ids an i32 input [...], table f32 [V, d].
  SemaInfo *checkEmbedding(Expr &call);
  /// sinusoidal(x): x [..., n, d] with a constant, even d.
  SemaInfo *checkSinusoidal(Expr &call);
  /// The rules of gau's and flash's options (rope, rope_dims, the T5
  /// bias's buckets, norm_clamp, lin_scale); false after a diagnostic.
  bool checkGatedOptions(const Expr &call, const Config &config);
  SemaInfo *checkRepeat(Expr &expr);
  SemaInfo *checkAttention(Expr &call);
  SemaInfo *checkLinearAttention(Expr &call);
  SemaInfo *checkScoreBias(Expr &call);
  SemaInfo *checkNorm(Expr &call);
  SemaInfo *checkSplit(Expr &call);
  SemaInfo *checkRope(Expr &call);
  bool resolveKeywords(Expr &call, const std::vector<KeywordSpec> &specs,
                       int64_t modelDim, Config &config);
  bool resolveKeyword(const KeywordArg &kw, const KeywordSpec &spec,
                      llvm::StringRef callee, ConfigValue &value);
  bool expectArgs(const Expr &call, size_t minArgs, size_t maxArgs,
                  llvm::StringRef signature);
  /// Checks positional argument `index` as a tensor.
  SemaInfo *tensorArg(Expr &call, size_t index);
  bool checkNoKeywords(const Expr &call);
  std::string allocateLayerName(const Expr &call);

  ModelAST &model;
  DiagnosticEngine &diags;
  CheckedModel result;
  std::map<std::string, Symbol> symbols;
  std::vector<bool> outputAssigned;
  std::set<std::string> boundRuntimeDims;
  /// True while checking embedding's ids: the only place an i32 tensor (an
  /// input of token ids) may be read.
  bool readingTokenIds = false;
  std::map<std::string, llvm::SMLoc> layerNames;
  std::map<std::string, int> templateCounters;
  bool scoreMaskCausal = false; ///< Mask of the attention being checked.
};

} // namespace attnc::dsl

#endif // ATTNC_DSL_SEMA_SEMAIMPL_H
