// `mltune train-cost-model` end to end on a store filled by `mltune collect`: both splits are
// evaluated, each run stores the next checkpoint version (loadable by the learned model), and a
// store without measurements, an unknown task or a bad holdout are clear errors.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "costmodels/learned/learned_model.h"
#include "costmodels/synthetic/synthetic_programs.h"
#include "nlohmann/json.hpp"
#include "optimizers/guided/stored_cost_models.h"
#include "storage/store.h"
#include "tests/support/cli_store_fixture.h"
#include "tests/support/corpus.h"

namespace mltune {
namespace {

using Result = testing::CommandResult;

// Two programs, three kernels (an elementwise loop with a transpose, a row reduce, a dot).
constexpr char kFirst[] = R"(HloModule first
add_f {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT r = f32[] add(p, q)
}
ENTRY e {
  x = f32[16,64] parameter(0)
  y = f32[16,64] exponential(x)
  t = f32[64,16] transpose(y), dimensions={1,0}
  z = f32[] constant(0)
  s = f32[16] reduce(x, z), dimensions={1}, to_apply=add_f
  ROOT o = (f32[64,16], f32[16]) tuple(t, s)
})";
constexpr char kSecond[] = R"(HloModule second
ENTRY e {
  a = f32[32,48] parameter(0)
  b = f32[48,40] parameter(1)
  ROOT d = f32[32,40] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";

class TrainCostModelTest : public testing::CliStoreTest {
 protected:
  TrainCostModelTest() : CliStoreTest({{"first.hlo", kFirst}, {"second.hlo", kSecond}}) {}

  // The newest model stored under `name` in Db(); nullopt, with a failed expectation, when the
  // store does not open or holds none.
  std::optional<storage::ModelRecord> Latest(const std::string& name) {
    absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(Db());
    EXPECT_TRUE(store.ok()) << store.status();
    if (!store.ok()) return std::nullopt;
    absl::StatusOr<std::optional<storage::ModelRecord>> model = (*store)->LatestModel(name);
    EXPECT_TRUE(model.ok() && model->has_value()) << name;
    return model.ok() ? *model : std::nullopt;
  }
};

TEST_F(TrainCostModelTest, EvaluatesBothSplitsAndStoresVersions) {
  Result collect =
      Cli(absl::StrCat("collect ", Graphs(), " --db ", Db(), " --per-kernel 4 --seed 3"));
  ASSERT_EQ(collect.exit_code, 0) << collect.err;
  const std::string train =
      absl::StrCat("train-cost-model --db ", Db(), " --epochs 3 --hidden 16 --layers 1");
  Result first = Cli(train);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("measurements of 3 kernels from 2 programs"), std::string::npos)
      << first.out;
  // Three kernels, four folds: three folds of one test kernel, each trained on the other two.
  EXPECT_NE(first.out.find("| random kernels | 3 | 2 | 3 |"), std::string::npos) << first.out;
  // Two programs: two folds, each trained on the other program's kernels.
  EXPECT_NE(first.out.find("| held-out programs | 2 |"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("| held-out programs |"), std::string::npos) << first.out;
  // The configuration-aware CPU roofline ranks the same rows.
  EXPECT_NE(first.out.find("APE mean (analytical)"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("configuration-aware CPU roofline"), std::string::npos) << first.out;
  // The paper's per-program APE, a second table: both programs are tested on each split.
  EXPECT_NE(first.out.find("program APE mean (median): relative head"), std::string::npos)
      << first.out;
  EXPECT_NE(first.out.find("| random kernels | 2 | "), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("| held-out programs | 2 | "), std::string::npos) << first.out;
  EXPECT_EQ(first.out.find("| - |"), std::string::npos) << first.out;
  EXPECT_EQ(first.out.find("| skipped"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("stored cost-model/tile-cpu version 1"), std::string::npos) << first.out;
  Result second = Cli(train);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.out.find("stored cost-model/tile-cpu version 2"), std::string::npos)
      << second.out;

  std::optional<storage::ModelRecord> latest = Latest("cost-model/tile-cpu");
  ASSERT_TRUE(latest.has_value());
  EXPECT_EQ(latest->version, 2);
  EXPECT_NE(latest->metadata_json.find("held-out programs"), std::string::npos);
  EXPECT_NE(latest->metadata_json.find("\"relative_program_ape_mean\""), std::string::npos);
  EXPECT_NE(latest->metadata_json.find("\"test_programs\":2"), std::string::npos)
      << latest->metadata_json;
  absl::StatusOr<std::unique_ptr<costmodels::learned::LearnedModel>> model =
      costmodels::learned::LearnedModel::Load(latest->data);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE((*model)->trained());
  // Tile rankings use the relative head; the absolute head stays pooled, its loss MSE alone.
  EXPECT_FALSE((*model)->options().node_time_sum);
  EXPECT_EQ((*model)->options().relative_error_weight, 0);

  // --no-store evaluates without storing.
  Result dry = Cli(train + " --no-store");
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_EQ(dry.out.find("stored"), std::string::npos) << dry.out;
  EXPECT_EQ(Latest("cost-model/tile-cpu")->version, 2);

  // --splits runs one cross-validation alone.
  Result programs = Cli(train + " --no-store --splits programs");
  ASSERT_EQ(programs.exit_code, 0) << programs.err;
  EXPECT_EQ(programs.out.find("| random kernels |"), std::string::npos) << programs.out;
  EXPECT_NE(programs.out.find("| held-out programs | 2 |"), std::string::npos) << programs.out;
  Result random = Cli(train + " --no-store --splits random");
  ASSERT_EQ(random.exit_code, 0) << random.err;
  EXPECT_NE(random.out.find("| random kernels | 3 | 2 | 3 |"), std::string::npos) << random.out;
  EXPECT_EQ(random.out.find("| held-out programs |"), std::string::npos) << random.out;

  // Rank pairs weighted by the kernel's share of its program's time train, evaluate and are
  // recorded with the checkpoint.
  Result shares = Cli(train + " --kernel-weights program-share");
  ASSERT_EQ(shares.exit_code, 0) << shares.err;
  EXPECT_NE(shares.out.find("| held-out programs | 2 |"), std::string::npos) << shares.out;
  EXPECT_NE(
      Latest("cost-model/tile-cpu")->metadata_json.find("\"kernel_weights\":\"program-share\""),
      std::string::npos);

  // --no-eval only trains on everything and stores.
  Result quick = Cli(train + " --no-eval");
  ASSERT_EQ(quick.exit_code, 0) << quick.err;
  EXPECT_EQ(quick.out.find("| random kernels"), std::string::npos) << quick.out;
  EXPECT_NE(quick.out.find("stored cost-model/tile-cpu version 4"), std::string::npos) << quick.out;
  // An ablation: the model reads only the leading feature columns, and its checkpoint says so
  // (and keeps the regularisation it was trained with).
  Result narrow = Cli(train +
                      " --no-eval --node-features 20 --kernel-features 14 --dropout 0.25 "
                      "--weight-decay 0.001");
  ASSERT_EQ(narrow.exit_code, 0) << narrow.err;
  std::optional<storage::ModelRecord> narrow_record = Latest("cost-model/tile-cpu");
  ASSERT_TRUE(narrow_record.has_value());
  EXPECT_EQ(narrow_record->version, 5);
  EXPECT_NE(narrow_record->metadata_json.find("\"node_features\":20"), std::string::npos)
      << narrow_record->metadata_json;
  absl::StatusOr<std::unique_ptr<costmodels::learned::LearnedModel>> narrow_model =
      costmodels::learned::LearnedModel::Load(narrow_record->data);
  ASSERT_TRUE(narrow_model.ok()) << narrow_model.status();
  EXPECT_EQ((*narrow_model)->options().node_features, 20);
  EXPECT_EQ((*narrow_model)->options().kernel_features, 14);
  EXPECT_EQ((*narrow_model)->options().dropout, 0.25);
  EXPECT_EQ((*narrow_model)->options().weight_decay, 0.001);

  // The checkpoint records its training recipe, the flags that shaped it, and they train the same
  // kind of model again: what the daemon's own retraining passes (daemon/model_refresher.h).
  const nlohmann::json recipe = nlohmann::json::parse(narrow_record->metadata_json)["recipe"];
  ASSERT_TRUE(recipe.is_array()) << narrow_record->metadata_json;
  const std::vector<std::string> flags = recipe.get<std::vector<std::string>>();
  std::map<std::string, std::string> value_of;
  for (size_t i = 0; i < flags.size(); ++i) {
    if (!flags[i].starts_with("--")) continue;
    EXPECT_NE(std::find(std::begin(opt::guided::kTrainingRecipeFlags),
                        std::end(opt::guided::kTrainingRecipeFlags), flags[i]),
              std::end(opt::guided::kTrainingRecipeFlags))
        << flags[i] << " is not a recipe flag";
    value_of[flags[i]] =
        i + 1 < flags.size() && !flags[i + 1].starts_with("--") ? flags[i + 1] : "";
  }
  EXPECT_EQ(value_of["--node-features"], "20");
  EXPECT_EQ(value_of["--kernel-features"], "14");
  EXPECT_EQ(value_of["--epochs"], "3");
  EXPECT_EQ(value_of["--dropout"], "0.25");
  EXPECT_EQ(value_of["--weight-decay"], "0.001");
  EXPECT_EQ(value_of["--hidden"], "16");
  EXPECT_EQ(value_of["--layers"], "1");
  EXPECT_EQ(value_of["--loss"], "both");
  EXPECT_EQ(value_of["--ensemble"], "3");
  EXPECT_FALSE(value_of.contains("--db"));
  // The replay also draws its training curve (--svg): one point per epoch of the total loss.
  const std::string svg_path = (dir_ / "curve.svg").string();
  Result replay = Cli(absl::StrCat("train-cost-model --db ", Db(), " --no-eval --svg ", svg_path,
                                   " ", absl::StrJoin(flags, " ")));
  ASSERT_EQ(replay.exit_code, 0) << replay.err;
  EXPECT_NE(replay.out.find("training curve written to " + svg_path), std::string::npos);
  const std::string svg = testing::ReadFile(svg_path);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find(">total</text>"), std::string::npos);
  const size_t points = svg.find("points=\"");
  ASSERT_NE(points, std::string::npos);
  const std::string first_line = svg.substr(points, svg.find('"', points + 8) - points);
  EXPECT_EQ(std::count(first_line.begin(), first_line.end(), ','), 3) << first_line;  // 3 epochs
  std::optional<storage::ModelRecord> replayed = Latest("cost-model/tile-cpu");
  ASSERT_TRUE(replayed.has_value());
  EXPECT_EQ(replayed->version, 6);
  EXPECT_EQ(nlohmann::json::parse(replayed->metadata_json)["recipe"], recipe);
  absl::StatusOr<std::unique_ptr<costmodels::learned::LearnedModel>> replayed_model =
      costmodels::learned::LearnedModel::Load(replayed->data);
  ASSERT_TRUE(replayed_model.ok()) << replayed_model.status();
  EXPECT_EQ((*replayed_model)->options().node_features, 20);
  EXPECT_EQ((*replayed_model)->options().hidden_dim, 16);
  EXPECT_EQ((*replayed_model)->options().sage_layers, 1);
  Result both = Cli(train + " --no-eval --no-store");
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_NE(both.err.find("--no-eval trains and stores only"), std::string::npos) << both.err;
}

TEST_F(TrainCostModelTest, FusionReportsRuntimeMapeNextToTheRoofline) {
  for (const char* target : {"cpu", "tpu-sim"}) {
    SCOPED_TRACE(target);
    Result collect = Cli(absl::StrCat("collect ", Graphs(), " --db ", Db(), " --target ", target,
                                      " --task fusion --per-module 4 --seed 3"));
    ASSERT_EQ(collect.exit_code, 0) << collect.err;
    Result r = Cli(absl::StrCat("train-cost-model --task fusion --target ", target, " --db ", Db(),
                                " --epochs 3 --hidden 16 --layers 1"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("MAPE (learned) | APE median (learned) | MAPE (learned, relative-error "
                         "point) | APE median (same) | MAPE (analytical)"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("| held-out programs |"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("| skipped"), std::string::npos) << r.out;
    // Both models' figures are percentages: no "-" for a missing baseline.
    EXPECT_EQ(r.out.find("| - |"), std::string::npos) << r.out;
    const std::string name =
        std::string("cost-model/fusion-") + (std::string(target) == "cpu" ? "cpu" : "tpu-v4-core");
    EXPECT_NE(r.out.find("stored " + name + " version 1"), std::string::npos) << r.out;
    std::optional<storage::ModelRecord> model = Latest(name);
    ASSERT_TRUE(model.has_value());
    EXPECT_NE(model->metadata_json.find("analytical_mape"), std::string::npos);
    EXPECT_NE(model->metadata_json.find("point_mape"), std::string::npos);
    // The stored model carries the held-out split's runtime spread fit.
    absl::StatusOr<std::unique_ptr<costmodels::learned::LearnedModel>> stored =
        costmodels::learned::LearnedModel::Load(model->data);
    ASSERT_TRUE(stored.ok()) << stored.status();
    const nlohmann::json meta = nlohmann::json::parse(model->metadata_json);
    int held_out = 0;
    for (const nlohmann::json& m : meta.at("metrics")) {
      if (m.at("split") != "held-out programs") continue;
      ++held_out;
      ASSERT_TRUE(m.contains("spread_floor")) << m;
      EXPECT_DOUBLE_EQ((*stored)->options().spread_floor, m.at("spread_floor").get<double>());
      EXPECT_DOUBLE_EQ((*stored)->options().spread_scale, m.at("spread_scale").get<double>());
      EXPECT_GE(m.at("point_mape").get<double>(), 0.0);
    }
    EXPECT_EQ(held_out, 1) << model->metadata_json;
    EXPECT_NE(model->metadata_json.find("mse-log"), std::string::npos);
    EXPECT_NE(model->metadata_json.find("\"absolute_head\":\"pooled\""), std::string::npos)
        << model->metadata_json;
  }
  // `run --model-db` prints what the stored fusion model predicts for the module's default
  // fusion, next to the measured time (and in the JSON); a store without one is an error before
  // anything is compiled.
  const std::string first = absl::StrCat(Graphs(), "/first.hlo");
  Result run = Cli(absl::StrCat("run ", first, " --repeat 3 --json --model-db ", Db()));
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("cost model: cost-model/fusion-cpu v1 predicts "), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("the measured median)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("\"predicted_s\""), std::string::npos) << run.out;
  // --kernel-times lists each kernel's time inside the module's run, with the key its rows in the
  // store have (the default fusion's kernels are among those collect measured) and the model's
  // prediction for it, which add up to the plan's.
  Result profiled =
      Cli(absl::StrCat("run ", first, " --repeat 3 --json --kernel-times --model-db ", Db()));
  ASSERT_EQ(profiled.exit_code, 0) << profiled.err;
  EXPECT_NE(profiled.out.find("kernel times inside the module's run"), std::string::npos)
      << profiled.out;
  const nlohmann::json profile =
      nlohmann::json::parse(profiled.out.substr(profiled.out.find("\n{") + 1));
  const nlohmann::json& timed = profile.at("default kernels").at("kernels");
  ASSERT_EQ(timed.size(), profile.at("kernels").get<size_t>()) << profile;
  {
    absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(Db());
    ASSERT_TRUE(store.ok()) << store.status();
    double predicted = 0;
    for (const nlohmann::json& k : timed) {
      EXPECT_GE(k.at("seconds").get<double>(), 0.0) << k;
      // Dots and convolutions carry their flops (for the GFLOP/s column); nothing else does.
      const std::string kind = k.at("kind").get<std::string>();
      if (kind == "dot" || kind == "convolution") {
        EXPECT_GT(k.at("matrix_flops").get<double>(), 0.0) << k;
      } else {
        EXPECT_EQ(k.at("matrix_flops").get<double>(), 0.0) << k;
      }
      EXPECT_GT(k.at("predicted_s").get<double>(), 0.0) << k;
      predicted += k.at("predicted_s").get<double>();
      absl::StatusOr<std::optional<storage::KernelGraphRecord>> g =
          (*store)->GetKernelGraph(k.at("key").get<std::string>());
      ASSERT_TRUE(g.ok() && g->has_value()) << k;
      EXPECT_EQ((*g)->module, "first");
    }
    const double plan = profile.at("cost_model").at("predicted_s").get<double>();
    EXPECT_NEAR(predicted, plan, 1e-6 * plan);
  }
  Result no_model = Cli(absl::StrCat("run ", first, " --model-db ", (dir_ / "none.db").string()));
  EXPECT_EQ(no_model.exit_code, 1);
  EXPECT_NE(no_model.err.find("no such store file"), std::string::npos) << no_model.err;
  EXPECT_EQ(no_model.out.find("latency"), std::string::npos) << no_model.out;
  // The absolute head's and the readout's options reach the stored model and its metadata.
  Result node_sum =
      Cli(absl::StrCat("train-cost-model --task fusion --db ", Db(),
                       " --epochs 2 --hidden 16 --layers 1 --no-eval --absolute-head "
                       "node-sum --mape-weight 0.3 --transformer-layers 1 --real-weight 3"));
  ASSERT_EQ(node_sum.exit_code, 0) << node_sum.err;
  std::optional<storage::ModelRecord> node_sum_model = Latest("cost-model/fusion-cpu");
  ASSERT_TRUE(node_sum_model.has_value());
  EXPECT_EQ(node_sum_model->version, 2);
  EXPECT_NE(node_sum_model->metadata_json.find("\"absolute_head\":\"node-sum\""), std::string::npos)
      << node_sum_model->metadata_json;
  EXPECT_NE(node_sum_model->metadata_json.find("\"mape_weight\":0.3"), std::string::npos)
      << node_sum_model->metadata_json;
  absl::StatusOr<std::unique_ptr<costmodels::learned::LearnedModel>> loaded =
      costmodels::learned::LearnedModel::Load(node_sum_model->data);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_TRUE((*loaded)->options().node_time_sum);
  EXPECT_DOUBLE_EQ((*loaded)->options().relative_error_weight, 0.3);
  EXPECT_EQ((*loaded)->options().transformer_layers, 1);
  EXPECT_NE(node_sum_model->metadata_json.find("\"transformer_layers\":1"), std::string::npos)
      << node_sum_model->metadata_json;
  EXPECT_NE(node_sum_model->metadata_json.find("\"real_weight\":3"), std::string::npos)
      << node_sum_model->metadata_json;
  // --min-seconds leaves out kernels timer noise dominates; none of these take a minute.
  Result slow = Cli(absl::StrCat("train-cost-model --task fusion --db ", Db(),
                                 " --epochs 1 --no-store --min-seconds 60"));
  EXPECT_EQ(slow.exit_code, 1);
  EXPECT_NE(slow.err.find("ran faster than --min-seconds 60"), std::string::npos) << slow.err;
  Result bad = Cli(absl::StrCat("train-cost-model --task fusion --db ", Db(), " --min-seconds=-1"));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("--min-seconds must be >= 0"), std::string::npos) << bad.err;
}

TEST_F(TrainCostModelTest, TpuSimTilesCompareWithTheAnalyticalModel) {
  Result collect = Cli(absl::StrCat("collect ", Graphs(), " --db ", Db(),
                                    " --target tpu-sim --task tile --per-kernel 6 --seed 3"));
  ASSERT_EQ(collect.exit_code, 0) << collect.err;
  Result r = Cli(absl::StrCat("train-cost-model --task tile --target tpu-sim --db ", Db(),
                              " --epochs 3 --hidden 16 --layers 1"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("APE mean (analytical)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the analytical tile roofline"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("stored cost-model/tile-tpu-v4-core version 1"), std::string::npos) << r.out;
  std::optional<storage::ModelRecord> model = Latest("cost-model/tile-tpu-v4-core");
  ASSERT_TRUE(model.has_value());
  EXPECT_NE(model->metadata_json.find("analytical_ape_mean"), std::string::npos);
}

// Synthetic programs (mltune synthesize) add training data only: every test kernel comes from the
// real programs, and --predictions lists exactly those, once per split.
TEST_F(TrainCostModelTest, SyntheticProgramsAlwaysTrainAndPredictionsListTheRealTestKernels) {
  const std::string synthetic = (dir_ / "graphs" / "synthetic").string();
  Result made = Cli(absl::StrCat("synthesize --out ", synthetic,
                                 " --count 2 --seed 5 --max-elements 2048 --max-flops 200000"));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_NE(made.out.find("wrote 2 synthetic program(s)"), std::string::npos) << made.out;
  ASSERT_TRUE(std::filesystem::exists(dir_ / "graphs" / "synthetic" / "synthetic_6.hlo"));
  Result bad = Cli(absl::StrCat("synthesize --out ", synthetic, " --blocks dense,matmul"));
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("unknown block 'matmul'"), std::string::npos) << bad.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "graphs" / "synthetic" / "synthetic_0.hlo"));
  // --help lists the blocks by hand: every one the generator knows.
  Result help = Cli("synthesize --help");
  for (const std::string& block : costmodels::synthetic::SyntheticBlockNames()) {
    EXPECT_NE(help.out.find(block), std::string::npos) << block << " missing from --help";
  }
  Result collect = Cli(
      absl::StrCat("collect ", Graphs(), " --db ", Db(), " --task fusion --per-module 2 --seed 3"));
  ASSERT_EQ(collect.exit_code, 0) << collect.err;
  const std::string csv = (dir_ / "predictions.csv").string();
  Result r = Cli(absl::StrCat("train-cost-model --task fusion --db ", Db(),
                              " --epochs 2 --hidden 16 --layers 1 --no-store --predictions ", csv));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("come from 2 synthetic programs"), std::string::npos) << r.out;
  std::ifstream in(csv);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  EXPECT_EQ(line,
            "split,kernel,program,configuration,measured_s,learned_s,relative_score,analytical_s,"
            "default,learned_log_sd,learned_point_s");
  // Every row has the header's fields (the configuration is one quoted field).
  auto fields = [](const std::string& row) {
    int n = 1;
    bool quoted = false;
    for (char c : row) {
      if (c == '"') quoted = !quoted;
      if (c == ',' && !quoted) ++n;
    }
    return n;
  };
  const int header_fields = fields(line);
  std::map<std::string, int> per_split;
  std::set<std::string> kernels;
  while (std::getline(in, line)) {
    EXPECT_EQ(fields(line), header_fields) << line;
    const std::string split = line.substr(0, line.find(','));
    ++per_split[split];
    kernels.insert(line.substr(split.size() + 1, 64));
  }
  // The real programs' kernels: first's three (default fusion: elementwise + transpose, reduce;
  // more under another plan) and second's dot, each tested once per split.
  ASSERT_EQ(per_split.size(), 2u);
  EXPECT_EQ(per_split["random kernels"], per_split["held-out programs"]);
  EXPECT_EQ(static_cast<size_t>(per_split["random kernels"]), kernels.size());
  absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(Db());
  ASSERT_TRUE(store.ok()) << store.status();
  for (const std::string& key : kernels) {
    absl::StatusOr<std::optional<storage::KernelGraphRecord>> g = (*store)->GetKernelGraph(key);
    ASSERT_TRUE(g.ok() && g->has_value()) << key;
    EXPECT_TRUE((*g)->module == "first" || (*g)->module == "second") << (*g)->module;
  }
  // The table counts the same kernels.
  EXPECT_NE(r.out.find(absl::StrCat("| ", kernels.size(), " |")), std::string::npos) << r.out;
}

// Kernels the daemon's fusion searches timed only inside their modules (fusion-kernel-in-module)
// train next to collect's kernels timed alone, one row per kernel whatever its number of
// measurements, and are never tested; a kernel timed alone keeps that label.
TEST_F(TrainCostModelTest, KernelsTimedOnlyInsideTheirModulesTrainButAreNotTested) {
  Result collect = Cli(
      absl::StrCat("collect ", Graphs(), " --db ", Db(), " --task fusion --per-module 2 --seed 3"));
  ASSERT_EQ(collect.exit_code, 0) << collect.err;
  auto sql = [&](const std::string& statement) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(Db().c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db, statement.c_str(), nullptr, nullptr, &error), SQLITE_OK)
        << (error != nullptr ? error : "");
    sqlite3_free(error);
    sqlite3_close(db);
  };
  auto count = [&](const std::string& query) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(Db().c_str(), &db), SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, query.c_str(), -1, &stmt, nullptr), SQLITE_OK);
    int64_t n = -1;
    if (sqlite3_step(stmt) == SQLITE_ROW) n = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return n;
  };
  // second's kernels timed alone, in a store of their own: a test store.
  const std::string test_db = (dir_ / "test.db").string();
  Result alone_collect = Cli(absl::StrCat("collect ", Graph("second.hlo"), " --db ", test_db,
                                          " --task fusion --per-module 2 --seed 3"));
  ASSERT_EQ(alone_collect.exit_code, 0) << alone_collect.err;
  const std::string second_keys = "(SELECT kernel_key FROM kernel_graphs WHERE module = 'second')";
  const int64_t kernels = count("SELECT COUNT(DISTINCT graph_key) FROM measurements");
  const int64_t second = count("SELECT COUNT(*) FROM kernel_graphs WHERE module = 'second'");
  ASSERT_GE(second, 1);
  // second's kernels become known only from inside module runs, each timed twice; one of first's
  // kernels is also timed inside a module, which its time alone overrides.
  sql("UPDATE measurements SET task = 'fusion-kernel-in-module' WHERE graph_key IN " + second_keys);
  sql("INSERT INTO measurements (graph_key, task, target, configuration, value, worker, time_ms) "
      "SELECT graph_key, task, target, configuration, 4 * value, worker, time_ms FROM "
      "measurements WHERE task = 'fusion-kernel-in-module'");
  sql("INSERT INTO measurements (graph_key, task, target, configuration, value, worker, time_ms) "
      "SELECT graph_key, 'fusion-kernel-in-module', target, configuration, value, worker, time_ms "
      "FROM measurements WHERE task = 'fusion-kernel' LIMIT 1");
  const std::string csv = (dir_ / "predictions.csv").string();
  const std::string train = absl::StrCat("train-cost-model --task fusion --db ", Db(),
                                         " --epochs 2 --hidden 16 --layers 1 --no-store "
                                         "--splits random --predictions ",
                                         csv);
  Result r = Cli(train + " --in-module-min-seconds 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const int64_t alone = kernels - second;
  const int64_t rows = count("SELECT COUNT(*) FROM measurements WHERE task = 'fusion-kernel'");
  EXPECT_NE(r.out.find(absl::StrCat(rows + second, " measurements of ", kernels, " kernels")),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find(absl::StrCat(second,
                                    " of the kernels were timed only inside the daemon's "
                                    "fusion runs (fusion-kernel-in-module)")),
            std::string::npos)
      << r.out;
  // The test rows: first's kernels, each once.
  std::ifstream in(csv);
  std::string line;
  ASSERT_TRUE(std::getline(in, line));
  std::set<std::string> tested;
  while (std::getline(in, line)) tested.insert(line.substr(line.find(',') + 1, 64));
  EXPECT_EQ(static_cast<int64_t>(tested.size()), alone);
  absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(Db());
  ASSERT_TRUE(store.ok()) << store.status();
  for (const std::string& key : tested) {
    absl::StatusOr<std::optional<storage::KernelGraphRecord>> g = (*store)->GetKernelGraph(key);
    ASSERT_TRUE(g.ok() && g->has_value()) << key;
    EXPECT_EQ((*g)->module, "first");
  }
  // --test-db tests the model trained on all of the store on another store's kernels timed alone;
  // second's kernels trained it, timed inside their module.
  Result tested_on = Cli(train + " --in-module-min-seconds 0 --test-db " + test_db);
  ASSERT_EQ(tested_on.exit_code, 0) << tested_on.err;
  EXPECT_NE(tested_on.out.find("Tested on " + test_db), std::string::npos) << tested_on.out;
  EXPECT_NE(tested_on.out.find(absl::StrCat("| all (timed alone) | ", second, " | 1 | ")),
            std::string::npos)
      << tested_on.out;
  EXPECT_NE(tested_on.out.find("| not in the training store | 0 | 0 | 0 |"), std::string::npos)
      << tested_on.out;
  {
    std::ifstream rows(csv);
    int64_t test_store_rows = 0;
    while (std::getline(rows, line)) test_store_rows += line.starts_with("test store,") ? 1 : 0;
    EXPECT_EQ(test_store_rows, second);
  }
  Result untrained = Cli(train + " --no-in-module --test-db " + test_db);
  ASSERT_EQ(untrained.exit_code, 0) << untrained.err;
  EXPECT_NE(untrained.out.find(absl::StrCat("| not in the training store | ", second, " | 1 | ")),
            std::string::npos)
      << untrained.out;
  Result no_test_store = Cli(train + " --test-db " + (dir_ / "none.db").string());
  EXPECT_EQ(no_test_store.exit_code, 1);
  EXPECT_NE(no_test_store.err.find("--test-db"), std::string::npos) << no_test_store.err;
  // Under the floor, or switched off, they do not train.
  Result floor = Cli(train + " --in-module-min-seconds 60");
  ASSERT_EQ(floor.exit_code, 0) << floor.err;
  EXPECT_NE(floor.out.find(absl::StrCat(rows, " measurements of ", alone, " kernels")),
            std::string::npos)
      << floor.out;
  EXPECT_NE(floor.out.find(absl::StrCat("0 of the kernels were timed only inside the daemon's "
                                        "fusion runs (fusion-kernel-in-module): they train, tests "
                                        "are of kernels timed alone; ",
                                        second, " more under --in-module-min-seconds 60 left out")),
            std::string::npos)
      << floor.out;
  Result off = Cli(train + " --no-in-module");
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_NE(off.out.find(absl::StrCat(rows, " measurements of ", alone, " kernels")),
            std::string::npos)
      << off.out;
  EXPECT_EQ(off.out.find("fusion-kernel-in-module"), std::string::npos) << off.out;
  Result bad = Cli(train + " --in-module-min-seconds=-1");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("--in-module-min-seconds must be >= 0"), std::string::npos) << bad.err;
}

// --test-db on the tile task: the model trained on one program's kernels picks the configurations
// of another's, scored as the cross-validations score them (APE of the first-ranked, top 5, per
// program), next to the default configuration and the analytical model.
TEST_F(TrainCostModelTest, ATestStoreScoresTilePicksOfKernelsNeverTrainedOn) {
  Result train_collect = Cli(absl::StrCat("collect ", Graph("first.hlo"), " --db ", Db(),
                                          " --per-kernel 3 --rounds 1 --seed 3"));
  ASSERT_EQ(train_collect.exit_code, 0) << train_collect.err;
  const std::string test_db = (dir_ / "test.db").string();
  Result test_collect = Cli(absl::StrCat("collect ", Graph("second.hlo"), " --db ", test_db,
                                         " --per-kernel 3 --rounds 1 --seed 3"));
  ASSERT_EQ(test_collect.exit_code, 0) << test_collect.err;
  Result r = Cli(absl::StrCat("train-cost-model --db ", Db(), " --test-db ", test_db,
                              " --no-eval --no-store --epochs 2 --hidden 16 --layers 1"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("| test kernels | kernels | programs | APE mean (learned) | top-5 APE mean "
                       "(learned) | program APE mean (learned) | APE mean (default config) | APE "
                       "mean (analytical) |"),
            std::string::npos)
      << r.out;
  // second's one kernel, in both rows: the training store never saw it.
  EXPECT_NE(r.out.find("| all (timed alone) | 1 | 1 | "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| not in the training store | 1 | 1 | "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("stored cost-model"), std::string::npos) << r.out;
}

// A store from before a feature change: its graphs are named unreadable and left out, and a
// collect over the same files replaces them without measuring, after which training works.
TEST_F(TrainCostModelTest, GraphsOfAnOlderFeatureSetAreLeftOutUntilCollectRefreshesThem) {
  const std::string collect =
      absl::StrCat("collect ", Graphs(), " --db ", Db(), " --per-kernel 2 --rounds 1 --seed 3");
  Result first = Cli(collect);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(Db().c_str(), &db), SQLITE_OK);
    // "MKG1" and nothing else: what this build cannot read, as a graph of other widths.
    EXPECT_EQ(
        sqlite3_exec(db, "UPDATE kernel_graphs SET graph = x'4d4b4731'", nullptr, nullptr, nullptr),
        SQLITE_OK);
    sqlite3_close(db);
  }
  const std::string train =
      absl::StrCat("train-cost-model --db ", Db(), " --no-eval --epochs 1 --ensemble 1");
  Result stale = Cli(train);
  EXPECT_EQ(stale.exit_code, 1);
  EXPECT_NE(stale.err.find("3 kernel(s) with a stored graph this build cannot read left out"),
            std::string::npos)
      << stale.err;
  EXPECT_NE(stale.err.find("mltune collect over the same files"), std::string::npos) << stale.err;
  EXPECT_NE(stale.err.find("holds no tile-kernel measurements"), std::string::npos) << stale.err;
  Result refresh = Cli(collect);
  ASSERT_EQ(refresh.exit_code, 0) << refresh.err;
  EXPECT_NE(refresh.out.find("collected 0 measurement(s)"), std::string::npos) << refresh.out;
  EXPECT_NE(refresh.out.find("3 new or refreshed kernel graph(s)"), std::string::npos)
      << refresh.out;
  Result trained = Cli(train);
  EXPECT_EQ(trained.exit_code, 0) << trained.err;
  EXPECT_EQ(trained.err.find("cannot read"), std::string::npos) << trained.err;
}

// --gate (what mltuned's retraining passes): a retrained model is stored only when it does about
// as well as the newest stored version on kernels logged since that version, held out of its
// training. tpu-sim's simulated times make both models' errors repeatable.
TEST_F(TrainCostModelTest, TheGateStoresARetrainedModelOnlyWhenItHoldsUpOnNewKernels) {
  for (const char* task : {"tile", "fusion"}) {
    SCOPED_TRACE(task);
    const std::string name = absl::StrCat("cost-model/", task, "-tpu-v4-core");
    const std::string collect = absl::StrCat("collect --db ", Db(), " --target tpu-sim --task ",
                                             task, " --per-kernel 6 --per-module 4 --seed 3 ");
    const std::string train =
        absl::StrCat("train-cost-model --db ", Db(), " --target tpu-sim --task ", task,
                     " --no-eval --epochs 3 --hidden 16 --layers 1 --ensemble 1 --gate");
    Result first = Cli(collect + Graph("first.hlo"));
    ASSERT_EQ(first.exit_code, 0) << first.err;
    // No stored version: nothing to compare with.
    Result v1 = Cli(train);
    ASSERT_EQ(v1.exit_code, 0) << v1.err;
    EXPECT_NE(v1.out.find("gate: skipped, no stored " + name + " to compare with"),
              std::string::npos)
        << v1.out;
    EXPECT_NE(v1.out.find("stored " + name + " version 1"), std::string::npos) << v1.out;
    // Nothing logged since version 1: nothing to hold out.
    Result v2 = Cli(train);
    ASSERT_EQ(v2.exit_code, 0) << v2.err;
    EXPECT_NE(v2.out.find("gate: skipped, no kernel of a real program logged since version 1"),
              std::string::npos)
        << v2.out;
    std::optional<storage::ModelRecord> stored = Latest(name);
    ASSERT_TRUE(stored.has_value());
    ASSERT_EQ(stored->version, 2);
    EXPECT_TRUE(nlohmann::json::parse(stored->metadata_json)["gate"].contains("skipped"))
        << stored->metadata_json;

    // second's dot is new since version 2: held out, the candidate trains on first's kernels
    // alone, as version 2 did, and so predicts as version 2 does.
    Result second = Cli(collect + Graph("second.hlo"));
    ASSERT_EQ(second.exit_code, 0) << second.err;
    // By default one held-out kernel is too few to judge by: the gate stands aside.
    Result few = Cli(train + " --no-store");
    ASSERT_EQ(few.exit_code, 0) << few.err;
    EXPECT_NE(few.out.find("gate: skipped, 1 of the 1 held-out kernels can be scored"),
              std::string::npos)
        << few.out;
    EXPECT_NE(few.out.find("fewer than --gate-min-kernels 5"), std::string::npos) << few.out;
    if (std::string(task) == "fusion") {
      // Demanding a 99% improvement over an equal model rejects it: exit 3, nothing stored.
      // (Tile APE can be 0 for both on one held-out kernel, which no margin rejects.)
      Result rejected = Cli(train + " --gate-margin -0.99 --gate-min-kernels 1");
      EXPECT_EQ(rejected.exit_code, opt::guided::kGateRejectedExitCode) << rejected.err;
      EXPECT_NE(rejected.out.find("logged since version 2 held out"), std::string::npos)
          << rejected.out;
      EXPECT_NE(rejected.out.find("rejected (at most "), std::string::npos) << rejected.out;
      EXPECT_NE(rejected.out.find("allowed: --gate-margin -0.99, plus 1.0%)"), std::string::npos)
          << rejected.out;
      EXPECT_NE(rejected.out.find(name + " not stored"), std::string::npos) << rejected.out;
      EXPECT_EQ(Latest(name)->version, 2);
    }
    // The default margin lets an equal model through; the metadata says what was compared.
    Result passed = Cli(train + " --gate-min-kernels 1");
    ASSERT_EQ(passed.exit_code, 0) << passed.err;
    EXPECT_NE(passed.out.find(": passed"), std::string::npos) << passed.out;
    stored = Latest(name);
    ASSERT_TRUE(stored.has_value());
    EXPECT_EQ(stored->version, 3);
    const nlohmann::json gate = nlohmann::json::parse(stored->metadata_json)["gate"];
    EXPECT_EQ(gate.value("incumbent_version", 0), 2) << gate;
    EXPECT_EQ(gate.value("holdout_programs", 0), 1) << gate;
    EXPECT_GE(gate.value("holdout_kernels", 0), 1) << gate;
    EXPECT_TRUE(gate.value("passed", false)) << gate;
    EXPECT_EQ(gate.value("metric", ""),
              std::string(task) == "tile" ? "tile pairs misordered" : "fusion time-weighted APE");
    EXPECT_EQ(gate.value("scored_kernels", 0), 1) << gate;
    EXPECT_NEAR(gate.value("candidate", -1.0), gate.value("incumbent", -2.0), 1e-9) << gate;
  }
}

TEST_F(TrainCostModelTest, ClearErrors) {
  // A store that does not exist is named, not created empty.
  Result missing = Cli(absl::StrCat("train-cost-model --db ", Db()));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no such store file"), std::string::npos) << missing.err;
  EXPECT_FALSE(std::filesystem::exists(Db()));
  ASSERT_TRUE(storage::Store::Open(Db()).ok());
  // Each: the options after `train-cost-model --db DB`, and what the error must say.
  const std::pair<std::string, std::string> cases[] = {
      {"", "holds no tile-kernel measurements"},
      {"--task fusion --target tpu-sim",
       "holds no fusion-kernel measurements for target tpu-v4-core"},
      {"--task placement", "--task placement"},
      {"--task fusion --loss both", "use mse-log"},
      {"--holdout 1.5", "--holdout"},
      {"--gate --gate-share 0", "--gate-share must be in (0, 1]"},
      {"--gate --gate-margin -1", "--gate-margin must be a finite number > -1"},
      {"--gate --gate-min-kernels 0", "--gate-min-kernels must be >= 1"},
      {"--pair-weights squared", "--pair-weights squared: gap or none"},
      {"--readout sum", "--readout sum"},
      {"--absolute-skip mlp", "--absolute-skip mlp: linear or none"},
      {"--absolute-head mlp", "--absolute-head mlp: pooled or node-sum"},
      {"--mape-weight=-1", "--mape-weight"},
      {"--transformer-layers 5", "--transformer-layers"},
      {"--hidden 30 --transformer-layers 1", "--hidden 30: with --transformer-layers it must be"},
      {"--ensemble 0", "--ensemble"},
      {"--real-weight 0", "--real-weight"},
      {"--min-pair-ratio 0.5", "--min-pair-ratio"},
      {"--listwise-temperature=-1", "--listwise-temperature"},
      {"--loss rank-hinge --listwise-temperature 0.1",
       "--listwise-temperature replaces a logistic rank term; --loss rank-hinge has none"},
      {"--task fusion --listwise-temperature 0.1", "--listwise-temperature"},
      {absl::StrCat("--predictions ", Db(), "/missing/p.csv"), "cannot write --predictions"},
      {"--loss nope", "--loss"},
      {"--splits kernels", "--splits kernels: both, random or programs"},
      {"--kernel-weights time", "--kernel-weights time: equal or program-share"},
      {"--node-features 1000", "--node-features"},
      {"--kernel-features=-1", "--kernel-features"},
  };
  for (const auto& [options, message] : cases) {
    SCOPED_TRACE(options);
    Result r = Cli(absl::StrCat("train-cost-model --db ", Db(), " ", options));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace mltune
