// mltuned end to end: a real gRPC server on an ephemeral loopback port (in-process Daemon), the
// real client library, a real SQLite store on disk. Submit -> watch -> result (with the optimized
// graph checked by execution), cache answers across a restart, continuing with a larger budget,
// de-duplication of identical in-flight requests, cancel, bad graphs and parameters, a full
// queue, and SIGTERM's drain-then-checkpoint.
#include "daemon/daemon.h"

#include <chrono>
#include <thread>
#include <vector>

#include "absl/strings/str_split.h"
#include "backends/gpu/device.h"
#include "client/rpc_client.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "ir/verifier.h"
#include "optimizers/rl/rl.h"
#include "storage/store.h"
#include "tests/daemon/daemon_test_util.h"
#include "tests/support/equivalence.h"

namespace mltune::daemon {
namespace {

using client::Client;
using client::JobInfo;
using client::JobState;
using client::SubmitRequest;
using testing::ExampleHlo;
using testing::MustStart;
using testing::SlowHlo;
using testing::TempDir;
using testing::TestConfig;

SubmitRequest Request(std::string graph, int64_t steps, const std::string& strategy = "beam") {
  SubmitRequest request;
  request.graph = std::move(graph);
  request.graph_name = "test.hlo";
  request.budget.steps = steps;
  request.strategy = strategy;
  return request;
}

// A request whose search runs for many seconds unless stopped.
SubmitRequest SlowRequest(const std::string& seed = "0") {
  SubmitRequest request = Request(SlowHlo(), 50'000'000, "random");
  request.budget.seconds = 120;
  request.options["seed"] = seed;
  return request;
}

JobInfo WaitUntilFinal(Client& client, const std::string& job_id) {
  absl::StatusOr<JobInfo> job = client.Watch(job_id);
  EXPECT_TRUE(job.ok()) << job.status();
  return job.ok() ? *job : JobInfo{};
}

// Polls until the job is running (searching), or fails the test after 60 s.
void WaitUntilRunning(Client& client, const std::string& job_id) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    absl::StatusOr<JobInfo> job = client.GetJob(job_id);
    ASSERT_TRUE(job.ok()) << job.status();
    if (job->state == JobState::kRunning && job->steps_done > 0) return;
    ASSERT_FALSE(client::IsFinal(job->state)) << client::JobStateName(job->state);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  FAIL() << "job " << job_id << " never ran";
}

class DaemonTest : public ::testing::Test {
 protected:
  void Start(DaemonConfig config) {
    daemon_ = MustStart(config);
    ASSERT_NE(daemon_, nullptr);
    client_ = Client::Connect(daemon_->address());
    ASSERT_TRUE(client_->WaitForReady(10).ok());
  }
  void Start() { Start(TestConfig(dir_.path())); }
  void Restart(DaemonConfig config) {
    client_.reset();
    daemon_.reset();
    Start(config);
  }

  TempDir dir_;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<Client> client_;
};

TEST_F(DaemonTest, SubmitWatchResultGivesAVerifiedEquivalentGraph) {
  Start();
  absl::StatusOr<client::SubmitResponse> submitted = client_->Submit(Request(ExampleHlo(), 200));
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  EXPECT_FALSE(submitted->cached);
  EXPECT_FALSE(submitted->attached);
  ASSERT_FALSE(submitted->job_id.empty());

  std::vector<JobInfo> updates;
  absl::StatusOr<JobInfo> final_job = client_->Watch(submitted->job_id, [&](const JobInfo& job) {
    updates.push_back(job);
    return true;
  });
  ASSERT_TRUE(final_job.ok()) << final_job.status();
  ASSERT_FALSE(updates.empty());
  EXPECT_EQ(final_job->state, JobState::kDone) << final_job->error;
  EXPECT_EQ(final_job->progress, 1.0);
  EXPECT_EQ(final_job->tasks, std::vector<std::string>{"pass-order"});
  EXPECT_EQ(final_job->target, "cpu");
  EXPECT_EQ(final_job->graph_name, "test.hlo");
  EXPECT_EQ(final_job->attempts, 1);
  EXPECT_GT(final_job->finished_unix_ms, 0);

  absl::StatusOr<JobInfo> job = client_->GetJob(submitted->job_id);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_EQ(job->results.size(), 1u);
  const client::TaskResult& result = job->results[0];
  EXPECT_EQ(result.task, "pass-order");
  EXPECT_EQ(result.strategy, "beam");
  EXPECT_EQ(result.budget_steps, 200);
  EXPECT_LE(result.tuned_score, result.baseline_score);
  EXPECT_LE(result.baseline_score, result.original_score);
  EXPECT_GT(result.original_score, 0);
  EXPECT_EQ(result.provenance.search_version, "1");
  EXPECT_NE(result.provenance.worker.find("op-count"), std::string::npos);
  ASSERT_TRUE(result.artifacts.contains("optimized_hlo"));
  ASSERT_TRUE(result.artifacts.contains("pass_sequence"));

  // The optimized graph parses, verifies and computes what the input does.
  absl::StatusOr<std::unique_ptr<ir::Module>> before = ir::ParseHloText(ExampleHlo());
  absl::StatusOr<std::unique_ptr<ir::Module>> after =
      ir::ParseHloText(result.artifacts.at("optimized_hlo"));
  ASSERT_TRUE(before.ok() && after.ok());
  EXPECT_TRUE(ir::VerifyModule(**after).ok());
  EXPECT_TRUE(mltune::testing::CheckEquivalent(**before, **after).ok());

  // Every scored candidate reached the measurement log.
  absl::StatusOr<client::ServerStats> stats = client_->GetStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_GE(stats->measurements, 1);
  EXPECT_EQ(stats->cached_results, 1);
  EXPECT_EQ(stats->jobs_by_state["done"], 1);
}

TEST_F(DaemonTest, TheCacheAnswersAfterARestartAndALargerBudgetContinues) {
  Start();
  absl::StatusOr<client::SubmitResponse> first = client_->Submit(Request(SlowHlo(200), 300));
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_FALSE(first->cached);
  const JobInfo done = WaitUntilFinal(*client_, first->job_id);
  ASSERT_EQ(done.state, JobState::kDone) << done.error;
  const double tuned = done.results.at(0).tuned_score;
  EXPECT_LT(tuned, done.results.at(0).original_score);

  Restart(TestConfig(dir_.path()));
  // Same or smaller budget: answered from the cache, no job.
  for (int64_t steps : {300, 100}) {
    absl::StatusOr<client::SubmitResponse> again = client_->Submit(Request(SlowHlo(200), steps));
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_TRUE(again->cached);
    EXPECT_TRUE(again->job_id.empty());
    EXPECT_EQ(again->job.state, JobState::kDone);
    ASSERT_EQ(again->job.results.size(), 1u);
    EXPECT_TRUE(again->job.results[0].from_cache);
    EXPECT_EQ(again->job.results[0].tuned_score, tuned);
    EXPECT_EQ(again->job.results[0].budget_steps, 300);
    EXPECT_TRUE(again->job.results[0].artifacts.contains("optimized_hlo"));
  }
  // A larger budget searches on from the cached best: never worse, and the cache now records it.
  absl::StatusOr<client::SubmitResponse> larger = client_->Submit(Request(SlowHlo(200), 600));
  ASSERT_TRUE(larger.ok()) << larger.status();
  EXPECT_FALSE(larger->cached);
  const JobInfo continued = WaitUntilFinal(*client_, larger->job_id);
  ASSERT_EQ(continued.state, JobState::kDone) << continued.error;
  EXPECT_LE(continued.results.at(0).tuned_score, tuned);
  EXPECT_EQ(continued.results.at(0).budget_steps, 600);

  client::LookupRequest lookup;
  lookup.graph = SlowHlo(200);
  absl::StatusOr<client::LookupResponse> found = client_->Lookup(lookup);
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->results.size(), 1u);
  EXPECT_EQ(found->results[0].budget_steps, 600);
  client::LookupRequest by_fingerprint;
  by_fingerprint.fingerprint = found->fingerprint;
  by_fingerprint.omit_artifacts = true;
  absl::StatusOr<client::LookupResponse> by_key = client_->Lookup(by_fingerprint);
  ASSERT_TRUE(by_key.ok()) << by_key.status();
  ASSERT_EQ(by_key->results.size(), 1u);
  EXPECT_TRUE(by_key->results[0].artifacts.empty());
  by_fingerprint.target = "gpu";
  EXPECT_TRUE(client_->Lookup(by_fingerprint)->results.empty());
}

TEST_F(DaemonTest, EveryStrategysFinishedSearchIsCachedWithTheWholeBudget) {
  Start();
  // One graph per strategy: the cache key has no strategy in it (any strategy's answer serves).
  int blocks = 40;
  for (const std::string strategy : {"random", "greedy", "beam", "annealing", "evolutionary"}) {
    ++blocks;
    absl::StatusOr<client::SubmitResponse> first =
        client_->Submit(Request(SlowHlo(blocks), 700, strategy));
    ASSERT_TRUE(first.ok()) << first.status();
    const JobInfo done = WaitUntilFinal(*client_, first->job_id);
    ASSERT_EQ(done.state, JobState::kDone) << strategy << ": " << done.error;
    EXPECT_EQ(done.results.at(0).budget_steps, 700) << strategy;
    // The repeat is a cache hit, whatever the strategy's last step was.
    absl::StatusOr<client::SubmitResponse> again =
        client_->Submit(Request(SlowHlo(blocks), 700, strategy));
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_TRUE(again->cached) << strategy;
  }
}

TEST_F(DaemonTest, IdenticalConcurrentSubmitsShareOneJob) {
  Start();
  std::vector<absl::StatusOr<client::SubmitResponse>> responses(4, absl::UnknownError(""));
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] { responses[i] = client_->Submit(SlowRequest()); });
  }
  for (std::thread& t : threads) t.join();
  int attached = 0;
  for (const auto& response : responses) {
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->job_id, responses[0]->job_id);
    attached += response->attached ? 1 : 0;
  }
  EXPECT_EQ(attached, 3);
  // A different request is a different job.
  absl::StatusOr<client::SubmitResponse> other = client_->Submit(SlowRequest("7"));
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE(other->job_id, responses[0]->job_id);
  EXPECT_FALSE(other->attached);
  for (const std::string& id : {responses[0]->job_id, other->job_id}) {
    ASSERT_TRUE(client_->Cancel(id).ok());
    EXPECT_EQ(WaitUntilFinal(*client_, id).state, JobState::kCancelled);
  }
}

TEST_F(DaemonTest, CancelStopsARunningJobAndCachesItsBestSoFar) {
  Start();
  absl::StatusOr<client::SubmitResponse> submitted = client_->Submit(SlowRequest());
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  WaitUntilRunning(*client_, submitted->job_id);
  absl::StatusOr<JobInfo> cancelled = client_->Cancel(submitted->job_id);
  ASSERT_TRUE(cancelled.ok()) << cancelled.status();
  const JobInfo final_job = WaitUntilFinal(*client_, submitted->job_id);
  EXPECT_EQ(final_job.state, JobState::kCancelled);
  EXPECT_GT(final_job.finished_unix_ms, 0);
  // Cancelling again is a clear error, as is an unknown job.
  absl::StatusOr<JobInfo> again = client_->Cancel(submitted->job_id);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(client_->Cancel("no-such-job").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->GetJob("no-such-job").status().code(), absl::StatusCode::kNotFound);
  // The partial search is cached with only the steps it spent: a new request continues it.
  client::LookupRequest lookup;
  lookup.graph = SlowHlo();
  absl::StatusOr<client::LookupResponse> found = client_->Lookup(lookup);
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->results.size(), 1u);
  EXPECT_LT(found->results[0].budget_steps, 50'000'000);
  EXPECT_LT(found->results[0].tuned_score, found->results[0].original_score);
}

TEST_F(DaemonTest, BadGraphsAndParametersAreInvalidArgumentWithTheirPosition) {
  DaemonConfig config = TestConfig(dir_.path());
  config.max_instructions = 1000;
  config.max_budget_steps = 10'000;
  Start(config);
  SubmitRequest bad = Request(
      "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT a = f32[2] add(p, q)\n}\n", 10);
  bad.graph_name = "model.hlo";
  absl::StatusOr<client::SubmitResponse> response = client_->Submit(bad);
  ASSERT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(response.status().message().find("model.hlo:4:"), std::string::npos)
      << response.status();
  EXPECT_NE(response.status().message().find("'q'"), std::string::npos) << response.status();

  auto expect_invalid = [&](SubmitRequest request, const std::string& needle) {
    absl::StatusOr<client::SubmitResponse> r = client_->Submit(request);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << needle;
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status();
  };
  expect_invalid(Request("", 10), "empty");
  expect_invalid(Request(SlowHlo(), 10), "--max-instructions");
  expect_invalid(Request(ExampleHlo(), 20'000), "--max-budget-steps");
  expect_invalid(Request(ExampleHlo(), -1), "budget.steps");
  expect_invalid(Request(ExampleHlo(), 10, "no-such-strategy"), "unknown strategy");
  SubmitRequest task = Request(ExampleHlo(), 10);
  task.tasks = {"no-such-task"};
  expect_invalid(task, "unknown task");
  SubmitRequest target = Request(ExampleHlo(), 10);
  target.target = "tpu-v9";
  expect_invalid(target, "no target");
  SubmitRequest option = Request(ExampleHlo(), 10);
  option.options["colour"] = "blue";
  expect_invalid(option, "unknown option");
  option.options = {{"max_length", "0"}};
  expect_invalid(option, "max_length");

  SubmitRequest onnx = Request("\x08\x07", 10);
  onnx.format = client::GraphFormat::kOnnx;
  expect_invalid(onnx, "the model has no graph");
  // Nothing was queued or stored by any of them.
  absl::StatusOr<client::ServerStats> stats = client_->GetStats();
  ASSERT_TRUE(stats.ok());
  EXPECT_TRUE(stats->jobs_by_state.empty());
}

TEST_F(DaemonTest, AFullQueueAnswersResourceExhausted) {
  DaemonConfig config = TestConfig(dir_.path());
  config.worker_threads = 1;
  config.queue_size = 1;
  Start(config);
  // One job runs and one waits; a third distinct request finds the queue full.
  std::vector<std::string> accepted;
  absl::Status rejected;
  for (int seed = 0; seed < 3 && rejected.ok(); ++seed) {
    absl::StatusOr<client::SubmitResponse> r = client_->Submit(SlowRequest(std::to_string(seed)));
    if (r.ok()) {
      accepted.push_back(r->job_id);
    } else {
      rejected = r.status();
    }
  }
  EXPECT_EQ(rejected.code(), absl::StatusCode::kResourceExhausted) << rejected;
  EXPECT_NE(rejected.message().find("queue is full"), std::string::npos) << rejected;
  EXPECT_GE(accepted.size(), 1u);
  // A cancelled queued job frees its slot at once.
  for (const std::string& id : accepted) ASSERT_TRUE(client_->Cancel(id).ok());
  for (const std::string& id : accepted) {
    EXPECT_EQ(WaitUntilFinal(*client_, id).state, JobState::kCancelled);
  }
  EXPECT_TRUE(client_->Submit(SlowRequest("9")).ok());
}

TEST_F(DaemonTest, ShutdownCheckpointsARunningJobAndTheNextStartResumesIt) {
  DaemonConfig config = TestConfig(dir_.path());
  config.drain_seconds = 0;  // checkpoint at once
  Start(config);
  absl::StatusOr<client::SubmitResponse> submitted = client_->Submit(SlowRequest());
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  const std::string id = submitted->job_id;
  WaitUntilRunning(*client_, id);
  client_.reset();
  daemon_->Shutdown();
  daemon_.reset();
  {
    // Closed cleanly: the job waits queued, its best so far is cached with the steps it spent.
    absl::StatusOr<std::unique_ptr<storage::Store>> store =
        storage::Store::Open((dir_.path() / "mltune.db").string());
    ASSERT_TRUE(store.ok()) << store.status();
    absl::StatusOr<storage::JobRecord> job = (*store)->GetJob(id);
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->state, storage::JobState::kQueued);
    EXPECT_EQ(job->attempts, 1);
    absl::StatusOr<int64_t> results = (*store)->CountResults();
    ASSERT_TRUE(results.ok());
    EXPECT_EQ(*results, 1);
  }
  Start(TestConfig(dir_.path()));
  WaitUntilRunning(*client_, id);
  absl::StatusOr<JobInfo> resumed = client_->GetJob(id);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->attempts, 2);
  ASSERT_TRUE(client_->Cancel(id).ok());
  EXPECT_EQ(WaitUntilFinal(*client_, id).state, JobState::kCancelled);
}

TEST_F(DaemonTest, ListingsDescribeTasksStrategiesAndWorkers) {
  Start();
  absl::StatusOr<client::StrategyList> list = client_->ListStrategies();
  ASSERT_TRUE(list.ok()) << list.status();
  std::vector<std::string> names;
  for (const client::NamedInfo& s : list->strategies) names.push_back(s.name);
  // The registry's strategies, then the tasks' own, by task: fusion's model-guided,
  // mcm-partition's solver-backed and GO modes, pass-order's agents, placement's GO policy,
  // tile's model-guided.
  EXPECT_EQ(names, (std::vector<std::string>{
                       "annealing", "beam", "evolutionary", "greedy", "random", "model-topk",
                       "solver-annealing", "solver-local-search", "solver-random", "contiguous-dp",
                       "go-fix", "go-sample", "rl-ppo", "rl-dqn", "rl-maxq", "go", "model-topk"}));
  EXPECT_NE(list->strategies.back().description.find("no trained model yet"), std::string::npos);
  EXPECT_EQ(list->default_strategy, "beam");
  std::vector<std::string> tasks;
  for (const client::NamedInfo& t : list->tasks) tasks.push_back(t.name);
  EXPECT_EQ(tasks, (std::vector<std::string>{"fusion", "mcm-partition", "pass-order", "placement",
                                             "tile", "xla-options"}));
  EXPECT_EQ(list->tasks[2].targets, (std::vector<std::string>{"cpu", "gpu", "xla-cpu", "xla-gpu",
                                                              "tpu-v3-core", "tpu-v4-core"}));
  EXPECT_EQ(list->tasks[5].targets, (std::vector<std::string>{"xla-cpu", "xla-gpu"}));
  // tile runs on the CPU backend (tests/daemon/sim_tasks_test.cc) and the GPU too.
  EXPECT_EQ(list->tasks[4].targets,
            (std::vector<std::string>{"cpu", "gpu", "tpu-v3-core", "tpu-v4-core"}));
  absl::StatusOr<std::vector<client::WorkerInfo>> workers = client_->ListWorkers();
  ASSERT_TRUE(workers.ok()) << workers.status();
  // Two job threads, the GPU, XLA (xla-cpu, xla-gpu; tests/daemon/xla_tasks_test.cc), then the
  // three simulators (tests/daemon/sim_tasks_test.cc).
  ASSERT_EQ(workers->size(), 8u);
  EXPECT_EQ((*workers)[3].name, "xla-cpu");
  EXPECT_EQ((*workers)[4].name, "xla-gpu");
  EXPECT_EQ((*workers)[3].kind, "xla");
  EXPECT_EQ((*workers)[0].name, "inprocess-0");
  EXPECT_EQ((*workers)[0].state, "idle");
  // The GPU is listed with its device, or as absent with the reason.
  const client::WorkerInfo& gpu = (*workers)[2];
  EXPECT_EQ(gpu.name, "gpu0");
  EXPECT_EQ(gpu.kind, "gpu");
  EXPECT_EQ(gpu.targets, std::vector<std::string>{"gpu"});
  const std::string absent = backends::gpu::GpuAbsentReason();
  if (absent.empty()) {
    EXPECT_EQ(gpu.state, "idle");
    EXPECT_NE(gpu.device.find("arch=sm_"), std::string::npos) << gpu.device;
  } else {
    EXPECT_EQ(gpu.state, "absent");
    EXPECT_EQ(gpu.device, absent);
  }
  absl::StatusOr<client::ServerStats> stats = client_->GetStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->worker_threads, 2);
  EXPECT_EQ(stats->queue_capacity, 64);
  EXPECT_EQ(stats->version, "0.1.0");
}

// The tile and fusion tasks on target gpu measure on the attached GPU: without one the job fails
// saying so; with one it finishes, its result cached under the device (not plain "gpu").
TEST_F(DaemonTest, GpuJobsRunOnTheAttachedDeviceOrSayThereIsNone) {
  Start();
  for (const char* task : {"tile", "fusion"}) {
    SubmitRequest request = Request(ExampleHlo(), 4, "random");
    request.tasks = {task};
    request.target = "gpu";
    absl::StatusOr<client::SubmitResponse> submitted = client_->Submit(request);
    ASSERT_TRUE(submitted.ok()) << task << ": " << submitted.status();
    const JobInfo done = WaitUntilFinal(*client_, submitted->job_id);
    if (!backends::gpu::GpuAbsentReason().empty()) {
      EXPECT_EQ(done.state, JobState::kFailed) << task;
      EXPECT_NE(done.error.find("no GPU to measure on"), std::string::npos)
          << task << ": " << done.error;
      continue;
    }
    ASSERT_EQ(done.state, JobState::kDone) << task << ": " << done.error;
  }
  EXPECT_EQ(backends::gpu::GpuCacheTarget().rfind("gpu@", 0), 0u);
}

TEST_F(DaemonTest, LearnedAgentsServeOnceTrainedAndSayHowToTrainBefore) {
  Start();
  // No model yet: a clear error that says how to get one.
  absl::StatusOr<client::SubmitResponse> early =
      client_->Submit(Request(ExampleHlo(), 100, "rl-maxq"));
  ASSERT_EQ(early.status().code(), absl::StatusCode::kFailedPrecondition) << early.status();
  EXPECT_NE(early.status().message().find("mltune train-agent"), std::string::npos);

  // Train a small Max-Q agent on the example, as `mltune train-agent` would, into the store.
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(ExampleHlo());
  ASSERT_TRUE(module.ok());
  std::shared_ptr<const ir::Module> shared(*std::move(module));
  opt::rl::PassOrderEnvOptions env_options;
  env_options.episode_length = 6;
  absl::StatusOr<std::unique_ptr<opt::rl::Environment>> env =
      opt::rl::MakePassOrderEnvironment({shared}, env_options);
  ASSERT_TRUE(env.ok()) << env.status();
  opt::rl::AgentConfig config;
  config.algo = opt::rl::Algo::kMaxQ;
  config.action_names = opt::rl::PassOrderActionNames(**env);
  config.episode_length = 6;
  config.hidden = 32;
  absl::StatusOr<std::unique_ptr<opt::rl::Agent>> agent = opt::rl::Agent::Create(
      config, (*env)->action_count(), (*env)->feature_size(), (*env)->node_feature_size());
  ASSERT_TRUE(agent.ok()) << agent.status();
  opt::rl::TrainOptions train;
  train.episodes = 10;
  train.eval_every = 0;
  ASSERT_TRUE((*agent)->Train(**env, train).ok());
  {
    absl::StatusOr<std::unique_ptr<storage::Store>> store =
        storage::Store::Open(daemon_->store_path());
    ASSERT_TRUE(store.ok()) << store.status();
    ASSERT_TRUE((*store)->PutModel("pass-order/rl-maxq", 1, (*agent)->Save(), "{}").ok());
  }

  absl::StatusOr<client::StrategyList> list = client_->ListStrategies();
  ASSERT_TRUE(list.ok());
  bool listed = false;
  for (const client::NamedInfo& s : list->strategies) {
    if (s.name == "rl-maxq") listed = s.description.find("v1") != std::string::npos;
  }
  EXPECT_TRUE(listed);

  SubmitRequest request = Request(ExampleHlo(), 60, "rl-maxq");
  request.options["rollouts"] = "2";
  absl::StatusOr<client::SubmitResponse> submitted = client_->Submit(request);
  ASSERT_TRUE(submitted.ok()) << submitted.status();
  const JobInfo done = WaitUntilFinal(*client_, submitted->job_id);
  ASSERT_EQ(done.state, JobState::kDone) << done.error;
  ASSERT_EQ(done.results.size(), 1u);
  EXPECT_EQ(done.results[0].strategy, "rl-maxq");
  EXPECT_LE(done.results[0].tuned_score, done.results[0].baseline_score);
  absl::StatusOr<std::unique_ptr<ir::Module>> before = ir::ParseHloText(ExampleHlo());
  absl::StatusOr<std::unique_ptr<ir::Module>> after =
      ir::ParseHloText(done.results[0].artifacts.at("optimized_hlo"));
  ASSERT_TRUE(before.ok() && after.ok());
  EXPECT_TRUE(mltune::testing::CheckEquivalent(**before, **after).ok());
}

TEST(DaemonStartTest, ATakenPortIsAClearError) {
  TempDir dir;
  std::unique_ptr<Daemon> first = MustStart(TestConfig(dir.path() / "a"));
  ASSERT_NE(first, nullptr);
  DaemonConfig config = TestConfig(dir.path() / "b");
  config.listen = first->address();
  absl::StatusOr<std::unique_ptr<Daemon>> second = Daemon::Start(config);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find(first->address()), std::string::npos) << second.status();
}

}  // namespace
}  // namespace mltune::daemon
