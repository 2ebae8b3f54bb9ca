// Remote GPU measurement end to end on a machine without a GPU: mltuned, which has none, and an
// mltune-worker child registered as a GPU of architecture sm_90 whose runner is
// mltune-gpu-emulator (the generated CUDA run on the CPU). A gpu tile job is compiled by the daemon
// for the worker's architecture, timed by the worker, and cached under the worker's device; the
// measurement log holds the timings. Skipped where the build has no CUDA toolkit, or where a real
// GPU is attached (the daemon then measures on it itself).
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "backends/gpu/device.h"
#include "backends/gpu/gpu_program.h"
#include "backends/gpu/nvrtc_compiler.h"
#include "client/rpc_client.h"
#include "gtest/gtest.h"
#include "tests/daemon/daemon_test_util.h"

namespace mltune::daemon {
namespace {

using client::Client;
using client::JobInfo;
using client::JobState;
using testing::ExampleHlo;
using testing::TempDir;

// mltune-worker as a child process, killed with the object.
class WorkerChild {
 public:
  explicit WorkerChild(std::vector<std::string> args) {
    pid_ = fork();
    if (pid_ == 0) {
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~WorkerChild() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }

 private:
  pid_t pid_ = -1;
};

TEST(RemoteGpuTest, AGpuWorkerTimesTheDaemonsGpuJobs) {
  if (backends::gpu::NvrtcVersion().empty() || backends::gpu::GpuEmulatorPath().empty()) {
    GTEST_SKIP() << "built without the CUDA toolkit: no NVRTC or mltune-gpu-emulator";
  }
  if (backends::gpu::AttachedDevice().ok()) {
    GTEST_SKIP() << "a GPU is attached: the daemon measures on it itself";
  }
  TempDir dir;
  std::unique_ptr<Daemon> daemon = testing::MustStart(testing::TestConfig(dir.path()));
  ASSERT_NE(daemon, nullptr);
  std::unique_ptr<Client> client = Client::Connect(daemon->address());
  WorkerChild worker({MLTUNE_WORKER_PATH, "--server", daemon->address(), "--target", "gpu",
                      "--gpu-arch", "sm_90", "--gpu-runner", backends::gpu::GpuEmulatorPath(),
                      "--host", "gpu-box", "--wait-ms", "200"});
  const std::string device = backends::gpu::DescriptorForArch("sm_90")->Key();
  bool registered = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!registered && std::chrono::steady_clock::now() < deadline) {
    absl::StatusOr<std::vector<client::WorkerInfo>> workers = client->ListWorkers();
    ASSERT_TRUE(workers.ok()) << workers.status();
    for (const client::WorkerInfo& w : *workers) {
      registered |= w.kind == "remote" && w.host == "gpu-box" && w.device == device;
    }
    if (!registered) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(registered) << "the GPU worker never registered";
  // The results are cached under the remote device's target.
  EXPECT_EQ(backends::gpu::GpuCacheTarget(),
            backends::gpu::GpuCacheTarget(*backends::gpu::DescriptorForArch("sm_90")));

  client::SubmitRequest request;
  request.graph = ExampleHlo();
  request.graph_name = "mlp";
  request.tasks = {"tile"};
  request.target = "gpu";
  request.strategy = "random";
  request.budget.steps = 3;
  absl::StatusOr<client::SubmitResponse> submitted = client->Submit(request);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  absl::StatusOr<JobInfo> job = client->Watch(submitted->job_id);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_EQ(job->state, JobState::kDone) << job->error;
  ASSERT_EQ(job->results.size(), 1u);
  EXPECT_GT(job->results[0].tuned_score, 0);
  EXPECT_EQ(job->results[0].artifacts.at("device"), device);
  std::vector<storage::MeasurementRecord> rows = testing::LoggedMeasurements(
      daemon->store_path(), "tile-kernel", backends::gpu::GpuCacheTarget());
  EXPECT_FALSE(rows.empty());
  bool remote_measured = false;
  absl::StatusOr<std::vector<client::WorkerInfo>> after = client->ListWorkers();
  ASSERT_TRUE(after.ok()) << after.status();
  for (const client::WorkerInfo& w : *after) {
    remote_measured |= w.host == "gpu-box" && w.candidates_evaluated > 0;
  }
  EXPECT_TRUE(remote_measured);
}

}  // namespace
}  // namespace mltune::daemon
