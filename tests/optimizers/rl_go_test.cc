// The GO policy: checkpoints round-trip, serving keeps to its budget, bad input is refused, and
// training across graphs of one family transfers to a larger graph of it never seen.
#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "backends/cluster_sim/cluster_sim.h"
#include "backends/mcm_sim/mcm_sim.h"
#include "backends/spec/target_spec.h"
#include "backends/tpu_sim/tpu_sim.h"
#include "costmodels/analytical/op_graph.h"
#include "gtest/gtest.h"
#include "ir/hlo_files.h"
#include "optimizers/device_partition/device_partition.h"
#include "optimizers/fusion/fusion_problem.h"
#include "optimizers/mcm/mcm_problem.h"
#include "optimizers/rl/rl.h"
#include "tests/support/corpus.h"

namespace mltune::opt::rl {
namespace {

// Two independent chains of `length` ops each, feeding one sink, on 2 accelerators: the best
// split runs each chain on its own accelerator (max-load about half of one accelerator's).
partition::PartitionGraph TwoChains(int length) {
  std::string nodes, edges;
  int id = 1;
  for (int chain = 0; chain < 2; ++chain) {
    for (int i = 0; i < length; ++i, ++id) {
      absl::StrAppend(&nodes, id == 1 ? "" : ",", "{\"id\": ", id,
                      ", \"supportedOnFpga\": 1, \"cpuLatency\": 10, \"fpgaLatency\": 1, "
                      "\"isBackwardNode\": 0, \"size\": 1}");
      if (i > 0) {
        absl::StrAppend(&edges, edges.empty() ? "" : ",", "{\"sourceId\": ", id - 1,
                        ", \"destId\": ", id, ", \"cost\": 0.5}");
      }
    }
    absl::StrAppend(&edges, edges.empty() ? "" : ",", "{\"sourceId\": ", id - 1,
                    ", \"destId\": ", 2 * length + 1, ", \"cost\": 0.5}");
  }
  absl::StrAppend(&nodes, ",{\"id\": ", 2 * length + 1,
                  ", \"supportedOnFpga\": 1, \"cpuLatency\": 10, \"fpgaLatency\": 1, "
                  "\"isBackwardNode\": 0, \"size\": 1}");
  const std::string text =
      absl::StrCat("{\"maxSizePerFPGA\": 1000, \"maxFPGAs\": 2, \"maxCPUs\": 1, \"nodes\": [",
                   nodes, "], \"edges\": [", edges, "]}");
  absl::StatusOr<partition::PartitionGraph> g = partition::ParsePartitionGraph(text, "chains");
  EXPECT_TRUE(g.ok()) << g.status();
  return *g;
}

// A ladder of `length` rungs on 2 accelerators: a_i -> a_i+1, a_i -> b_i and b_i -> b_i+1, unit
// latencies and transfers. The graph's depth-first order runs chain a, then chain b, where every
// cut crosses all rungs below it; the best split cuts the ladder across, between two rungs.
partition::PartitionGraph Ladder(int length) {
  std::string nodes, edges;
  auto edge = [&](int from, int to) {
    absl::StrAppend(&edges, edges.empty() ? "" : ",", "{\"sourceId\": ", from, ", \"destId\": ", to,
                    ", \"cost\": 1}");
  };
  for (int id = 1; id <= 2 * length; ++id) {
    absl::StrAppend(&nodes, id == 1 ? "" : ",", "{\"id\": ", id,
                    ", \"supportedOnFpga\": 1, \"cpuLatency\": 10, \"fpgaLatency\": 1, "
                    "\"isBackwardNode\": 0, \"size\": 1}");
  }
  for (int i = 1; i <= length; ++i) {  // a_i is node i, b_i node length + i
    edge(i, length + i);
    if (i < length) {
      edge(i, i + 1);
      edge(length + i, length + i + 1);
    }
  }
  const std::string text =
      absl::StrCat("{\"maxSizePerFPGA\": 1000, \"maxFPGAs\": 2, \"maxCPUs\": 1, \"nodes\": [",
                   nodes, "], \"edges\": [", edges, "]}");
  absl::StatusOr<partition::PartitionGraph> g = partition::ParsePartitionGraph(text, "ladder");
  EXPECT_TRUE(g.ok()) << g.status();
  return *g;
}

GoConfig SmallConfig() {
  GoConfig c;
  c.hidden = 32;
  c.segment = 16;
  c.seed = 3;
  return c;
}

TEST(GoPolicyTest, CheckpointRoundTripsToTheSameDecisions) {
  const partition::PartitionGraph g = TwoChains(6);
  std::unique_ptr<GoEnvironment> env =
      MakePartitionEnvironment(g, partition::Objective::kThroughput);
  absl::StatusOr<std::unique_ptr<GoPolicy>> policy = GoPolicy::Create(SmallConfig());
  ASSERT_TRUE(policy.ok()) << policy.status();
  absl::StatusOr<std::unique_ptr<GoPolicy>> loaded = GoPolicy::Load((*policy)->Save());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  GoSolveOptions options;
  options.max_samples = 6;
  options.sampled = 3;
  absl::StatusOr<GoSolveResult> a = (*policy)->Solve(*env, options);
  absl::StatusOr<GoSolveResult> b = (*loaded)->Solve(*env, options);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->best.device, b->best.device);
  EXPECT_EQ(a->best_score, b->best_score);
  EXPECT_LE(a->samples, 6);
  EXPECT_GT(a->samples, 0);
  for (size_t i = 1; i < a->trace.size(); ++i)
    EXPECT_LT(a->trace[i].second, a->trace[i - 1].second);

  EXPECT_FALSE(GoPolicy::Load("not a checkpoint").ok());
  std::string truncated = (*policy)->Save();
  truncated.resize(truncated.size() / 2);
  EXPECT_FALSE(GoPolicy::Load(truncated).ok());
}

TEST(GoPolicyTest, RefusesGraphsWithMoreDevicesThanItsHead) {
  partition::PartitionGraph g = TwoChains(3);
  g.accelerators = kGoMaxDevices + 1;
  std::unique_ptr<GoEnvironment> env =
      MakePartitionEnvironment(g, partition::Objective::kThroughput);
  std::unique_ptr<GoPolicy> policy = *GoPolicy::Create(SmallConfig());
  absl::StatusOr<GoSolveResult> r = policy->Solve(*env, GoSolveOptions{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("at most 64"), std::string::npos);
}

TEST(GoPolicyTest, TrainingOnSmallGraphsTransfersToALargerOne) {
  // Ladders: the DP over the graph's own order cannot cut them across; the policy must learn to
  // order the classes by depth, rung by rung.
  std::vector<partition::PartitionGraph> graphs;
  for (int length : {4, 5, 6, 7}) graphs.push_back(Ladder(length));
  std::vector<std::unique_ptr<GoEnvironment>> envs;
  std::vector<GoEnvironment*> train;
  for (const partition::PartitionGraph& g : graphs) {
    envs.push_back(MakePartitionEnvironment(g, partition::Objective::kThroughput));
    train.push_back(envs.back().get());
  }
  const partition::PartitionGraph unseen = Ladder(12);
  std::unique_ptr<GoEnvironment> test =
      MakePartitionEnvironment(unseen, partition::Objective::kThroughput);
  const double dp = partition::MaxLoad(unseen, partition::ContiguousDpSplit(
                                                   unseen, partition::Objective::kThroughput))
                        .objective;
  ASSERT_GE(dp, 24);  // no better than one accelerator

  std::unique_ptr<GoPolicy> policy = *GoPolicy::Create(SmallConfig());
  GoSolveOptions greedy;
  greedy.max_samples = 3;  // the greedy chain alone
  greedy.sampled = 0;
  const double before = (*policy->Solve(*test, greedy)).best_score;
  GoTrainOptions options;
  options.imitation_iterations = 40;
  options.iterations = 20;
  options.graphs_per_iteration = 2;
  options.eval_every = 0;
  absl::StatusOr<std::vector<GoTrainProgress>> history = policy->Train(train, options);
  ASSERT_TRUE(history.ok()) << history.status();
  ASSERT_EQ(history->size(), 20u);
  const double after = (*policy->Solve(*test, greedy)).best_score;
  // Six rungs per accelerator: 12 ops and two outputs sent (or received) each.
  EXPECT_LE(after, 14) << "before training: " << before << ", the DP: " << dp;
}

TEST(GoPolicyTest, ADecisionIsCutByTheDpInTheOrderItProposes) {
  // Classes a1, a2, a3, b1, b2, b3, sink. Chain a and b2 on the first accelerator, b1, b3 and the
  // sink on the second: as it stands 4 ops, two outputs sent and one received (max-load 5.5). In
  // the order it proposes (chain a, then b1 and the rest: b2 waits for b1) the DP cuts between
  // the chains.
  const partition::PartitionGraph g = TwoChains(3);
  std::unique_ptr<GoEnvironment> env =
      MakePartitionEnvironment(g, partition::Objective::kThroughput);
  GoDecision proposal;
  proposal.device = {0, 0, 0, 1, 0, 1, 1};
  const GoEnvironment::Outcome as_is = env->Evaluate(proposal);
  ASSERT_TRUE(as_is.valid);
  EXPECT_DOUBLE_EQ(as_is.score, 5.5);
  const GoDecision realized = env->Realize(proposal, {});
  const GoEnvironment::Outcome decoded = env->Evaluate(realized);
  EXPECT_TRUE(decoded.valid);
  EXPECT_DOUBLE_EQ(decoded.score, 4.5);  // {a1, a2, a3} sends 0.5; {b1, b2, b3, sink} receives it
  EXPECT_DOUBLE_EQ(
      decoded.score,
      partition::MaxLoad(
          g,
          partition::PartitionProblem(g, partition::Objective::kThroughput).Decode(realized.device))
          .objective);
}

TEST(GoPolicyTest, AWarmStartIsNeverLost) {
  const partition::PartitionGraph g = TwoChains(8);
  std::unique_ptr<GoEnvironment> env =
      MakePartitionEnvironment(g, partition::Objective::kThroughput);
  partition::PartitionProblem problem(g, partition::Objective::kThroughput);
  // The best split: one chain per accelerator, the sink with the second.
  partition::Split best(g.nodes.size(), 1);
  for (size_t v = 8; v < best.size(); ++v) best[v] = 2;
  GoDecision start;
  const Candidate c = problem.Encode(best);
  start.device.assign(c.begin(), c.end());
  std::unique_ptr<GoPolicy> policy = *GoPolicy::Create(SmallConfig());
  GoSolveOptions options;
  options.max_samples = 4;
  options.sampled = 1;
  options.starts = {start};
  absl::StatusOr<GoSolveResult> r = policy->Solve(*env, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LE(r->best_score, partition::MaxLoad(g, best).objective);
  EXPECT_EQ(r->samples, 4);
}

// A partition environment whose every evaluation takes 40 ms, as a latency score does on a graph
// of 100k nodes.
class SlowEnvironment : public GoEnvironment {
 public:
  explicit SlowEnvironment(std::unique_ptr<GoEnvironment> inner) : inner_(std::move(inner)) {}
  const GoGraph& graph() const override { return inner_->graph(); }
  Outcome Evaluate(const GoDecision& decision) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    return inner_->Evaluate(decision);
  }
  double reference_score() const override { return inner_->reference_score(); }

 private:
  std::unique_ptr<GoEnvironment> inner_;
};

TEST(GoPolicyTest, NoDecisionStartsThatWouldEndPastItsSeconds) {
  const partition::PartitionGraph g = TwoChains(8);
  SlowEnvironment env(MakePartitionEnvironment(g, partition::Objective::kThroughput));
  std::unique_ptr<GoPolicy> policy = *GoPolicy::Create(SmallConfig());
  GoSolveOptions options;
  options.max_samples = 16;
  options.seconds = 0.1;  // two decisions of 40 ms fit, a third would end at 120 ms
  absl::StatusOr<GoSolveResult> r = policy->Solve(env, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GE(r->samples, 1);
  EXPECT_LT(r->samples, 3);
  EXPECT_LE(r->seconds, options.seconds);
  EXPECT_TRUE(std::isfinite(r->best_score));
}

// The fusion and joint environments agree with the problems the search strategies use.
TEST(GoPolicyTest, FusionAndJointEnvironmentsScoreLikeTheProblems) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      ir::LoadVerifiedHlo(testing::SourcePath("examples/mlp_train_step.hlo"));
  ASSERT_TRUE(module.ok()) << module.status();
  const costmodels::OpGraph graph = costmodels::BuildOpGraph(**module);
  const backends::TargetSpec* tpu_spec = backends::TargetRegistry::Global().Find("tpu-v4-core");
  const backends::TargetSpec* gpu_spec = backends::TargetRegistry::Global().Find("gpu-4x-nvlink");
  ASSERT_TRUE(tpu_spec != nullptr && gpu_spec != nullptr);
  backends::tpu::TpuSimulator tpu = *backends::tpu::TpuSimulator::Create(*tpu_spec);
  const backends::cluster::ClusterSimulator cluster =
      *backends::cluster::ClusterSimulator::Create(*gpu_spec);

  std::unique_ptr<GoEnvironment> fusion = MakeFusionEnvironment(graph, tpu);
  EXPECT_TRUE(fusion->graph().fusion);
  EXPECT_EQ(fusion->graph().devices, 1);
  GoDecision fused;
  fused.fusion.assign(static_cast<size_t>(graph.size()), 1);
  opt::fusion::TpuFusionProblem problem(graph, tpu);
  EXPECT_DOUBLE_EQ(fusion->Evaluate(fused).score, problem.Evaluate(problem.DefaultCandidate()));
  GoDecision unfused;
  unfused.fusion.assign(static_cast<size_t>(graph.size()), 0);
  EXPECT_GT(fusion->Evaluate(unfused).score, fusion->Evaluate(fused).score);

  std::unique_ptr<GoEnvironment> joint = MakeJointEnvironment(graph, cluster);
  EXPECT_TRUE(joint->graph().fusion && joint->graph().priorities);
  EXPECT_EQ(joint->graph().devices, 4);
  const std::vector<GoDecision> baselines = joint->Baselines();
  ASSERT_EQ(baselines.size(), 2u);
  double best = std::numeric_limits<double>::infinity();
  for (const GoDecision& d : baselines) {
    const GoEnvironment::Outcome o = joint->Evaluate(d);
    ASSERT_TRUE(o.valid);
    best = std::min(best, o.score);
  }
  std::unique_ptr<GoPolicy> policy = *GoPolicy::Create(SmallConfig());
  GoSolveOptions options;
  options.max_samples = 8;
  options.starts = baselines;
  absl::StatusOr<GoSolveResult> r = policy->Solve(*joint, options);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_LE(r->best_score, best);
  EXPECT_EQ(r->best.fusion.size(), static_cast<size_t>(graph.size()));
}

// The measured fusion environment measures each distinct plan once (a CPU measurement compiles
// and runs the module), and a plan whose measurement fails is invalid, not a crash or a score.
TEST(GoPolicyTest, MeasuredFusionMeasuresEachPlanOnceAndFailuresAreInvalid) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      ir::LoadVerifiedHlo(testing::SourcePath("examples/mlp_train_step.hlo"));
  ASSERT_TRUE(module.ok()) << module.status();
  const costmodels::OpGraph graph = costmodels::BuildOpGraph(**module);
  int calls = 0;
  // Stands in for a measurement: one microsecond per kernel; plans of many kernels fail.
  auto measure = [&](const costmodels::FusionPlan& plan) -> absl::StatusOr<double> {
    ++calls;
    if (plan.size() == graph.size()) return absl::InternalError("the runner crashed");
    return 1e-6 * plan.size();
  };
  std::unique_ptr<GoEnvironment> env = MakeMeasuredFusionEnvironment(graph, measure);
  EXPECT_TRUE(env->graph().fusion);
  EXPECT_EQ(env->graph().units, graph.size());
  const std::vector<GoDecision> baselines = env->Baselines();
  ASSERT_EQ(baselines.size(), 2u);
  const int after_reference = calls;  // the reference score measures XLA's plan
  const GoEnvironment::Outcome fused = env->Evaluate(baselines[0]);
  ASSERT_TRUE(fused.valid);
  EXPECT_DOUBLE_EQ(env->reference_score(), fused.score);
  EXPECT_EQ(calls, after_reference);  // XLA's plan again: not measured twice
  const GoEnvironment::Outcome unfused = env->Evaluate(baselines[1]);
  EXPECT_FALSE(unfused.valid);
  env->Evaluate(baselines[1]);
  EXPECT_EQ(calls, after_reference + 1);
  // Every level above 0 fuses in the same greedy order when all are equal: the same plan.
  GoDecision all_sevens;
  all_sevens.fusion.assign(static_cast<size_t>(graph.size()), 7);
  EXPECT_DOUBLE_EQ(env->Evaluate(all_sevens).score, fused.score);
  EXPECT_EQ(calls, after_reference + 1);
}

// GO on a multi-chip module, in FIX and SAMPLE modes: every decision it evaluates passes through
// the solver, so its results are valid partitions even untrained, and training runs on them.
TEST(GoPolicyTest, McmDecisionsGoThroughTheSolverAndAreValid) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module =
      ir::LoadVerifiedHlo(testing::SourcePath("examples/mlp_train_step.hlo"));
  ASSERT_TRUE(module.ok()) << module.status();
  backends::TargetSpec spec = *backends::TargetRegistry::Global().Find("mcm-36");
  spec.devices = 20;
  mcm::McmChipProblem problem(costmodels::BuildOpGraph(**module),
                              *backends::mcm::McmSimulator::Create(spec));
  for (GoSolverMode mode : {GoSolverMode::kFix, GoSolverMode::kSample}) {
    std::unique_ptr<GoEnvironment> env = MakeMcmEnvironment(problem, mode, 1);
    EXPECT_TRUE(env->realizes());
    EXPECT_EQ(env->graph().devices, 20);
    // A proposal of random chips is almost never valid; realized, it is.
    GoDecision proposal;
    for (int32_t i = 0; i < problem.graph().size(); ++i) proposal.device.push_back(i * 7 % 20);
    EXPECT_FALSE(env->Evaluate(proposal).valid);
    const std::vector<float> uniform(static_cast<size_t>(problem.graph().size()) * kGoMaxDevices,
                                     1.0f);
    EXPECT_TRUE(env->Evaluate(env->Realize(proposal, uniform)).valid);

    std::unique_ptr<GoPolicy> policy = *GoPolicy::Create(SmallConfig());
    GoTrainOptions train;
    train.imitation_iterations = 3;
    train.iterations = 2;
    train.samples_per_graph = 4;
    train.eval_every = 0;
    ASSERT_TRUE(policy->Train({env.get()}, train).ok());
    GoSolveOptions solve;
    solve.max_samples = 12;
    solve.fine_tune = true;
    absl::StatusOr<GoSolveResult> r = policy->Solve(*env, solve);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_TRUE(std::isfinite(r->best_score));
    EXPECT_TRUE(problem.Simulate(Candidate(r->best.device.begin(), r->best.device.end())).valid);
  }
}

}  // namespace
}  // namespace mltune::opt::rl
