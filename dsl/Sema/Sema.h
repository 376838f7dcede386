//===- Sema.h - semantic analysis of .attn models ------------------*- C++ -*-===//
//
// This file declares semantic analysis: name resolution (with "did you mean"
// suggestions), constant evaluation of dims, shape inference with symbolic
// runtime dims, and the checking of template and primitive calls against
// their keyword tables. It annotates every expression with a SemaInfo and
// returns, per model, the CheckedModel that MLIRGen lowers.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_DSL_SEMA_SEMA_H
#define ATTNC_DSL_SEMA_SEMA_H

#include "dsl/Sema/Templates.h"
#include "dsl/Sema/Types.h"
#include "dsl/Syntax/AST.h"
#include "dsl/Syntax/Diagnostics.h"

#include <optional>
#include <string>
#include <vector>

namespace attnc::dsl {

/// What an expression denotes after analysis.
enum class ValueKind {
  Tensor,      ///< A tensor value (`type`).
  Number,      ///< A compile-time constant (`number`).
  Tuple,       ///< Several tensors (split results, `tuple`).
  ScoreScalar, ///< A per-(i, j) scalar inside an attention score.
};

/// Semantic annotation of one expression node.
struct SemaInfo {
  ValueKind kind = ValueKind::Tensor;
  TensorType type;               ///< Tensor.
  std::vector<TensorType> tuple; ///< Tuple.
  double number = 0;             ///< Number.
  bool isInteger = false;        ///< Number: an exact integer.

  /// Calls: the resolved keyword arguments (defaults filled in).
  Config config;
  /// Template calls: the layer name of each layer (one, or N for repeat).
  std::vector<std::string> layerNames;
  /// Score names (`qk`, `i`, `j`, `n`): which one.
  std::string scoreVar;
};

/// A tensor declared by the model (input, param or output).
struct DeclaredTensor {
  std::string name;
  TensorType type;
  llvm::SMLoc loc;
};

/// A runtime dim (`dim n : seq`).
struct RuntimeDim {
  std::string name;
  RuntimeDimKind kind;
};

/// The facts about one model that MLIRGen needs besides the annotated AST.
struct CheckedModel {
  const ModelAST *ast = nullptr;
  std::vector<RuntimeDim> runtimeDims;
  std::vector<DeclaredTensor> inputs;
  std::vector<DeclaredTensor> params;
  std::vector<DeclaredTensor> outputs; ///< Declaration order; types inferred.
};

/// Checks every model of `file`, annotating its expressions in place.
/// Returns nullopt (after reporting every error) when the file is invalid.
std::optional<std::vector<CheckedModel>> checkFile(FileAST &file,
                                                   DiagnosticEngine &diags);

} // namespace attnc::dsl

#endif // ATTNC_DSL_SEMA_SEMA_H
