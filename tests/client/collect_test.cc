// `mltune collect` end to end: measurements and kernel graphs in a fresh store for each target
// (cpu, tpu-sim) and task (tile, fusion), resuming without measuring anything twice, growing a
// run, the time bound, skipped modules and the error paths.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "costmodels/features/kernel_graph.h"
#include "storage/store.h"
#include "tests/support/cli_store_fixture.h"

namespace mltune {
namespace {

using Result = testing::CommandResult;
namespace features = costmodels::features;

// A loop kernel (exp, transpose) and a row reduction: two kernels, each with several
// configurations (block 0/16/32 and simd on the loop, four lane counts on the reduction; both
// too small for `parallel`).
constexpr char kSmall[] = R"(HloModule small
add_f {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT r = f32[] add(p, q)
}
ENTRY e {
  x = f32[48,64] parameter(0)
  y = f32[48,64] exponential(x)
  t = f32[64,48] transpose(y), dimensions={1,0}
  z = f32[] constant(0)
  s = f32[48] reduce(x, z), dimensions={1}, to_apply=add_f
  ROOT o = (f32[64,48], f32[48]) tuple(t, s)
})";

// A matmul with an elementwise prologue and epilogue: fusion choices, and tiles in three dims.
constexpr char kDense[] = R"(HloModule dense
ENTRY e {
  a = f32[256,512] parameter(0)
  b = f32[512,384] parameter(1)
  c = f32[256,384] parameter(2)
  n = f32[256,512] negate(a)
  e = f32[256,512] exponential(n)
  d = f32[256,384] dot(e, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  s = f32[256,384] add(d, c)
  ROOT r = f32[256,384] tanh(s)
})";

// A custom call: the CPU backend does not lower it, so collect skips the module.
constexpr char kUnsupported[] = R"(HloModule unsupported
ENTRY e {
  x = f32[8] parameter(0)
  ROOT c = f32[8] custom-call(x), custom_call_target="my_op"
})";

class CollectTest : public testing::CliStoreTest {
 protected:
  CollectTest() : CliStoreTest({{"small.hlo", kSmall}, {"unsupported.hlo", kUnsupported}}) {}

  Result Collect(const std::string& args) { return Cli("collect " + args); }

  // Measurement rows of the log: configurations per kernel key.
  std::map<std::string, std::multiset<std::string>> Rows(const std::string& task = "tile-kernel",
                                                         const std::string& target = "cpu") {
    absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(Db());
    EXPECT_TRUE(store.ok()) << store.status();
    std::map<std::string, std::multiset<std::string>> rows;
    if (!store.ok()) return rows;
    storage::MeasurementFilter filter;
    filter.task = task;
    filter.target = target;
    absl::StatusOr<std::vector<storage::MeasurementRecord>> logged =
        (*store)->QueryMeasurements(filter);
    EXPECT_TRUE(logged.ok()) << logged.status();
    if (!logged.ok()) return rows;
    for (const storage::MeasurementRecord& m : *logged) {
      EXPECT_GT(m.value, 0);
      rows[m.graph_key].insert(m.configuration);
    }
    return rows;
  }

  // Every key has a stored graph that every logged configuration fits.
  void ExpectGraphsFit(const std::map<std::string, std::multiset<std::string>>& rows) {
    absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(Db());
    ASSERT_TRUE(store.ok());
    for (const auto& [key, configs] : rows) {
      absl::StatusOr<std::optional<storage::KernelGraphRecord>> g = (*store)->GetKernelGraph(key);
      ASSERT_TRUE(g.ok() && g->has_value()) << key;
      absl::StatusOr<features::KernelGraph> graph = features::ParseKernelGraph((*g)->graph);
      ASSERT_TRUE(graph.ok()) << graph.status();
      EXPECT_GT(graph->size(), 0);
      for (const std::string& text : configs) {
        absl::StatusOr<features::Configuration> c = features::ParseConfiguration(text);
        ASSERT_TRUE(c.ok()) << text;
        EXPECT_TRUE(features::SetConfiguration(*c, &*graph).ok()) << text;
      }
    }
  }
};

TEST_F(CollectTest, MeasuresEachKernelAndResumesWithoutRepeats) {
  const std::string args =
      absl::StrCat(Graphs(), " --target cpu --task tile --db ", Db(), " --per-kernel 3 --seed 7");
  Result first = Collect(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.err.find("skip unsupported.hlo"), std::string::npos) << first.err;
  EXPECT_NE(first.err.find("collect: kernels"), std::string::npos) << first.err;
  // cpu measures each configuration in rounds by default
  // (optimizers/cost_model_data/collect_plan.h).
  EXPECT_NE(first.out.find("(each the fastest of 3 rounds)"), std::string::npos) << first.out;
  std::map<std::string, std::multiset<std::string>> rows = Rows();
  ASSERT_EQ(rows.size(), 2u);  // two kernels, each under its own key
  for (const auto& [key, configs] : rows) {
    EXPECT_EQ(configs.size(), 3u) << key;
    EXPECT_EQ(std::set<std::string>(configs.begin(), configs.end()).size(), 3u) << key;
  }
  ExpectGraphsFit(rows);
  {
    absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(Db());
    ASSERT_TRUE(store.ok());
    EXPECT_EQ((*store)->CountKernelGraphs().value(), 2);
    EXPECT_EQ((*(*store)->GetKernelGraph(rows.begin()->first))->module, "small");
  }
  // The cpu does not log an analytical prediction per configuration.
  EXPECT_TRUE(Rows("tile-kernel-analytical").empty());

  // The same run again measures nothing: every (kernel, configuration) pair is logged.
  Result again = Collect(args);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("collected 0 measurement(s)"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("0 new or refreshed kernel graph(s)"), std::string::npos) << again.out;
  EXPECT_EQ(Rows(), rows);

  // A stored graph this build cannot read (as one of an older feature set after features were
  // added) is replaced by a rerun, still without measuring.
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(Db().c_str(), &db), SQLITE_OK);
    const std::string sql = absl::StrCat("UPDATE kernel_graphs SET graph = x'4d4b4731' ",
                                         "WHERE kernel_key = '", rows.begin()->first, "'");
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  Result refresh = Collect(args);
  ASSERT_EQ(refresh.exit_code, 0) << refresh.err;
  EXPECT_NE(refresh.out.find("collected 0 measurement(s)"), std::string::npos) << refresh.out;
  EXPECT_NE(refresh.out.find("1 new or refreshed kernel graph(s)"), std::string::npos)
      << refresh.out;
  EXPECT_EQ(Rows(), rows);
  ExpectGraphsFit(rows);

  // A larger run keeps what is there and adds one more configuration per kernel.
  Result more =
      Collect(absl::StrCat(Graph("small.hlo"), " --db ", Db(), " --per-kernel 4 --seed 7"));
  ASSERT_EQ(more.exit_code, 0) << more.err;
  std::map<std::string, std::multiset<std::string>> grown = Rows();
  ASSERT_EQ(grown.size(), 2u);
  for (const auto& [key, configs] : grown) {
    EXPECT_EQ(configs.size(), 4u) << key;
    for (const std::string& c : rows[key]) EXPECT_EQ(configs.count(c), 1u) << c;
  }
}

TEST_F(CollectTest, CpuFusionMeasuresEachKernelOfRandomPlansOnce) {
  std::ofstream(Graph("dense.hlo")) << kDense;
  const std::string args = absl::StrCat(Graph("dense.hlo"), " ", Graph("small.hlo"),
                                        " --target cpu --task fusion --db ", Db(), " --seed 1");
  Result first = Collect(args + " --per-module 4");
  ASSERT_EQ(first.exit_code, 0) << first.err;
  std::map<std::string, std::multiset<std::string>> rows = Rows("fusion-kernel");
  // Random plans split the default kernels: more kernels than the default fusion's (dense: 1,
  // small: 2), each measured once, under its default configuration.
  EXPECT_GT(rows.size(), 3u);
  for (const auto& [key, configs] : rows) EXPECT_EQ(configs.size(), 1u) << key;
  ExpectGraphsFit(rows);
  EXPECT_TRUE(Rows("tile-kernel").empty());

  // Fewer plans draw a subset of the same plans: every kernel is logged.
  Result again = Collect(args + " --per-module 2");
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("collected 0 measurement(s)"), std::string::npos) << again.out;
  EXPECT_EQ(Rows("fusion-kernel"), rows);
}

TEST_F(CollectTest, TpuSimTilesLogSimulatedTimesAndTheAnalyticalModel) {
  std::ofstream(Graph("dense.hlo")) << kDense;
  const std::string args =
      absl::StrCat(Graph("dense.hlo"), " ", Graph("small.hlo"),
                   " --target tpu-sim --task tile --db ", Db(), " --per-kernel 6 --seed 2");
  Result first = Collect(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_EQ(first.out.find("the fastest of"), std::string::npos) << first.out;  // simulated: once
  // Logged under the spec tpu-sim stands for, as the daemon logs its tpu-sim tasks.
  EXPECT_TRUE(Rows("tile-kernel", "tpu-sim").empty());
  std::map<std::string, std::multiset<std::string>> rows = Rows("tile-kernel", "tpu-v4-core");
  ASSERT_EQ(rows.size(), 3u);  // dense's fused matmul, small's two kernels
  size_t measured = 0;
  for (const auto& [key, configs] : rows) {
    EXPECT_GE(configs.size(), 2u) << key;
    EXPECT_LE(configs.size(), 6u) << key;
    EXPECT_EQ(std::set<std::string>(configs.begin(), configs.end()).size(), configs.size());
    for (const std::string& c : configs) EXPECT_NE(c.find("tile_m="), std::string::npos) << c;
    measured += configs.size();
  }
  ExpectGraphsFit(rows);
  // One analytical prediction per measurement, under the same key and configuration.
  EXPECT_EQ(Rows("tile-kernel-analytical", "tpu-v4-core"), rows);
  EXPECT_NE(first.out.find(absl::StrCat("collected ", measured, " measurement(s)")),
            std::string::npos)
      << first.out;

  // A spec name is the same target: nothing new to measure.
  Result again = Collect(absl::StrCat(Graphs(), " ", Graph("dense.hlo"),
                                      " --target tpu-v4-core --task tile --db ", Db(),
                                      " --per-kernel 6 --seed 2"));
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("collected 0 measurement(s)"), std::string::npos) << again.out;
  EXPECT_EQ(Rows("tile-kernel", "tpu-v4-core"), rows);
}

TEST_F(CollectTest, TpuSimFusionLogsKernelsOfRandomPlans) {
  std::ofstream(Graph("dense.hlo")) << kDense;
  const std::string args = absl::StrCat(Graph("dense.hlo"), " --target tpu-sim --task fusion --db ",
                                        Db(), " --per-module 6 --seed 4 --noise 0");
  Result first = Collect(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  std::map<std::string, std::multiset<std::string>> rows = Rows("fusion-kernel", "tpu-v4-core");
  EXPECT_GT(rows.size(), 1u);
  for (const auto& [key, configs] : rows) EXPECT_EQ(configs.size(), 1u) << key;
  ExpectGraphsFit(rows);
  EXPECT_EQ(Rows("fusion-kernel-analytical", "tpu-v4-core"), rows);

  Result again = Collect(args);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("collected 0 measurement(s)"), std::string::npos) << again.out;
}

// A custom call between two kernels: skipped whole, or cut (--cut-unsupported) so the kernels
// on either side are measured.
TEST_F(CollectTest, CpuCutUnsupportedMeasuresTheKernelsAroundAnOpWithoutLowering) {
  std::ofstream(Graph("between.hlo")) << R"(HloModule between
ENTRY e {
  x = f32[32,64] parameter(0)
  y = f32[32,64] exponential(x)
  c = f32[32,64] custom-call(y), custom_call_target="my_op"
  n = f32[32,64] negate(c)
  ROOT o = (f32[32,64], f32[32,64]) tuple(y, n)
})";
  const std::string args =
      absl::StrCat(Graph("between.hlo"), " --task fusion --per-module 1 --db ", Db());
  Result whole = Collect(args);
  EXPECT_EQ(whole.exit_code, 1);
  EXPECT_NE(whole.err.find("between.hlo: cpu backend: custom-call 'c'"), std::string::npos)
      << whole.err;
  Result cut = Collect(args + " --cut-unsupported");
  ASSERT_EQ(cut.exit_code, 0) << cut.err;
  EXPECT_NE(cut.err.find("between.hlo: 1 op(s) the cpu backend cannot run became parameters (c)"),
            std::string::npos)
      << cut.err;
  const std::map<std::string, std::multiset<std::string>> rows = Rows("fusion-kernel");
  EXPECT_EQ(rows.size(), 2u);  // the exponential and the negate
  ExpectGraphsFit(rows);
  Result tpu = Collect(absl::StrCat(Graphs(), " --target tpu-sim --cut-unsupported --db ", Db()));
  EXPECT_EQ(tpu.exit_code, 1);
  EXPECT_NE(tpu.err.find("--cut-unsupported is for --target cpu"), std::string::npos) << tpu.err;
}

TEST_F(CollectTest, StopsAtTheTimeLimit) {
  Result r = Collect(absl::StrCat(Graph("small.hlo"), " --db ", Db(), " --seconds 0.000000001"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("stopped at the"), std::string::npos) << r.out;
  EXPECT_TRUE(Rows().empty());
}

TEST_F(CollectTest, ErrorsAreClear) {
  Result missing = Collect(absl::StrCat((dir_ / "nope.hlo").string(), " --db ", Db()));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no such file or folder"), std::string::npos) << missing.err;
  Result none = Collect(absl::StrCat(Graph("unsupported.hlo"), " --db ", Db()));
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("none of the 1 file(s)"), std::string::npos) << none.err;
  Result target = Collect(absl::StrCat(Graphs(), " --target nope --db ", Db()));
  EXPECT_EQ(target.exit_code, 1);
  EXPECT_NE(target.err.find("--target nope: collect supports cpu, tpu-sim"), std::string::npos)
      << target.err;
  Result mcm = Collect(absl::StrCat(Graphs(), " --target mcm-sim --db ", Db()));
  EXPECT_EQ(mcm.exit_code, 1);
  EXPECT_NE(mcm.err.find("--target mcm-sim"), std::string::npos) << mcm.err;
  Result task = Collect(absl::StrCat(Graphs(), " --task placement --db ", Db()));
  EXPECT_EQ(task.exit_code, 1);
  EXPECT_NE(task.err.find("--task placement"), std::string::npos) << task.err;
  Result plans = Collect(absl::StrCat(Graphs(), " --task fusion --per-module -1 --db ", Db()));
  EXPECT_EQ(plans.exit_code, 1);
  EXPECT_NE(plans.err.find("--per-module must be at least 1"), std::string::npos) << plans.err;
  Result noise = Collect(absl::StrCat(Graphs(), " --target tpu-sim --noise=-0.5 --db ", Db()));
  EXPECT_EQ(noise.exit_code, 1);
  EXPECT_NE(noise.err.find("--noise must be in [0, 1]"), std::string::npos) << noise.err;
  Result rounds = Collect(absl::StrCat(Graphs(), " --rounds 101 --db ", Db()));
  EXPECT_EQ(rounds.exit_code, 1);
  EXPECT_NE(rounds.err.find("--rounds must be in [1, 100]"), std::string::npos) << rounds.err;
  Result simulated = Collect(absl::StrCat(Graphs(), " --target tpu-sim --rounds 2 --db ", Db()));
  EXPECT_EQ(simulated.exit_code, 1);
  EXPECT_NE(simulated.err.find("--rounds is for --target cpu"), std::string::npos) << simulated.err;
  Result no_db = Collect(Graphs());
  EXPECT_NE(no_db.exit_code, 0);
}

}  // namespace
}  // namespace mltune
