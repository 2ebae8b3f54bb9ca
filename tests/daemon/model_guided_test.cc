// Model-guided tuning through a real mltuned: the cpu tile task's "model-topk" strategy loads the
// newest cost-model/tile-cpu from the daemon's store, ranks each kernel's configurations with it
// and measures only the best ranked; likewise for fusion and on a simulated TPU. Each model is
// trained on what an earlier job of the daemon logged, as `mltune train-cost-model` would.
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "client/rpc_client.h"
#include "costmodels/features/kernel_graph.h"
#include "costmodels/learned/learned_model.h"
#include "daemon/learned_cost_models.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "storage/store.h"
#include "tests/daemon/daemon_test_util.h"

namespace mltune::daemon {
namespace {

namespace features = costmodels::features;
namespace learned = costmodels::learned;
using client::Client;
using client::JobInfo;
using client::JobState;
using client::SubmitRequest;
using testing::ExampleHlo;
using testing::MustStart;
using testing::TempDir;
using testing::TestConfig;

learned::ModelOptions SmallModel(uint64_t seed, learned::Loss loss = learned::Loss::kBoth) {
  learned::ModelOptions o;
  o.vocabulary_size = features::OpcodeVocabularySize();
  o.embedding_dim = 4;
  o.hidden_dim = 16;
  o.sage_layers = 1;
  o.epochs = 5;
  o.seed = seed;
  o.loss = loss;
  return o;
}

// Trains on what the store's tile-kernel log holds, as `mltune train-cost-model` does, and stores
// the checkpoint as the next version of `name`.
void TrainAndStore(const std::string& store_path, uint64_t seed,
                   const std::string& name = "cost-model/tile-cpu",
                   learned::Loss loss = learned::Loss::kBoth, const std::string& target = "cpu",
                   const std::string& task = "tile-kernel") {
  absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(store_path);
  ASSERT_TRUE(store.ok()) << store.status();
  storage::MeasurementFilter filter;
  filter.task = task;
  filter.target = target;
  absl::StatusOr<std::vector<storage::MeasurementRecord>> rows =
      (*store)->QueryMeasurements(filter);
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_FALSE(rows->empty());
  std::vector<std::unique_ptr<features::KernelGraph>> graphs;
  std::vector<learned::Sample> samples;
  std::map<std::string, int64_t> group;
  for (const storage::MeasurementRecord& m : *rows) {
    absl::StatusOr<std::optional<storage::KernelGraphRecord>> g =
        (*store)->GetKernelGraph(m.graph_key);
    ASSERT_TRUE(g.ok() && g->has_value()) << m.graph_key;
    absl::StatusOr<features::KernelGraph> parsed = features::ParseKernelGraph((*g)->graph);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    absl::StatusOr<features::Configuration> config = features::ParseConfiguration(m.configuration);
    ASSERT_TRUE(config.ok()) << m.configuration;
    ASSERT_TRUE(features::SetConfiguration(*config, &*parsed).ok());
    graphs.push_back(std::make_unique<features::KernelGraph>(*std::move(parsed)));
    const int64_t id = group.emplace(m.graph_key, static_cast<int64_t>(group.size())).first->second;
    samples.push_back({graphs.back().get(), id, m.value});
  }
  absl::StatusOr<std::unique_ptr<learned::LearnedModel>> model =
      learned::LearnedModel::Create(SmallModel(seed, loss));
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_TRUE((*model)->Train(samples).ok());
  ASSERT_TRUE((*store)->PutModelNextVersion(name, (*model)->Save(), "{}").ok());
}

class ModelGuidedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0);
    daemon_ = MustStart(TestConfig(dir_.path()));
    ASSERT_NE(daemon_, nullptr);
    client_ = Client::Connect(daemon_->address());
    ASSERT_TRUE(client_->WaitForReady(10).ok());
  }

  SubmitRequest Request(const std::string& strategy, int64_t steps) {
    SubmitRequest request;
    request.graph = ExampleHlo();
    request.graph_name = "mlp.hlo";
    request.target = "cpu";
    request.tasks = {"tile"};
    request.budget.steps = steps;
    request.strategy = strategy;
    return request;
  }

  JobInfo MustFinish(const SubmitRequest& request) {
    absl::StatusOr<client::SubmitResponse> submitted = client_->Submit(request);
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    if (!submitted.ok()) return {};
    absl::StatusOr<JobInfo> job = client_->Watch(submitted->job_id);
    EXPECT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->state, JobState::kDone) << job->error;
    absl::StatusOr<JobInfo> done = client_->GetJob(submitted->job_id);
    EXPECT_TRUE(done.ok() && done->results.size() == 1u);
    return done.ok() ? *done : JobInfo{};
  }

  int64_t LoggedKernelMeasurements() {
    return static_cast<int64_t>(
        testing::LoggedMeasurements(daemon_->store_path(), "tile-kernel", "cpu").size());
  }

  TempDir dir_;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<Client> client_;
};

TEST_F(ModelGuidedTest, ModelTopKNeedsATrainedModelAndSaysHowToMakeOne) {
  absl::StatusOr<client::SubmitResponse> r = client_->Submit(Request("model-topk", 50));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("cost-model/tile-cpu"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("mltune train-cost-model"), std::string::npos) << r.status();
}

TEST_F(ModelGuidedTest, TheTileTaskRanksWithTheNewestModelAndMeasuresOnlyTheTopK) {
  // The daemon's own measurements are the training data.
  MustFinish(Request("random", 12));
  TrainAndStore(daemon_->store_path(), 1);

  absl::StatusOr<client::StrategyList> list = client_->ListStrategies();
  ASSERT_TRUE(list.ok()) << list.status();
  // One entry per task that offers it: tile's serves the new model, fusion's has none yet.
  std::map<std::string, std::string> described;
  for (const client::NamedInfo& s : list->strategies) {
    if (s.name != "model-topk") continue;
    described[s.description.substr(0, s.description.find(' '))] = s.description;
  }
  ASSERT_EQ(described.size(), 2u);
  EXPECT_NE(described["tile"].find("model cost-model/tile-cpu v1"), std::string::npos)
      << described["tile"];
  EXPECT_NE(described["fusion"].find("no trained model yet"), std::string::npos)
      << described["fusion"];

  const int64_t before = LoggedKernelMeasurements();
  const JobInfo job = MustFinish(Request("model-topk", 1000));
  ASSERT_EQ(job.results.size(), 1u);
  const client::TaskResult& r = job.results[0];
  EXPECT_GT(r.baseline_score, 0);
  EXPECT_LE(r.tuned_score, r.baseline_score);
  const nlohmann::json kernels = nlohmann::json::parse(r.artifacts.at("kernels"));
  // The seeds (the default, and the random job's best to continue from) for every kernel, then
  // at most 5 configurations per kernel, plus each implementation's best where a kernel has
  // several (generated code and up to 3 oneDNN calls): far below the budget.
  int64_t bound = 0;
  for (const nlohmann::json& k : kernels) {
    bound += 7 + (k.at("config").get<std::string>().find("impl=") != std::string::npos ? 4 : 0);
  }
  const int64_t measured = LoggedKernelMeasurements() - before;
  EXPECT_LE(measured, bound);
  EXPECT_GT(measured, static_cast<int64_t>(kernels.size()));
}

// The cpu fusion task's "model-topk": the newest cost-model/fusion-cpu (trained here on what an
// earlier fusion job logged) predicts each fusion plan as the sum of its kernels' predicted times,
// the model explores plans, and only the 10 best ranked plans are measured (each a whole-module
// measurement, logged under task "fusion").
TEST_F(ModelGuidedTest, TheFusionTaskMeasuresTheModelsTopPlansThenClimbsWithinTheBudget) {
  SubmitRequest fusion = Request("model-topk", 40);
  fusion.tasks = {"fusion"};
  absl::StatusOr<client::SubmitResponse> refused = client_->Submit(fusion);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("cost-model/fusion-cpu"), std::string::npos)
      << refused.status();

  // The daemon's own fusion searches are training data: each measured plan's kernels, timed inside
  // its run, are logged with their graphs (a few rows per kernel: plans share most kernels).
  SubmitRequest random = Request("random", 6);
  random.tasks = {"fusion"};
  MustFinish(random);
  const std::vector<storage::MeasurementRecord> in_module =
      testing::LoggedMeasurements(daemon_->store_path(), "fusion-kernel-in-module", "cpu");
  ASSERT_FALSE(in_module.empty());
  std::map<std::string, int> rows_of;
  for (const storage::MeasurementRecord& m : in_module) {
    EXPECT_GT(m.value, 0);
    ++rows_of[m.graph_key];
  }
  for (const auto& [key, rows] : rows_of) EXPECT_LE(rows, 3) << key;
  TrainAndStore(daemon_->store_path(), 2, "cost-model/fusion-cpu", learned::Loss::kMseLog, "cpu",
                "fusion-kernel-in-module");
  const size_t before = testing::LoggedMeasurements(daemon_->store_path(), "fusion", "cpu").size();
  const JobInfo job = MustFinish(fusion);
  ASSERT_EQ(job.results.size(), 1u);
  const client::TaskResult& r = job.results[0];
  EXPECT_GT(r.baseline_score, 0);
  EXPECT_LE(r.tuned_score, r.baseline_score);
  const size_t measured =
      testing::LoggedMeasurements(daemon_->store_path(), "fusion", "cpu").size() - before;
  // The default plan, then the 10 best ranked, then hill climbing by measurement from the best
  // of them until a local optimum or the end of the budget of 40 steps.
  EXPECT_GT(measured, 1u + 10u) << "no hill climbing after the model's top 10";
  EXPECT_LE(measured, 40u);
}

// The tile task's "model-topk" on a simulated TPU: the model of the request's target spec
// (cost-model/tile-tpu-v4-core for tpu-sim) ranks each kernel's tiles and the 5 best are
// simulated.
TEST_F(ModelGuidedTest, TheTpuTileTaskRanksWithItsTargetsModel) {
  SubmitRequest tile = Request("model-topk", 1000);
  tile.target = "tpu-sim";
  absl::StatusOr<client::SubmitResponse> refused = client_->Submit(tile);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("cost-model/tile-tpu-v4-core"), std::string::npos)
      << refused.status();
  EXPECT_NE(refused.status().message().find("--target tpu-v4-core"), std::string::npos)
      << refused.status();

  // The daemon's own simulated measurements are the training data: a random tile job logs every
  // kernel's tiles (tile-kernel) with the analytical model's prediction beside each.
  SubmitRequest random = Request("random", 60);
  random.target = "tpu-sim";
  MustFinish(random);
  const std::vector<storage::MeasurementRecord> rows =
      testing::LoggedMeasurements(daemon_->store_path(), "tile-kernel", "tpu-v4-core");
  ASSERT_FALSE(rows.empty());
  std::set<std::string> pairs;
  for (const storage::MeasurementRecord& m : rows) {
    EXPECT_GT(m.value, 0);
    EXPECT_TRUE(pairs.insert(m.graph_key + "\n" + m.configuration).second)
        << "logged twice: " << m.configuration;
  }
  EXPECT_EQ(
      testing::LoggedMeasurements(daemon_->store_path(), "tile-kernel-analytical", "tpu-v4-core")
          .size(),
      rows.size());
  TrainAndStore(daemon_->store_path(), 3, "cost-model/tile-tpu-v4-core", learned::Loss::kBoth,
                "tpu-v4-core");
  const size_t before =
      testing::LoggedMeasurements(daemon_->store_path(), "tile", "tpu-v4-core").size();
  absl::StatusOr<client::StrategyList> list = client_->ListStrategies();
  ASSERT_TRUE(list.ok()) << list.status();
  bool served = false;
  for (const client::NamedInfo& s : list->strategies) {
    served = served || (s.name == "model-topk" &&
                        s.description.find("cost-model/tile-tpu-v4-core v1") != std::string::npos);
  }
  EXPECT_TRUE(served) << "ListStrategies does not show the tpu model";

  const JobInfo job = MustFinish(tile);
  ASSERT_EQ(job.results.size(), 1u);
  const client::TaskResult& r = job.results[0];
  EXPECT_EQ(r.target, "tpu-v4-core");
  EXPECT_GT(r.baseline_score, 0);
  EXPECT_LE(r.tuned_score, r.baseline_score);
  const nlohmann::json kernels = nlohmann::json::parse(r.artifacts.at("tiles"));
  size_t tiled = 0;
  for (const nlohmann::json& k : kernels) tiled += k.contains("tile") ? 1 : 0;
  ASSERT_GT(tiled, 0u);
  // The default, then at most 5 tiles per kernel: far below the budget of 1000.
  const size_t measured =
      testing::LoggedMeasurements(daemon_->store_path(), "tile", "tpu-v4-core").size() - before;
  EXPECT_LE(measured, 1 + 5 * tiled);
  EXPECT_GT(measured, 1u);
}

// The fusion task's "model-topk" on a simulated TPU: cost-model/fusion-tpu-v4-core predicts each
// plan as the sum of its kernels, and the 10 best ranked plans are simulated, then the climb.
TEST_F(ModelGuidedTest, TheTpuFusionTaskRanksPlansWithItsTargetsModel) {
  SubmitRequest fusion = Request("model-topk", 40);
  fusion.target = "tpu-sim";
  fusion.tasks = {"fusion"};
  absl::StatusOr<client::SubmitResponse> refused = client_->Submit(fusion);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("cost-model/fusion-tpu-v4-core"), std::string::npos)
      << refused.status();

  // A random fusion job's simulated plans log their kernels (fusion-kernel, each at its default
  // tile): the training data.
  SubmitRequest random = Request("random", 16);
  random.target = "tpu-sim";
  random.tasks = {"fusion"};
  MustFinish(random);
  EXPECT_FALSE(
      testing::LoggedMeasurements(daemon_->store_path(), "fusion-kernel-analytical", "tpu-v4-core")
          .empty());
  TrainAndStore(daemon_->store_path(), 5, "cost-model/fusion-tpu-v4-core", learned::Loss::kMseLog,
                "tpu-v4-core", "fusion-kernel");
  const size_t before =
      testing::LoggedMeasurements(daemon_->store_path(), "fusion", "tpu-v4-core").size();
  const JobInfo job = MustFinish(fusion);
  ASSERT_EQ(job.results.size(), 1u);
  const client::TaskResult& r = job.results[0];
  EXPECT_GT(r.baseline_score, 0);
  EXPECT_LE(r.tuned_score, r.baseline_score);
  EXPECT_FALSE(nlohmann::json::parse(r.artifacts.at("kernels")).empty());
  // The default plan, the model's 10 best, then the climb: within the budget of 40.
  const size_t measured =
      testing::LoggedMeasurements(daemon_->store_path(), "fusion", "tpu-v4-core").size() - before;
  EXPECT_GT(measured, 1u + 10u) << "no climb after the model's top 10";
  EXPECT_LE(measured, 40u);
}

// The loaded model is shared while the store's newest checkpoint stays the same and replaced when
// a newer one appears.
TEST(NewestCostModelTest, LoadsOncePerCheckpointAndFollowsNewVersions) {
  std::vector<std::string> checkpoints;
  for (uint64_t seed : {1, 2}) {
    absl::StatusOr<std::unique_ptr<learned::LearnedModel>> m =
        learned::LearnedModel::Create(SmallModel(seed));
    ASSERT_TRUE(m.ok());
    // An untrained model has no normalisation yet; a single sample trains it.
    features::KernelGraph g;
    g.opcodes = {1};
    g.node_features.assign(features::kNodeFeatures, 0.5f);
    g.kernel_features.assign(features::kKernelFeatures, 0.5f);
    ASSERT_TRUE((*m)->Train({{&g, 0, 1e-3}}).ok());
    checkpoints.push_back((*m)->Save());
  }
  int64_t version = 1;
  TaskRequest request;
  request.target = "cpu";
  request.latest_model =
      [&](const std::string& name) -> absl::StatusOr<std::optional<storage::ModelRecord>> {
    EXPECT_EQ(name, "cost-model/tile-cpu");
    storage::ModelRecord r;
    r.name = name;
    r.version = version;
    r.data = checkpoints[static_cast<size_t>(version - 1)];
    return r;
  };
  auto a = NewestCostModel(request, "tile");
  auto b = NewestCostModel(request, "tile");
  ASSERT_TRUE(a.ok() && b.ok()) << a.status();
  EXPECT_EQ(a->get(), b->get());
  version = 2;
  auto c = NewestCostModel(request, "tile");
  ASSERT_TRUE(c.ok());
  EXPECT_NE(c->get(), a->get());
  EXPECT_TRUE((*a)->trained());  // the job holding the old one keeps it

  checkpoints.push_back("not a checkpoint");
  version = 3;
  EXPECT_EQ(NewestCostModel(request, "tile").status().code(), absl::StatusCode::kInvalidArgument);
  request.latest_model =
      [](const std::string&) -> absl::StatusOr<std::optional<storage::ModelRecord>> {
    return std::nullopt;
  };
  EXPECT_EQ(NewestCostModel(request, "tile").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace mltune::daemon
