// Store: opening (WAL, migrations, refusal of newer schemas, garbage and corrupt files), the
// results cache and its budget rule, the measurement log and model checkpoints.
#include "storage/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace mltune::storage {
namespace {

namespace fs = std::filesystem;

// A fresh folder under the test temp dir, removed afterwards.
class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           (std::string("mltune_storage_") + info->name() + "_" + std::to_string(getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string StorePath() const { return (dir_ / "store.db").string(); }

  std::unique_ptr<Store> MustOpen(const std::string& path) {
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  fs::path dir_;
};

// One text value from a query on a connection of the test's own (not the Store's).
std::string RawQuery(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  std::string out = "<error>";
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK) {
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW) {
      const unsigned char* text = sqlite3_column_text(stmt, 0);
      out = text != nullptr ? reinterpret_cast<const char*>(text) : "";
    } else if (rc == SQLITE_DONE) {
      out = "";
    }
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

void RawExec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr),
            SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
}

std::string ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

CacheKey Key(const std::string& fingerprint = "fp1", const std::string& task = "pass-order",
             const std::string& target = "cpu", const std::string& version = "1") {
  return {fingerprint, task, target, version};
}

ResultRecord Result(double tuned, int64_t budget, const std::string& strategy = "beam",
                    const CacheKey& key = Key()) {
  ResultRecord r;
  r.key = key;
  r.baseline_score = 100;
  r.tuned_score = tuned;
  r.budget_steps = budget;
  r.strategy = strategy;
  r.artifacts = {{"pass_sequence", strategy + ":" + std::to_string(tuned)}};
  r.provenance.worker = "w1";
  r.provenance.mltune_version = "0.1.0";
  return r;
}

ResultRecord MustLookup(Store& store, const CacheKey& key) {
  absl::StatusOr<std::optional<ResultRecord>> r = store.LookupResult(key);
  EXPECT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r.ok() && r->has_value()) << key.ToString();
  return r.ok() && r->has_value() ? **r : ResultRecord{};
}

// --- Opening and migrations.

TEST_F(StoreTest, MustExistRefusesAMissingStoreAndCreatesNothing) {
  const std::string path = (dir_ / "missing" / "store.db").string();
  StoreOptions options;
  options.must_exist = true;
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path, options);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(store.status().message().find("no such store file"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ / "missing"));
  // Once it exists, it opens.
  ASSERT_NE(MustOpen(path), nullptr);
  EXPECT_TRUE(Store::Open(path, options).ok());
}

TEST_F(StoreTest, OpenCreatesFoldersAndAWalDatabaseAtTheCurrentSchema) {
  const std::string path = (dir_ / "a" / "b" / "store.db").string();
  std::unique_ptr<Store> store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(fs::exists(path));
  EXPECT_EQ(store->path(), fs::absolute(path).string());
  EXPECT_EQ(RawQuery(path, "PRAGMA journal_mode"), "wal");
  EXPECT_EQ(RawQuery(path, "PRAGMA user_version"), std::to_string(Store::kSchemaVersion));
  absl::StatusOr<int> version = store->SchemaVersion();
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_EQ(*version, Store::kSchemaVersion);
  EXPECT_TRUE(store->CheckIntegrity().ok());
  // Every table is STRICT.
  EXPECT_EQ(RawQuery(path,
                     "SELECT count(*) FROM pragma_table_list WHERE schema = 'main' AND "
                     "name NOT LIKE 'sqlite_%' AND strict = 0"),
            "0");
  EXPECT_EQ(RawQuery(path,
                     "SELECT group_concat(name, ',') FROM (SELECT name FROM sqlite_schema "
                     "WHERE type = 'table' ORDER BY name)"),
            "jobs,kernel_graphs,measurements,model_trainings,models,results,results_artifacts");
}

TEST_F(StoreTest, ReopeningIsANoOpAndKeepsTheData) {
  {
    std::unique_ptr<Store> store = MustOpen(StorePath());
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->PutResult(Result(5, 10)).ok());
  }
  const std::string schema = RawQuery(StorePath(), "SELECT group_concat(sql) FROM sqlite_schema");
  for (int i = 0; i < 2; ++i) {
    std::unique_ptr<Store> store = MustOpen(StorePath());
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(MustLookup(*store, Key()).tuned_score, 5);
  }
  EXPECT_EQ(RawQuery(StorePath(), "PRAGMA user_version"), std::to_string(Store::kSchemaVersion));
  EXPECT_EQ(RawQuery(StorePath(), "SELECT group_concat(sql) FROM sqlite_schema"), schema);
}

TEST_F(StoreTest, RefusesAStoreWithANewerSchema) {
  fs::create_directories(dir_);
  RawExec(StorePath(), "CREATE TABLE future (x INTEGER); PRAGMA user_version = 99;");
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(StorePath());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string message(store.status().message());
  EXPECT_NE(message.find("schema version 99"), std::string::npos) << message;
  EXPECT_NE(message.find("newer than this mltune"), std::string::npos) << message;
  EXPECT_NE(message.find(StorePath()), std::string::npos) << message;
  // Untouched.
  EXPECT_EQ(RawQuery(StorePath(), "PRAGMA user_version"), "99");
  EXPECT_EQ(RawQuery(StorePath(), "SELECT count(*) FROM sqlite_schema"), "1");
}

TEST_F(StoreTest, AVersion1StoreMigratesKeepingItsResults) {
  // A results row as schema version 1 wrote it (no original_score column).
  fs::create_directories(dir_);
  RawExec(StorePath(),
          "CREATE TABLE results (id INTEGER PRIMARY KEY, fingerprint TEXT NOT NULL, task TEXT NOT "
          "NULL, target TEXT NOT NULL, search_version TEXT NOT NULL, baseline_score REAL NOT NULL, "
          "tuned_score REAL NOT NULL, budget_steps INTEGER NOT NULL, strategy TEXT NOT NULL, "
          "worker TEXT NOT NULL, mltune_version TEXT NOT NULL, created_ms INTEGER NOT NULL, "
          "updated_ms INTEGER NOT NULL, hit_count INTEGER NOT NULL DEFAULT 0, UNIQUE "
          "(fingerprint, task, target, search_version)) STRICT;"
          "CREATE TABLE results_artifacts (result_id INTEGER NOT NULL, name TEXT NOT NULL, data "
          "BLOB NOT NULL, PRIMARY KEY (result_id, name)) STRICT;"
          "CREATE TABLE measurements (id INTEGER PRIMARY KEY, graph_key TEXT NOT NULL, task TEXT "
          "NOT NULL, target TEXT NOT NULL, configuration TEXT NOT NULL, value REAL NOT NULL, "
          "worker TEXT NOT NULL, time_ms INTEGER NOT NULL) STRICT;"
          "CREATE TABLE jobs (id TEXT PRIMARY KEY, state TEXT NOT NULL, fingerprint TEXT NOT NULL, "
          "task TEXT NOT NULL, target TEXT NOT NULL, search_version TEXT NOT NULL, budget_steps "
          "INTEGER NOT NULL, strategy TEXT NOT NULL, request BLOB NOT NULL, progress REAL NOT NULL "
          "DEFAULT 0, best_score REAL, error TEXT NOT NULL DEFAULT '', attempts INTEGER NOT NULL "
          "DEFAULT 0, created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL, started_ms INTEGER "
          "NOT NULL DEFAULT 0, finished_ms INTEGER NOT NULL DEFAULT 0) STRICT;"
          "CREATE TABLE models (name TEXT NOT NULL, version INTEGER NOT NULL, data BLOB NOT NULL, "
          "metadata_json TEXT NOT NULL, created_ms INTEGER NOT NULL, PRIMARY KEY (name, version)) "
          "STRICT;"
          "INSERT INTO results VALUES (1, 'fp1', 'pass-order', 'cpu', '1', 100, 7, 50, 'beam', "
          "'w1', '0.1.0', 1, 1, 3);"
          "PRAGMA user_version = 1;");
  std::unique_ptr<Store> store = MustOpen(StorePath());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(RawQuery(StorePath(), "PRAGMA user_version"), std::to_string(Store::kSchemaVersion));
  ResultRecord old = MustLookup(*store, Key());
  EXPECT_EQ(old.tuned_score, 7);
  EXPECT_EQ(old.hit_count, 3);
  EXPECT_FALSE(old.original_score.has_value());
  // A better result written now keeps its original score.
  ResultRecord better = Result(5, 60);
  better.original_score = 140;
  ASSERT_TRUE(store->PutResult(better).ok());
  EXPECT_EQ(MustLookup(*store, Key()).original_score, std::optional<double>(140));
  // Later migrations ran too: the kernel graph table is there and empty.
  EXPECT_EQ(store->CountKernelGraphs().value(), 0);
}

TEST_F(StoreTest, AGarbageFileIsAClearErrorAndStaysUntouched) {
  fs::create_directories(dir_);
  std::string garbage(64 * 1024, '\0');
  std::mt19937 rng(42);
  for (char& c : garbage) c = static_cast<char>(rng());
  std::ofstream(StorePath(), std::ios::binary) << garbage;

  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(StorePath());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
  const std::string message(store.status().message());
  EXPECT_NE(message.find(StorePath()), std::string::npos) << message;
  EXPECT_NE(message.find("not a database"), std::string::npos) << message;
  EXPECT_EQ(ReadBytes(StorePath()), garbage);
}

TEST_F(StoreTest, ACorruptPageIsReportedOnOpen) {
  {
    std::unique_ptr<Store> store = MustOpen(StorePath());
    ASSERT_NE(store, nullptr);
    std::vector<MeasurementRecord> batch(5000);
    for (size_t i = 0; i < batch.size(); ++i) {
      batch[i] = {0,
                  "graph" + std::to_string(i % 7),
                  "pass-order",
                  "cpu",
                  std::string(40, 'x') + std::to_string(i),
                  1.0 * i,
                  "w",
                  1};
    }
    ASSERT_TRUE(store->AppendMeasurements(batch).ok());
  }  // the last connection checkpoints the WAL into the file
  ASSERT_FALSE(fs::exists(StorePath() + "-wal"));
  const uintmax_t size = fs::file_size(StorePath());
  ASSERT_GT(size, 40u * 4096);
  {
    // Scribble over pages 10..19 (table and index b-tree pages).
    std::fstream f(StorePath(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(9 * 4096);
    const std::string junk(10 * 4096, '\xa5');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(StorePath());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
  EXPECT_NE(store.status().message().find(StorePath()), std::string::npos) << store.status();
}

TEST_F(StoreTest, ADirectoryOrAnEmptyPathIsRefused) {
  fs::create_directories(dir_);
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(dir_.string());
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(store.status().message().find("is a directory"), std::string::npos);
  EXPECT_EQ(Store::Open("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(StoreTest, InMemoryStoreWorks) {
  std::unique_ptr<Store> store = MustOpen(":memory:");
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutResult(Result(3, 7)).ok());
  EXPECT_EQ(MustLookup(*store, Key()).tuned_score, 3);
  EXPECT_EQ(*store->SchemaVersion(), Store::kSchemaVersion);
  EXPECT_TRUE(store->CheckIntegrity().ok());
}

// --- Results cache.

TEST(CacheKeyTest, ToStringJoinsTheFourFields) {
  EXPECT_EQ(Key("abc", "pass-order", "cpu", "2").ToString(), "abc/pass-order/cpu/2");
}

TEST_F(StoreTest, ResultRoundTripsWithBinaryArtifacts) {
  std::unique_ptr<Store> store = MustOpen(StorePath());
  ASSERT_NE(store, nullptr);
  ResultRecord r = Result(42.5, 1000);
  std::string all_bytes;
  for (int b = 0; b < 256; ++b) all_bytes.push_back(static_cast<char>(b));
  r.artifacts["optimized_hlo"] = std::string("HloModule m\0\0 after NUL", 23);
  r.artifacts["binary"] = all_bytes + all_bytes;
  r.artifacts["empty"] = "";
  absl::StatusOr<PutOutcome> put = store->PutResult(r);
  ASSERT_TRUE(put.ok()) << put.status();
  EXPECT_EQ(*put, PutOutcome::kInserted);

  ResultRecord got = MustLookup(*store, r.key);
  EXPECT_EQ(got.key, r.key);
  EXPECT_EQ(got.baseline_score, 100);
  EXPECT_EQ(got.tuned_score, 42.5);
  EXPECT_EQ(got.budget_steps, 1000);
  EXPECT_EQ(got.strategy, "beam");
  EXPECT_EQ(got.artifacts, r.artifacts);
  EXPECT_EQ(got.artifacts["optimized_hlo"].size(), 23u);
  EXPECT_EQ(got.provenance.worker, "w1");
  EXPECT_EQ(got.provenance.mltune_version, "0.1.0");
  EXPECT_GT(got.provenance.created_ms, 1'600'000'000'000);
  EXPECT_EQ(got.provenance.updated_ms, got.provenance.created_ms);
  EXPECT_EQ(got.hit_count, 0);

  absl::StatusOr<std::optional<ResultRecord>> miss = store->LookupResult(Key("fp1", "fusion"));
  ASSERT_TRUE(miss.ok());
  EXPECT_FALSE(miss->has_value());
}

// The budget rule on the stored side: the lower tuned score wins; a tie goes to the larger
// budget; the stored budget is always the largest seen.
TEST_F(StoreTest, PutResultKeepsTheBetterScoreAndTheLargestBudget) {
  std::unique_ptr<Store> store = MustOpen(StorePath());
  ASSERT_NE(store, nullptr);
  struct Step {
    double score;
    int64_t budget;
    const char* strategy;
    PutOutcome outcome;
    double stored_score;
    int64_t stored_budget;
    const char* stored_strategy;
  };
  const Step steps[] = {
      {10, 100, "random", PutOutcome::kInserted, 10, 100, "random"},
      {12, 200, "greedy", PutOutcome::kKeptExisting, 10, 200, "random"},  // worse: budget grows
      {9, 50, "beam", PutOutcome::kReplaced, 9, 200, "beam"},             // better, smaller budget
      {9, 300, "annealing", PutOutcome::kReplaced, 9, 300, "annealing"},  // tie, larger budget
      {9, 300, "evolutionary", PutOutcome::kKeptExisting, 9, 300, "annealing"},  // tie, same
      {9, 100, "greedy", PutOutcome::kKeptExisting, 9, 300, "annealing"},        // tie, smaller
      {9.5, 50, "greedy", PutOutcome::kKeptExisting, 9, 300, "annealing"},       // worse, smaller
  };
  for (const Step& s : steps) {
    SCOPED_TRACE(s.strategy);
    absl::StatusOr<PutOutcome> put = store->PutResult(Result(s.score, s.budget, s.strategy));
    ASSERT_TRUE(put.ok()) << put.status();
    EXPECT_EQ(*put, s.outcome);
    ResultRecord got = MustLookup(*store, Key());
    EXPECT_EQ(got.tuned_score, s.stored_score);
    EXPECT_EQ(got.budget_steps, s.stored_budget);
    EXPECT_EQ(got.strategy, s.stored_strategy);
    // Artifacts belong to the stored result, replaced as a whole.
    ASSERT_EQ(got.artifacts.size(), 1u);
    EXPECT_EQ(got.artifacts["pass_sequence"],
              std::string(s.stored_strategy) + ":" + std::to_string(s.stored_score));
  }
}

TEST_F(StoreTest, ReplacementDropsOldArtifactsAndKeepsHitsAndCreationTime) {
  std::unique_ptr<Store> store = MustOpen(StorePath());
  ASSERT_NE(store, nullptr);
  ResultRecord first = Result(10, 100);
  first.artifacts["optimized_hlo"] = "old";
  ASSERT_TRUE(store->PutResult(first).ok());
  ASSERT_TRUE(store->RecordHit(Key()).ok());
  const int64_t created = MustLookup(*store, Key()).provenance.created_ms;
  ASSERT_EQ(*store->PutResult(Result(5, 100)), PutOutcome::kReplaced);
  ResultRecord got = MustLookup(*store, Key());
  EXPECT_EQ(got.artifacts.count("optimized_hlo"), 0u);
  EXPECT_EQ(got.hit_count, 1);
  EXPECT_EQ(got.provenance.created_ms, created);
  EXPECT_GE(got.provenance.updated_ms, created);
}

TEST_F(StoreTest, RecordHitCountsAndNeedsAResult) {
  std::unique_ptr<Store> store = MustOpen(StorePath());
  ASSERT_NE(store, nullptr);
  absl::StatusOr<int64_t> missing = store->RecordHit(Key());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("fp1/pass-order/cpu/1"), std::string::npos);
  ASSERT_TRUE(store->PutResult(Result(1, 1)).ok());
  for (int i = 1; i <= 3; ++i) {
    absl::StatusOr<int64_t> hits = store->RecordHit(Key());
    ASSERT_TRUE(hits.ok()) << hits.status();
    EXPECT_EQ(*hits, i);
  }
  EXPECT_EQ(MustLookup(*store, Key()).hit_count, 3);
}

TEST_F(StoreTest, LookupByFingerprintFindsEveryTaskTargetAndVersion) {
  std::unique_ptr<Store> store = MustOpen(StorePath());
  ASSERT_NE(store, nullptr);
  const CacheKey keys[] = {Key("fpA", "tiling", "gpu", "1"), Key("fpA", "pass-order", "gpu", "1"),
                           Key("fpA", "pass-order", "cpu", "2"),
                           Key("fpA", "pass-order", "cpu", "1"), Key("fpB", "pass-order", "cpu")};
  for (const CacheKey& k : keys) ASSERT_TRUE(store->PutResult(Result(1, 1, "beam", k)).ok());
  absl::StatusOr<std::vector<ResultRecord>> found = store->LookupResultsByFingerprint("fpA");
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->size(), 4u);
  EXPECT_EQ((*found)[0].key, Key("fpA", "pass-order", "cpu", "1"));
  EXPECT_EQ((*found)[1].key, Key("fpA", "pass-order", "cpu", "2"));
  EXPECT_EQ((*found)[2].key, Key("fpA", "pass-order", "gpu", "1"));
  EXPECT_EQ((*found)[3].key, Key("fpA", "tiling", "gpu", "1"));
  for (const ResultRecord& r : *found) EXPECT_EQ(r.artifacts.size(), 1u);
  EXPECT_TRUE(store->LookupResultsByFingerprint("fpC")->empty());
  EXPECT_EQ(store->LookupResultsByFingerprint("").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DecideTest, SameOrSmallerBudgetHitsLargerContinuesNothingMisses) {
  EXPECT_EQ(Decide(std::nullopt, 100), CacheDecision::kMiss);
  ResultRecord cached = Result(1, 100);
  EXPECT_EQ(Decide(cached, 0), CacheDecision::kHit);
  EXPECT_EQ(Decide(cached, 50), CacheDecision::kHit);
  EXPECT_EQ(Decide(cached, 100), CacheDecision::kHit);
  EXPECT_EQ(Decide(cached, -5), CacheDecision::kHit);
  EXPECT_EQ(Decide(cached, 101), CacheDecision::kContinueFromBest);
  cached.budget_steps = 0;
  EXPECT_EQ(Decide(cached, 0), CacheDecision::kHit);
  EXPECT_EQ(Decide(cached, 1), CacheDecision::kContinueFromBest);
  EXPECT_EQ(CacheDecisionName(CacheDecision::kContinueFromBest), "continue-from-best");
}

TEST_F(StoreTest, BadResultsAreRejectedAndWriteNothing) {
  std::unique_ptr<Store> store = MustOpen(StorePath());
  ASSERT_NE(store, nullptr);
  std::vector<std::pair<ResultRecord, std::string>> bad;
  bad.emplace_back(Result(1, 1), "fingerprint").first.key.fingerprint.clear();
  bad.emplace_back(Result(1, 1), "task").first.key.task.clear();
  bad.emplace_back(Result(1, 1), "target").first.key.target.clear();
  bad.emplace_back(Result(1, 1), "search_version").first.key.search_version.clear();
  bad.emplace_back(Result(std::nan(""), 1), "tuned_score");
  bad.emplace_back(Result(std::numeric_limits<double>::infinity(), 1), "tuned_score");
  bad.emplace_back(Result(1, -1), "budget_steps");
  bad.emplace_back(Result(1, 1), "baseline_score").first.baseline_score = std::nan("");
  bad.emplace_back(Result(1, 1), "artifact name").first.artifacts[""] = "x";
  for (const auto& [record, field] : bad) {
    absl::StatusOr<PutOutcome> put = store->PutResult(record);
    EXPECT_EQ(put.status().code(), absl::StatusCode::kInvalidArgument) << field;
    EXPECT_NE(put.status().message().find(field), std::string::npos) << put.status();
  }
  EXPECT_EQ(RawQuery(StorePath(), "SELECT count(*) FROM results"), "0");
  EXPECT_EQ(RawQuery(StorePath(), "SELECT count(*) FROM results_artifacts"), "0");
  EXPECT_EQ(store->LookupResult(CacheKey{}).status().code(), absl::StatusCode::kInvalidArgument);
}

// --- Measurement log.

MeasurementRecord M(const std::string& graph, const std::string& task, const std::string& worker,
                    double value, int64_t time_ms = 1000) {
  return {0, graph, task, "cpu", "cfg" + std::to_string(value), value, worker, time_ms};
}

TEST_F(StoreTest, MeasurementsAppendInBatchesAndQueryByFilter) {
  std::unique_ptr<Store> store = MustOpen(StorePath());
  ASSERT_NE(store, nullptr);
  std::vector<MeasurementRecord> batch;
  for (int i = 0; i < 300; ++i) {
    batch.push_back(M(i % 3 == 0 ? "g0" : "g1", i % 2 == 0 ? "pass-order" : "tiling",
                      i % 5 == 0 ? "w5" : "w1", i, i == 7 ? 0 : 1000 + i));
  }
  ASSERT_TRUE(store->AppendMeasurements(batch).ok());
  ASSERT_TRUE(store->AppendMeasurements({}).ok());

  EXPECT_EQ(*store->CountMeasurements(), 300);
  MeasurementFilter f;
  f.graph_key = "g0";
  EXPECT_EQ(*store->CountMeasurements(f), 100);
  f.task = "pass-order";
  EXPECT_EQ(*store->CountMeasurements(f), 50);  // i % 6 == 0
  f.worker = "w5";
  EXPECT_EQ(*store->CountMeasurements(f), 10);  // i % 30 == 0
  f.target = "gpu";
  EXPECT_EQ(*store->CountMeasurements(f), 0);
  MeasurementFilter by_worker;
  by_worker.worker = "w5";
  EXPECT_EQ(*store->CountMeasurements(by_worker), 60);

  MeasurementFilter q;
  q.graph_key = "g0";
  q.task = "pass-order";
  absl::StatusOr<std::vector<MeasurementRecord>> rows = store->QueryMeasurements(q);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), 50u);
  for (size_t i = 0; i < rows->size(); ++i) {
    const MeasurementRecord& m = (*rows)[i];
    EXPECT_EQ(m.value, 6.0 * i);  // insertion order
    EXPECT_EQ(m.configuration, "cfg" + std::to_string(6.0 * i));
    EXPECT_EQ(m.graph_key, "g0");
    EXPECT_EQ(m.target, "cpu");
    EXPECT_EQ(m.time_ms, static_cast<int64_t>(1000 + 6 * i));
    if (i > 0) {
      EXPECT_GT(m.id, (*rows)[i - 1].id);
    }
  }
  q.limit = 7;
  EXPECT_EQ(store->QueryMeasurements(q)->size(), 7u);
  EXPECT_EQ(store->QueryMeasurements({})->size(), 300u);

  // Rows appended after a time (strictly): 1000 + i for i > 289, and row 7, stamped now.
  MeasurementFilter recent;
  recent.after_ms = 1289;
  EXPECT_EQ(*store->CountMeasurements(recent), 11);
  recent.task = "tiling";
  EXPECT_EQ(*store->CountMeasurements(recent), 6);  // odd i: 291 .. 299, and 7
  absl::StatusOr<std::vector<MeasurementRecord>> after = store->QueryMeasurements(recent);
  ASSERT_TRUE(after.ok()) << after.status();
  ASSERT_EQ(after->size(), 6u);
  EXPECT_EQ((*after)[0].value, 7);
  EXPECT_EQ((*after)[1].value, 291);
  recent.limit = 2;
  EXPECT_EQ(store->QueryMeasurements(recent)->size(), 2u);

  // time_ms 0 means "now".
  MeasurementFilter all;
  absl::StatusOr<std::vector<MeasurementRecord>> everything = store->QueryMeasurements(all);
  EXPECT_GT((*everything)[7].time_ms, 1'600'000'000'000);

  MeasurementFilter negative;
  negative.limit = -1;
  EXPECT_EQ(store->QueryMeasurements(negative).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(StoreTest, ABatchWithOneBadRecordWritesNothing) {
  std::unique_ptr<Store> store = MustOpen(StorePath());
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->AppendMeasurements(std::vector<MeasurementRecord>{M("g", "t", "w", 1)}).ok());
  std::vector<MeasurementRecord> batch(10, M("g", "t", "w", 2));
  batch[5].value = std::nan("");
  absl::Status s = store->AppendMeasurements(batch);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("record 5"), std::string::npos) << s;
  EXPECT_NE(s.message().find("value"), std::string::npos) << s;
  batch[5] = M("", "t", "w", 2);
  EXPECT_NE(store->AppendMeasurements(batch).message().find("graph_key is empty"),
            std::string::npos);
  batch[5] = M("g", "t", "w", 2, -3);
  EXPECT_EQ(store->AppendMeasurements(batch).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*store->CountMeasurements(), 1);
}

// --- Models.

TEST_F(StoreTest, ModelCheckpointsAreVersionedAndWrittenOnce) {
  std::unique_ptr<Store> store = MustOpen(StorePath());
  ASSERT_NE(store, nullptr);
  const std::string weights("\x00\x01\x02\xff weights", 12);
  ASSERT_TRUE(store->PutModel("graphsage", 1, "v1", R"({"loss": 0.5})").ok());
  ASSERT_TRUE(store->PutModel("graphsage", 3, weights, R"({"loss": 0.2})").ok());
  ASSERT_TRUE(store->PutModel("graphsage", 2, "v2", "").ok());
  ASSERT_TRUE(store->PutModel("analytical", 0, "", "[]").ok());

  absl::StatusOr<std::optional<ModelRecord>> latest = store->LatestModel("graphsage");
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_TRUE(latest->has_value());
  EXPECT_EQ((*latest)->version, 3);
  EXPECT_EQ((*latest)->data, weights);
  EXPECT_EQ((*latest)->size_bytes, 12);
  EXPECT_EQ((*latest)->metadata_json, R"({"loss": 0.2})");
  EXPECT_FALSE(store->LatestModel("missing")->has_value());

  absl::StatusOr<std::vector<ModelRecord>> all = store->ListModels();
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 4u);
  EXPECT_EQ((*all)[0].name, "analytical");
  EXPECT_EQ((*all)[0].size_bytes, 0);
  EXPECT_EQ((*all)[1].version, 1);
  EXPECT_EQ((*all)[2].version, 2);
  EXPECT_EQ((*all)[2].metadata_json, "{}");
  EXPECT_EQ((*all)[3].size_bytes, 12);
  for (const ModelRecord& m : *all) EXPECT_TRUE(m.data.empty());

  EXPECT_EQ(store->PutModel("graphsage", 3, "again", "{}").code(),
            absl::StatusCode::kAlreadyExists);
  absl::Status bad_json = store->PutModel("graphsage", 4, "x", "{not json");
  EXPECT_EQ(bad_json.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_json.message().find("not valid JSON"), std::string::npos);
  EXPECT_EQ(store->PutModel("", 1, "x", "{}").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->PutModel("m", -1, "x", "{}").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->LatestModel("graphsage").value()->data, weights);
}

TEST_F(StoreTest, ModelTrainingsKeepEachModelsLatestRunAcrossReopening) {
  auto run = [](const std::string& name, const std::string& outcome, int64_t start, int64_t end) {
    return ModelTrainingRecord{name, outcome, start, end, 120, "detail of " + outcome};
  };
  {
    std::unique_ptr<Store> store = MustOpen(StorePath());
    ASSERT_NE(store, nullptr);
    EXPECT_TRUE(store->LatestModelTrainings()->empty());
    ASSERT_TRUE(store->RecordModelTraining(run("cost-model/tile-cpu", "stored", 100, 200)).ok());
    ASSERT_TRUE(store->RecordModelTraining(run("cost-model/tile-cpu", "rejected", 300, 450)).ok());
    ASSERT_TRUE(store->RecordModelTraining(run("cost-model/fusion-cpu", "failed", 50, 60)).ok());
    // Recorded out of order: the latest end wins, not the latest insert.
    ASSERT_TRUE(store->RecordModelTraining(run("cost-model/fusion-cpu", "stored", 10, 20)).ok());

    for (const auto& [bad, why] : std::vector<std::pair<ModelTrainingRecord, std::string>>{
             {run("", "stored", 1, 2), "name is empty"},
             {run("m", "won", 1, 2), "unknown outcome 'won'"},
             {run("m", "stored", 5, 4), "ended_ms is before started_ms"},
             {ModelTrainingRecord{"m", "stored", 1, 2, -1, ""}, "new_rows is negative"}}) {
      absl::Status s = store->RecordModelTraining(bad);
      EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << why;
      EXPECT_NE(s.message().find(why), std::string::npos) << s;
    }
  }
  std::unique_ptr<Store> store = MustOpen(StorePath());
  absl::StatusOr<std::vector<ModelTrainingRecord>> latest = store->LatestModelTrainings();
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_EQ(latest->size(), 2u);
  EXPECT_EQ((*latest)[0].name, "cost-model/fusion-cpu");
  EXPECT_EQ((*latest)[0].outcome, "failed");
  EXPECT_EQ((*latest)[0].ended_ms, 60);
  EXPECT_EQ((*latest)[1].name, "cost-model/tile-cpu");
  EXPECT_EQ((*latest)[1].outcome, "rejected");
  EXPECT_EQ((*latest)[1].started_ms, 300);
  EXPECT_EQ((*latest)[1].new_rows, 120);
  EXPECT_EQ((*latest)[1].detail, "detail of rejected");
}

// --- Kernel graphs.

KernelGraphRecord Graph(const std::string& key, const std::string& bytes) {
  KernelGraphRecord r;
  r.kernel_key = key;
  r.graph = bytes;
  r.target = "cpu";
  r.module = "softmax";
  r.module_fingerprint = "fp1";
  r.kernel = "fusion.1";
  return r;
}

TEST_F(StoreTest, KernelGraphsAreStoredOncePerKeyAndReadBack) {
  std::unique_ptr<Store> store = MustOpen(StorePath());
  ASSERT_NE(store, nullptr);
  const std::string bytes("MKG1\0\x01\xff binary", 14);
  absl::StatusOr<bool> first = store->PutKernelGraph(Graph("k1", bytes));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(*first);
  // Insert-or-ignore: a second put of the key keeps the first graph.
  KernelGraphRecord other = Graph("k1", "other");
  other.module = "elsewhere";
  EXPECT_FALSE(store->PutKernelGraph(other).value());
  EXPECT_TRUE(store->PutKernelGraph(Graph("k2", "x")).value());
  EXPECT_EQ(store->CountKernelGraphs().value(), 2);
  // A check that accepts the stored graph keeps it; one that rejects it (an older feature set)
  // has it replaced, origin kept.
  auto accepts = [](const std::string&) { return true; };
  auto rejects_x = [](const std::string& stored) { return stored != "x"; };
  EXPECT_FALSE(store->PutKernelGraph(other, accepts).value());
  KernelGraphRecord fresh = Graph("k2", "fresh");
  fresh.module = "elsewhere";
  EXPECT_TRUE(store->PutKernelGraph(fresh, rejects_x).value());
  EXPECT_FALSE(store->PutKernelGraph(fresh, rejects_x).value()) << "now current: kept";
  absl::StatusOr<std::optional<KernelGraphRecord>> refreshed = store->GetKernelGraph("k2");
  ASSERT_TRUE(refreshed.ok() && refreshed->has_value());
  EXPECT_EQ((*refreshed)->graph, "fresh");
  EXPECT_EQ((*refreshed)->module, "softmax") << "the first origin stays";
  EXPECT_EQ(store->CountKernelGraphs().value(), 2);
  absl::StatusOr<std::optional<KernelGraphRecord>> got = store->GetKernelGraph("k1");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->graph, bytes);
  EXPECT_EQ((*got)->module, "softmax");
  EXPECT_EQ((*got)->module_fingerprint, "fp1");
  EXPECT_EQ((*got)->kernel, "fusion.1");
  EXPECT_EQ((*got)->target, "cpu");
  EXPECT_GT((*got)->created_ms, 0);
  EXPECT_FALSE(store->GetKernelGraph("missing").value().has_value());
  // The measurement log refers to graphs by graph_key; samples for a task and target come back
  // with their kernel keys.
  MeasurementRecord m;
  m.graph_key = "k1";
  m.task = "tile-kernel";
  m.target = "cpu";
  m.configuration = "lanes=32,cache=1,parallel=0";
  m.value = 1e-5;
  ASSERT_TRUE(store->AppendMeasurements({&m, 1}).ok());
  MeasurementFilter filter;
  filter.task = "tile-kernel";
  filter.target = "cpu";
  absl::StatusOr<std::vector<MeasurementRecord>> samples = store->QueryMeasurements(filter);
  ASSERT_TRUE(samples.ok());
  ASSERT_EQ(samples->size(), 1u);
  EXPECT_TRUE(store->GetKernelGraph((*samples)[0].graph_key).value().has_value());
  // Kept across reopening.
  store.reset();
  store = MustOpen(StorePath());
  EXPECT_EQ(store->GetKernelGraph("k1").value()->graph, bytes);
}

TEST_F(StoreTest, BadKernelGraphsAreRejected) {
  std::unique_ptr<Store> store = MustOpen(StorePath());
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->PutKernelGraph(Graph("", "x")).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->PutKernelGraph(Graph("k", "")).status().code(),
            absl::StatusCode::kInvalidArgument);
  KernelGraphRecord no_target = Graph("k", "x");
  no_target.target = "";
  EXPECT_EQ(store->PutKernelGraph(no_target).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->GetKernelGraph("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->CountKernelGraphs().value(), 0);
}

}  // namespace
}  // namespace mltune::storage
