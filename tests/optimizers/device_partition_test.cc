// The partitioning model against the reference values of ../shared/NOTES.md (computed with the
// dnn-partitioning authors' tools), hand-built graphs for each rule of the objectives, the
// baselines and bad input.
#include "optimizers/device_partition/device_partition.h"

#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "optimizers/core/search.h"
#include "optimizers/device_partition/incremental_load.h"
#include "tests/support/corpus.h"

namespace mltune::opt::partition {
namespace {

std::string PlacementDir() {
  const std::string corpus = testing::CorpusDir();
  if (corpus.empty()) return "";
  const std::string dir = corpus + "/placement/dnn-partitioning";
  return std::filesystem::exists(dir) ? dir : "";
}

#define REQUIRE_PLACEMENT_CORPUS(dir)                                                         \
  const std::string dir = PlacementDir();                                                     \
  if (dir.empty()) {                                                                          \
    GTEST_SKIP() << "shared placement graphs not found (expected "                            \
                    "../shared/corpus/placement/dnn-partitioning); skipping reference cases"; \
  }

// a -> b -> c, a -> c; latencies 1, 2, 4 on an accelerator (10x on the CPU); costs 0.5, 0.25.
constexpr char kChain[] = R"({"maxSizePerFPGA": 100, "maxFPGAs": 2, "maxCPUs": 1,
  "nodes": [
    {"id": 1, "supportedOnFpga": 1, "cpuLatency": 10, "fpgaLatency": 1, "isBackwardNode": 0, "size": 60},
    {"id": 2, "supportedOnFpga": true, "cpuLatency": 20, "fpgaLatency": 2, "isBackwardNode": false, "size": 30},
    {"id": 3, "supportedOnFpga": 1, "cpuLatency": 40, "fpgaLatency": 4, "isBackwardNode": 0, "size": 30}],
  "edges": [
    {"sourceId": 1, "destId": 2, "cost": 0.5}, {"sourceId": 1, "destId": 3, "cost": 0.5},
    {"sourceId": 2, "destId": 3, "cost": 0.25}]})";

TEST(DevicePartitionTest, MaxLoadChargesEachOutputOncePerReceivingDevice) {
  absl::StatusOr<PartitionGraph> g = ParsePartitionGraph(kChain, "chain");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_DOUBLE_EQ(MaxLoad(*g, {1, 1, 1}).objective, 7);
  // a alone: sends 0.5 once though two nodes read it; device 2 receives it once, and c's input
  // from b stays local.
  SplitScore s = MaxLoad(*g, {1, 2, 2});
  EXPECT_DOUBLE_EQ(s.objective, 6.5);
  EXPECT_TRUE(s.feasible);
  // On the CPU: no transfer costs on the CPU's side.
  s = MaxLoad(*g, {1, 0, 1});
  EXPECT_DOUBLE_EQ(s.objective, 20);
  EXPECT_DOUBLE_EQ(MaxLoad(*g, {1, 2, 1}).objective, 1 + 4 + 0.5 + 0.25);
  // Memory: 90 and 30 bytes fit, 120 on one accelerator does not.
  EXPECT_TRUE(MaxLoad(*g, {1, 1, 2}).feasible);
  s = MaxLoad(*g, {1, 1, 1});
  EXPECT_FALSE(s.feasible);
  EXPECT_DOUBLE_EQ(s.overflow_bytes, 20);
}

TEST(DevicePartitionTest, LatencyCutsNonContiguousSetsIntoPieces) {
  absl::StatusOr<PartitionGraph> g = ParsePartitionGraph(kChain, "chain");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_DOUBLE_EQ(Latency(*g, {1, 1, 1}).objective, 7);
  // {a}: 1 + send 0.5; {b, c} after it: receive 0.5, run 6.
  EXPECT_DOUBLE_EQ(Latency(*g, {1, 2, 2}).objective, 1.5 + 0.5 + 6);
  // {a, c} is not contiguous (a -> b -> c leaves it): pieces {a}, {b}, {c}.
  // a: 1 + 0.5 = 1.5; b: 1.5 + 0.5 + 2 + 0.25 = 4.25; c: 4.25 + (0.5 + 0.25) + 4 = 9.
  EXPECT_DOUBLE_EQ(Latency(*g, {1, 2, 1}).objective, 9);
  // CPU nodes pay no transfers: b on the CPU starts after a's piece (1 + 0.5) and runs 20.
  EXPECT_DOUBLE_EQ(Latency(*g, {1, 0, 1}).objective, 1.5 + 20 + 0.5 + 0.25 + 4);
}

TEST(DevicePartitionTest, ColocationAndUnsupportedNodes) {
  const std::string text = R"({"maxSizePerFPGA": 10, "maxFPGAs": 2, "maxCPUs": 1,
    "nodes": [{"id": 7, "supportedOnFpga": 1, "cpuLatency": 1, "fpgaLatency": 1,
               "isBackwardNode": 0, "colorClass": 3},
              {"id": 8, "supportedOnFpga": 0, "cpuLatency": 1, "fpgaLatency": 1,
               "isBackwardNode": 1, "colorClass": 3},
              {"id": 9, "supportedOnFpga": 1, "cpuLatency": 1, "fpgaLatency": 1,
               "isBackwardNode": 0}],
    "edges": [{"sourceId": 7, "destId": 9, "cost": 1}]})";
  absl::StatusOr<PartitionGraph> g = ParsePartitionGraph(text, "cc");
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->groups, 2);
  EXPECT_FALSE(MaxLoad(*g, {1, 2, 1}).valid);
  EXPECT_FALSE(MaxLoad(*g, {1, 1, 1}).valid);  // 8 cannot run on an accelerator
  EXPECT_TRUE(MaxLoad(*g, {0, 0, 1}).valid);
  PartitionProblem problem(*g, Objective::kThroughput);
  EXPECT_EQ(problem.Decode(problem.Encode({0, 0, 2})), (Split{0, 0, 2}));
  // The forward split extends to the backward node through its class.
  absl::StatusOr<Split> split =
      ParseSplit(*g, R"({"fpgas": [{"nodes": [9]}], "cpus": [{"nodes": [7]}]})", "s");
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ(*split, (Split{0, 0, 1}));
}

TEST(DevicePartitionTest, BadInputNamesWhereAndWhat) {
  auto error = [](std::string_view text) {
    absl::StatusOr<PartitionGraph> g = ParsePartitionGraph(text, "g.json");
    return g.ok() ? std::string("ok") : std::string(g.status().message());
  };
  EXPECT_EQ(error("{\"maxFPGAs\": 2,\n  \"nodes\": [}"),
            error("{\"maxFPGAs\": 2,\n  \"nodes\": [}"));
  EXPECT_NE(error("{\"maxFPGAs\": 2,\n  \"nodes\": [}").find("g.json:2:"), std::string::npos);
  const std::string base = R"({"maxSizePerFPGA": 1, "maxFPGAs": 2, "maxCPUs": 1, "nodes": [)";
  EXPECT_NE(
      error(base +
            R"({"id": 1, "supportedOnFpga": 1, "cpuLatency": -1, "fpgaLatency": 1}], "edges": []})")
          .find("nodes[0]: field 'cpuLatency': expected a finite number >= 0"),
      std::string::npos);
  EXPECT_NE(
      error(
          base +
          R"({"id": 1, "supportedOnFpga": 1, "cpuLatency": 1, "fpgaLatency": 1}], "edges": [{"sourceId": 1, "destId": 5, "cost": 1}]})")
          .find("edges[0]: field 'destId': no node has id 5"),
      std::string::npos);
  EXPECT_NE(error(R"({"maxSizePerFPGA": 1, "maxFPGAs": 0, "maxCPUs": 1, "nodes": [], "edges": []})")
                .find("maxFPGAs"),
            std::string::npos);
  absl::StatusOr<PartitionGraph> g = ParsePartitionGraph(kChain, "chain");
  ASSERT_TRUE(g.ok());
  absl::StatusOr<Split> split = ParseSplit(*g, R"({"fpgas": [{"nodes": [1, 2]}]})", "s.json");
  ASSERT_FALSE(split.ok());
  EXPECT_NE(split.status().message().find("node 3 is on no device"), std::string::npos);
  split = ParseSplit(*g, R"({"fpgas": [{"nodes": [1, 2, 3, 4]}]})", "s.json");
  ASSERT_FALSE(split.ok());
  EXPECT_NE(split.status().message().find("no node of chain has id 4"), std::string::npos);
}

TEST(DevicePartitionTest, BaselinesRespectTheModel) {
  absl::StatusOr<PartitionGraph> g = ParsePartitionGraph(kChain, "chain");
  ASSERT_TRUE(g.ok());
  std::mt19937_64 rng(1);
  for (const Split& s :
       {OneAccelerator(*g), EarliestFinish(*g), RandomSplit(*g, rng), ContiguousSplit(*g)}) {
    EXPECT_TRUE(MaxLoad(*g, s).valid);
  }
  absl::StatusOr<Split> metis = MetisSplit(*g, 1);
  ASSERT_TRUE(metis.ok()) << metis.status();
  EXPECT_TRUE(MaxLoad(*g, *metis).valid);
  // Pipeline stages of about half the compute each: {a, b} (3 of 7) and {c}.
  EXPECT_EQ(ContiguousSplit(*g), (Split{1, 1, 2}));
  // The DP over cut points: {a, b} | {c} has the smaller largest run (3.75 and 4.75, against
  // 1.5 and 6.5), {a} | {b, c} the smaller sum (8 against 8.5); all three do not fit one.
  EXPECT_EQ(ContiguousDpSplit(*g, Objective::kThroughput), (Split{1, 1, 2}));
  EXPECT_EQ(ContiguousDpSplit(*g, Objective::kLatency), (Split{1, 2, 2}));
  EXPECT_DOUBLE_EQ(Latency(*g, ContiguousDpSplit(*g, Objective::kLatency)).objective, 8);
  // PipeDream's stages overlap compute and transfers: {a, b} | {c} costs max(3, 0.75) and
  // max(4, 0.75) = 4 as a stage, against {a} | {b, c}'s 6; the model still charges 4.75.
  EXPECT_EQ(PipeDreamSplit(*g), (Split{1, 1, 2}));
  EXPECT_DOUBLE_EQ(MaxLoad(*g, PipeDreamSplit(*g)).objective, 4.75);
  int64_t evaluations = 0;
  const Split local = LocalSearch(*g, Objective::kThroughput, 5, rng, 0, &evaluations);
  // The best feasible split: a and b together (90 bytes), c alone:
  // max(1 + 2 + 0.5 + 0.25, 4 + 0.5 + 0.25).
  EXPECT_DOUBLE_EQ(MaxLoad(*g, local).objective, 4.75);
  EXPECT_GT(evaluations, 3);
}

// Two chains a1 -> a2 -> a3 and b1 -> b2 -> b3 of unit latency, listed interleaved; the classes
// are numbered chain by chain (a1, a2, a3, b1, b2, b3: the graph's order is depth-first). Every
// output costs 1 to send.
constexpr char kTwoChains[] = R"({"maxSizePerFPGA": 100, "maxFPGAs": 2, "maxCPUs": 1,
  "nodes": [
    {"id": 1, "supportedOnFpga": 1, "cpuLatency": 10, "fpgaLatency": 1, "isBackwardNode": 0, "size": 1},
    {"id": 4, "supportedOnFpga": 1, "cpuLatency": 10, "fpgaLatency": 1, "isBackwardNode": 0, "size": 1},
    {"id": 2, "supportedOnFpga": 1, "cpuLatency": 10, "fpgaLatency": 1, "isBackwardNode": 0, "size": 1},
    {"id": 5, "supportedOnFpga": 1, "cpuLatency": 10, "fpgaLatency": 1, "isBackwardNode": 0, "size": 1},
    {"id": 3, "supportedOnFpga": 1, "cpuLatency": 10, "fpgaLatency": 1, "isBackwardNode": 0, "size": 1},
    {"id": 6, "supportedOnFpga": 1, "cpuLatency": 10, "fpgaLatency": 1, "isBackwardNode": 0, "size": 1}],
  "edges": [
    {"sourceId": 1, "destId": 2, "cost": 1}, {"sourceId": 2, "destId": 3, "cost": 1},
    {"sourceId": 4, "destId": 5, "cost": 1}, {"sourceId": 5, "destId": 6, "cost": 1}]})";

TEST(DevicePartitionTest, RankedDpCutsTheOrderItsRanksPropose) {
  absl::StatusOr<PartitionGraph> g = ParsePartitionGraph(kTwoChains, "two chains");
  ASSERT_TRUE(g.ok()) << g.status();
  // Equal ranks keep the numbered order.
  for (Objective o : {Objective::kThroughput, Objective::kLatency}) {
    EXPECT_EQ(RankedDpSplit(*g, o, std::vector<double>(6, 0.5)), ContiguousDpSplit(*g, o));
  }
  // Splits are by node (a1, b1, a2, b2, a3, b3), ranks by class (a1, a2, a3, b1, b2, b3). The
  // numbered order cuts between the chains: 3 per accelerator, nothing sent.
  const Split by_number = ContiguousDpSplit(*g, Objective::kThroughput);
  EXPECT_EQ(by_number, (Split{1, 2, 1, 2, 1, 2}));
  EXPECT_DOUBLE_EQ(MaxLoad(*g, by_number).objective, 3);
  // Chain b first: the same cut, the chains swapped.
  EXPECT_EQ(RankedDpSplit(*g, Objective::kThroughput, {1, 1, 1, 0, 0, 0}),
            (Split{2, 1, 2, 1, 2, 1}));
  // Interleaved ranks: every cut splits both chains, at best {a1, b1, a2} | {b2, a3, b3}: 3 plus
  // two outputs sent against 3 plus two received.
  const Split interleaved = RankedDpSplit(*g, Objective::kThroughput, {0, 2, 4, 1, 3, 5});
  EXPECT_DOUBLE_EQ(MaxLoad(*g, interleaved).objective, 5);
  // Ranks against the edges cannot break them: b3 ranked first still waits for b1 and b2.
  const Split against = RankedDpSplit(*g, Objective::kLatency, {1, 1, 1, 1, 1, 0});
  EXPECT_EQ(SplitError(*g, against, Objective::kLatency, /*contiguous=*/false), "");
  // A rank per class or none: another length falls back to the numbered order.
  EXPECT_EQ(RankedDpSplit(*g, Objective::kThroughput, {0, 1}), by_number);
}

// A random DAG of `n` nodes, some colocated and some CPU-only, whose memory fills about 70% of
// `k` accelerators (a node's output costs the same on each of its edges).
std::string RandomGraphJson(std::mt19937_64& rng, int n, int k, bool colocate) {
  std::string nodes, edges;
  const double capacity = 1000;
  std::uniform_real_distribution<double> latency(0.1, 5), size(0, 2 * 0.7 * capacity * k / n);
  for (int i = 1; i <= n; ++i) {
    const bool cpu_only = rng() % 17 == 0;
    std::string color =
        colocate && rng() % 9 == 0 ? absl::StrCat(", \"colorClass\": ", rng() % 3) : "";
    absl::StrAppend(&nodes, i > 1 ? "," : "", "{\"id\": ", i,
                    ", \"supportedOnFpga\": ", cpu_only ? 0 : 1,
                    ", \"cpuLatency\": ", latency(rng) * 10, ", \"fpgaLatency\": ", latency(rng),
                    ", \"isBackwardNode\": 0, \"size\": ", size(rng), color, "}");
    for (int back = 1; back <= 3 && i - back >= 1; ++back) {
      if (back == 1 || rng() % 3 == 0) {
        absl::StrAppend(&edges, edges.empty() ? "" : ",", "{\"sourceId\": ", i - back,
                        ", \"destId\": ", i, ", \"cost\": ", (i - back) % 7 * 0.1, "}");
      }
    }
  }
  return absl::StrCat("{\"maxSizePerFPGA\": ", capacity, ", \"maxFPGAs\": ", k,
                      ", \"maxCPUs\": 1, \"nodes\": [", nodes, "], \"edges\": [", edges, "]}");
}

// The property of the solver-backed paths: every split they return fits the accelerators, and
// with `contiguous` no accelerator feeds a lower-numbered one.
TEST(DevicePartitionTest, SolverSplitsAlwaysFitAndStayContiguousWhenAsked) {
  std::mt19937_64 rng(21);
  int64_t checked = 0;
  for (int g = 0; g < 20; ++g) {
    // Colocation classes far apart can make a contiguous split impossible: tested apart.
    const bool contiguous = g % 2 == 1;
    absl::StatusOr<PartitionGraph> graph = ParsePartitionGraph(
        RandomGraphJson(rng, 20 + static_cast<int>(rng() % 60), 2 + g % 5, !contiguous), "random");
    ASSERT_TRUE(graph.ok()) << graph.status();
    {
      PartitionProblem problem(*graph, Objective::kThroughput, contiguous);
      absl::StatusOr<std::unique_ptr<constraints::Solver>> solver = problem.NewSolver();
      ASSERT_TRUE(solver.ok()) << solver.status();
      const size_t root = (*solver)->Checkpoint();
      for (int trial = 0; trial < 10; ++trial) {
        absl::StatusOr<std::vector<int32_t>> a = constraints::Complete(
            **solver, problem.VariableOrder(), constraints::UniformOrder(rng));
        (*solver)->Undo(root);
        ASSERT_TRUE(a.ok()) << a.status();
        const Split split = problem.Decode(Candidate(a->begin(), a->end()));
        const SplitScore score = Score(*graph, split, Objective::kThroughput);
        EXPECT_TRUE(score.valid && score.feasible) << score.error;
        if (contiguous) {
          for (int32_t v = 0; v < graph->size(); ++v) {
            for (int32_t w : graph->succ[static_cast<size_t>(v)]) {
              if (split[static_cast<size_t>(v)] > 0 && split[static_cast<size_t>(w)] > 0) {
                EXPECT_LE(split[static_cast<size_t>(v)], split[static_cast<size_t>(w)]);
              }
            }
          }
        }
        ++checked;
      }
      absl::StatusOr<Result> r = (*constraints::SolverStrategies().Create("solver-annealing"))
                                     ->Search(problem, Budget(60, 0), 1);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_TRUE(std::isfinite(r->best_score));
    }
  }
  EXPECT_EQ(checked, 200);
  // A class larger than every accelerator is named.
  absl::StatusOr<PartitionGraph> big = ParsePartitionGraph(
      R"({"maxSizePerFPGA": 10, "maxFPGAs": 2, "maxCPUs": 1, "nodes": [
        {"id": 7, "supportedOnFpga": 1, "cpuLatency": 1, "fpgaLatency": 1, "size": 11}],
        "edges": []})",
      "big");
  ASSERT_TRUE(big.ok()) << big.status();
  absl::StatusOr<std::unique_ptr<constraints::Solver>> none =
      PartitionProblem(*big, Objective::kThroughput).NewSolver();
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("memory: node 7 needs 11"), std::string::npos)
      << none.status();
}

// Two independent edges 1 -> 2 and 3 -> 4: with 1 and 4 on one accelerator and 2 and 3 on the
// other, each accelerator holds one piece, and the pieces feed each other (issue 71's cycle).
constexpr char kCross[] = R"({"maxSizePerFPGA": 100, "maxFPGAs": 2, "maxCPUs": 1,
  "nodes": [{"id": 1, "supportedOnFpga": 1, "cpuLatency": 9, "fpgaLatency": 1, "size": 1},
            {"id": 2, "supportedOnFpga": 1, "cpuLatency": 9, "fpgaLatency": 1, "size": 1},
            {"id": 3, "supportedOnFpga": 1, "cpuLatency": 9, "fpgaLatency": 1, "size": 1},
            {"id": 4, "supportedOnFpga": 1, "cpuLatency": 9, "fpgaLatency": 1, "size": 1}],
  "edges": [{"sourceId": 1, "destId": 2, "cost": 1}, {"sourceId": 3, "destId": 4, "cost": 1}]})";

TEST(DevicePartitionTest, ValidSplitRepairsLatencysCycleOfPieces) {
  absl::StatusOr<PartitionGraph> g = ParsePartitionGraph(kCross, "cross");
  ASSERT_TRUE(g.ok()) << g.status();
  const Split crossed = {1, 2, 2, 1};
  EXPECT_NE(SplitError(*g, crossed, Objective::kLatency).find("cycle"), std::string::npos);
  // Throughput has no pieces: the same split is valid and kept.
  EXPECT_EQ(SplitError(*g, crossed, Objective::kThroughput), "");
  absl::StatusOr<Split> same = ValidSplit(*g, Objective::kThroughput, crossed);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(*same, crossed);
  absl::StatusOr<Split> repaired = ValidSplit(*g, Objective::kLatency, crossed);
  ASSERT_TRUE(repaired.ok()) << repaired.status();
  EXPECT_EQ(SplitError(*g, *repaired, Objective::kLatency), "");
  EXPECT_NE(*repaired, crossed);
}

// A path through a CPU node counts: before, the solver ordered only direct accelerator edges,
// so 1 -> (CPU) 2 -> 3 could put 1 on accelerator 2 and 3 on accelerator 1 under --contiguous.
TEST(DevicePartitionTest, ContiguityHoldsAlongPathsThroughTheCpu) {
  absl::StatusOr<PartitionGraph> g = ParsePartitionGraph(
      R"({"maxSizePerFPGA": 100, "maxFPGAs": 2, "maxCPUs": 1,
        "nodes": [{"id": 1, "supportedOnFpga": 1, "cpuLatency": 9, "fpgaLatency": 1},
                  {"id": 2, "supportedOnFpga": 0, "cpuLatency": 9, "fpgaLatency": 1},
                  {"id": 3, "supportedOnFpga": 1, "cpuLatency": 9, "fpgaLatency": 1}],
        "edges": [{"sourceId": 1, "destId": 2, "cost": 1}, {"sourceId": 2, "destId": 3,
                   "cost": 1}]})",
      "through-cpu");
  ASSERT_TRUE(g.ok()) << g.status();
  const Split backwards = {2, 0, 1};
  EXPECT_NE(ContiguityError(*g, backwards), "");
  for (Objective objective : {Objective::kThroughput, Objective::kLatency}) {
    // Latency orders the accelerators even without --contiguous (its pieces must be acyclic).
    const bool contiguous = objective == Objective::kThroughput;
    PartitionProblem problem(*g, objective, contiguous);
    const Candidate proposal = problem.Encode(backwards);
    absl::StatusOr<std::vector<int32_t>> a =
        constraints::Repair(problem, std::vector<int32_t>(proposal.begin(), proposal.end()));
    ASSERT_TRUE(a.ok()) << a.status();
    const Split split = problem.Decode(Candidate(a->begin(), a->end()));
    EXPECT_LE(split[0], split[2]) << ObjectiveName(objective);
    EXPECT_EQ(ContiguityError(*g, split), "") << ObjectiveName(objective);
  }
}

// Inception-like: twelve parallel two-node branches between a source and a join. A random split
// over four accelerators crosses branches and forms a cycle of pieces; local search used to
// descend from it, find no single move that helps, and return it.
TEST(DevicePartitionTest, LocalSearchUnderLatencyNeverReturnsACycleOfPieces) {
  std::string nodes, edges;
  auto node = [&](int id) {
    absl::StrAppend(&nodes, nodes.empty() ? "" : ", ", R"({"id": )", id,
                    R"(, "supportedOnFpga": 1, "cpuLatency": 50, "fpgaLatency": 5, "size": 1})");
  };
  auto edge = [&](int from, int to) {
    absl::StrAppend(&edges, edges.empty() ? "" : ", ", R"({"sourceId": )", from, R"(, "destId": )",
                    to, R"(, "cost": 1})");
  };
  node(0);
  node(100);
  for (int b = 1; b <= 12; ++b) {
    node(2 * b - 1);
    node(2 * b);
    edge(0, 2 * b - 1);
    edge(2 * b - 1, 2 * b);
    edge(2 * b, 100);
  }
  absl::StatusOr<PartitionGraph> g = ParsePartitionGraph(
      absl::StrCat(R"({"maxSizePerFPGA": 100, "maxFPGAs": 4, "maxCPUs": 1, "nodes": [)", nodes,
                   R"(], "edges": [)", edges, "]}"),
      "branches");
  ASSERT_TRUE(g.ok()) << g.status();
  int crossed = 0;
  for (uint64_t seed = 0; seed < 10; ++seed) {
    // The premise: the split local search draws first is not valid (most draws are not).
    std::mt19937_64 draw(seed);
    if (Score(*g, RandomSplit(*g, draw), Objective::kLatency).valid) continue;
    ++crossed;
    std::mt19937_64 rng(seed);
    // Three evaluations: the start and two moves, too few to walk out of a cycle.
    const Split split = LocalSearch(*g, Objective::kLatency, 1, rng, 3, nullptr);
    EXPECT_EQ(SplitError(*g, split, Objective::kLatency), "") << "seed " << seed;
  }
  EXPECT_GE(crossed, 5);
}

// The corpus's instance of issue 71's failure: `mltune partition bert_l-3_inference.json
// --objective latency --strategy local-search --seed 1` answered a split whose pieces form a cycle.
TEST(DevicePartitionTest, LocalSearchOnBertsLatencyOperatorGraphIsValid) {
  REQUIRE_PLACEMENT_CORPUS(dir);
  absl::StatusOr<PartitionGraph> g =
      LoadPartitionGraph(dir + "/latency/OperatorGraphs/bert_l-3_inference.json");
  ASSERT_TRUE(g.ok()) << g.status();
  std::mt19937_64 rng(1);
  const Split split = LocalSearch(*g, Objective::kLatency, 10, rng, 0, nullptr);
  EXPECT_EQ(SplitError(*g, split, Objective::kLatency), "");
}

struct Reference {
  const char* graph;
  const char* expert;  // "" when none
  Objective objective;
  double one_accelerator;  // < 0: not given
  double expert_value;
};

TEST(DevicePartitionTest, MatchesTheAuthorsReferenceValues) {
  REQUIRE_PLACEMENT_CORPUS(dir);
  const Reference references[] = {
      {"throughput/LayerGraphs/bert24_inference.json", "bert24_inference_expert.json",
       Objective::kThroughput, 92.41, 20.08},
      {"throughput/LayerGraphs/bert24_training.json", "bert24_training_expert.json",
       Objective::kThroughput, 217.81, 49.40},
      {"throughput/LayerGraphs/resnet50_inference.json", "resnet50_inference_expert.json",
       Objective::kThroughput, 201.45, 43.92},
      {"throughput/LayerGraphs/resnet50_training.json", "resnet50_inference_expert.json",
       Objective::kThroughput, 462.38, 112.11},
      {"latency/LayerGraphs/bert24_inference.json", "bert24_inference_expert.json",
       Objective::kLatency, -1, 111.94},
      {"latency/LayerGraphs/resnet50_inference.json", "resnet50_inference_expert.json",
       Objective::kLatency, -1, 1014.93},
  };
  for (const Reference& r : references) {
    SCOPED_TRACE(r.graph);
    absl::StatusOr<PartitionGraph> g = LoadPartitionGraph(dir + "/" + r.graph);
    ASSERT_TRUE(g.ok()) << g.status();
    if (r.one_accelerator > 0) {
      EXPECT_NEAR(Score(*g, OneAccelerator(*g), r.objective).objective, r.one_accelerator,
                  r.one_accelerator * 1e-3);
    }
    absl::StatusOr<Split> expert = LoadSplit(*g, dir + "/human-experts/" + r.expert);
    ASSERT_TRUE(expert.ok()) << expert.status();
    const SplitScore s = Score(*g, *expert, r.objective);
    ASSERT_TRUE(s.valid) << s.error;
    EXPECT_NEAR(s.objective, r.expert_value, r.expert_value * 1e-3);
  }
}

// On BERT's layer graphs the best contiguous split in topological order is the optimum over all
// contiguous splits that the authors' DP finds (NOTES.md: 17.79 and 41.75).
TEST(DevicePartitionTest, ContiguousDpMatchesTheAuthorsDpOnBert) {
  REQUIRE_PLACEMENT_CORPUS(dir);
  for (const auto& [file, value] : {std::pair<const char*, double>{"bert24_inference", 17.79},
                                    std::pair<const char*, double>{"bert24_training", 41.75}}) {
    absl::StatusOr<PartitionGraph> g =
        LoadPartitionGraph(absl::StrCat(dir, "/throughput/LayerGraphs/", file, ".json"));
    ASSERT_TRUE(g.ok()) << g.status();
    const SplitScore s = MaxLoad(*g, ContiguousDpSplit(*g, Objective::kThroughput));
    EXPECT_TRUE(s.feasible) << s.error;
    EXPECT_NEAR(s.objective, value, value * 1e-3) << file;
  }
}

TEST(DevicePartitionTest, EveryGraphLoadsAndEveryStrategySearchesIt) {
  REQUIRE_PLACEMENT_CORPUS(dir);
  int graphs = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    const std::string path = entry.path().string();
    if (!path.ends_with(".json") || path.find("human-experts") != std::string::npos) continue;
    SCOPED_TRACE(path);
    absl::StatusOr<PartitionGraph> g = LoadPartitionGraph(path);
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_TRUE(g->IsDag());
    ++graphs;
    const Objective objective =
        path.find("/latency/") != std::string::npos ? Objective::kLatency : Objective::kThroughput;
    PartitionProblem problem(*g, objective);
    absl::StatusOr<std::unique_ptr<Strategy>> annealing =
        StrategyRegistry::Global().Create("annealing");
    ASSERT_TRUE(annealing.ok());
    absl::StatusOr<Result> result = (*annealing)->Search(problem, Budget(200, 0), 1);
    ASSERT_TRUE(result.ok()) << result.status();
    const double metf = problem.Evaluate(problem.Encode(EarliestFinish(*g)));
    EXPECT_LE(result->best_score, metf);
    EXPECT_TRUE(std::isfinite(result->best_score));
  }
  EXPECT_EQ(graphs, 18);
}

// Two microbatches of x -> w -> y with both w colocated (their weight): by first node the class
// {w1, w2} came before x2, which feeds it, so runs of classes in number order were not contiguous.
TEST(DevicePartitionTest, ClassesAreNumberedInATopologicalOrderOfTheClassGraph) {
  constexpr char kMicrobatches[] = R"({"maxSizePerFPGA": 2, "maxFPGAs": 3, "maxCPUs": 1,
    "nodes": [
      {"id": 1, "supportedOnFpga": 1, "cpuLatency": 10, "fpgaLatency": 1, "size": 1},
      {"id": 2, "supportedOnFpga": 1, "cpuLatency": 10, "fpgaLatency": 1, "size": 1, "colorClass": 9},
      {"id": 3, "supportedOnFpga": 1, "cpuLatency": 10, "fpgaLatency": 1, "size": 1},
      {"id": 4, "supportedOnFpga": 1, "cpuLatency": 10, "fpgaLatency": 1, "size": 1},
      {"id": 5, "supportedOnFpga": 1, "cpuLatency": 10, "fpgaLatency": 1, "size": 0, "colorClass": 9},
      {"id": 6, "supportedOnFpga": 1, "cpuLatency": 10, "fpgaLatency": 1, "size": 1}],
    "edges": [
      {"sourceId": 1, "destId": 2, "cost": 1}, {"sourceId": 2, "destId": 3, "cost": 1},
      {"sourceId": 4, "destId": 5, "cost": 1}, {"sourceId": 5, "destId": 6, "cost": 1}]})";
  absl::StatusOr<PartitionGraph> g = ParsePartitionGraph(kMicrobatches, "microbatches");
  ASSERT_TRUE(g.ok()) << g.status();
  auto group = [&](int id) { return g->nodes[static_cast<size_t>(id - 1)].group; };
  EXPECT_LT(group(4), group(2));  // x2 feeds the weight class
  EXPECT_LT(group(2), group(3));
  EXPECT_LT(group(2), group(6));
  for (Objective o : {Objective::kThroughput, Objective::kLatency}) {
    EXPECT_EQ(SplitError(*g, ContiguousSplit(*g), o, /*contiguous=*/true), "");
    EXPECT_EQ(SplitError(*g, ContiguousDpSplit(*g, o), o, /*contiguous=*/true), "");
  }
}

LayeredGraphOptions SmallLayered(int32_t nodes, uint64_t seed) {
  LayeredGraphOptions o;
  o.nodes = nodes;
  o.width = 12;
  o.accelerators = 4;
  o.cpu_only_fraction = 0.05;
  o.colocated_fraction = 0.3;
  o.memory_slack = 1.2;
  o.seed = seed;
  return o;
}

TEST(DevicePartitionTest, LayeredRandomGraphIsADagThatRoundTripsThroughItsFile) {
  absl::StatusOr<PartitionGraph> g = LayeredRandomGraph(SmallLayered(3000, 5));
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->size(), 3000);
  EXPECT_TRUE(g->IsDag());
  EXPECT_LT(g->groups, 3000);  // some nodes colocated with their producer
  absl::StatusOr<PartitionGraph> back = ParsePartitionGraph(FormatPartitionGraph(*g), "back");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->size(), g->size());
  EXPECT_EQ(back->groups, g->groups);
  std::mt19937_64 rng(3);
  const Split split = RandomSplit(*g, rng);
  for (Objective o : {Objective::kThroughput, Objective::kLatency}) {
    // A random split is valid under throughput; under latency its pieces may form a cycle,
    // which both copies must then report.
    const SplitScore a = Score(*g, split, o), b = Score(*back, split, o);
    EXPECT_TRUE(a.valid || o == Objective::kLatency) << a.error;
    EXPECT_EQ(a.valid, b.valid);
    EXPECT_EQ(a.error, b.error);
    if (a.valid) {
      EXPECT_NEAR(a.objective, b.objective, 1e-6 * a.objective);
    }
    EXPECT_EQ(a.feasible, b.feasible);
  }
}

TEST(DevicePartitionTest, LayeredRandomGraphRejectsOptionsOutOfRange) {
  LayeredGraphOptions o;
  o.nodes = 0;
  EXPECT_NE(LayeredRandomGraph(o).status().message().find("nodes"), std::string::npos);
  o = {};
  o.cpu_only_fraction = 1.5;
  EXPECT_NE(LayeredRandomGraph(o).status().message().find("cpu_only_fraction"), std::string::npos);
  o = {};
  o.memory_slack = 0;
  EXPECT_FALSE(LayeredRandomGraph(o).ok());
}

TEST(DevicePartitionTest, IncrementalLoadAgreesWithMaxLoadUnderRandomMoves) {
  const PartitionGraph g = *LayeredRandomGraph(SmallLayered(1500, 7));
  std::mt19937_64 rng(11);
  const Split start = RandomSplit(g, rng);
  std::vector<int32_t> device(static_cast<size_t>(g.groups));
  for (int32_t c = 0; c < g.groups; ++c) {
    device[static_cast<size_t>(c)] = start[static_cast<size_t>(g.group_nodes[c][0])];
  }
  IncrementalLoad state(g, device);
  std::uniform_int_distribution<int32_t> pick_class(0, g.groups - 1), pick(1, g.accelerators);
  for (int step = 0; step < 400; ++step) {
    const int32_t c = pick_class(rng);
    if (device[static_cast<size_t>(c)] == 0) continue;  // CPU-only classes stay
    device[static_cast<size_t>(c)] = pick(rng);
    state.Move(c, device[static_cast<size_t>(c)]);
    Split split(g.nodes.size());
    for (size_t v = 0; v < split.size(); ++v) split[v] = device[g.nodes[v].group];
    const SplitScore full = MaxLoad(g, split), fast = state.Score();
    ASSERT_TRUE(full.valid) << full.error;
    ASSERT_NEAR(fast.objective, full.objective, 1e-6 * full.objective) << "step " << step;
    ASSERT_EQ(fast.feasible, full.feasible) << "step " << step;
  }
}

TEST(DevicePartitionTest, ThroughputLocalSearchEndsWhereNoSingleMoveHelps) {
  const PartitionGraph g = *LayeredRandomGraph(SmallLayered(300, 9));
  std::mt19937_64 rng(1);
  int64_t evaluations = 0;
  const Split split = LocalSearch(g, Objective::kThroughput, 1, rng, 0, &evaluations);
  const SplitScore found = MaxLoad(g, split);
  ASSERT_TRUE(found.valid && found.feasible) << found.error;
  // Every move of one class to another accelerator, scored in full, is no better.
  for (int32_t c = 0; c < g.groups; ++c) {
    const int32_t was = split[static_cast<size_t>(g.group_nodes[c][0])];
    if (was == 0) continue;
    for (int32_t d = 1; d <= g.accelerators; ++d) {
      if (d == was) continue;
      Split moved = split;
      for (int32_t v : g.group_nodes[static_cast<size_t>(c)]) moved[static_cast<size_t>(v)] = d;
      const SplitScore s = MaxLoad(g, moved);
      if (s.feasible) {
        EXPECT_GE(s.objective, found.objective - 1e-6) << "class " << c << " to " << d;
      }
    }
  }
}

TEST(DevicePartitionTest, ContiguousDpOnAGraphAboveItsUnitLimitIsValidAndBeatsEqualRuns) {
  LayeredGraphOptions o = SmallLayered(3 * kMaxDpUnits, 13);
  o.colocated_fraction = 0;
  o.accelerators = 8;
  o.memory_slack = 1.5;
  const PartitionGraph g = *LayeredRandomGraph(o);
  ASSERT_GT(g.groups, kMaxDpUnits);
  for (Objective objective : {Objective::kThroughput, Objective::kLatency}) {
    const Split dp = ContiguousDpSplit(g, objective);
    EXPECT_EQ(SplitError(g, dp, objective, /*contiguous=*/true), "");
    const SplitScore a = Score(g, dp, objective);
    const SplitScore equal_runs = Score(g, ContiguousSplit(g), objective);
    ASSERT_TRUE(a.feasible) << a.error;
    EXPECT_LE(a.objective, equal_runs.objective * (1 + 1e-9)) << ObjectiveName(objective);
  }
}

TEST(DevicePartitionTest, LocalSearchStopsAtItsWallClockBudget) {
  LayeredGraphOptions o = SmallLayered(20000, 17);
  o.accelerators = 8;
  const PartitionGraph g = *LayeredRandomGraph(o);
  std::mt19937_64 rng(1);
  int64_t evaluations = 0;
  const auto start = std::chrono::steady_clock::now();
  const Split split = LocalSearch(g, Objective::kThroughput, 10, rng, Budget(0, 0.2), &evaluations);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Generous: the budget is checked before each evaluation, the start's repair runs once.
  EXPECT_LT(seconds, 5.0);
  EXPECT_GT(evaluations, 1);
  EXPECT_EQ(SplitError(g, split, Objective::kThroughput), "");
}

}  // namespace
}  // namespace mltune::opt::partition
