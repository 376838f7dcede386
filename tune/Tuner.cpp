//===- Tuner.cpp - attnc tune: search and measure schedules ---------------===//
//
// This file implements the tuner (Tuner.h): the units it tunes (one per
// tuningSignature), their candidates, the timed and checked trials, the
// records in the tuning database, progress, and the final check of the
// model compiled with the database.
//
//===----------------------------------------------------------------------===//
#include "tune/Tuner.h"

#include "codegen/Jit.h"
#include "codegen/Stopwatch.h"
#include "driver/Session.h"
#include "tune/Team.h"
#include "tune/TuningDb.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/Path.h"
#include "mlir/AsmParser/AsmParser.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>
#include <thread>
#include <tuple>
#include <unistd.h>

namespace attnc::tune {

using codegen::TensorMap;
using codegen::outputDifference;
using mlir::attn::ScheduleAttr;
using mlir::attn::ScheduleParams;

namespace {

/// Kernels with loops of their own that share a tuningSignature.
struct Unit {
  std::string signature, label;
  std::vector<ScheduleParams> space; ///< forEachSchedule's points.
  /// The cost model's estimate of each point (estimateScheduleCost).
  std::vector<double> predicted;
  ScheduleParams defaults;           ///< attn-tile's.
  double defaultPredicted = 1;       ///< The estimate of `defaults`.
  double weight = 1;                 ///< Its share of the trials.
  size_t count = 0;                  ///< Ops that carry it.
};

/// What a configuration of the model's schedules measured.
struct Timing {
  double medianMs = 0, minMs = 0, spread = 0;
  int64_t runs = 0;
};

/// How many of the fields of two schedules differ.
int differences(const ScheduleParams &a, const ScheduleParams &b) {
  return (a.strategy != b.strategy) + (a.tileX != b.tileX) +
         (a.tileY != b.tileY) + (a.vector != b.vector) +
         (a.unrollX != b.unrollX) + (a.unrollY != b.unrollY) +
         (a.splitK != b.splitK) + (a.rowBlock != b.rowBlock) +
         (a.stageLhs != b.stageLhs) + (a.packRhs != b.packRhs) +
         (a.parallel != b.parallel) + (a.compute != b.compute) +
         (a.gpuThreadsX != b.gpuThreadsX) + (a.gpuThreadsY != b.gpuThreadsY) +
         (a.shared != b.shared);
}

bool sameParams(const ScheduleParams &a, const ScheduleParams &b) {
  return differences(a, b) == 0;
}

std::string nowUtc() {
  std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return text;
}

std::string hostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0)
    return "unknown";
  return name;
}

std::string duration(double seconds) {
  int64_t s = int64_t(std::max(0.0, seconds) + 0.5);
  if (s >= 3600)
    return std::to_string(s / 3600) + "h" + std::to_string(s % 3600 / 60) + "m";
  if (s >= 60)
    return std::to_string(s / 60) + "m" + std::to_string(s % 60) + "s";
  return std::to_string(s) + "s";
}

/// A schedule as its attribute text (the database's spelling).
std::string scheduleText(mlir::MLIRContext &context, const ScheduleParams &p) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << ScheduleAttr::get(&context, p);
  return os.str();
}

class Tuner {
public:
  Tuner(const TuneOptions &options, Team &team, TuneResult &result,
        llvm::raw_ostream &log)
      : options(options), team(team), result(result), log(log) {
    driver::prepareContext(printContext);
    printContext.loadAllAvailableDialects();
  }

  /// What every rank does first: the model's units, weights and dims
  /// (and, on rank 0, the database). False after an error.
  bool setUp();
  /// Whether every rank compiles for rank 0's target (reported on rank 0).
  bool sameTargets();
  /// Rank 0: the search.
  bool run();
  /// The other ranks: the rounds rank 0 hands out, until it stops them.
  bool serve();
  /// Rank 0: ends the other ranks' serve() (its result is `ok`).
  void stopTeam(bool ok);

private:
  using Config = std::map<std::string, ScheduleParams>;

  /// A candidate to measure: `point` for the unit `signature`, the other
  /// units at `context`, at the runtime dims `dims`.
  struct Job {
    std::string dims, signature, label;
    Config context;
    ScheduleParams point;
    /// A ratio to the configuration without it under this (the best so
    /// far) is measured a second time, and the slower of the two is kept:
    /// one lucky timing on a noisy machine does not make a winner.
    double confirmBelow = 1.0;
  };
  /// A job compiled and ready to time.
  struct Pending {
    Job job;
    codegen::JitModel *base = nullptr;
    std::unique_ptr<codegen::JitModel> candidate;
    std::string error;
  };
  nlohmann::json encodeJob(const Job &job);
  bool decodeJob(const nlohmann::json &value, Job &job, std::string &error);
  /// The inputs of the dims `dimsText` and the model with its default
  /// schedules compiled (`defaults`), unless they are the current dims; a
  /// change of dims clears `reference`.
  bool useDims(const std::string &dimsText, std::string &error);
  /// The default schedules' outputs at the current dims (`reference`): run
  /// once unless already made, or with `timing`, timed (and remade). A run,
  /// so in a round it happens in this rank's measuring turn.
  bool makeReference(Timing *timing, std::string &error);
  /// The model with `context`'s schedules at the current dims, kept loaded
  /// while the context stays: every candidate is timed beside it.
  codegen::JitModel *loadBase(const Config &context, std::string &error);
  Pending compileJob(const Job &job);
  Trial measureJob(Pending &pending);
  /// One round: `jobs[i]` compiled and measured by rank i (rank 0's alone
  /// without MPI); every rank calls it with rank 0's `message`. On rank 0,
  /// the trials in job order.
  std::vector<Trial> round(const std::string &message);
  /// This rank's name in the trials it measures.
  std::string hostLabel() const {
    return team.size() > 1
               ? hostName() + " (rank " + std::to_string(team.rank()) + ")"
               : hostName();
  }

  /// A session on the model with the schedules of `config` (and, with a
  /// database, attn-apply-tuning's); null with `error` set.
  std::unique_ptr<codegen::JitModel>
  compile(const Config &config, std::string &error,
          const std::map<std::string, int64_t> *tunedFor = nullptr);
  /// The model, target and compile cache every session of the run uses.
  driver::SessionOptions baseSessionOptions() const {
    driver::SessionOptions sessionOptions;
    sessionOptions.model = options.model;
    sessionOptions.target = options.target;
    sessionOptions.cache = options.cache;
    return sessionOptions;
  }
  bool discoverUnits();
  bool measure(codegen::JitModel &jit, const TensorMap &inputs,
               TensorMap &outputs, Timing &timing, std::string &error);
  /// Times `base` and `candidate` in alternation (a run of each per round)
  /// so that both see the same machine; `outputs` are the candidate's.
  bool measurePair(codegen::JitModel &base, codegen::JitModel &candidate,
                   TensorMap &outputs, Timing &baseTiming,
                   Timing &candidateTiming, std::string &error);
  bool tuneDims(const std::map<std::string, int64_t> &dims, double deadline);
  bool tuneUnit(Unit &unit, const std::map<std::string, int64_t> &dims,
                double deadline, int64_t trialShare);
  bool record(Trial &trial);
  void progress(const std::string &line, bool final);
  double elapsed() const { return millisSince(start) / 1000; }

  const TuneOptions &options;
  Team &team;
  TuneResult &result;
  llvm::raw_ostream &log;
  SteadyClock::time_point start = SteadyClock::now();
  /// When the last progress line went to a log that is not a terminal
  /// (seconds since start).
  double lastLogLine = 0;

  std::unique_ptr<TuningDb> db;
  std::string session, modelKey, targetKey;
  mlir::MLIRContext printContext; ///< For schedule texts.
  std::vector<Unit> units;
  std::vector<codegen::TensorInfo> weightInfo, inputInfo;
  TensorMap weights;
  /// Trials of the resumed run: session|signature|dims|schedule -> trial.
  std::map<std::string, Trial> replay;

  // The dims set being tuned.
  std::string currentDims;
  TensorMap inputs, reference;
  std::unique_ptr<codegen::JitModel> defaults; ///< All at attn-tile's.
  std::string baseKey; ///< loadBase's dims and context.
  std::unique_ptr<codegen::JitModel> base;
  Config best; ///< The tuned kernels' best schedules so far.
  double longestTrial = 0; ///< Seconds: the longest compile and timing.
};

std::unique_ptr<codegen::JitModel>
Tuner::compile(const Config &config, std::string &error,
               const std::map<std::string, int64_t> *tunedFor) {
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  driver::SessionOptions sessionOptions = baseSessionOptions();
  if (tunedFor) {
    sessionOptions.tuningDb = options.db;
    sessionOptions.tuningDims = *tunedFor;
  }
  driver::Session session(sessionOptions, os);
  std::unique_ptr<codegen::JitModel> jit;
  if (session.loadFile(options.file) &&
      session.runTo(driver::Stage::Scheduled)) {
    session.module().walk([&](mlir::Operation *op) {
      if (!mlir::attn::isTunable(op))
        return;
      auto it = config.find(mlir::attn::tuningSignature(op));
      if (it != config.end())
        op->setAttr(ScheduleAttr::getScheduleAttrName(),
                    ScheduleAttr::get(op->getContext(), it->second));
    });
    jit = session.jit();
  }
  if (!jit)
    error = os.str();
  return jit;
}

bool Tuner::discoverUnits() {
  std::string diagnostics;
  llvm::raw_string_ostream os(diagnostics);
  driver::Session session(baseSessionOptions(), os);
  if (!session.loadFile(options.file) ||
      !session.runTo(driver::Stage::Pipeline)) {
    log << os.str();
    return false;
  }
  targetKey = session.target().halideString();
  modelKey = llvm::sys::path::filename(options.file).str() + ":" +
             session.model().getSymName().str();
  weightInfo = session.pipeline().weights();
  inputInfo = session.pipeline().inputs();
  std::map<std::string, size_t> index;
  session.module().walk([&](mlir::Operation *op) {
    if (!mlir::attn::isTunable(op))
      return;
    std::string signature = mlir::attn::tuningSignature(op);
    auto [it, inserted] = index.emplace(signature, units.size());
    if (!inserted) {
      ++units[it->second].count;
      return;
    }
    Unit unit;
    unit.signature = signature;
    unit.label = mlir::attn::tuningLabel(op);
    unit.defaults = ScheduleAttr::lookup(op).getParams();
    unit.space = mlir::attn::enumerateSchedules(op, session.target());
    unit.count = 1;
    using Kind = mlir::attn::ScheduleShape::Kind;
    mlir::attn::ScheduleShape shape = mlir::attn::getScheduleShape(op);
    Kind kind = shape.kind;
    int64_t threads = options.threads > 0
                          ? options.threads
                          : std::max(1u, std::thread::hardware_concurrency());
    for (const ScheduleParams &point : unit.space)
      unit.predicted.push_back(mlir::attn::estimateScheduleCost(
          shape, point, session.target(), threads));
    unit.defaultPredicted = mlir::attn::estimateScheduleCost(
        shape, unit.defaults, session.target(), threads);
    // Products and attention hold most of a layer's time and the largest
    // spaces; row-wise ops are memory-bound, whatever their schedule.
    unit.weight = kind == Kind::Product || kind == Kind::Attention ? 4 : 1;
    units.push_back(unit);
  });
  // The expensive kinds first; then program order.
  std::stable_sort(units.begin(), units.end(), [](const Unit &a, const Unit &b) {
    return a.weight > b.weight;
  });
  return true;
}

static Timing summarize(std::vector<double> times);

bool Tuner::measure(codegen::JitModel &jit, const TensorMap &runInputs,
                    TensorMap &outputs, Timing &timing, std::string &error) {
  // The weights packed once, as attnc bench runs them: a run copies none.
  codegen::WeightPack pack;
  runtime::Result prepared = jit.prepare(runInputs, weights, outputs);
  if (prepared.ok())
    prepared = jit.packWeights(weights, pack);
  if (!prepared.ok()) {
    error = prepared.message;
    return false;
  }
  std::vector<double> times;
  auto begin = SteadyClock::now();
  for (int i = -2; i < 1000; ++i) {
    auto t0 = SteadyClock::now();
    runtime::Result ran = jit.runPrepared(runInputs, weights, outputs, &pack);
    if (!ran.ok()) {
      error = ran.message;
      return false;
    }
    if (i < 0)
      continue; // warm-up
    times.push_back(millisSince(t0));
    if (int(times.size()) >= options.minRuns &&
        millisSince(begin) >= options.minSeconds * 1000)
      break;
  }
  timing = summarize(times);
  return true;
}

/// The median, minimum and spread of `times` (not empty).
static Timing summarize(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  Timing timing;
  timing.runs = int64_t(times.size());
  timing.medianMs = times[times.size() / 2];
  timing.minMs = times.front();
  timing.spread = (times.back() - times.front()) / timing.medianMs;
  return timing;
}

bool Tuner::measurePair(codegen::JitModel &base, codegen::JitModel &candidate,
                        TensorMap &outputs, Timing &baseTiming,
                        Timing &candidateTiming, std::string &error) {
  TensorMap baseOutputs;
  codegen::WeightPack basePack, candidatePack;
  for (auto [jit, out, pack] :
       {std::tuple{&base, &baseOutputs, &basePack},
        std::tuple{&candidate, &outputs, &candidatePack}}) {
    runtime::Result prepared = jit->prepare(inputs, weights, *out);
    if (prepared.ok())
      prepared = jit->packWeights(weights, *pack);
    if (!prepared.ok()) {
      error = prepared.message;
      return false;
    }
  }
  std::vector<double> baseTimes, candidateTimes;
  auto begin = SteadyClock::now();
  for (int round = -1; round < 1000; ++round) {
    for (auto [jit, out, times, pack] :
         {std::tuple{&base, &baseOutputs, &baseTimes, &basePack},
          std::tuple{&candidate, &outputs, &candidateTimes, &candidatePack}}) {
      auto t0 = SteadyClock::now();
      runtime::Result ran = jit->runPrepared(inputs, weights, *out, pack);
      if (!ran.ok()) {
        error = ran.message;
        return false;
      }
      if (round >= 0) // round -1 warms both up
        times->push_back(millisSince(t0));
    }
    if (int(candidateTimes.size()) >= options.minRuns &&
        millisSince(begin) >= 2 * options.minSeconds * 1000)
      break;
  }
  baseTiming = summarize(baseTimes);
  candidateTiming = summarize(candidateTimes);
  return true;
}

bool Tuner::record(Trial &trial) {
  trial.session = session;
  trial.model = modelKey;
  trial.target = targetKey;
  trial.version = attncVersion();
  if (trial.host.empty())
    trial.host = hostLabel();
  trial.time = nowUtc();
  std::string error;
  if (!db->record(trial, error)) {
    progress("", true);
    log << "error: " << error << "\n";
    return false;
  }
  return true;
}

void Tuner::progress(const std::string &line, bool final) {
  if (options.interactive) {
    log << "\r\033[K" << line;
    if (final && !line.empty())
      log << "\n";
  } else if (!line.empty() &&
             (final || elapsed() - lastLogLine >= options.logEverySeconds)) {
    log << line << "\n";
    if (!final)
      lastLogLine = elapsed();
  }
  log.flush();
}

/// A trial of `unit` with `schedule` at `dims`, not yet measured.
static Trial newTrial(const Unit &unit, const std::string &dims,
                      const std::string &schedule) {
  Trial trial;
  trial.signature = unit.signature;
  trial.op = unit.label;
  trial.dims = dims;
  trial.schedule = schedule;
  return trial;
}

/// Records `timing` in `trial`, compared with `base` (the configuration
/// without it, timed beside it).
static void setTiming(Trial &trial, const Timing &timing, const Timing &base) {
  trial.medianMs = timing.medianMs;
  trial.minMs = timing.minMs;
  trial.spread = timing.spread;
  trial.runs = timing.runs;
  trial.defaultMs = base.medianMs;
}

nlohmann::json Tuner::encodeJob(const Job &job) {
  nlohmann::json context = nlohmann::json::object();
  for (const auto &[signature, params] : job.context)
    context[signature] = scheduleText(printContext, params);
  return {{"dims", job.dims},
          {"signature", job.signature},
          {"label", job.label},
          {"schedule", scheduleText(printContext, job.point)},
          {"confirm_below", job.confirmBelow},
          {"context", context}};
}

bool Tuner::decodeJob(const nlohmann::json &value, Job &job,
                      std::string &error) {
  auto params = [&](const nlohmann::json &text, ScheduleParams &out) {
    auto schedule = text.is_string()
                        ? mlir::dyn_cast_or_null<ScheduleAttr>(
                              mlir::parseAttribute(text.get<std::string>(),
                                                   &printContext))
                        : ScheduleAttr();
    if (!schedule) {
      error = "rank 0 sent a schedule this rank cannot read: " + text.dump();
      return false;
    }
    out = schedule.getParams();
    return true;
  };
  if (!value.is_object() || !value.contains("context") ||
      !value["context"].is_object()) {
    error = "rank 0 sent a job this rank cannot read";
    return false;
  }
  job.dims = value.value("dims", "");
  job.signature = value.value("signature", "");
  job.label = value.value("label", "");
  job.confirmBelow = value.value("confirm_below", 1.0);
  for (const auto &[signature, text] : value["context"].items())
    if (!params(text, job.context[signature]))
      return false;
  return value.contains("schedule") && params(value["schedule"], job.point);
}

bool Tuner::useDims(const std::string &dimsText, std::string &error) {
  if (dimsText == currentDims)
    return true;
  std::optional<std::map<std::string, int64_t>> dims = parseDims(dimsText);
  std::vector<std::vector<int64_t>> shapes;
  runtime::Result bound = dims ? codegen::inputShapes(inputInfo, *dims, shapes)
                               : runtime::Result::error(ATTN_ERROR_ARGUMENT, "bad dims '" +
                                                        dimsText + "'");
  if (!bound.ok()) {
    error = bound.message;
    return false;
  }
  currentDims.clear();
  base.reset();
  baseKey.clear();
  inputs.clear();
  for (size_t i = 0; i < shapes.size(); ++i)
    inputs[inputInfo[i].name] =
        codegen::randomInput(inputInfo[i], shapes[i], options.seed + 1);
  reference.clear();
  defaults = compile({}, error);
  if (!defaults) {
    error = "the model with its default schedules failed at " + dimsText +
            ": " + error;
    return false;
  }
  currentDims = dimsText;
  return true;
}

bool Tuner::makeReference(Timing *timing, std::string &error) {
  if (!timing && !reference.empty())
    return true;
  reference.clear();
  bool ok = false;
  if (timing) {
    ok = measure(*defaults, inputs, reference, *timing, error);
  } else {
    runtime::Result ran = defaults->run(inputs, weights, reference);
    ok = ran.ok();
    if (!ok)
      error = ran.message;
  }
  if (!ok) {
    reference.clear();
    error = "the model with its default schedules failed at " + currentDims +
            ": " + error;
  }
  return ok;
}

codegen::JitModel *Tuner::loadBase(const Config &context, std::string &error) {
  std::string key = currentDims;
  for (const auto &[signature, params] : context)
    key += "|" + signature + "=" + scheduleText(printContext, params);
  if (base && key == baseKey)
    return base.get();
  base = compile(context, error);
  baseKey = base ? key : "";
  return base.get();
}

Tuner::Pending Tuner::compileJob(const Job &job) {
  Pending pending;
  pending.job = job;
  std::string error;
  if (!useDims(job.dims, error)) {
    pending.error = error;
    return pending;
  }
  pending.base = loadBase(job.context, error);
  if (!pending.base) {
    pending.error = "the configuration without the candidate failed: " + error;
    return pending;
  }
  Config config = job.context;
  config[job.signature] = job.point;
  pending.candidate = compile(config, pending.error);
  return pending;
}

Trial Tuner::measureJob(Pending &pending) {
  const Job &job = pending.job;
  Trial trial;
  trial.signature = job.signature;
  trial.op = job.label;
  trial.dims = job.dims;
  trial.schedule = scheduleText(printContext, job.point);
  trial.host = hostLabel();
  TensorMap outputs;
  Timing baseTiming, timing;
  std::string error = pending.error;
  if (!pending.candidate || !makeReference(nullptr, error) ||
      !measurePair(*pending.base, *pending.candidate, outputs, baseTiming,
                   timing, error)) {
    trial.status = "failed";
    trial.message = error.empty() ? "unknown failure" : error;
    return trial;
  }
  setTiming(trial, timing, baseTiming);
  if (trial.ratio() < job.confirmBelow) {
    Timing againBase, again;
    TensorMap ignored;
    if (!measurePair(*pending.base, *pending.candidate, ignored, againBase,
                     again, error)) {
      // Unconfirmed: never a winner.
      trial.status = "failed";
      trial.message = "its second timing failed: " + error;
      return trial;
    }
    if (again.medianMs / againBase.medianMs > trial.ratio()) {
      setTiming(trial, again, againBase);
      trial.runs += timing.runs;
    } else {
      trial.runs += again.runs;
    }
  }
  trial.error = outputDifference(outputs, reference);
  if (!(trial.error <= 1e-4)) {
    trial.status = "wrong";
    trial.message = "outputs differ from the default schedules' by " +
                    std::to_string(trial.error) +
                    " (relative to the largest output)";
  }
  return trial;
}

std::vector<Trial> Tuner::round(const std::string &message) {
  nlohmann::json jobs = nlohmann::json::parse(message, nullptr, false);
  nlohmann::json mine;
  if (jobs.is_array() && size_t(team.rank()) < jobs.size())
    mine = jobs[team.rank()];
  // Every rank compiles at once; the ranks of a host then measure in turn.
  std::optional<Pending> pending;
  if (!mine.is_null()) {
    Job job;
    pending.emplace();
    bool read = false;
    try {
      read = decodeJob(mine, job, pending->error);
    } catch (const nlohmann::json::exception &e) {
      pending->error = std::string("rank 0 sent a job this rank cannot read: ") +
                       e.what();
    }
    if (read)
      pending = compileJob(job);
  }
  std::vector<Trial> measured;
  team.hostTurns([&] {
    if (pending)
      measured.push_back(measureJob(*pending));
  });
  std::vector<Trial> trials;
  for (const std::string &text : team.gather(encodeTrials(measured))) {
    std::vector<Trial> theirs;
    std::string error;
    if (!decodeTrials(text, theirs, error)) {
      Trial lost;
      lost.status = "failed";
      lost.message = "a rank's result could not be read: " + error;
      theirs.push_back(lost);
    }
    trials.insert(trials.end(), theirs.begin(), theirs.end());
  }
  return trials;
}

bool Tuner::serve() {
  while (true) {
    std::string message = team.broadcast("");
    nlohmann::json stop = nlohmann::json::parse(message, nullptr, false);
    if (stop.is_object())
      return stop.value("ok", false);
    round(message);
  }
}

void Tuner::stopTeam(bool ok) {
  if (team.size() > 1)
    team.broadcast(nlohmann::json{{"ok", ok}}.dump());
}

bool Tuner::tuneUnit(Unit &unit, const std::map<std::string, int64_t> &dims,
                     double deadline, int64_t trialShare) {
  std::string dimsText = formatDims(dims);
  // The configuration this kernel is tuned in: the kernels before it at
  // their best, this one at its default. Every candidate is timed in
  // alternation with it.
  Config context = best;
  context[unit.signature] = unit.defaults;
  std::string defaultText = scheduleText(printContext, unit.defaults);
  auto replayed = [&](const std::string &schedule) -> const Trial * {
    auto it = replay.find(session + "|" + unit.signature + "|" + dimsText +
                          "|" + schedule);
    return it == replay.end() ? nullptr : &it->second;
  };
  // The default's own trial: replayed, or measured now.
  double unitBaseline = 0;
  if (const Trial *old = replayed(defaultText)) {
    unitBaseline = old->medianMs;
  } else {
    std::string error;
    codegen::JitModel *defaults = loadBase(context, error);
    TensorMap outputs;
    Timing timing;
    if (!defaults || !measure(*defaults, inputs, outputs, timing, error)) {
      log << "error: the default schedules of " << unit.label
          << " failed: " << error << "\n";
      return false;
    }
    Trial trial = newTrial(unit, dimsText, defaultText);
    trial.isDefault = true;
    setTiming(trial, timing, timing);
    trial.error = outputDifference(outputs, reference);
    if (!record(trial))
      return false;
    unitBaseline = timing.medianMs;
  }
  // Each host's time of the configuration without the candidate, as last
  // reported: a move of over 10% is a change of that machine's speed.
  std::map<std::string, double> baselines{{hostLabel(), unitBaseline}};

  // Candidates: indices into the space; the default's own point is not
  // one. They are ranked by the cost model's estimate (ties in a seeded
  // random order); points it puts at over kPruneAbove times the default's
  // estimate are drawn only after all others.
  constexpr double kPruneAbove = 2.0;
  std::mt19937_64 rng(std::hash<std::string>()(unit.signature + dimsText) ^
                      options.seed);
  std::vector<size_t> candidates;
  std::vector<uint64_t> tiebreak(unit.space.size());
  for (size_t i = 0; i < unit.space.size(); ++i) {
    tiebreak[i] = rng();
    if (!sameParams(unit.space[i], unit.defaults))
      candidates.push_back(i);
  }
  // Without the model (--order random), the seeded order alone.
  auto rank = [&](size_t i) {
    return options.rankByModel ? unit.predicted[i] : 0.0;
  };
  std::sort(candidates.begin(), candidates.end(), [&](size_t a, size_t b) {
    return std::pair(rank(a), tiebreak[a]) < std::pair(rank(b), tiebreak[b]);
  });
  auto pruned = [&](size_t i) {
    return options.rankByModel &&
           unit.predicted[i] > kPruneAbove * unit.defaultPredicted;
  };
  std::set<size_t> done;
  size_t bestIndex = SIZE_MAX;
  double bestRatio = 1.0;
  int64_t trials = 0, wrong = 0, failed = 0;
  // The unmeasured candidate the model ranks first among those `accept`s.
  auto firstRanked = [&](auto accept) -> size_t {
    for (size_t i : candidates)
      if (!done.count(i) && accept(i))
        return i;
    return SIZE_MAX;
  };
  // With a budget, the trials that fit in this kernel's share at the
  // longest round's length so far, a round measuring a trial per rank.
  int64_t fit = trialShare;
  if (options.budgetSeconds > 0)
    fit = std::min<int64_t>(
        fit, int64_t(std::max(0.0, deadline - elapsed()) /
                     std::max(longestTrial, 1e-3)) *
                 team.size());
  bool exhaustive = int64_t(candidates.size()) <= fit;
  int64_t planned = std::min<int64_t>(std::max<int64_t>(fit, 1),
                                      int64_t(candidates.size()));
  auto unitStart = SteadyClock::now();
  auto more = [&] {
    return done.size() < candidates.size() && trials < trialShare;
  };
  // The next candidate, in the model's order. When the space does not fit,
  // trials alternate between the best-ranked neighbour (at most two fields
  // differ) of the fastest point measured so far (the default's until one
  // beats it), which refines, and the best-ranked point anywhere, which
  // explores; pruned points come last.
  auto choose = [&]() -> size_t {
    if (exhaustive)
      return firstRanked([](size_t) { return true; });
    const ScheduleParams &center =
        bestIndex != SIZE_MAX ? unit.space[bestIndex] : unit.defaults;
    auto near = [&](size_t i) {
      return !pruned(i) && differences(unit.space[i], center) <= 2;
    };
    auto kept = [&](size_t i) { return !pruned(i); };
    size_t next = trials % 2 == 0 ? firstRanked(near) : firstRanked(kept);
    if (next == SIZE_MAX)
      next = firstRanked(kept);
    if (next == SIZE_MAX)
      next = firstRanked([](size_t) { return true; });
    return next;
  };
  // A trial counted: the best so far, and the progress line.
  auto account = [&](size_t index, const Trial &trial) {
    wrong += trial.status == "wrong";
    failed += trial.status == "failed";
    if (trial.status == "ok" && trial.ratio() < bestRatio) {
      bestRatio = trial.ratio();
      bestIndex = index;
    }
    std::string line;
    llvm::raw_string_ostream os(line);
    os << "[" << dimsText << "] " << unit.label << ": trial " << trials << "/"
       << planned << ", best " << llvm::format("%.3fx", 1 / bestRatio)
       << ", elapsed " << duration(elapsed());
    if (options.budgetSeconds > 0)
      os << ", budget left " << duration(options.budgetSeconds - elapsed());
    else
      os << ", ETA "
         << duration(millisSince(unitStart) / 1000 / double(trials) *
                     double(std::max<int64_t>(0, planned - trials)));
    progress(os.str(), false);
  };
  // A round starts only when one as long as the longest so far ends
  // before the deadline.
  while (more() &&
         (options.budgetSeconds <= 0 || elapsed() + longestTrial <= deadline)) {
    auto roundStart = SteadyClock::now();
    // A candidate for each rank; trials recorded by the resumed run are
    // replayed, not measured again.
    // The round's picks, one per rank, in order: each measured by a job or
    // replayed. All are counted after the round, in pick order, so a
    // resumed run draws the same picks as the run it resumes (with the
    // same number of ranks).
    std::vector<Job> jobs;
    std::vector<std::pair<size_t, const Trial *>> picks;
    while (more() && int(picks.size()) < team.size()) {
      size_t next = choose();
      done.insert(next);
      ++trials;
      const ScheduleParams &point = unit.space[next];
      const Trial *old = replayed(scheduleText(printContext, point));
      picks.push_back({next, old});
      if (!old)
        jobs.push_back({dimsText, unit.signature, unit.label, context, point,
                        std::min(bestRatio, 1.0)});
    }
    std::vector<Trial> measured;
    if (!jobs.empty()) {
      nlohmann::json message = nlohmann::json::array();
      for (const Job &job : jobs)
        message.push_back(encodeJob(job));
      measured = round(team.broadcast(message.dump()));
    }
    size_t job = 0;
    for (auto [index, old] : picks) {
      if (old) {
        account(index, *old);
        continue;
      }
      if (job >= measured.size() || job >= jobs.size())
        break;
      size_t i = job++;
      Trial &trial = measured[i];
      trial.signature = unit.signature;
      trial.op = unit.label;
      trial.dims = dimsText;
      trial.schedule = scheduleText(printContext, jobs[i].point);
      if (trial.status != "failed") {
        // The configuration without the candidate ran beside it: a change
        // of the machine's speed shows there (and cancels in the ratio).
        auto [it, first] = baselines.emplace(trial.host, trial.defaultMs);
        double change = trial.defaultMs / it->second - 1;
        if (!first && std::fabs(change) > 0.10) {
          progress("", false);
          log << "note: the machine's speed changed";
          if (team.size() > 1)
            log << " on " << trial.host;
          log << ": " << unit.label << "'s default configuration took "
              << llvm::format("%.2f ms, now %.2f ms (%+.0f%%)", it->second,
                              trial.defaultMs, change * 100)
              << "; each candidate is compared with it in the same run\n";
          it->second = trial.defaultMs;
        }
      }
      if (!record(trial))
        return false;
      if (trial.status != "ok") {
        progress("", false);
        log << (trial.status == "wrong" ? "warning: wrong output (a bug in "
                                          "attnc; please report it): "
                                        : "note: failed: ")
            << unit.label << " with " << trial.schedule << ": "
            << llvm::StringRef(trial.message).split('\n').first << "\n";
      }
      account(index, trial);
    }
    if (!jobs.empty())
      longestTrial = std::max(longestTrial, millisSince(roundStart) / 1000);
  }
  if (bestIndex != SIZE_MAX)
    best[unit.signature] = unit.space[bestIndex];
  TunedKernel row;
  row.dims = dimsText;
  row.label = unit.label;
  row.signature = unit.signature;
  row.schedule = scheduleText(
      printContext, bestIndex != SIZE_MAX ? unit.space[bestIndex] : unit.defaults);
  row.defaultMs = unitBaseline;
  row.tunedMs = unitBaseline * bestRatio;
  row.trials = trials;
  row.wrong = wrong;
  row.failed = failed;
  result.kernels.push_back(row);
  std::string line;
  llvm::raw_string_ostream os(line);
  os << "[" << dimsText << "] " << unit.label << " (x" << unit.count << "): "
     << trials << " trials of " << unit.space.size() << " points, "
     << llvm::format("default %.2f ms, best %.2f ms (%.3fx)", row.defaultMs,
                     row.tunedMs, 1 / bestRatio);
  if (wrong || failed)
    os << ", " << wrong << " wrong, " << failed << " failed";
  progress(os.str(), true);
  return true;
}

bool Tuner::tuneDims(const std::map<std::string, int64_t> &dims,
                     double deadline) {
  best.clear();
  // The default schedules' outputs and time.
  auto compileStart = SteadyClock::now();
  std::string error;
  Timing timing;
  if (!useDims(formatDims(dims), error) || !makeReference(&timing, error)) {
    log << "error: " << error << "\n";
    return false;
  }
  longestTrial = millisSince(compileStart) / 1000;
  double weightLeft = 0;
  for (const Unit &unit : units)
    weightLeft += unit.weight;
  int64_t trialsLeft = options.trials > 0 ? options.trials : INT64_MAX / 4;
  for (Unit &unit : units) {
    double share = unit.weight / weightLeft;
    // Time kept for the final check (a compile and a paired timing, as a
    // trial) and for a trial in flight.
    double reserve = 2 * longestTrial;
    double unitDeadline =
        elapsed() + std::max(0.0, deadline - reserve - elapsed()) * share;
    int64_t trialShare =
        options.trials > 0
            ? int64_t(std::llround(double(trialsLeft) * share))
            : INT64_MAX / 4;
    size_t before = result.kernels.size();
    weightLeft -= unit.weight;
    // No trial fits (the budget or --trials spent): the default stays.
    if (trialShare <= 0 || (options.budgetSeconds > 0 &&
                            elapsed() + 2 * longestTrial > unitDeadline)) {
      progress("[" + formatDims(dims) + "] " + unit.label +
                   ": not tuned (no time or trials left)",
               true);
      continue;
    }
    if (!tuneUnit(unit, dims, unitDeadline, trialShare))
      return false;
    if (result.kernels.size() > before)
      trialsLeft -= result.kernels.back().trials;
  }

  // The model as `--tuning-db` compiles it, against the defaults.
  TuneResult::Check check;
  check.dims = formatDims(dims);
  std::unique_ptr<codegen::JitModel> tuned = compile({}, error, &dims);
  TensorMap outputs;
  Timing tunedTiming, defaultTiming;
  if (!tuned || !measurePair(*defaults, *tuned, outputs, defaultTiming,
                             tunedTiming, error)) {
    log << "error: the model compiled with the tuning database failed at "
        << check.dims << ": " << error << "\n";
    return false;
  }
  check.error = outputDifference(outputs, reference);
  check.defaultMs = defaultTiming.medianMs;
  check.tunedMs = tunedTiming.medianMs;
  result.checks.push_back(check);
  std::string line;
  llvm::raw_string_ostream os(line);
  os << "[" << check.dims << "] the model with the database's schedules: "
     << llvm::format("%.2f ms, default %.2f ms (%.3fx), outputs within %.1e",
                     check.tunedMs, check.defaultMs,
                     check.defaultMs / check.tunedMs, check.error);
  progress(os.str(), true);
  if (!(check.error <= 1e-4)) {
    log << "error: the tuned model's outputs differ from the default's by "
        << check.error << "\n";
    return false;
  }
  // Each kernel's choice beat the configuration without it twice; the
  // combination can still lose (kernels interact through the caches) or
  // the machine's noise can exceed the gains.
  if (check.defaultMs / check.tunedMs < 0.97)
    log << "warning: at " << check.dims
        << " the model with the database's schedules ran "
        << llvm::format("%.3fx", check.defaultMs / check.tunedMs)
        << " the speed of the defaults; on a noisy machine, tune again "
           "with a longer --min-time\n";
  return true;
}

bool Tuner::setUp() {
  std::string error;
  if (team.rank() == 0) {
    db = TuningDb::open(options.db, /*create=*/true, error);
    if (!db) {
      log << "error: " << error << "\n";
      return false;
    }
  }
  if (!discoverUnits())
    return false;
  if (units.empty()) {
    log << "error: " << modelKey << " has no scheduled kernels to tune\n";
    return false;
  }
  weights = codegen::randomWeights(weightInfo, options.seed);
  std::set<std::string> runtimeDims;
  for (const codegen::TensorInfo &input : inputInfo)
    for (const std::string &dim : input.dims)
      if (!dim.empty())
        runtimeDims.insert(dim);
  for (const auto &[name, size] : options.dimSets.front())
    if (!runtimeDims.count(name)) {
      log << "error: --dim " << name << ": " << modelKey
          << " has no runtime dim of that name (its runtime dims: ";
      llvm::interleaveComma(runtimeDims, log);
      log << ")\n";
      return false;
    }
  return true;
}

bool Tuner::sameTargets() {
  // Every rank measures for the database's one target: hosts of another
  // kind (other CPU features) would record their times under it.
  std::vector<std::string> targets = team.gather(targetKey);
  bool same = true;
  for (size_t r = 1; r < targets.size() && same; ++r)
    if (targets[r] != targetKey) {
      log << "error: rank " << r << " runs on another kind of machine ("
          << targets[r] << ", rank 0: " << targetKey
          << "); tune each kind of machine in a run of its own\n";
      same = false;
    }
  return team.broadcast(same ? "1" : "0") == "1";
}

bool Tuner::run() {
  // This run's trials go under a session of their own, or the resumed one.
  session = nowUtc() + "-" + std::to_string(getpid());
  if (options.resume) {
    Trial filter;
    filter.target = targetKey;
    filter.version = attncVersion();
    std::string latest;
    for (const Trial &trial : db->trials(filter))
      if (trial.model == modelKey)
        latest = trial.session;
    if (latest.empty()) {
      log << "note: " << options.db << " has no earlier run of " << modelKey
          << " on this target to resume; starting a new one\n";
    } else {
      session = latest;
      Trial mine;
      mine.session = session;
      for (const Trial &trial : db->trials(mine))
        replay.emplace(trial.session + "|" + trial.signature + "|" +
                           trial.dims + "|" + trial.schedule,
                       trial);
      log << "resuming run " << session << " (" << replay.size()
          << " trials recorded)\n";
    }
  }
  log << "tuning " << modelKey << " for " << targetKey;
  if (team.size() > 1)
    log << " on " << team.size() << " ranks (" << team.hosts()
        << (team.hosts() == 1 ? " host" : " hosts") << ")";
  log << ": " << units.size() << " kernels";
  for (const Unit &unit : units)
    log << "; " << unit.label << " (" << unit.space.size() << " points)";
  log << "\n";
  log.flush();

  for (size_t d = 0; d < options.dimSets.size(); ++d) {
    double deadline = options.budgetSeconds <= 0
                          ? INFINITY
                          : elapsed() + (options.budgetSeconds - elapsed()) /
                                            double(options.dimSets.size() - d);
    if (!tuneDims(options.dimSets[d], deadline))
      return false;
  }
  return true;
}

} // namespace

bool tune(const TuneOptions &options, Team &team, TuneResult &result,
          llvm::raw_ostream &log) {
  // The other ranks' notes and errors carry their rank; those of setting up
  // (the same on every rank) only when rank 0 had none.
  std::string workerLog;
  llvm::raw_string_ostream workerStream(workerLog);
  Tuner tuner(options, team, result,
              team.rank() == 0 ? log : static_cast<llvm::raw_ostream &>(workerStream));
  bool ready = tuner.setUp();
  bool everyone = team.all(ready);
  bool rootReady = team.broadcast(ready ? "1" : "0") == "1";
  if (!everyone) {
    if (!ready && rootReady)
      log << "rank " << team.rank() << ": " << workerStream.str();
    return false;
  }
  if (!tuner.sameTargets())
    return false;
  if (team.rank() != 0) {
    bool ok = tuner.serve();
    if (!workerStream.str().empty())
      log << "rank " << team.rank() << ": " << workerStream.str();
    return ok;
  }
  bool ok = tuner.run();
  tuner.stopTeam(ok);
  return ok;
}

} // namespace attnc::tune
