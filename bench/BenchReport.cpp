//===- BenchReport.cpp - tables and the PyTorch peer for attnc-bench ------===//
//
// This file implements the table printer and the PyTorch peer runner of
// BenchReport.h. The peer prints one JSON object on its last line of
// standard output; it is parsed with llvm::json.
//
//===----------------------------------------------------------------------===//
#include "bench/BenchReport.h"

#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <unistd.h>
#include <sys/wait.h>

namespace attnc::bench {

//===----------------------------------------------------------------------===//
// Table
//===----------------------------------------------------------------------===//

std::string Table::render(bool markdown) const {
  std::ostringstream os;
  if (markdown) {
    auto line = [&](const std::vector<std::string> &cells) {
      os << "|";
      for (const std::string &cell : cells)
        os << " " << cell << " |";
      os << "\n";
    };
    line(header);
    os << "|";
    for (size_t i = 0; i < header.size(); ++i)
      os << (i == 0 ? "---|" : "---:|");
    os << "\n";
    for (const auto &row : rows)
      line(row);
    return os.str();
  }
  std::vector<size_t> widths(header.size(), 0);
  auto measure = [&](const std::vector<std::string> &cells) {
    for (size_t i = 0; i < cells.size() && i < widths.size(); ++i)
      widths[i] = std::max(widths[i], cells[i].size());
  };
  measure(header);
  for (const auto &row : rows)
    measure(row);
  auto line = [&](const std::vector<std::string> &cells) {
    for (size_t i = 0; i < widths.size(); ++i) {
      std::string cell = i < cells.size() ? cells[i] : "";
      std::string pad(widths[i] - cell.size(), ' ');
      os << (i ? "  " : "") << (i == 0 ? cell + pad : pad + cell);
    }
    os << "\n";
  };
  line(header);
  size_t total = 0;
  for (size_t w : widths)
    total += w + 2;
  os << std::string(total - 2, '-') << "\n";
  for (const auto &row : rows)
    line(row);
  return os.str();
}

//===----------------------------------------------------------------------===//
// TorchPeer
//===----------------------------------------------------------------------===//

std::string shellQuote(const std::string &text) {
  std::string quoted = "'";
  for (char c : text)
    quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

namespace {
/// The last line of `output` that starts with '{', parsed; null if none.
std::optional<llvm::json::Value> lastJson(const std::string &output) {
  std::istringstream in(output);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty() && line[0] == '{')
      last = line;
  if (last.empty())
    return std::nullopt;
  llvm::Expected<llvm::json::Value> value = llvm::json::parse(last);
  if (!value) {
    llvm::consumeError(value.takeError());
    return std::nullopt;
  }
  return std::move(*value);
}

/// The last non-empty line of `output` (for error messages).
std::string lastLine(const std::string &output) {
  std::istringstream in(output);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty())
      last = line;
  return last.empty() ? "no output" : last;
}
} // namespace

int TorchPeer::invoke(const std::string &interpreter,
                      const std::string &arguments, std::string &output) const {
  // OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE hold OpenBLAS to old kernels; the
  // peer gets its library's best ones. Thread counts are pinned.
  std::string t = std::to_string(threads);
  std::string command = "env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "
                        "OMP_NUM_THREADS=" +
                        t + " OPENBLAS_NUM_THREADS=" + t + " " +
                        shellQuote(interpreter) + " " + shellQuote(script) +
                        " " + arguments + " 2>&1";
  return runCapture(command, output);
}

int runCapture(const std::string &command, std::string &output) {
  output.clear();
  FILE *pipe = popen(command.c_str(), "r");
  if (!pipe)
    return -1;
  char buffer[4096];
  size_t got;
  while ((got = fread(buffer, 1, sizeof(buffer), pipe)) > 0)
    output.append(buffer, got);
  int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TorchPeer::TorchPeer(std::string script, std::string pythonArg, int threads)
    : script(std::move(script)), threads(threads) {
  std::vector<std::string> candidates;
  if (!pythonArg.empty()) {
    candidates.push_back(pythonArg);
  } else {
    std::string venv = this->script.substr(0, this->script.rfind('/') + 1) +
                       ".venv/bin/python3";
    if (access(venv.c_str(), X_OK) == 0)
      candidates.push_back(venv);
    candidates.push_back("python3");
    candidates.push_back("/usr/bin/python3");
  }
  for (const std::string &candidate : candidates) {
    std::string output;
    int rc = invoke(candidate, "--probe", output);
    std::optional<llvm::json::Value> json = lastJson(output);
    const llvm::json::Object *object = json ? json->getAsObject() : nullptr;
    std::optional<llvm::StringRef> version =
        object ? object->getString("torch") : std::nullopt;
    if (rc == 0 && version) {
      python = candidate;
      versionText = "torch " + version->str() + " (" + candidate + ")";
      return;
    }
    reason += (reason.empty() ? "" : "; ") + candidate + ": " +
              (object && object->getString("error")
                   ? object->getString("error")->str()
                   : lastLine(output));
  }
}

TorchPeer::Result TorchPeer::run(const std::string &model, int64_t n,
                                 int minRuns, double minSeconds) const {
  Result result;
  if (!available()) {
    result.error = reason;
    return result;
  }
  std::string output;
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%g", minSeconds);
  int rc = invoke(python,
                  "--model " + model + " --n " + std::to_string(n) +
                      " --threads " + std::to_string(threads) + " --min-runs " +
                      std::to_string(minRuns) + " --min-seconds " + seconds,
                  output);
  std::optional<llvm::json::Value> json = lastJson(output);
  const llvm::json::Object *object = json ? json->getAsObject() : nullptr;
  std::optional<double> median =
      object ? object->getNumber("median_ms") : std::nullopt;
  if (rc != 0 || !median) {
    result.error = lastLine(output);
    return result;
  }
  result.ok = true;
  result.medianMs = *median;
  result.minMs = object->getNumber("min_ms").value_or(*median);
  result.runs = int(object->getInteger("runs").value_or(0));
  if (std::optional<llvm::StringRef> impl = object->getString("impl"))
    result.impl = impl->str();
  if (const llvm::json::Array *peers = object->getArray("peers"))
    for (const llvm::json::Value &peer : *peers) {
      const llvm::json::Object *p = peer.getAsObject();
      if (!p || !p->getString("impl"))
        continue;
      Impl impl;
      impl.name = p->getString("impl")->str();
      impl.medianMs = p->getNumber("median_ms").value_or(0);
      if (std::optional<llvm::StringRef> error = p->getString("error"))
        impl.error = error->str();
      result.impls.push_back(impl);
    }
  return result;
}

} // namespace attnc::bench
