// `mltune collect` end to end: measurements and kernel graphs in a fresh store, resuming without
// measuring anything twice, growing a run, the time bound, skipped modules and the error paths.
// Compiled kernels are cached in the build tree (MLTUNE_TEST_KERNEL_CACHE), so reruns of the
// suite skip the compiler.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "costmodels/features/kernel_graph.h"
#include "storage/store.h"
#include "tests/support/run_command.h"

namespace mltune {
namespace {

namespace fs = std::filesystem;
using Result = testing::CommandResult;

// A loop kernel (exp, transpose) and a row reduction: two kernels, each with many
// configurations.
constexpr char kSmall[] = R"(HloModule small
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

// A custom call: the CPU backend does not lower it, so collect skips the module.
constexpr char kUnsupported[] = R"(HloModule unsupported
ENTRY e {
  x = f32[8] parameter(0)
  ROOT c = f32[8] custom-call(x), custom_call_target="my_op"
})";

class CollectTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           absl::StrCat("mltune_collect_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name(), "_",
                        getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "graphs");
    std::ofstream(dir_ / "graphs" / "small.hlo") << kSmall;
    std::ofstream(dir_ / "graphs" / "unsupported.hlo") << kUnsupported;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Db() const { return (dir_ / "store.db").string(); }

  Result Collect(const std::string& args) {
    return testing::RunCommand(absl::StrCat("MLTUNE_KERNEL_CACHE=", MLTUNE_TEST_KERNEL_CACHE, " ",
                                            MLTUNE_CLI_PATH, " collect ", args));
  }

  // Measurement rows of the log: configurations per kernel key.
  std::map<std::string, std::multiset<std::string>> Rows() {
    absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(Db());
    EXPECT_TRUE(store.ok()) << store.status();
    std::map<std::string, std::multiset<std::string>> rows;
    if (!store.ok()) return rows;
    storage::MeasurementFilter filter;
    filter.task = "tile-kernel";
    filter.target = "cpu";
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

  fs::path dir_;
};

TEST_F(CollectTest, MeasuresEachKernelAndResumesWithoutRepeats) {
  const std::string args =
      absl::StrCat((dir_ / "graphs").string(), " --target cpu --task tile --db ", Db(),
                   " --per-kernel 3 --seed 7");
  Result first = Collect(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.err.find("skip unsupported.hlo"), std::string::npos) << first.err;
  EXPECT_NE(first.err.find("collect: kernels"), std::string::npos) << first.err;
  std::map<std::string, std::multiset<std::string>> rows = Rows();
  ASSERT_EQ(rows.size(), 2u);  // two kernels, each under its own key
  {
    absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(Db());
    ASSERT_TRUE(store.ok());
    EXPECT_EQ((*store)->CountKernelGraphs().value(), 2);
    for (const auto& [key, configs] : rows) {
      EXPECT_EQ(configs.size(), 3u) << key;
      EXPECT_EQ(std::set<std::string>(configs.begin(), configs.end()).size(), 3u) << key;
      absl::StatusOr<std::optional<storage::KernelGraphRecord>> g = (*store)->GetKernelGraph(key);
      ASSERT_TRUE(g.ok() && g->has_value()) << key;
      EXPECT_EQ((*g)->module, "small");
      absl::StatusOr<costmodels::features::KernelGraph> graph =
          costmodels::features::ParseKernelGraph((*g)->graph);
      ASSERT_TRUE(graph.ok()) << graph.status();
      EXPECT_GT(graph->size(), 0);
      // Every logged configuration fits the graph's configuration slots.
      for (const std::string& text : configs) {
        absl::StatusOr<costmodels::features::Configuration> c =
            costmodels::features::ParseConfiguration(text);
        ASSERT_TRUE(c.ok()) << text;
        EXPECT_TRUE(costmodels::features::SetConfiguration(*c, &*graph).ok()) << text;
      }
    }
  }

  // The same run again measures nothing: every (kernel, configuration) pair is logged.
  Result again = Collect(args);
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("collected 0 measurement(s)"), std::string::npos) << again.out;
  EXPECT_EQ(Rows(), rows);

  // A larger run keeps what is there and adds one more configuration per kernel.
  Result more = Collect(absl::StrCat((dir_ / "graphs" / "small.hlo").string(), " --db ", Db(),
                                     " --per-kernel 4 --seed 7"));
  ASSERT_EQ(more.exit_code, 0) << more.err;
  std::map<std::string, std::multiset<std::string>> grown = Rows();
  ASSERT_EQ(grown.size(), 2u);
  for (const auto& [key, configs] : grown) {
    EXPECT_EQ(configs.size(), 4u) << key;
    for (const std::string& c : rows[key]) EXPECT_EQ(configs.count(c), 1u) << c;
  }
}

TEST_F(CollectTest, StopsAtTheTimeLimit) {
  Result r = Collect(absl::StrCat((dir_ / "graphs" / "small.hlo").string(), " --db ", Db(),
                                  " --seconds 0.000000001"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("stopped at the"), std::string::npos) << r.out;
  EXPECT_TRUE(Rows().empty());
}

TEST_F(CollectTest, ErrorsAreClear) {
  Result missing = Collect(absl::StrCat((dir_ / "nope.hlo").string(), " --db ", Db()));
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("no such file or folder"), std::string::npos) << missing.err;
  Result none =
      Collect(absl::StrCat((dir_ / "graphs" / "unsupported.hlo").string(), " --db ", Db()));
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("none of the 1 file(s)"), std::string::npos) << none.err;
  Result sim = Collect(absl::StrCat((dir_ / "graphs").string(), " --target tpu-sim --db ", Db()));
  EXPECT_EQ(sim.exit_code, 1);
  EXPECT_NE(sim.err.find("not implemented yet"), std::string::npos) << sim.err;
  Result task = Collect(absl::StrCat((dir_ / "graphs").string(), " --task fusion --db ", Db()));
  EXPECT_EQ(task.exit_code, 1);
  Result no_db = Collect((dir_ / "graphs").string());
  EXPECT_NE(no_db.exit_code, 0);
}

}  // namespace
}  // namespace mltune
