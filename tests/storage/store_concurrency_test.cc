// Store concurrency: many threads on one Store, two Stores (as two processes) on one file, and
// reads that do not wait for a long write.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "storage/store.h"

namespace mltune::storage {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

class ConcurrencyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           (std::string("mltune_concurrency_") + info->name() + "_" + std::to_string(getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Store> MustOpen() {
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open((dir_ / "store.db").string());
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  fs::path dir_;
};

const CacheKey kKey{"fp", "pass-order", "cpu", "1"};

ResultRecord Result(double score, int64_t budget) {
  ResultRecord r;
  r.key = kKey;
  r.baseline_score = 1000;
  r.tuned_score = score;
  r.budget_steps = budget;
  r.strategy = "random";
  r.artifacts["pass_sequence"] = std::to_string(score);
  return r;
}

// Errors seen by worker threads (gtest assertions stay on the main thread).
class Errors {
 public:
  void Check(const absl::Status& s, const char* what) {
    if (s.ok()) return;
    std::lock_guard<std::mutex> lock(mu_);
    messages_.push_back(std::string(what) + ": " + s.ToString());
  }
  std::vector<std::string> messages() {
    std::lock_guard<std::mutex> lock(mu_);
    return messages_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> messages_;
};

// One read-then-write operation: look the result up, offer a new one, count a hit, log a
// measurement, read the log size; every few rounds a job runs through its states.
void Operate(Store& store, int thread, int round, Errors& errors) {
  absl::StatusOr<std::optional<ResultRecord>> cached = store.LookupResult(kKey);
  errors.Check(cached.status(), "LookupResult");
  if (cached.ok() && !cached->has_value()) errors.Check(absl::InternalError("missing"), "lookup");
  const double score = 500 - thread * 1000 - round;  // distinct; the minimum is known
  errors.Check(store.PutResult(Result(score, thread * 1000 + round)).status(), "PutResult");
  errors.Check(store.RecordHit(kKey).status(), "RecordHit");
  MeasurementRecord m{
      0, "g" + std::to_string(thread), "pass-order", "cpu", std::to_string(round), score, "w", 0};
  errors.Check(store.AppendMeasurements({&m, 1}), "AppendMeasurements");
  errors.Check(store.CountMeasurements().status(), "CountMeasurements");
  if (round % 20 == 0) {
    JobRecord job;
    job.key = kKey;
    absl::StatusOr<std::string> id = store.CreateJob(job);
    errors.Check(id.status(), "CreateJob");
    if (!id.ok()) return;
    errors.Check(store.UpdateJobState(*id, JobState::kRunning, 0), "running");
    errors.Check(store.UpdateJobState(*id, JobState::kDone, 1, score), "done");
  }
}

TEST_F(ConcurrencyTest, FourThreadsDoReadThenWriteOperationsWithoutErrors) {
  std::unique_ptr<Store> store = MustOpen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutResult(Result(1000, 0)).ok());
  constexpr int kThreads = 4;
  constexpr int kRounds = 200;
  Errors errors;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds; ++r) Operate(*store, t, r, errors);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors.messages(), std::vector<std::string>{});

  ResultRecord best = **store->LookupResult(kKey);
  EXPECT_EQ(best.tuned_score, 500 - (kThreads - 1) * 1000 - (kRounds - 1));
  EXPECT_EQ(best.budget_steps, (kThreads - 1) * 1000 + kRounds - 1);
  EXPECT_EQ(best.artifacts.at("pass_sequence"), std::to_string(best.tuned_score));
  EXPECT_EQ(best.hit_count, kThreads * kRounds);  // no lost update
  EXPECT_EQ(*store->CountMeasurements(), kThreads * kRounds);
  EXPECT_EQ(store->ListJobs(JobState::kDone)->size(), static_cast<size_t>(kThreads * kRounds / 20));
  EXPECT_TRUE(store->CheckIntegrity().ok());
}

// Two Stores on one file behave as two processes: their writers meet in SQLite's lock, which
// BEGIN IMMEDIATE and the busy timeout turn into waiting rather than SQLITE_BUSY.
TEST_F(ConcurrencyTest, TwoStoresOnOneFileDoNotFailWithBusy) {
  std::unique_ptr<Store> a = MustOpen();
  std::unique_ptr<Store> b = MustOpen();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_TRUE(a->PutResult(Result(1000, 0)).ok());
  Errors errors;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    Store* store = t % 2 == 0 ? a.get() : b.get();
    threads.emplace_back([&, store, t] {
      for (int r = 0; r < 100; ++r) Operate(*store, t, r, errors);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(errors.messages(), std::vector<std::string>{});
  EXPECT_EQ((*b->LookupResult(kKey))->hit_count, 400);
  EXPECT_EQ(*a->CountMeasurements(), 400);
}

// A long write transaction (a large measurement batch) does not hold up lookups: readers use
// their own connections and the last committed snapshot.
TEST_F(ConcurrencyTest, ReadsDoNotWaitForALongWrite) {
  std::unique_ptr<Store> store = MustOpen();
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->PutResult(Result(1, 1)).ok());
  std::vector<MeasurementRecord> batch(300'000);
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i] = {0,
                "graph" + std::to_string(i % 100),
                "pass-order",
                "cpu",
                "configuration " + std::to_string(i),
                1.0 * i,
                "w",
                1};
  }
  std::atomic<int> phase{0};  // 1: writing, 2: written
  Clock::duration write_time{};
  absl::Status write_status;
  std::thread writer([&] {
    const Clock::time_point start = Clock::now();
    phase = 1;
    write_status = store->AppendMeasurements(batch);
    write_time = Clock::now() - start;
    phase = 2;
  });
  while (phase == 0) std::this_thread::yield();
  int reads_during_write = 0;
  Clock::duration slowest{};
  std::vector<int64_t> partial_counts;  // anything but 0 or the whole batch
  bool read_failed = false;
  while (phase == 1 && !read_failed) {
    const Clock::time_point start = Clock::now();
    absl::StatusOr<std::optional<ResultRecord>> r = store->LookupResult(kKey);
    absl::StatusOr<int64_t> count = store->CountMeasurements();
    slowest = std::max(slowest, Clock::now() - start);
    read_failed = !r.ok() || !r->has_value() || !count.ok();
    EXPECT_FALSE(read_failed) << r.status() << " " << count.status();
    if (count.ok() && *count != 0 && *count != static_cast<int64_t>(batch.size())) {
      partial_counts.push_back(*count);
    }
    if (phase == 1) ++reads_during_write;
  }
  writer.join();
  ASSERT_TRUE(write_status.ok()) << write_status;
  const auto ms = [](Clock::duration d) {
    return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  };
  // A read that had waited for the write would take about as long as the write.
  EXPECT_GT(reads_during_write, 0);
  EXPECT_LT(slowest * 2, write_time)
      << "slowest read " << ms(slowest) << " ms, write " << ms(write_time) << " ms";
  EXPECT_EQ(partial_counts, std::vector<int64_t>{});  // a batch is seen whole or not at all
  EXPECT_EQ(*store->CountMeasurements(), 300'000);
}

}  // namespace
}  // namespace mltune::storage
