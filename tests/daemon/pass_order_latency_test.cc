// The pass-order task scored by measured latency on the CPU backend (option score=latency): the
// option's validation, a tuned module that still computes what the original does, identical
// candidates measured once, candidates and inputs the backend cannot compile, and a real mltuned
// keeping latency and op-count results apart in its cache.
#include <cmath>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "client/rpc_client.h"
#include "daemon/task.h"
#include "gtest/gtest.h"
#include "ir/ir.h"
#include "nlohmann/json.hpp"
#include "optimizers/pass_order/cpu_latency.h"
#include "optimizers/pass_order/pass_order.h"
#include "passes/registry.h"
#include "tests/daemon/daemon_test_util.h"
#include "tests/support/equivalence.h"

namespace mltune::daemon {
namespace {

// A dense layer with redundancy the passes remove (a multiply by one, a duplicated tanh).
constexpr char kLayerHlo[] = R"(HloModule latency_layer
ENTRY main {
  x = f32[32,64] parameter(0)
  w = f32[64,64] parameter(1)
  b = f32[64] parameter(2)
  d = f32[32,64] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[32,64] broadcast(b), dimensions={1}
  a = f32[32,64] add(d, bb)
  one = f32[] constant(1)
  ones = f32[32,64] broadcast(one), dimensions={}
  m = f32[32,64] multiply(a, ones)
  t1 = f32[32,64] tanh(m)
  t2 = f32[32,64] tanh(m)
  ROOT r = f32[32,64] add(t1, t2)
})";

// The same computation under other names: structurally identical.
constexpr char kLayerRenamedHlo[] = R"(HloModule other_name
ENTRY entry {
  p0 = f32[32,64] parameter(0)
  p1 = f32[64,64] parameter(1)
  p2 = f32[64] parameter(2)
  dot.1 = f32[32,64] dot(p0, p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bcast = f32[32,64] broadcast(p2), dimensions={1}
  sum = f32[32,64] add(dot.1, bcast)
  c1 = f32[] constant(1)
  c1s = f32[32,64] broadcast(c1), dimensions={}
  prod = f32[32,64] multiply(sum, c1s)
  th.a = f32[32,64] tanh(prod)
  th.b = f32[32,64] tanh(prod)
  ROOT out = f32[32,64] add(th.a, th.b)
})";

// A custom call no backend knows: never lowered, whatever ops the backend learns.
constexpr char kUnknownCallHlo[] = R"(HloModule unknown_call
ENTRY main {
  x = f32[16,8] parameter(0)
  ROOT s = f32[16,8] custom-call(x), custom_call_target="mltune_test_no_such_target"
})";

// The layer's dense part inside a call: compiled with the call inlined, as XLA's CPU compiler does.
constexpr char kCalledLayerHlo[] = R"(HloModule called_layer
layer {
  x = f32[32,64] parameter(0)
  w = f32[64,64] parameter(1)
  ROOT d = f32[32,64] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
ENTRY main {
  in = f32[32,64] parameter(0)
  weights = f32[64,64] parameter(1)
  c = f32[32,64] call(in, weights), to_apply=layer
  ROOT t = f32[32,64] tanh(c)
})";

std::unique_ptr<ir::Module> Parse(const char* text) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : nullptr;
}

const Task& PassOrder() {
  const Task* task = TaskRegistry::Global().Find("pass-order");
  EXPECT_NE(task, nullptr);
  return *task;
}

class PassOrderLatencyTest : public ::testing::Test {
 protected:
  // Compiled kernels are cached across runs of the tests.
  void SetUp() override { setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0); }
};

TEST_F(PassOrderLatencyTest, OptionIsValidatedWithItsTarget) {
  const Task& task = PassOrder();
  EXPECT_TRUE(task.ValidateOptions({{"score", "latency"}}, "cpu").ok());
  EXPECT_TRUE(task.ValidateOptions({{"score", "op-count"}}, "cpu").ok());
  EXPECT_TRUE(task.ValidateOptions({{"score", "op-count"}}, "gpu").ok());
  EXPECT_TRUE(
      task.ValidateOptions({{"score", "latency"}, {"measure_seconds", "0.05"}}, "cpu").ok());

  absl::Status bad_value = task.ValidateOptions({{"score", "speed"}}, "cpu");
  EXPECT_TRUE(absl::IsInvalidArgument(bad_value)) << bad_value;
  EXPECT_NE(bad_value.message().find("score"), std::string::npos) << bad_value;
  EXPECT_NE(bad_value.message().find("op-count or latency"), std::string::npos) << bad_value;

  for (const std::string target : {"gpu", "tpu-v4-core"}) {
    absl::Status wrong_target = task.ValidateOptions({{"score", "latency"}}, target);
    EXPECT_TRUE(absl::IsInvalidArgument(wrong_target)) << wrong_target;
    EXPECT_NE(wrong_target.message().find("score=latency"), std::string::npos) << wrong_target;
    EXPECT_NE(wrong_target.message().find("target cpu only"), std::string::npos) << wrong_target;
    EXPECT_NE(wrong_target.message().find(target), std::string::npos) << wrong_target;
  }
  absl::Status op_count_on_tpu = task.ValidateOptions({{"score", "op-count"}}, "tpu-v4-core");
  EXPECT_TRUE(absl::IsInvalidArgument(op_count_on_tpu)) << op_count_on_tpu;

  EXPECT_FALSE(task.ValidateOptions({{"score", "latency"}, {"measure_seconds", "0"}}, "cpu").ok());
  absl::Status without_latency = task.ValidateOptions({{"measure_seconds", "0.05"}}, "cpu");
  EXPECT_TRUE(absl::IsInvalidArgument(without_latency)) << without_latency;

  // Latency results are cached apart from op-count ones.
  EXPECT_EQ(task.ScoreVariant({{"score", "latency"}}), "score=latency");
  EXPECT_EQ(task.ScoreVariant({{"score", "op-count"}}), "");
  EXPECT_EQ(task.ScoreVariant({}), "");
}

TEST_F(PassOrderLatencyTest, IdenticalCandidatesAreMeasuredOnce) {
  auto scorer =
      std::make_shared<opt::pass_order::CpuLatencyScorer>(opt::pass_order::CpuLatencyOptions{
          .measure = opt::pass_order::LatencyMeasureOptions(0.01), .compiler = {}, .seed = 0});
  std::unique_ptr<ir::Module> layer = Parse(kLayerHlo);
  std::unique_ptr<ir::Module> renamed = Parse(kLayerRenamedHlo);
  ASSERT_NE(layer, nullptr);
  ASSERT_NE(renamed, nullptr);
  const double first = scorer->Score(*layer);
  EXPECT_TRUE(std::isfinite(first) && first > 0) << first << " " << scorer->first_error();
  EXPECT_EQ(scorer->Score(*layer->Clone()), first);
  EXPECT_EQ(scorer->Score(*renamed), first);
  opt::pass_order::CpuLatencyStats stats = scorer->stats();
  EXPECT_EQ(stats.calls, 3);
  EXPECT_EQ(stats.measured, 1);
  EXPECT_EQ(stats.memo_hits, 2);

  // A search scores every module it reaches through the scorer; each distinct one is timed once.
  opt::pass_order::PassOrderOptions options;
  options.episode_length = 3;
  options.cost_model = opt::pass_order::LatencyScoreFn(scorer);
  absl::StatusOr<std::unique_ptr<opt::pass_order::PassOrderProblem>> problem =
      opt::pass_order::PassOrderProblem::Create(*layer, options);
  ASSERT_TRUE(problem.ok()) << problem.status();
  absl::StatusOr<std::unique_ptr<opt::Strategy>> greedy =
      opt::StrategyRegistry::Global().Create("greedy");
  ASSERT_TRUE(greedy.ok());
  absl::StatusOr<opt::Result> result = (*greedy)->Search(**problem, opt::Budget(60, 0), 0);
  ASSERT_TRUE(result.ok()) << result.status();
  stats = scorer->stats();
  EXPECT_GT(stats.measured, 1);
  EXPECT_EQ(stats.calls, stats.measured + stats.memo_hits + stats.unsupported + stats.failed);
  // Scoring the best again costs nothing.
  const int64_t measured = stats.measured;
  EXPECT_EQ(scorer->Score(*(*problem)->Apply(result->best)), result->best_score);
  EXPECT_EQ(scorer->stats().measured, measured);
}

TEST_F(PassOrderLatencyTest, CandidatesTheBackendCannotCompileScoreInfinity) {
  opt::pass_order::CpuLatencyScorer scorer;
  std::unique_ptr<ir::Module> unknown = Parse(kUnknownCallHlo);
  ASSERT_NE(unknown, nullptr);
  EXPECT_EQ(scorer.Score(*unknown), std::numeric_limits<double>::infinity());
  EXPECT_EQ(scorer.stats().unsupported, 1);
  EXPECT_NE(scorer.first_error().find("mltune_test_no_such_target"), std::string::npos)
      << scorer.first_error();
  // The input itself: the task fails up front, naming the op.
  absl::Status input = opt::pass_order::CheckLatencyScorable(*unknown);
  EXPECT_TRUE(absl::IsFailedPrecondition(input)) << input;
  EXPECT_NE(input.message().find("mltune_test_no_such_target"), std::string::npos) << input;

  TaskRequest request;
  request.module = unknown.get();
  request.target = "cpu";
  request.strategy = "greedy";
  request.options = {{"score", "latency"}};
  request.budget = opt::Budget(10, 0);
  absl::StatusOr<TaskOutcome> outcome = PassOrder().Run(request);
  ASSERT_FALSE(outcome.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(outcome.status())) << outcome.status();
  EXPECT_NE(outcome.status().message().find("mltune_test_no_such_target"), std::string::npos)
      << outcome.status();

  // Calls are inlined before lowering, as XLA's CPU compiler does.
  std::unique_ptr<ir::Module> called = Parse(kCalledLayerHlo);
  ASSERT_NE(called, nullptr);
  EXPECT_TRUE(opt::pass_order::CheckLatencyScorable(*called).ok());
  EXPECT_TRUE(std::isfinite(scorer.Score(*called))) << scorer.first_error();
}

TEST_F(PassOrderLatencyTest, TunedSequenceComputesWhatTheModuleDoes) {
  std::unique_ptr<ir::Module> layer = Parse(kLayerHlo);
  ASSERT_NE(layer, nullptr);
  std::vector<storage::MeasurementRecord> logged;
  TaskRequest request;
  request.module = layer.get();
  request.fingerprint = "test";
  request.target = "cpu";
  request.strategy = "greedy";
  request.options = {{"score", "latency"},
                     {"measure_seconds", "0.01"},
                     {"max_length", "3"},
                     {"warm_start", "false"}};
  request.budget = opt::Budget(60, 0);
  request.record_measurement = [&](storage::MeasurementRecord m) { logged.push_back(m); };
  absl::StatusOr<TaskOutcome> outcome = PassOrder().Run(request);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->scorer, "measured seconds");
  EXPECT_GT(outcome->original_score, 0);
  EXPECT_GT(outcome->baseline_score, 0);
  EXPECT_GT(outcome->tuned_score, 0);
  EXPECT_LE(outcome->tuned_score, outcome->original_score);
  EXPECT_LT(outcome->tuned_score, 1.0);  // seconds, not an op count

  // The best sequence, applied pass by pass, computes what the original does.
  const std::vector<std::string> names =
      absl::StrSplit(outcome->artifacts.at("pass_sequence"), '\n', absl::SkipEmpty());
  std::unique_ptr<ir::Module> tuned = layer->Clone();
  for (const std::string& name : names) {
    absl::StatusOr<std::unique_ptr<passes::Pass>> pass = passes::Registry::Global().Create(name);
    ASSERT_TRUE(pass.ok()) << pass.status();
    ASSERT_TRUE((*pass)->Run(*tuned).ok()) << name;
  }
  EXPECT_TRUE(mltune::testing::CheckEquivalent(*layer, *tuned).ok());
  absl::StatusOr<std::unique_ptr<ir::Module>> optimized =
      ir::ParseHloText(outcome->artifacts.at("optimized_hlo"));
  ASSERT_TRUE(optimized.ok()) << optimized.status();
  absl::Status same = mltune::testing::CheckEquivalent(*layer, **optimized);
  EXPECT_TRUE(same.ok()) << same;

  // Measured candidates go to the log under their own task, in seconds.
  ASSERT_FALSE(logged.empty());
  std::set<std::string> configurations;
  for (const storage::MeasurementRecord& m : logged) {
    EXPECT_EQ(m.task, "pass-order-latency");
    EXPECT_TRUE(std::isfinite(m.value) && m.value > 0 && m.value < 1) << m.value;
    EXPECT_TRUE(configurations.insert(m.configuration).second) << m.configuration;
  }
  const nlohmann::json stats = nlohmann::json::parse(outcome->artifacts.at("latency"));
  EXPECT_GE(stats.at("measured").get<int64_t>(), 2);
  EXPECT_EQ(stats.at("unsupported").get<int64_t>(), 0);
}

// Through a real mltuned: submitted with --option score=latency, cached under its own key, so an
// op-count request for the same graph is not answered with seconds.
TEST_F(PassOrderLatencyTest, DaemonKeepsLatencyAndOpCountResultsApart) {
  testing::TempDir dir;
  std::unique_ptr<Daemon> daemon = testing::MustStart(testing::TestConfig(dir.path()));
  ASSERT_NE(daemon, nullptr);
  std::unique_ptr<client::Client> client = client::Client::Connect(daemon->address());
  ASSERT_TRUE(client->WaitForReady(10).ok());

  client::SubmitRequest request;
  request.graph = kLayerHlo;
  request.graph_name = "layer.hlo";
  request.target = "gpu";
  request.budget.steps = 20;
  request.strategy = "greedy";
  request.options = {{"score", "latency"}};
  absl::StatusOr<client::SubmitResponse> refused = client->Submit(request);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("score=latency"), std::string::npos)
      << refused.status();

  auto run = [&](std::map<std::string, std::string> options) -> client::TaskResult {
    request.target = "cpu";
    request.options = std::move(options);
    absl::StatusOr<client::SubmitResponse> submitted = client->Submit(request);
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    if (!submitted.ok()) return {};
    EXPECT_FALSE(submitted->cached);
    absl::StatusOr<client::JobInfo> job = client->Watch(submitted->job_id);
    EXPECT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->state, client::JobState::kDone) << job->error;
    absl::StatusOr<client::JobInfo> done = client->GetJob(submitted->job_id);
    EXPECT_TRUE(done.ok() && done->results.size() == 1u);
    return done.ok() && !done->results.empty() ? done->results[0] : client::TaskResult{};
  };
  const client::TaskResult latency =
      run({{"score", "latency"}, {"measure_seconds", "0.01"}, {"max_length", "3"}});
  EXPECT_NE(latency.provenance.worker.find("measured seconds"), std::string::npos)
      << latency.provenance.worker;
  EXPECT_EQ(latency.provenance.search_version.find("score=latency") != std::string::npos, true)
      << latency.provenance.search_version;
  EXPECT_LT(latency.tuned_score, 1.0);
  EXPECT_FALSE(
      testing::LoggedMeasurements(daemon->store_path(), "pass-order-latency", "cpu").empty());

  const client::TaskResult ops = run({{"max_length", "3"}});
  EXPECT_NE(ops.provenance.worker.find("op-count"), std::string::npos) << ops.provenance.worker;
  EXPECT_GE(ops.tuned_score, 5);  // an op count

  // Each request is now answered from its own cache entry.
  request.options = {{"score", "latency"}, {"measure_seconds", "0.01"}, {"max_length", "3"}};
  absl::StatusOr<client::SubmitResponse> again = client->Submit(request);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(again->cached);
  ASSERT_EQ(again->job.results.size(), 1u);
  EXPECT_EQ(again->job.results[0].tuned_score, latency.tuned_score);
}

}  // namespace
}  // namespace mltune::daemon
