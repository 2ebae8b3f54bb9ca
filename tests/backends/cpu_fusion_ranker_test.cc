// The learned cost model as a ranker of CPU fusion plans (optimizers/guided): a plan's score is
// the sum of its kernels' predicted times, each kernel under its default configuration, as
// `mltune collect --task fusion` measures them.
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "costmodels/analytical/kernels.h"
#include "costmodels/analytical/op_graph.h"
#include "costmodels/features/kernel_graph.h"
#include "costmodels/learned/learned_model.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
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
  fusion::CpuFusionProblem::RankFn rank = CpuFusionRanker(model, *module_);
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
  EXPECT_NEAR((*r)[0], sum, 1e-9 * sum);
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

TEST_F(CpuFusionRankerTest, ARankOnlyModelCannotScorePlans) {
  fusion::CpuFusionProblem::RankFn rank =
      CpuFusionRanker(Train(learned::Loss::kRankLogistic), *module_);
  absl::StatusOr<std::vector<double>> r = rank({costmodels::PlanFusion(graph_)});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace mltune::opt::guided
