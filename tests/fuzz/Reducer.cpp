//===- Reducer.cpp - shrink a failing generated model ---------------------===//
//
// This file implements the greedy reducer and the reproducer files (see
// Reducer.h). Candidates are cheap to reject: the front end alone runs
// first, in this process, and only texts it accepts are compiled and run
// (in a child process, as every check).
//
//===----------------------------------------------------------------------===//
#include "tests/fuzz/Reducer.h"

#include "dsl/Import/Frontend.h"

#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

namespace attnc::fuzz {

bool frontendAccepts(const std::string &source) {
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  return dsl::runFrontend(source, "reduce.attn", dsl::FrontendStage::Check, os).ok;
}

namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> splitLines(const std::string &text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos)
      end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string joinLines(const std::vector<std::string> &lines) {
  std::string text;
  for (const std::string &line : lines)
    text += line + "\n";
  return text;
}

bool isIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool isIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// Spans [begin, end) of `, NAME = value` inside calls (and dim lists).
std::vector<std::pair<size_t, size_t>> keywordSpans(const std::string &text) {
  std::vector<std::pair<size_t, size_t>> spans;
  for (size_t p = 0; p < text.size(); ++p) {
    if (text[p] != ',')
      continue;
    size_t q = p + 1;
    while (q < text.size() && std::isspace(static_cast<unsigned char>(text[q])))
      ++q;
    if (q >= text.size() || !isIdentStart(text[q]))
      continue;
    while (q < text.size() && isIdentChar(text[q]))
      ++q;
    while (q < text.size() && text[q] == ' ')
      ++q;
    if (q >= text.size() || text[q] != '=')
      continue;
    int depth = 0;
    size_t end = q + 1;
    for (; end < text.size(); ++end) {
      char c = text[end];
      if (c == '(' || c == '[')
        ++depth;
      else if (c == ')' || c == ']') {
        if (depth == 0)
          break;
        --depth;
      } else if ((c == ',' || c == '\n') && depth == 0)
        break;
    }
    spans.push_back({p, end});
  }
  return spans;
}

/// The identifiers of `expr` that are not calls or `.T`, at most `limit`.
std::vector<std::string> operandNames(const std::string &expr, size_t limit) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (size_t p = 0; p < expr.size() && names.size() < limit;) {
    if (!isIdentStart(expr[p]) || (p > 0 && (isIdentChar(expr[p - 1]) || expr[p - 1] == '.'))) {
      ++p;
      continue;
    }
    size_t end = p;
    while (end < expr.size() && isIdentChar(expr[end]))
      ++end;
    std::string name = expr.substr(p, end - p);
    size_t next = end;
    while (next < expr.size() && expr[next] == ' ')
      ++next;
    bool call = next < expr.size() && expr[next] == '(';
    bool keyword = next < expr.size() && expr[next] == '=' &&
                   (next + 1 >= expr.size() || expr[next + 1] != '=');
    if (!call && !keyword && seen.insert(name).second)
      names.push_back(name);
    p = end;
  }
  return names;
}

class Reduction {
public:
  Reduction(const CheckOptions &check, const ReduceOptions &options,
            const VariantResult &target)
      : check(check), options(options), target(target), start(Clock::now()) {
    this->check.variants = {target.variant};
  }

  bool budgetLeft() const {
    return best.checks < options.maxChecks &&
           std::chrono::duration<double>(Clock::now() - start).count() <
               options.maxSeconds;
  }

  /// Keeps (source, dims) if it is valid and fails as the target does.
  bool attempt(const std::string &source, const std::vector<DimBinding> &dims) {
    if ((source == best.source && dims == best.dims) || !budgetLeft() ||
        !frontendAccepts(source))
      return false;
    ++best.checks;
    VariantResult result = checkVariant(source, dims, target.variant, check);
    if (!sameFailure(result, target))
      return false;
    best.source = source;
    best.dims = dims;
    best.failure = result;
    ++best.accepted;
    return true;
  }

  bool deleteLines() {
    bool progress = false;
    std::vector<std::string> lines = splitLines(best.source);
    for (size_t i = lines.size(); i-- > 0;) {
      const std::string &line = lines[i];
      if (line.rfind("model ", 0) == 0 || line == "}" || line.rfind("#", 0) == 0)
        continue;
      std::vector<std::string> fewer = lines;
      fewer.erase(fewer.begin() + i);
      if (attempt(joinLines(fewer), best.dims)) {
        lines = fewer;
        progress = true;
      }
    }
    return progress;
  }

  /// `NAME = f(a, b)` -> `NAME = a`, then `NAME = b`.
  bool bypassBindings() {
    bool progress = false;
    std::vector<std::string> lines = splitLines(best.source);
    for (size_t i = 0; i < lines.size(); ++i) {
      size_t eq = lines[i].find(" = ");
      if (eq == std::string::npos || lines[i].find("dim ") != std::string::npos ||
          lines[i].find(',') < eq)
        continue;
      std::string head = lines[i].substr(0, eq + 3);
      for (const std::string &name : operandNames(lines[i].substr(eq + 3), 5)) {
        std::vector<std::string> simpler = lines;
        simpler[i] = head + name;
        if (simpler[i] != lines[i] && attempt(joinLines(simpler), best.dims)) {
          lines = simpler;
          progress = true;
          break;
        }
      }
    }
    return progress;
  }

  /// `a = b` (a plain alias): delete it and write `b` for `a` below.
  bool inlineAliases() {
    bool progress = false;
    std::vector<std::string> lines = splitLines(best.source);
    static const std::regex alias(" *([A-Za-z_][A-Za-z0-9_]*) = ([A-Za-z_][A-Za-z0-9_]*)");
    for (size_t i = lines.size(); i-- > 0;) {
      std::smatch match;
      if (!std::regex_match(lines[i], match, alias))
        continue;
      std::regex use("\\b" + match[1].str() + "\\b");
      std::vector<std::string> fewer;
      for (size_t k = 0; k < lines.size(); ++k)
        if (k != i)
          fewer.push_back(k < i ? lines[k]
                                : std::regex_replace(lines[k], use, match[2].str()));
      if (attempt(joinLines(fewer), best.dims)) {
        lines = fewer;
        progress = true;
      }
    }
    return progress;
  }

  bool deleteKeywords() {
    bool progress = false;
    for (size_t k = 0;; ++k) {
      auto spans = keywordSpans(best.source);
      if (k >= spans.size())
        return progress;
      std::string text = best.source;
      text.erase(spans[k].first, spans[k].second - spans[k].first);
      if (attempt(text, best.dims)) {
        progress = true;
        --k;
      }
    }
  }

  bool deletePatterns() {
    bool progress = false;
    for (const std::regex &pattern :
         {std::regex("repeat +[A-Za-z0-9_]+ +"), std::regex(" +as +[A-Za-z_][A-Za-z0-9_]*")}) {
      for (size_t k = 0;; ++k) {
        std::vector<std::pair<size_t, size_t>> matches;
        for (auto it = std::sregex_iterator(best.source.begin(), best.source.end(), pattern);
             it != std::sregex_iterator(); ++it)
          matches.push_back({size_t(it->position()), size_t(it->length())});
        if (k >= matches.size())
          break;
        std::string text = best.source;
        text.erase(matches[k].first, matches[k].second);
        if (attempt(text, best.dims)) {
          progress = true;
          --k;
        }
      }
    }
    return progress;
  }

  bool shrinkDims() {
    bool progress = false;
    if (best.dims.size() > 1) {
      for (const DimBinding &binding : best.dims)
        if (binding == best.failure.dims || best.failure.dims.empty()) {
          if (attempt(best.source, {binding}))
            progress = true;
          break;
        }
    }
    if (best.dims.size() != 1)
      return progress;
    for (const auto &[name, size] : DimBinding(best.dims[0])) {
      for (int64_t smaller : {int64_t(1), size / 2, size - 1}) {
        if (smaller < 1 || smaller >= best.dims[0].at(name))
          continue;
        DimBinding binding = best.dims[0];
        binding[name] = smaller;
        if (attempt(best.source, {binding})) {
          progress = true;
          break;
        }
      }
    }
    return progress;
  }

  Reproducer run(const std::string &source, const std::vector<DimBinding> &dims) {
    best.source = source;
    best.dims = dims;
    best.failure = target;
    bool progress = true;
    while (progress && budgetLeft()) {
      progress = shrinkDims();
      progress |= deleteLines();
      progress |= bypassBindings();
      progress |= inlineAliases();
      progress |= deleteKeywords();
      progress |= deletePatterns();
    }
    return best;
  }

private:
  CheckOptions check;
  ReduceOptions options;
  VariantResult target;
  Clock::time_point start;
  Reproducer best;
};

} // namespace

Reproducer reduceFailure(const std::string &source,
                         const std::vector<DimBinding> &dims,
                         const VariantResult &failure, const CheckOptions &check,
                         const ReduceOptions &options) {
  return Reduction(check, options, failure).run(source, dims);
}

std::string writeReproducer(const std::string &dir, const GeneratedModel &model,
                            const VariantResult &original,
                            const Reproducer &reduced) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::string base = dir + "/seed" + std::to_string(model.seed) + "-" +
                     variantName(original.variant) + "-" +
                     outcomeName(original.outcome);
  std::ofstream attn(base + ".attn"), full(base + "-original.attn"),
      info(base + ".txt");
  if (!attn || !full || !info)
    return "";
  attn << reduced.source;
  full << model.source;
  info << "seed: " << model.seed << "\n"
       << "variant: " << variantName(original.variant) << "\n"
       << "outcome: " << outcomeName(original.outcome) << "\n"
       << "description: " << model.description << "\n"
       << "original dims:";
  for (const DimBinding &binding : model.allDims())
    info << " [" << formatDims(binding) << "]";
  info << "\nfailing dims: " << formatDims(original.dims) << "\n"
       << "reduced dims:";
  for (const DimBinding &binding : reduced.dims)
    info << " [" << formatDims(binding) << "]";
  info << "\nreduction: " << reduced.checks << " checks, " << reduced.accepted
       << " changes kept\n"
       << "rerun: attnc-modelgen --seed " << model.seed << " --count 1 --variants "
       << variantName(original.variant) << "\n"
       << "\nmessage (original):\n" << original.message << "\n"
       << "\nmessage (reduced):\n" << reduced.failure.message << "\n";
  return base + ".attn";
}

} // namespace attnc::fuzz
