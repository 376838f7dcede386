//===- TuneCommand.cpp - attnc tune and attnc db --------------------------===//
//
// This file implements `attnc tune` (argument checks, then the tuner of
// tune/Tuner.h, then its table or JSON) and `attnc db` (show, export,
// import, merge and check a tuning database, tune/TuningDb.h).
//
//===----------------------------------------------------------------------===//
#include "tools/attnc/Commands.h"

#include "codegen/Resources.h"

#include "tune/Team.h"
#include "tune/Tuner.h"
#include "tune/TuningDb.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

namespace attnc::driver {

namespace {

int fail(const std::string &message) {
  llvm::errs() << "error: " << message << "\n";
  return 1;
}

/// `10m`, `90s`, `1h`, or seconds: the seconds, or a negative value.
double parseBudget(const std::string &text) {
  if (text.empty())
    return -1;
  char *end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  std::string unit(end);
  if (end == text.c_str() || !(value > 0) || !std::isfinite(value) ||
      value > 1e7)
    return -1;
  if (unit.empty() || unit == "s")
    return value;
  if (unit == "m")
    return value * 60;
  if (unit == "h")
    return value * 3600;
  return -1;
}

/// The combinations of `--dim n=1024,8192 --dim b=1`; false after an error.
bool dimSets(const std::vector<std::string> &specs,
             std::vector<std::map<std::string, int64_t>> &sets,
             std::string &error) {
  sets = {{}};
  for (const std::string &spec : specs) {
    size_t eq = spec.find('=');
    if (eq == 0 || eq == std::string::npos || eq + 1 == spec.size()) {
      error = "expected --dim NAME=SIZE[,SIZE...], got '" + spec + "'";
      return false;
    }
    std::string name = spec.substr(0, eq);
    std::vector<int64_t> sizes;
    llvm::SmallVector<llvm::StringRef> items;
    llvm::StringRef(spec).drop_front(eq + 1).split(items, ',', -1,
                                                   /*KeepEmpty=*/true);
    for (llvm::StringRef item : items) {
      // Each size as `attnc run --dim` checks it.
      int64_t size = 0;
      runtime::Result parsed =
          codegen::parseDimSize(name + "=" + item.str(), item.str(), size);
      if (!parsed.ok()) {
        error = parsed.message;
        return false;
      }
      sizes.push_back(size);
    }
    std::vector<std::map<std::string, int64_t>> next;
    for (const auto &set : sets) {
      if (set.count(name)) {
        error = "--dim " + name + " is given twice";
        return false;
      }
      for (int64_t size : sizes) {
        auto grown = set;
        grown[name] = size;
        next.push_back(grown);
      }
    }
    sets = next;
  }
  return true;
}
} // namespace

int tuneCommand(const TuneCommandOptions &options) {
  tune::TuneOptions o;
  o.file = options.file;
  o.model = options.model;
  o.target = options.target;
  o.db = options.db;
  o.resume = options.resume;
  o.threads = options.threads;
  o.cache = options.cache;
  o.json = options.json;
  o.seed = options.seed;
  if (options.db.empty())
    return fail("attnc tune needs --db FILE (the tuning database to write)");
  if (options.budget.empty() && options.trials <= 0)
    return fail("give a budget: --budget TIME (10m, 90s, 1h) or --trials N");
  if (!options.budget.empty()) {
    o.budgetSeconds = parseBudget(options.budget);
    if (o.budgetSeconds <= 0)
      return fail("--budget '" + options.budget +
                  "' is not a positive time (10m, 90s, 1h)");
  }
  if (options.order != "model" && options.order != "random")
    return fail("--order '" + options.order + "' is not model or random");
  o.rankByModel = options.order == "model";
  if (options.trials < 0)
    return fail("--trials must be positive");
  o.trials = options.trials;
  if (options.minSeconds < 0)
    return fail("--min-time must not be negative");
  o.minSeconds = options.minSeconds;
  if (!(options.logEverySeconds >= 0)) // NaN too
    return fail("--log-every must not be negative");
  o.logEverySeconds = options.logEverySeconds;
  std::string error;
  if (!dimSets(options.dims, o.dimSets, error))
    return fail(error);
  if (options.threads > 0)
    setenv("HL_NUM_THREADS", std::to_string(options.threads).c_str(), 1);
  // Under mpirun, every rank runs this command; rank 0 alone reports.
  tune::Team team;
  if (!team.join(error))
    return fail(error);
  o.interactive =
      team.rank() == 0 && llvm::sys::Process::StandardErrIsDisplayed();

  tune::TuneResult result;
  if (!tune::tune(o, team, result, llvm::errs()))
    return 1;
  if (team.rank() != 0)
    return 0;
  if (options.json) {
    nlohmann::ordered_json doc;
    doc["db"] = options.db;
    nlohmann::ordered_json kernels = nlohmann::ordered_json::array();
    for (const tune::TunedKernel &k : result.kernels)
      kernels.push_back({{"dims", k.dims},
                         {"kernel", k.label},
                         {"signature", k.signature},
                         {"schedule", k.schedule},
                         {"default_ms", k.defaultMs},
                         {"tuned_ms", k.tunedMs},
                         {"speedup", k.defaultMs / k.tunedMs},
                         {"trials", k.trials},
                         {"wrong", k.wrong},
                         {"failed", k.failed}});
    doc["kernels"] = kernels;
    nlohmann::ordered_json checks = nlohmann::ordered_json::array();
    for (const tune::TuneResult::Check &c : result.checks)
      checks.push_back({{"dims", c.dims},
                        {"default_ms", c.defaultMs},
                        {"tuned_ms", c.tunedMs},
                        {"speedup", c.defaultMs / c.tunedMs},
                        {"max_difference", c.error}});
    doc["model"] = checks;
    llvm::outs() << doc.dump(1) << "\n";
    return 0;
  }
  llvm::outs() << "| dims | kernel | default ms | tuned ms | speedup | "
                  "trials |\n|---|---|---:|---:|---:|---:|\n";
  // Each set of dims: its kernels, then the whole model.
  for (const tune::TuneResult::Check &c : result.checks) {
    for (const tune::TunedKernel &k : result.kernels)
      if (k.dims == c.dims)
        llvm::outs() << "| " << k.dims << " | " << k.label << " | "
                     << llvm::format("%.2f | %.2f | %.3fx | ", k.defaultMs,
                                     k.tunedMs, k.defaultMs / k.tunedMs)
                     << k.trials << " |\n";
    llvm::outs() << "| " << c.dims << " | whole model, --tuning-db | "
                 << llvm::format("%.2f | %.2f | %.3fx | |\n", c.defaultMs,
                                 c.tunedMs, c.defaultMs / c.tunedMs);
  }
  return 0;
}

int dbCommand(const std::vector<std::string> &args,
              const std::string &output) {
  const char *usage = "usage: attnc db show|check FILE, attnc db export FILE "
                      "[-o OUT.json], attnc db import FILE IN.json..., attnc "
                      "db merge FILE OTHER.db...";
  if (args.size() < 2)
    return fail(usage);
  const std::string &action = args[0], &path = args[1];
  bool writes = action == "import" || action == "merge";
  if (!writes && action != "show" && action != "export" && action != "check")
    return fail("unknown action '" + action + "'; " + usage);
  if (writes != (args.size() > 2))
    return fail(usage);
  std::string error;
  std::unique_ptr<tune::TuningDb> db =
      tune::TuningDb::open(path, /*create=*/writes, error);
  if (!db)
    return fail(error);
  if (action == "check") {
    std::string verdict = db->integrityCheck();
    llvm::outs() << path << ": " << verdict << "\n";
    return verdict == "ok" ? 0 : 1;
  }
  if (action == "export") {
    std::string text = db->exportJson();
    if (output.empty() || output == "-") {
      llvm::outs() << text;
      return 0;
    }
    std::error_code ec;
    llvm::raw_fd_ostream out(output, ec);
    if (ec)
      return fail("cannot write '" + output + "': " + ec.message());
    out << text;
    return 0;
  }
  if (action == "show") {
    std::vector<tune::Trial> trials = db->trials();
    llvm::outs() << path << ": " << trials.size() << " trials\n";
    // The best of each kernel, per target, version and dims.
    std::map<std::string, std::pair<tune::Trial, size_t>> best;
    for (const tune::Trial &t : trials) {
      std::string key = t.target + " | attnc " + t.version + " | " + t.dims +
                        " | " + t.op + " | " + t.signature;
      auto [it, inserted] = best.emplace(key, std::make_pair(t, 0));
      ++it->second.second;
      const tune::Trial &held = it->second.first;
      if (t.status == "ok" && (held.status != "ok" || t.ratio() < held.ratio()))
        it->second.first = t;
    }
    for (const auto &[key, entry] : best) {
      const tune::Trial &t = entry.first;
      llvm::outs() << key << " | " << entry.second << " trials | best "
                   << llvm::format("%.3fx", 1 / t.ratio()) << " "
                   << t.schedule << "\n";
    }
    return 0;
  }
  size_t total = 0;
  for (size_t i = 2; i < args.size(); ++i) {
    size_t added = 0;
    if (action == "import") {
      auto buffer = llvm::MemoryBuffer::getFile(args[i]);
      if (!buffer)
        return fail("cannot read '" + args[i] + "': " +
                    buffer.getError().message());
      if (!db->importJson((*buffer)->getBuffer().str(), added, error))
        return fail("'" + args[i] + "': " + error);
    } else {
      std::unique_ptr<tune::TuningDb> other =
          tune::TuningDb::open(args[i], /*create=*/false, error);
      if (!other || !db->merge(*other, added, error))
        return fail(error);
    }
    total += added;
  }
  llvm::outs() << path << ": " << total << " trials added\n";
  return 0;
}

} // namespace attnc::driver
