// Several mltuned processes on one PostgreSQL store (issue 56): identical requests sent to two
// daemons become one job, jobs submitted to one run on whichever daemon is free, a daemon killed
// with SIGKILL mid-job loses nothing (the other takes the job over once its lease expires), and
// the cached results are those a single daemon on SQLite finds. Skipped where no PostgreSQL
// server can be started here.
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client/rpc_client.h"
#include "gtest/gtest.h"
#include "tests/daemon/daemon_test_util.h"
#include "tests/support/daemon_child.h"
#include "tests/support/postgres_server.h"

namespace mltune::daemon {
namespace {

namespace fs = std::filesystem;
using client::Client;
using client::JobInfo;
using client::JobState;
using mltune::testing::DaemonChild;
using testing::ExampleHlo;
using testing::ReadFile;
using testing::SlowHlo;
using testing::TempDir;

constexpr char kLeaseSeconds[] = "2";

class DaemonReplicasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<mltune::testing::PostgresServer>> server =
        mltune::testing::PostgresServer::Start();
    if (absl::IsUnavailable(server.status())) GTEST_SKIP() << server.status().message();
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  // A daemon on the shared store, with its own data folder (logs) under the test's.
  std::unique_ptr<DaemonChild> StartReplica(const std::string& name) {
    return DaemonChild::Start(MLTUNE_DAEMON_PATH, dir_.path() / name,
                              {"--store", server_->url(), "--lease-seconds", kLeaseSeconds,
                               "--pretrained-dir", "none", "--retrain-rows", "0"});
  }

  TempDir dir_;
  std::unique_ptr<mltune::testing::PostgresServer> server_;
};

client::SubmitRequest SlowRequest() {
  client::SubmitRequest request;
  request.graph = SlowHlo();
  request.graph_name = "slow.hlo";
  request.strategy = "random";
  request.budget.steps = 50'000'000;
  request.budget.seconds = 120;
  return request;
}

// Small searches on four graphs whose scores are op counts: deterministic, so any daemon finds
// the same.
std::vector<client::SubmitRequest> QuickRequests() {
  std::vector<client::SubmitRequest> requests;
  for (int blocks : {0, 4, 8, 16}) {
    client::SubmitRequest request;
    request.graph = blocks == 0 ? ExampleHlo() : SlowHlo(blocks);
    request.graph_name = absl::StrCat("graph", blocks);
    request.strategy = "beam";
    request.budget.steps = 30;
    requests.push_back(request);
  }
  return requests;
}

absl::StatusOr<JobInfo> WaitUntilRunning(Client& client, const std::string& id, int64_t attempts,
                                         std::chrono::seconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    absl::StatusOr<JobInfo> job = client.GetJob(id);
    if (!job.ok()) return job.status();
    if (job->state == JobState::kRunning && job->attempts == attempts) return job;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("job ", id, " never ran (attempt ", attempts, ")"));
}

// Which of `clients` has a worker running `id` (-1: none).
int RunningOn(const std::vector<Client*>& clients, const std::string& id) {
  for (size_t i = 0; i < clients.size(); ++i) {
    absl::StatusOr<std::vector<client::WorkerInfo>> workers = clients[i]->ListWorkers();
    if (!workers.ok()) continue;
    for (const client::WorkerInfo& w : *workers) {
      if (w.job_id == id) return static_cast<int>(i);
    }
  }
  return -1;
}

// Each finished job's tuned score and artifacts (but the search's timing trace), by graph.
std::map<std::string, std::pair<double, std::map<std::string, std::string>>> Outcomes(
    const std::vector<JobInfo>& jobs) {
  std::map<std::string, std::pair<double, std::map<std::string, std::string>>> out;
  for (const JobInfo& job : jobs) {
    EXPECT_EQ(job.state, JobState::kDone) << job.job_id << ": " << job.error;
    EXPECT_EQ(job.results.size(), 1u) << job.job_id;
    if (job.results.empty()) continue;
    const client::TaskResult& r = job.results.front();
    std::map<std::string, std::string> artifacts = r.artifacts;
    artifacts.erase("best_so_far");
    out[job.graph_name] = {r.tuned_score, artifacts};
  }
  return out;
}

TEST_F(DaemonReplicasTest, TwoDaemonsShareOneQueueAndTakeOverAKilledDaemonsJob) {
  std::unique_ptr<DaemonChild> a = StartReplica("a");
  std::unique_ptr<DaemonChild> b = StartReplica("b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::unique_ptr<Client> ca = Client::Connect(a->address());
  std::unique_ptr<Client> cb = Client::Connect(b->address());

  // The same request to both daemons: one job.
  absl::StatusOr<client::SubmitResponse> first = ca->Submit(SlowRequest());
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<client::SubmitResponse> second = cb->Submit(SlowRequest());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->job_id, first->job_id);
  EXPECT_TRUE(second->attached);
  const std::string slow = first->job_id;
  ASSERT_TRUE(WaitUntilRunning(*cb, slow, 1, std::chrono::seconds(60)).ok());
  std::vector<Client*> clients = {ca.get(), cb.get()};
  const int holder = RunningOn(clients, slow);
  ASSERT_GE(holder, 0) << "no daemon lists a worker on " << slow;

  // Each daemon has one worker: the other daemon runs every quick job while the slow one runs.
  std::vector<std::string> quick;
  for (const client::SubmitRequest& request : QuickRequests()) {
    absl::StatusOr<client::SubmitResponse> s = clients[holder]->Submit(request);
    ASSERT_TRUE(s.ok()) << s.status();
    quick.push_back(s->job_id);
  }
  Client& other = *clients[1 - holder];
  for (const std::string& id : quick) {
    absl::StatusOr<JobInfo> job = other.Watch(id);
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->state, JobState::kDone) << job->error;
    EXPECT_EQ(job->attempts, 1);
  }

  // SIGKILL the daemon running the slow job: the other takes it over after the lease.
  DaemonChild& victim = holder == 0 ? *a : *b;
  const int status = victim.Signal(SIGKILL);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  const auto killed = std::chrono::steady_clock::now();
  absl::StatusOr<JobInfo> resumed = WaitUntilRunning(other, slow, 2, std::chrono::seconds(30));
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  const double failover =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  EXPECT_LT(failover, 15.0);
  std::cout << "failover after SIGKILL: " << failover << " s (lease " << kLeaseSeconds << " s)\n";
  // The worker shows the job once it has decoded the stored request.
  const auto shown = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (RunningOn({&other}, slow) != 0 && std::chrono::steady_clock::now() < shown) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(RunningOn({&other}, slow), 0);

  // A cancel reaches the job where it now runs; nothing else was lost or run twice.
  ASSERT_TRUE(other.Cancel(slow).ok());
  absl::StatusOr<JobInfo> cancelled = other.Watch(slow);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  EXPECT_EQ(cancelled->state, JobState::kCancelled);
  EXPECT_EQ(cancelled->attempts, 2);
  for (const std::string& id : quick) {
    absl::StatusOr<JobInfo> job = other.GetJob(id);
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->state, JobState::kDone);
    EXPECT_EQ(job->attempts, 1);
  }
}

TEST_F(DaemonReplicasTest, ResultsMatchASingleDaemonsOnSqlite) {
  std::vector<JobInfo> single_jobs;
  {
    std::unique_ptr<DaemonChild> single = DaemonChild::Start(
        MLTUNE_DAEMON_PATH, dir_.path() / "single", {"--pretrained-dir", "none"});
    ASSERT_NE(single, nullptr);
    std::unique_ptr<Client> client = Client::Connect(single->address());
    for (const client::SubmitRequest& request : QuickRequests()) {
      absl::StatusOr<client::SubmitResponse> s = client->Submit(request);
      ASSERT_TRUE(s.ok()) << s.status();
      absl::StatusOr<JobInfo> job = client->Watch(s->job_id);
      ASSERT_TRUE(job.ok()) << job.status();
      single_jobs.push_back(*job);
    }
  }
  std::unique_ptr<DaemonChild> a = StartReplica("a");
  std::unique_ptr<DaemonChild> b = StartReplica("b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  std::unique_ptr<Client> ca = Client::Connect(a->address());
  std::unique_ptr<Client> cb = Client::Connect(b->address());
  std::vector<std::string> ids;
  int n = 0;
  for (const client::SubmitRequest& request : QuickRequests()) {
    absl::StatusOr<client::SubmitResponse> s = (n++ % 2 == 0 ? ca : cb)->Submit(request);
    ASSERT_TRUE(s.ok()) << s.status();
    ids.push_back(s->job_id);
  }
  std::vector<JobInfo> shared_jobs;
  for (const std::string& id : ids) {
    absl::StatusOr<JobInfo> job = ca->Watch(id);
    ASSERT_TRUE(job.ok()) << job.status();
    shared_jobs.push_back(*job);
  }
  const auto single = Outcomes(single_jobs);
  const auto shared = Outcomes(shared_jobs);
  ASSERT_EQ(single.size(), 4u);
  EXPECT_EQ(shared, single);
}

}  // namespace
}  // namespace mltune::daemon
