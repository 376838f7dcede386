//===- Templates.cpp - keyword signatures of templates and primitives -----===//
//
// This file holds the tables of layer templates (with the paper's defaults,
// ../shared/spec/flash.md §2.3: e = 2d, s = 128, C = 256, SiLU, LayerNorm eps
// 1e-5) and of the primitives' keyword arguments, and the weight list of each
// template (architecture page, "Weight names and shapes").
//
//===----------------------------------------------------------------------===//
#include "dsl/Sema/Templates.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"

namespace attnc::dsl {

static KeywordSpec size(std::string name, int64_t value) {
  KeywordSpec spec{std::move(name), KeywordType::Size};
  spec.defaultSize = value;
  return spec;
}
static KeywordSpec sizeTimesD(std::string name, int64_t factor) {
  KeywordSpec spec{std::move(name), KeywordType::Size};
  spec.defaultTimesModelDim = factor;
  return spec;
}
static KeywordSpec optionalSize(std::string name) {
  KeywordSpec spec{std::move(name), KeywordType::Size};
  spec.hasDefault = false;
  return spec;
}
static KeywordSpec boolean(std::string name, bool value) {
  KeywordSpec spec{std::move(name), KeywordType::Bool};
  spec.defaultBool = value;
  return spec;
}
static KeywordSpec optionalBool(std::string name) {
  KeywordSpec spec{std::move(name), KeywordType::Bool};
  spec.hasDefault = false;
  return spec;
}
static KeywordSpec number(std::string name, double value) {
  KeywordSpec spec{std::move(name), KeywordType::Float};
  spec.defaultFloat = value;
  return spec;
}
/// A number that must be > 0: the norms' eps and RoPE's base (the
/// dialect's verifiers require it).
static KeywordSpec positiveNumber(std::string name, double value) {
  KeywordSpec spec = number(std::move(name), value);
  spec.positive = true;
  return spec;
}
static KeywordSpec choice(std::string name, std::vector<std::string> choices,
                          std::string value) {
  KeywordSpec spec{std::move(name), KeywordType::Enum, std::move(choices)};
  spec.defaultEnum = std::move(value);
  return spec;
}
static KeywordSpec mask() {
  KeywordSpec spec{"mask", KeywordType::Mask};
  spec.defaultEnum = "none";
  return spec;
}
static KeywordSpec score() {
  KeywordSpec spec{"score", KeywordType::Score};
  spec.hasDefault = false; // absent: the score is qk itself
  return spec;
}

static const std::vector<std::string> kNorms = {"layer_norm", "scale_norm",
                                                "rms_norm"};
static const std::vector<std::string> kFeatures = {"identity", "elu1", "relu",
                                                   "silu", "exp"};
static const std::vector<std::string> kActivations = {"silu", "gelu", "relu",
                                                      "sigmoid", "tanh"};

static const KeywordSpec kRelPos =
    choice("rel_pos", {"none", "toeplitz", "t5"}, "toeplitz");

/// `keywords` and FLASH-pytorch's options, which gau and flash share
/// (docs/dsl.md §5.1): the T5 bias's buckets, partial or interleaved RoPE,
/// token shift and the clamped ScaleNorm.
static std::vector<KeywordSpec>
gatedKeywords(std::vector<KeywordSpec> keywords) {
  for (KeywordSpec spec :
       {size("num_buckets", 32), size("max_distance", 128),
        optionalSize("rope_dims"),
        choice("rope_mode", {"half", "interleaved"}, "half"),
        boolean("shift_tokens", false), boolean("norm_clamp", false)})
    keywords.push_back(std::move(spec));
  return keywords;
}

const std::vector<TemplateSpec> &layerTemplates() {
  static const std::vector<TemplateSpec> templates = {
      {"gau",
       "gated attention unit (FLASH-Quad layer): pre-norm, relu(qk/n + b)^2, "
       "gated by u, residual",
       gatedKeywords({sizeTimesD("e", 2), size("s", 128),
                      boolean("causal", false),
                      choice("norm", kNorms, "layer_norm"),
                      size("max_len", 512), kRelPos, boolean("rope", true),
                      positiveNumber("eps", 1e-5)})},
      {"flash",
       "FLASH layer: GAU with mixed chunk attention (quadratic inside chunks "
       "of C, linear across chunks)",
       gatedKeywords({sizeTimesD("e", 2), size("s", 128), size("chunk", 256),
                      boolean("causal", false),
                      choice("norm", kNorms, "layer_norm"), kRelPos,
                      boolean("rope", true), positiveNumber("eps", 1e-5),
                      choice("lin_scale", {"chunk", "length"}, "chunk")})},
      {"mhsa",
       "multi-head softmax self-attention baseline: pre-norm, residual",
       {size("heads", 8), boolean("causal", false),
        choice("norm", kNorms, "layer_norm"), positiveNumber("eps", 1e-5)}},
      {"linear_attention",
       "linear attention layer (feature map, normalised, causal or not)",
       {size("heads", 1), boolean("causal", false),
        choice("feature", kFeatures, "elu1"),
        choice("norm", kNorms, "layer_norm"), positiveNumber("eps", 1e-5)}},
      {"local_attention",
       "local softmax attention (sliding window, or blocks when block = "
       "true)",
       {size("heads", 8), size("window", 256), boolean("causal", true),
        boolean("block", false), choice("norm", kNorms, "layer_norm"),
        positiveNumber("eps", 1e-5)}},
      {"glu_ffn",
       "gated linear unit feed-forward: act(x W_u) * act(x W_v) W_o, pre-norm, "
       "residual",
       {sizeTimesD("hidden", 2), choice("activation", kActivations, "silu"),
        choice("norm", kNorms, "layer_norm"), positiveNumber("eps", 1e-5)}},
  };
  return templates;
}

const TemplateSpec *findTemplate(llvm::StringRef name) {
  for (const TemplateSpec &spec : layerTemplates())
    if (spec.name == name)
      return &spec;
  return nullptr;
}

const std::vector<KeywordSpec> &primitiveKeywords(llvm::StringRef name) {
  static const std::map<std::string, std::vector<KeywordSpec>> table = {
      {"attention",
       {score(), mask(), choice("normalize", {"none", "softmax"}, "none"),
        size("heads", 1)}},
      {"linear_attention",
       {choice("feature", kFeatures, "elu1"), boolean("causal", false),
        boolean("normalize", true), number("scale", 1.0)}},
      {"rope",
       {choice("mode", {"half", "interleaved"}, "half"), optionalSize("dims"),
        positiveNumber("base", 10000.0)}},
      {"sinusoidal", {positiveNumber("base", 10000.0)}},
      {"layer_norm", {positiveNumber("eps", 1e-5)}},
      {"rms_norm", {positiveNumber("eps", 1e-5)}},
      {"scale_norm", {positiveNumber("eps", 1e-5), boolean("clamp", false)}},
      {"rel_pos_bias", {optionalSize("max_len")}},
      {"t5_bias",
       {optionalBool("causal"), size("max_distance", 128),
        number("scale", 1.0)}},
  };
  static const std::vector<KeywordSpec> none;
  auto it = table.find(name.str());
  return it == table.end() ? none : it->second;
}

bool isUnaryFunction(llvm::StringRef name) {
  return llvm::is_contained(llvm::ArrayRef<llvm::StringRef>{"silu", "gelu",
                                                            "relu", "sigmoid",
                                                            "exp", "tanh",
                                                            "sqrt"},
                            name);
}

bool isScoreOnlyFunction(llvm::StringRef name) {
  return name == "rel_pos_bias" || name == "t5_bias";
}

const std::vector<std::string> &knownCallables() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> all;
    for (const TemplateSpec &spec : layerTemplates())
      all.push_back(spec.name);
    for (const char *name :
         {"silu", "gelu", "relu", "sigmoid", "exp", "tanh", "sqrt", "split",
          "transpose", "layer_norm", "scale_norm", "rms_norm", "scale_offset",
          "rope", "embedding", "sinusoidal", "attention", "rel_pos_bias",
          "t5_bias", "window", "band", "chunk", "causal_chunk"})
      all.push_back(name);
    return all;
  }();
  return names;
}

static std::vector<WeightPart> normWeights(int64_t d, const Config &config) {
  const std::string &norm = config.at("norm").enumValue;
  if (norm == "layer_norm")
    return {{"norm.weight", {d}}, {"norm.bias", {d}}};
  if (norm == "scale_norm")
    return {{"norm.weight", {1}}};
  return {{"norm.weight", {d}}};
}

std::vector<WeightPart> templateWeights(llvm::StringRef name, int64_t d,
                                        const Config &config) {
  std::vector<WeightPart> parts = normWeights(d, config);
  auto add = [&](std::string part, std::vector<int64_t> shape) {
    parts.push_back({std::move(part), std::move(shape)});
  };
  if (name == "gau" || name == "flash") {
    int64_t e = config.at("e").size, s = config.at("s").size;
    int64_t heads = name == "gau" ? 2 : 4;
    add("uvz.weight", {d, 2 * e + s});
    add("uvz.bias", {2 * e + s});
    add("gamma", {heads, s});
    add("beta", {heads, s});
    const std::string &relPos = config.at("rel_pos").enumValue;
    if (relPos == "toeplitz") {
      int64_t m = name == "gau" ? config.at("max_len").size
                                : config.at("chunk").size;
      add("rel_pos", {2 * m - 1});
    } else if (relPos == "t5") {
      add("rel_pos", {config.at("num_buckets").size});
    }
    add("out.weight", {e, d});
    add("out.bias", {d});
  } else if (name == "glu_ffn") {
    int64_t h = config.at("hidden").size;
    add("in.weight", {d, 2 * h});
    add("in.bias", {2 * h});
    add("out.weight", {h, d});
    add("out.bias", {d});
  } else { // mhsa, linear_attention, local_attention
    add("qkv.weight", {d, 3 * d});
    add("qkv.bias", {3 * d});
    add("out.weight", {d, d});
    add("out.bias", {d});
  }
  return parts;
}

} // namespace attnc::dsl
