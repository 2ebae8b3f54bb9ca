// The learned cost model as a ranker of CPU fusion plans (optimizers/guided): a plan's score is
// the sum of its kernels' predicted times, each kernel under its default configuration, as
// `mltune collect --task fusion` measures them.
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_backend.h"
#include "costmodels/analytical/kernels.h"
#include "costmodels/analytical/op_graph.h"
#include "costmodels/features/kernel_graph.h"
#include "costmodels/learned/learned_model.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "optimizers/guided/plan_seconds.h"
#include "optimizers/guided/rankers.h"
#include "optimizers/tiling/cpu_kernel_graph.h"

namespace mltune::opt::guided {
namespace {

namespace cpu = backends::cpu;
namespace features = costmodels::features;
namespace learned = costmodels::learned;

// Each kernel of a lowered module as the fusion model sees it: graph with the default
// configuration filled in.
std::vector<features::KernelGraph> KernelGraphs(const cpu::LoweredModule& lowered) {
  std::vector<features::KernelGraph> out;
  for (const cpu::Kernel& k : lowered.kernels) {
    absl::StatusOr<tiling::CpuKernelFeatures> f = tiling::CpuKernelFeaturesOf(lowered, k.id);
    EXPECT_TRUE(f.ok()) << f.status();
    if (!f.ok()) continue;
    EXPECT_TRUE(features::SetConfiguration(tiling::CpuKernelConfiguration(k, cpu::DefaultConfig(k)),
                                           &f->graph)
                    .ok());
    out.push_back(std::move(f->graph));
  }
  return out;
}

class CpuFusionRankerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<ir::Module>> parsed =
        ir::ParseHloFile(MLTUNE_SOURCE_DIR "/examples/mlp_train_step.hlo");
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    absl::StatusOr<std::unique_ptr<ir::Module>> prepared = cpu::RunCpuPipeline(**parsed);
    ASSERT_TRUE(prepared.ok()) << prepared.status();
    module_ = *std::move(prepared);
    graph_ = costmodels::BuildOpGraph(*module_);
    absl::StatusOr<cpu::LoweredModule> lowered = cpu::Lower(*module_);
    ASSERT_TRUE(lowered.ok()) << lowered.status();
    default_kernels_ = KernelGraphs(*lowered);
  }

  std::shared_ptr<const learned::LearnedModel> Train(learned::Loss loss) {
    learned::ModelOptions o;
    o.vocabulary_size = features::OpcodeVocabularySize();
    o.embedding_dim = 4;
    o.hidden_dim = 16;
    o.sage_layers = 1;
    o.epochs = 3;
    o.loss = loss;
    std::vector<learned::Sample> samples;
    for (size_t i = 0; i < default_kernels_.size(); ++i) {
      samples.push_back({&default_kernels_[i], static_cast<int64_t>(i % 2),
                         1e-7 * static_cast<double>(default_kernels_[i].size())});
    }
    std::unique_ptr<learned::LearnedModel> m = *learned::LearnedModel::Create(o);
    EXPECT_TRUE(m->Train(samples).ok());
    return std::shared_ptr<const learned::LearnedModel>(std::move(m));
  }

  std::unique_ptr<ir::Module> module_;
  costmodels::OpGraph graph_;
  std::vector<features::KernelGraph> default_kernels_;
};

TEST_F(CpuFusionRankerTest, APlanScoresTheSumOfItsKernelsPredictedTimes) {
  std::shared_ptr<const learned::LearnedModel> model = Train(learned::Loss::kMseLog);
  fusion::CpuFusionProblem::RankFn rank = CpuFusionRanker(model, *module_).rank;
  const costmodels::FusionPlan fused = costmodels::PlanFusion(graph_);
  const costmodels::FusionPlan apart = costmodels::Unfused(graph_);
  absl::StatusOr<std::vector<double>> r = rank({fused, apart, fused});
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 3u);
  // The default plan, by hand: every kernel's predicted log seconds, exponentiated and summed.
  std::vector<const features::KernelGraph*> batch;
  for (const features::KernelGraph& g : default_kernels_) batch.push_back(&g);
  absl::StatusOr<std::vector<double>> log_seconds = model->Predict(batch);
  ASSERT_TRUE(log_seconds.ok());
  double sum = 0;
  for (double v : *log_seconds) sum += std::exp(v);
  // The model predicts in float; batched with other plans' kernels, a prediction may round
  // differently in the last bits.
  EXPECT_NEAR((*r)[0], sum, 1e-6 * sum);
  EXPECT_EQ((*r)[0], (*r)[2]);
  EXPECT_TRUE(std::isfinite((*r)[1]));
  EXPECT_NE((*r)[0], (*r)[1]);
  // Remembered across calls: the same plans score the same in another call, in another order.
  absl::StatusOr<std::vector<double>> again = rank({apart, fused});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[0], (*r)[1]);
  EXPECT_EQ((*again)[1], (*r)[0]);
  EXPECT_TRUE(rank({})->empty());
}

// A measured plan's kernels are priced at their measured times from then on, and the rest
// corrected by the errors of the measured kernels they share ops with.
TEST_F(CpuFusionRankerTest, ObservedKernelTimesReplaceAndCorrectPredictions) {
  ASSERT_GE(default_kernels_.size(), 4u);
  std::shared_ptr<const learned::LearnedModel> model = Train(learned::Loss::kMseLog);
  std::vector<const features::KernelGraph*> batch;
  for (size_t i = 0; i < 4; ++i) batch.push_back(&default_kernels_[i]);
  absl::StatusOr<std::vector<double>> log_p = model->Predict(batch);
  ASSERT_TRUE(log_p.ok()) << log_p.status();
  std::vector<double> p;
  for (double v : *log_p) p.push_back(std::exp(v));
  // Plans by their first kernel_of entry: 0 = {K0 ops {a, b}, K1 ops {c}}, 1 = {K2 ops {a}},
  // 2 = {K3 ops {b, c, d}}, 3 = {K0} alone (indices into its measured times).
  auto kernel = [&](int i, int32_t index, std::vector<std::string> ops) {
    return PlanKernel{absl::StrCat("K", i),
                      [this, i]() -> absl::StatusOr<features::KernelGraph> {
                        return default_kernels_[static_cast<size_t>(i)];
                      },
                      index, std::move(ops)};
  };
  PlanSeconds seconds(
      model, [&](const costmodels::FusionPlan& plan) -> absl::StatusOr<std::vector<PlanKernel>> {
        switch (plan.kernel_of[0]) {
          case 0:
            return std::vector<PlanKernel>{kernel(0, 0, {"a", "b"}), kernel(1, 1, {"c"})};
          case 1:
            return std::vector<PlanKernel>{kernel(2, 0, {"a"})};
          case 2:
            return std::vector<PlanKernel>{kernel(3, 0, {"b", "c", "d"})};
          default:
            return std::vector<PlanKernel>{kernel(0, 0, {"a", "b"})};
        }
      });
  auto plan = [](int32_t id) {
    costmodels::FusionPlan p;
    p.kernel_of = {id};
    return p;
  };
  absl::StatusOr<std::vector<double>> before = seconds.Rank({plan(0), plan(1), plan(2)});
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_NEAR((*before)[0], p[0] + p[1], 1e-9 * (p[0] + p[1]));
  EXPECT_NEAR((*before)[1], p[2], 1e-9 * p[2]);

  // K0 measured 10x its prediction, K1 as predicted.
  ASSERT_TRUE(seconds.Observe(plan(0), {10 * p[0], p[1]}).ok());
  EXPECT_EQ(seconds.measured_kernels(), 2u);
  absl::StatusOr<std::vector<double>> after = seconds.Rank({plan(0), plan(1), plan(2)});
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_NEAR((*after)[0], 10 * p[0] + p[1], 1e-9 * (10 * p[0] + p[1]));
  // K2 {a} shares half its ops' union with K0 {a, b} and none with K1 {c}: its log correction
  // is 0.5^4 log 10 / (0.5^4 + kPrior).
  const double w = std::pow(0.5, 4), l10 = std::log(10.0);
  EXPECT_NEAR((*after)[1], p[2] * std::exp(w * l10 / (w + PlanSeconds::kPrior)), 1e-9 * p[2]);
  // K3 {b, c, d}: a quarter with K0, a third with K1 (error 0): a smaller correction, still up.
  const double c3 = (*after)[2] / p[3], c2 = (*after)[1] / p[2];
  EXPECT_GT(c3, 1.0);
  EXPECT_LT(c3, c2);
  EXPECT_LT(c2, 10.0);

  // K0 measured again, 40x: the geometric mean of its two times.
  ASSERT_TRUE(seconds.Observe(plan(3), {40 * p[0]}).ok());
  absl::StatusOr<std::vector<double>> again = seconds.Rank({plan(3)});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_NEAR(again->front(), 20 * p[0], 1e-9 * 20 * p[0]);
  EXPECT_EQ(seconds.measured_kernels(), 2u);
}

// Through CpuFusionRanker: the default plan measured at 3x each kernel's prediction ranks at
// 3x its old sum, and the unfused plan, none of whose kernels was measured but each of whose ops
// is in one that was, moves up by less.
TEST_F(CpuFusionRankerTest, AMeasuredPlanCorrectsTheRankingOfOthers) {
  std::shared_ptr<const learned::LearnedModel> model = Train(learned::Loss::kMseLog);
  fusion::CpuFusionProblem::Ranker ranker = CpuFusionRanker(model, *module_);
  const costmodels::FusionPlan fused = costmodels::PlanFusion(graph_);
  const costmodels::FusionPlan apart = costmodels::Unfused(graph_);
  absl::StatusOr<std::vector<double>> before = ranker.rank({fused, apart});
  ASSERT_TRUE(before.ok()) << before.status();
  absl::StatusOr<cpu::LoweredModule> lowered = cpu::Lower(*module_, &fused);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  const std::vector<features::KernelGraph> graphs = KernelGraphs(*lowered);
  ASSERT_EQ(graphs.size(), lowered->kernels.size());
  std::vector<const features::KernelGraph*> batch;
  for (const features::KernelGraph& g : graphs) batch.push_back(&g);
  absl::StatusOr<std::vector<double>> log_seconds = model->Predict(batch);
  ASSERT_TRUE(log_seconds.ok()) << log_seconds.status();
  std::vector<double> times;
  for (double v : *log_seconds) times.push_back(3 * std::exp(v));
  ranker.observe(fused, times);
  absl::StatusOr<std::vector<double>> after = ranker.rank({fused, apart});
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_NEAR((*after)[0], 3 * (*before)[0], 1e-6 * (*before)[0]);
  EXPECT_GT((*after)[1], 1.01 * (*before)[1]);
  EXPECT_LT((*after)[1], 3 * (*before)[1]);
}

TEST_F(CpuFusionRankerTest, ARankOnlyModelCannotScorePlans) {
  fusion::CpuFusionProblem::RankFn rank =
      CpuFusionRanker(Train(learned::Loss::kRankLogistic), *module_).rank;
  absl::StatusOr<std::vector<double>> r = rank({costmodels::PlanFusion(graph_)});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace mltune::opt::guided
