// The pretrained checkpoints in models/pretrained/ (scripts/pretrain): a fresh mltuned stores
// each as version 0 and serves every learned strategy it lists (rl-* on pass-order, model-topk
// on tile and fusion for the CPU and each simulated TPU) without any training by the user; a
// version the user trains wins; a broken folder is a clear error at start.
#include "daemon/pretrained_models.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "client/rpc_client.h"
#include "daemon/daemon.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "storage/store.h"
#include "tests/daemon/daemon_test_util.h"

namespace mltune::daemon {
namespace {

namespace fs = std::filesystem;
using client::Client;
using client::JobInfo;
using client::JobState;
using client::SubmitRequest;
using testing::ExampleHlo;
using ::testing::HasSubstr;
using testing::MustStart;
using ::testing::Not;
using testing::TempDir;
using testing::TestConfig;

const std::string kPretrainedDir = std::string(MLTUNE_SOURCE_DIR) + "/models/pretrained";

// Every model a learned strategy of the built-in tasks loads.
const std::set<std::string> kShipped = {"pass-order/rl-ppo",
                                        "pass-order/rl-dqn",
                                        "pass-order/rl-maxq",
                                        "cost-model/tile-cpu",
                                        "cost-model/fusion-cpu",
                                        "cost-model/tile-tpu-v3-core",
                                        "cost-model/tile-tpu-v4-core",
                                        "cost-model/fusion-tpu-v3-core",
                                        "cost-model/fusion-tpu-v4-core",
                                        "partition/go"};

class PretrainedModelsTest : public ::testing::Test {
 protected:
  void Start(const std::string& pretrained_dir) {
    setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0);
    DaemonConfig config = TestConfig(dir_.path());
    config.pretrained_dir = pretrained_dir;
    daemon_ = MustStart(config);
    ASSERT_NE(daemon_, nullptr);
    client_ = Client::Connect(daemon_->address());
    ASSERT_TRUE(client_->WaitForReady(10).ok());
  }

  JobInfo MustFinish(const std::string& task, const std::string& target,
                     const std::string& strategy) {
    SCOPED_TRACE(task + " on " + target + " with " + strategy);
    SubmitRequest request;
    request.graph = ExampleHlo();
    request.graph_name = "mlp.hlo";
    request.tasks = {task};
    request.target = target;
    request.strategy = strategy;
    request.budget.steps = 20;
    request.skip_cache = true;  // each strategy runs, though one result per task is cached
    absl::StatusOr<client::SubmitResponse> submitted = client_->Submit(request);
    EXPECT_TRUE(submitted.ok()) << submitted.status();
    if (!submitted.ok()) return {};
    absl::StatusOr<JobInfo> job = client_->Watch(submitted->job_id);
    EXPECT_TRUE(job.ok()) << job.status();
    if (!job.ok()) return {};
    EXPECT_EQ(job->state, JobState::kDone) << job->error;
    return *job;
  }

  TempDir dir_;
  std::unique_ptr<Daemon> daemon_;
  std::unique_ptr<Client> client_;
};

TEST_F(PretrainedModelsTest, EveryLearnedModelIsShipped) {
  std::set<std::string> found;
  for (const fs::directory_entry& entry : fs::directory_iterator(kPretrainedDir)) {
    if (entry.path().extension() != ".ckpt") continue;
    const std::string stem = entry.path().stem().string();
    for (const std::string& name : kShipped) {
      if (PretrainedFileStem(name) == stem) found.insert(name);
    }
    fs::path meta = entry.path();
    EXPECT_TRUE(fs::exists(meta.replace_extension(".json"))) << entry.path();
    // "A few MB each at most": the shipped models are small starting points.
    EXPECT_LT(fs::file_size(entry.path()), 4u << 20) << entry.path();
  }
  EXPECT_EQ(found, kShipped);
}

TEST_F(PretrainedModelsTest, AFreshDaemonServesEveryLearnedStrategyItLists) {
  Start(kPretrainedDir);
  absl::StatusOr<client::StrategyList> list = client_->ListStrategies();
  ASSERT_TRUE(list.ok()) << list.status();
  int learned = 0;
  for (const client::NamedInfo& strategy : list->strategies) {
    EXPECT_THAT(strategy.description, Not(HasSubstr("no trained model yet"))) << strategy.name;
    if (strategy.description.find(" v0 (pretrained)") != std::string::npos) ++learned;
  }
  // fusion's and tile's model-topk, rl-ppo, rl-dqn, rl-maxq, go, go-fix, go-sample
  EXPECT_EQ(learned, 8);

  for (const char* agent : {"rl-ppo", "rl-dqn", "rl-maxq"}) {
    JobInfo job = MustFinish("pass-order", "cpu", agent);
    ASSERT_EQ(job.results.size(), 1u);
    EXPECT_LE(job.results[0].tuned_score, job.results[0].original_score);
  }
  // GO places the ops on the cluster, never worse than m-ETF (a seed), within the budget.
  JobInfo go = MustFinish("placement", "gpu-4x-nvlink", "go");
  ASSERT_EQ(go.results.size(), 1u);
  EXPECT_LE(go.results[0].tuned_score, go.results[0].baseline_score);
  // And partitions the module onto the MCM's chips through the solver: every try valid.
  for (const char* mode : {"go-fix", "go-sample"}) {
    JobInfo mcm = MustFinish("mcm-partition", "mcm-36", mode);
    ASSERT_EQ(mcm.results.size(), 1u);
    const nlohmann::json validity = nlohmann::json::parse(mcm.results[0].artifacts.at("validity"));
    EXPECT_GT(validity.at("evaluations").get<int64_t>(), 1) << mode;
    EXPECT_EQ(validity.at("valid").get<int64_t>(), validity.at("evaluations").get<int64_t>())
        << mode;
  }
  for (const char* task : {"tile", "fusion"}) {
    for (const char* target : {"cpu", "tpu-v3-core", "tpu-v4-core"}) {
      JobInfo job = MustFinish(task, target, "model-topk");
      EXPECT_EQ(job.results.size(), 1u);
    }
  }
}

TEST_F(PretrainedModelsTest, AModelTheUserTrainsWinsAndARestartKeepsIt) {
  Start(kPretrainedDir);
  const std::string store_path = daemon_->store_path();
  {
    absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(store_path);
    ASSERT_TRUE(store.ok()) << store.status();
    absl::StatusOr<std::optional<storage::ModelRecord>> shipped =
        (*store)->LatestModel("pass-order/rl-ppo");
    ASSERT_TRUE(shipped.ok() && shipped->has_value());
    EXPECT_EQ((*shipped)->version, 0);
    EXPECT_EQ(ModelOrigin(**shipped), "pretrained");
    // What `mltune train-agent` does: the next version, with its own metadata.
    absl::StatusOr<int64_t> version =
        (*store)->PutModelNextVersion("pass-order/rl-ppo", (*shipped)->data, "{}");
    ASSERT_TRUE(version.ok()) << version.status();
    EXPECT_EQ(*version, 1);
  }
  daemon_.reset();
  Start(kPretrainedDir);  // installs nothing over the store's models
  absl::StatusOr<client::StrategyList> list = client_->ListStrategies();
  ASSERT_TRUE(list.ok()) << list.status();
  bool seen = false;
  for (const client::NamedInfo& strategy : list->strategies) {
    if (strategy.name != "rl-ppo") continue;
    seen = true;
    EXPECT_THAT(strategy.description, HasSubstr("pass-order/rl-ppo v1 (trained 20"));
  }
  EXPECT_TRUE(seen);
}

TEST_F(PretrainedModelsTest, ACheckpointWithoutItsMetadataIsAClearErrorAtStart) {
  const fs::path folder = dir_.path() / "pretrained";
  fs::create_directories(folder);
  std::ofstream(folder / "pass-order--rl-ppo.ckpt") << "bytes";
  DaemonConfig config = TestConfig(dir_.path() / "data");
  config.pretrained_dir = folder.string();
  absl::StatusOr<std::unique_ptr<Daemon>> daemon = Daemon::Start(config);
  ASSERT_FALSE(daemon.ok());
  EXPECT_EQ(daemon.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(daemon.status().message()), HasSubstr("pass-order--rl-ppo.json"));

  std::ofstream(folder / "pass-order--rl-ppo.json") << "[1, 2";
  daemon = Daemon::Start(config);
  ASSERT_FALSE(daemon.ok());
  EXPECT_THAT(std::string(daemon.status().message()), HasSubstr("not a JSON object"));
}

}  // namespace
}  // namespace mltune::daemon
