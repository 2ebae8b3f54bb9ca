// Crash safety: a child process writes to the store and dies (SIGKILL or _exit) in the middle of a
// write transaction; the parent reopens the store and finds it intact, with every committed row,
// none of the uncommitted ones, and the running job recoverable.
#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "storage/store.h"

namespace mltune::storage {
namespace {

namespace fs = std::filesystem;

constexpr int kCommitted = 1000;  // measurements committed before the crash

class CrashTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) /
           (std::string("mltune_crash_") + info->name() + "_" + std::to_string(getpid()));
    fs::remove_all(dir_);
    path_ = (dir_ / "store.db").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
  std::string path_;
};

// Runs `child` in a forked process. The child reports readiness by returning true (then the
// parent, after `delay`, kills it with SIGKILL) or exits by itself. A child that returns false
// exits with status 3. Returns the wait status.
int RunChild(const std::function<bool(int ready_fd)>& child, std::chrono::milliseconds delay) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    if (!child(fds[1])) _exit(3);
    pause();  // wait for SIGKILL
    _exit(4);
  }
  close(fds[1]);
  char byte = 0;
  const bool ready = read(fds[0], &byte, 1) == 1;  // EOF when the child exits without signalling
  close(fds[0]);
  if (ready) {
    std::this_thread::sleep_for(delay);
    kill(pid, SIGKILL);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

void Signal(int fd) {
  const char byte = 'R';
  (void)!write(fd, &byte, 1);
}

MeasurementRecord M(int i) {
  return {0, "graph", "pass-order", "cpu", "configuration " + std::to_string(i), 1.0 * i, "w", 0};
}

// The child's committed work through the Store: a running job, a queued job, kCommitted
// measurements and a cached result.
bool CommitBaseline(Store& store) {
  JobRecord job;
  job.key = {"fp", "pass-order", "cpu", "1"};
  job.request = "serialized request";
  job.id = "running-job";
  if (!store.CreateJob(job).ok()) return false;
  if (!store.UpdateJobState("running-job", JobState::kRunning, 0.3, 42.0).ok()) return false;
  job.id = "queued-job";
  if (!store.CreateJob(job).ok()) return false;
  std::vector<MeasurementRecord> batch;
  for (int i = 0; i < kCommitted; ++i) batch.push_back(M(i));
  if (!store.AppendMeasurements(batch).ok()) return false;
  ResultRecord result;
  result.key = job.key;
  result.baseline_score = 100;
  result.tuned_score = 42;
  result.budget_steps = 10;
  result.artifacts["optimized_hlo"] = std::string("HloModule\0x", 11);
  return store.PutResult(result).ok();
}

// Opens a second connection, as any writer would, and leaves a large write transaction open:
// 100k measurements (more than the page cache, so uncommitted pages spill into the WAL file), the
// running job marked done and the cached result deleted.
bool OpenTransaction(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) return false;
  sqlite3_busy_timeout(db, 5000);
  if (sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK) return false;
  sqlite3_stmt* insert = nullptr;
  if (sqlite3_prepare_v2(db,
                         "INSERT INTO measurements (graph_key, task, target, configuration, value, "
                         "worker, time_ms) VALUES ('uncommitted', 't', 'cpu', ?1, 1.0, 'w', 1)",
                         -1, &insert, nullptr) != SQLITE_OK) {
    return false;
  }
  for (int i = 0; i < 100'000; ++i) {
    const std::string config = "uncommitted configuration " + std::to_string(i);
    sqlite3_bind_text(insert, 1, config.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(insert) != SQLITE_DONE) return false;
    sqlite3_reset(insert);
  }
  sqlite3_finalize(insert);
  return sqlite3_exec(db,
                      "UPDATE jobs SET state = 'done', progress = 1 WHERE id = 'running-job';"
                      "DELETE FROM results;",
                      nullptr, nullptr, nullptr) == SQLITE_OK;
}

void ExpectIntactAndRecoverable(const std::string& path) {
  absl::StatusOr<std::unique_ptr<Store>> reopened = Store::Open(path);  // runs quick_check
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  Store& store = **reopened;
  EXPECT_TRUE(store.CheckIntegrity().ok());

  EXPECT_EQ(*store.CountMeasurements(), kCommitted);
  MeasurementFilter uncommitted;
  uncommitted.graph_key = "uncommitted";
  EXPECT_EQ(*store.CountMeasurements(uncommitted), 0);
  absl::StatusOr<std::vector<MeasurementRecord>> rows = store.QueryMeasurements({});
  ASSERT_TRUE(rows.ok()) << rows.status();
  for (int i = 0; i < kCommitted; ++i) {
    EXPECT_EQ((*rows)[i].configuration, "configuration " + std::to_string(i));
  }
  absl::StatusOr<std::optional<ResultRecord>> result =
      store.LookupResult({"fp", "pass-order", "cpu", "1"});
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->has_value());
  EXPECT_EQ((*result)->tuned_score, 42);
  EXPECT_EQ((*result)->artifacts.at("optimized_hlo"), std::string("HloModule\0x", 11));

  absl::StatusOr<JobRecord> job = store.GetJob("running-job");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->state, JobState::kRunning);  // the uncommitted "done" is gone
  EXPECT_EQ(job->progress, 0.3);

  absl::StatusOr<RecoveredJobs> recovered = store.RecoverAfterCrash(RecoveryPolicy::kResume);
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  EXPECT_EQ(recovered->resumed, std::vector<std::string>{"running-job"});
  EXPECT_TRUE(recovered->failed.empty());
  job = store.GetJob("running-job");
  EXPECT_EQ(job->state, JobState::kQueued);
  EXPECT_EQ(job->request, "serialized request");
  EXPECT_EQ(job->best_score, 42.0);
  EXPECT_EQ(store.GetJob("queued-job")->state, JobState::kQueued);
}

TEST_F(CrashTest, SigkillInsideAnOpenWriteTransaction) {
  const int status = RunChild(
      [&](int ready_fd) {
        absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path_);
        if (!store.ok() || !CommitBaseline(**store) || !OpenTransaction(path_)) return false;
        Signal(ready_fd);
        return true;
      },
      std::chrono::milliseconds(0));
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child status " << status;
  // The uncommitted transaction reached the disk (spilled WAL frames) before the kill.
  ASSERT_TRUE(fs::exists(path_ + "-wal"));
  EXPECT_GT(fs::file_size(path_ + "-wal"), 1'000'000u);
  ExpectIntactAndRecoverable(path_);
}

TEST_F(CrashTest, ExitInsideAnOpenWriteTransaction) {
  const int status = RunChild(
      [&](int) {
        absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path_);
        if (!store.ok() || !CommitBaseline(**store) || !OpenTransaction(path_)) return false;
        _exit(0);  // no destructors, no COMMIT, no ROLLBACK
      },
      std::chrono::milliseconds(0));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
  ExpectIntactAndRecoverable(path_);
}

// A daemon-like child appends measurement batches through the Store as fast as it can and is
// killed at some moment: every batch is found whole or not at all, and the job it was running is
// failed on recovery. Three rounds on the same file, killed after different delays.
TEST_F(CrashTest, SigkillDuringBatchAppendsKeepsWholeBatches) {
  constexpr int kBatch = 500;
  int64_t previous = 0;
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    const std::string job_id = "job" + std::to_string(round);
    const int status = RunChild(
        [&](int ready_fd) {
          absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path_);
          if (!store.ok()) return false;
          JobRecord job;
          job.id = job_id;
          job.key = {"fp", "pass-order", "cpu", "1"};
          if (!(*store)->CreateJob(job).ok()) return false;
          if (!(*store)->UpdateJobState(job_id, JobState::kRunning, 0).ok()) return false;
          std::vector<MeasurementRecord> batch;
          for (int i = 0; i < kBatch; ++i) batch.push_back(M(i));
          for (int64_t n = 1;; ++n) {
            if (!(*store)->AppendMeasurements(batch).ok()) return false;
            if (!(*store)->UpdateJobState(job_id, JobState::kRunning, 1.0 - 1.0 / (n + 1)).ok()) {
              return false;
            }
            if (n == 1) Signal(ready_fd);
          }
        },
        std::chrono::milliseconds(50 + 150 * round));
    ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "child status " << status;

    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    EXPECT_TRUE((*store)->CheckIntegrity().ok());
    absl::StatusOr<int64_t> count = (*store)->CountMeasurements();
    ASSERT_TRUE(count.ok()) << count.status();
    EXPECT_EQ(*count % kBatch, 0) << *count;
    EXPECT_GT(*count, previous);
    previous = *count;
    absl::StatusOr<RecoveredJobs> recovered = (*store)->RecoverAfterCrash(RecoveryPolicy::kFail);
    ASSERT_TRUE(recovered.ok()) << recovered.status();
    EXPECT_EQ(recovered->failed, std::vector<std::string>{job_id});
    absl::StatusOr<JobRecord> job = (*store)->GetJob(job_id);
    EXPECT_EQ(job->state, JobState::kFailed);
    EXPECT_EQ(job->error, kDaemonStoppedError);
    EXPECT_GT(job->progress, 0);
  }
}

}  // namespace
}  // namespace mltune::storage
