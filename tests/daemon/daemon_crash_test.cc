// mltuned killed with SIGKILL in the middle of a job, then started again on the same data
// directory: the store opens and passes its integrity check, no row is corrupt, and the job is
// resumed (or failed once it has used up --max-attempts); a cost model trainer it started dies with
// it. The daemon runs as a real child process.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "client/rpc_client.h"
#include "gtest/gtest.h"
#include "storage/store.h"
#include "tests/daemon/daemon_test_util.h"
#include "tests/support/daemon_child.h"

namespace mltune::daemon {
namespace {

namespace fs = std::filesystem;
using client::Client;
using client::JobInfo;
using client::JobState;
using testing::ReadFile;
using testing::SlowHlo;
using testing::TempDir;

// mltuned as a child process of this test.
std::unique_ptr<mltune::testing::DaemonChild> StartChild(const fs::path& data_dir,
                                                         std::vector<std::string> extra = {}) {
  return mltune::testing::DaemonChild::Start(MLTUNE_DAEMON_PATH, data_dir, std::move(extra));
}
using Child = mltune::testing::DaemonChild;

client::SubmitRequest SlowRequest() {
  client::SubmitRequest request;
  request.graph = SlowHlo();
  request.graph_name = "slow.hlo";
  request.strategy = "random";
  request.budget.steps = 50'000'000;
  request.budget.seconds = 120;
  return request;
}

void WaitUntilRunning(Client& client, const std::string& id, int64_t attempts) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    absl::StatusOr<JobInfo> job = client.GetJob(id);
    ASSERT_TRUE(job.ok()) << job.status();
    if (job->state == JobState::kRunning && job->attempts == attempts && job->steps_done > 0) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  FAIL() << "job " << id << " never ran (attempt " << attempts << ")";
}

// Submits the slow job, waits until it searches, and kills the daemon with SIGKILL.
std::string SubmitAndKill(const fs::path& data_dir) {
  std::unique_ptr<Child> daemon = StartChild(data_dir);
  if (daemon == nullptr) return "";
  std::unique_ptr<Client> client = Client::Connect(daemon->address());
  absl::StatusOr<client::SubmitResponse> submitted = client->Submit(SlowRequest());
  EXPECT_TRUE(submitted.ok()) << submitted.status();
  if (!submitted.ok()) return "";
  WaitUntilRunning(*client, submitted->job_id, 1);
  // Long enough for progress writes to be in flight when the kill lands.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const int status = daemon->Signal(SIGKILL);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  return submitted->job_id;
}

// The store after the crash: opens (quick_check included), passes the integrity check, and
// still says the job was running.
void ExpectIntactStoreWithRunningJob(const fs::path& data_dir, const std::string& id) {
  absl::StatusOr<std::unique_ptr<storage::Store>> store =
      storage::Store::Open((data_dir / "mltune.db").string());
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_TRUE((*store)->CheckIntegrity().ok());
  absl::StatusOr<storage::JobRecord> job = (*store)->GetJob(id);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->state, storage::JobState::kRunning);
  EXPECT_EQ(job->attempts, 1);
  EXPECT_GT(job->progress, 0);
  absl::StatusOr<std::vector<storage::JobRecord>> all = (*store)->ListJobs();
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->size(), 1u);
  EXPECT_TRUE((*store)->CountMeasurements().ok());
  EXPECT_TRUE((*store)->CountResults().ok());
}

TEST(DaemonCrashTest, AJobRunningAtSigkillIsResumedOnRestart) {
  TempDir dir;
  const std::string id = SubmitAndKill(dir.path());
  ASSERT_FALSE(id.empty());
  ExpectIntactStoreWithRunningJob(dir.path(), id);

  std::unique_ptr<Child> daemon = StartChild(dir.path());
  ASSERT_NE(daemon, nullptr);
  std::unique_ptr<Client> client = Client::Connect(daemon->address());
  WaitUntilRunning(*client, id, 2);
  ASSERT_TRUE(client->Cancel(id).ok());
  absl::StatusOr<JobInfo> final_job = client->Watch(id);
  ASSERT_TRUE(final_job.ok()) << final_job.status();
  EXPECT_EQ(final_job->state, JobState::kCancelled);
  EXPECT_EQ(final_job->attempts, 2);
  // And SIGTERM still stops it cleanly.
  const int status = daemon->Signal(SIGTERM);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << ReadFile(daemon->log());
  EXPECT_NE(ReadFile(daemon->log()).find("stopped cleanly"), std::string::npos);
}

TEST(DaemonCrashTest, AJobThatKeepsCrashingTheDaemonFailsAfterMaxAttempts) {
  TempDir dir;
  const std::string id = SubmitAndKill(dir.path());
  ASSERT_FALSE(id.empty());
  ExpectIntactStoreWithRunningJob(dir.path(), id);

  std::unique_ptr<Child> daemon = StartChild(dir.path(), {"--max-attempts", "1"});
  ASSERT_NE(daemon, nullptr);
  std::unique_ptr<Client> client = Client::Connect(daemon->address());
  absl::StatusOr<JobInfo> job = client->GetJob(id);
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->state, JobState::kFailed);
  EXPECT_NE(job->error.find("daemon stopped"), std::string::npos) << job->error;
  EXPECT_NE(ReadFile(daemon->log()).find(id), std::string::npos);
}

}  // namespace
}  // namespace mltune::daemon

namespace mltune::daemon {
namespace {

// The pid of a running `train-cost-model` on the store in `data_dir`, or 0.
pid_t TrainerOf(const fs::path& data_dir) {
  const std::string store = (data_dir / "mltune.db").string();
  for (const fs::directory_entry& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = ReadFile(e.path() / "cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find("train-cost-model") != std::string::npos &&
        cmdline.find(store) != std::string::npos) {
      return static_cast<pid_t>(std::stol(name));
    }
  }
  return 0;
}

// Gone, or a zombie nobody has reaped yet: either way it runs no more.
bool Running(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

TEST(DaemonCrashTest, ACostModelTrainerDiesWithAKilledDaemon) {
  TempDir dir;
  // A long training: it is still running when the daemon is killed.
  std::unique_ptr<Child> daemon =
      StartChild(dir.path(), {"--retrain-rows", "1", "--retrain-idle-seconds", "0.2", "--trainer",
                              MLTUNE_CLI_PATH, "--trainer-args",
                              "--epochs 1000000 --ensemble 1 --hidden 16 --layers 1"});
  ASSERT_NE(daemon, nullptr);
  std::unique_ptr<Client> client = Client::Connect(daemon->address());
  client::SubmitRequest request;
  request.graph = testing::ExampleHlo();
  request.graph_name = "mlp.hlo";
  request.target = "tpu-sim";
  request.tasks = {"tile"};
  request.strategy = "random";
  request.budget.steps = 60;
  absl::StatusOr<client::SubmitResponse> submitted = client->Submit(request);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  absl::StatusOr<JobInfo> job = client->Watch(submitted->job_id);
  ASSERT_TRUE(job.ok() && job->state == JobState::kDone) << ReadFile(daemon->log());

  pid_t trainer = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (trainer == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    trainer = TrainerOf(dir.path());
  }
  ASSERT_NE(trainer, 0) << "no trainer started:\n" << ReadFile(daemon->log());
  // Past the CLI's start, where it links its life to the daemon's.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ASSERT_TRUE(Running(trainer));
  daemon->Signal(SIGKILL);
  // The trainer runs at nice 19: on a loaded machine it may still be loading LibTorch, before
  // main's parent check, seconds after the kill (seen with two trainings beside the tests).
  const auto gone = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (Running(trainer) && std::chrono::steady_clock::now() < gone) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(Running(trainer)) << "the trainer outlived the killed daemon";
  if (Running(trainer)) kill(trainer, SIGKILL);
}

}  // namespace
}  // namespace mltune::daemon
