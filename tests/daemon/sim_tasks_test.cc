// The simulated workers through a real mltuned: tile and fusion on tpu-sim, mcm-partition on
// mcm-sim, placement on cluster-sim and pass-order scored in simulated seconds, each submitted by
// target (a worker name resolving to its default spec), searched, cached and listed.
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "client/rpc_client.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "storage/store.h"
#include "tests/daemon/daemon_test_util.h"

namespace mltune::daemon {
namespace {

using client::Client;
using client::JobInfo;
using client::JobState;
using client::SubmitRequest;
using testing::ExampleHlo;
using testing::MustStart;
using testing::TempDir;
using testing::TestConfig;

class SimTasksTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daemon_ = MustStart(TestConfig(dir_.path()));
    ASSERT_NE(daemon_, nullptr);
    client_ = Client::Connect(daemon_->address());
    ASSERT_TRUE(client_->WaitForReady(10).ok());
  }

  // Submits and waits; the finished job's only result.
  client::TaskResult Run(const std::string& target, std::vector<std::string> tasks,
                         int64_t steps = 300, const std::string& strategy = "annealing",
                         const std::string& hlo = ExampleHlo()) {
    SubmitRequest request;
    request.graph = hlo;
    request.graph_name = "mlp.hlo";
    request.target = target;
    request.tasks = std::move(tasks);
    request.budget.steps = steps;
    request.strategy = strategy;
    absl::StatusOr<client::SubmitResponse> submitted = client_->Submit(request);
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    if (!submitted.ok()) return {};
    if (submitted->cached) return submitted->job.results.at(0);
    absl::StatusOr<JobInfo> job = client_->Watch(submitted->job_id);
    EXPECT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->state, JobState::kDone) << job->error;
    absl::StatusOr<JobInfo> done = client_->GetJob(submitted->job_id);
    EXPECT_TRUE(done.ok() && done->results.size() == 1u);
    return done.ok() && !done->results.empty() ? done->results[0] : client::TaskResult{};
  }

  TempDir dir_;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<Client> client_;
};

TEST_F(SimTasksTest, TileSearchOnTpuSimBeatsOrMatchesDefaultTiles) {
  const client::TaskResult r = Run("tpu-sim", {"tile"});
  EXPECT_EQ(r.task, "tile");
  EXPECT_EQ(r.target, "tpu-v4-core");  // the worker's default spec
  EXPECT_GT(r.baseline_score, 0);
  EXPECT_LE(r.tuned_score, r.baseline_score);
  EXPECT_NE(r.provenance.worker.find("tpu-sim"), std::string::npos) << r.provenance.worker;
  ASSERT_TRUE(r.artifacts.contains("configuration"));
  ASSERT_TRUE(r.artifacts.contains("tiles"));
  const nlohmann::json tiles = nlohmann::json::parse(r.artifacts.at("tiles"));
  ASSERT_TRUE(tiles.is_array());
  ASSERT_FALSE(tiles.empty());
  double sum = 0;
  for (const nlohmann::json& k : tiles) sum += k.at("seconds").get<double>();
  EXPECT_NEAR(sum, r.tuned_score, 1e-9 * r.tuned_score + 1e-15);

  // The alias and the spec name share one cache entry.
  SubmitRequest again;
  again.graph = ExampleHlo();
  again.target = "tpu-v4-core";
  again.tasks = {"tile"};
  again.budget.steps = 300;
  again.strategy = "annealing";
  absl::StatusOr<client::SubmitResponse> cached = client_->Submit(again);
  ASSERT_TRUE(cached.ok()) << cached.status();
  EXPECT_TRUE(cached->cached);

  absl::StatusOr<client::ServerStats> stats = client_->GetStats();
  ASSERT_TRUE(stats.ok());
  EXPECT_GE(stats->measurements, 1);
}

TEST_F(SimTasksTest, FusionSearchStartsFromTheDefaultFusionWhichBeatsNoFusion) {
  const client::TaskResult r = Run("tpu-v3-core", {"fusion"});
  EXPECT_EQ(r.task, "fusion");
  EXPECT_LT(r.baseline_score, r.original_score);  // fused kernels move less through HBM
  EXPECT_LE(r.tuned_score, r.baseline_score);
  const nlohmann::json kernels = nlohmann::json::parse(r.artifacts.at("kernels"));
  ASSERT_FALSE(kernels.empty());
  EXPECT_TRUE(kernels[0].contains("op_names"));
}

TEST_F(SimTasksTest, McmSimDefaultsToPartitioningAndReportsThroughput) {
  const client::TaskResult r = Run("mcm-sim", {});
  EXPECT_EQ(r.task, "mcm-partition");
  EXPECT_EQ(r.target, "mcm-36");
  EXPECT_LE(r.tuned_score, r.baseline_score);
  const nlohmann::json partition = nlohmann::json::parse(r.artifacts.at("partition"));
  ASSERT_TRUE(partition.is_object());
  ASSERT_FALSE(partition.empty());
  for (const auto& [op, chip] : partition.items()) {
    EXPECT_GE(chip.get<int>(), 0) << op;
    EXPECT_LT(chip.get<int>(), 36) << op;
  }
  const nlohmann::json summary = nlohmann::json::parse(r.artifacts.at("summary"));
  EXPECT_NEAR(summary.at("throughput_per_s").get<double>() * r.tuned_score, 1.0, 1e-9);
}

// The solver-backed strategies assign a chip to every op and try only valid partitions, where
// the registry's strategies search chip boundaries in op order.
TEST_F(SimTasksTest, McmSolverStrategiesTryOnlyValidPartitions) {
  for (const char* strategy :
       {"solver-random", "solver-annealing", "solver-local-search", "contiguous-dp"}) {
    const client::TaskResult r = Run("mcm-sim", {}, 200, strategy);
    EXPECT_EQ(r.task, "mcm-partition");
    EXPECT_LE(r.tuned_score, r.baseline_score) << strategy;  // the balanced seed, when valid
    const nlohmann::json validity = nlohmann::json::parse(r.artifacts.at("validity"));
    // The DP is one partition; the searches spend the budget.
    EXPECT_GE(validity.at("evaluations").get<int64_t>(),
              std::string(strategy) == "contiguous-dp" ? 1 : 100)
        << strategy;
    EXPECT_EQ(validity.at("valid").get<int64_t>(), validity.at("evaluations").get<int64_t>())
        << strategy;
  }
}

TEST_F(SimTasksTest, ClusterSimDefaultsToPlacementNoWorseThanMetf) {
  const client::TaskResult r = Run("cluster-sim", {});
  EXPECT_EQ(r.task, "placement");
  EXPECT_EQ(r.target, "gpu-4x-nvlink");
  EXPECT_LE(r.tuned_score, r.baseline_score);
  EXPECT_GT(r.tuned_score, 0);
  const nlohmann::json placement = nlohmann::json::parse(r.artifacts.at("placement"));
  ASSERT_FALSE(placement.empty());
  const nlohmann::json summary = nlohmann::json::parse(r.artifacts.at("summary"));
  EXPECT_DOUBLE_EQ(summary.at("makespan_seconds").get<double>(), r.tuned_score);
  EXPECT_EQ(summary.at("busy_seconds").size(), 4u);
}

TEST_F(SimTasksTest, PassOrderOnATpuTargetIsScoredInSimulatedSeconds) {
  const client::TaskResult r = Run("tpu-v4-core", {"pass-order"}, 100, "beam");
  EXPECT_LE(r.tuned_score, r.baseline_score);
  EXPECT_LT(r.tuned_score, 1.0);  // seconds of a small MLP, not an op count
  EXPECT_GT(r.tuned_score, 0);
  EXPECT_NE(r.provenance.worker.find("simulated seconds"), std::string::npos)
      << r.provenance.worker;
}

TEST_F(SimTasksTest, ATaskOnATargetItCannotRunIsInvalidArgumentNamingTheTargets) {
  SubmitRequest request;
  request.graph = ExampleHlo();
  request.target = "cpu";
  request.tasks = {"mcm-partition"};
  absl::StatusOr<client::SubmitResponse> r = client_->Submit(request);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("mcm-36"), std::string::npos) << r.status();
  request.target = "tpu-sim";
  request.tasks = {"tile"};
  request.options["noise"] = "-1";
  r = client_->Submit(request);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("noise"), std::string::npos) << r.status();
}

// On target cpu the same tasks compile and time generated kernels (backends/cpu).
TEST_F(SimTasksTest, TileAndFusionOnCpuMeasureGeneratedKernels) {
  setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0);
  const client::TaskResult tile = Run("cpu", {"tile"}, 8);
  EXPECT_EQ(tile.task, "tile");
  EXPECT_GT(tile.baseline_score, 0);
  EXPECT_LE(tile.tuned_score, tile.baseline_score);
  const nlohmann::json kernels = nlohmann::json::parse(tile.artifacts.at("kernels"));
  ASSERT_FALSE(kernels.empty());
  EXPECT_TRUE(kernels[0].contains("config"));
  EXPECT_TRUE(nlohmann::json::parse(tile.artifacts.at("module_timing")).contains("tuned_seconds"));
  // Each kernel's winner was measured again, twice alternating with its default, and a kernel
  // set back to its default has the default's time; so no kernel is slower than its default.
  const nlohmann::json confirmation = nlohmann::json::parse(tile.artifacts.at("confirmation"));
  const size_t checked = confirmation.at("checked").get<size_t>();
  size_t lost = 0, with_entry = 0;
  for (const nlohmann::json& k : kernels) {
    EXPECT_LE(k.at("tuned_seconds").get<double>(), k.at("default_seconds").get<double>())
        << k.dump();
    if (!k.contains("confirmation")) continue;
    ++with_entry;
    if (!k["confirmation"].at("kept").get<bool>()) ++lost;
  }
  EXPECT_EQ(with_entry, checked);
  EXPECT_GE(confirmation.at("reverted").get<size_t>(), lost);
  EXPECT_EQ(testing::LoggedMeasurements(daemon_->store_path(), "tile-kernel-confirm", "cpu").size(),
            4 * checked);
  // Every kernel measurement is cost-model training data: logged under its kernel key, whose
  // graph the store holds (docs/cost_models.md).
  {
    const std::vector<storage::MeasurementRecord> rows =
        testing::LoggedMeasurements(daemon_->store_path(), "tile-kernel", "cpu");
    ASSERT_FALSE(rows.empty());
    absl::StatusOr<std::unique_ptr<storage::Store>> store =
        storage::Store::Open(daemon_->store_path());
    ASSERT_TRUE(store.ok()) << store.status();
    std::set<std::string> keys;
    for (const storage::MeasurementRecord& m : rows) keys.insert(m.graph_key);
    EXPECT_EQ((*store)->CountKernelGraphs().value(), static_cast<int64_t>(keys.size()));
    for (const std::string& key : keys) {
      absl::StatusOr<std::optional<storage::KernelGraphRecord>> g = (*store)->GetKernelGraph(key);
      ASSERT_TRUE(g.ok() && g->has_value()) << key;
      EXPECT_EQ((*g)->target, "cpu");
    }
  }
  const client::TaskResult fusion = Run("cpu", {"fusion"}, 4);
  EXPECT_EQ(fusion.task, "fusion");
  EXPECT_GT(fusion.original_score, 0);  // no fusion, measured
  EXPECT_LE(fusion.tuned_score, fusion.baseline_score);
}

TEST_F(SimTasksTest, TileOnCpuTunesTheKernelsAroundOpsTheBackendCannotLower) {
  setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0);
  // A reduce-precision (which the cpu backend does not lower) feeding a dense layer.
  const std::string hlo = R"(HloModule rounded_then_dense
ENTRY main {
  table = f32[64,32] parameter(0)
  w = f32[32,32] parameter(1)
  rows = f32[64,32] reduce-precision(table), exponent_bits=5, mantissa_bits=10
  d = f32[64,32] dot(rows, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = f32[64,32] tanh(d)
})";
  const client::TaskResult tile = Run("cpu", {"tile"}, 8, "annealing", hlo);
  EXPECT_EQ(tile.task, "tile");
  EXPECT_GT(tile.baseline_score, 0);
  EXPECT_LE(tile.tuned_score, tile.baseline_score);
  // The reduce-precision alone (its name as the cpu pipeline left it) became a parameter.
  const nlohmann::json cut = nlohmann::json::parse(tile.artifacts.at("not_lowered"));
  ASSERT_EQ(cut.size(), 1u) << cut.dump();
  EXPECT_EQ(cut[0].get<std::string>().rfind("rows", 0), 0u) << cut.dump();
  EXPECT_FALSE(nlohmann::json::parse(tile.artifacts.at("kernels")).empty());
  const nlohmann::json whole = nlohmann::json::parse(tile.artifacts.at("module_timing"));
  EXPECT_EQ(whole.at("ops_as_parameters"), 1);
  EXPECT_GT(whole.at("tuned_seconds").get<double>(), 0);
}

TEST_F(SimTasksTest, WorkersListTheSimulatorsWithTheirTargetsAndCounts) {
  Run("tpu-sim", {"tile"}, 50);
  absl::StatusOr<std::vector<client::WorkerInfo>> workers = client_->ListWorkers();
  ASSERT_TRUE(workers.ok()) << workers.status();
  std::map<std::string, client::WorkerInfo> by_name;
  for (const client::WorkerInfo& w : *workers) by_name[w.name] = w;
  ASSERT_TRUE(by_name.contains("tpu-sim"));
  ASSERT_TRUE(by_name.contains("mcm-sim"));
  ASSERT_TRUE(by_name.contains("cluster-sim"));
  EXPECT_EQ(by_name["tpu-sim"].kind, "simulator");
  EXPECT_EQ(by_name["tpu-sim"].targets, (std::vector<std::string>{"tpu-v3-core", "tpu-v4-core"}));
  EXPECT_EQ(by_name["mcm-sim"].targets, std::vector<std::string>{"mcm-36"});
  EXPECT_EQ(by_name["cluster-sim"].targets.size(), 6u);
  EXPECT_GE(by_name["tpu-sim"].candidates_evaluated, 50);
  EXPECT_EQ(by_name["mcm-sim"].candidates_evaluated, 0);
  EXPECT_EQ(by_name["tpu-sim"].state, "idle");
}

}  // namespace
}  // namespace mltune::daemon
