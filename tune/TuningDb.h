//===- TuningDb.h - the tuning database ---------------------------*- C++ -*-===//
//
// This file declares the tuning database: an SQLite file that keeps every
// trial `attnc tune` measures, committed as each finishes (WAL journal,
// synchronous writes), so a tuning run killed at any point loses at most
// the trial in flight and `--resume` continues it. Compiles read it back
// (attn-apply-tuning, `--tuning-db`): for each scheduled kernel, the
// fastest schedule measured for the same kernel, target and attnc version
// at the nearest tuned sizes.
//
// A trial is keyed by
//   - the kernel's signature (passes/Passes.h, tuningSignature): a hash of
//     its ops, attributes other than schedules, and static types;
//   - the runtime dims it ran with, as `b=1,n=8192` (names sorted);
//   - the target (the Halide target string with its CPU features);
//   - the attnc version that measured it.
// Times are the whole model's (median of repeated runs), as a ratio to the
// default schedules' time measured in the same process just before
// (`default_ms`), so a change in machine speed between trials does not
// pick a winner.
//
// Schema (format 1):
//   attnc_meta(key, value)   format = 1, created_by = attnc <version>
//   trials(id, session, model, signature, op, dims, target, version,
//          schedule, is_default, status, median_ms, min_ms, spread, runs,
//          default_ms, error, message, host, time)
// `status` is ok, wrong (output differs from the default schedule's: a
// bug, never chosen) or failed (did not compile or run; `message` says
// why). Export and import write and read the trials as JSON, so tuned
// configurations can be shipped as text.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNC_TUNE_TUNINGDB_H
#define ATTNC_TUNE_TUNINGDB_H

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace attnc::tune {

/// The version of attnc that tuning results belong to.
const char *attncVersion();

/// Runtime dims as the database spells them: `b=1,n=8192`, names sorted.
std::string formatDims(const std::map<std::string, int64_t> &dims);
/// The inverse of formatDims; nullopt for malformed text.
std::optional<std::map<std::string, int64_t>> parseDims(const std::string &text);

/// One measured schedule of one kernel.
struct Trial {
  int64_t id = 0;
  std::string session;   ///< The tuning run (a resumed run keeps its own).
  std::string model;     ///< `file.attn:model`, for people.
  std::string signature; ///< The kernel's tuningSignature.
  std::string op;        ///< What the kernel is, for people: `attn.dense 512x2176`.
  std::string dims;      ///< formatDims of the runtime dims.
  std::string target;    ///< The Halide target string.
  std::string version;   ///< attncVersion() of the run.
  std::string schedule;  ///< The `#attn.schedule<...>` text.
  bool isDefault = false; ///< attn-tile's schedule for the kernel.
  std::string status = "ok"; ///< ok, wrong or failed.
  double medianMs = 0, minMs = 0;
  double spread = 0;     ///< (max - min) / median of the timed runs.
  int64_t runs = 0;
  double defaultMs = 0;  ///< The default schedules' median just before.
  double error = 0;      ///< Largest relative difference to the default's output.
  std::string message;   ///< Why it failed, or "".
  std::string host;
  std::string time;      ///< UTC, ISO 8601.

  /// Its time as a ratio to the default's (1 when unknown).
  double ratio() const {
    return defaultMs > 0 && medianMs > 0 ? medianMs / defaultMs : 1.0;
  }
};

/// Trials as a JSON array of rows (the rows of exportJson), and back; how
/// the ranks of a distributed tuning run (Team.h) pass them to rank 0.
std::string encodeTrials(const std::vector<Trial> &trials);
/// False with `error` set for text that is not such an array.
bool decodeTrials(const std::string &text, std::vector<Trial> &trials,
                  std::string &error);

/// The best recorded schedule for a kernel, and what it was measured with.
struct Choice {
  Trial trial;
  std::string note; ///< Set when the choice was not for the exact dims.
};

class TuningDb {
public:
  ~TuningDb();
  TuningDb(const TuningDb &) = delete;
  TuningDb &operator=(const TuningDb &) = delete;

  /// Opens the database at `path`; with `create`, makes it (and its
  /// schema) when missing. Null with `error` set for a file that is not an
  /// SQLite database, is damaged, is another program's database or has
  /// another format, or cannot be opened or created.
  static std::unique_ptr<TuningDb> open(const std::string &path, bool create,
                                        std::string &error);

  const std::string &path() const { return file; }

  /// Appends `trial` (its id is assigned) in a transaction of its own.
  bool record(Trial &trial, std::string &error);

  /// Every trial, in id order; those matching each non-empty field of
  /// `filter` (signature, dims, target, version, session).
  std::vector<Trial> trials(const Trial &filter = {}) const;

  /// The fastest ok trial (by ratio to the default, and faster than it) of
  /// `signature` for `target` and `version`, at the dims nearest `dims`
  /// (the same names; nearest in log size, summed over dims); with no
  /// `dims`, the largest tuned sizes. A default-schedule trial wins when
  /// nothing was faster. Nullopt when nothing matches.
  std::optional<Choice> best(const std::string &signature,
                             const std::string &target,
                             const std::string &version,
                             const std::map<std::string, int64_t> &dims) const;

  /// The distinct runtime dims that ok trials for `target` and `version`
  /// were measured at, smallest first (by the sum of their log sizes).
  std::vector<std::map<std::string, int64_t>>
  tunedDims(const std::string &target, const std::string &version) const;

  /// The targets and versions other than `target` and `version` that rows
  /// of this database were measured for (to explain an unused database).
  std::vector<std::string> otherKeys(const std::string &target,
                                     const std::string &version) const;

  /// All trials as a JSON document ({"format": 1, "trials": [...]}).
  std::string exportJson() const;
  /// Adds the trials of a JSON document that exportJson wrote, skipping
  /// those already present (same session, signature, dims, target,
  /// version, schedule and time); `added` counts the new ones.
  bool importJson(const std::string &text, size_t &added, std::string &error);
  /// Adds the trials of another database, as importJson does.
  bool merge(const TuningDb &other, size_t &added, std::string &error);

  /// SQLite's integrity check: "ok" or what it found.
  std::string integrityCheck() const;

private:
  TuningDb() = default;
  bool insertUnlessPresent(Trial &trial, bool &inserted, std::string &error);
  sqlite3 *db = nullptr;
  std::string file;
};

} // namespace attnc::tune

#endif // ATTNC_TUNE_TUNINGDB_H
