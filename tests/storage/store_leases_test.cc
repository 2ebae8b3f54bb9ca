// Job sharing on both backends: de-duplicated submission with a bounded queue, claims under
// leases (oldest first, each job to exactly one of several concurrent claimers), renewal, the
// takeover of an expired lease (and failure once max_attempts are used), fenced updates that a
// daemon which lost its job cannot make, and cancel requests for queued and running jobs.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "storage/store.h"
#include "tests/storage/store_backends.h"

namespace mltune::storage {
namespace {

class LeasesTest : public StoreBackendsTest {
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

  static JobRecord Job(const std::string& dedup_key = "") {
    JobRecord job;
    job.key = {"fp", "pass-order", "cpu", "1"};
    job.budget_steps = 100;
    job.strategy = "beam";
    job.request = "request";
    job.dedup_key = dedup_key;
    return job;
  }

  std::string MustSubmit(const std::string& dedup_key = "") {
    absl::StatusOr<SubmittedJob> submitted = store_->SubmitJob(Job(dedup_key), 0);
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    EXPECT_FALSE(submitted.ok() && submitted->attached);
    return submitted.ok() ? submitted->id : "";
  }

  std::optional<JobRecord> MustClaim(Store& store, const std::string& owner, int64_t lease_ms,
                                     int max_attempts = 3) {
    absl::StatusOr<std::optional<JobRecord>> claimed =
        store.ClaimJob(owner, lease_ms, max_attempts);
    EXPECT_TRUE(claimed.ok()) << claimed.status();
    return claimed.ok() ? *claimed : std::nullopt;
  }

  std::unique_ptr<Store> store_;
};

TEST_P(LeasesTest, IdenticalRequestsAttachWhileInFlightAndNotAfter) {
  const std::string id = MustSubmit("same");
  absl::StatusOr<SubmittedJob> again = store_->SubmitJob(Job("same"), 0);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->id, id);
  EXPECT_TRUE(again->attached);
  // Another daemon's store attaches too.
  std::unique_ptr<Store> other = MustOpen();
  absl::StatusOr<SubmittedJob> elsewhere = other->SubmitJob(Job("same"), 0);
  ASSERT_TRUE(elsewhere.ok()) << elsewhere.status();
  EXPECT_EQ(elsewhere->id, id);
  // CreateJob refuses what SubmitJob would attach.
  EXPECT_TRUE(absl::IsAlreadyExists(store_->CreateJob(Job("same")).status()));
  // Once the job is finished, the same request makes a new job.
  ASSERT_TRUE(store_->RequestCancel(id).ok());
  const std::string next = MustSubmit("same");
  EXPECT_NE(next, id);
  // Jobs without a dedup key never attach.
  EXPECT_NE(MustSubmit(), MustSubmit());
}

TEST_P(LeasesTest, ConcurrentIdenticalSubmissionsMakeOneJob) {
  std::vector<std::unique_ptr<Store>> daemons;
  for (int i = 0; i < 4; ++i) daemons.push_back(MustOpen());
  std::mutex mu;
  std::set<std::string> ids;
  int created = 0;
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      for (int round = 0; round < 5; ++round) {
        absl::StatusOr<SubmittedJob> s = daemons[i]->SubmitJob(Job("race"), 0);
        ASSERT_TRUE(s.ok()) << s.status();
        std::lock_guard<std::mutex> lock(mu);
        ids.insert(s->id);
        created += s->attached ? 0 : 1;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ids.size(), 1u);
  EXPECT_EQ(created, 1);
}

TEST_P(LeasesTest, AFullQueueRefusesNewJobsButStillAttaches) {
  MustSubmit("a");
  MustSubmit("b");
  absl::StatusOr<SubmittedJob> full = store_->SubmitJob(Job("c"), 2);
  EXPECT_TRUE(absl::IsResourceExhausted(full.status())) << full.status();
  EXPECT_NE(full.status().message().find("queue is full"), std::string::npos);
  absl::StatusOr<SubmittedJob> attached = store_->SubmitJob(Job("a"), 2);
  ASSERT_TRUE(attached.ok()) << attached.status();
  EXPECT_TRUE(attached->attached);
  EXPECT_EQ(store_->ListJobs().value().size(), 2u);
}

TEST_P(LeasesTest, RacingSubmittersNeverQueuePastTheBound) {
  std::vector<std::unique_ptr<Store>> daemons;
  for (int i = 0; i < 4; ++i) daemons.push_back(MustOpen());
  std::atomic<int> created{0}, refused{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      for (int n = 0; n < 5; ++n) {
        absl::StatusOr<SubmittedJob> s = daemons[i]->SubmitJob(Job(), 6);
        if (s.ok()) {
          ++created;
        } else {
          EXPECT_TRUE(absl::IsResourceExhausted(s.status())) << s.status();
          ++refused;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(created.load(), 6);
  EXPECT_EQ(refused.load(), 14);
  EXPECT_EQ(store_->ListJobs(JobState::kQueued).value().size(), 6u);
}

TEST_P(LeasesTest, ClaimsTakeTheOldestQueuedJobUnderALease) {
  const std::string first = MustSubmit();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const std::string second = MustSubmit();
  std::optional<JobRecord> claimed = MustClaim(*store_, "daemon-a", 60'000);
  ASSERT_TRUE(claimed.has_value());
  EXPECT_EQ(claimed->id, first);
  EXPECT_EQ(claimed->state, JobState::kRunning);
  EXPECT_EQ(claimed->owner, "daemon-a");
  EXPECT_EQ(claimed->attempts, 1);
  EXPECT_EQ(claimed->request, "request");
  EXPECT_GT(claimed->lease_expires_ms, claimed->started_ms);
  EXPECT_EQ(MustClaim(*store_, "daemon-b", 60'000)->id, second);
  EXPECT_FALSE(MustClaim(*store_, "daemon-c", 60'000).has_value());
  // Leaving running clears the lease.
  ASSERT_TRUE(store_->UpdateJobState(first, JobState::kDone, 1, 2.0, "", "daemon-a").ok());
  JobRecord done = store_->GetJob(first).value();
  EXPECT_EQ(done.owner, "");
  EXPECT_EQ(done.lease_expires_ms, 0);
}

TEST_P(LeasesTest, ConcurrentClaimersEachGetDistinctJobs) {
  constexpr int kJobs = 40;
  for (int i = 0; i < kJobs; ++i) MustSubmit();
  std::vector<std::unique_ptr<Store>> daemons;
  for (int i = 0; i < 4; ++i) daemons.push_back(MustOpen());
  std::mutex mu;
  std::map<std::string, std::string> owners;  // job -> claimer
  std::atomic<int> duplicates{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      const std::string owner = "daemon-" + std::to_string(i);
      while (true) {
        absl::StatusOr<std::optional<JobRecord>> claimed = daemons[i]->ClaimJob(owner, 60'000, 3);
        ASSERT_TRUE(claimed.ok()) << claimed.status();
        if (!claimed->has_value()) return;
        std::lock_guard<std::mutex> lock(mu);
        if (!owners.emplace((*claimed)->id, owner).second) ++duplicates;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(duplicates.load(), 0);
  EXPECT_EQ(owners.size(), static_cast<size_t>(kJobs));
  for (const auto& [id, owner] : owners) {
    JobRecord job = store_->GetJob(id).value();
    EXPECT_EQ(job.owner, owner);
    EXPECT_EQ(job.attempts, 1);
  }
}

TEST_P(LeasesTest, RenewalKeepsAJobAndAnExpiredLeaseIsTakenOver) {
  const std::string id = MustSubmit();
  ASSERT_TRUE(MustClaim(*store_, "a", 200).has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  absl::StatusOr<std::map<std::string, bool>> renewed = store_->RenewLeases("a", 200);
  ASSERT_TRUE(renewed.ok()) << renewed.status();
  EXPECT_EQ(*renewed, (std::map<std::string, bool>{{id, false}}));
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  // Renewed 120 ms ago for 200 ms: still a's.
  EXPECT_FALSE(MustClaim(*store_, "b", 200).has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  std::optional<JobRecord> taken = MustClaim(*store_, "b", 60'000);
  ASSERT_TRUE(taken.has_value());
  EXPECT_EQ(taken->id, id);
  EXPECT_EQ(taken->owner, "b");
  EXPECT_EQ(taken->attempts, 2);
  // a lost it: its renewal no longer lists the job and its writes are refused.
  EXPECT_TRUE(store_->RenewLeases("a", 200).value().empty());
  absl::Status fenced = store_->UpdateJobState(id, JobState::kDone, 1, 1.0, "", "a");
  EXPECT_TRUE(absl::IsFailedPrecondition(fenced)) << fenced;
  EXPECT_NE(fenced.message().find("lease lost"), std::string::npos) << fenced;
  EXPECT_TRUE(store_->UpdateJobState(id, JobState::kRunning, 0.5, 1.0, "", "b").ok());
  EXPECT_EQ(store_->GetJob(id).value().owner, "b");
}

TEST_P(LeasesTest, AJobWhoseLeaseExpiresAfterItsLastAttemptFails) {
  const std::string id = MustSubmit();
  ASSERT_TRUE(MustClaim(*store_, "a", 1, /*max_attempts=*/2).has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_TRUE(MustClaim(*store_, "b", 1, 2).has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(MustClaim(*store_, "c", 60'000, 2).has_value());
  JobRecord job = store_->GetJob(id).value();
  EXPECT_EQ(job.state, JobState::kFailed);
  EXPECT_EQ(job.attempts, 2);
  EXPECT_NE(job.error.find("stopped renewing its lease"), std::string::npos) << job.error;
}

TEST_P(LeasesTest, CancelRequestsCancelQueuedJobsAndFlagRunningOnes) {
  const std::string queued = MustSubmit();
  JobRecord cancelled = store_->RequestCancel(queued).value();
  EXPECT_EQ(cancelled.state, JobState::kCancelled);
  EXPECT_GT(cancelled.finished_ms, 0);

  const std::string running = MustSubmit();
  ASSERT_TRUE(MustClaim(*store_, "a", 60'000).has_value());
  JobRecord flagged = store_->RequestCancel(running).value();
  EXPECT_EQ(flagged.state, JobState::kRunning);
  EXPECT_TRUE(flagged.cancel_requested);
  EXPECT_EQ(store_->RenewLeases("a", 60'000).value(),
            (std::map<std::string, bool>{{running, true}}));
  ASSERT_TRUE(store_->UpdateJobState(running, JobState::kCancelled, 0.3, {}, "", "a").ok());
  EXPECT_FALSE(store_->GetJob(running).value().cancel_requested);

  absl::StatusOr<JobRecord> again = store_->RequestCancel(running);
  EXPECT_TRUE(absl::IsFailedPrecondition(again.status())) << again.status();
  EXPECT_TRUE(absl::IsNotFound(store_->RequestCancel("nope").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(store_->RequestCancel("bad id!").status()));
}

TEST_P(LeasesTest, BadLeasesAreClearErrors) {
  EXPECT_TRUE(absl::IsInvalidArgument(store_->ClaimJob("", 1000, 3).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(store_->ClaimJob("a", 0, 3).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(store_->ClaimJob("a", 1000, 0).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(store_->RenewLeases("", 1000).status()));
}

INSTANTIATE_TEST_SUITE_P(Backends, LeasesTest, kStoreBackends,
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace mltune::storage
