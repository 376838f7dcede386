//===- SemaCalls.cpp - semantic analysis of .attn calls -------------------===//
//
// This file implements the checking of calls: layer templates (keyword
// arguments against Templates.cpp, layer names, repeat), the primitives
// (split, norms, scale_offset, rope, attention, linear_attention) and the
// score-only bias functions.
//
//===----------------------------------------------------------------------===//
#include "dsl/Sema/SemaImpl.h"

#include "llvm/ADT/StringExtras.h"

#include <sstream>

namespace attnc::dsl {

static std::string joinNames(const std::vector<KeywordSpec> &specs) {
  std::string out;
  for (const KeywordSpec &spec : specs)
    out += (out.empty() ? "" : ", ") + spec.name;
  return out;
}

/// Masks with a size: `window(w)`, `band(w)`, `chunk(C)`, `causal_chunk(C)`.
/// Where the value of keyword `key` of `call` is, or the call when the
/// keyword is not given (its default is in effect).
static llvm::SMLoc keywordLoc(const Expr &call, llvm::StringRef key) {
  const KeywordArg *kw = call.findKeyword(key);
  return kw ? kw->value->loc : call.loc;
}

/// The T5 bias's exact buckets (the rest are logarithmic up to
/// max_distance): half of the buckets of each direction.
static int64_t t5ExactBuckets(bool causal, int64_t buckets) {
  return (causal ? buckets : buckets / 2) / 2;
}

static bool isMaskFunction(llvm::StringRef name) {
  return name == "window" || name == "band" || name == "chunk" ||
         name == "causal_chunk";
}

bool ModelChecker::expectArgs(const Expr &call, size_t minArgs, size_t maxArgs,
                              llvm::StringRef signature) {
  size_t n = call.operands.size();
  if (n >= minArgs && n <= maxArgs)
    return true;
  diags.error(call.loc, "'" + call.name + "' expects " + signature + ", got " +
                            llvm::Twine(n) + " positional argument" +
                            (n == 1 ? "" : "s"),
              {call.range});
  return false;
}

bool ModelChecker::checkNoKeywords(const Expr &call) {
  if (call.keywords.empty())
    return true;
  const KeywordArg &kw = call.keywords.front();
  diags.error(kw.name.loc, "'" + call.name + "' takes no keyword arguments, "
                           "but '" + kw.name.name + "' was given");
  return false;
}

SemaInfo *ModelChecker::tensorArg(Expr &call, size_t index) {
  return checkTensorExpr(*call.operands[index]);
}

bool ModelChecker::resolveKeyword(const KeywordArg &kw, const KeywordSpec &spec,
                                  llvm::StringRef callee, ConfigValue &value) {
  const Expr &v = *kw.value;
  std::string what = "'" + spec.name + "' of '" + callee.str() + "'";
  value.type = spec.type;
  switch (spec.type) {
  case KeywordType::Size: {
    std::optional<int64_t> size = evalSize(v, what);
    if (!size)
      return false;
    value.size = *size;
    return true;
  }
  case KeywordType::Float: {
    std::optional<double> number = evalNumber(v, what);
    if (!number)
      return false;
    if (spec.positive && !(*number > 0)) {
      std::ostringstream text;
      text << *number;
      diags.error(v.loc, what + " must be positive, but is " + text.str(),
                  {v.range});
      return false;
    }
    value.number = *number;
    return true;
  }
  case KeywordType::Bool:
    if (v.kind != ExprKind::Bool) {
      diags.error(v.loc, "expected true or false for " + what + ", found '" +
                             exprText(v) + "'",
                  {v.range});
      return false;
    }
    value.boolean = v.boolean;
    return true;
  case KeywordType::Enum: {
    std::string name = v.kind == ExprKind::Name   ? v.name
                       : v.kind == ExprKind::None ? "none"
                                                  : "";
    if (llvm::is_contained(spec.choices, name)) {
      value.enumValue = name;
      return true;
    }
    diags.error(v.loc, "invalid value '" + exprText(v) + "' for " + what +
                           "; expected one of " +
                           llvm::join(spec.choices, ", "),
                {v.range});
    return false;
  }
  case KeywordType::Mask:
    if (v.kind == ExprKind::None ||
        (v.kind == ExprKind::Name && v.name == "causal")) {
      value.enumValue = v.kind == ExprKind::None ? "none" : "causal";
      return true;
    }
    if (v.kind == ExprKind::Call && isMaskFunction(v.name) &&
        v.operands.size() == 1 && v.keywords.empty() && !v.layerName) {
      std::optional<int64_t> size =
          evalSize(*v.operands[0], "the size of mask " + v.name);
      if (!size)
        return false;
      value.enumValue = v.name;
      value.maskSize = *size;
      return true;
    }
    diags.error(v.loc, "invalid mask '" + exprText(v) +
                           "'; expected none, causal, window(w), band(w), "
                           "chunk(C) or causal_chunk(C)",
                {v.range});
    return false;
  case KeywordType::Score:
    return true; // checked by checkAttention in score context
  }
  return false;
}

bool ModelChecker::resolveKeywords(Expr &call,
                                   const std::vector<KeywordSpec> &specs,
                                   int64_t modelDim, Config &config) {
  bool ok = true;
  for (const KeywordArg &kw : call.keywords) {
    const KeywordSpec *spec = nullptr;
    for (const KeywordSpec &candidate : specs)
      if (candidate.name == kw.name.name)
        spec = &candidate;
    if (!spec) {
      std::vector<std::string> names;
      for (const KeywordSpec &candidate : specs)
        names.push_back(candidate.name);
      std::string hint = closestMatch(kw.name.name, names);
      diags.error(kw.name.loc,
                  "unknown keyword argument '" + kw.name.name + "' for '" +
                      call.name + "'" +
                      (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
                      (specs.empty() ? " (it takes none)"
                                     : " (allowed: " + joinNames(specs) + ")"));
      ok = false;
      continue;
    }
    ConfigValue value;
    if (!resolveKeyword(kw, *spec, call.name, value))
      ok = false;
    else
      config[spec->name] = value;
  }
  for (const KeywordSpec &spec : specs) {
    if (config.count(spec.name) || !spec.hasDefault ||
        spec.type == KeywordType::Score)
      continue;
    ConfigValue value;
    value.type = spec.type;
    value.size = spec.defaultTimesModelDim > 0
                     ? spec.defaultTimesModelDim * modelDim
                     : spec.defaultSize;
    value.boolean = spec.defaultBool;
    value.number = spec.defaultFloat;
    value.enumValue = spec.defaultEnum;
    config[spec.name] = value;
  }
  return ok;
}

std::string ModelChecker::allocateLayerName(const Expr &call) {
  if (call.layerName)
    return call.layerName->name;
  return call.name + "_" + std::to_string(templateCounters[call.name]++);
}

SemaInfo *ModelChecker::checkEmbedding(Expr &call) {
  if (!expectArgs(call, 2, 2, "2 arguments (ids, table)") ||
      !checkNoKeywords(call))
    return nullptr;
  Expr &idsExpr = *call.operands[0];
  if (idsExpr.kind != ExprKind::Name) {
    diags.error(idsExpr.loc, "the first argument of embedding must name an "
                             "input of token ids (i32), not an expression",
                {idsExpr.range});
    return nullptr;
  }
  readingTokenIds = true;
  SemaInfo *ids = tensorArg(call, 0);
  readingTokenIds = false;
  SemaInfo *table = tensorArg(call, 1);
  if (!ids || !table)
    return nullptr;
  if (ids->type.dtype != "i32") {
    diags.error(idsExpr.loc, "the first argument of embedding must be token "
                             "ids (an i32 input), but '" + idsExpr.name +
                             "' is " + ids->type.str(),
                {idsExpr.range});
    return nullptr;
  }
  const TensorType &t = table->type;
  bool staticTable = t.rank() == 2 && t.shape[0].isStatic() &&
                     t.shape[1].isStatic();
  if (!staticTable || t.dtype != "f32") {
    diags.error(call.operands[1]->loc,
                "the table of embedding must be f32[vocab, d] with constant "
                "sizes, but '" + exprText(*call.operands[1]) + "' is " +
                    t.str(),
                {call.operands[1]->range});
    return nullptr;
  }
  SemaInfo info;
  info.type = ids->type;
  info.type.dtype = t.dtype;
  info.type.shape.push_back(t.shape[1]);
  return annotate(call, info);
}

bool ModelChecker::checkGatedOptions(const Expr &call, const Config &config) {
  auto fail = [&](llvm::StringRef key, const llvm::Twine &message) {
    diags.error(keywordLoc(call, key), message);
    return false;
  };
  int64_t s = config.at("s").size;
  bool rope = config.at("rope").boolean;
  if (call.findKeyword("rope_dims")) {
    int64_t r = config.at("rope_dims").size;
    if (!rope)
      return fail("rope_dims", "rope_dims needs rope = true");
    if (r % 2 != 0 || r > s)
      return fail("rope_dims", "rope_dims = " + llvm::Twine(r) +
                                   " must be even and at most s = " +
                                   llvm::Twine(s) +
                                   " (RoPE rotates pairs of features)");
  } else if (rope && s % 2 != 0) {
    return fail("s", "s = " + llvm::Twine(s) +
                         " must be even when rope = true (half-split RoPE "
                         "pairs dim i with i + s/2; or give rope_dims)");
  }
  const std::string &relPos = config.at("rel_pos").enumValue;
  for (const char *key : {"num_buckets", "max_distance"})
    if (call.findKeyword(key) && relPos != "t5")
      return fail(key, llvm::Twine(key) +
                           " needs rel_pos = t5 (it sizes the T5 bias)");
  int64_t buckets = config.at("num_buckets").size;
  bool causal = config.at("causal").boolean;
  if (relPos == "t5" && (buckets % 2 != 0 || (!causal && buckets < 4)))
    return fail("num_buckets", "num_buckets = " + llvm::Twine(buckets) +
                                   " must be even, and at least 4 when not "
                                   "causal (the non-causal T5 bias gives "
                                   "half of them to each direction)");
  // As t5_bias's: the logarithmic buckets start past the exact ones.
  int64_t exact = t5ExactBuckets(causal, buckets);
  int64_t maxDistance = config.at("max_distance").size;
  if (relPos == "t5" && maxDistance <= exact)
    return fail("max_distance", "max_distance = " +
                                    llvm::Twine(maxDistance) +
                                    " must exceed the " + llvm::Twine(exact) +
                                    " exact buckets of the T5 bias");
  if (config.at("norm_clamp").boolean &&
      config.at("norm").enumValue != "scale_norm")
    return fail("norm_clamp", "norm_clamp needs norm = scale_norm, but norm "
                              "is " + config.at("norm").enumValue);
  if (config.count("lin_scale") &&
      config.at("lin_scale").enumValue == "length" &&
      config.at("causal").boolean)
    return fail("lin_scale",
                "lin_scale = length needs causal = false (a causal chunk "
                "cannot know the sequence's length)");
  return true;
}

SemaInfo *ModelChecker::checkTemplateCall(Expr &call, int64_t repeat,
                                          Expr *repeatExpr) {
  const TemplateSpec *spec = findTemplate(call.name);
  if (!expectArgs(call, 1, 1, "one positional argument (the input x)"))
    return nullptr;
  SemaInfo *input = tensorArg(call, 0);
  if (!input)
    return nullptr;
  const TensorType &type = input->type;
  if (type.rank() < 2 || !type.shape.back().isStatic()) {
    diags.error(call.operands[0]->loc,
                "the input of '" + call.name +
                    "' must have shape [..., n, d] with a constant d, but '" +
                    exprText(*call.operands[0]) + "' is " + type.str(),
                {call.operands[0]->range});
    return nullptr;
  }
  int64_t d = type.shape.back().size;
  SemaInfo info;
  info.type = type;
  if (!resolveKeywords(call, spec->keywords, d, info.config))
    return nullptr;
  const Config &config = info.config;
  if (config.count("heads")) {
    int64_t heads = config.at("heads").size;
    if (d % heads != 0) {
      diags.error(keywordLoc(call, "heads"),
                  "heads = " + llvm::Twine(heads) + " does not divide d = " +
                      llvm::Twine(d) + " in '" + call.name + "'");
      return nullptr;
    }
  }
  if (config.count("rope") && !checkGatedOptions(call, config))
    return nullptr;
  // Layer names: `as NAME` or the documented default `<template>_<k>`;
  // repeat N appends `.0` ... `.N-1`.
  std::string base = allocateLayerName(call);
  llvm::SMLoc nameLoc = call.layerName ? call.layerName->loc : call.loc;
  auto [it, inserted] = layerNames.emplace(base, nameLoc);
  if (!inserted) {
    diags.error(nameLoc, "duplicate layer name '" + base +
                             "'; weights of two layers would share names");
    diags.note(it->second, "first used here");
    return nullptr;
  }
  if (repeatExpr) {
    for (int64_t i = 0; i < repeat; ++i)
      info.layerNames.push_back(base + "." + std::to_string(i));
  } else {
    info.layerNames.push_back(base);
  }
  return annotate(call, info);
}

SemaInfo *ModelChecker::checkRepeat(Expr &expr) {
  std::optional<int64_t> count = evalSize(*expr.operands[0], "the repeat count");
  if (!count)
    return nullptr;
  if (*count > 1024) {
    diags.error(expr.operands[0]->loc, "repeat count " + llvm::Twine(*count) +
                                           " is too large (at most 1024)",
                {expr.operands[0]->range});
    return nullptr;
  }
  Expr &call = *expr.operands[1];
  if (!findTemplate(call.name) ||
      (call.name == "linear_attention" && call.operands.size() != 1)) {
    diags.error(call.loc, "repeat needs a layer template call (gau, flash, "
                          "mhsa, linear_attention, local_attention, glu_ffn), "
                          "found '" + call.name + "'",
                {call.range});
    return nullptr;
  }
  SemaInfo *info = checkTemplateCall(call, *count, &expr);
  if (!info)
    return nullptr;
  return annotate(expr, *info);
}

SemaInfo *ModelChecker::checkSplit(Expr &call) {
  if (!expectArgs(call, 2, 2, "2 arguments (x, [sizes])") ||
      !checkNoKeywords(call))
    return nullptr;
  SemaInfo *x = tensorArg(call, 0);
  if (!x)
    return nullptr;
  Expr &list = *call.operands[1];
  if (list.kind != ExprKind::List || list.operands.empty()) {
    diags.error(list.loc, "expected a list of sizes such as [e, e, s] as the "
                          "second argument of split",
                {list.range});
    return nullptr;
  }
  if (x->type.rank() < 1 || !x->type.shape.back().isStatic()) {
    diags.error(call.operands[0]->loc, "split needs a constant last dim, but '" +
                                           exprText(*call.operands[0]) +
                                           "' is " + x->type.str(),
                {call.operands[0]->range});
    return nullptr;
  }
  SemaInfo info;
  info.kind = ValueKind::Tuple;
  int64_t total = 0;
  std::vector<int64_t> sizes;
  for (const ExprPtr &elem : list.operands) {
    std::optional<int64_t> size = evalSize(*elem, "a split size");
    if (!size)
      return nullptr;
    total += *size;
    TensorType part = x->type;
    part.shape.back() = Dim::constant(*size);
    info.tuple.push_back(part);
  }
  if (total != x->type.shape.back().size) {
    diags.error(list.loc, "split sizes " + exprText(list) + " sum to " +
                              llvm::Twine(total) + " but the last dim of '" +
                              exprText(*call.operands[0]) + "' is " +
                              llvm::Twine(x->type.shape.back().size),
                {list.range});
    return nullptr;
  }
  return annotate(call, info);
}

/// Checks that `vec` is a vector matching the last dim of `x`.
static bool isFeatureVector(const TensorType &vec, const TensorType &x) {
  return vec.rank() == 1 && x.rank() >= 1 && vec.shape[0] == x.shape.back();
}

SemaInfo *ModelChecker::checkNorm(Expr &call) {
  bool scale = call.name == "scale_norm";
  size_t maxArgs = call.name == "layer_norm" ? 3 : 2;
  llvm::StringRef signature = call.name == "layer_norm"
                                  ? "(x [, weight [, bias]])"
                                  : (scale ? "(x, alpha)" : "(x [, weight])");
  if (!expectArgs(call, scale ? 2 : 1, maxArgs, signature))
    return nullptr;
  SemaInfo *x = tensorArg(call, 0);
  if (!x)
    return nullptr;
  if (x->type.rank() < 1 || !x->type.shape.back().isStatic()) {
    diags.error(call.operands[0]->loc, "'" + call.name +
                                           "' needs a constant last dim, but "
                                           "its input is " + x->type.str(),
                {call.operands[0]->range});
    return nullptr;
  }
  for (size_t i = 1; i < call.operands.size(); ++i) {
    SemaInfo *w = tensorArg(call, i);
    if (!w)
      return nullptr;
    bool ok = w->type.dtype == x->type.dtype &&
              (scale ? (w->type.rank() == 1 && w->type.shape[0] == Dim::constant(1))
                     : isFeatureVector(w->type, x->type));
    if (!ok) {
      diags.error(call.operands[i]->loc,
                  "'" + exprText(*call.operands[i]) + "' of '" + call.name +
                      "' must be " +
                      (scale ? x->type.dtype + "[1]"
                             : x->type.dtype + "[" + x->type.shape.back().str() +
                                   "]") +
                      ", but is " + w->type.str(),
                  {call.operands[i]->range});
      return nullptr;
    }
  }
  SemaInfo info;
  info.type = x->type;
  if (!resolveKeywords(call, primitiveKeywords(call.name), 0, info.config))
    return nullptr;
  return annotate(call, info);
}

SemaInfo *ModelChecker::checkRope(Expr &call) {
  if (!expectArgs(call, 1, 1, "one positional argument (x)"))
    return nullptr;
  SemaInfo *x = tensorArg(call, 0);
  if (!x)
    return nullptr;
  if (x->type.rank() < 2 || !x->type.shape.back().isStatic()) {
    diags.error(call.operands[0]->loc,
                "rope needs a tensor [..., n, f] with a constant f, but its "
                "input is " + x->type.str(),
                {call.operands[0]->range});
    return nullptr;
  }
  SemaInfo info;
  info.type = x->type;
  if (!resolveKeywords(call, primitiveKeywords("rope"), 0, info.config))
    return nullptr;
  int64_t f = x->type.shape.back().size;
  int64_t dims = info.config.count("dims") ? info.config["dims"].size : f;
  info.config["dims"].size = dims;
  if (dims % 2 != 0 || dims > f) {
    diags.error(keywordLoc(call, "dims"),
                "rope dims = " + llvm::Twine(dims) +
                    " must be even and at most the feature width " +
                    llvm::Twine(f));
    return nullptr;
  }
  return annotate(call, info);
}

SemaInfo *ModelChecker::checkSinusoidal(Expr &call) {
  if (!expectArgs(call, 1, 1, "one positional argument (x)"))
    return nullptr;
  SemaInfo *x = tensorArg(call, 0);
  if (!x)
    return nullptr;
  const TensorType &t = x->type;
  if (t.rank() < 2 || !t.shape.back().isStatic() ||
      t.shape.back().size % 2 != 0) {
    diags.error(call.operands[0]->loc,
                "sinusoidal needs a tensor [..., n, d] with a constant, even "
                "d, but its input is " + t.str(),
                {call.operands[0]->range});
    return nullptr;
  }
  SemaInfo info;
  info.type = t;
  if (!resolveKeywords(call, primitiveKeywords("sinusoidal"), 0,
                       info.config))
    return nullptr;
  return annotate(call, info);
}

SemaInfo *ModelChecker::checkScoreBias(Expr &call) {
  bool t5 = call.name == "t5_bias";
  if (!expectArgs(call, 1, 1, t5 ? "one positional argument (the bucket "
                                   "embedding param)"
                                 : "one positional argument (the learned "
                                   "bias param)"))
    return nullptr;
  Expr &table = *call.operands[0];
  if (table.kind != ExprKind::Name) {
    diags.error(table.loc, "the first argument of '" + call.name +
                               "' must be the name of a param", {table.range});
    return nullptr;
  }
  SemaInfo *w = checkExpr(table, /*scoreContext=*/false);
  if (!w || w->kind != ValueKind::Tensor) {
    if (w)
      diags.error(table.loc, "the first argument of '" + call.name +
                                 "' must be the name of a param",
                  {table.range});
    return nullptr;
  }
  if (w->type.rank() != 1 || !w->type.shape[0].isStatic()) {
    diags.error(table.loc, "'" + table.name + "' must be a vector with a "
                           "constant length, but is " + w->type.str(),
                {table.range});
    return nullptr;
  }
  int64_t length = w->type.shape[0].size;
  SemaInfo info;
  info.kind = ValueKind::ScoreScalar;
  if (!resolveKeywords(call, primitiveKeywords(call.name), 0, info.config))
    return nullptr;
  if (t5) {
    if (!info.config.count("causal")) {
      info.config["causal"].type = KeywordType::Bool;
      info.config["causal"].boolean = scoreMaskCausal;
    }
    bool causal = info.config["causal"].boolean;
    // Non-causal T5 buckets split into two halves (past and future keys).
    if (causal ? length < 2 : (length < 4 || length % 2 != 0)) {
      diags.error(table.loc, llvm::Twine("t5_bias needs ") +
                                 (causal ? "at least 2 buckets"
                                         : "an even number of at least 4 "
                                           "buckets when not causal") +
                                 ", but '" + table.name + "' has " +
                                 llvm::Twine(length),
                  {table.range});
      return nullptr;
    }
    int64_t exact = t5ExactBuckets(causal, length);
    int64_t maxDistance = info.config["max_distance"].size;
    if (maxDistance <= exact) {
      diags.error(keywordLoc(call, "max_distance"),
                  "t5_bias max_distance = " + llvm::Twine(maxDistance) +
                      " must exceed the " + llvm::Twine(exact) +
                      " exact buckets of '" + table.name + "'");
      return nullptr;
    }
    info.config["num_buckets"].size = length;
    return annotate(call, info);
  }
  int64_t maxLen = info.config.count("max_len") ? info.config["max_len"].size
                                                : (length + 1) / 2;
  if (length != 2 * maxLen - 1) {
    diags.error(table.loc, "the learned Toeplitz table '" + table.name +
                               "' has " + llvm::Twine(length) +
                               " entries but max_len = " + llvm::Twine(maxLen) +
                               " needs 2*max_len-1 = " +
                               llvm::Twine(2 * maxLen - 1),
                {table.range});
    return nullptr;
  }
  info.config["max_len"].size = maxLen;
  return annotate(call, info);
}

/// Shared shape rules of attention and linear attention:
/// q [..., n, a], k [..., m, a], v [..., m, b].
static bool checkQKV(DiagnosticEngine &diags, const Expr &call,
                     const TensorType &q, const TensorType &k,
                     const TensorType &v) {
  auto fail = [&](const llvm::Twine &message) {
    diags.error(call.loc, message, {call.range});
    return false;
  };
  if (q.rank() < 2 || k.rank() != q.rank() || v.rank() != q.rank())
    return fail("'" + call.name + "' needs q, k, v of equal rank >= 2, got " +
                q.str() + ", " + k.str() + ", " + v.str());
  if (!std::equal(q.shape.begin(), q.shape.end() - 2, k.shape.begin()) ||
      !std::equal(q.shape.begin(), q.shape.end() - 2, v.shape.begin()))
    return fail("leading (batch) dims of q, k, v differ: " + q.str() + ", " +
                k.str() + ", " + v.str());
  if (q.shape.back() != k.shape.back())
    return fail("query and key widths differ in '" + call.name + "': q " +
                q.str() + " and k " + k.str());
  if (k.shape[k.rank() - 2] != v.shape[v.rank() - 2])
    return fail("keys and values have different lengths in '" + call.name +
                "': k " + k.str() + " and v " + v.str());
  if (q.dtype != k.dtype || q.dtype != v.dtype)
    return fail("element types of q, k, v differ");
  return true;
}

SemaInfo *ModelChecker::checkAttention(Expr &call) {
  if (!expectArgs(call, 3, 3, "3 positional arguments (q, k, v)"))
    return nullptr;
  SemaInfo *q = tensorArg(call, 0);
  SemaInfo *k = tensorArg(call, 1);
  SemaInfo *v = tensorArg(call, 2);
  if (!q || !k || !v || !checkQKV(diags, call, q->type, k->type, v->type))
    return nullptr;
  SemaInfo info;
  if (!resolveKeywords(call, primitiveKeywords("attention"), 0, info.config))
    return nullptr;
  int64_t heads = info.config["heads"].size;
  for (const TensorType *t : {&q->type, &v->type}) {
    const Dim &width = t->shape.back();
    if (!width.isStatic()) {
      diags.error(call.loc, "the feature width of " + t->str() +
                                " must be a constant in 'attention'",
                  {call.range});
      return nullptr;
    }
    if (width.size % heads != 0) {
      diags.error(call.loc, "heads = " + llvm::Twine(heads) +
                                " does not divide the width " + width.str() +
                                " of " + t->str(),
                  {call.range});
      return nullptr;
    }
  }
  const std::string &mask = info.config["mask"].enumValue;
  if (mask != "none" &&
      q->type.shape[q->type.rank() - 2] != k->type.shape[k->type.rank() - 2]) {
    diags.error(call.findKeyword("mask")->value->loc,
                "mask = " + mask + " needs as many queries as keys, but q is " +
                    q->type.str() + " and k is " + k->type.str());
    return nullptr;
  }
  if (const KeywordArg *score = call.findKeyword("score")) {
    scoreMaskCausal = mask == "causal";
    SemaInfo *s = checkExpr(*score->value, /*scoreContext=*/true);
    if (!s)
      return nullptr;
    if (s->kind != ValueKind::ScoreScalar && s->kind != ValueKind::Number) {
      diags.error(score->value->loc, "a score must be a scalar expression of "
                                     "qk, i, j and n",
                  {score->value->range});
      return nullptr;
    }
  }
  info.type = q->type;
  info.type.shape.back() = v->type.shape.back();
  return annotate(call, info);
}

SemaInfo *ModelChecker::checkLinearAttention(Expr &call) {
  SemaInfo *q = tensorArg(call, 0);
  SemaInfo *k = tensorArg(call, 1);
  SemaInfo *v = tensorArg(call, 2);
  if (!q || !k || !v || !checkQKV(diags, call, q->type, k->type, v->type))
    return nullptr;
  SemaInfo info;
  if (!resolveKeywords(call, primitiveKeywords("linear_attention"), 0,
                       info.config))
    return nullptr;
  if (info.config["causal"].boolean &&
      q->type.shape[q->type.rank() - 2] != k->type.shape[k->type.rank() - 2]) {
    diags.error(call.loc, "causal linear attention needs as many queries as "
                          "keys, but q is " + q->type.str() + " and k is " +
                              k->type.str(),
                {call.range});
    return nullptr;
  }
  info.type = q->type;
  info.type.shape.back() = v->type.shape.back();
  return annotate(call, info);
}

SemaInfo *ModelChecker::checkCall(Expr &call, bool scoreContext) {
  const std::string &name = call.name;
  bool isTemplate = findTemplate(name) &&
                    !(name == "linear_attention" && call.operands.size() == 3);
  if (call.layerName && !isTemplate) {
    diags.error(call.layerName->loc, "'as " + call.layerName->name +
                                         "' names a layer template call, but '" +
                                         name + "' is not a layer template");
    return nullptr;
  }
  if (scoreContext && !isUnaryFunction(name) && !isScoreOnlyFunction(name)) {
    diags.error(call.loc, "'" + name + "' cannot be used in a score "
                          "expression; a score may use unary functions, "
                          "rel_pos_bias and t5_bias",
                {call.range});
    return nullptr;
  }
  if (isTemplate)
    return checkTemplateCall(call, 1, nullptr);
  if (isUnaryFunction(name)) {
    if (!expectArgs(call, 1, 1, "one argument") || !checkNoKeywords(call))
      return nullptr;
    SemaInfo *x = checkExpr(*call.operands[0], scoreContext);
    if (!x)
      return nullptr;
    if (x->kind == ValueKind::Tuple)
      return checkTensorExpr(*call.operands[0]);
    SemaInfo info = *x;
    info.config.clear();
    info.layerNames.clear();
    info.scoreVar.clear();
    if (x->kind == ValueKind::Number) {
      std::optional<double> value = evalNumber(call, "a constant");
      if (!value)
        return nullptr;
      info.number = *value;
      info.isInteger = false;
    }
    return annotate(call, info);
  }
  if (isScoreOnlyFunction(name)) {
    if (!scoreContext) {
      diags.error(call.loc, "'" + name + "' is only allowed inside an "
                            "attention score expression (score = ...)",
                  {call.range});
      return nullptr;
    }
    return checkScoreBias(call);
  }
  if (name == "split")
    return checkSplit(call);
  if (name == "transpose") {
    if (!expectArgs(call, 1, 1, "one argument") || !checkNoKeywords(call))
      return nullptr;
    SemaInfo *x = tensorArg(call, 0);
    if (!x)
      return nullptr;
    if (x->type.rank() < 2) {
      diags.error(call.loc, "transpose needs a tensor of rank 2 or more, but "
                            "its input is " + x->type.str(),
                  {call.range});
      return nullptr;
    }
    SemaInfo info;
    info.type = x->type;
    std::swap(info.type.shape[info.type.rank() - 1],
              info.type.shape[info.type.rank() - 2]);
    return annotate(call, info);
  }
  if (name == "layer_norm" || name == "rms_norm" || name == "scale_norm")
    return checkNorm(call);
  if (name == "scale_offset") {
    if (!expectArgs(call, 3, 3, "3 arguments (x, gamma, beta)") ||
        !checkNoKeywords(call))
      return nullptr;
    SemaInfo *x = tensorArg(call, 0);
    SemaInfo *g = tensorArg(call, 1);
    SemaInfo *b = tensorArg(call, 2);
    if (!x || !g || !b)
      return nullptr;
    for (size_t i = 1; i < 3; ++i) {
      const TensorType &t = call.operands[i]->sema->type;
      if (!isFeatureVector(t, x->type) || t.dtype != x->type.dtype) {
        diags.error(call.operands[i]->loc,
                    "'" + exprText(*call.operands[i]) +
                        "' of scale_offset must be " + x->type.dtype + "[" +
                        (x->type.rank() ? x->type.shape.back().str() : "?") +
                        "], but is " + t.str(),
                    {call.operands[i]->range});
        return nullptr;
      }
    }
    SemaInfo info;
    info.type = x->type;
    return annotate(call, info);
  }
  if (name == "rope")
    return checkRope(call);
  if (name == "attention")
    return checkAttention(call);
  if (name == "linear_attention")
    return checkLinearAttention(call);
  if (name == "embedding")
    return checkEmbedding(call);
  if (name == "sinusoidal")
    return checkSinusoidal(call);
  if (isMaskFunction(name)) {
    diags.error(call.loc, "'" + name + "(...)' is only allowed as a mask: "
                          "mask = " + name + "(size)",
                {call.range});
    return nullptr;
  }
  std::string hint = closestMatch(name, knownCallables());
  diags.error(call.loc, "unknown function '" + name + "'" +
                            (hint.empty() ? "" : "; did you mean '" + hint + "'?"),
              {call.range});
  return nullptr;
}

} // namespace attnc::dsl
