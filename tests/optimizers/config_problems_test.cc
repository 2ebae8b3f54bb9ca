// The configuration problems on the simulated workers: candidates round-trip through their text
// form, seeds are the compiler's defaults, invalid configurations score +infinity, and a search
// finds tiles, fusion decisions, partitions and placements no worse than the defaults.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "optimizers/core/model_topk.h"
#include "optimizers/fusion/fusion_problem.h"
#include "optimizers/mcm/mcm_problem.h"
#include "optimizers/placement/placement_problem.h"
#include "optimizers/tiling/tile_problem.h"
#include "tests/support/corpus.h"

namespace mltune::opt {
namespace {

// Two dense layers with a softmax: matmuls, epilogues and reductions.
constexpr char kModel[] = R"(HloModule two_layers
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
ENTRY e {
  x = f32[512,1024] parameter(0)
  w1 = f32[1024,2048] parameter(1)
  w2 = f32[2048,1000] parameter(2)
  h = f32[512,2048] dot(x, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  z = f32[] constant(0)
  zb = f32[512,2048] broadcast(z), dimensions={}
  r = f32[512,2048] maximum(h, zb)
  o = f32[512,1000] dot(r, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ninf = f32[] constant(-inf)
  mx = f32[512] reduce(o, ninf), dimensions={1}, to_apply=max
  mb = f32[512,1000] broadcast(mx), dimensions={0}
  ROOT s = f32[512,1000] subtract(o, mb)
})";

costmodels::OpGraph Graph() {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(kModel);
  EXPECT_TRUE(m.ok()) << m.status();
  return costmodels::BuildOpGraph(**m);
}

const backends::TargetSpec& Spec(const char* name) {
  const backends::TargetSpec* spec = backends::TargetRegistry::Global().Find(name);
  EXPECT_NE(spec, nullptr) << name;
  return *spec;
}

Result Search(Problem& problem, const char* strategy, int64_t steps) {
  absl::StatusOr<std::unique_ptr<Strategy>> s = StrategyRegistry::Global().Create(strategy);
  EXPECT_TRUE(s.ok());
  absl::StatusOr<Result> r = (*s)->Search(problem, Budget(steps, 0), 3);
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

TEST(ConfigProblemsTest, TileSearchBeatsTheDefaultTilesAndRejectsVmemOverflow) {
  const costmodels::OpGraph g = Graph();
  tiling::TpuTileProblem problem(costmodels::SummarizeKernels(g, costmodels::PlanFusion(g)),
                                 *backends::tpu::TpuSimulator::Create(Spec("tpu-v3-core")));
  const Candidate seed = problem.DefaultCandidate();
  ASSERT_EQ(problem.SeedCandidates().size(), 1u);
  EXPECT_EQ(problem.SeedCandidates()[0], seed);
  const double baseline = problem.Evaluate(seed);
  ASSERT_TRUE(std::isfinite(baseline));
  // Choice 0 is the whole dimension (and double buffering): whole, double-buffered matmuls of
  // 512x1024x2048 f32 need more than the 16 MiB of VMEM.
  const Candidate largest(seed.size(), 0);
  EXPECT_NE(problem.ActionName(0, 0).find("=all"), std::string::npos) << problem.ActionName(0, 0);
  EXPECT_TRUE(std::isinf(problem.Evaluate(largest)));
  const Result r = Search(problem, "annealing", 2000);
  EXPECT_LE(r.best_score, baseline);
  EXPECT_LT(r.best_score, baseline * 0.999) << "annealing found no better tile than the default";
  // The text form round-trips and is checked against the space.
  absl::StatusOr<Candidate> parsed = problem.Parse(ConfigProblem::Format(r.best));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, r.best);
  EXPECT_FALSE(problem.Parse("1,2").ok());
  EXPECT_FALSE(problem.Parse("x").ok());
}

// model-topk's view of the tile problem: one part per kernel, slowest first; RankSettings hands
// the ranker the tiles Decode would give; with a perfect ranker (the noise-free simulator) ranking
// every tile of every kernel, the first ranked of each is measured and the sum is the optimum.
TEST(ConfigProblemsTest, TileProblemPartsAreKernelsRankedByAModel) {
  const costmodels::OpGraph g = Graph();
  const backends::TargetSpec& spec = Spec("tpu-v3-core");
  const std::vector<costmodels::KernelSummary> kernels =
      costmodels::SummarizeKernels(g, costmodels::PlanFusion(g));
  tiling::TpuTileProblem problem(kernels, *backends::tpu::TpuSimulator::Create(spec));
  EXPECT_EQ(problem.RankSettings(0, {}).status().code(), absl::StatusCode::kFailedPrecondition);

  const std::vector<std::vector<int64_t>> parts = problem.Parts();
  std::vector<int64_t> all;
  for (const std::vector<int64_t>& p : parts) all.insert(all.end(), p.begin(), p.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(static_cast<int64_t>(all.size()), problem.space().max_length);
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], static_cast<int64_t>(i));
  // A part's positions name one kernel ("<kernel>.m=..."); the first is the slowest by default.
  auto kernel_of = [&](int64_t position) {
    const std::string name = problem.ActionName(position, 0);
    return name.substr(0, name.rfind('.'));
  };
  const backends::tpu::TpuResult defaults = problem.Simulate(problem.DefaultCandidate());
  double slowest = 0;
  std::string slowest_name;
  for (size_t k = 0; k < kernels.size(); ++k) {
    if (!kernels[k].opaque && defaults.kernels[k].seconds > slowest) {
      slowest = defaults.kernels[k].seconds;
      slowest_name = kernels[k].name;
    }
  }
  EXPECT_EQ(kernel_of(parts[0][0]), slowest_name);

  backends::tpu::TpuSimulator exact = *backends::tpu::TpuSimulator::Create(spec);
  std::vector<std::pair<int32_t, std::vector<backends::tpu::TileConfig>>> asked;
  problem.SetRanker([&](int32_t kernel, const std::vector<backends::tpu::TileConfig>& tiles)
                        -> absl::StatusOr<std::vector<double>> {
    asked.emplace_back(kernel, tiles);
    std::vector<double> scores;
    for (const backends::tpu::TileConfig& t : tiles) {
      const backends::tpu::KernelTiming timing =
          exact.SimulateKernel(kernels[static_cast<size_t>(kernel)], t);
      scores.push_back(timing.valid ? timing.seconds : std::numeric_limits<double>::infinity());
    }
    return scores;
  });
  // A setting of the last part: its tile is what Decode makes of the candidate it sets.
  const std::vector<int64_t>& last = parts.back();
  Candidate c = problem.DefaultCandidate();
  Candidate setting;
  for (int64_t p : last) {
    c[static_cast<size_t>(p)] = problem.space().choices[static_cast<size_t>(p)] - 1;
    setting.push_back(c[static_cast<size_t>(p)]);
  }
  ASSERT_TRUE(problem.RankSettings(static_cast<int64_t>(parts.size()) - 1, {setting}).ok());
  ASSERT_EQ(asked.size(), 1u);
  EXPECT_EQ(asked[0].second[0], problem.Decode(c)[static_cast<size_t>(asked[0].first)]);
  EXPECT_EQ(kernel_of(last[0]), kernels[static_cast<size_t>(asked[0].first)].name);
  EXPECT_FALSE(problem.RankSettings(static_cast<int64_t>(parts.size()), {setting}).ok());
  EXPECT_FALSE(problem.RankSettings(0, {Candidate(parts[0].size() + 1, 0)}).ok());

  absl::StatusOr<std::unique_ptr<Strategy>> topk = CreateModelTopK({{"k", 1}, {"pool", 1e6}});
  ASSERT_TRUE(topk.ok());
  absl::StatusOr<Result> guided = (*topk)->Search(problem, Budget(1000, 0), 3);
  ASSERT_TRUE(guided.ok()) << guided.status();
  const double baseline = problem.Evaluate(problem.DefaultCandidate());
  EXPECT_LT(guided->best_score, baseline * 0.999);
  EXPECT_LE(guided->steps, static_cast<int64_t>(1 + parts.size()));
  const Result annealed = Search(problem, "annealing", 2000);
  EXPECT_LE(guided->best_score, annealed.best_score * (1 + 1e-9));
}

TEST(ConfigProblemsTest, FusionDefaultBeatsNoFusionAndSearchKeepsIt) {
  const costmodels::OpGraph g = Graph();
  fusion::TpuFusionProblem problem(g, *backends::tpu::TpuSimulator::Create(Spec("tpu-v4-core")));
  const double fused = problem.Evaluate(problem.DefaultCandidate());
  const double unfused = problem.Evaluate(Candidate(problem.DefaultCandidate().size(), 0));
  EXPECT_LT(fused, unfused);
  EXPECT_EQ(problem.Plan(Candidate(problem.DefaultCandidate().size(), 0)).size(), g.size());
  const Result r = Search(problem, "evolutionary", 300);
  EXPECT_LE(r.best_score, fused);
}

// model-topk's view of the fusion problem: one part; the ranker sees each setting's plan, and a
// plan an earlier setting already made ranks last, so the top k are distinct plans.
TEST(ConfigProblemsTest, FusionProblemRanksPlansAndRepeatedPlansLast) {
  fusion::TpuFusionProblem problem(Graph(),
                                   *backends::tpu::TpuSimulator::Create(Spec("tpu-v3-core")));
  const Candidate fused = problem.DefaultCandidate();
  ASSERT_FALSE(fused.empty());
  EXPECT_EQ(problem.RankSettings(0, {fused}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  std::vector<costmodels::FusionPlan> seen;
  problem.SetRanker(
      [&](const std::vector<costmodels::FusionPlan>& plans) -> absl::StatusOr<std::vector<double>> {
        seen = plans;
        std::vector<double> ranks;
        for (const costmodels::FusionPlan& p : plans) ranks.push_back(double(p.kernels.size()));
        return ranks;
      });
  const Candidate unfused(fused.size(), 0);
  absl::StatusOr<std::vector<double>> ranks = problem.RankSettings(0, {fused, unfused, fused});
  ASSERT_TRUE(ranks.ok()) << ranks.status();
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].kernel_of, problem.Plan(fused).kernel_of);
  EXPECT_EQ(seen[1].kernel_of, problem.Plan(unfused).kernel_of);
  EXPECT_LT((*ranks)[0], (*ranks)[1]);  // fewer kernels
  EXPECT_TRUE(std::isinf((*ranks)[2]));
  EXPECT_FALSE(problem.RankSettings(1, {fused}).ok());
  EXPECT_FALSE(problem.RankSettings(0, {Candidate(fused.size(), 2)}).ok());
}

// The observers see what each evaluation simulated (the daemon logs it as training data): the
// tiles Decode gives, or the plan Plan gives and its kernels, with per-kernel times that add up to
// the score.
TEST(ConfigProblemsTest, ObserversSeeEverySimulatedCandidatesKernels) {
  const costmodels::OpGraph g = Graph();
  tiling::TpuTileProblem tiles(costmodels::SummarizeKernels(g, costmodels::PlanFusion(g)),
                               *backends::tpu::TpuSimulator::Create(Spec("tpu-v3-core")));
  int tile_calls = 0;
  double tile_sum = 0;
  std::vector<backends::tpu::TileConfig> seen_tiles;
  tiles.SetObserver(
      [&](const std::vector<backends::tpu::TileConfig>& t, const backends::tpu::TpuResult& r) {
        ++tile_calls;
        seen_tiles = t;
        tile_sum = 0;
        for (const backends::tpu::KernelTiming& k : r.kernels) tile_sum += k.seconds;
        EXPECT_EQ(r.kernels.size(), tiles.kernels().size());
      });
  const Candidate seed = tiles.DefaultCandidate();
  const double score = tiles.Evaluate(seed);
  EXPECT_EQ(tile_calls, 1);
  EXPECT_NEAR(tile_sum, score, 1e-9 * score);
  const std::vector<backends::tpu::TileConfig> decoded = tiles.Decode(seed);
  ASSERT_EQ(seen_tiles.size(), decoded.size());
  for (size_t k = 0; k < decoded.size(); ++k) {
    EXPECT_EQ(backends::tpu::TileName(seen_tiles[k]), backends::tpu::TileName(decoded[k]));
  }
  // An overflowing candidate is observed too (its kernels say which are invalid).
  EXPECT_TRUE(std::isinf(tiles.Evaluate(Candidate(seed.size(), 0))));
  EXPECT_EQ(tile_calls, 2);

  fusion::TpuFusionProblem plans(g, *backends::tpu::TpuSimulator::Create(Spec("tpu-v4-core")));
  int plan_calls = 0;
  plans.SetObserver([&](const costmodels::FusionPlan& plan,
                        const std::vector<costmodels::KernelSummary>& kernels,
                        const backends::tpu::TpuResult& r) {
    ++plan_calls;
    const Candidate unfused(plans.DefaultCandidate().size(), 0);
    EXPECT_EQ(plan.kernel_of, plans.Plan(unfused).kernel_of);
    EXPECT_EQ(kernels.size(), plan.kernels.size());
    double sum = 0;
    for (const backends::tpu::KernelTiming& k : r.kernels) sum += k.seconds;
    EXPECT_NEAR(sum, r.seconds, 1e-9 * r.seconds);
  });
  plans.Evaluate(Candidate(plans.DefaultCandidate().size(), 0));
  EXPECT_EQ(plan_calls, 1);
}

TEST(ConfigProblemsTest, McmEncodingRoundTripsAndSearchKeepsValidity) {
  const costmodels::OpGraph g = Graph();
  mcm::McmPartitionProblem problem(g, *backends::mcm::McmSimulator::Create(Spec("mcm-36")));
  const Candidate balanced = problem.BalancedCandidate();
  EXPECT_EQ(problem.Decode(balanced), problem.simulator().BalancedPartition(g));
  const double baseline = problem.Evaluate(balanced);
  ASSERT_TRUE(std::isfinite(baseline));
  const Result r = Search(problem, "annealing", 1000);
  EXPECT_LE(r.best_score, baseline);
  EXPECT_TRUE(problem.Simulate(r.best).valid);
  EXPECT_NEAR(problem.Simulate(r.best).throughput * r.best_score, 1.0, 1e-9);
}

TEST(ConfigProblemsTest, PlacementSeedsAreMetfAndOneDeviceAndSearchIsNoWorse) {
  const costmodels::OpGraph g = Graph();
  placement::PlacementProblem problem(
      g, *backends::cluster::ClusterSimulator::Create(Spec("gpu-4x-pcie")));
  ASSERT_EQ(problem.SeedCandidates().size(), 2u);
  EXPECT_EQ(problem.SeedCandidates()[0], problem.EarliestFinishCandidate());
  const double metf = problem.Evaluate(problem.SeedCandidates()[0]);
  const double one = problem.Evaluate(problem.SeedCandidates()[1]);
  ASSERT_TRUE(std::isfinite(metf) && std::isfinite(one));
  const Result r = Search(problem, "annealing", 500);
  EXPECT_LE(r.best_score, std::min(metf, one));
  EXPECT_FALSE(problem.Parse("9").ok());
}

}  // namespace
}  // namespace mltune::opt
