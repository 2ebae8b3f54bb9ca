// RunCollectPlan's measurement rounds with scripted trials: each trial is measured once per
// round, later rounds alternate direction, the log gets each trial's fastest time in one row, a
// failure in a later round keeps the earlier time, logged trials are not measured again, and a
// kernel cut short by the time limit logs the rounds it has.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "optimizers/cost_model_data/collect_plan.h"
#include "storage/store.h"

namespace mltune::opt::cost_model_data {
namespace {

class CollectRoundsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("mltune_collect_rounds_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name(), "_",
                        getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    cmd_.db = (dir_ / "store.db").string();
    absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(cmd_.db);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A one-kernel plan whose trial `i` answers script[i][r] seconds in its r-th call (a negative
  // time: that call fails), recording the order of calls in calls_.
  CollectPlan Plan(const std::vector<std::vector<double>>& script, int rounds) {
    CollectPlan plan;
    plan.target = "cpu";
    plan.log_task = "tile-kernel";
    plan.rounds = rounds;
    plan.modules = 1;
    KernelPlan k;
    k.graph.kernel_key = "k1";
    k.graph.graph = "graph";
    k.graph.target = "cpu";
    k.label = "kernel k1";
    for (size_t i = 0; i < script.size(); ++i) {
      Trial t;
      t.configuration = absl::StrCat("c=", i);
      t.measure = [this, i, times = script[i],
                   n = size_t{0}]() mutable -> absl::StatusOr<Measured> {
        calls_.push_back(static_cast<int>(i));
        const double s = times.at(n++);
        if (s < 0) return absl::InternalError("runner crashed");
        return Measured{s, std::nullopt};
      };
      k.trials.push_back(std::move(t));
    }
    plan.kernels.push_back(std::move(k));
    return plan;
  }

  int Run(CollectPlan& plan) {
    out_.str("");
    err_.str("");
    return RunCollectPlan(cmd_, plan, *store_, out_, err_).ok() ? 0 : 1;
  }

  // Logged seconds by configuration.
  std::map<std::string, double> Logged() {
    storage::MeasurementFilter filter;
    filter.task = "tile-kernel";
    absl::StatusOr<std::vector<storage::MeasurementRecord>> rows =
        store_->QueryMeasurements(filter);
    EXPECT_TRUE(rows.ok()) << rows.status();
    std::map<std::string, double> logged;
    if (!rows.ok()) return logged;
    for (const storage::MeasurementRecord& m : *rows) {
      EXPECT_TRUE(logged.emplace(m.configuration, m.value).second)
          << "two rows: " << m.configuration;
    }
    return logged;
  }

  std::filesystem::path dir_;
  CollectOptions cmd_;
  std::unique_ptr<storage::Store> store_;
  std::vector<int> calls_;
  std::ostringstream out_, err_;
};

TEST_F(CollectRoundsTest, LogsTheFastestOfEachTrialsRoundsInAlternatingOrder) {
  CollectPlan plan = Plan({{3, 1, 2}, {5, 6, 4}, {7, 7, 7}}, 3);
  ASSERT_EQ(Run(plan), 0) << err_.str();
  EXPECT_EQ(calls_, (std::vector<int>{0, 1, 2, 2, 1, 0, 0, 1, 2}));
  EXPECT_EQ(Logged(), (std::map<std::string, double>{{"c=0", 1}, {"c=1", 4}, {"c=2", 7}}));
  EXPECT_NE(out_.str().find("collected 3 measurement(s) (each the fastest of 3 rounds)"),
            std::string::npos)
      << out_.str();

  // Run again: everything is logged, nothing is measured.
  calls_.clear();
  CollectPlan again = Plan({{9}, {9}, {9}}, 3);
  ASSERT_EQ(Run(again), 0) << err_.str();
  EXPECT_TRUE(calls_.empty());
  EXPECT_NE(out_.str().find("collected 0 measurement(s)"), std::string::npos) << out_.str();
  EXPECT_NE(out_.str().find("3 already logged"), std::string::npos) << out_.str();
}

TEST_F(CollectRoundsTest, OneRoundMeasuresEachTrialOnce) {
  CollectPlan plan = Plan({{2}, {1}}, 1);
  ASSERT_EQ(Run(plan), 0) << err_.str();
  EXPECT_EQ(calls_, (std::vector<int>{0, 1}));
  EXPECT_EQ(Logged(), (std::map<std::string, double>{{"c=0", 2}, {"c=1", 1}}));
  EXPECT_EQ(out_.str().find("the fastest of"), std::string::npos) << out_.str();
}

TEST_F(CollectRoundsTest, FailuresInTheFirstRoundSkipTheTrialLaterOnesKeepEarlierTimes) {
  // c=0 fails at once: not logged, not measured again. c=1 fails in round 2: its rounds 1 and 3.
  CollectPlan plan = Plan({{-1}, {5, -1, 3}, {2, 2, 2}}, 3);
  ASSERT_EQ(Run(plan), 0) << err_.str();
  EXPECT_EQ(calls_, (std::vector<int>{0, 1, 2, 2, 1, 1, 2}));
  EXPECT_EQ(Logged(), (std::map<std::string, double>{{"c=1", 3}, {"c=2", 2}}));
  EXPECT_NE(out_.str().find("1 failed"), std::string::npos) << out_.str();
  EXPECT_NE(err_.str().find("kernel k1 [c=0]: runner crashed"), std::string::npos) << err_.str();
  EXPECT_NE(err_.str().find("kernel k1 [c=1], round 2: runner crashed"), std::string::npos)
      << err_.str();
}

TEST_F(CollectRoundsTest, TheTimeLimitCutsAKernelShortAndLogsWhatItMeasured) {
  // The first measurement outlasts the limit: its one round is logged, the rest waits for a rerun.
  cmd_.seconds = 0.05;
  CollectPlan plan = Plan({{1, 1, 1}, {2, 2, 2}}, 3);
  plan.kernels[0].trials[0].measure = [this]() -> absl::StatusOr<Measured> {
    calls_.push_back(0);
    std::this_thread::sleep_for(std::chrono::milliseconds(120));
    return Measured{1.5, std::nullopt};
  };
  ASSERT_EQ(Run(plan), 0) << err_.str();
  EXPECT_EQ(calls_, (std::vector<int>{0}));
  EXPECT_EQ(Logged(), (std::map<std::string, double>{{"c=0", 1.5}}));
  EXPECT_NE(out_.str().find("run again to resume"), std::string::npos) << out_.str();
}

}  // namespace
}  // namespace mltune::opt::cost_model_data
