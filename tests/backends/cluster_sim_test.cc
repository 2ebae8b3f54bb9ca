// The cluster simulator: makespans, transfers and memory computed by hand on small graphs, the
// queue policies, invalid placements, and properties of random graphs (replay reproduces a run;
// faster links or devices never slow a replayed schedule down; unused devices change nothing).
#include "backends/cluster_sim/cluster_sim.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "costmodels/analytical/analytical.h"
#include "gtest/gtest.h"

namespace mltune::backends::cluster {
namespace {

using costmodels::OpGraph;
using costmodels::OpInput;
using costmodels::OpNode;
using costmodels::OpWeight;
using Pairs = std::vector<std::pair<int32_t, int32_t>>;

constexpr double kTolerance = 1e-12;

// Round numbers: 1 GFLOP/s, memory at 1 GB/s, 1 ms per kernel, links at 100 MB/s with 0.1 ms
// latency. An op of m MFLOP (and few bytes) takes (m + 1) ms; 100 kB cross a link in 1.1 ms.
TargetSpec TestSpec(int64_t devices = 4, int64_t memory_bytes = int64_t{1} << 40) {
  TargetSpec spec;
  spec.name = "test-cluster";
  spec.kind = "gpu-cluster";
  spec.peak_ops["f32"] = 1e9;
  spec.memory.push_back({"hbm", memory_bytes, 1e9});
  spec.kernel_overhead_s = 1e-3;
  spec.devices = devices;
  spec.topology = "all-to-all";
  spec.links.push_back({"test-link", 1e8, 1e-4});
  return spec;
}

ClusterSimulator MakeSimulator(const TargetSpec& spec) {
  absl::StatusOr<ClusterSimulator> sim = ClusterSimulator::Create(spec);
  EXPECT_TRUE(sim.ok()) << sim.status();
  return *std::move(sim);
}

// Appends an f32 op of `mflops` million flops whose result has `output_bytes`.
int32_t AddOp(OpGraph& graph, double mflops, double output_bytes, std::vector<OpInput> inputs = {},
              std::vector<OpWeight> weights = {}) {
  OpNode node;
  node.name = "op" + std::to_string(graph.size());
  node.opcode = "custom-call";
  node.element_type = "f32";
  node.cost.flops = mflops * 1e6;
  for (const OpInput& in : inputs) node.cost.bytes_read += in.bytes;
  node.cost.bytes_written = output_bytes;
  node.output_bytes = output_bytes;
  node.inputs = std::move(inputs);
  node.weights = std::move(weights);
  graph.nodes.push_back(std::move(node));
  return graph.size() - 1;
}

// A -> B: 2 ms then 4 ms, 100 kB between them.
OpGraph Chain() {
  OpGraph graph;
  const int32_t a = AddOp(graph, 1, 1e5);
  AddOp(graph, 3, 1e3, {{a, 1e5}});
  graph.nodes.back().is_output = true;
  graph.LinkUsers();
  return graph;
}

TEST(ClusterSimTest, NodeSecondsIsTheRooflinePlusTheKernelOverhead) {
  const TargetSpec spec = TestSpec();
  const ClusterSimulator sim = MakeSimulator(spec);
  OpGraph graph;
  AddOp(graph, 1, 1e5);  // compute-bound: 1 ms of flops, 0.1 ms of bytes
  AddOp(graph, 1, 5e6);  // memory-bound: 5 ms of bytes
  EXPECT_NEAR(sim.NodeSeconds(graph.nodes[0]), 2e-3, kTolerance);
  EXPECT_NEAR(sim.NodeSeconds(graph.nodes[1]), 6e-3, kTolerance);
  EXPECT_DOUBLE_EQ(sim.NodeSeconds(graph.nodes[1]),
                   costmodels::RooflineSeconds(graph.nodes[1].cost, spec, "f32"));
}

// A node with a measured time (a CPU worker's kernel time) runs for that time, not the roofline's.
TEST(ClusterSimTest, MeasuredNodesRunForTheirMeasuredTime) {
  const ClusterSimulator sim = MakeSimulator(TestSpec());
  OpGraph graph = Chain();
  graph.nodes[0].measured_s = 5e-3;
  EXPECT_DOUBLE_EQ(sim.NodeSeconds(graph.nodes[0]), 5e-3);
  const ClusterResult result = sim.Simulate(graph, {0, 0});
  ASSERT_TRUE(result.valid) << result.error;
  EXPECT_NEAR(result.makespan_s, 9e-3, kTolerance);  // 5 ms measured, then B's 4 ms
}

TEST(ClusterSimTest, ChainOnOneDeviceTakesTheSumOfItsOps) {
  const ClusterSimulator sim = MakeSimulator(TestSpec());
  const ClusterResult result = sim.Simulate(Chain(), {0, 0});
  ASSERT_TRUE(result.valid) << result.error;
  EXPECT_NEAR(result.makespan_s, 6e-3, kTolerance);
  EXPECT_NEAR(result.finish_s[0], 2e-3, kTolerance);
  EXPECT_NEAR(result.finish_s[1], 6e-3, kTolerance);
  EXPECT_NEAR(result.busy_s[0], 6e-3, kTolerance);
  EXPECT_EQ(result.busy_s[1], 0);
  EXPECT_EQ(result.transfers, 0);
  EXPECT_EQ(result.transfer_bytes, 0);
  EXPECT_EQ(result.schedule.device_order[0], (std::vector<int32_t>{0, 1}));
}

TEST(ClusterSimTest, ChainSplitOverTwoDevicesPaysTheLink) {
  const ClusterSimulator sim = MakeSimulator(TestSpec());
  const ClusterResult result = sim.Simulate(Chain(), {0, 1});
  ASSERT_TRUE(result.valid) << result.error;
  // 2 ms, then 0.1 ms latency + 100 kB at 100 MB/s, then 4 ms.
  EXPECT_NEAR(result.makespan_s, 7.1e-3, kTolerance);
  EXPECT_NEAR(result.busy_s[0], 2e-3, kTolerance);
  EXPECT_NEAR(result.busy_s[1], 4e-3, kTolerance);
  EXPECT_EQ(result.transfers, 1);
  EXPECT_EQ(result.transfer_bytes, 1e5);
  EXPECT_EQ(result.schedule.send_order[0], (Pairs{{0, 1}}));
  EXPECT_EQ(result.schedule.recv_order[1], (Pairs{{0, 0}}));
  EXPECT_TRUE(result.schedule.send_order[1].empty());
}

TEST(ClusterSimTest, ForkBranchesOnTwoDevicesRunInParallel) {
  OpGraph graph;
  const int32_t a = AddOp(graph, 1, 1e5);
  AddOp(graph, 3, 1e3, {{a, 1e5}});
  AddOp(graph, 3, 1e3, {{a, 1e5}});
  graph.LinkUsers();
  const ClusterSimulator sim = MakeSimulator(TestSpec());
  const ClusterResult together = sim.Simulate(graph, {0, 0, 0});
  ASSERT_TRUE(together.valid) << together.error;
  EXPECT_NEAR(together.makespan_s, 10e-3, kTolerance);
  const ClusterResult apart = sim.Simulate(graph, {0, 0, 1});
  ASSERT_TRUE(apart.valid) << apart.error;
  EXPECT_NEAR(apart.finish_s[1], 6e-3, kTolerance);
  EXPECT_NEAR(apart.finish_s[2], 7.1e-3, kTolerance);  // 2 + 1.1 + 4 ms
  EXPECT_NEAR(apart.makespan_s, 7.1e-3, kTolerance);
}

TEST(ClusterSimTest, TensorReadTwiceOnOneRemoteDeviceIsSentOnce) {
  OpGraph graph;
  const int32_t a = AddOp(graph, 1, 1e5);
  AddOp(graph, 3, 1e3, {{a, 1e5}});
  AddOp(graph, 3, 1e3, {{a, 5e4}});  // a slice of it: the larger edge is what is sent
  graph.LinkUsers();
  const ClusterResult result = MakeSimulator(TestSpec()).Simulate(graph, {0, 1, 1});
  ASSERT_TRUE(result.valid) << result.error;
  EXPECT_EQ(result.transfers, 1);
  EXPECT_EQ(result.transfer_bytes, 1e5);
  // Both ready at 3.1 ms; FIFO ties go to the lower node id.
  EXPECT_NEAR(result.finish_s[1], 7.1e-3, kTolerance);
  EXPECT_NEAR(result.finish_s[2], 11.1e-3, kTolerance);
  EXPECT_NEAR(result.makespan_s, 11.1e-3, kTolerance);
}

TEST(ClusterSimTest, SendsFromOneDeviceSerialize) {
  OpGraph graph;
  const int32_t a = AddOp(graph, 1, 1e5);
  AddOp(graph, 3, 1e3, {{a, 1e5}});
  AddOp(graph, 3, 1e3, {{a, 1e5}});
  graph.LinkUsers();
  const ClusterResult result = MakeSimulator(TestSpec()).Simulate(graph, {0, 1, 2});
  ASSERT_TRUE(result.valid) << result.error;
  EXPECT_EQ(result.transfers, 2);
  EXPECT_EQ(result.transfer_bytes, 2e5);
  EXPECT_EQ(result.schedule.send_order[0], (Pairs{{0, 1}, {0, 2}}));
  EXPECT_NEAR(result.finish_s[1], 7.1e-3, kTolerance);  // sent 2 - 3.1 ms
  EXPECT_NEAR(result.finish_s[2], 8.2e-3, kTolerance);  // sent 3.1 - 4.2 ms
  EXPECT_NEAR(result.makespan_s, 8.2e-3, kTolerance);
}

TEST(ClusterSimTest, ReceivesOnOneDeviceSerialize) {
  OpGraph graph;
  const int32_t a = AddOp(graph, 1, 1e5);
  const int32_t b = AddOp(graph, 1, 1e5);
  AddOp(graph, 3, 1e3, {{a, 1e5}, {b, 1e5}});
  graph.LinkUsers();
  const ClusterResult result = MakeSimulator(TestSpec()).Simulate(graph, {0, 1, 2});
  ASSERT_TRUE(result.valid) << result.error;
  // Both requested at 2 ms: one arrives at 3.1 ms, the other at 4.2 ms.
  EXPECT_EQ(result.schedule.recv_order[2], (Pairs{{0, 0}, {1, 1}}));
  EXPECT_NEAR(result.makespan_s, 8.2e-3, kTolerance);
}

// X (6 ms, nothing waits for it) and Y (2 ms, feeds Z on the other device) share device 0.
TEST(ClusterSimTest, PriorityToTheCriticalPathShortensTheMakespan) {
  OpGraph graph;
  AddOp(graph, 5, 1e3);
  const int32_t y = AddOp(graph, 1, 1e5);
  AddOp(graph, 5, 1e3, {{y, 1e5}});
  graph.LinkUsers();
  const std::vector<int32_t> placement = {0, 0, 1};
  const ClusterSimulator sim = MakeSimulator(TestSpec());

  // FIFO: both ready at 0, X first (lower id): X 0-6, Y 6-8, send 8-9.1, Z 9.1-15.1 ms.
  const ClusterResult fifo = sim.Simulate(graph, placement);
  ASSERT_TRUE(fifo.valid) << fifo.error;
  EXPECT_EQ(fifo.schedule.device_order[0], (std::vector<int32_t>{0, 1}));
  EXPECT_NEAR(fifo.makespan_s, 15.1e-3, kTolerance);

  // Y first: Y 0-2, X 2-8 while Y is sent 2-3.1 and Z runs 3.1-9.1 ms.
  SimulationOptions options;
  options.policy = QueuePolicy::kPriority;
  options.priority = {0, 1, 0};
  const ClusterResult prioritized = sim.Simulate(graph, placement, options);
  ASSERT_TRUE(prioritized.valid) << prioritized.error;
  EXPECT_EQ(prioritized.schedule.device_order[0], (std::vector<int32_t>{1, 0}));
  EXPECT_NEAR(prioritized.finish_s[0], 8e-3, kTolerance);
  EXPECT_NEAR(prioritized.makespan_s, 9.1e-3, kTolerance);

  // Equal priorities fall back to FIFO.
  options.priority = {7, 7, 7};
  EXPECT_NEAR(sim.Simulate(graph, placement, options).makespan_s, 15.1e-3, kTolerance);
}

TEST(ClusterSimTest, BadPriorityVectorIsInvalid) {
  const ClusterSimulator sim = MakeSimulator(TestSpec());
  SimulationOptions options;
  options.policy = QueuePolicy::kPriority;
  options.priority = {1};
  const ClusterResult result = sim.Simulate(Chain(), {0, 1}, options);
  EXPECT_FALSE(result.valid);
  EXPECT_EQ(result.makespan_s, 0);
  EXPECT_NE(result.error.find("bad priorities: 1 for 2 nodes"), std::string::npos) << result.error;
  // FIFO does not read them.
  options.policy = QueuePolicy::kFifo;
  EXPECT_TRUE(sim.Simulate(Chain(), {0, 1}, options).valid);
}

TEST(ClusterSimTest, BadPlacementsAreInvalid) {
  const ClusterSimulator sim = MakeSimulator(TestSpec());
  const OpGraph graph = Chain();
  const ClusterResult short_placement = sim.Simulate(graph, {0});
  EXPECT_FALSE(short_placement.valid);
  EXPECT_EQ(short_placement.makespan_s, 0);
  EXPECT_NE(short_placement.error.find("1 device ids for 2 nodes"), std::string::npos)
      << short_placement.error;

  const ClusterResult too_high = sim.Simulate(graph, {0, 4});
  EXPECT_FALSE(too_high.valid);
  EXPECT_NE(too_high.error.find("node 1 (op1) is on device 4, outside [0, 4)"), std::string::npos)
      << too_high.error;

  const ClusterResult negative = sim.Simulate(graph, {-1, 0});
  EXPECT_FALSE(negative.valid);
  EXPECT_NE(negative.error.find("node 0 (op0) is on device -1"), std::string::npos)
      << negative.error;
  EXPECT_FALSE(sim.Replay(graph, {0, 4}, Schedule()).valid);
}

// A -> B -> C -> D on one device; A and B read weight 0 (1000 bytes), D weight 1 (500 bytes).
OpGraph MemoryChain() {
  OpGraph graph;
  graph.weight_count = 2;
  graph.weight_bytes = {1000, 500};
  const int32_t a = AddOp(graph, 1, 100, {}, {{0, 1000}});
  const int32_t b = AddOp(graph, 1, 200, {{a, 100}}, {{0, 1000}});
  const int32_t c = AddOp(graph, 1, 300, {{b, 200}});
  AddOp(graph, 1, 50, {{c, 300}}, {{1, 500}});
  graph.nodes.back().is_output = true;
  graph.LinkUsers();
  return graph;
}

TEST(ClusterSimTest, PeakMemoryIsWeightsPlusLiveOutputs) {
  const ClusterResult result = MakeSimulator(TestSpec()).Simulate(MemoryChain(), {0, 0, 0, 0});
  ASSERT_TRUE(result.valid) << result.error;
  // Weights 1500 (weight 0 once); outputs live: A 100, A+B 300, B+C 500 (A freed after B),
  // C+D 350. Without freeing it would be 1500 + 650.
  EXPECT_EQ(result.peak_memory_bytes[0], 2000);
  EXPECT_EQ(result.peak_memory_bytes[1], 0);
}

TEST(ClusterSimTest, OutputIsFreedAfterItsLastLocalUserUnlessItIsAModuleOutput) {
  OpGraph graph;
  const int32_t a = AddOp(graph, 1, 1000);
  const int32_t b = AddOp(graph, 1, 10, {{a, 1000}});
  AddOp(graph, 1, 2000, {{b, 10}});
  graph.LinkUsers();
  const ClusterSimulator sim = MakeSimulator(TestSpec());
  // A is gone once B finishes: max(A + B, B + C) = 2010.
  EXPECT_EQ(sim.Simulate(graph, {0, 0, 0}).peak_memory_bytes[0], 2010);
  graph.nodes[0].is_output = true;  // outputs stay to the end: A + B + C
  EXPECT_EQ(sim.Simulate(graph, {0, 0, 0}).peak_memory_bytes[0], 3010);
}

TEST(ClusterSimTest, SentOutputStaysUntilItsSendCompletesAndTheReceiverHoldsACopy) {
  OpGraph graph;
  const int32_t a = AddOp(graph, 1, 1000);
  AddOp(graph, 1, 200, {{a, 1000}});
  AddOp(graph, 1, 2000);  // independent, starts on device 0 at 2 ms while A is on the wire
  graph.LinkUsers();
  const ClusterResult result = MakeSimulator(TestSpec()).Simulate(graph, {0, 1, 0});
  ASSERT_TRUE(result.valid) << result.error;
  EXPECT_EQ(result.peak_memory_bytes[0], 3000);
  EXPECT_EQ(result.peak_memory_bytes[1], 1200);  // the received copy of A and B's output
}

TEST(ClusterSimTest, OutOfMemoryMakesThePlacementInvalid) {
  const OpGraph graph = MemoryChain();
  EXPECT_TRUE(MakeSimulator(TestSpec(4, 2000)).Simulate(graph, {0, 0, 0, 0}).valid);

  const ClusterResult one_short = MakeSimulator(TestSpec(4, 1999)).Simulate(graph, {0, 0, 0, 0});
  EXPECT_FALSE(one_short.valid);
  EXPECT_EQ(one_short.makespan_s, 0);
  EXPECT_NE(one_short.error.find("out of memory on device 0: needs 2000 bytes"), std::string::npos)
      << one_short.error;
  EXPECT_NE(one_short.error.find("capacity 1999 bytes"), std::string::npos) << one_short.error;
  EXPECT_NE(one_short.error.find("the output of node 2 (op2)"), std::string::npos)
      << one_short.error;

  // Weights alone: device 0 holds weight 0 (1000 bytes) from the start.
  const ClusterResult weights = MakeSimulator(TestSpec(4, 400)).Simulate(graph, {0, 0, 0, 1});
  EXPECT_FALSE(weights.valid);
  EXPECT_EQ(weights.makespan_s, 0);
  EXPECT_NE(weights.error.find("out of memory on device 0: needs 1000 bytes at t=0"),
            std::string::npos)
      << weights.error;

  // Large sizes are also given in binary units.
  OpGraph big;
  AddOp(big, 1, 3.0 * (int64_t{1} << 30));
  const ClusterResult gib = MakeSimulator(TestSpec(1, int64_t{2} << 30)).Simulate(big, {0});
  EXPECT_FALSE(gib.valid);
  EXPECT_NE(gib.error.find("(3.00 GiB)"), std::string::npos) << gib.error;
  EXPECT_NE(gib.error.find("capacity 2147483648 bytes (2.00 GiB)"), std::string::npos) << gib.error;
}

TEST(ClusterSimTest, ReplayRejectsSchedulesOfAnotherPlacement) {
  const ClusterSimulator sim = MakeSimulator(TestSpec());
  const OpGraph graph = Chain();
  const ClusterResult run = sim.Simulate(graph, {0, 1});
  ASSERT_TRUE(run.valid) << run.error;
  const ClusterResult replayed = sim.Replay(graph, {0, 1}, run.schedule);
  ASSERT_TRUE(replayed.valid) << replayed.error;
  EXPECT_EQ(replayed.makespan_s, run.makespan_s);

  const ClusterResult other_placement = sim.Replay(graph, {0, 0}, run.schedule);
  EXPECT_FALSE(other_placement.valid);
  EXPECT_NE(other_placement.error.find("device 1 runs node 1 (op1), which is placed on device 0"),
            std::string::npos)
      << other_placement.error;

  Schedule missing_send = run.schedule;
  missing_send.send_order[0].clear();
  const ClusterResult no_send = sim.Replay(graph, {0, 1}, missing_send);
  EXPECT_FALSE(no_send.valid);
  EXPECT_NE(no_send.error.find("no send channel carries node 0 (op0) from device 0 to device 1"),
            std::string::npos)
      << no_send.error;

  Schedule missing_node = run.schedule;
  missing_node.device_order[1].clear();
  EXPECT_NE(sim.Replay(graph, {0, 1}, missing_node).error.find("node 1 (op1) never runs"),
            std::string::npos);

  // A -> B on one device, recorded as B before A: waits forever.
  Schedule backwards;
  backwards.device_order = {{1, 0}};
  const ClusterResult deadlock = sim.Replay(graph, {0, 0}, backwards);
  EXPECT_FALSE(deadlock.valid);
  EXPECT_EQ(deadlock.makespan_s, 0);
  EXPECT_NE(deadlock.error.find("deadlocks"), std::string::npos) << deadlock.error;
}

TEST(ClusterSimTest, CreateNamesTheSpecAndWhatItLacks) {
  struct Case {
    std::string what;
    void (*breaks)(TargetSpec&);
  };
  const std::vector<Case> cases = {
      {"at least one device", [](TargetSpec& spec) { spec.devices = 0; }},
      {"positive f32 peak", [](TargetSpec& spec) { spec.peak_ops.clear(); }},
      {"memory level", [](TargetSpec& spec) { spec.memory.clear(); }},
      {"memory level", [](TargetSpec& spec) { spec.memory[0].bytes = 0; }},
      {"no link", [](TargetSpec& spec) { spec.links.clear(); }},
      {"no link", [](TargetSpec& spec) { spec.links[0].bandwidth = 0; }},
  };
  for (const Case& c : cases) {
    TargetSpec spec = TestSpec();
    c.breaks(spec);
    absl::StatusOr<ClusterSimulator> sim = ClusterSimulator::Create(spec);
    ASSERT_EQ(sim.status().code(), absl::StatusCode::kInvalidArgument) << c.what;
    EXPECT_NE(sim.status().message().find("'test-cluster'"), std::string::npos) << sim.status();
    EXPECT_NE(sim.status().message().find(c.what), std::string::npos) << sim.status();
  }
  // One device needs no link.
  TargetSpec single = TestSpec(1);
  single.links.clear();
  EXPECT_TRUE(ClusterSimulator::Create(single).ok());
}

// A random DAG: ops of 0.1-10 MFLOP with integer byte sizes (so memory sums are exact), up to 3
// inputs each, some reading shared weights, the sinks and a few others module outputs.
OpGraph RandomGraph(std::mt19937_64& rng) {
  OpGraph graph;
  const int32_t n = std::uniform_int_distribution<int32_t>(20, 80)(rng);
  graph.weight_count = 10;
  for (int32_t w = 0; w < graph.weight_count; ++w) {
    graph.weight_bytes.push_back(std::uniform_int_distribution<int64_t>(10000, 1000000)(rng));
  }
  std::uniform_real_distribution<double> mflops(0.1, 10);
  std::uniform_int_distribution<int64_t> output_bytes(1000, 1000000);
  for (int32_t v = 0; v < n; ++v) {
    std::vector<OpInput> inputs;
    const int32_t fan_in = v == 0 ? 0 : std::uniform_int_distribution<int32_t>(0, 3)(rng);
    for (int32_t k = 0; k < fan_in; ++k) {
      const int32_t producer = std::uniform_int_distribution<int32_t>(0, v - 1)(rng);
      if (std::any_of(inputs.begin(), inputs.end(),
                      [&](const OpInput& in) { return in.node == producer; })) {
        continue;
      }
      const double bytes = graph.nodes[static_cast<size_t>(producer)].output_bytes;
      // Sometimes a part of it.
      inputs.push_back({producer, rng() % 4 == 0 ? std::floor(bytes / 2) : bytes});
    }
    std::vector<OpWeight> weights;
    if (rng() % 2 == 0) {
      const int32_t id = static_cast<int32_t>(rng() % 10);
      weights.push_back({id, graph.weight_bytes[static_cast<size_t>(id)]});
    }
    AddOp(graph, mflops(rng), static_cast<double>(output_bytes(rng)), std::move(inputs),
          std::move(weights));
    graph.nodes.back().is_output = rng() % 10 == 0;
  }
  graph.LinkUsers();
  for (OpNode& node : graph.nodes) node.is_output = node.is_output || node.users.empty();
  return graph;
}

std::vector<int32_t> RandomPlacement(std::mt19937_64& rng, int32_t nodes, int32_t devices) {
  std::vector<int32_t> placement(static_cast<size_t>(nodes));
  for (int32_t& device : placement) device = static_cast<int32_t>(rng() % devices);
  return placement;
}

TEST(ClusterSimPropertyTest, RandomGraphsObeyTheModel) {
  std::mt19937_64 rng(20240607);
  const TargetSpec spec = TestSpec();
  const ClusterSimulator sim = MakeSimulator(spec);
  const Link& link = spec.links[0];
  for (int trial = 0; trial < 50; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const OpGraph graph = RandomGraph(rng);
    const std::vector<int32_t> placement = RandomPlacement(rng, graph.size(), 4);
    const ClusterResult result = sim.Simulate(graph, placement);
    ASSERT_TRUE(result.valid) << result.error;

    // Deterministic.
    const ClusterResult again = sim.Simulate(graph, placement);
    EXPECT_EQ(again.makespan_s, result.makespan_s);
    EXPECT_EQ(again.schedule.device_order, result.schedule.device_order);
    EXPECT_EQ(again.schedule.send_order, result.schedule.send_order);

    // Every op runs once, for its roofline time, after its inputs are on its device.
    double busy = 0, expected_busy = 0, expected_makespan = 0;
    for (double b : result.busy_s) busy += b;
    std::map<std::pair<int32_t, int32_t>, double> expected_transfers;  // (node, dst) -> bytes
    for (int32_t v = 0; v < graph.size(); ++v) {
      const OpNode& node = graph.nodes[static_cast<size_t>(v)];
      const double seconds = sim.NodeSeconds(node);
      expected_busy += seconds;
      const double start = result.finish_s[static_cast<size_t>(v)] - seconds;
      expected_makespan = std::max(expected_makespan, result.finish_s[static_cast<size_t>(v)]);
      for (const OpInput& in : node.inputs) {
        const bool remote =
            placement[static_cast<size_t>(in.node)] != placement[static_cast<size_t>(v)];
        double& sent = expected_transfers[{in.node, placement[static_cast<size_t>(v)]}];
        if (remote) sent = std::max(sent, in.bytes);
        const double arrival = result.finish_s[static_cast<size_t>(in.node)] +
                               (remote ? link.latency_s + in.bytes / link.bandwidth : 0);
        EXPECT_GE(start, arrival - 1e-12) << "node " << v << " input " << in.node;
      }
    }
    int64_t transfers = 0;
    double transfer_bytes = 0;
    for (const auto& [key, bytes] : expected_transfers) {
      if (placement[static_cast<size_t>(key.first)] == key.second) continue;
      ++transfers;
      transfer_bytes += bytes;
    }
    EXPECT_NEAR(busy, expected_busy, 1e-9);
    EXPECT_EQ(result.makespan_s, expected_makespan);
    EXPECT_EQ(result.transfers, transfers);
    EXPECT_EQ(result.transfer_bytes, transfer_bytes);

    // Replaying the schedule reproduces the run exactly.
    const ClusterResult replayed = sim.Replay(graph, placement, result.schedule);
    ASSERT_TRUE(replayed.valid) << replayed.error;
    EXPECT_EQ(replayed.makespan_s, result.makespan_s);
    EXPECT_EQ(replayed.finish_s, result.finish_s);
    EXPECT_EQ(replayed.peak_memory_bytes, result.peak_memory_bytes);
    EXPECT_EQ(replayed.schedule.device_order, result.schedule.device_order);
    EXPECT_EQ(replayed.schedule.recv_order, result.schedule.recv_order);

    // Faster links or devices never slow the same schedule down.
    for (double factor : {2.0, 10.0}) {
      TargetSpec faster_links = spec;
      faster_links.links[0].bandwidth *= factor;
      const ClusterResult fast =
          MakeSimulator(faster_links).Replay(graph, placement, result.schedule);
      ASSERT_TRUE(fast.valid) << fast.error;
      EXPECT_LE(fast.makespan_s, result.makespan_s) << "links x" << factor;
    }
    TargetSpec faster_devices = spec;
    faster_devices.peak_ops["f32"] *= 2;
    const ClusterResult fast =
        MakeSimulator(faster_devices).Replay(graph, placement, result.schedule);
    ASSERT_TRUE(fast.valid) << fast.error;
    EXPECT_LE(fast.makespan_s, result.makespan_s);

    // Idle devices change nothing.
    const ClusterResult wider = MakeSimulator(TestSpec(8)).Simulate(graph, placement);
    ASSERT_TRUE(wider.valid) << wider.error;
    EXPECT_EQ(wider.makespan_s, result.makespan_s);
    EXPECT_EQ(wider.peak_memory_bytes[4], 0);

    // Priorities: any order a priority vector gives replays to the same makespan.
    SimulationOptions options;
    options.policy = QueuePolicy::kPriority;
    for (int32_t v = 0; v < graph.size(); ++v)
      options.priority.push_back(static_cast<double>(rng() % 5));
    const ClusterResult prioritized = sim.Simulate(graph, placement, options);
    ASSERT_TRUE(prioritized.valid) << prioritized.error;
    EXPECT_EQ(sim.Replay(graph, placement, prioritized.schedule).makespan_s,
              prioritized.makespan_s);

    // Exactly the peak fits; one byte less never scores.
    const double peak =
        *std::max_element(result.peak_memory_bytes.begin(), result.peak_memory_bytes.end());
    const ClusterResult fits =
        MakeSimulator(TestSpec(4, static_cast<int64_t>(peak))).Simulate(graph, placement);
    EXPECT_TRUE(fits.valid) << fits.error;
    EXPECT_EQ(fits.makespan_s, result.makespan_s);
    const ClusterResult oom =
        MakeSimulator(TestSpec(4, static_cast<int64_t>(peak) - 1)).Simulate(graph, placement);
    EXPECT_FALSE(oom.valid);
    EXPECT_EQ(oom.makespan_s, 0);
    EXPECT_NE(oom.error.find("out of memory on device"), std::string::npos) << oom.error;
  }
}

// A source feeding 8 independent 100-MFLOP ops (0.101 s each).
OpGraph WideFork() {
  OpGraph graph;
  const int32_t source = AddOp(graph, 1, 1e5);
  for (int i = 0; i < 8; ++i) {
    AddOp(graph, 100, 1e3, {{source, 1e5}});
    graph.nodes.back().is_output = true;
  }
  graph.LinkUsers();
  return graph;
}

TEST(ClusterSimTest, EarliestFinishSpreadsAWideFork) {
  const ClusterSimulator sim = MakeSimulator(TestSpec());
  const OpGraph graph = WideFork();
  const std::vector<int32_t> placement = sim.EarliestFinishPlacement(graph);
  ASSERT_EQ(placement.size(), graph.nodes.size());
  EXPECT_EQ(placement[0], 0);
  EXPECT_EQ(placement[1], 0);  // 0.103 s here, 0.1041 s after a transfer
  EXPECT_EQ(placement[2], 1);
  for (int32_t d = 0; d < 4; ++d) {
    EXPECT_EQ(std::count(placement.begin() + 1, placement.end(), d), 2) << "device " << d;
  }
  const ClusterResult spread = sim.Simulate(graph, placement);
  const ClusterResult serial = sim.Simulate(graph, std::vector<int32_t>(graph.nodes.size(), 0));
  ASSERT_TRUE(spread.valid) << spread.error;
  ASSERT_TRUE(serial.valid) << serial.error;
  EXPECT_NEAR(serial.makespan_s, 0.002 + 8 * 0.101, 1e-9);
  EXPECT_LT(spread.makespan_s, 0.25);
  EXPECT_LT(spread.makespan_s, serial.makespan_s);

  const std::vector<int32_t> single = MakeSimulator(TestSpec(1)).EarliestFinishPlacement(graph);
  EXPECT_EQ(single, std::vector<int32_t>(graph.nodes.size(), 0));
}

TEST(ClusterSimTest, EarliestFinishSkipsDevicesWithoutMemoryLeft) {
  // B would finish first next to A, but both weights do not fit on one device.
  OpGraph graph;
  graph.weight_count = 2;
  graph.weight_bytes = {1e6, 1e6};
  const int32_t a = AddOp(graph, 1, 1e5, {}, {{0, 1e6}});
  AddOp(graph, 3, 1e3, {{a, 1e5}}, {{1, 1e6}});
  graph.LinkUsers();
  const ClusterSimulator roomy = MakeSimulator(TestSpec(2));
  EXPECT_EQ(roomy.EarliestFinishPlacement(graph), (std::vector<int32_t>{0, 0}));
  const ClusterSimulator tight = MakeSimulator(TestSpec(2, 1500000));
  const std::vector<int32_t> placement = tight.EarliestFinishPlacement(graph);
  EXPECT_EQ(placement, (std::vector<int32_t>{0, 1}));
  EXPECT_TRUE(tight.Simulate(graph, placement).valid);
  EXPECT_FALSE(tight.Simulate(graph, {0, 0}).valid);
}

TEST(ClusterSimTest, ShippedGpuSpecsLoadAndNvlinkIsNoSlowerThanPcie) {
  const std::string dir = std::string(MLTUNE_SOURCE_DIR) + "/backends/specs/";
  for (const char* name : {"gpu-2x-nvlink", "gpu-2x-pcie", "gpu-4x-nvlink", "gpu-4x-pcie",
                           "gpu-8x-nvlink", "gpu-8x-pcie"}) {
    absl::StatusOr<TargetSpec> spec = LoadTargetSpec(dir + name + ".json");
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_TRUE(ClusterSimulator::Create(*spec).ok()) << name;
  }
  absl::StatusOr<TargetSpec> nvlink_spec = LoadTargetSpec(dir + "gpu-4x-nvlink.json");
  absl::StatusOr<TargetSpec> pcie_spec = LoadTargetSpec(dir + "gpu-4x-pcie.json");
  ASSERT_TRUE(nvlink_spec.ok() && pcie_spec.ok());
  const ClusterSimulator nvlink = MakeSimulator(*nvlink_spec);
  const ClusterSimulator pcie = MakeSimulator(*pcie_spec);

  // A chain hopping over the 4 devices with 100 MB between ops: ops plus 7 link crossings.
  OpGraph chain;
  std::vector<int32_t> hops;
  for (int32_t i = 0; i < 8; ++i) {
    std::vector<OpInput> inputs;
    if (i > 0) inputs.push_back({i - 1, 1e8});
    AddOp(chain, 1e4, 1e8, std::move(inputs));
    hops.push_back(i % 4);
  }
  chain.LinkUsers();
  double compute = 0;
  for (const OpNode& node : chain.nodes) compute += nvlink.NodeSeconds(node);
  const ClusterResult fast = nvlink.Simulate(chain, hops);
  const ClusterResult slow = pcie.Simulate(chain, hops);
  ASSERT_TRUE(fast.valid) << fast.error;
  ASSERT_TRUE(slow.valid) << slow.error;
  EXPECT_NEAR(fast.makespan_s, compute + 7 * (2e-6 + 1e8 / 300e9), 1e-9);
  EXPECT_NEAR(slow.makespan_s, compute + 7 * (5e-6 + 1e8 / 25e9), 1e-9);
  EXPECT_LT(fast.makespan_s, slow.makespan_s);

  // The PCIe run's schedule replayed over NVLink.
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 10; ++trial) {
    const OpGraph graph = RandomGraph(rng);
    const std::vector<int32_t> placement = RandomPlacement(rng, graph.size(), 4);
    const ClusterResult over_pcie = pcie.Simulate(graph, placement);
    ASSERT_TRUE(over_pcie.valid) << over_pcie.error;
    const ClusterResult over_nvlink = nvlink.Replay(graph, placement, over_pcie.schedule);
    ASSERT_TRUE(over_nvlink.valid) << over_nvlink.error;
    EXPECT_LE(over_nvlink.makespan_s, over_pcie.makespan_s);
  }
}

}  // namespace
}  // namespace mltune::backends::cluster
