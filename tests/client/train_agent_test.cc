// `mltune train-agent` end to end on a few small generated graphs: the training curve files, the
// checkpoints in the store's model registry (one more version per run) and the error paths.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "storage/store.h"
#include "tests/support/corpus.h"
#include "tests/support/run_command.h"

namespace mltune {
namespace {

namespace fs = std::filesystem;
using Result = testing::CommandResult;

Result RunCli(const std::string& args) {
  return testing::RunCommand(absl::StrCat(MLTUNE_CLI_PATH, " ", args));
}

// A fresh folder per test, removed at the end.
class TrainAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The CLI offers train-agent only where the RL library (LibTorch) was configured.
    if (RunCli("train-agent --help").exit_code != 0) {
      GTEST_SKIP() << "mltune was built without the RL agents (optimizers/rl)";
    }
    dir_ = fs::temp_directory_path() /
           absl::StrCat("mltune_train_agent_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name(), "_",
                        getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "graphs" / "nested");
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // Four graphs the passes can shrink, each with its own structure (so four fingerprints):
  // x + 0, x * 1, a duplicated subexpression (cse), a double negation and a dead value (dce).
  void WriteGraphs() {
    for (int i = 0; i < 4; ++i) {
      const int n = 4 + i;
      std::string text = absl::StrFormat(
          "HloModule redundant_%d\n"
          "ENTRY e {\n"
          "  p = f32[%d] parameter(0)\n"
          "  q = f32[%d] parameter(1)\n"
          "  zero = f32[] constant(0)\n"
          "  bz = f32[%d] broadcast(zero), dimensions={}\n"
          "  x = f32[%d] add(p, bz)\n"
          "  one = f32[] constant(1)\n"
          "  bo = f32[%d] broadcast(one), dimensions={}\n"
          "  y = f32[%d] multiply(q, bo)\n"
          "  s1 = f32[%d] add(x, y)\n"
          "  s2 = f32[%d] add(x, y)\n"
          "  m = f32[%d] multiply(s1, s2)\n"
          "  n1 = f32[%d] negate(m)\n"
          "  n2 = f32[%d] negate(n1)\n"
          "  dead = f32[%d] exponential(p)\n",
          i, n, n, n, n, n, n, n, n, n, n, n, n);
      // More of the same pattern in the later graphs, so their sizes differ too.
      std::string last = "n2";
      for (int k = 0; k < i; ++k) {
        absl::StrAppend(&text, absl::StrFormat("  t%d = f32[%d] add(%s, bz)\n  u%d = f32[%d] "
                                               "multiply(t%d, bo)\n",
                                               k, n, last, k, n, k));
        last = absl::StrCat("u", k);
      }
      absl::StrAppend(&text, absl::StrFormat("  ROOT r = f32[%d] add(%s, %s)\n}\n", n, last, last));
      const fs::path path = i < 2 ? dir_ / "graphs" / absl::StrCat("g", i, ".hlo")
                                  : dir_ / "graphs" / "nested" / absl::StrCat("g", i, ".txt");
      std::ofstream(path) << text;
    }
    // Not HLO: skipped by name. A broken .hlo: skipped with a note.
    std::ofstream(dir_ / "graphs" / "README.md") << "not a graph\n";
    std::ofstream(dir_ / "graphs" / "broken.hlo") << "HloModule broken\nENTRY e {\n";
  }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  std::string TrainArgs(const std::string& algo, const std::string& extra) const {
    return absl::StrCat("train-agent --task pass-order --graphs ", Path("graphs"), " --algo ", algo,
                        " --episodes 6 --episode-length 4 --eval-every 3 --min-ops 1 --seed 1 ",
                        extra);
  }

  fs::path dir_;
};

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

TEST_F(TrainAgentTest, TrainsWritesCurveAndStoresVersions) {
  WriteGraphs();
  const std::string store_path = Path("store.db");
  Result r =
      RunCli(TrainArgs("ppo", absl::StrCat("--store ", store_path, " --csv ", Path("curve.csv"),
                                           " --svg ", Path("curve.svg"))));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  // The split: 4 graphs, 1 held out (round(0.25 * 4)); the broken file is skipped with a note.
  EXPECT_NE(r.out.find("4 of 5 files usable"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3 train, 1 held-out"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("note: skipping"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("broken.hlo"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("vs XLA's default CPU pipeline"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stored pass-order/rl-ppo version 1"), std::string::npos) << r.out;

  // CSV: the header, then one row per episode with six columns.
  const std::vector<std::string> csv = Lines(testing::ReadFile(Path("curve.csv")));
  ASSERT_EQ(csv.size(), 7u) << testing::ReadFile(Path("curve.csv"));
  EXPECT_EQ(csv[0], "episode,env_steps,seconds,mean_return,loss,eval_improvement");
  int evaluated = 0;
  for (size_t i = 1; i < csv.size(); ++i) {
    EXPECT_EQ(std::count(csv[i].begin(), csv[i].end(), ','), 5) << csv[i];
    if (csv[i].back() != ',') ++evaluated;
  }
  EXPECT_GE(evaluated, 1) << "no evaluation in the curve with --eval-every 3";

  // SVG: one document with the mean-return polyline.
  const std::string svg = testing::ReadFile(Path("curve.svg"));
  EXPECT_EQ(svg.rfind("<svg", 0), 0u) << svg.substr(0, 100);
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '<'), std::count(svg.begin(), svg.end(), '>'));

  {
    absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(store_path);
    ASSERT_TRUE(store.ok()) << store.status();
    absl::StatusOr<std::optional<storage::ModelRecord>> model =
        (*store)->LatestModel("pass-order/rl-ppo");
    ASSERT_TRUE(model.ok()) << model.status();
    ASSERT_TRUE(model->has_value());
    EXPECT_EQ((*model)->version, 1);
    EXPECT_FALSE((*model)->data.empty());
    const nlohmann::json meta = nlohmann::json::parse((*model)->metadata_json);
    EXPECT_EQ(meta["algo"], "ppo");
    EXPECT_EQ(meta["encoder"], "mlp");
    EXPECT_EQ(meta["episodes"], 6);
    EXPECT_EQ(meta["episode_length"], 4);
    EXPECT_EQ(meta["seed"], 1);
    EXPECT_FALSE(meta["passes"].empty());
    ASSERT_EQ(meta["train_graphs"].size(), 3u);
    ASSERT_EQ(meta["held_out_graphs"].size(), 1u);
    EXPECT_EQ(meta["held_out_graphs"][0]["fingerprint"].get<std::string>().size(), 64u);
    EXPECT_TRUE(meta["final_eval"].contains("mean_improvement_vs_default_cpu"));
    EXPECT_EQ(meta["final_eval"]["per_graph"].size(), 1u);
  }

  // Again: the next version, with the same split (the split depends on fingerprints only).
  Result again = RunCli(TrainArgs("ppo", absl::StrCat("--store ", store_path)));
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("stored pass-order/rl-ppo version 2"), std::string::npos) << again.out;
  auto split = [](const std::string& out) {
    std::string lines;
    for (const std::string& line : Lines(out)) {
      if (line.rfind("  train ", 0) == 0 || line.rfind("  held-out ", 0) == 0) {
        absl::StrAppend(&lines, line, "\n");
      }
    }
    return lines;
  };
  EXPECT_EQ(split(r.out), split(again.out));
  EXPECT_FALSE(split(r.out).empty());
  absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(store_path);
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<std::vector<storage::ModelRecord>> models = (*store)->ListModels();
  ASSERT_TRUE(models.ok()) << models.status();
  ASSERT_EQ(models->size(), 2u);
  EXPECT_EQ((*models)[1].name, "pass-order/rl-ppo");
  EXPECT_EQ((*models)[1].version, 2);
  EXPECT_TRUE(nlohmann::json::accept((*models)[1].metadata_json));
}

TEST_F(TrainAgentTest, DqnAndMaxQTrainWithoutAStore) {
  WriteGraphs();
  for (const char* algo : {"dqn", "maxq"}) {
    Result r = RunCli(TrainArgs(algo, "--no-store"));
    ASSERT_EQ(r.exit_code, 0) << algo << "\n" << r.out << r.err;
    EXPECT_NE(r.out.find(absl::StrCat("train-agent pass-order: ", algo, " agent")),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("stored "), std::string::npos) << r.out;
  }
}

TEST_F(TrainAgentTest, UnknownAlgorithmFails) {
  WriteGraphs();
  Result r = RunCli(TrainArgs("sarsa", absl::StrCat("--store ", Path("store.db"))));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("unknown algorithm 'sarsa'"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ppo, dqn, maxq or go"), std::string::npos) << r.err;
}

TEST_F(TrainAgentTest, EmptyFolderIsAClearError) {
  fs::create_directories(dir_ / "empty");
  Result r = RunCli(
      absl::StrCat("train-agent --task pass-order --algo ppo --no-store --graphs ", Path("empty")));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no HLO files"), std::string::npos) << r.err;

  Result missing = RunCli(absl::StrCat(
      "train-agent --task pass-order --algo ppo --no-store --graphs ", Path("no-such-folder")));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no such file or folder"), std::string::npos) << missing.err;
}

TEST_F(TrainAgentTest, TooSmallGraphsAreAClearError) {
  WriteGraphs();
  Result r = RunCli(absl::StrCat("train-agent --task pass-order --algo ppo --no-store --graphs ",
                                 Path("graphs"), " --min-ops 1000"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("none of the 5 HLO files is usable"), std::string::npos) << r.err;
}

TEST_F(TrainAgentTest, UnwritableStoreFailsBeforeTraining) {
  WriteGraphs();
  // A store path under a regular file cannot be created.
  std::ofstream(dir_ / "file") << "x";
  Result r = RunCli(TrainArgs("ppo", absl::StrCat("--store ", Path("file/store.db"))));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cannot open the store"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("trained"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace mltune
