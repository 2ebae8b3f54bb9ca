// `mltune train-cost-model` end to end on a store filled by `mltune collect`: both splits are
// evaluated, each run stores the next checkpoint version (loadable by the learned model), and a
// store without measurements, an unknown task or a bad holdout are clear errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "costmodels/learned/learned_model.h"
#include "storage/store.h"
#include "tests/support/run_command.h"

namespace mltune {
namespace {

namespace fs = std::filesystem;
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

class TrainCostModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           absl::StrCat("mltune_train_cost_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name(), "_",
                        getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "graphs");
    std::ofstream(dir_ / "graphs" / "first.hlo") << kFirst;
    std::ofstream(dir_ / "graphs" / "second.hlo") << kSecond;
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Db() const { return (dir_ / "store.db").string(); }
  Result Cli(const std::string& args) {
    return testing::RunCommand(absl::StrCat("MLTUNE_KERNEL_CACHE=", MLTUNE_TEST_KERNEL_CACHE, " ",
                                            MLTUNE_CLI_PATH, " ", args));
  }

  fs::path dir_;
};

TEST_F(TrainCostModelTest, EvaluatesBothSplitsAndStoresVersions) {
  Result collect = Cli(absl::StrCat("collect ", (dir_ / "graphs").string(), " --db ", Db(),
                                    " --per-kernel 4 --seed 3"));
  ASSERT_EQ(collect.exit_code, 0) << collect.err;
  const std::string train =
      absl::StrCat("train-cost-model --db ", Db(), " --epochs 3 --hidden 16 --layers 1");
  Result first = Cli(train);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("measurements of 3 kernels from 2 programs"), std::string::npos)
      << first.out;
  EXPECT_NE(first.out.find("| random kernels | 2 | 1 |"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("| held-out programs |"), std::string::npos) << first.out;
  EXPECT_EQ(first.out.find("| skipped"), std::string::npos) << first.out;
  EXPECT_NE(first.out.find("stored cost-model/tile-cpu version 1"), std::string::npos) << first.out;
  Result second = Cli(train);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.out.find("stored cost-model/tile-cpu version 2"), std::string::npos)
      << second.out;

  absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(Db());
  ASSERT_TRUE(store.ok()) << store.status();
  absl::StatusOr<std::optional<storage::ModelRecord>> latest =
      (*store)->LatestModel("cost-model/tile-cpu");
  ASSERT_TRUE(latest.ok() && latest->has_value());
  EXPECT_EQ((*latest)->version, 2);
  EXPECT_NE((*latest)->metadata_json.find("held-out programs"), std::string::npos);
  absl::StatusOr<std::unique_ptr<costmodels::learned::LearnedModel>> model =
      costmodels::learned::LearnedModel::Load((*latest)->data);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE((*model)->trained());

  // --no-store evaluates without storing.
  Result dry = Cli(train + " --no-store");
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_EQ(dry.out.find("stored"), std::string::npos) << dry.out;
  EXPECT_EQ((*(*store)->LatestModel("cost-model/tile-cpu"))->version, 2);
}

TEST_F(TrainCostModelTest, ClearErrors) {
  Result empty = Cli(absl::StrCat("train-cost-model --db ", Db()));
  EXPECT_EQ(empty.exit_code, 1);
  EXPECT_NE(empty.err.find("holds no tile-kernel measurements"), std::string::npos) << empty.err;
  Result fusion = Cli(absl::StrCat("train-cost-model --task fusion --db ", Db()));
  EXPECT_EQ(fusion.exit_code, 1);
  EXPECT_NE(fusion.err.find("only tile"), std::string::npos) << fusion.err;
  Result holdout = Cli(absl::StrCat("train-cost-model --holdout 1.5 --db ", Db()));
  EXPECT_EQ(holdout.exit_code, 1);
  EXPECT_NE(holdout.err.find("--holdout"), std::string::npos) << holdout.err;
  Result loss = Cli(absl::StrCat("train-cost-model --loss nope --db ", Db()));
  EXPECT_EQ(loss.exit_code, 1);
  EXPECT_NE(loss.err.find("--loss"), std::string::npos) << loss.err;
}

}  // namespace
}  // namespace mltune
