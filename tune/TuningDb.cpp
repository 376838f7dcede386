//===- TuningDb.cpp - the tuning database ---------------------------------===//
//
// This file implements the tuning database on SQLite (TuningDb.h): opening
// with checks that turn a foreign or damaged file into a message, one
// transaction per trial, the nearest-dims choice, and JSON export/import.
//
//===----------------------------------------------------------------------===//
#include "tune/TuningDb.h"

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace attnc::tune {

namespace {
constexpr int kFormat = 1;

const char *kSchema = R"sql(
CREATE TABLE attnc_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE trials(
  id INTEGER PRIMARY KEY,
  session TEXT NOT NULL,
  model TEXT NOT NULL,
  signature TEXT NOT NULL,
  op TEXT NOT NULL,
  dims TEXT NOT NULL,
  target TEXT NOT NULL,
  version TEXT NOT NULL,
  schedule TEXT NOT NULL,
  is_default INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('ok', 'wrong', 'failed')),
  median_ms REAL NOT NULL,
  min_ms REAL NOT NULL,
  spread REAL NOT NULL,
  runs INTEGER NOT NULL,
  default_ms REAL NOT NULL,
  error REAL NOT NULL,
  message TEXT NOT NULL,
  host TEXT NOT NULL,
  time TEXT NOT NULL);
CREATE INDEX trials_by_key ON trials(signature, target, version, dims);
)sql";

const char *kColumns =
    "id, session, model, signature, op, dims, target, version, schedule, "
    "is_default, status, median_ms, min_ms, spread, runs, default_ms, error, "
    "message, host, time";

/// A prepared statement, finalized when it goes out of scope.
class Statement {
public:
  Statement(sqlite3 *db, const char *sql) : db(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) != SQLITE_OK)
      stmt = nullptr;
  }
  ~Statement() { sqlite3_finalize(stmt); }
  explicit operator bool() const { return stmt != nullptr; }
  void bind(int index, const std::string &text) {
    sqlite3_bind_text(stmt, index, text.c_str(), int(text.size()),
                      SQLITE_TRANSIENT);
  }
  void bind(int index, double value) { sqlite3_bind_double(stmt, index, value); }
  void bind(int index, int64_t value) { sqlite3_bind_int64(stmt, index, value); }
  /// SQLITE_ROW, SQLITE_DONE or an error code.
  int step() { return sqlite3_step(stmt); }
  std::string text(int column) const {
    const unsigned char *value = sqlite3_column_text(stmt, column);
    return value ? reinterpret_cast<const char *>(value) : "";
  }
  double real(int column) const { return sqlite3_column_double(stmt, column); }
  int64_t integer(int column) const { return sqlite3_column_int64(stmt, column); }
  std::string message() const { return sqlite3_errmsg(db); }

private:
  sqlite3 *db;
  sqlite3_stmt *stmt = nullptr;
};

/// Runs `sql` (no results); "" or SQLite's message.
std::string exec(sqlite3 *db, const std::string &sql) {
  char *message = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message) == SQLITE_OK)
    return "";
  std::string text = message ? message : sqlite3_errmsg(db);
  sqlite3_free(message);
  return text;
}

Trial readTrial(const Statement &s) {
  Trial t;
  t.id = s.integer(0);
  t.session = s.text(1);
  t.model = s.text(2);
  t.signature = s.text(3);
  t.op = s.text(4);
  t.dims = s.text(5);
  t.target = s.text(6);
  t.version = s.text(7);
  t.schedule = s.text(8);
  t.isDefault = s.integer(9) != 0;
  t.status = s.text(10);
  t.medianMs = s.real(11);
  t.minMs = s.real(12);
  t.spread = s.real(13);
  t.runs = s.integer(14);
  t.defaultMs = s.real(15);
  t.error = s.real(16);
  t.message = s.text(17);
  t.host = s.text(18);
  t.time = s.text(19);
  return t;
}

/// Whether the file at `path` starts like an SQLite database (an empty
/// file is one SQLite would create).
bool looksLikeSqlite(const std::string &path, bool &exists) {
  std::ifstream in(path, std::ios::binary);
  exists = bool(in);
  if (!in)
    return true;
  char header[16] = {};
  in.read(header, sizeof header);
  if (in.gcount() == 0)
    return true;
  return in.gcount() == 16 && std::memcmp(header, "SQLite format 3", 16) == 0;
}

/// The log-size distance between two dim sets with the same names, or
/// infinity when the names differ.
double distance(const std::map<std::string, int64_t> &a,
                const std::map<std::string, int64_t> &b) {
  if (a.size() != b.size())
    return std::numeric_limits<double>::infinity();
  double total = 0;
  for (const auto &[name, size] : a) {
    auto it = b.find(name);
    if (it == b.end())
      return std::numeric_limits<double>::infinity();
    total += std::fabs(std::log(double(std::max<int64_t>(size, 1))) -
                       std::log(double(std::max<int64_t>(it->second, 1))));
  }
  return total;
}

/// The sum of the log sizes (to pick the largest tuned sizes).
double magnitude(const std::map<std::string, int64_t> &dims) {
  double total = 0;
  for (const auto &entry : dims)
    total += std::log(double(std::max<int64_t>(entry.second, 1)));
  return total;
}
} // namespace

const char *attncVersion() { return ATTNC_VERSION; }

std::string formatDims(const std::map<std::string, int64_t> &dims) {
  std::string text;
  for (const auto &[name, size] : dims)
    text += (text.empty() ? "" : ",") + name + "=" + std::to_string(size);
  return text;
}

std::optional<std::map<std::string, int64_t>> parseDims(const std::string &text) {
  std::map<std::string, int64_t> dims;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    size_t eq = item.find('=');
    if (eq == 0 || eq == std::string::npos || eq + 1 == item.size())
      return std::nullopt;
    char *end = nullptr;
    long long size = std::strtoll(item.c_str() + eq + 1, &end, 10);
    if (*end != '\0' || size < 0)
      return std::nullopt;
    dims[item.substr(0, eq)] = size;
  }
  return dims;
}

TuningDb::~TuningDb() { sqlite3_close(db); }

std::unique_ptr<TuningDb> TuningDb::open(const std::string &path, bool create,
                                         std::string &error) {
  bool exists = false;
  if (!looksLikeSqlite(path, exists)) {
    error = "'" + path + "' is not a tuning database (not an SQLite file)";
    return nullptr;
  }
  if (!exists && !create) {
    error = "no tuning database at '" + path + "'";
    return nullptr;
  }
  std::unique_ptr<TuningDb> result(new TuningDb());
  result->file = path;
  int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0);
  if (sqlite3_open_v2(path.c_str(), &result->db, flags, nullptr) != SQLITE_OK) {
    error = "cannot open the tuning database '" + path + "': " +
            (result->db ? sqlite3_errmsg(result->db) : "out of memory");
    return nullptr;
  }
  sqlite3 *db = result->db;
  sqlite3_busy_timeout(db, 10000);
  auto fail = [&](const std::string &why) {
    error = "cannot use the tuning database '" + path + "': " + why;
    return nullptr;
  };
  // Reading the schema is the first access: a damaged file fails here.
  Statement tables(db, "SELECT name FROM sqlite_master WHERE type = 'table'");
  if (!tables)
    return fail(sqlite3_errmsg(db));
  std::set<std::string> names;
  for (int rc; (rc = tables.step()) != SQLITE_DONE;) {
    if (rc != SQLITE_ROW)
      return fail(tables.message());
    names.insert(tables.text(0));
  }
  if (names.empty()) {
    if (!create)
      return fail("it is empty");
    std::string init = std::string("BEGIN;") + kSchema +
                       "INSERT INTO attnc_meta VALUES ('format', '" +
                       std::to_string(kFormat) +
                       "'), ('created_by', 'attnc " + attncVersion() +
                       "');COMMIT;";
    if (std::string why = exec(db, init); !why.empty())
      return fail(why);
  } else if (!names.count("attnc_meta") || !names.count("trials")) {
    return fail("it is another program's SQLite database (no attnc_meta and "
                "trials tables)");
  } else {
    std::string version;
    {
      Statement format(db,
                       "SELECT value FROM attnc_meta WHERE key = 'format'");
      if (!format || format.step() != SQLITE_ROW)
        return fail("it has no format version");
      version = format.text(0);
    }
    if (version != std::to_string(kFormat))
      return fail("its format is " + version + "; this attnc reads " +
                  std::to_string(kFormat));
  }
  {
    Statement wal(db, "PRAGMA journal_mode = WAL");
    if (!wal || wal.step() != SQLITE_ROW)
      return fail(sqlite3_errmsg(db));
    if (wal.text(0) != "wal")
      return fail("it cannot use a write-ahead log (journal mode " +
                  wal.text(0) + ")");
  }
  // Each committed trial survives a killed process (WAL) and a crash of the
  // machine (synchronous writes).
  if (std::string why = exec(db, "PRAGMA synchronous = FULL"); !why.empty())
    return fail(why);
  return result;
}

bool TuningDb::record(Trial &trial, std::string &error) {
  // SQLite keeps NaN as NULL and JSON has no infinity: an unbounded output
  // difference (a NaN or a changed shape) is stored as the largest double.
  for (double *value : {&trial.medianMs, &trial.minMs, &trial.spread,
                        &trial.defaultMs, &trial.error})
    if (!std::isfinite(*value))
      *value = std::numeric_limits<double>::max();
  std::string sql = std::string("INSERT INTO trials(") +
                    (kColumns + 4) + // without id
                    ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, "
                    "?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)";
  Statement insert(db, sql.c_str());
  if (!insert) {
    error = sqlite3_errmsg(db);
    return false;
  }
  insert.bind(1, trial.session);
  insert.bind(2, trial.model);
  insert.bind(3, trial.signature);
  insert.bind(4, trial.op);
  insert.bind(5, trial.dims);
  insert.bind(6, trial.target);
  insert.bind(7, trial.version);
  insert.bind(8, trial.schedule);
  insert.bind(9, int64_t(trial.isDefault));
  insert.bind(10, trial.status);
  insert.bind(11, trial.medianMs);
  insert.bind(12, trial.minMs);
  insert.bind(13, trial.spread);
  insert.bind(14, trial.runs);
  insert.bind(15, trial.defaultMs);
  insert.bind(16, trial.error);
  insert.bind(17, trial.message);
  insert.bind(18, trial.host);
  insert.bind(19, trial.time);
  if (insert.step() != SQLITE_DONE) {
    error = "cannot record a trial in '" + file + "': " + insert.message();
    return false;
  }
  trial.id = sqlite3_last_insert_rowid(db);
  return true;
}

std::vector<Trial> TuningDb::trials(const Trial &filter) const {
  std::string sql = std::string("SELECT ") + kColumns +
                    " FROM trials WHERE (?1 = '' OR signature = ?1) AND "
                    "(?2 = '' OR dims = ?2) AND (?3 = '' OR target = ?3) AND "
                    "(?4 = '' OR version = ?4) AND (?5 = '' OR session = ?5) "
                    "ORDER BY id";
  Statement select(db, sql.c_str());
  std::vector<Trial> result;
  if (!select)
    return result;
  select.bind(1, filter.signature);
  select.bind(2, filter.dims);
  select.bind(3, filter.target);
  select.bind(4, filter.version);
  select.bind(5, filter.session);
  while (select.step() == SQLITE_ROW)
    result.push_back(readTrial(select));
  return result;
}

std::optional<Choice>
TuningDb::best(const std::string &signature, const std::string &target,
               const std::string &version,
               const std::map<std::string, int64_t> &dims) const {
  Trial filter;
  filter.signature = signature;
  filter.target = target;
  filter.version = version;
  std::vector<Trial> rows = trials(filter);
  // The tuned sizes to use: nearest to `dims`, or the largest.
  std::optional<std::map<std::string, int64_t>> chosen;
  double chosenScore = std::numeric_limits<double>::infinity();
  for (const Trial &row : rows) {
    if (row.status != "ok")
      continue;
    std::optional<std::map<std::string, int64_t>> tuned = parseDims(row.dims);
    if (!tuned)
      continue;
    double score = dims.empty() ? -magnitude(*tuned) : distance(*tuned, dims);
    if (score < chosenScore) {
      chosenScore = score;
      chosen = tuned;
    }
  }
  if (!chosen)
    return std::nullopt;
  std::string chosenText = formatDims(*chosen);
  // A schedule that once computed a wrong output is never chosen.
  std::set<std::string> wrong;
  for (const Trial &row : rows)
    if (row.status == "wrong")
      wrong.insert(row.schedule);
  const Trial *winner = nullptr;
  for (const Trial &row : rows) {
    if (wrong.count(row.schedule))
      continue;
    // Never a schedule that was not faster than the default's.
    if (row.status != "ok" || row.dims != chosenText ||
        (!row.isDefault && row.ratio() >= 1.0))
      continue;
    if (!winner || row.ratio() < winner->ratio() ||
        (row.ratio() == winner->ratio() && row.isDefault))
      winner = &row;
  }
  if (!winner)
    return std::nullopt;
  Choice choice{*winner, ""};
  if (!dims.empty() && chosenText != formatDims(dims))
    choice.note = "tuned at " + chosenText + ", the nearest to " +
                  formatDims(dims);
  return choice;
}

std::vector<std::map<std::string, int64_t>>
TuningDb::tunedDims(const std::string &target,
                    const std::string &version) const {
  Trial filter;
  filter.target = target;
  filter.version = version;
  std::set<std::string> seen;
  std::vector<std::map<std::string, int64_t>> result;
  for (const Trial &row : trials(filter)) {
    if (row.status != "ok" || !seen.insert(row.dims).second)
      continue;
    if (std::optional<std::map<std::string, int64_t>> dims = parseDims(row.dims))
      result.push_back(*dims);
  }
  std::stable_sort(result.begin(), result.end(),
                   [](const auto &a, const auto &b) {
                     return magnitude(a) < magnitude(b);
                   });
  return result;
}

std::vector<std::string> TuningDb::otherKeys(const std::string &target,
                                             const std::string &version) const {
  Statement select(db, "SELECT DISTINCT target, version FROM trials WHERE "
                       "target != ?1 OR version != ?2 ORDER BY 1, 2");
  std::vector<std::string> keys;
  if (!select)
    return keys;
  select.bind(1, target);
  select.bind(2, version);
  while (select.step() == SQLITE_ROW)
    keys.push_back(select.text(0) + " (attnc " + select.text(1) + ")");
  return keys;
}

namespace {

/// A number as JSON: JSON has no infinity or NaN (an output that was NaN or
/// of the wrong shape differs by infinity), so those are the strings "inf",
/// "-inf" and "nan".
nlohmann::ordered_json numberJson(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  return value;
}

nlohmann::ordered_json trialJson(const Trial &t) {
  nlohmann::ordered_json row;
  row["session"] = t.session;
  row["model"] = t.model;
  row["signature"] = t.signature;
  row["op"] = t.op;
  row["dims"] = t.dims;
  row["target"] = t.target;
  row["version"] = t.version;
  row["schedule"] = t.schedule;
  row["is_default"] = t.isDefault;
  row["status"] = t.status;
  row["median_ms"] = numberJson(t.medianMs);
  row["min_ms"] = numberJson(t.minMs);
  row["spread"] = numberJson(t.spread);
  row["runs"] = t.runs;
  row["default_ms"] = numberJson(t.defaultMs);
  row["error"] = numberJson(t.error);
  row["message"] = t.message;
  row["host"] = t.host;
  row["time"] = t.time;
  return row;
}

/// The trials of a JSON array of rows as trialJson writes them; false with
/// `error` naming the first bad row.
bool parseTrials(const nlohmann::json &array, std::vector<Trial> &rows,
                 std::string &error) {
  size_t index = 0;
  for (const nlohmann::json &row : array) {
    std::string where = "trial " + std::to_string(index++);
    if (!row.is_object()) {
      error = where + " is not an object";
      return false;
    }
    Trial t;
    auto text = [&](const char *key, std::string &out) {
      if (!row.contains(key) || !row[key].is_string()) {
        error = where + ": \"" + key + "\" is missing or not a string";
        return false;
      }
      out = row[key].get<std::string>();
      return true;
    };
    auto number = [&](const char *key, double &out) {
      if (row.contains(key) && row[key].is_number()) {
        out = row[key].get<double>();
        return true;
      }
      if (row.contains(key) && row[key].is_string()) {
        const std::string &text = row[key].get_ref<const std::string &>();
        if (text == "inf" || text == "-inf" || text == "nan") {
          out = text == "nan" ? NAN : text == "inf" ? INFINITY : -INFINITY;
          return true;
        }
      }
      error = where + ": \"" + key + "\" is missing or not a number";
      return false;
    };
    double runs = 0;
    if (!text("session", t.session) || !text("model", t.model) ||
        !text("signature", t.signature) || !text("op", t.op) ||
        !text("dims", t.dims) || !text("target", t.target) ||
        !text("version", t.version) || !text("schedule", t.schedule) ||
        !text("status", t.status) || !text("message", t.message) ||
        !text("host", t.host) || !text("time", t.time) ||
        !number("median_ms", t.medianMs) || !number("min_ms", t.minMs) ||
        !number("spread", t.spread) || !number("runs", runs) ||
        !number("default_ms", t.defaultMs) || !number("error", t.error))
      return false;
    if (!row.contains("is_default") || !row["is_default"].is_boolean()) {
      error = where + ": \"is_default\" is missing or not a boolean";
      return false;
    }
    t.isDefault = row["is_default"].get<bool>();
    t.runs = int64_t(runs);
    if (t.status != "ok" && t.status != "wrong" && t.status != "failed") {
      error = where + ": status '" + t.status + "' is not ok, wrong or failed";
      return false;
    }
    std::optional<std::map<std::string, int64_t>> parsed = parseDims(t.dims);
    if (!parsed) {
      error = where + ": dims '" + t.dims + "' are not name=size,...";
      return false;
    }
    t.dims = formatDims(*parsed); // names sorted, as the tuner writes them
    rows.push_back(t);
  }
  return true;
}

} // namespace

std::string encodeTrials(const std::vector<Trial> &trials) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const Trial &t : trials)
    rows.push_back(trialJson(t));
  return rows.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

bool decodeTrials(const std::string &text, std::vector<Trial> &trials,
                  std::string &error) {
  nlohmann::json rows = nlohmann::json::parse(text, nullptr, false);
  if (rows.is_discarded() || !rows.is_array()) {
    error = "not a JSON array of trials";
    return false;
  }
  return parseTrials(rows, trials, error);
}

std::string TuningDb::exportJson() const {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const Trial &t : trials())
    rows.push_back(trialJson(t));
  nlohmann::ordered_json doc;
  doc["format"] = kFormat;
  doc["trials"] = rows;
  return doc.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) +
         "\n";
}

bool TuningDb::insertUnlessPresent(Trial &trial, bool &inserted,
                                   std::string &error) {
  inserted = false;
  Statement find(db, "SELECT 1 FROM trials WHERE session = ?1 AND "
                     "signature = ?2 AND dims = ?3 AND target = ?4 AND "
                     "version = ?5 AND schedule = ?6 AND time = ?7");
  if (!find) {
    error = sqlite3_errmsg(db);
    return false;
  }
  find.bind(1, trial.session);
  find.bind(2, trial.signature);
  find.bind(3, trial.dims);
  find.bind(4, trial.target);
  find.bind(5, trial.version);
  find.bind(6, trial.schedule);
  find.bind(7, trial.time);
  if (find.step() == SQLITE_ROW)
    return true;
  inserted = true;
  return record(trial, error);
}

bool TuningDb::importJson(const std::string &text, size_t &added,
                          std::string &error) {
  added = 0;
  nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) {
    error = "not a JSON object";
    return false;
  }
  if (!doc.contains("format") || doc["format"] != kFormat) {
    error = "not a tuning export of format " + std::to_string(kFormat);
    return false;
  }
  if (!doc.contains("trials") || !doc["trials"].is_array()) {
    error = "no \"trials\" array";
    return false;
  }
  std::vector<Trial> rows;
  if (!parseTrials(doc["trials"], rows, error))
    return false;
  // The write lock at once: a tuner writing the same file makes this wait
  // (the busy timeout) rather than fail.
  if (std::string why = exec(db, "BEGIN IMMEDIATE"); !why.empty()) {
    error = why;
    return false;
  }
  for (Trial &t : rows) {
    bool inserted = false;
    if (!insertUnlessPresent(t, inserted, error)) {
      exec(db, "ROLLBACK");
      return false;
    }
    added += inserted;
  }
  if (std::string why = exec(db, "COMMIT"); !why.empty()) {
    exec(db, "ROLLBACK");
    error = why;
    return false;
  }
  return true;
}

bool TuningDb::merge(const TuningDb &other, size_t &added, std::string &error) {
  return importJson(other.exportJson(), added, error);
}

std::string TuningDb::integrityCheck() const {
  Statement check(db, "PRAGMA integrity_check");
  if (!check)
    return sqlite3_errmsg(db);
  std::string result;
  while (check.step() == SQLITE_ROW)
    result += (result.empty() ? "" : "; ") + check.text(0);
  return result.empty() ? "no result" : result;
}

} // namespace attnc::tune
