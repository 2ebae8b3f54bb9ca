// The daemon retrains its cost models from its own measurements (daemon/model_refresher.h): which
// models have enough new rows, a trainer that starts only when the daemon is idle, stops when a
// job arrives and comes back on the next idle spell, a failed training that waits for new data,
// and, end to end, a real mltuned whose random tile job's rows train the model its next
// model-topk job ranks with (the real mltune CLI as the trainer).
#include "daemon/model_refresher.h"

#include <signal.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/rpc_client.h"
#include "daemon/metrics/metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/store.h"
#include "tests/daemon/daemon_test_util.h"

namespace mltune::daemon {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using testing::TempDir;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::unique_ptr<storage::Store> OpenStore(const std::filesystem::path& path) {
  absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(path.string());
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

void Log(storage::Store& store, const std::string& task, const std::string& target, int rows,
         int64_t time_ms) {
  std::vector<storage::MeasurementRecord> records;
  for (int i = 0; i < rows; ++i) {
    storage::MeasurementRecord& m = records.emplace_back();
    m.graph_key = absl::StrCat("k", i);
    m.task = task;
    m.target = target;
    m.configuration = "block=8";
    m.value = 1e-6;
    m.worker = "test";
    m.time_ms = time_ms;
  }
  ASSERT_TRUE(store.AppendMeasurements(records).ok());
}

// Waits up to `seconds` for `done`.
bool Eventually(const std::function<bool()>& done, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

std::vector<std::string> Lines(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST(StaleModelsTest, CountsTheTrainingRowsLoggedSinceEachModelsNewestVersion) {
  TempDir dir;
  std::unique_ptr<storage::Store> store = OpenStore(dir.path() / "mltune.db");
  ASSERT_NE(store, nullptr);
  Log(*store, "tile-kernel", "cpu", 5, 1000);
  Log(*store, "fusion-kernel-in-module", "cpu", 3, 1000);
  Log(*store, "fusion-kernel", "cpu", 4, 1000);
  Log(*store, "tile-kernel", "tpu-v4-core", 6, 1000);
  Log(*store, "tile", "cpu", 50, 1000);  // job-level rows: not a cost model's training data
  Log(*store, "tile-kernel", "tpu-v3-core", 9, 1000);  // a target not asked about

  absl::StatusOr<std::vector<ModelNewRows>> stale = StaleModels(*store, {"cpu", "tpu-v4-core"}, 1);
  ASSERT_TRUE(stale.ok()) << stale.status();
  ASSERT_EQ(stale->size(), 3u);
  // Most new rows first; fusion counts both its logs.
  EXPECT_EQ((*stale)[0].task, "fusion");
  EXPECT_EQ((*stale)[0].target, "cpu");
  EXPECT_EQ((*stale)[0].new_rows, 7);
  EXPECT_EQ((*stale)[1].task, "tile");
  EXPECT_EQ((*stale)[1].target, "tpu-v4-core");
  EXPECT_EQ((*stale)[1].new_rows, 6);
  EXPECT_EQ((*stale)[2].task, "tile");
  EXPECT_EQ((*stale)[2].target, "cpu");
  EXPECT_EQ((*stale)[2].new_rows, 5);
  EXPECT_EQ((*stale)[2].since_ms, 0);

  stale = StaleModels(*store, {"cpu", "tpu-v4-core"}, 6);
  ASSERT_TRUE(stale.ok());
  ASSERT_EQ(stale->size(), 2u);

  // A stored version resets its model's count; rows logged after it count again.
  ASSERT_TRUE(store->PutModelNextVersion("cost-model/tile-cpu", "checkpoint", "{}").ok());
  stale = StaleModels(*store, {"cpu"}, 1);
  ASSERT_TRUE(stale.ok());
  ASSERT_EQ(stale->size(), 1u);
  EXPECT_EQ((*stale)[0].task, "fusion");
  Log(*store, "tile-kernel", "cpu", 2, NowMs() + 60'000);
  stale = StaleModels(*store, {"cpu"}, 1);
  ASSERT_TRUE(stale.ok());
  ASSERT_EQ(stale->size(), 2u);
  EXPECT_EQ((*stale)[1].task, "tile");
  EXPECT_EQ((*stale)[1].new_rows, 2);
  EXPECT_GT((*stale)[1].since_ms, 1000);

  // A failed training's start counts like a version: it waits for rows logged after it.
  stale = StaleModels(*store, {"cpu"}, 1, {{"cost-model/fusion-cpu", 5000}});
  ASSERT_TRUE(stale.ok());
  ASSERT_EQ(stale->size(), 1u);
  EXPECT_EQ((*stale)[0].task, "tile");
}

TEST(StaleModelsTest, ANewestVersionsRecipeKeepsOnlyTrainingFlags) {
  TempDir dir;
  std::unique_ptr<storage::Store> store = OpenStore(dir.path() / "mltune.db");
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store
                  ->PutModelNextVersion("cost-model/tile-cpu", "v1",
                                        R"({"recipe": ["--epochs", "5", "--hidden", "8"]})")
                  .ok());
  // A recipe may not point the trainer at other files or stores.
  ASSERT_TRUE(store
                  ->PutModelNextVersion("cost-model/tile-cpu", "v2",
                                        R"({"recipe": ["--epochs", "9", "--predictions",
                                            "/tmp/x.csv", "--db", "other.db", "--no-in-module",
                                            "--min-pair-ratio=1.15"]})")
                  .ok());
  ASSERT_TRUE(
      store->PutModelNextVersion("cost-model/fusion-cpu", "v1", R"({"recipe": "--epochs 3"})")
          .ok());
  Log(*store, "tile-kernel", "cpu", 2, NowMs() + 60'000);
  Log(*store, "fusion-kernel", "cpu", 1, NowMs() + 60'000);
  absl::StatusOr<std::vector<ModelNewRows>> stale = StaleModels(*store, {"cpu"}, 1);
  ASSERT_TRUE(stale.ok()) << stale.status();
  ASSERT_EQ(stale->size(), 2u);
  EXPECT_EQ((*stale)[0].task, "tile");
  EXPECT_EQ((*stale)[0].recipe,
            (std::vector<std::string>{"--epochs", "9", "--no-in-module", "--min-pair-ratio=1.15"}));
  EXPECT_TRUE((*stale)[1].recipe.empty());  // not a list of flags: no recipe
}

TEST(TrainerFlagsTest, TrainerArgsOverrideTheRecipesFlags) {
  const std::vector<std::string> recipe = {"--loss", "both",           "--epochs", "60", "--hidden",
                                           "64",     "--no-in-module", "--seed",   "0"};
  EXPECT_EQ(TrainerFlags(recipe, {}), recipe);
  EXPECT_EQ(TrainerFlags({}, {"--epochs", "5"}), (std::vector<std::string>{"--epochs", "5"}));
  EXPECT_EQ(TrainerFlags(recipe, {"--epochs=30", "--ensemble", "1", "--seed", "4"}),
            (std::vector<std::string>{"--loss", "both", "--hidden", "64", "--no-in-module",
                                      "--epochs=30", "--ensemble", "1", "--seed", "4"}));
}

// A stand-in trainer (a shell script) and a ModelRefresher over a store with rows to train on.
class RefresherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = OpenStore(dir_.path() / "mltune.db");
    ASSERT_NE(store_, nullptr);
    absl::StatusOr<std::unique_ptr<Metrics>> metrics = Metrics::Create("");
    ASSERT_TRUE(metrics.ok());
    metrics_ = *std::move(metrics);
  }

  // The trainer records its pid and arguments, then runs `then` (a shell command).
  void WriteTrainer(const std::string& then) {
    trainer_ = dir_.path() / "trainer.sh";
    std::ofstream out(trainer_);
    out << "#!/bin/sh\necho $$ >> '" << (dir_.path() / "pids").string() << "'\necho \"$@\" >> '"
        << (dir_.path() / "args").string() << "'\n"
        << then << "\n";
    out.close();
    ASSERT_EQ(chmod(trainer_.c_str(), 0755), 0);
  }

  void StartRefresher(int64_t min_new_rows, bool gate = true) {
    RefresherOptions options;
    options.min_new_rows = min_new_rows;
    options.gate = gate;
    options.idle_seconds = 0.2;
    options.trainer = trainer_.string();
    options.trainer_args = {"--epochs", "7"};
    options.store_path = store_->path();
    options.log_path = (dir_.path() / "trainer.log").string();
    options.targets = {"cpu"};
    options.poll_seconds = 0.02;
    options.recount_seconds = 0.05;
    refresher_ = std::make_unique<ModelRefresher>(
        *store_, *metrics_, [this] { return busy_.load(); }, options);
    refresher_->Start();
  }

  std::vector<std::string> Pids() { return Lines(dir_.path() / "pids"); }
  static bool Alive(const std::string& pid) { return kill(std::stoi(pid), 0) == 0; }

  TempDir dir_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<Metrics> metrics_;
  std::filesystem::path trainer_;
  std::atomic<bool> busy_{false};
  std::unique_ptr<ModelRefresher> refresher_;
};

TEST_F(RefresherTest, TrainsOnlyWhenIdleStopsForAJobAndComesBackAfterIt) {
  Log(*store_, "tile-kernel", "cpu", 3, 1000);
  WriteTrainer("exec sleep 300");
  busy_ = true;
  StartRefresher(3);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_TRUE(Pids().empty()) << "a trainer started while a job was running";

  busy_ = false;
  ASSERT_TRUE(Eventually([&] { return Pids().size() == 1; }, 10));
  const std::vector<std::string> args = Lines(dir_.path() / "args");
  ASSERT_EQ(args.size(), 1u);
  EXPECT_EQ(args[0], absl::StrCat("train-cost-model --db ", store_->path(),
                                  " --task tile --target cpu --no-eval --gate --epochs 7"));
  const std::string first = Pids()[0];
  EXPECT_TRUE(Alive(first));
  EXPECT_THAT(metrics_->Serialize(), HasSubstr("mltune_cost_model_trainer_running 1"));
  EXPECT_EQ(refresher_->Status().training, "cost-model/tile-cpu");
  // What the refresher counted for each model on its targets.
  EXPECT_THAT(metrics_->Serialize(),
              HasSubstr("mltune_cost_model_new_rows{model=\"cost-model/tile-cpu\"} 3"));
  EXPECT_THAT(metrics_->Serialize(),
              HasSubstr("mltune_cost_model_new_rows{model=\"cost-model/fusion-cpu\"} 0"));

  // A job arrives: the trainer goes at once, and no new one starts while the job runs.
  busy_ = true;
  ASSERT_TRUE(Eventually([&] { return !Alive(first); }, 2)) << "trainer still running";
  EXPECT_THAT(metrics_->Serialize(),
              HasSubstr("mltune_cost_model_trainings_total{model=\"cost-model/tile-cpu\","
                        "outcome=\"preempted\"} 1"));
  EXPECT_THAT(metrics_->Serialize(), HasSubstr("mltune_cost_model_trainer_running 0"));
  EXPECT_EQ(refresher_->Status().training, "");
  const RefresherStatus status = refresher_->Status();
  EXPECT_EQ(status.min_new_rows, 3);
  EXPECT_GT(status.counted_ms, 0);
  ASSERT_EQ(status.models.size(), 2u);  // tile and fusion on cpu, most new rows first
  EXPECT_EQ(status.models[0].task, "tile");
  EXPECT_EQ(status.models[0].new_rows, 3);
  EXPECT_EQ(status.models[0].version, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(Pids().size(), 1u);

  // Idle again: the same model is trained again (nothing was stored).
  busy_ = false;
  ASSERT_TRUE(Eventually([&] { return Pids().size() == 2; }, 10));
  const std::string second = Pids()[1];
  ASSERT_TRUE(Eventually([&] { return Alive(second); }, 2));
  // Shutdown kills it too.
  refresher_->Shutdown();
  EXPECT_FALSE(Alive(second));
  EXPECT_THAT(metrics_->Serialize(),
              HasSubstr("mltune_cost_model_trainings_total{model=\"cost-model/tile-cpu\","
                        "outcome=\"stopped\"} 1"));
  const std::string log = testing::ReadFile(dir_.path() / "trainer.log");
  EXPECT_THAT(log, HasSubstr("cost-model/tile-cpu: 3 new rows"));
}

TEST_F(RefresherTest, RetrainsWithTheNewestVersionsRecipe) {
  ASSERT_TRUE(store_
                  ->PutModelNextVersion("cost-model/tile-cpu", "checkpoint",
                                        R"({"recipe": ["--hidden", "16", "--epochs", "2"]})")
                  .ok());
  Log(*store_, "tile-kernel", "cpu", 1, NowMs() + 60'000);
  WriteTrainer("exit 1");
  StartRefresher(1);
  ASSERT_TRUE(Eventually([&] { return Lines(dir_.path() / "args").size() == 1; }, 10));
  // --trainer-args' --epochs 7 wins over the recipe's.
  EXPECT_EQ(Lines(dir_.path() / "args")[0],
            absl::StrCat("train-cost-model --db ", store_->path(),
                         " --task tile --target cpu --no-eval --gate --hidden 16 --epochs 7"));
  refresher_->Shutdown();
}

TEST_F(RefresherTest, AFailedTrainingWaitsForNewRows) {
  Log(*store_, "fusion-kernel-in-module", "cpu", 2, 1000);
  WriteTrainer("echo 'error: something the log should keep' >&2; exit 2");
  StartRefresher(2);
  ASSERT_TRUE(Eventually([&] { return Pids().size() == 1; }, 10));
  ASSERT_TRUE(Eventually(
      [&] { return metrics_->Serialize().find("outcome=\"failed\"} 1") != std::string::npos; }, 5));
  // The same rows would fail the same way: no second try.
  std::this_thread::sleep_for(std::chrono::milliseconds(600));
  EXPECT_EQ(Pids().size(), 1u);
  EXPECT_THAT(testing::ReadFile(dir_.path() / "trainer.log"),
              HasSubstr("error: something the log should keep"));
  EXPECT_THAT(Lines(dir_.path() / "args")[0], HasSubstr("--task fusion --target cpu"));

  // Enough new rows: it tries again.
  Log(*store_, "fusion-kernel", "cpu", 2, NowMs() + 60'000);
  ASSERT_TRUE(Eventually([&] { return Pids().size() == 2; }, 10));
  refresher_->Shutdown();
}

// train-cost-model --gate exits 3 when the retrained model loses to the stored one: counted as
// rejected, not failed, and like a failure it waits for new rows.
TEST_F(RefresherTest, ARejectedModelWaitsForNewRows) {
  Log(*store_, "tile-kernel", "cpu", 2, 1000);
  WriteTrainer("echo 'gate: ... rejected' ; exit 3");
  StartRefresher(2);
  ASSERT_TRUE(Eventually(
      [&] {
        return metrics_->Serialize().find(
                   "{model=\"cost-model/tile-cpu\",outcome=\"rejected\"} 1") != std::string::npos;
      },
      10));
  EXPECT_EQ(metrics_->Serialize().find("outcome=\"failed\""), std::string::npos);
  // GetStats reports it too.
  const RefresherStatus status = refresher_->Status();
  ASSERT_TRUE(status.last.contains("cost-model/tile-cpu"));
  EXPECT_EQ(status.last.at("cost-model/tile-cpu").outcome, "rejected");
  EXPECT_GT(status.last.at("cost-model/tile-cpu").ended_ms, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(Pids().size(), 1u);
  Log(*store_, "tile-kernel", "cpu", 2, NowMs() + 60'000);
  ASSERT_TRUE(Eventually([&] { return Pids().size() == 2; }, 10));
  refresher_->Shutdown();
}

// The store keeps each retraining, so a restarted daemon neither trains a rejected model again on
// the rows it lost on nor forgets the outcome GetStats reports.
TEST_F(RefresherTest, ARestartedRefresherRemembersARejection) {
  Log(*store_, "tile-kernel", "cpu", 2, 1000);
  WriteTrainer("exit 3");
  StartRefresher(2);
  ASSERT_TRUE(Eventually(
      [&] { return metrics_->Serialize().find("outcome=\"rejected\"} 1") != std::string::npos; },
      10));
  refresher_->Shutdown();
  absl::StatusOr<std::vector<storage::ModelTrainingRecord>> runs = store_->LatestModelTrainings();
  ASSERT_TRUE(runs.ok()) << runs.status();
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ((*runs)[0].name, "cost-model/tile-cpu");
  EXPECT_EQ((*runs)[0].outcome, "rejected");
  EXPECT_EQ((*runs)[0].new_rows, 2);
  EXPECT_THAT((*runs)[0].detail, HasSubstr("did worse than the stored version"));

  refresher_.reset();
  StartRefresher(2);
  ASSERT_TRUE(Eventually([&] { return refresher_->Status().counted_ms > 0; }, 5));
  const RefresherStatus status = refresher_->Status();
  ASSERT_TRUE(status.last.contains("cost-model/tile-cpu"));
  EXPECT_EQ(status.last.at("cost-model/tile-cpu").outcome, "rejected");
  EXPECT_EQ(status.last.at("cost-model/tile-cpu").ended_ms, (*runs)[0].ended_ms);
  ASSERT_EQ(status.models.size(), 2u);
  EXPECT_EQ(status.models[0].new_rows, 0);  // counted from the rejected run's start
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(Pids().size(), 1u) << "the restarted refresher trained on the rows it lost on";
  Log(*store_, "tile-kernel", "cpu", 2, NowMs() + 60'000);
  ASSERT_TRUE(Eventually([&] { return Pids().size() == 2; }, 10));
  refresher_->Shutdown();
}

// mltuned --no-retrain-gate: the trainer stores whatever it trains.
TEST_F(RefresherTest, WithoutTheGateTheTrainerIsNotAskedToCompare) {
  Log(*store_, "tile-kernel", "cpu", 1, 1000);
  WriteTrainer("exit 1");
  StartRefresher(1, /*gate=*/false);
  ASSERT_TRUE(Eventually([&] { return Lines(dir_.path() / "args").size() == 1; }, 10));
  EXPECT_THAT(Lines(dir_.path() / "args")[0], Not(HasSubstr("--gate")));
  refresher_->Shutdown();
}

TEST_F(RefresherTest, ATrainerThatStoresNothingIsNotRunAgainAtOnce) {
  Log(*store_, "tile-kernel", "cpu", 1, 1000);
  WriteTrainer("exit 0");
  StartRefresher(1);
  ASSERT_TRUE(Eventually(
      [&] { return metrics_->Serialize().find("outcome=\"failed\"} 1") != std::string::npos; },
      10));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(Pids().size(), 1u);
  EXPECT_EQ(metrics_->Serialize().find("outcome=\"stored\""), std::string::npos);
  refresher_->Shutdown();
}

TEST_F(RefresherTest, ATrainerThatCannotStartCountsAsFailed) {
  Log(*store_, "tile-kernel", "cpu", 1, 1000);
  trainer_ = dir_.path() / "no-such-trainer";
  StartRefresher(1);
  ASSERT_TRUE(Eventually(
      [&] { return metrics_->Serialize().find("outcome=\"failed\"} 1") != std::string::npos; },
      10));
  refresher_->Shutdown();
}

TEST_F(RefresherTest, ZeroRowsTurnsItOff) {
  Log(*store_, "tile-kernel", "cpu", 100, 1000);
  WriteTrainer("exit 0");
  StartRefresher(0);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_TRUE(Pids().empty());
  EXPECT_THAT(metrics_->Serialize(), Not(HasSubstr("mltune_cost_model_new_rows{")));
}

// End to end: a real mltuned retrains cost-model/tile-tpu-v4-core from what its own random tile
// job simulated, with the real mltune CLI, and the next model-topk job ranks with that model.
TEST(DaemonRetrainingTest, ADaemonsOwnMeasurementsTrainTheModelItsNextJobUses) {
  TempDir dir;
  DaemonConfig config = testing::TestConfig(dir.path());
  config.retrain_rows = 1;
  config.retrain_idle_seconds = 0.2;
  config.trainer = MLTUNE_CLI_PATH;
  config.trainer_args = "--epochs 3 --ensemble 1 --hidden 16 --layers 1";
  std::unique_ptr<Daemon> daemon = testing::MustStart(config);
  ASSERT_NE(daemon, nullptr);
  absl::StatusOr<std::unique_ptr<client::Client>> c = client::Client::Connect(daemon->address());
  ASSERT_TRUE(c.ok()) << c.status();
  client::Client& client = **c;
  auto run = [&](const std::string& strategy) -> absl::Status {
    client::SubmitRequest request;
    request.graph = testing::ExampleHlo();
    request.graph_name = "mlp.hlo";
    request.target = "tpu-sim";
    request.tasks = {"tile"};
    request.budget.steps = 60;
    request.strategy = strategy;
    request.skip_cache = true;  // the random job's result is cached under the same key
    absl::StatusOr<client::SubmitResponse> submitted = client.Submit(request);
    if (!submitted.ok()) return submitted.status();
    absl::StatusOr<client::JobInfo> job = client.Watch(submitted->job_id);
    if (!job.ok()) return job.status();
    return job->state == client::JobState::kDone ? absl::OkStatus()
                                                 : absl::InternalError(job->error);
  };
  // GetStats reports the retraining and, once counted (at start), every model, none stored.
  ASSERT_TRUE(Eventually(
      [&] {
        absl::StatusOr<client::ServerStats> stats = client.GetStats();
        return stats.ok() && stats->cost_models_counted_ms > 0;
      },
      10));
  absl::StatusOr<client::ServerStats> stats = client.GetStats();
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->retrain_rows, 1);
  EXPECT_EQ(stats->retrain_idle_seconds, 0.2);
  // cpu, tpu-v3-core and tpu-v4-core, tile and fusion each.
  EXPECT_EQ(stats->cost_models.size(), 6u);
  for (const client::CostModelInfo& m : stats->cost_models) {
    EXPECT_EQ(m.version, 0) << m.name;
    EXPECT_EQ(m.new_rows, 0) << m.name;
  }
  EXPECT_EQ(run("model-topk").code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(run("random").ok());

  std::unique_ptr<storage::Store> store = OpenStore(daemon->store_path());
  ASSERT_NE(store, nullptr);
  auto newest = [&] {
    absl::StatusOr<std::optional<storage::ModelRecord>> m =
        store->LatestModel("cost-model/tile-tpu-v4-core");
    return m.ok() && m->has_value() ? (*m)->version : 0;
  };
  EXPECT_EQ(newest(), 0);
  // The CLI prints its last line once the version is stored: then the trainer has finished.
  auto log = [&] { return testing::ReadFile(dir.path() / "trainer.log"); };
  ASSERT_TRUE(Eventually(
      [&] {
        return log().find("stored cost-model/tile-tpu-v4-core version 1") != std::string::npos;
      },
      240))
      << "no model trained; trainer log:\n"
      << log();
  EXPECT_EQ(newest(), 1);
  ASSERT_TRUE(Eventually(
      [&] {
        absl::StatusOr<client::ServerStats> s = client.GetStats();
        if (!s.ok()) return false;
        for (const client::CostModelInfo& m : s->cost_models) {
          if (m.name == "cost-model/tile-tpu-v4-core") {
            return m.version == 1 && !m.training && m.last_outcome == "stored" &&
                   m.last_outcome_ms > 0;
          }
        }
        return false;
      },
      10))
      << "GetStats does not show the new version";
  EXPECT_THAT(log(), HasSubstr("--epochs 3 --ensemble 1"));
  // The daemon asks for the gate; with no version before, there was nothing to compare.
  EXPECT_THAT(log(), HasSubstr("gate: skipped, no stored cost-model/tile-tpu-v4-core"));
  absl::StatusOr<std::optional<storage::ModelRecord>> model =
      store->LatestModel("cost-model/tile-tpu-v4-core");
  ASSERT_TRUE(model.ok() && model->has_value());
  EXPECT_THAT((*model)->metadata_json, HasSubstr("\"epochs\":3"));
  const absl::Status guided = run("model-topk");
  EXPECT_TRUE(guided.ok()) << guided;
}

}  // namespace
}  // namespace mltune::daemon
