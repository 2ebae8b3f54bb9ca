// Property test of issue 71: every strategy `mltune partition` offers for a graph, run through the
// CLI's own path (client/partition_graph.h), returns a split the evaluator accepts (memory per
// accelerator, CPU-only classes on the CPU, acyclic pieces for latency, contiguity when asked) on
// random branchy DAGs, or an error naming the constraint when no valid split exists.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/partition_graph.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "optimizers/device_partition/device_partition.h"
#include "optimizers/rl/rl.h"

namespace mltune::client::internal {
namespace {

namespace partition = opt::partition;
using json = nlohmann::json;

// An Inception-like DAG: blocks that fan out into parallel branches and join, a few skip edges,
// some CPU-only nodes, some colocated pairs, and a memory limit that a split into k runs of the
// topological order meets exactly (so a valid, contiguous split always exists) scaled by
// `memory_scale`.
std::string RandomGraph(uint64_t seed, bool large, double memory_scale = 1.0) {
  std::mt19937_64 rng(seed);
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<>(lo, hi)(rng);
  };
  auto integer = [&](int lo, int hi) { return std::uniform_int_distribution<>(lo, hi)(rng); };
  std::vector<std::pair<int, int>> edges;
  int nodes = 1;  // node 0: the input
  int last = 0;
  const int blocks = large ? integer(12, 20) : integer(3, 6);
  for (int b = 0; b < blocks; ++b) {
    const int join_inputs_from = nodes;
    std::vector<int> tails;
    const int branches = large ? integer(3, 6) : integer(2, 4);
    for (int r = 0; r < branches; ++r) {
      int prev = last;
      const int length = integer(1, large ? 4 : 3);
      for (int i = 0; i < length; ++i) {
        edges.emplace_back(prev, nodes);
        prev = nodes++;
      }
      tails.push_back(prev);
    }
    // Cross edges between branches, always from a lower to a higher id.
    for (int x = 0; x < 2; ++x) {
      const int a = integer(join_inputs_from, nodes - 1), c = integer(join_inputs_from, nodes - 1);
      if (a < c) edges.emplace_back(a, c);
    }
    for (int t : tails) edges.emplace_back(t, nodes);
    last = nodes++;
  }
  const int k = integer(2, 4);
  std::vector<bool> cpu_only(static_cast<size_t>(nodes), false);
  std::vector<double> bytes(static_cast<size_t>(nodes));
  std::vector<int> in_degree(static_cast<size_t>(nodes), 0), pred(static_cast<size_t>(nodes), -1);
  for (auto [a, c] : edges) {
    ++in_degree[static_cast<size_t>(c)];
    pred[static_cast<size_t>(c)] = a;
  }
  for (int v = 0; v < nodes; ++v) {
    cpu_only[static_cast<size_t>(v)] = uniform(0, 1) < 0.1;
    bytes[static_cast<size_t>(v)] = std::round(uniform(1, 100));
  }
  // Colocation: a node with one input joins its producer's class (never closes a cycle).
  std::vector<int> color(static_cast<size_t>(nodes));
  for (int v = 0; v < nodes; ++v) {
    color[static_cast<size_t>(v)] = v;
    if (in_degree[static_cast<size_t>(v)] == 1 && uniform(0, 1) < 0.15) {
      color[static_cast<size_t>(v)] = color[static_cast<size_t>(pred[static_cast<size_t>(v)])];
    }
  }
  // The memory limit: the largest of k runs of about equal bytes over the accelerator classes in
  // id order (a topological order of nodes and of classes).
  std::map<int, bool> class_cpu;
  std::map<int, double> class_bytes;
  for (int v = 0; v < nodes; ++v) {
    class_cpu[color[static_cast<size_t>(v)]] |= cpu_only[static_cast<size_t>(v)];
    class_bytes[color[static_cast<size_t>(v)]] += bytes[static_cast<size_t>(v)];
  }
  double total = 0;
  for (auto [c, b] : class_bytes) total += class_cpu[c] ? 0 : b;
  double cap = 0, run = 0;
  int runs = 1;
  for (auto [c, b] : class_bytes) {
    if (class_cpu[c]) continue;
    if (run > 0 && run + b > total / k && runs < k) {
      cap = std::max(cap, run);
      run = 0;
      ++runs;
    }
    run += b;
  }
  cap = std::max(cap, run) * memory_scale;

  json g;
  g["maxSizePerFPGA"] = cap;
  g["maxFPGAs"] = k;
  g["maxCPUs"] = 1;
  g["nodes"] = json::array();
  for (int v = 0; v < nodes; ++v) {
    const double accel = uniform(1, 10);
    g["nodes"].push_back({{"id", v},
                          {"supportedOnFpga", !cpu_only[static_cast<size_t>(v)]},
                          {"cpuLatency", accel * uniform(2, 20)},
                          {"fpgaLatency", accel},
                          {"isBackwardNode", false},
                          {"size", bytes[static_cast<size_t>(v)]},
                          {"colorClass", color[static_cast<size_t>(v)]}});
  }
  std::vector<double> cost(static_cast<size_t>(nodes));
  for (double& c : cost) c = uniform(0.1, 5);
  g["edges"] = json::array();
  for (auto [a, c] : edges) {
    g["edges"].push_back({{"sourceId", a}, {"destId", c}, {"cost", cost[static_cast<size_t>(a)]}});
  }
  return g.dump();
}

// The test's own contiguity check (not the library's): an accelerator class feeds a lower-numbered
// accelerator, directly or through CPU nodes; "" when it is.
std::string FeedsLowerAccelerator(const partition::PartitionGraph& g,
                                  const partition::Split& split) {
  for (int32_t s = 0; s < g.size(); ++s) {
    if (split[static_cast<size_t>(s)] == 0) continue;
    std::vector<int32_t> stack = {s};
    std::vector<bool> seen(static_cast<size_t>(g.size()), false);
    while (!stack.empty()) {
      const int32_t v = stack.back();
      stack.pop_back();
      for (int32_t w : g.succ[static_cast<size_t>(v)]) {
        if (seen[static_cast<size_t>(w)]) continue;
        seen[static_cast<size_t>(w)] = true;
        const int32_t d = split[static_cast<size_t>(w)];
        if (d == 0) {
          stack.push_back(w);
        } else if (d < split[static_cast<size_t>(s)]) {
          return absl::StrCat("node ", g.nodes[static_cast<size_t>(s)].id, " on accelerator ",
                              split[static_cast<size_t>(s)], " feeds node ",
                              g.nodes[static_cast<size_t>(w)].id, " on accelerator ", d);
        }
      }
    }
  }
  return "";
}

// Whether the accelerator classes fit one accelerator's memory.
bool OneAcceleratorFits(const partition::PartitionGraph& g) {
  const partition::Split one = partition::OneAccelerator(g);
  return partition::Score(g, one, partition::Objective::kThroughput).feasible;
}

PartitionCommand Command(const std::string& strategy, bool warm_start, bool contiguous,
                         uint64_t seed) {
  PartitionCommand cmd;
  cmd.strategy = strategy;
  cmd.seed = seed;
  cmd.contiguous = contiguous;
  cmd.warm_start = warm_start;
  const bool go = strategy == "go" || strategy == "go-fix" || strategy == "go-sample";
  if (go) cmd.model = MLTUNE_SOURCE_DIR "/models/pretrained/partition--go.ckpt";
  // Small budgets keep the test near 30 s on one core: a uniform walk of the solver under the
  // order constraint (latency, --contiguous) costs ~0.1 s on the 200-class graphs.
  cmd.budget = go                                ? 8
               : strategy == "local-search"      ? 3000
               : strategy.starts_with("solver-") ? 20
                                                 : 200;
  return cmd;
}

// The strategies with each GO strategy also cold (no warm start), as "go (cold)".
std::vector<std::pair<std::string, bool>> Variants() {
  std::vector<std::pair<std::string, bool>> out;
  for (const std::string& s : GraphStrategies()) {
    out.emplace_back(s, true);
    if (s == "go" || s == "go-fix" || s == "go-sample") out.emplace_back(s, false);
  }
  return out;
}

std::string Label(const std::string& strategy, bool warm_start) {
  return warm_start ? strategy : strategy + " (cold)";
}

TEST(PartitionValidity, EveryStrategyReturnsAValidSplitOnRandomBranchyDags) {
  constexpr int kGraphs = 8;
  std::map<std::string, std::pair<int, int>> rate;  // label: (valid or rightly refused, runs)
  std::map<std::string, double> seconds;
  for (int i = 0; i < kGraphs; ++i) {
    const std::string text = RandomGraph(1000 + static_cast<uint64_t>(i), i % 2 == 1, 1.15);
    absl::StatusOr<partition::PartitionGraph> g =
        partition::ParsePartitionGraph(text, absl::StrCat("random", i));
    ASSERT_TRUE(g.ok()) << g.status();
    const bool contiguous = i % 4 == 3;
    for (partition::Objective objective :
         {partition::Objective::kThroughput, partition::Objective::kLatency}) {
      for (const auto& [strategy, warm] : Variants()) {
        const std::string label = Label(strategy, warm);
        const std::string where = absl::StrCat(label, " on random", i, " (",
                                               std::string(partition::ObjectiveName(objective)),
                                               contiguous ? ", contiguous" : "", ")");
        ++rate[label].second;
        const auto start = std::chrono::steady_clock::now();
        absl::StatusOr<GraphSplit> r = SplitGraph(
            Command(strategy, warm, contiguous, static_cast<uint64_t>(i)), *g, objective);
        seconds[label] +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (!r.ok()) {
          // One accelerator is the strategy's definition; where the graph exceeds it, the error
          // must say so.
          if (strategy == "one-accelerator" && !OneAcceleratorFits(*g)) {
            EXPECT_NE(r.status().message().find("memory"), std::string::npos) << r.status();
            ++rate[label].first;
            continue;
          }
          ADD_FAILURE() << where << ": " << r.status();
          continue;
        }
        const partition::SplitScore s = partition::Score(*g, r->split, objective);
        std::string error = !s.valid || !s.feasible ? s.error : "";
        if (error.empty() && contiguous) error = FeedsLowerAccelerator(*g, r->split);
        if (!error.empty()) {
          ADD_FAILURE() << where << ": invalid split: " << error;
          continue;
        }
        ++rate[label].first;
      }
    }
  }
  for (const auto& [label, counts] : rate) {
    std::printf("validity %-22s %3d / %3d  %.2f s\n", label.c_str(), counts.first, counts.second,
                seconds[label]);
  }
}

TEST(PartitionValidity, EveryStrategyNamesTheMemoryLimitWhenNoSplitFits) {
  // A limit below the graph's bytes over k accelerators: no split fits.
  const std::string text = RandomGraph(7, false, 0.5);
  absl::StatusOr<partition::PartitionGraph> g = partition::ParsePartitionGraph(text, "tight");
  ASSERT_TRUE(g.ok()) << g.status();
  std::vector<bool> cpu(static_cast<size_t>(g->groups), false);
  for (const partition::PartitionNode& n : g->nodes) {
    if (!n.accelerator_ok) cpu[static_cast<size_t>(n.group)] = true;
  }
  double bytes = 0;
  for (const partition::PartitionNode& n : g->nodes) {
    bytes += cpu[static_cast<size_t>(n.group)] ? 0 : n.bytes;
  }
  ASSERT_GT(bytes, g->accelerators * g->accelerator_bytes);
  for (partition::Objective objective :
       {partition::Objective::kThroughput, partition::Objective::kLatency}) {
    for (const auto& [strategy, warm] : Variants()) {
      absl::StatusOr<GraphSplit> r = SplitGraph(Command(strategy, warm, false, 1), *g, objective);
      const std::string where = absl::StrCat(Label(strategy, warm), " (",
                                             std::string(partition::ObjectiveName(objective)), ")");
      if (r.ok()) {
        ADD_FAILURE() << where << " returned a split where none fits";
        continue;
      }
      EXPECT_NE(r.status().message().find("memory"), std::string::npos)
          << where << ": " << r.status();
    }
  }
}

// GO's partition environment realizes each decision: a proposal over memory, or one whose pieces
// form a cycle under latency, is evaluated as its repair, so cold GO's answer is valid.
TEST(PartitionValidity, GoPartitionEnvironmentEvaluatesOnlyValidSplits) {
  absl::StatusOr<partition::PartitionGraph> g = partition::ParsePartitionGraph(
      R"({"maxSizePerFPGA": 2, "maxFPGAs": 2, "maxCPUs": 1,
        "nodes": [{"id": 1, "supportedOnFpga": 1, "cpuLatency": 9, "fpgaLatency": 1, "size": 1},
                  {"id": 2, "supportedOnFpga": 1, "cpuLatency": 9, "fpgaLatency": 1, "size": 1},
                  {"id": 3, "supportedOnFpga": 1, "cpuLatency": 9, "fpgaLatency": 1, "size": 1},
                  {"id": 4, "supportedOnFpga": 1, "cpuLatency": 9, "fpgaLatency": 1, "size": 1}],
        "edges": [{"sourceId": 1, "destId": 2, "cost": 1}, {"sourceId": 3, "destId": 4,
                   "cost": 1}]})",
      "cross");
  ASSERT_TRUE(g.ok()) << g.status();
  // Devices per class (accelerator - 1): all on one (over memory), and crossed (a cycle).
  for (const std::vector<int32_t>& device :
       {std::vector<int32_t>{0, 0, 0, 0}, std::vector<int32_t>{0, 1, 1, 0}}) {
    std::unique_ptr<opt::rl::GoEnvironment> env =
        opt::rl::MakePartitionEnvironment(*g, partition::Objective::kLatency);
    ASSERT_TRUE(env->realizes());
    opt::rl::GoDecision proposal;
    proposal.device = device;
    EXPECT_FALSE(env->Evaluate(proposal).valid);
    const opt::rl::GoDecision realized = env->Realize(proposal, {});
    EXPECT_TRUE(env->Evaluate(realized).valid);
  }
}

}  // namespace
}  // namespace mltune::client::internal
