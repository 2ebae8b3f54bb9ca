// The configuration problems on the simulated workers: candidates round-trip through their text
// form, seeds are the compiler's defaults, invalid configurations score +infinity, and a search
// finds tiles, fusion decisions, partitions and placements no worse than the defaults.
#include <cmath>
#include <memory>

#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
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
