//===- TuningDbTest.cpp - the tuning database -----------------------------===//
//
// The tuning database (tune/TuningDb.h) on its own: the best schedule of a
// kernel (never slower than the default, never one that was ever wrong, at
// the nearest tuned dims), trials that measured an unbounded difference
// survive export and import, imported dims are normalised, and a database
// kept in another journal mode still opens.
//
//===----------------------------------------------------------------------===//
#include "tune/TuningDb.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sqlite3.h>
#include <unistd.h>

namespace attnc::tune {
namespace {

std::vector<std::string> &made() {
  static std::vector<std::string> paths;
  return paths;
}

/// A fresh database file of the running test's own (`name` tells two
/// apart), removed with its journal files if an earlier run left it.
std::string freshPath(const std::string &name = "db") {
  const ::testing::TestInfo *test =
      ::testing::UnitTest::GetInstance()->current_test_info();
  std::string path = ::testing::TempDir() + "/attnc_tuningdb_" +
                     test->name() + "_" + std::to_string(getpid()) + "." +
                     name;
  for (const char *suffix : {"", "-wal", "-shm"})
    std::remove((path + suffix).c_str());
  made().push_back(path);
  return path;
}

/// Removes the files freshPath made once the tests are done.
struct RemoveFiles : ::testing::Environment {
  void TearDown() override {
    for (const std::string &path : made())
      for (const char *suffix : {"", "-wal", "-shm"})
        std::remove((path + suffix).c_str());
  }
};
const auto *removeFiles =
    ::testing::AddGlobalTestEnvironment(new RemoveFiles);

Trial trial(const std::string &dims, const std::string &schedule,
            double ratio, bool isDefault = false,
            const std::string &status = "ok") {
  Trial t;
  t.session = "s";
  t.model = "m";
  t.signature = "sig";
  t.op = "attn.dense";
  t.dims = dims;
  t.target = "target";
  t.version = attncVersion();
  t.schedule = schedule;
  t.isDefault = isDefault;
  t.status = status;
  t.medianMs = ratio;
  t.defaultMs = 1.0;
  t.time = "2026-12-02T00:00:00Z";
  return t;
}

std::unique_ptr<TuningDb> openWith(const std::string &path,
                                   std::vector<Trial> rows) {
  std::string error;
  std::unique_ptr<TuningDb> db = TuningDb::open(path, true, error);
  EXPECT_TRUE(db) << error;
  for (Trial &row : rows)
    EXPECT_TRUE(db->record(row, error)) << error;
  return db;
}

TEST(TuningDbTest, BestIsTheFastestOkScheduleAtTheNearestDims) {
  std::unique_ptr<TuningDb> db = openWith(
      freshPath(), {trial("b=1,n=64", "default", 1.0, true),
                    trial("b=1,n=64", "A", 0.9), trial("b=1,n=64", "B", 1.1),
                    trial("b=1,n=64", "W", 0.5, false, "wrong"),
                    trial("b=1,n=64", "F", 0.0, false, "failed"),
                    trial("b=1,n=4096", "default", 1.0, true),
                    trial("b=1,n=4096", "W", 0.4), // wrong once: never
                    trial("b=1,n=4096", "C", 0.8)});
  auto pick = [&](std::map<std::string, int64_t> dims) {
    std::optional<Choice> c = db->best("sig", "target", attncVersion(), dims);
    return c ? c->trial.schedule : "none";
  };
  EXPECT_EQ(pick({{"b", 1}, {"n", 64}}), "A");
  EXPECT_EQ(pick({{"b", 1}, {"n", 100}}), "A");   // log-nearest: 64
  EXPECT_EQ(pick({{"b", 1}, {"n", 3000}}), "C");  // log-nearest: 4096
  EXPECT_EQ(pick({}), "C");                       // the largest tuned
  EXPECT_EQ(pick({{"n", 64}}), "none");           // other dim names
  EXPECT_FALSE(db->best("sig", "other", attncVersion(), {}));
  EXPECT_FALSE(db->best("sig", "target", "0.0.0", {}));
}

TEST(TuningDbTest, NothingFasterKeepsTheDefault) {
  std::unique_ptr<TuningDb> db =
      openWith(freshPath(), {trial("n=8", "default", 1.0, true),
                             trial("n=8", "slower", 1.2),
                             trial("n=8", "same", 1.0)});
  std::optional<Choice> c = db->best("sig", "target", attncVersion(), {});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->trial.schedule, "default");
}

TEST(TuningDbTest, UnboundedDifferencesSurviveExportAndImport) {
  Trial bad = trial("n=8", "nan", 0.5, false, "wrong");
  bad.error = INFINITY;
  std::unique_ptr<TuningDb> db = openWith(freshPath(), {bad});
  std::string json = db->exportJson();
  std::unique_ptr<TuningDb> copy = openWith(freshPath("copy"), {});
  size_t added = 0;
  std::string error;
  ASSERT_TRUE(copy->importJson(json, added, error)) << error << "\n" << json;
  EXPECT_EQ(added, 1u);
  EXPECT_GT(copy->trials().at(0).error, 1e300);
}

// Trials travel between the ranks of a distributed run as JSON before
// they are recorded: an output that was NaN or of the wrong shape differs
// by infinity, and a failure's message may hold any bytes.
TEST(TuningDbTest, UnrecordedTrialsSurviveEncoding) {
  Trial wrong = trial("n=8", "nan", 0.5, false, "wrong");
  wrong.error = INFINITY;
  wrong.spread = NAN;
  wrong.message = "bad \xff\xfe bytes";
  std::vector<Trial> back;
  std::string error;
  ASSERT_TRUE(decodeTrials(encodeTrials({wrong}), back, error)) << error;
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].status, "wrong");
  EXPECT_TRUE(std::isinf(back[0].error));
  EXPECT_TRUE(std::isnan(back[0].spread));
  EXPECT_EQ(back[0].medianMs, 0.5);
  EXPECT_EQ(back[0].message.substr(0, 4), "bad ");
  EXPECT_FALSE(decodeTrials("{}", back, error));
}

TEST(TuningDbTest, ImportedDimsAreNormalised) {
  std::unique_ptr<TuningDb> db = openWith(freshPath(), {});
  std::string json = R"({"format": 1, "trials": [{"session": "s",
    "model": "m", "signature": "sig", "op": "o", "dims": "n=64,b=1",
    "target": "target", "version": ")" +
                     std::string(attncVersion()) + R"(", "schedule": "A",
    "is_default": false, "status": "ok", "median_ms": 0.5, "min_ms": 0.5,
    "spread": 0, "runs": 5, "default_ms": 1, "error": 0, "message": "",
    "host": "h", "time": "t"}]})";
  size_t added = 0;
  std::string error;
  ASSERT_TRUE(db->importJson(json, added, error)) << error;
  EXPECT_EQ(db->trials().at(0).dims, "b=1,n=64");
  std::optional<Choice> c =
      db->best("sig", "target", attncVersion(), {{"b", 1}, {"n", 64}});
  ASSERT_TRUE(c);
  EXPECT_EQ(c->trial.schedule, "A");
}

TEST(TuningDbTest, DatabaseInAnotherJournalModeOpens) {
  std::string path = freshPath();
  openWith(path, {trial("n=8", "default", 1.0, true)}).reset();
  sqlite3 *raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(raw, "PRAGMA journal_mode = DELETE", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(raw);
  std::string error;
  std::unique_ptr<TuningDb> db = TuningDb::open(path, false, error);
  ASSERT_TRUE(db) << error;
  EXPECT_EQ(db->trials().size(), 1u);
  EXPECT_EQ(db->integrityCheck(), "ok");
}

} // namespace
} // namespace attnc::tune
