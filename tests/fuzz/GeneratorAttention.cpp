//===- GeneratorAttention.cpp - random attention and layer templates ------===//
//
// This file implements the attention statements of ModelBuilder: the
// `attention` primitive (self- and cross-attention, every mask, softmax or
// not, several heads) with random score expressions, the `linear_attention`
// primitive, and layer-template calls with random keywords, `repeat` and
// `as`. Scores stay well conditioned: unnormalised scores are divided by n
// or a block size, softmax logits are scaled by 1/sqrt(dk) or similar, and
// normalised linear attention uses positive feature maps only (elu1, exp of
// bounded values, relu with >= 32 features): identity and silu features can
// make its denominator cancel to near zero, which fp32 cannot match.
//
//===----------------------------------------------------------------------===//
#include "tests/fuzz/GeneratorImpl.h"

namespace attnc::fuzz::detail {

namespace {

/// Masks of the attention primitive; blocks (w or C) are 0 for the first two.
const std::vector<std::string> kMasks = {"none",  "causal", "window",
                                         "band",  "chunk",  "causal_chunk"};

} // namespace

std::string ModelBuilder::scoreBias(const std::string &mask, bool selfAttention) {
  if (chance(0.5)) {
    int64_t maxLen = uniform(2, 40);
    std::string table = param("rp", {std::to_string(2 * maxLen - 1)}, "_rel_pos");
    tag("score:rel_pos_bias");
    if (chance(0.4)) {
      tag("score:rel_pos_bias.max_len");
      return "rel_pos_bias(" + table + ", max_len = " + std::to_string(maxLen) + ")";
    }
    return "rel_pos_bias(" + table + ")";
  }
  // t5_bias: `causal` defaults to whether the mask is `causal`.
  bool given = chance(0.6);
  bool causal = given ? chance(0.5) : mask == "causal";
  bool chunked = mask == "chunk" || mask == "causal_chunk";
  (void)selfAttention;
  // Non-causal tables split into two halves: an even count >= 4.
  int64_t buckets = 2 * uniform(causal ? 1 : 2, 16);
  int64_t exact = (causal ? buckets : buckets / 2) / 2;
  std::string emb = param("t5", {std::to_string(buckets)}, "_emb");
  std::string text = "t5_bias(" + emb;
  if (given)
    text += std::string(", causal = ") + (causal ? "true" : "false");
  if (chance(0.5)) {
    text += ", max_distance = " + std::to_string(uniform(exact + 1, exact + 64));
    tag("score:t5_bias.max_distance");
  }
  if (chance(0.5)) {
    text += ", scale = " + pickNumber({"0.5", "2.0", "sqrt(8)", "1 / 4"});
    tag("score:t5_bias.scale");
  }
  tag(causal ? "score:t5_bias.causal" : "score:t5_bias.bidirectional");
  tag("score:t5_bias");
  return text + ")";
}

std::string ModelBuilder::score(const std::string &mask, int64_t block,
                                bool normalized, int64_t dk, bool selfAttention) {
  // `n` is the number of keys; the seq dim's name is an alias for it.
  std::string n = seqName != "n" && chance(0.5) ? seqName : "n";
  if (n != "n")
    tag("score:seq-alias");
  std::string bias = chance(0.35) ? " + " + scoreBias(mask, selfAttention) : "";
  std::string dks = std::to_string(dk);
  if (normalized) {
    std::string logits = pick(std::vector<std::string>{
        "qk / sqrt(" + dks + ")", "qk * " + pickNumber({"0.25", "0.125", "0.5"}),
        "qk / " + dks});
    switch (uniform(0, 5)) {
    case 0:
      tag("score:tanh");
      return "tanh(" + logits + ") * 3" + bias;
    case 1:
      tag("score:ij");
      return logits + " - 0.05 * relu(i - j)" + bias;
    case 2:
      tag("score:n");
      return logits + " + 0.01 * " + n + bias;
    case 3:
      if (bias.empty()) {
        tag("score:qk");
        return "qk"; // unscaled logits
      }
      [[fallthrough]];
    default:
      tag("score:scaled");
      return logits + bias;
    }
  }
  std::string divisor = block > 0 && chance(0.5) ? std::to_string(block) : n;
  switch (uniform(0, 5)) {
  case 0:
    tag("score:relu2");
    return "relu(qk / " + divisor + bias + ")^2";
  case 1:
    tag("score:sigmoid");
    return "sigmoid(qk / " + dks + bias + ") / " + divisor;
  case 2:
    tag("score:linear");
    return "(qk" + bias + ") / " + divisor;
  case 3:
    tag("score:exp");
    return "exp(tanh(qk / 8" + bias + ")) / " + divisor;
  case 4:
    tag("score:sqrt");
    return "sqrt(relu(qk) + 1) / " + divisor + bias;
  default:
    tag("score:relu2");
    tag("score:ij");
    return "relu(qk / " + divisor + " + (i - j) / (4 * " + n + "))^2" + bias;
  }
}

void ModelBuilder::genAttention(bool cross) {
  int64_t heads = pick(std::vector<int64_t>{1, 1, 2, 4});
  int64_t dk = pick(std::vector<int64_t>{4, 8, 16}), dv = pick(std::vector<int64_t>{4, 8, 16});
  const Value &src = pickValue();
  std::string q, k, v;
  if (!cross && chance(0.3)) { // one projection, split into q | k | v
    std::string parts[3] = {fresh("q"), fresh("k"), fresh("v")};
    body.push_back(parts[0] + ", " + parts[1] + ", " + parts[2] + " = split(" +
                   projection(src, 2 * heads * dk + heads * dv, true) + ", [" +
                   std::to_string(heads * dk) + ", " + std::to_string(heads * dk) +
                   ", " + std::to_string(heads * dv) + "])");
    q = parts[0], k = parts[1], v = parts[2];
  } else {
    q = "(" + projection(src, heads * dk, chance(0.5)) + ")";
    if (cross) {
      if (memName.empty()) {
        memName = "mem";
        memLength = uniform(1, 12);
        memWidth = pickWidth();
        std::string lead = batchName.empty() ? "m" : batchName + ", m";
        decls.insert(decls.begin(), "input mem : f32[" + lead + ", " +
                                        std::to_string(memWidth) + "]");
        decls.insert(decls.begin(), "dim m = " + std::to_string(memLength));
      }
      Value mem{memName, memWidth};
      k = "(" + projection(mem, heads * dk, chance(0.5)) + ")";
      v = "(" + projection(mem, heads * dv, chance(0.5)) + ")";
    } else {
      k = "(" + projection(pickValue(), heads * dk, chance(0.5)) + ")";
      v = "(" + projection(pickValue(), heads * dv, chance(0.5)) + ")";
    }
  }
  if (!cross && dk % 2 == 0 && heads == 1 && chance(0.25)) {
    q = "rope(" + q + ")", k = "rope(" + k + ")";
    tag("prim:rope");
    tag("rope:half");
  }
  std::string mask = cross ? "none" : pick(kMasks);
  int64_t block = 0;
  std::string maskText = mask;
  if (mask != "none" && mask != "causal") {
    block = pick(std::vector<int64_t>{1, 2, 3, 4, 5, 8, 8, 16, 16, 32});
    blockSizes.push_back(block);
    maskText += "(" + std::to_string(block) + ")";
  }
  bool softmax = chance(0.5);
  std::string text = "attention(" + q + ", " + k + ", " + v;
  if (softmax || chance(0.85))
    text += ", score = " + score(mask, block, softmax, dk, !cross);
  else
    tag("score:default"); // the score is qk itself
  if (mask != "none" || chance(0.3))
    text += ", mask = " + maskText;
  if (softmax)
    text += ", normalize = softmax";
  else if (chance(0.3))
    text += ", normalize = none";
  if (heads > 1 || chance(0.2))
    text += ", heads = " + std::to_string(heads);
  tag("prim:attention");
  tag("mask:" + mask);
  tag(softmax ? "normalize:softmax" : "normalize:none");
  tag("heads:" + std::to_string(heads));
  if (cross)
    tag("attention:cross");
  note(std::string(cross ? "cross-" : "") + "attention(" + maskText +
       (softmax ? ",softmax" : "") + ",h" + std::to_string(heads) + ")");
  bind("at", text + ")", heads * dv);
}

void ModelBuilder::genLinearAttention() {
  int64_t fk = pick(std::vector<int64_t>{8, 16, 32}), fv = pickWidth();
  bool normalize = chance(0.6);
  std::vector<std::string> features = {"elu1", "exp"};
  if (fk >= 32)
    features.push_back("relu");
  if (!normalize)
    features.insert(features.end(), {"identity", "silu", "relu"});
  std::string feature = pick(features);
  // exp of a projection only of bounded values.
  auto wrap = [&](std::string e) { return feature == "exp" ? "tanh(" + e + ")" : "(" + e + ")"; };
  std::string q = wrap(projection(pickValue(), fk, chance(0.5)));
  std::string k = wrap(projection(pickValue(), fk, chance(0.5)));
  std::string v = valueOfWidth(fv);
  std::string text = "linear_attention(" + q + ", " + k + ", " + v;
  if (feature != "elu1" || chance(0.3))
    text += ", feature = " + feature;
  bool causal = chance(0.5);
  if (causal || chance(0.3))
    text += std::string(", causal = ") + (causal ? "true" : "false");
  if (!normalize || chance(0.3))
    text += std::string(", normalize = ") + (normalize ? "true" : "false");
  if (chance(0.4) || !normalize)
    text += ", scale = " + std::string(normalize ? pickNumber({"0.5", "2.0", "1"})
                                                 : pickNumber({"1 / 16", "0.05", "1 / d"}));
  tag("prim:linear_attention");
  tag("linear_attention:" + feature);
  tag(std::string("linear_attention:") + (causal ? "causal" : "bidirectional"));
  tag(std::string("linear_attention:") + (normalize ? "normalized" : "unnormalized"));
  note("linear_attention(" + feature + (causal ? ",causal" : "") + ")");
  bind("la", text + ")", fv);
}

std::string ModelBuilder::templateCall(const std::string &kind,
                                       const std::string &input, int64_t width) {
  std::vector<std::string> kw;
  auto add = [&](const std::string &name, const std::string &value) {
    kw.push_back(name + " = " + value);
    tag("kw:" + kind + "." + name);
  };
  auto maybeBool = [&](const std::string &name, double p) {
    if (chance(p))
      add(name, chance(0.5) ? "true" : "false");
  };
  auto heads = [&]() {
    std::vector<int64_t> divisors;
    for (int64_t h : {1, 2, 4, 8})
      if (width % h == 0)
        divisors.push_back(h);
    add("heads", std::to_string(pick(divisors)));
  };
  if (kind == "gau" || kind == "flash") {
    if (chance(0.7))
      add("e", pick(std::vector<std::string>{"8", "16", "32", "2 * d", "d"}));
    bool rope = !chance(0.25);
    // s must be given: its default 128 is too large for a fast test.
    int64_t s = rope ? 2 * uniform(2, 8) : uniform(3, 16);
    add("s", std::to_string(s));
    if (!rope || chance(0.3))
      add("rope", rope ? "true" : "false");
    if (kind == "flash") {
      int64_t chunk = pick(std::vector<int64_t>{1, 2, 4, 5, 8, 8, 16, 16, 32});
      blockSizes.push_back(chunk);
      add("chunk", std::to_string(chunk));
    } else {
      int64_t maxLen = uniform(2, 40);
      blockSizes.push_back(maxLen);
      add("max_len", std::to_string(maxLen));
    }
    bool causal = false;
    if (chance(0.7)) {
      causal = chance(0.5);
      add("causal", causal ? "true" : "false");
    }
    if (chance(0.4))
      add("rel_pos", chance(0.5) ? "none" : "toeplitz");
    else if (chance(0.25)) { // FLASH-pytorch's options (docs/dsl.md §5.8)
      add("rel_pos", "t5");
      // Even; at least 4 when not causal (2 per direction).
      int64_t buckets = chance(0.5) ? 2 * uniform(causal ? 1 : 2, 16) : 32;
      if (buckets != 32)
        add("num_buckets", std::to_string(buckets));
      // Past the exact buckets (default 128 is), as for t5_bias above.
      int64_t exact = (causal ? buckets : buckets / 2) / 2;
      if (chance(0.5))
        add("max_distance", std::to_string(uniform(exact + 1, exact + 64)));
    }
    if (rope && chance(0.25)) {
      add("rope_dims", std::to_string(2 * uniform(1, s / 2)));
      if (chance(0.5))
        add("rope_mode", chance(0.5) ? "interleaved" : "half");
    }
    if (chance(0.2))
      add("shift_tokens", "true");
    if (kind == "flash" && !causal && chance(0.25))
      add("lin_scale", "length");
  } else if (kind == "mhsa") {
    heads();
    maybeBool("causal", 0.6);
  } else if (kind == "linear_attention") {
    if (chance(0.3))
      add("heads", "1"); // heads > 1: not supported by codegen yet
    maybeBool("causal", 0.6);
    // Normalised: positive features only (see the file comment).
    std::vector<std::string> features = {"elu1", "exp"};
    if (width >= 32)
      features.push_back("relu");
    if (chance(0.6))
      add("feature", pick(features));
  } else if (kind == "local_attention") {
    heads();
    int64_t window = pick(std::vector<int64_t>{1, 2, 3, 4, 8, 8, 16, 32});
    blockSizes.push_back(window);
    add("window", std::to_string(window));
    maybeBool("causal", 0.7);
    maybeBool("block", 0.6);
  } else { // glu_ffn
    if (chance(0.8))
      add("hidden", pick(std::vector<std::string>{"8", "16", "24", "d", "2 * d"}));
    if (chance(0.6))
      add("activation", pick(std::vector<std::string>{"silu", "gelu", "relu",
                                                      "sigmoid", "tanh"}));
  }
  if (chance(0.4)) {
    std::string norm = pick(std::vector<std::string>{"layer_norm", "scale_norm", "rms_norm"});
    add("norm", norm);
    tag("template-norm:" + norm);
    if (norm == "scale_norm" && (kind == "gau" || kind == "flash") &&
        chance(0.5))
      add("norm_clamp", "true");
  }
  if (chance(0.2))
    add("eps", pickNumber({"1e-5", "1e-6", "0.001"}));
  // Keywords in a random order: they are named.
  for (size_t i = kw.size(); i > 1; --i)
    std::swap(kw[i - 1], kw[uniform(0, int64_t(i) - 1)]);
  std::string text = kind + "(" + input;
  for (const std::string &k : kw)
    text += ", " + k;
  tag("template:" + kind);
  return text + ")";
}

void ModelBuilder::genTemplate() {
  static const std::vector<std::string> kinds = {
      "gau", "flash", "mhsa", "linear_attention", "local_attention", "glu_ffn"};
  const Value &x = pickValue();
  std::string kind = pick(kinds);
  std::string call = templateCall(kind, x.name, x.width);
  std::string what = kind;
  if (chance(0.15)) { // a template nested in another, both of width x
    std::string inner = pick(kinds);
    std::string innerCall = templateCall(inner, x.name, x.width);
    if (chance(0.5))
      innerCall += " as " + fresh("layer");
    call = templateCall(kind, innerCall, x.width);
    tag("template:nested");
    what = kind + "(" + inner + ")";
  }
  if (chance(0.25)) {
    int64_t count = uniform(1, 2);
    std::string countText = std::to_string(count);
    if (chance(0.3)) {
      countText = fresh("reps");
      decls.insert(decls.begin(), "dim " + countText + " = " + std::to_string(count));
      tag("repeat:dim");
    }
    call = "repeat " + countText + " " + call;
    tag("repeat");
    what = "repeat " + std::to_string(count) + " " + what;
  }
  if (chance(0.4)) {
    call += " as " + fresh("layer");
    tag("as");
  }
  note(what);
  templateValues.push_back(bind("t", call, x.width));
}

} // namespace attnc::fuzz::detail
