// The Store contract, run against both backends through Store::Open: a SQLite file and a database
// on a throwaway PostgreSQL server (skipped where none can start). Results (binary artifacts, the
// replace rule, hits), the measurement log, kernel graphs, model versions and trainings behave
// the same on both; the PostgreSQL-only tests cover what sharing a database adds: two "daemons"
// writing one key at once, reopening, a newer schema refused, and the password kept out of path().
#include "tests/storage/store_backends.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "storage/store.h"
#include "tests/storage/store_records.h"
#ifdef MLTUNE_HAVE_POSTGRES
#include "storage/postgres.h"
#endif

namespace mltune::storage {
namespace {

namespace fs = std::filesystem;

// The same tests on PostgreSQL only.
class PostgresStoreTest : public StoreBackendsTest {};

MeasurementRecord M(const std::string& graph, const std::string& task, const std::string& worker,
                    double value, int64_t time_ms = 1000) {
  return {0, graph, task, "cpu", "cfg" + std::to_string(value), value, worker, time_ms};
}

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

// --- Results cache.

TEST_P(StoreBackendsTest, ResultRoundTripsWithBinaryArtifactsAndExactScores) {
  std::unique_ptr<Store> store = MustOpen();
  ASSERT_NE(store, nullptr);
  ResultRecord r = Result(0.1 + 0.2, 1000);
  r.baseline_score = 1.0 / 3;
  r.original_score = 5e-324;  // the smallest subnormal: text must not round it away
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
  EXPECT_EQ(got.baseline_score, 1.0 / 3);
  EXPECT_EQ(got.tuned_score, 0.1 + 0.2);
  EXPECT_EQ(got.original_score, 5e-324);
  EXPECT_EQ(got.budget_steps, 1000);
  EXPECT_EQ(got.strategy, "beam");
  EXPECT_EQ(got.artifacts, r.artifacts);
  EXPECT_EQ(got.artifacts["optimized_hlo"].size(), 23u);
  EXPECT_EQ(got.provenance.worker, "w1");
  EXPECT_EQ(got.provenance.mltune_version, "0.1.0");
  EXPECT_GT(got.provenance.created_ms, 1'600'000'000'000);
  EXPECT_EQ(got.provenance.updated_ms, got.provenance.created_ms);
  EXPECT_EQ(got.hit_count, 0);
  EXPECT_EQ(*store->CountResults(), 1);

  // No original score, no artifacts.
  ResultRecord bare = Result(7, 1, "beam", Key("fp2"));
  bare.artifacts.clear();
  ASSERT_TRUE(store->PutResult(bare).ok());
  ResultRecord got_bare = MustLookup(*store, Key("fp2"));
  EXPECT_FALSE(got_bare.original_score.has_value());
  EXPECT_TRUE(got_bare.artifacts.empty());
  EXPECT_EQ(*store->CountResults(), 2);

  absl::StatusOr<std::optional<ResultRecord>> miss = store->LookupResult(Key("fp1", "fusion"));
  ASSERT_TRUE(miss.ok()) << miss.status();
  EXPECT_FALSE(miss->has_value());
}

// The lower tuned score wins; a tie goes to the larger budget; the stored budget is always the
// largest seen; artifacts belong to the stored result.
TEST_P(StoreBackendsTest, PutResultKeepsTheBetterScoreAndTheLargestBudget) {
  std::unique_ptr<Store> store = MustOpen();
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
    ASSERT_EQ(got.artifacts.size(), 1u);
    EXPECT_EQ(got.artifacts["pass_sequence"],
              std::string(s.stored_strategy) + ":" + std::to_string(s.stored_score));
  }
  EXPECT_EQ(*store->CountResults(), 1);
}

TEST_P(StoreBackendsTest, ReplacementDropsOldArtifactsAndKeepsHitsAndCreationTime) {
  std::unique_ptr<Store> store = MustOpen();
  ASSERT_NE(store, nullptr);
  ResultRecord first = Result(10, 100);
  first.artifacts["optimized_hlo"] = "old";
  first.original_score = 50;
  ASSERT_TRUE(store->PutResult(first).ok());
  ASSERT_TRUE(store->RecordHit(Key()).ok());
  const int64_t created = MustLookup(*store, Key()).provenance.created_ms;
  ASSERT_EQ(*store->PutResult(Result(5, 100, "greedy")), PutOutcome::kReplaced);
  ResultRecord got = MustLookup(*store, Key());
  EXPECT_EQ(got.artifacts.count("optimized_hlo"), 0u);
  EXPECT_EQ(got.artifacts.size(), 1u);
  EXPECT_EQ(got.strategy, "greedy");
  EXPECT_FALSE(got.original_score.has_value()) << "replaced with the rest of the record";
  EXPECT_EQ(got.hit_count, 1);
  EXPECT_EQ(got.provenance.created_ms, created);
  EXPECT_GE(got.provenance.updated_ms, created);
}

TEST_P(StoreBackendsTest, RecordHitCountsAndNeedsAResult) {
  std::unique_ptr<Store> store = MustOpen();
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
  EXPECT_EQ(store->RecordHit(CacheKey{}).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(StoreBackendsTest, LookupByFingerprintFindsEveryTaskTargetAndVersion) {
  std::unique_ptr<Store> store = MustOpen();
  ASSERT_NE(store, nullptr);
  // "Z" < "a" in byte order (SQLite's), whatever the PostgreSQL database's locale says.
  const CacheKey keys[] = {
      Key("fpA", "tiling", "gpu", "1"),     Key("fpA", "pass-order", "gpu", "1"),
      Key("fpA", "pass-order", "cpu", "2"), Key("fpA", "pass-order", "cpu", "1"),
      Key("fpB", "pass-order", "cpu"),      Key("fpA", "Zeta", "cpu", "1")};
  for (const CacheKey& k : keys) {
    ResultRecord r = Result(1, 1, "beam", k);
    r.artifacts["second"] = k.ToString();
    ASSERT_TRUE(store->PutResult(r).ok());
  }
  absl::StatusOr<std::vector<ResultRecord>> found = store->LookupResultsByFingerprint("fpA");
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->size(), 5u);
  EXPECT_EQ((*found)[0].key, Key("fpA", "Zeta", "cpu", "1"));
  EXPECT_EQ((*found)[1].key, Key("fpA", "pass-order", "cpu", "1"));
  EXPECT_EQ((*found)[2].key, Key("fpA", "pass-order", "cpu", "2"));
  EXPECT_EQ((*found)[3].key, Key("fpA", "pass-order", "gpu", "1"));
  EXPECT_EQ((*found)[4].key, Key("fpA", "tiling", "gpu", "1"));
  for (const ResultRecord& r : *found) {
    EXPECT_EQ(r.artifacts.size(), 2u);
    EXPECT_EQ(r.artifacts.at("second"), r.key.ToString());
  }
  EXPECT_TRUE(store->LookupResultsByFingerprint("fpC")->empty());
  EXPECT_EQ(store->LookupResultsByFingerprint("").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(StoreBackendsTest, BadResultsAreRejectedAndWriteNothing) {
  std::unique_ptr<Store> store = MustOpen();
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
  bad.emplace_back(Result(1, 1), "original_score").first.original_score = -HUGE_VAL;
  bad.emplace_back(Result(1, 1), "artifact name").first.artifacts[""] = "x";
  for (const auto& [record, field] : bad) {
    absl::StatusOr<PutOutcome> put = store->PutResult(record);
    EXPECT_EQ(put.status().code(), absl::StatusCode::kInvalidArgument) << field;
    EXPECT_NE(put.status().message().find(field), std::string::npos) << put.status();
  }
  EXPECT_EQ(*store->CountResults(), 0);
  EXPECT_FALSE(store->LookupResult(Key())->has_value());
  EXPECT_EQ(store->LookupResult(CacheKey{}).status().code(), absl::StatusCode::kInvalidArgument);
}

// --- Measurement log.

TEST_P(StoreBackendsTest, MeasurementsAppendInBatchesAndQueryByFilter) {
  std::unique_ptr<Store> store = MustOpen();
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
  absl::StatusOr<std::vector<MeasurementRecord>> limited = store->QueryMeasurements(q);
  ASSERT_TRUE(limited.ok()) << limited.status();
  ASSERT_EQ(limited->size(), 7u);
  EXPECT_EQ(limited->back().value, 36);  // the first seven
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
  absl::StatusOr<std::vector<MeasurementRecord>> everything = store->QueryMeasurements({});
  ASSERT_TRUE(everything.ok()) << everything.status();
  EXPECT_GT((*everything)[7].time_ms, 1'600'000'000'000);

  MeasurementFilter negative;
  negative.limit = -1;
  EXPECT_EQ(store->QueryMeasurements(negative).status().code(), absl::StatusCode::kInvalidArgument);
}

// Text the PostgreSQL store sends inside array literals, doubles that text could round, and
// batches larger than one INSERT, all back in order.
TEST_P(StoreBackendsTest, LargeBatchesKeepOrderTextAndExactValues) {
  std::unique_ptr<Store> store = MustOpen();
  ASSERT_NE(store, nullptr);
  const std::string texts[] = {"",         "NULL",        "a,b",       "{x}",
                               "q\"uote",  "back\\slash", " spaced  ", "line\nbreak",
                               "ü ∑ 日本", "\\\"}{,"};
  const double values[] = {0.1, 1.0 / 3, 5e-324, 1.7976931348623157e308, -2.5e-10, 123456789.125};
  std::vector<MeasurementRecord> batch;
  for (int i = 0; i < 12'345; ++i) {
    MeasurementRecord m =
        M(std::string("g").append(std::to_string(i % 7)), "t", "w", values[i % 6] + i, 1 + i);
    m.configuration = texts[i % 10] + std::to_string(i);
    m.worker = texts[(i + 3) % 10];
    batch.push_back(m);
  }
  ASSERT_TRUE(store->AppendMeasurements(batch).ok());
  absl::StatusOr<std::vector<MeasurementRecord>> rows = store->QueryMeasurements({});
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_EQ(rows->size(), batch.size());
  for (size_t i = 0; i < batch.size(); ++i) {
    const MeasurementRecord& got = (*rows)[i];
    ASSERT_EQ(got.configuration, batch[i].configuration) << i;
    ASSERT_EQ(got.worker, batch[i].worker) << i;
    ASSERT_EQ(got.graph_key, batch[i].graph_key) << i;
    ASSERT_EQ(got.value, batch[i].value) << i;
    ASSERT_EQ(got.time_ms, batch[i].time_ms) << i;
  }
  MeasurementFilter by_worker;
  by_worker.worker = "NULL";
  EXPECT_EQ(*store->CountMeasurements(by_worker), 1234);  // i % 10 == 8
  by_worker.worker = "";
  EXPECT_EQ(*store->CountMeasurements(by_worker), 1234);  // i % 10 == 7
}

TEST_P(StoreBackendsTest, ABatchWithOneBadRecordWritesNothing) {
  std::unique_ptr<Store> store = MustOpen();
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
  batch[5] = M("g", "", "w", 2);
  EXPECT_NE(store->AppendMeasurements(batch).message().find("task is empty"), std::string::npos);
  batch[5] = M("g", "t", "w", 2, -3);
  EXPECT_EQ(store->AppendMeasurements(batch).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(*store->CountMeasurements(), 1);
}

// --- Kernel graphs.

TEST_P(StoreBackendsTest, KernelGraphsAreStoredOncePerKeyAndRefreshedWhenStale) {
  std::unique_ptr<Store> store = MustOpen();
  ASSERT_NE(store, nullptr);
  std::string bytes("MKG1\0\x01\xff binary", 14);
  for (int b = 0; b < 256; ++b) bytes.push_back(static_cast<char>(b));
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
  std::vector<std::string> checked;
  auto accepts = [&](const std::string& stored) {
    checked.push_back(stored);
    return true;
  };
  auto rejects_x = [](const std::string& stored) { return stored != "x"; };
  EXPECT_FALSE(store->PutKernelGraph(other, accepts).value());
  EXPECT_EQ(checked, std::vector<std::string>{bytes}) << "the check sees the stored bytes";
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
  EXPECT_EQ((*got)->kernel_key, "k1");
  EXPECT_EQ((*got)->graph, bytes);
  EXPECT_EQ((*got)->module, "softmax");
  EXPECT_EQ((*got)->module_fingerprint, "fp1");
  EXPECT_EQ((*got)->kernel, "fusion.1");
  EXPECT_EQ((*got)->target, "cpu");
  EXPECT_GT((*got)->created_ms, 1'600'000'000'000);
  EXPECT_FALSE(store->GetKernelGraph("missing").value().has_value());

  EXPECT_EQ(store->PutKernelGraph(Graph("", "x")).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->PutKernelGraph(Graph("k", "")).status().code(),
            absl::StatusCode::kInvalidArgument);
  KernelGraphRecord no_target = Graph("k", "x");
  no_target.target = "";
  EXPECT_EQ(store->PutKernelGraph(no_target).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->GetKernelGraph("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->CountKernelGraphs().value(), 2);
}

// --- Models.

TEST_P(StoreBackendsTest, ModelCheckpointsAreVersionedAndWrittenOnce) {
  std::unique_ptr<Store> store = MustOpen();
  ASSERT_NE(store, nullptr);
  const std::string weights("\x00\x01\x02\xff weights", 12);
  ASSERT_TRUE(store->PutModel("graphsage", 1, "v1", R"({"loss": 0.5})").ok());
  ASSERT_TRUE(store->PutModel("graphsage", 3, weights, R"({"loss": 0.2})").ok());
  ASSERT_TRUE(store->PutModel("graphsage", 2, "v2", "").ok());
  ASSERT_TRUE(store->PutModel("analytical", 0, "", "[]").ok());
  ASSERT_TRUE(store->PutModel("Zeta", 1, "z", "{}").ok());  // byte order: before lower case

  absl::StatusOr<std::optional<ModelRecord>> latest = store->LatestModel("graphsage");
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_TRUE(latest->has_value());
  EXPECT_EQ((*latest)->name, "graphsage");
  EXPECT_EQ((*latest)->version, 3);
  EXPECT_EQ((*latest)->data, weights);
  EXPECT_EQ((*latest)->size_bytes, 12);
  EXPECT_EQ((*latest)->metadata_json, R"({"loss": 0.2})") << "stored as given";
  EXPECT_GT((*latest)->created_ms, 1'600'000'000'000);
  EXPECT_FALSE(store->LatestModel("missing")->has_value());

  absl::StatusOr<std::vector<ModelRecord>> all = store->ListModels();
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 5u);
  EXPECT_EQ((*all)[0].name, "Zeta");
  EXPECT_EQ((*all)[1].name, "analytical");
  EXPECT_EQ((*all)[1].size_bytes, 0);
  EXPECT_EQ((*all)[2].version, 1);
  EXPECT_EQ((*all)[3].version, 2);
  EXPECT_EQ((*all)[3].metadata_json, "{}");
  EXPECT_EQ((*all)[4].size_bytes, 12);
  for (const ModelRecord& m : *all) EXPECT_TRUE(m.data.empty());

  absl::Status again = store->PutModel("graphsage", 3, "again", "{}");
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(again.message().find("already stored"), std::string::npos) << again;
  absl::Status bad_json = store->PutModel("graphsage", 4, "x", "{not json");
  EXPECT_EQ(bad_json.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_json.message().find("not valid JSON"), std::string::npos) << bad_json;
  EXPECT_EQ(store->PutModel("", 1, "x", "{}").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->PutModel("m", -1, "x", "{}").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->LatestModel("graphsage").value()->data, weights);
  EXPECT_EQ(store->ListModels()->size(), 5u);

  absl::StatusOr<int64_t> next = store->PutModelNextVersion("graphsage", "v4", "");
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(*next, 4);
  EXPECT_EQ(*store->PutModelNextVersion("new", "n1", "{}"), 1);
  EXPECT_EQ(*store->PutModelNextVersion("analytical", "a1", "{}"), 1);  // after version 0
  EXPECT_EQ(store->PutModelNextVersion("graphsage", "x", "{not json").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store->LatestModel("graphsage").value()->data, "v4");
}

TEST_P(StoreBackendsTest, ConcurrentNextVersionsAreDistinct) {
  std::unique_ptr<Store> store = MustOpen();
  ASSERT_NE(store, nullptr);
  constexpr int kThreads = 4, kEach = 3;
  std::barrier start(kThreads);
  std::vector<std::vector<int64_t>> versions(kThreads);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      start.arrive_and_wait();
      for (int i = 0; i < kEach; ++i) {
        const std::string data = "thread " + std::to_string(t) + " put " + std::to_string(i);
        absl::StatusOr<int64_t> v = store->PutModelNextVersion("shared", data, "{}");
        if (!v.ok()) {
          errors[t] = v.status().ToString();
          return;
        }
        versions[t].push_back(*v);
      }
    });
  }
  for (std::thread& t : threads) t.join();
  std::set<int64_t> all;
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(errors[t], "") << "thread " << t;
    EXPECT_TRUE(std::is_sorted(versions[t].begin(), versions[t].end()));
    all.insert(versions[t].begin(), versions[t].end());
  }
  EXPECT_EQ(all.size(), static_cast<size_t>(kThreads * kEach)) << "distinct versions";
  if (!all.empty()) {
    EXPECT_EQ(*all.begin(), 1);
    EXPECT_EQ(*all.rbegin(), kThreads * kEach);
  }
  EXPECT_EQ(store->ListModels()->size(), static_cast<size_t>(kThreads * kEach));
}

TEST_P(StoreBackendsTest, ModelTrainingsKeepEachModelsLatestRun) {
  auto run = [](const std::string& name, const std::string& outcome, int64_t start, int64_t end) {
    return ModelTrainingRecord{name, outcome, start, end, 120, "detail of " + outcome};
  };
  {
    std::unique_ptr<Store> store = MustOpen();
    ASSERT_NE(store, nullptr);
    EXPECT_TRUE(store->LatestModelTrainings()->empty());
    ASSERT_TRUE(store->RecordModelTraining(run("cost-model/tile-cpu", "stored", 100, 200)).ok());
    ASSERT_TRUE(store->RecordModelTraining(run("cost-model/tile-cpu", "rejected", 300, 450)).ok());
    ASSERT_TRUE(store->RecordModelTraining(run("cost-model/fusion-cpu", "failed", 50, 60)).ok());
    // Recorded out of order: the latest end wins, not the latest insert.
    ASSERT_TRUE(store->RecordModelTraining(run("cost-model/fusion-cpu", "stored", 10, 20)).ok());
    // A tie on the end: the later insert.
    ASSERT_TRUE(store->RecordModelTraining(run("Agent", "preempted", 1, 5)).ok());
    ASSERT_TRUE(store->RecordModelTraining(run("Agent", "stopped", 2, 5)).ok());

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
  std::unique_ptr<Store> store = MustOpen();  // kept across reopening
  ASSERT_NE(store, nullptr);
  absl::StatusOr<std::vector<ModelTrainingRecord>> latest = store->LatestModelTrainings();
  ASSERT_TRUE(latest.ok()) << latest.status();
  ASSERT_EQ(latest->size(), 3u);
  EXPECT_EQ((*latest)[0].name, "Agent");
  EXPECT_EQ((*latest)[0].outcome, "stopped");
  EXPECT_EQ((*latest)[1].name, "cost-model/fusion-cpu");
  EXPECT_EQ((*latest)[1].outcome, "failed");
  EXPECT_EQ((*latest)[1].ended_ms, 60);
  EXPECT_EQ((*latest)[2].name, "cost-model/tile-cpu");
  EXPECT_EQ((*latest)[2].outcome, "rejected");
  EXPECT_EQ((*latest)[2].started_ms, 300);
  EXPECT_EQ((*latest)[2].new_rows, 120);
  EXPECT_EQ((*latest)[2].detail, "detail of rejected");
}

TEST_P(StoreBackendsTest, ReopeningKeepsTheData) {
  {
    std::unique_ptr<Store> store = MustOpen();
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->PutResult(Result(3, 30)).ok());
    ASSERT_TRUE(
        store->AppendMeasurements(std::vector<MeasurementRecord>{M("g", "t", "w", 1)}).ok());
    ASSERT_TRUE(store->PutKernelGraph(Graph("k", "graph")).ok());
    ASSERT_TRUE(store->PutModel("m", 1, "bytes", "{}").ok());
  }
  std::unique_ptr<Store> store = MustOpen();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(*store->SchemaVersion(), Store::kSchemaVersion);
  EXPECT_TRUE(store->CheckIntegrity().ok());
  EXPECT_EQ(store->shared(), postgres());
  EXPECT_EQ(MustLookup(*store, Key()).tuned_score, 3);
  EXPECT_EQ(*store->CountMeasurements(), 1);
  EXPECT_EQ(store->GetKernelGraph("k").value()->graph, "graph");
  EXPECT_EQ(store->LatestModel("m").value()->data, "bytes");
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreBackendsTest, kStoreBackends,
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

// --- PostgreSQL only: what sharing one database between daemons adds.
#ifdef MLTUNE_HAVE_POSTGRES

// Two daemons (two Stores, each with its own connections) put the same keys at once: every put
// succeeds, one of them inserts each key, and the best score with the largest budget stays.
TEST_P(PostgresStoreTest, TwoDaemonsPuttingTheSameKeyAtOnceBothSucceed) {
  std::unique_ptr<Store> a = MustOpen();
  std::unique_ptr<Store> b = MustOpen();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  constexpr int kThreads = 4, kKeys = 40;
  std::barrier start(kThreads);
  std::vector<std::string> errors(kThreads);
  std::atomic<int> inserted[kKeys] = {};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Store& store = t % 2 == 0 ? *a : *b;
      start.arrive_and_wait();
      for (int k = 0; k < kKeys; ++k) {
        // Thread t's score for key k: the best is thread (k % kThreads); budgets 10 * (t + 1).
        const double score = 10 + (t - k % kThreads + kThreads) % kThreads;
        ResultRecord r = Result(score, 10 * (t + 1), "thread" + std::to_string(t),
                                Key("race" + std::to_string(k)));
        absl::StatusOr<PutOutcome> put = store.PutResult(r);
        if (!put.ok()) {
          errors[t] = put.status().ToString();
          return;
        }
        if (*put == PutOutcome::kInserted) ++inserted[k];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
  for (int k = 0; k < kKeys; ++k) {
    SCOPED_TRACE(k);
    EXPECT_EQ(inserted[k].load(), 1);
    ResultRecord got = MustLookup(*a, Key("race" + std::to_string(k)));
    EXPECT_EQ(got.tuned_score, 10);
    EXPECT_EQ(got.strategy, "thread" + std::to_string(k % kThreads));
    EXPECT_EQ(got.budget_steps, 10 * kThreads) << "the largest budget";
    EXPECT_EQ(got.artifacts.at("pass_sequence"), got.strategy + ":" + std::to_string(10.0));
  }
  EXPECT_EQ(*b->CountResults(), kKeys);
}

// A failure inside the database (text PostgreSQL refuses: invalid UTF-8) in a later chunk of a
// batch leaves nothing from the earlier chunks behind.
TEST_P(PostgresStoreTest, ABatchFailingInTheDatabaseWritesNothing) {
  std::unique_ptr<Store> store = MustOpen();
  ASSERT_NE(store, nullptr);
  std::vector<MeasurementRecord> batch(12'000, M("g", "t", "w", 1));
  batch[11'000].configuration = "\xff\xfe not UTF-8";
  absl::Status s = store->AppendMeasurements(batch);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(*store->CountMeasurements(), 0);
  batch[11'000].configuration = "fine";
  ASSERT_TRUE(store->AppendMeasurements(batch).ok());
  EXPECT_EQ(*store->CountMeasurements(), 12'000);
}

TEST_P(PostgresStoreTest, RefusesANewerSchema) {
  ASSERT_NE(MustOpen(), nullptr);
  {
    absl::StatusOr<std::unique_ptr<PgConnection>> conn = PgConnection::Connect(url_);
    ASSERT_TRUE(conn.ok()) << conn.status();
    ASSERT_TRUE((*conn)->Exec("UPDATE mltune_schema SET version = 99").ok());
  }
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(url_);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
  EXPECT_NE(store.status().message().find("99"), std::string::npos) << store.status();
}

TEST_P(PostgresStoreTest, MustExistRefusesAnEmptyDatabase) {
  StoreOptions options;
  options.must_exist = true;
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(url_, options);
  EXPECT_EQ(store.status().code(), absl::StatusCode::kNotFound) << store.status();
  ASSERT_NE(MustOpen(), nullptr);
  EXPECT_TRUE(Store::Open(url_, options).ok());
}

TEST_P(PostgresStoreTest, PathHidesThePassword) {
  // The test server trusts every local connection, so any password opens it.
  const std::string db = url_.substr(url_.find(":///") + 4, url_.find('?') - url_.find(":///") - 4);
  const std::string url = DatabaseUrl(db, "postgres:s3cret@");
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(url);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_TRUE(Store::IsPostgresUrl((*store)->path()));
  EXPECT_EQ((*store)->path().find("s3cret"), std::string::npos) << (*store)->path();
  EXPECT_NE((*store)->path().find("postgres:***@"), std::string::npos) << (*store)->path();
  EXPECT_NE((*store)->path().find(db), std::string::npos) << (*store)->path();
  ASSERT_TRUE((*store)->PutResult(Result(1, 1)).ok());
  EXPECT_EQ(*(*store)->CountResults(), 1);
  // A server that is not there: Unavailable, naming where, the password still hidden.
  absl::StatusOr<std::unique_ptr<Store>> absent =
      Store::Open("postgresql://postgres:s3cret@127.0.0.1:1/none");
  EXPECT_TRUE(absl::IsUnavailable(absent.status())) << absent.status();
  EXPECT_EQ(absent.status().message().find("s3cret"), std::string::npos) << absent.status();
  EXPECT_NE(absent.status().message().find("postgres:***@127.0.0.1:1"), std::string::npos)
      << absent.status();
}

INSTANTIATE_TEST_SUITE_P(Backends, PostgresStoreTest, ::testing::Values(kPostgresBackend),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });
#endif  // MLTUNE_HAVE_POSTGRES

}  // namespace
}  // namespace mltune::storage
