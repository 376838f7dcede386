//===- ModelGenerator.cpp - random valid .attn models ---------------------===//
//
// This file implements generateModel: the model skeleton (dims, inputs,
// outputs, the runtime dims to run with), the helpers of ModelBuilder, and
// the statement kinds that are not attention: projections, elementwise
// arithmetic with broadcasting, activations and powers on safe inputs,
// norms, split, rows of a param table, products with transposes, RoPE.
// Numbers stay well conditioned for an fp32-vs-fp64 comparison: exp only
// of tanh, sqrt only of relu(x) + 1, division only by values >= 0.5,
// powers only of nonnegative values.
//
//===----------------------------------------------------------------------===//
#include "tests/fuzz/GeneratorImpl.h"

#include <sstream>

namespace attnc::fuzz {

std::vector<DimBinding> GeneratedModel::allDims() const {
  std::vector<DimBinding> all{dims};
  all.insert(all.end(), moreDims.begin(), moreDims.end());
  return all;
}

std::string formatDims(const DimBinding &dims) {
  if (dims.empty())
    return "no runtime dims";
  std::string text;
  for (const auto &[name, size] : dims)
    text += (text.empty() ? "" : ", ") + name + "=" + std::to_string(size);
  return text;
}

namespace detail {

ModelBuilder::ModelBuilder(uint64_t seed, const GeneratorOptions &options)
    : rng(seed), options(options), seed(seed) {}

int64_t ModelBuilder::uniform(int64_t lo, int64_t hi) {
  return lo + int64_t(rng() % uint64_t(hi - lo + 1));
}

bool ModelBuilder::chance(double p) {
  return double(rng() % 1000000) < p * 1000000.0;
}

std::string ModelBuilder::pickNumber(const std::vector<const char *> &literals) {
  return pick(literals);
}

std::string ModelBuilder::fresh(const std::string &prefix) {
  return prefix + std::to_string(counters[prefix]++);
}

std::string ModelBuilder::param(const std::string &prefix,
                                const std::vector<std::string> &shape,
                                const std::string &suffix) {
  std::string name = fresh(prefix) + suffix;
  std::string text = "param " + name + " : f32[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + shape[i];
  decls.push_back(text + "]");
  return name;
}

std::string ModelBuilder::widthExpr(int64_t width) {
  if (width == d && chance(0.6))
    return "d";
  if (width == 2 * d && chance(0.5))
    return "2 * d";
  if (width * 2 == d && chance(0.5))
    return "d / 2";
  return std::to_string(width);
}

std::string ModelBuilder::typeOf(int64_t width) const {
  std::string lead = batchName.empty() ? seqName : batchName + ", " + seqName;
  return "f32[" + lead + ", " + std::to_string(width) + "]";
}

Value ModelBuilder::bind(const std::string &prefix, const std::string &expr,
                         int64_t width) {
  Value value{fresh(prefix), width};
  body.push_back(value.name + " = " + expr);
  pool.push_back(value);
  return value;
}

const Value &ModelBuilder::pickValue() {
  if (pool.size() > 1 && chance(0.6))
    return pool[uniform(std::max<int64_t>(0, int64_t(pool.size()) - 3),
                        int64_t(pool.size()) - 1)];
  return pick(pool);
}

int64_t ModelBuilder::pickWidth() {
  return pick(std::vector<int64_t>{8, 16, 16, 32, 32, 64, d, d});
}

std::string ModelBuilder::projection(const Value &a, int64_t width, bool bias) {
  std::string w = param("w", {widthExpr(a.width), widthExpr(width)});
  std::string text = a.name + " @ " + w;
  if (bias)
    text += " + " + param("w", {widthExpr(width)}, "_bias");
  return text;
}

std::string ModelBuilder::valueOfWidth(int64_t width, const std::string &avoid) {
  std::vector<const Value *> same;
  for (const Value &v : pool)
    if (v.width == width && v.name != avoid)
      same.push_back(&v);
  if (!same.empty() && chance(0.6))
    return pick(same)->name;
  return "(" + projection(pickValue(), width, chance(0.5)) + ")";
}

//===--- statements -------------------------------------------------------===//

void ModelBuilder::genLinear() {
  const Value &a = pickValue();
  int64_t width = pickWidth();
  std::string act = pick(std::vector<std::string>{"", "silu", "gelu", "relu",
                                                  "sigmoid", "tanh"});
  std::string expr = projection(a, width, chance(0.7));
  if (!act.empty()) {
    expr = act + "(" + expr + ")";
    tag("prim:" + act);
  }
  tag("prim:@");
  note("linear");
  bind("h", expr, width);
}

void ModelBuilder::genBinary() {
  Value a = pickValue();
  std::string expr;
  switch (uniform(0, 5)) {
  case 0: { // two tensors of one width
    std::string op = pick(std::vector<std::string>{"+", "-", "*"});
    expr = a.name + " " + op + " " + valueOfWidth(a.width, a.name);
    tag(std::string("prim:") + op);
    break;
  }
  case 1: { // a param vector broadcast over the leading dims
    std::string g = param("s", {widthExpr(a.width)}, "_gamma");
    std::string b = param("s", {widthExpr(a.width)}, "_beta");
    expr = a.name + " * " + g + " + " + b;
    tag("prim:*");
    tag("prim:+");
    tag("broadcast:vector");
    break;
  }
  case 2: { // numbers and constant dims
    switch (uniform(0, 4)) {
    case 0:
      expr = a.name + " * " + pickNumber({"0.5", "2", "1.5", "0.25", "3"});
      break;
    case 1:
      expr = pickNumber({"1", "2", "0.5"}) + " - " + a.name;
      break;
    case 2:
      expr = a.name + " / " + pickNumber({"4", "2.5", "d", "8"});
      tag("prim:/");
      break;
    case 3:
      expr = pickNumber({"0.5", "2"}) + " * " + a.name + " + " +
             pickNumber({"1", "0.1", "1e-2"});
      break;
    default:
      expr = "-" + a.name + " + " + pickNumber({"1", "0.5"});
      tag("prim:neg");
      break;
    }
    tag("prim:number");
    break;
  }
  case 3: { // a [lead..., 1] column broadcast over the features
    const Value &c = pickValue();
    std::string col = "(" + c.name + " @ " + param("w", {widthExpr(c.width), "1"}) + ")";
    expr = a.name + " * sigmoid" + col;
    tag("broadcast:column");
    tag("prim:sigmoid");
    break;
  }
  case 4: { // safe division: the divisor is at least 0.5
    std::string b = valueOfWidth(a.width, a.name);
    expr = pick(std::vector<std::string>{
        a.name + " / (relu(" + b + ") + 1)", a.name + " / (sigmoid(" + b + ") + 0.5)",
        "1 / (1 + " + a.name + " * " + a.name + ")"});
    tag("prim:/");
    break;
  }
  default: { // a [1] param broadcast
    std::string s = param("k", {"1"});
    expr = a.name + " * (" + s + " + 1)";
    tag("broadcast:one");
    break;
  }
  }
  note("arith");
  bind("a", expr, a.width);
}

void ModelBuilder::genUnary() {
  const Value &a = pickValue();
  std::string x = a.name;
  struct Form {
    std::string text, tag;
  };
  std::vector<Form> forms = {
      {"silu(" + x + ")", "prim:silu"},
      {"gelu(" + x + ")", "prim:gelu"},
      {"relu(" + x + ")", "prim:relu"},
      {"sigmoid(" + x + ")", "prim:sigmoid"},
      {"tanh(" + x + ")", "prim:tanh"},
      {"exp(tanh(" + x + "))", "prim:exp"},
      {"sqrt(relu(" + x + ") + 1)", "prim:sqrt"},
      {"relu(" + x + ")^2", "pow:2"},
      {"(relu(" + x + ") + 1)^0.5", "pow:0.5"},
      {"sigmoid(" + x + ") ^ 3", "pow:3"},
      {"(relu(" + x + ") + 1) ^ -1", "pow:-1"},
      {"tanh(" + x + ")^2 + " + x, "pow:2"},
  };
  const Form &form = pick(forms);
  tag(form.tag);
  note("unary");
  bind("u", form.text, a.width);
}

void ModelBuilder::genNorm() {
  const Value &a = pickValue();
  std::string w = widthExpr(a.width);
  std::string eps = chance(0.3) ? ", eps = " + pickNumber({"1e-5", "1e-6", "0.001"})
                                : "";
  std::string expr;
  switch (uniform(0, 3)) {
  case 0: {
    int64_t weights = uniform(0, 2);
    expr = "layer_norm(" + a.name;
    if (weights >= 1)
      expr += ", " + param("ln", {w}, "_gamma");
    if (weights == 2)
      expr += ", " + param("ln", {w}, "_beta");
    tag("norm:layer_norm" + std::to_string(weights));
    break;
  }
  case 1:
    expr = "rms_norm(" + a.name + (chance(0.5) ? ", " + param("rms", {w}, "_gamma") : "");
    tag("norm:rms_norm");
    break;
  case 2:
    expr = "scale_norm(" + a.name + ", " + param("sn", {"1"}, "_gamma");
    tag("norm:scale_norm");
    break;
  default:
    expr = "scale_offset(" + a.name + ", " + param("so", {w}, "_gamma") + ", " +
           param("so", {w}, "_beta");
    eps.clear();
    tag("norm:scale_offset");
    break;
  }
  note("norm");
  bind("nm", expr + eps + ")", a.width);
}

void ModelBuilder::genSplit() {
  const Value &a = pickValue();
  std::string source = a.name;
  int64_t width = a.width;
  if (width < 8 || chance(0.3)) { // split a fresh projection, as GAU does
    width = pick(std::vector<int64_t>{16, 32, 48, 64, 2 * d});
    source = "silu(" + projection(a, width, true) + ")";
  }
  // Two or three parts, each a multiple of 4.
  int64_t unit = 4;
  if (width / unit < 2)
    unit = 4;
  int64_t units = width / unit, parts = units >= 3 && chance(0.5) ? 3 : 2;
  std::vector<int64_t> sizes;
  int64_t left = units;
  for (int64_t i = 0; i + 1 < parts; ++i) {
    int64_t take = uniform(1, left - (parts - 1 - i));
    sizes.push_back(unit * take);
    left -= take;
  }
  sizes.push_back(unit * left);
  std::string names, list;
  std::vector<Value> results;
  for (int64_t size : sizes) {
    results.push_back({fresh("sp"), size});
    names += (names.empty() ? "" : ", ") + results.back().name;
    list += (list.empty() ? "" : ", ") + widthExpr(size);
  }
  body.push_back(names + " = split(" + source + ", [" + list + "])");
  pool.insert(pool.end(), results.begin(), results.end());
  tag("prim:split");
  note("split" + std::to_string(parts));
}

void ModelBuilder::genRows() {
  const Value &a = pickValue();
  int64_t rows = uniform(2, 4);
  std::string w = widthExpr(a.width);
  std::string gamma = param("tbl", {std::to_string(rows), w}, "_gamma");
  std::string beta = param("tbl", {std::to_string(rows), w}, "_beta");
  std::string expr = a.name + " * " + gamma + "[" +
                     std::to_string(uniform(0, rows - 1)) + "] + " + beta + "[" +
                     std::to_string(uniform(0, rows - 1)) + "]";
  tag("prim:rows");
  note("rows");
  bind("r", expr, a.width);
}

void ModelBuilder::genStateProduct() {
  // st = k^T v ([lead-without-seq..., fk, fv]), then q @ st: linear
  // attention written by hand, covering .T, transpose() and batched @.
  const Value &k = pickValue();
  int64_t fk = k.width, fv = pickWidth();
  std::string v = valueOfWidth(fv);
  std::string st = fresh("st");
  bool function = chance(0.4);
  body.push_back(st + " = " + (function ? "transpose(" + k.name + ")" : k.name + ".T") +
                 " @ " + v);
  tag(function ? "prim:transpose" : "prim:.T");
  std::string scale = pickNumber({"16", "32", "64"});
  if (chance(0.3)) { // q @ st^T: q has fv features, the result fk
    std::string q = valueOfWidth(fv);
    tag("prim:.T");
    note("state^T");
    bind("ls", "(" + q + " @ " + st + ".T) / " + scale, fk);
    return;
  }
  std::string q = valueOfWidth(fk);
  note("state");
  bind("ls", q + " @ " + st + " / " + scale, fv);
}

void ModelBuilder::genRope() {
  const Value &a = pickValue();
  std::string kw;
  if (chance(0.4)) {
    bool interleaved = chance(0.5);
    kw += std::string(", mode = ") + (interleaved ? "interleaved" : "half");
    tag(interleaved ? "rope:interleaved" : "rope:half");
  } else {
    tag("rope:half");
  }
  if (chance(0.4)) {
    int64_t dims = 2 * uniform(1, a.width / 2);
    kw += ", dims = " + std::to_string(dims);
    tag(dims < a.width ? "rope:partial" : "rope:dims");
  }
  if (chance(0.3)) {
    kw += ", base = " + pickNumber({"100", "500.0", "1e4", "10000"});
    tag("rope:base");
  }
  tag("prim:rope");
  note("rope");
  bind("ro", "rope(" + a.name + kw + ")", a.width);
}

//===--- the model --------------------------------------------------------===//

/// A length for the seq dim: a multiple of a chunk or window of the model
/// (`multiple`), or not, or 1 now and then.
static int64_t chooseLength(ModelBuilder &b, bool multiple) {
  if (!multiple && b.chance(0.25))
    return 1;
  int64_t block = b.blockSizes.empty() ? b.uniform(3, 16) : b.pick(b.blockSizes);
  if (multiple)
    return std::min<int64_t>(96, block * b.uniform(1, 3));
  if (block == 1)
    return b.uniform(2, 40);
  return std::min<int64_t>(95, block * b.uniform(0, 2) + b.uniform(1, block - 1));
}

GeneratedModel ModelBuilder::build() {
  d = pick(std::vector<int64_t>{8, 16, 32, 32, 64});
  seqName = pick(std::vector<std::string>{"n", "n", "n", "len", "L", "seq_len"});
  seqRuntime = chance(0.85);
  int64_t batchKind = uniform(0, 5); // 0-1 none, 2-4 runtime, 5 constant
  if (batchKind >= 2) {
    batchName = pick(std::vector<std::string>{"b", "b", "B", "batch_size"});
    batchRuntime = batchKind <= 4;
    batchConst = uniform(1, 3);
  }
  tag(batchName.empty() ? "batch:none" : batchRuntime ? "batch:runtime" : "batch:constant");
  tag(seqRuntime ? "seq:runtime" : "seq:constant");
  if (seqName != "n")
    tag("seq:renamed");

  pool.push_back({"x", d});
  std::vector<std::string> inputs = {"input x : " + typeOf(d)};
  if (chance(0.3)) {
    int64_t width = pickWidth();
    pool.push_back({"x2", width});
    inputs.push_back("input x2 : " + typeOf(width));
    tag("inputs:2");
  }

  struct Kind {
    void (ModelBuilder::*gen)();
    int weight;
  };
  // The two null entries are genAttention, which takes a flag: self- and
  // cross-attention.
  static const Kind kinds[] = {
      {&ModelBuilder::genLinear, 10},     {&ModelBuilder::genBinary, 12},
      {&ModelBuilder::genUnary, 10},      {&ModelBuilder::genNorm, 8},
      {&ModelBuilder::genSplit, 6},       {&ModelBuilder::genRows, 4},
      {&ModelBuilder::genStateProduct, 4}, {&ModelBuilder::genRope, 6},
      {nullptr, 16}, /* self-attention */ {nullptr, 4}, /* cross */
      {&ModelBuilder::genLinearAttention, 6}, {&ModelBuilder::genTemplate, 22},
  };
  int total = 0;
  for (const Kind &kind : kinds)
    total += kind.weight;
  int64_t statements = uniform(1, std::max(1, options.maxStatements));
  for (int64_t s = 0; s < statements; ++s) {
    int64_t r = uniform(0, total - 1);
    size_t index = 0;
    while (r >= kinds[index].weight)
      r -= kinds[index++].weight;
    // k.T @ v contracts over the n keys (see GeneratorOptions).
    if (options.avoidKnownBugs && kinds[index].gen == &ModelBuilder::genStateProduct)
      genLinear();
    else if (kinds[index].gen)
      (this->*kinds[index].gen)();
    else
      genAttention(/*cross=*/index == 9);
  }

  // Outputs: the newest value, unused template results, then up to three
  // in all, in three spellings.
  std::set<std::string> used;
  for (const std::string &line : body) {
    std::string rhs = line.substr(line.find(" = ") + 3);
    for (size_t p = 0; p < rhs.size();) {
      size_t end = p;
      while (end < rhs.size() && (std::isalnum(static_cast<unsigned char>(rhs[end])) ||
                                  rhs[end] == '_'))
        ++end;
      if (end > p)
        used.insert(rhs.substr(p, end - p));
      p = end + 1;
    }
  }
  std::vector<Value> results = {pool.back()};
  for (const Value &t : templateValues)
    if (!used.count(t.name) && t.name != pool.back().name)
      results.push_back(t);
  int64_t extra = uniform(0, 2);
  for (int64_t o = 0; o < extra && int64_t(results.size()) < 3; ++o) {
    Value v = pickValue();
    for (int tries = 0; tries < 4 && v.name.rfind('x', 0) == 0; ++tries)
      v = pickValue();
    results.push_back(v);
  }
  int64_t outputs = int64_t(results.size());
  for (int64_t o = 0; o < outputs; ++o) {
    const Value v = results[o];
    std::string name = "y" + std::to_string(o);
    std::string expr = v.name;
    if (chance(0.25))
      expr += " + " + valueOfWidth(v.width, v.name);
    switch (uniform(0, 2)) {
    case 0:
      body.push_back("output " + name + " = " + expr);
      break;
    case 1:
      decls.push_back("output " + name + " : " + typeOf(v.width));
      body.push_back(name + " = " + expr);
      tag("output:declared");
      break;
    default:
      body.push_back("output " + name + " : " + typeOf(v.width) + " = " + expr);
      tag("output:typed");
      break;
    }
  }
  tag("outputs:" + std::to_string(outputs));

  // Runtime dims: the first run at a multiple of a block size, a second at
  // a non-multiple (or 1).
  GeneratedModel model;
  model.seed = seed;
  int64_t n1 = chooseLength(*this, true), n2 = chooseLength(*this, false);
  if (n2 == n1)
    n2 = n1 + 1;
  int64_t b1 = batchConst, b2 = uniform(1, 3);
  std::vector<std::string> header = {"dim d = " + std::to_string(d)};
  header.push_back(seqRuntime ? "dim " + seqName + " : seq"
                              : "dim " + seqName + " = " + std::to_string(n2));
  if (!batchName.empty())
    header.push_back(batchRuntime ? "dim " + batchName + " : batch"
                                  : "dim " + batchName + " = " + std::to_string(batchConst));
  if (seqRuntime)
    model.dims[seqName] = n1;
  if (batchRuntime)
    model.dims[batchName] = b1;
  if (seqRuntime || batchRuntime) {
    DimBinding second = model.dims;
    if (seqRuntime)
      second[seqName] = n2;
    if (batchRuntime)
      second[batchName] = b2;
    model.moreDims.push_back(second);
  }

  std::ostringstream os;
  os << "# generated by attnc-modelgen, seed " << seed << "\n";
  os << "model fuzz_" << seed << " {\n";
  for (const auto *lines : {&header, &inputs, &decls, &body})
    for (const std::string &line : *lines)
      os << "  " << line << "\n";
  os << "}\n";
  model.source = os.str();
  model.features = features;
  std::string text = "d=" + std::to_string(d) + (seqRuntime ? " seq" : " const-seq") +
                     (batchName.empty() ? "" : batchRuntime ? " batch" : " const-batch") +
                     ":";
  for (const std::string &s : summary)
    text += " " + s;
  model.description = text + " -> " + std::to_string(outputs) + " output(s)";
  return model;
}

} // namespace detail

GeneratedModel generateModel(uint64_t seed, const GeneratorOptions &options) {
  return detail::ModelBuilder(seed, options).build();
}

} // namespace attnc::fuzz
