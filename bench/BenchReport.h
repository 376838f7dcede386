//===- BenchReport.h - tables and the PyTorch peer --------------*- C++ -*-===//
//
// This file declares the reporting side of attnc-bench: a table printed as
// aligned text or as Markdown, and the PyTorch eager peer
// (bench/torch_peer.py), found by probing Python interpreters and run as a
// subprocess per shape, with OpenBLAS's core-type overrides removed from
// its environment only.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_BENCH_BENCHREPORT_H
#define ATTNC_BENCH_BENCHREPORT_H

#include <cstdint>
#include <string>
#include <vector>

namespace attnc::bench {

/// A table of strings: a header row and data rows.
class Table {
public:
  explicit Table(std::vector<std::string> header) : header(std::move(header)) {}
  void addRow(std::vector<std::string> row) { rows.push_back(std::move(row)); }
  bool empty() const { return rows.empty(); }
  size_t size() const { return rows.size(); }
  /// Replaces the cell at (`row`, `column`) of the data rows.
  void setCell(size_t row, size_t column, std::string text) {
    rows.at(row).at(column) = std::move(text);
  }
  /// Right-aligned columns (the first left-aligned), or a Markdown table.
  std::string render(bool markdown) const;

private:
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

/// The PyTorch peers: bench/torch_peer.py run by a Python that can import
/// torch (eager ops from the spec, torch.compile of them, FLASH-pytorch
/// eager and compiled, scaled_dot_product_attention; whichever that Python
/// has).
class TorchPeer {
public:
  /// Finds an interpreter: `python` when given, else bench/.venv's (made by
  /// bench/make-peer-venv.sh: torch 2 and FLASH-pytorch from PyPI), then
  /// `python3`, then /usr/bin/python3 (Debian's python3-torch installs
  /// there, and a pyenv python3 first on PATH does not see it). `script` is
  /// torch_peer.py. available() is false, with why() saying why, when none
  /// works.
  TorchPeer(std::string script, std::string python, int threads);

  bool available() const { return !python.empty(); }
  const std::string &why() const { return reason; }
  /// "torch 1.13.1 (python /usr/bin/python3)".
  const std::string &description() const { return versionText; }

  /// One implementation's measurement, or why it did not run.
  struct Impl {
    std::string name; ///< spec, spec-compiled, flash-pytorch, sdpa, ...
    double medianMs = 0;
    std::string error; ///< Empty when it ran.
  };
  /// One peer measurement: the fastest implementation's figures, and every
  /// implementation's.
  struct Result {
    bool ok = false;
    double medianMs = 0, minMs = 0;
    int runs = 0;
    std::string impl; ///< The fastest implementation.
    std::vector<Impl> impls;
    std::string error;
  };

  /// Runs every implementation of `model` (flash_causal, flash_noncausal,
  /// gau_causal, mhsa_causal) at sequence length `n`, batch 1: at least
  /// `minRuns` timed runs and `minSeconds` of timed work after warm-up
  /// each.
  Result run(const std::string &model, int64_t n, int minRuns,
             double minSeconds) const;

private:
  std::string script, python, reason, versionText;
  int threads;

  /// Runs the peer with `arguments`; its stdout+stderr in `output`, the
  /// exit status returned.
  int invoke(const std::string &interpreter, const std::string &arguments,
             std::string &output) const;
};

/// Shell-quotes `text` for /bin/sh.
std::string shellQuote(const std::string &text);

/// Runs the shell `command` and keeps what it writes to stdout in
/// `output`; its exit status, or -1 when it did not exit (a signal) or
/// could not start.
int runCapture(const std::string &command, std::string &output);

} // namespace attnc::bench

#endif // ATTNC_BENCH_BENCHREPORT_H
