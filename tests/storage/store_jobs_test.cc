// Store jobs on both backends: creation, the state machine, listing, and recovery after a crash.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "storage/store.h"
#include "tests/storage/store_backends.h"

namespace mltune::storage {
namespace {

namespace fs = std::filesystem;

// Each test on both backends (tests/storage/store_backends.h).
class JobsTest : public StoreBackendsTest {
 protected:
  void SetUp() override {
    StoreBackendsTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    store_ = MustOpen();
    ASSERT_NE(store_, nullptr);
  }
  void TearDown() override {
    store_.reset();
    StoreBackendsTest::TearDown();
  }

  std::string MustCreate(const std::string& id = "") {
    JobRecord job;
    job.id = id;
    job.key = {"fp", "pass-order", "cpu", "1"};
    job.budget_steps = 500;
    job.strategy = "beam";
    job.request = std::string("req\0uest", 8);
    absl::StatusOr<std::string> created = store_->CreateJob(job);
    EXPECT_TRUE(created.ok()) << created.status();
    return created.ok() ? *created : "";
  }

  JobRecord MustGet(const std::string& id) {
    absl::StatusOr<JobRecord> job = store_->GetJob(id);
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? *job : JobRecord{};
  }

  std::unique_ptr<Store> store_;
};

TEST_P(JobsTest, CreateGeneratesAnIdAndStoresTheRequest) {
  const std::string id = MustCreate();
  ASSERT_EQ(id.size(), 16u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(MustCreate(), id);
  JobRecord job = MustGet(id);
  EXPECT_EQ(job.id, id);
  EXPECT_EQ(job.state, JobState::kQueued);
  EXPECT_EQ(job.key, (CacheKey{"fp", "pass-order", "cpu", "1"}));
  EXPECT_EQ(job.budget_steps, 500);
  EXPECT_EQ(job.strategy, "beam");
  EXPECT_EQ(job.request, std::string("req\0uest", 8));
  EXPECT_EQ(job.progress, 0);
  EXPECT_FALSE(job.best_score.has_value());
  EXPECT_EQ(job.attempts, 0);
  EXPECT_GT(job.created_ms, 1'600'000'000'000);
  EXPECT_EQ(job.started_ms, 0);
  EXPECT_EQ(job.finished_ms, 0);
}

TEST_P(JobsTest, CreateValidatesItsInput) {
  EXPECT_EQ(MustCreate("job-1_A"), "job-1_A");
  JobRecord job;
  job.key = {"fp", "pass-order", "cpu", "1"};
  job.id = "job-1_A";
  EXPECT_EQ(store_->CreateJob(job).status().code(), absl::StatusCode::kAlreadyExists);
  for (const std::string& bad_id :
       std::vector<std::string>{"has space", "semi;colon", std::string(65, 'a')}) {
    job.id = bad_id;
    EXPECT_EQ(store_->CreateJob(job).status().code(), absl::StatusCode::kInvalidArgument) << bad_id;
  }
  job.id = "";
  job.state = JobState::kRunning;
  EXPECT_EQ(store_->CreateJob(job).status().code(), absl::StatusCode::kInvalidArgument);
  job.state = JobState::kQueued;
  job.key.task = "";
  EXPECT_EQ(store_->CreateJob(job).status().code(), absl::StatusCode::kInvalidArgument);
  job.key.task = "t";
  job.budget_steps = -1;
  EXPECT_EQ(store_->CreateJob(job).status().code(), absl::StatusCode::kInvalidArgument);
  job.budget_steps = 1;
  job.progress = 2;
  EXPECT_EQ(store_->CreateJob(job).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->ListJobs()->size(), 1u);
}

TEST_P(JobsTest, LifecycleRecordsAttemptsProgressAndTimes) {
  const std::string id = MustCreate();
  ASSERT_TRUE(store_->UpdateJobState(id, JobState::kRunning, 0).ok());
  JobRecord job = MustGet(id);
  EXPECT_EQ(job.state, JobState::kRunning);
  EXPECT_EQ(job.attempts, 1);
  EXPECT_GT(job.started_ms, 0);

  ASSERT_TRUE(store_->UpdateJobState(id, JobState::kRunning, 0.5, 7.25).ok());
  ASSERT_TRUE(store_->UpdateJobState(id, JobState::kRunning, 0.75).ok());
  job = MustGet(id);
  EXPECT_EQ(job.attempts, 1);  // progress updates are not new attempts
  EXPECT_EQ(job.progress, 0.75);
  EXPECT_EQ(job.best_score, 7.25);  // kept when not given

  ASSERT_TRUE(store_->UpdateJobState(id, JobState::kDone, 1, 6.5).ok());
  job = MustGet(id);
  EXPECT_EQ(job.state, JobState::kDone);
  EXPECT_EQ(job.best_score, 6.5);
  EXPECT_GE(job.finished_ms, job.started_ms);
}

TEST(JobStateTest, TransitionTable) {
  using S = JobState;
  const S all[] = {S::kQueued, S::kRunning, S::kDone, S::kFailed, S::kCancelled};
  for (S from : all) {
    for (S to : all) {
      const bool expected =
          (from == S::kQueued && (to == S::kRunning || to == S::kCancelled)) || from == S::kRunning;
      EXPECT_EQ(IsLegalTransition(from, to), expected)
          << JobStateName(from) << " -> " << JobStateName(to);
    }
  }
  EXPECT_EQ(JobStateName(S::kCancelled), "cancelled");
}

TEST_P(JobsTest, IllegalTransitionsAreRefusedWithFailedPrecondition) {
  const std::string queued = MustCreate();
  for (JobState to : {JobState::kDone, JobState::kFailed, JobState::kQueued}) {
    absl::Status s = store_->UpdateJobState(queued, to, 0, std::nullopt, "why");
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_NE(s.message().find("illegal transition queued -> "), std::string::npos) << s;
  }
  EXPECT_EQ(MustGet(queued).state, JobState::kQueued);

  const std::string done = MustCreate();
  ASSERT_TRUE(store_->UpdateJobState(done, JobState::kRunning, 0).ok());
  ASSERT_TRUE(store_->UpdateJobState(done, JobState::kDone, 1).ok());
  for (JobState to : {JobState::kRunning, JobState::kQueued, JobState::kCancelled}) {
    EXPECT_EQ(store_->UpdateJobState(done, to, 0).code(), absl::StatusCode::kFailedPrecondition);
  }
  const std::string cancelled = MustCreate();
  ASSERT_TRUE(store_->UpdateJobState(cancelled, JobState::kCancelled, 0).ok());
  EXPECT_EQ(store_->UpdateJobState(cancelled, JobState::kRunning, 0).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(MustGet(cancelled).state, JobState::kCancelled);
}

TEST_P(JobsTest, BadUpdatesAreClearErrors) {
  const std::string id = MustCreate();
  ASSERT_TRUE(store_->UpdateJobState(id, JobState::kRunning, 0).ok());
  absl::Status no_error = store_->UpdateJobState(id, JobState::kFailed, 0.5);
  EXPECT_EQ(no_error.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(no_error.message().find("needs an error message"), std::string::npos);
  EXPECT_EQ(store_->UpdateJobState(id, JobState::kRunning, -0.1).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->UpdateJobState(id, JobState::kRunning, 0.5, std::nan("")).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->UpdateJobState("0123456789abcdef", JobState::kRunning, 0).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->GetJob("0123456789abcdef").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(store_->GetJob("").status().code(), absl::StatusCode::kInvalidArgument);

  ASSERT_TRUE(store_->UpdateJobState(id, JobState::kFailed, 0.5, std::nullopt, "worker lost").ok());
  EXPECT_EQ(MustGet(id).error, "worker lost");
}

TEST_P(JobsTest, ListJobsFiltersByStateOldestFirst) {
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(MustCreate("job" + std::to_string(i)));
  ASSERT_TRUE(store_->UpdateJobState(ids[1], JobState::kRunning, 0).ok());
  ASSERT_TRUE(store_->UpdateJobState(ids[3], JobState::kRunning, 0).ok());
  ASSERT_TRUE(store_->UpdateJobState(ids[4], JobState::kCancelled, 0).ok());
  auto names = [](const std::vector<JobRecord>& jobs) {
    std::vector<std::string> out;
    for (const JobRecord& j : jobs) out.push_back(j.id);
    return out;
  };
  EXPECT_EQ(names(*store_->ListJobs()), ids);
  EXPECT_EQ(names(*store_->ListJobs(JobState::kRunning)),
            (std::vector<std::string>{"job1", "job3"}));
  EXPECT_EQ(names(*store_->ListJobs(JobState::kQueued)),
            (std::vector<std::string>{"job0", "job2"}));
  EXPECT_TRUE(store_->ListJobs(JobState::kDone)->empty());
  absl::StatusOr<std::map<std::string, int64_t>> counts = store_->CountJobsByState();
  ASSERT_TRUE(counts.ok()) << counts.status();
  EXPECT_EQ(*counts,
            (std::map<std::string, int64_t>{{"cancelled", 1}, {"queued", 2}, {"running", 2}}));
}

TEST_P(JobsTest, CountsAreEmptyOnAFreshStore) {
  EXPECT_TRUE(store_->CountJobsByState()->empty());
  EXPECT_EQ(*store_->CountResults(), 0);
  storage::ResultRecord r;
  r.key = {"fp", "pass-order", "cpu", "1"};
  r.tuned_score = 1;
  ASSERT_TRUE(store_->PutResult(r).ok());
  r.key.target = "gpu";
  ASSERT_TRUE(store_->PutResult(r).ok());
  EXPECT_EQ(*store_->CountResults(), 2);
}

TEST_P(JobsTest, RecoverAfterCrashResumesRunningJobsUntilTheyUseUpTheirAttempts) {
  const std::string queued = MustCreate("queued");
  const std::string running = MustCreate("running");
  const std::string done = MustCreate("done");
  ASSERT_TRUE(store_->UpdateJobState(running, JobState::kRunning, 0.4, 3.0).ok());
  ASSERT_TRUE(store_->UpdateJobState(done, JobState::kRunning, 0).ok());
  ASSERT_TRUE(store_->UpdateJobState(done, JobState::kDone, 1).ok());

  for (int attempt = 1; attempt <= 2; ++attempt) {
    absl::StatusOr<RecoveredJobs> r = store_->RecoverAfterCrash(RecoveryPolicy::kResume, 3);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->resumed, std::vector<std::string>{running});
    EXPECT_TRUE(r->failed.empty());
    JobRecord job = MustGet(running);
    EXPECT_EQ(job.state, JobState::kQueued);
    EXPECT_EQ(job.attempts, attempt);
    EXPECT_EQ(job.best_score, 3.0);     // what the last run found survives
    EXPECT_EQ(job.request.size(), 8u);  // enough to run it again
    // The daemon picks it up again, and is killed again.
    ASSERT_TRUE(store_->UpdateJobState(running, JobState::kRunning, 0).ok());
  }
  // Third time running when the daemon died: it is not resumed again.
  absl::StatusOr<RecoveredJobs> r = store_->RecoverAfterCrash(RecoveryPolicy::kResume, 3);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->resumed.empty());
  EXPECT_EQ(r->failed, std::vector<std::string>{running});
  JobRecord job = MustGet(running);
  EXPECT_EQ(job.state, JobState::kFailed);
  EXPECT_NE(job.error.find(kDaemonStoppedError), std::string::npos) << job.error;
  EXPECT_NE(job.error.find("3 attempts"), std::string::npos) << job.error;
  EXPECT_GT(job.finished_ms, 0);

  EXPECT_EQ(MustGet(queued).state, JobState::kQueued);
  EXPECT_EQ(MustGet(done).state, JobState::kDone);
  // Nothing left to recover.
  r = store_->RecoverAfterCrash(RecoveryPolicy::kResume);
  EXPECT_TRUE(r->resumed.empty() && r->failed.empty());
  EXPECT_EQ(store_->RecoverAfterCrash(RecoveryPolicy::kResume, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(JobsTest, RecoverAfterCrashCanFailRunningJobs) {
  const std::string a = MustCreate("a");
  const std::string b = MustCreate("b");
  const std::string c = MustCreate("c");
  ASSERT_TRUE(store_->UpdateJobState(a, JobState::kRunning, 0).ok());
  ASSERT_TRUE(store_->UpdateJobState(c, JobState::kRunning, 0).ok());
  absl::StatusOr<RecoveredJobs> r = store_->RecoverAfterCrash(RecoveryPolicy::kFail);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->resumed.empty());
  EXPECT_EQ(r->failed, (std::vector<std::string>{a, c}));
  for (const std::string& id : {a, c}) {
    JobRecord job = MustGet(id);
    EXPECT_EQ(job.state, JobState::kFailed);
    EXPECT_EQ(job.error, kDaemonStoppedError);
  }
  EXPECT_EQ(MustGet(b).state, JobState::kQueued);
}

INSTANTIATE_TEST_SUITE_P(Backends, JobsTest, kStoreBackends,
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace mltune::storage
