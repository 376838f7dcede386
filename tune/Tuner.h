//===- Tuner.h - attnc tune: search and measure schedules ---------*- C++ -*-===//
//
// This file declares the tuner behind `attnc tune`. For each requested set
// of runtime dims it tunes the model's scheduled kernels one after another
// (the most expensive kinds first: products and attention, then row-wise
// ops), each with the kernels tuned before it at their best and the rest at
// attn-tile's defaults (coordinate descent):
//
//   - the candidates are points of the kernel's schedule space
//     (forEachSchedule), ranked by the cost model's estimate
//     (estimateScheduleCost, passes/Passes.h; ties in an order seeded by
//     the kernel's signature and the dims, so a resumed run draws the same
//     sequence), points estimated over 2x slower than the default last:
//     all of them in that order when the space fits the kernel's share of
//     trials; otherwise trials alternate between the best-ranked neighbour
//     of the fastest point so far and the best-ranked point anywhere;
//   - a round hands a candidate to each rank of the team (Team.h: one
//     process, or the ranks of mpirun), which compile at once and measure
//     in turn per host; rank 0 alone writes the database;
//   - each candidate is compiled through the compile cache and timed on
//     the whole model (warm-up, then the median of runs lasting at least
//     --min-time); its time is recorded as a ratio to the configuration
//     without it, re-measured every few trials to notice a change in the
//     machine's speed (reported, and the ratio then uses the new time);
//   - a candidate faster than the best so far is timed a second time and
//     keeps the slower of its two ratios, so a lucky timing does not win;
//   - its outputs are compared with the default schedules' outputs: a
//     difference over 1e-4 (relative to the output's largest value) is a
//     `wrong` trial, reported and never chosen;
//   - every trial is committed to the tuning database as it finishes;
//     `resume` replays the trials of the latest run of the same model,
//     target and attnc version, so the search continues where it stopped.
//
// At the end, the whole model compiled with the database (as `--tuning-db`
// compiles it) is checked against the default schedules and timed beside
// them.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TUNE_TUNER_H
#define ATTNC_TUNE_TUNER_H

#include "codegen/CompileCache.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace attnc::tune {

struct TuneOptions {
  std::string file;  ///< The .attn file.
  std::string model; ///< "" = the file's only model.
  std::string target = "host";
  /// The runtime dims to tune for, one map per combination.
  std::vector<std::map<std::string, int64_t>> dimSets;
  std::string db;          ///< The tuning database (created when missing).
  double budgetSeconds = 0; ///< Wall-clock limit of the search; 0 = none.
  int64_t trials = 0;       ///< Candidates per dims set; 0 = none.
  bool resume = false;
  int threads = 0;          ///< Worker threads of the timed runs; 0 = all.
  double minSeconds = 0.3;  ///< Each timing runs at least this long...
  int minRuns = 5;          ///< ...and at least this many times.
  uint64_t seed = 1;
  /// Candidates in the cost model's order (else a seeded random one).
  bool rankByModel = true;
  codegen::CacheOptions cache;
  bool json = false;        ///< The final table as JSON on stdout.
  /// Progress: a bar rewritten in place (a terminal), or a line per kernel
  /// and, while a kernel is tuned, its bar's line at most every
  /// logEverySeconds (0: every trial).
  bool interactive = false;
  double logEverySeconds = 60; ///< --log-every: seconds between log lines.
};

/// One tuned kernel at one dims set (the final table).
struct TunedKernel {
  std::string dims, label, signature, schedule;
  double defaultMs = 0, tunedMs = 0;
  int64_t trials = 0, wrong = 0, failed = 0;
};

struct TuneResult {
  std::vector<TunedKernel> kernels;
  /// The whole model with the database's schedules against the defaults,
  /// per dims set: {dims, default ms, tuned ms}.
  struct Check {
    std::string dims;
    double defaultMs = 0, tunedMs = 0, error = 0;
  };
  std::vector<Check> checks;
};

class Team;

/// Runs the search; progress and notes go to `log`. False after an error
/// (reported on `log` as `error: ...`). Every rank of `team` calls it:
/// rank 0 searches and writes the database (its `result` is the run's),
/// the others measure what it hands them (Team.h).
bool tune(const TuneOptions &options, Team &team, TuneResult &result,
          llvm::raw_ostream &log);

} // namespace attnc::tune

#endif // ATTNC_TUNE_TUNER_H
