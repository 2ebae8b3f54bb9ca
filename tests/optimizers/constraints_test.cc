// The constraint engine: propagation and undo, each constraint set against the simulator that
// defines validity, and the solver-backed strategies returning only valid partitions.
#include "optimizers/constraints/constraints.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "backends/mcm_sim/mcm_sim.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "optimizers/mcm/mcm_problem.h"

namespace mltune::opt::constraints {
namespace {

using ::testing::HasSubstr;

TEST(ConstraintSolverTest, OrderPropagatesBoundsAndUndoRestoresThem) {
  // a -> b -> c, values 0..3.
  Solver solver(3, 4, {"a", "b", "c"});
  solver.Add(MakeOrderConstraint("acyclic", {0, 1}, {1, 2}));
  ASSERT_TRUE(solver.Init().ok());
  const size_t root = solver.Checkpoint();
  ASSERT_TRUE(solver.Fix(1, 2));
  EXPECT_EQ(solver.domain(0), AllValues(3));               // a <= 2
  EXPECT_EQ(solver.domain(2), ValueBit(2) | ValueBit(3));  // c >= 2
  EXPECT_FALSE(solver.Fix(2, 1));                          // c < b
  EXPECT_EQ(solver.conflict_constraint(), "choice");
  solver.Undo(root);
  for (int32_t v = 0; v < 3; ++v) EXPECT_EQ(solver.domain(v), AllValues(4));
  EXPECT_FALSE(solver.complete());
}

TEST(ConstraintSolverTest, ConsecutiveValuesCapDomainsBelowAnUnsupportedValue) {
  Solver solver(3, 5);
  solver.Add(MakeConsecutiveConstraint());
  ASSERT_TRUE(solver.Init().ok());
  // Nobody may take value 2: then nobody may take 3 or 4 either.
  for (int32_t v = 0; v < 3; ++v) ASSERT_TRUE(solver.Exclude(v, ValueBit(2)));
  for (int32_t v = 0; v < 3; ++v) EXPECT_EQ(solver.domain(v), AllValues(2));
  // Two of three on 1 and the third must hold 0.
  ASSERT_TRUE(solver.Fix(0, 1));
  ASSERT_TRUE(solver.Fix(1, 1));
  EXPECT_EQ(solver.domain(2), ValueBit(0));
  EXPECT_TRUE(solver.complete());
  EXPECT_EQ(solver.Assignment(), (std::vector<int32_t>{1, 1, 0}));
}

TEST(ConstraintSolverTest, TriangleForbidsAShortcutAcrossAValue) {
  // x -> y -> z and x -> z: x on 0, y on 1 leaves z only 1 (z on 2 would make 0->1->2 and 0->2).
  Solver solver(3, 3, {"x", "y", "z"});
  solver.Add(MakeOrderConstraint("acyclic", {0, 1, 0}, {1, 2, 2}));
  solver.Add(MakeTriangleConstraint({0, 1, 0}, {1, 2, 2}));
  ASSERT_TRUE(solver.Init().ok());
  ASSERT_TRUE(solver.Fix(0, 0));
  ASSERT_TRUE(solver.Fix(1, 1));
  EXPECT_EQ(solver.domain(2), ValueBit(1));
}

TEST(ConstraintSolverTest, CapacityRefusesAnItemNoValueHolds) {
  Solver solver(2, 2, {"small", "huge"});
  solver.Add(MakeCapacityConstraint("memory", {1, 10}, {5, 5}));
  const absl::Status s = solver.Init();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("memory: huge needs 10"));

  Solver fits(3, 2);
  fits.Add(MakeCapacityConstraint("memory", {3, 3, 3}, {6, 3}));
  ASSERT_TRUE(fits.Init().ok());
  std::mt19937_64 rng(1);
  for (int trial = 0; trial < 20; ++trial) {
    const size_t root = fits.Checkpoint();
    absl::StatusOr<std::vector<int32_t>> a = Complete(fits, {0, 1, 2}, UniformOrder(rng));
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(std::count(a->begin(), a->end(), 1), 1);  // value 1 holds one item, value 0 two
    fits.Undo(root);
  }
}

TEST(ConstraintSolverTest, CompleteReportsAnInfeasibleInstance) {
  // Three variables pairwise ordered strictly would need... here: a <= b, b <= a, a != b.
  Solver solver(2, 2, {"a", "b"});
  solver.Add(MakeOrderConstraint("acyclic", {0, 1}, {1, 0}));
  solver.Add(MakeCapacityConstraint("memory", {1, 1}, {1, 1}));
  ASSERT_TRUE(solver.Init().ok());
  absl::StatusOr<std::vector<int32_t>> a = Complete(solver, {0, 1}, NearestOrder({0, 0}));
  ASSERT_FALSE(a.ok());
  EXPECT_THAT(std::string(a.status().message()), HasSubstr("no valid assignment exists"));
}

// ---- MCM: the solver's partitions against the simulator ----

backends::TargetSpec McmSpec(int64_t chips, int64_t sram_bytes) {
  backends::TargetSpec spec;
  spec.name = "test-mcm";
  spec.kind = "mcm";
  spec.peak_ops = {{"s8", 1e12}, {"f32", 0.5e12}};
  spec.memory = {{"sram", sram_bytes, 1e11}};
  spec.kernel_overhead_s = 1e-6;
  spec.devices = chips;
  spec.topology = "ring";
  spec.links = {{"d2d", 1e9, 1e-6}};
  return spec;
}

// A random DAG with short edges and skips (residual-like), shared weights and a few wide ops.
costmodels::OpGraph RandomDag(std::mt19937_64& rng, int32_t n) {
  costmodels::OpGraph graph;
  std::uniform_real_distribution<double> flops(1e6, 5e9), bytes(1e3, 2e6);
  for (int32_t i = 0; i < 12; ++i) {
    graph.weight_bytes.push_back(bytes(rng));
    ++graph.weight_count;
  }
  for (int32_t i = 0; i < n; ++i) {
    costmodels::OpNode op;
    op.name = "op." + std::to_string(i);
    op.element_type = rng() % 3 == 0 ? "f32" : "s8";
    op.cost.flops = flops(rng);
    op.cost.bytes_read = bytes(rng);
    op.output_bytes = bytes(rng);
    if (i > 0) {
      const int32_t fan_in = 1 + static_cast<int32_t>(rng() % 3);
      for (int32_t k = 0; k < fan_in; ++k) {
        const int32_t back = 1 + static_cast<int32_t>(rng() % (k == 0 ? 2 : 8));
        const int32_t producer = std::max(0, i - back);
        bool listed = false;
        for (const costmodels::OpInput& in : op.inputs) listed |= in.node == producer;
        if (!listed) op.inputs.push_back({producer, bytes(rng)});
      }
    }
    if (rng() % 2 == 0) {
      const int32_t id = static_cast<int32_t>(rng() % 12);
      op.weights.push_back({id, graph.weight_bytes[static_cast<size_t>(id)]});
    }
    graph.nodes.push_back(std::move(op));
  }
  graph.LinkUsers();
  return graph;
}

// The property: every partition a solver-backed path returns is valid for the simulator, over
// random graphs and chip counts with SRAM that binds; plain random chips almost never are.
TEST(McmConstraintsTest, EverySolverPartitionIsValidOnRandomGraphs) {
  std::mt19937_64 rng(11);
  int64_t checked = 0, random_valid = 0, random_tried = 0, repairs = 0, repairs_failed = 0;
  for (int g = 0; g < 30; ++g) {
    const int32_t n = 20 + static_cast<int32_t>(rng() % 60);
    const int64_t chips = 8 + static_cast<int64_t>(rng() % 29);
    // SRAM of 6-16 MB: a few ops per chip at most.
    const int64_t sram = 6'000'000 + static_cast<int64_t>(rng() % 10'000'000);
    absl::StatusOr<backends::mcm::McmSimulator> sim =
        backends::mcm::McmSimulator::Create(McmSpec(chips, sram));
    ASSERT_TRUE(sim.ok()) << sim.status();
    mcm::McmChipProblem problem(RandomDag(rng, n), *sim);
    absl::StatusOr<std::unique_ptr<Solver>> solver = problem.NewSolver();
    if (!solver.ok()) {  // an op larger than a chip: named
      EXPECT_THAT(std::string(solver.status().message()), HasSubstr("sram-capacity"));
      continue;
    }
    const size_t root = (*solver)->Checkpoint();
    for (int trial = 0; trial < 10; ++trial) {
      absl::StatusOr<std::vector<int32_t>> a =
          Complete(**solver, problem.VariableOrder(), UniformOrder(rng));
      (*solver)->Undo(root);
      if (!a.ok()) {
        // Too few chips for the graph's SRAM: the error names the constraints that failed.
        EXPECT_THAT(std::string(a.status().message()), HasSubstr("failures by constraint"));
        continue;
      }
      const backends::mcm::McmResult r = sim->Simulate(problem.graph(), *a);
      EXPECT_TRUE(r.valid) << r.error;
      ++checked;
      // FIX: a random proposal repaired is valid too.
      std::vector<int32_t> proposal(static_cast<size_t>(n));
      for (int32_t& c : proposal) c = static_cast<int32_t>(rng() % chips);
      absl::StatusOr<std::vector<int32_t>> fixed = Repair(problem, proposal);
      ++repairs;
      if (fixed.ok()) {
        const backends::mcm::McmResult rf = sim->Simulate(problem.graph(), *fixed);
        EXPECT_TRUE(rf.valid) << rf.error;
      } else {
        EXPECT_THAT(std::string(fixed.status().message()), HasSubstr("failures by constraint"));
        ++repairs_failed;
      }
      random_valid += sim->Simulate(problem.graph(), proposal).valid ? 1 : 0;
      ++random_tried;
    }
  }
  EXPECT_GE(checked, 200);
  EXPECT_LE(random_valid * 20, random_tried);  // under 5% of uniformly random chips are valid
  // Repairing a uniformly random proposal on these tight instances (a few ops per chip) may run
  // out of tries; it must rarely.
  EXPECT_LE(repairs_failed * 10, repairs) << repairs_failed << " of " << repairs;
}

// On a chain every cut carries one tensor to one chip, so the DP's stage time is the simulator's,
// and no contiguous partition (the balanced one included) is better.
TEST(McmConstraintsTest, ContiguousDpIsOptimalOnAChain) {
  costmodels::OpGraph chain;
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<double> flops(1e8, 5e9), bytes(1e4, 1e6);
  for (int32_t i = 0; i < 40; ++i) {
    costmodels::OpNode op;
    op.name = "op." + std::to_string(i);
    op.element_type = "s8";
    op.cost.flops = flops(rng);
    op.output_bytes = bytes(rng);
    if (i > 0) op.inputs.push_back({i - 1, chain.nodes.back().output_bytes});
    chain.nodes.push_back(std::move(op));
  }
  chain.LinkUsers();
  const backends::mcm::McmSimulator sim =
      *backends::mcm::McmSimulator::Create(McmSpec(6, 32'000'000));
  const std::vector<int32_t> dp = mcm::ContiguousDpPartition(chain, sim);
  ASSERT_EQ(dp.size(), 40u);
  const backends::mcm::McmResult r = sim.Simulate(chain, dp);
  ASSERT_TRUE(r.valid) << r.error;
  const backends::mcm::McmResult balanced = sim.Simulate(chain, sim.BalancedPartition(chain));
  ASSERT_TRUE(balanced.valid);
  EXPECT_LE(r.stage_seconds, balanced.stage_seconds * (1 + 1e-12));
  // Against every contiguous split into at most 3 runs, exhaustively.
  for (int32_t a = 1; a < 40; ++a) {
    for (int32_t b = a; b <= 40; ++b) {
      std::vector<int32_t> split(40, 0);
      for (int32_t i = a; i < 40; ++i) split[static_cast<size_t>(i)] = i < b ? 1 : 2;
      const backends::mcm::McmResult other = sim.Simulate(chain, split);
      if (other.valid) {
        EXPECT_LE(r.stage_seconds, other.stage_seconds * (1 + 1e-12));
      }
    }
  }
}

TEST(McmConstraintsTest, AnOpLargerThanAChipIsNamed) {
  std::mt19937_64 rng(3);
  costmodels::OpGraph graph = RandomDag(rng, 10);
  graph.nodes[4].output_bytes = 5e7;
  mcm::McmChipProblem problem(std::move(graph),
                              *backends::mcm::McmSimulator::Create(McmSpec(8, 32'000'000)));
  absl::StatusOr<std::unique_ptr<Solver>> solver = problem.NewSolver();
  ASSERT_FALSE(solver.ok());
  EXPECT_THAT(std::string(solver.status().message()),
              HasSubstr("sram-capacity: op 'op.4' alone needs"));
}

TEST(McmConstraintsTest, SolverStrategiesEvaluateOnlyValidPartitions) {
  std::mt19937_64 rng(5);
  for (const std::string name : {"solver-random", "solver-annealing", "solver-local-search"}) {
    mcm::McmChipProblem problem(RandomDag(rng, 60),
                                *backends::mcm::McmSimulator::Create(McmSpec(12, 12'000'000)));
    absl::StatusOr<std::unique_ptr<Strategy>> strategy = SolverStrategies().Create(name);
    ASSERT_TRUE(strategy.ok()) << strategy.status();
    absl::StatusOr<Result> r = (*strategy)->Search(problem, Budget(150, 0), 1);
    ASSERT_TRUE(r.ok()) << name << ": " << r.status();
    EXPECT_TRUE(std::isfinite(r->best_score)) << name;
    // Every evaluation is valid: the balanced seed is used only when it is.
    EXPECT_EQ(problem.valid_evaluations(), problem.evaluations()) << name;
    EXPECT_GE(problem.evaluations(), 100) << name;
    EXPECT_TRUE(problem.Simulate(r->best).valid) << name;
  }
}

TEST(McmConstraintsTest, SolverStrategiesRefuseProblemsWithoutConstraints) {
  class Plain : public ConfigProblem {
   public:
    std::string name() const override { return "plain"; }
    SearchSpace space() const override {
      SearchSpace s;
      s.choices = {2};
      s.max_length = 3;
      s.fixed_length = true;
      return s;
    }
    double Evaluate(const Candidate&) override { return 1; }
  } plain;
  absl::StatusOr<Result> r =
      (*SolverStrategies().Create("solver-random"))->Search(plain, Budget(10, 0), 0);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("needs a problem with constraints"));
}

}  // namespace
}  // namespace mltune::opt::constraints
