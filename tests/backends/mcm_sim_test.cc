// MCM simulator: hand-computed stage times and transfers on tiny graphs, each constraint caught on
// a crafted partition (in the documented order), and properties on random DAGs: more bandwidth or
// more peak never hurts, and decoded advance vectors are acyclic with no skipped chip.
#include "backends/mcm_sim/mcm_sim.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace mltune::backends::mcm {
namespace {

using costmodels::OpCost;
using costmodels::OpGraph;
using costmodels::OpInput;
using costmodels::OpNode;
using costmodels::OpWeight;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Round numbers so the expected times below can be worked out by hand: s8 at 1 TOPS, f32 at half
// that, SRAM of 64 MB at 100 GB/s, 1 us per kernel, 1 GB/s links with 1 us latency.
TargetSpec TestSpec(int64_t devices = 4) {
  TargetSpec spec;
  spec.name = "test-mcm";
  spec.kind = "mcm";
  spec.peak_ops = {{"s8", 1e12}, {"f32", 0.5e12}};
  spec.memory = {{"sram", 64'000'000, 1e11}};
  spec.kernel_overhead_s = 1e-6;
  spec.devices = devices;
  spec.topology = "ring";
  spec.links = {{"d2d", 1e9, 1e-6}};
  return spec;
}

McmSimulator Sim(const TargetSpec& spec) {
  absl::StatusOr<McmSimulator> sim = McmSimulator::Create(spec);
  EXPECT_TRUE(sim.ok()) << sim.status();
  return *std::move(sim);
}

OpCost Cost(double flops, double bytes_read = 0, double bytes_written = 0,
            double transcendentals = 0) {
  OpCost cost;
  cost.flops = flops;
  cost.transcendentals = transcendentals;
  cost.bytes_read = bytes_read;
  cost.bytes_written = bytes_written;
  return cost;
}

int32_t AddWeight(OpGraph& graph, double bytes) {
  graph.weight_bytes.push_back(bytes);
  return graph.weight_count++;
}

int32_t AddOp(OpGraph& graph, std::string name, std::string type, OpCost cost, double output_bytes,
              std::vector<OpInput> inputs = {}, std::vector<int32_t> weight_ids = {}) {
  OpNode node;
  node.name = std::move(name);
  node.opcode = "custom";
  node.element_type = std::move(type);
  node.cost = cost;
  node.output_bytes = output_bytes;
  node.inputs = std::move(inputs);
  for (int32_t id : weight_ids) {
    node.weights.push_back({id, graph.weight_bytes[static_cast<size_t>(id)]});
  }
  graph.nodes.push_back(std::move(node));
  return graph.size() - 1;
}

// x -> y -> z with weights on x and y.
OpGraph ThreeOpChain() {
  OpGraph graph;
  const int32_t w0 = AddWeight(graph, 1000);
  const int32_t w1 = AddWeight(graph, 500);
  const int32_t x = AddOp(graph, "x", "s8", Cost(2e9, 5e5, 5e5), 1e5, {}, {w0});
  const int32_t y = AddOp(graph, "y", "f32", Cost(1e9, 2e8, 2e8), 2e6, {{x, 1e5}}, {w1});
  AddOp(graph, "z", "s8", Cost(6e9, 0, 0, 1e9), 4e3, {{y, 2e6}});
  graph.LinkUsers();
  return graph;
}

TEST(McmSimTest, ChainOverTwoChipsHandComputed) {
  const McmSimulator sim = Sim(TestSpec());
  const OpGraph graph = ThreeOpChain();
  const McmResult r = sim.Simulate(graph, {0, 0, 1});
  ASSERT_TRUE(r.valid) << r.error;
  EXPECT_EQ(r.violated, Constraint::kNone);
  EXPECT_EQ(r.error, "");
  ASSERT_EQ(r.chips.size(), 4u);
  // x: compute 2e9 / 1e12 = 2 ms beats memory 1e6 / 1e11 = 10 us; + 1 us = 2.001 ms.
  // y: f32 compute 1e9 / 0.5e12 = 2 ms, memory 4e8 / 1e11 = 4 ms; + 1 us = 4.001 ms.
  EXPECT_NEAR(r.chips[0].compute_s, 6.002e-3, 1e-12);
  // z: (6e9 flops + 1e9 transcendentals) / 1e12 = 7 ms; + 1 us.
  EXPECT_NEAR(r.chips[1].compute_s, 7.001e-3, 1e-12);
  // y's 2 MB cross hop 0->1: 2e6 / 1e9 = 2 ms + 1 us latency, charged to chip 0.
  EXPECT_NEAR(r.chips[0].transfer_s, 2.001e-3, 1e-12);
  EXPECT_EQ(r.chips[1].transfer_s, 0);
  EXPECT_EQ(r.chips[2].compute_s, 0);
  EXPECT_EQ(r.chips[0].ops, 2);
  EXPECT_EQ(r.chips[1].ops, 1);
  EXPECT_EQ(r.chips[3].ops, 0);
  // Chip 0: 6.002 + 2.001 ms beats chip 1's 7.001 ms.
  EXPECT_NEAR(r.stage_seconds, 8.003e-3, 1e-12);
  EXPECT_NEAR(r.throughput, 1 / 8.003e-3, 1e-6);
  EXPECT_EQ(r.bottleneck_chip, 0);
  EXPECT_EQ(r.chips_used, 2);
  EXPECT_DOUBLE_EQ(r.transfer_bytes, 2e6);
  // SRAM: chip 0 holds both weights and its largest result (y's 2 MB); chip 1 receives y's tensor
  // and holds z's result.
  EXPECT_DOUBLE_EQ(r.chips[0].sram_bytes, 1000 + 500 + 2e6);
  EXPECT_DOUBLE_EQ(r.chips[1].sram_bytes, 2e6 + 4e3);

  // All on one chip: 13.003 ms and no transfer, so the split is faster.
  const McmResult one = sim.Simulate(graph, {0, 0, 0});
  ASSERT_TRUE(one.valid) << one.error;
  EXPECT_NEAR(one.stage_seconds, 13.003e-3, 1e-12);
  EXPECT_EQ(one.transfer_bytes, 0);
  EXPECT_EQ(one.chips_used, 1);
  EXPECT_GT(r.throughput, one.throughput);

  // The same partition shifted up the ring costs the same.
  const McmResult shifted = sim.Simulate(graph, {2, 2, 3});
  ASSERT_TRUE(shifted.valid) << shifted.error;
  EXPECT_DOUBLE_EQ(shifted.stage_seconds, r.stage_seconds);
  EXPECT_EQ(shifted.bottleneck_chip, 2);
}

TEST(McmSimTest, ForwardingChipPaysForTheHop) {
  // a (chip 0) feeds b (chip 1) and c, d (chip 2): a's tensor reaches chip 2 through chip 1.
  OpGraph graph;
  const int32_t a = AddOp(graph, "a", "s8", Cost(1e6), 3e6);
  AddOp(graph, "b", "s8", Cost(1e6), 1e3, {{a, 1e6}});
  AddOp(graph, "c", "s8", Cost(1e6), 1e3, {{a, 3e6}});
  AddOp(graph, "d", "s8", Cost(1e6), 1e3, {{a, 2e6}});
  graph.LinkUsers();
  const McmResult r = Sim(TestSpec()).Simulate(graph, {0, 1, 2, 2});
  ASSERT_TRUE(r.valid) << r.error;
  // Every op: 1e6 / 1e12 = 1 us + 1 us overhead.
  EXPECT_NEAR(r.chips[0].compute_s, 2e-6, 1e-15);
  EXPECT_NEAR(r.chips[2].compute_s, 4e-6, 1e-15);
  // Chip 0 sends a's tensor to chip 1 (1 MB: 1 ms + 1 us) and, once for c and d, the larger 3 MB
  // edge towards chip 2 (3 ms + 1 us).
  EXPECT_NEAR(r.chips[0].transfer_s, 4.002e-3, 1e-12);
  // Chip 1 forwards the 3 MB on hop 1->2.
  EXPECT_NEAR(r.chips[1].transfer_s, 3.001e-3, 1e-12);
  EXPECT_EQ(r.chips[2].transfer_s, 0);
  EXPECT_DOUBLE_EQ(r.transfer_bytes, 1e6 + 2 * 3e6);
  EXPECT_NEAR(r.stage_seconds, 4.004e-3, 1e-12);
  EXPECT_EQ(r.bottleneck_chip, 0);
  EXPECT_EQ(r.chips_used, 3);
  // Chip 2 buffers a's tensor once, at the larger edge.
  EXPECT_DOUBLE_EQ(r.chips[2].sram_bytes, 3e6 + 1e3);
  EXPECT_DOUBLE_EQ(r.chips[1].sram_bytes, 1e6 + 1e3);
  EXPECT_DOUBLE_EQ(r.chips[0].sram_bytes, 3e6);
}

void ExpectInvalid(const McmResult& r, Constraint constraint) {
  EXPECT_FALSE(r.valid);
  EXPECT_EQ(r.violated, constraint) << r.error;
  EXPECT_THAT(r.error, StartsWith(std::string(ConstraintName(constraint)) + ": "));
  // Never scored.
  EXPECT_EQ(r.stage_seconds, 0);
  EXPECT_EQ(r.throughput, 0);
}

TEST(McmSimTest, ConstraintNames) {
  EXPECT_STREQ(ConstraintName(Constraint::kShape), "shape");
  EXPECT_STREQ(ConstraintName(Constraint::kAcyclic), "acyclic");
  EXPECT_STREQ(ConstraintName(Constraint::kSkippedChip), "skipped-chip");
  EXPECT_STREQ(ConstraintName(Constraint::kTriangle), "triangle");
  EXPECT_STREQ(ConstraintName(Constraint::kSramCapacity), "sram-capacity");
}

TEST(McmSimTest, ShapeViolations) {
  const McmSimulator sim = Sim(TestSpec());
  const OpGraph graph = ThreeOpChain();
  McmResult r = sim.Simulate(graph, {0, 0});
  ExpectInvalid(r, Constraint::kShape);
  EXPECT_THAT(r.error, HasSubstr("2 chip ids for 3 ops"));
  r = sim.Simulate(graph, {0, 4, 4});
  ExpectInvalid(r, Constraint::kShape);
  EXPECT_THAT(r.error, HasSubstr("op 'y'"));
  EXPECT_THAT(r.error, HasSubstr("chip 4"));
  r = sim.Simulate(graph, {-1, 0, 0});
  ExpectInvalid(r, Constraint::kShape);
  EXPECT_THAT(r.error, HasSubstr("op 'x'"));
}

TEST(McmSimTest, AcyclicViolationIsCheckedBeforeSkippedChip) {
  const McmSimulator sim = Sim(TestSpec());
  const OpGraph graph = ThreeOpChain();
  McmResult r = sim.Simulate(graph, {1, 0, 1});
  ExpectInvalid(r, Constraint::kAcyclic);
  EXPECT_EQ(r.error,
            "acyclic: op 'x' on chip 1 feeds op 'y' on chip 0 (data must flow from lower to higher "
            "chip ids)");
  // Chip 1 is skipped too, but acyclic comes first.
  r = sim.Simulate(graph, {0, 2, 0});
  ExpectInvalid(r, Constraint::kAcyclic);
  EXPECT_THAT(r.error, HasSubstr("op 'y' on chip 2 feeds op 'z' on chip 0"));
}

TEST(McmSimTest, SkippedChip) {
  OpGraph graph;
  AddOp(graph, "p", "s8", Cost(1e6), 1e3);
  AddOp(graph, "q", "s8", Cost(1e6), 1e3);
  AddOp(graph, "r", "s8", Cost(1e6), 1e3);
  graph.LinkUsers();
  const McmSimulator sim = Sim(TestSpec());
  McmResult r = sim.Simulate(graph, {1, 3, 3});
  ExpectInvalid(r, Constraint::kSkippedChip);
  EXPECT_THAT(r.error, HasSubstr("chip 2 holds no op"));
  EXPECT_THAT(r.error, HasSubstr("chip 1 (op 'p')"));
  EXPECT_THAT(r.error, HasSubstr("chip 3 (op 'q')"));
  // Independent ops on consecutive chips that do not start at 0 are fine.
  r = sim.Simulate(graph, {1, 2, 3});
  EXPECT_TRUE(r.valid) << r.error;
  EXPECT_EQ(r.chips_used, 3);
}

TEST(McmSimTest, Triangle) {
  // a -> b -> c and a -> c.
  OpGraph graph;
  const int32_t a = AddOp(graph, "a", "s8", Cost(1e6), 1e3);
  const int32_t b = AddOp(graph, "b", "s8", Cost(1e6), 1e3, {{a, 1e3}});
  AddOp(graph, "c", "s8", Cost(1e6), 1e3, {{b, 1e3}, {a, 1e3}});
  graph.LinkUsers();
  const McmSimulator sim = Sim(TestSpec());
  McmResult r = sim.Simulate(graph, {0, 1, 2});
  ExpectInvalid(r, Constraint::kTriangle);
  EXPECT_THAT(r.error, HasSubstr("chips 0 -> 1 -> 2"));
  EXPECT_THAT(r.error, HasSubstr("op 'a' on chip 0 feeds op 'b' on chip 1"));
  EXPECT_THAT(r.error, HasSubstr("op 'b' on chip 1 feeds op 'c' on chip 2"));
  EXPECT_THAT(r.error, HasSubstr("op 'a' on chip 0 feeds op 'c' on chip 2"));
  // Without the a -> c dependency crossing chips there is no triangle.
  r = sim.Simulate(graph, {0, 1, 1});
  EXPECT_TRUE(r.valid) << r.error;
  r = sim.Simulate(graph, {0, 0, 1});
  EXPECT_TRUE(r.valid) << r.error;
}

TEST(McmSimTest, SramCapacity) {
  TargetSpec spec = TestSpec();
  spec.memory[0].bytes = 1'000'000;
  const McmSimulator sim = Sim(spec);

  OpGraph big;
  const int32_t w = AddWeight(big, 2e6);
  const int32_t a = AddOp(big, "a", "s8", Cost(1e6), 1e3);
  AddOp(big, "heavy", "s8", Cost(1e6), 1e3, {{a, 1e3}}, {w});
  big.LinkUsers();
  McmResult r = sim.Simulate(big, {0, 1});
  ExpectInvalid(r, Constraint::kSramCapacity);
  EXPECT_THAT(r.error, HasSubstr("chip 1 needs 2002000 bytes"));
  EXPECT_THAT(r.error, HasSubstr("holds 1000000 bytes"));
  EXPECT_THAT(r.error, HasSubstr("op 'heavy'"));

  // A 600 kB weight read by two ops on one chip is stored once: 600 kB + 1 kB result fits.
  OpGraph shared;
  const int32_t s = AddWeight(shared, 6e5);
  const int32_t p = AddOp(shared, "p", "s8", Cost(1e6), 1e3, {}, {s});
  AddOp(shared, "q", "s8", Cost(1e6), 1e3, {{p, 1e3}}, {s});
  shared.LinkUsers();
  r = sim.Simulate(shared, {0, 0});
  ASSERT_TRUE(r.valid) << r.error;
  EXPECT_DOUBLE_EQ(r.chips[0].sram_bytes, 6e5 + 1e3);
  // On two chips each holds its copy, and each fits.
  r = sim.Simulate(shared, {0, 1});
  ASSERT_TRUE(r.valid) << r.error;
  EXPECT_DOUBLE_EQ(r.chips[1].sram_bytes, 6e5 + 1e3 + 1e3);

  // Two distinct 600 kB weights on one chip do not fit.
  OpGraph distinct;
  const int32_t d0 = AddWeight(distinct, 6e5);
  const int32_t d1 = AddWeight(distinct, 6e5);
  const int32_t u = AddOp(distinct, "u", "s8", Cost(1e6), 1e3, {}, {d0});
  AddOp(distinct, "v", "s8", Cost(1e6), 1e3, {{u, 1e3}}, {d1});
  distinct.LinkUsers();
  r = sim.Simulate(distinct, {0, 0});
  ExpectInvalid(r, Constraint::kSramCapacity);
  EXPECT_THAT(r.error, HasSubstr("chip 0 needs 1201000 bytes"));
  EXPECT_TRUE(sim.Simulate(distinct, {0, 1}).valid);
}

TEST(McmSimTest, EmptyGraphIsValidWithoutThroughput) {
  const McmResult r = Sim(TestSpec()).Simulate(OpGraph{}, {});
  EXPECT_TRUE(r.valid) << r.error;
  EXPECT_EQ(r.throughput, 0);
  EXPECT_EQ(r.chips_used, 0);
  EXPECT_EQ(r.bottleneck_chip, -1);
  EXPECT_EQ(r.chips.size(), 4u);
}

TEST(McmSimTest, DecodeAdvances) {
  const McmSimulator sim = Sim(TestSpec(4));
  EXPECT_EQ(sim.DecodeAdvances({1, 0, 1, 1, 0, 1, 1, 1}),
            (std::vector<int32_t>{0, 0, 1, 2, 2, 3, 3, 3}));
  EXPECT_EQ(sim.DecodeAdvances({0, 0, 0}), (std::vector<int32_t>{0, 0, 0}));
  EXPECT_TRUE(sim.DecodeAdvances({}).empty());
}

// A random DAG with mostly short edges (as in real models), random types, costs and shared weights.
OpGraph RandomDag(std::mt19937_64& rng) {
  OpGraph graph;
  std::uniform_int_distribution<int32_t> size(20, 60);
  std::uniform_real_distribution<double> flops(1e6, 5e9), bytes(1e3, 4e6);
  const int32_t n = size(rng);
  for (int32_t i = 0; i < 8; ++i) AddWeight(graph, bytes(rng));
  for (int32_t i = 0; i < n; ++i) {
    std::vector<OpInput> inputs;
    if (i > 0) {
      const int32_t fan_in = 1 + static_cast<int32_t>(rng() % 2);
      for (int32_t k = 0; k < fan_in; ++k) {
        const int32_t back = 1 + static_cast<int32_t>(rng() % (k == 0 ? 2 : 6));
        const int32_t producer = std::max(0, i - back);
        bool listed = false;
        for (const OpInput& in : inputs) listed |= in.node == producer;
        if (!listed) inputs.push_back({producer, bytes(rng)});
      }
    }
    std::vector<int32_t> weights;
    if (rng() % 2 == 0) weights.push_back(static_cast<int32_t>(rng() % 8));
    AddOp(graph, "op." + std::to_string(i), rng() % 3 == 0 ? "f32" : "s8",
          Cost(flops(rng), bytes(rng), bytes(rng), rng() % 4 == 0 ? flops(rng) / 10 : 0),
          bytes(rng), std::move(inputs), std::move(weights));
  }
  graph.LinkUsers();
  return graph;
}

TEST(McmSimTest, MoreBandwidthOrPeakNeverLowersThroughput) {
  const TargetSpec spec = TestSpec(8);
  TargetSpec fast_links = spec;
  fast_links.links[0].bandwidth *= 2;
  TargetSpec fast_chips = spec;
  for (auto& [type, ops] : fast_chips.peak_ops) ops *= 2;
  const McmSimulator sim = Sim(spec), sim_links = Sim(fast_links), sim_chips = Sim(fast_chips);

  std::mt19937_64 rng(7);
  int32_t valid = 0, transfers = 0, compared = 0;
  for (int32_t g = 0; g < 50; ++g) {
    const OpGraph graph = RandomDag(rng);
    for (int32_t trial = 0; trial < 20; ++trial) {
      std::vector<int32_t> advance(static_cast<size_t>(graph.size()));
      for (int32_t& a : advance) a = rng() % 8 == 0 ? 1 : 0;
      const std::vector<int32_t> partition = sim.DecodeAdvances(advance);
      ASSERT_EQ(partition.size(), advance.size());
      const McmResult r = sim.Simulate(graph, partition);
      // Non-decreasing ids along the topological order: never acyclic or skipped-chip.
      EXPECT_NE(r.violated, Constraint::kShape) << r.error;
      EXPECT_NE(r.violated, Constraint::kAcyclic) << r.error;
      EXPECT_NE(r.violated, Constraint::kSkippedChip) << r.error;
      ++compared;
      if (!r.valid) continue;
      ++valid;
      if (r.transfer_bytes > 0) ++transfers;
      EXPECT_GT(r.throughput, 0);
      const McmResult links = sim_links.Simulate(graph, partition);
      const McmResult chips = sim_chips.Simulate(graph, partition);
      ASSERT_TRUE(links.valid && chips.valid);
      EXPECT_GE(links.throughput, r.throughput);
      EXPECT_GE(chips.throughput, r.throughput);
      // Faster links leave compute alone; faster chips leave transfers alone.
      EXPECT_EQ(links.chips[0].compute_s, r.chips[0].compute_s);
      EXPECT_EQ(chips.transfer_bytes, r.transfer_bytes);
    }
  }
  EXPECT_EQ(compared, 1000);
  // The property must have been exercised on many partitions that move data between chips.
  EXPECT_GT(valid, 400);
  EXPECT_GT(transfers, 350);
}

OpGraph Chain(int32_t length, double flops, double edge_bytes) {
  OpGraph graph;
  for (int32_t i = 0; i < length; ++i) {
    std::vector<OpInput> inputs;
    if (i > 0) inputs.push_back({i - 1, edge_bytes});
    AddOp(graph, "op." + std::to_string(i), "s8", Cost(flops, 1e3, 1e3), edge_bytes,
          std::move(inputs));
  }
  graph.LinkUsers();
  return graph;
}

TEST(McmSimTest, BalancedPartitionOfAChain) {
  const McmSimulator sim = Sim(TestSpec(4));
  // Equal, light ops with big edges: splitting does not pay, so the balanced partition may stay
  // on one chip but is never worse.
  const OpGraph light = Chain(8, 1e6, 4e6);
  std::vector<int32_t> partition = sim.BalancedPartition(light);
  McmResult balanced = sim.Simulate(light, partition);
  McmResult one = sim.Simulate(light, std::vector<int32_t>(8, 0));
  ASSERT_TRUE(balanced.valid) << balanced.error;
  ASSERT_TRUE(one.valid) << one.error;
  EXPECT_GE(balanced.throughput, one.throughput);
  EXPECT_EQ(balanced.chips_used, 1);

  // 32 ops of 10 ms each with 1 kB edges: four chips of 8 ops each.
  const OpGraph heavy = Chain(32, 1e10, 1e3);
  partition = sim.BalancedPartition(heavy);
  balanced = sim.Simulate(heavy, partition);
  one = sim.Simulate(heavy, std::vector<int32_t>(32, 0));
  ASSERT_TRUE(balanced.valid) << balanced.error;
  EXPECT_EQ(balanced.chips_used, 4);
  EXPECT_EQ(partition.front(), 0);
  EXPECT_EQ(partition[8], 1);
  EXPECT_EQ(partition.back(), 3);
  EXPECT_GT(balanced.throughput, 3.9 * one.throughput);
  // Deterministic.
  EXPECT_EQ(sim.BalancedPartition(heavy), partition);
}

TEST(McmSimTest, BalancedPartitionAvoidsOverfullSram) {
  // Each op reads its own 40 MB weight and two do not fit in one chip's 64 MB, so the balanced
  // partition must put every op on its own chip.
  OpGraph graph;
  for (int32_t i = 0; i < 4; ++i) {
    const int32_t w = AddWeight(graph, 4e7);
    std::vector<OpInput> inputs;
    if (i > 0) inputs.push_back({i - 1, 1e3});
    AddOp(graph, "op." + std::to_string(i), "s8", Cost(1e6), 1e3, std::move(inputs), {w});
  }
  graph.LinkUsers();
  const McmSimulator sim = Sim(TestSpec(4));
  EXPECT_EQ(sim.Simulate(graph, {0, 0, 0, 0}).violated, Constraint::kSramCapacity);
  const McmResult r = sim.Simulate(graph, sim.BalancedPartition(graph));
  ASSERT_TRUE(r.valid) << r.error;
  EXPECT_EQ(r.chips_used, 4);
}

TEST(McmSimTest, BalancedPartitionSpreadsWeightsWhenComputeIsLopsided) {
  // All the compute is in the first op, all the weights in the last three (30 MB each, 64 MB per
  // chip): cutting by compute alone leaves the three weights on one chip, cutting by compute and
  // weights together spreads them.
  OpGraph graph;
  AddOp(graph, "heavy", "s8", Cost(1e10), 1e3, {}, {});
  for (int32_t i = 1; i < 4; ++i) {
    const int32_t w = AddWeight(graph, 3e7);
    AddOp(graph, "op." + std::to_string(i), "s8", Cost(1e3), 1e3, {{i - 1, 1e3}}, {w});
  }
  graph.LinkUsers();
  const McmSimulator sim = Sim(TestSpec(4));
  EXPECT_EQ(sim.Simulate(graph, {0, 1, 1, 1}).violated, Constraint::kSramCapacity);
  const McmResult r = sim.Simulate(graph, sim.BalancedPartition(graph));
  ASSERT_TRUE(r.valid) << r.error;
  EXPECT_GE(r.chips_used, 2);
}

TEST(McmSimTest, CreateRejectsBadSpecs) {
  TargetSpec tpu = TestSpec();
  tpu.kind = "tpu";
  absl::StatusOr<McmSimulator> sim = McmSimulator::Create(tpu);
  ASSERT_EQ(sim.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(sim.status().message()), HasSubstr("'test-mcm'"));
  EXPECT_THAT(std::string(sim.status().message()), HasSubstr("not 'mcm'"));

  TargetSpec too_many = TestSpec(65);
  EXPECT_THAT(std::string(McmSimulator::Create(too_many).status().message()),
              HasSubstr("65 devices"));
  EXPECT_FALSE(McmSimulator::Create(TestSpec(0)).ok());
  EXPECT_TRUE(McmSimulator::Create(TestSpec(64)).ok());

  TargetSpec no_links = TestSpec();
  no_links.links[0].bandwidth = 0;
  EXPECT_THAT(std::string(McmSimulator::Create(no_links).status().message()), HasSubstr("no link"));
  TargetSpec no_peak = TestSpec();
  no_peak.peak_ops.clear();
  EXPECT_THAT(std::string(McmSimulator::Create(no_peak).status().message()), HasSubstr("peak"));
  TargetSpec no_memory = TestSpec();
  no_memory.memory.clear();
  EXPECT_THAT(std::string(McmSimulator::Create(no_memory).status().message()),
              HasSubstr("memory level"));
}

TEST(McmSimTest, ShippedSpec) {
  absl::StatusOr<TargetSpec> spec =
      LoadTargetSpec(std::string(MLTUNE_SOURCE_DIR) + "/backends/specs/mcm-36.json");
  ASSERT_TRUE(spec.ok()) << spec.status();
  const McmSimulator sim = Sim(*spec);
  EXPECT_EQ(sim.chips(), 36);
  // 200 ops of 1 GOP (about 42 us each at 24 TOPS) passing 64 kB along.
  const OpGraph chain = Chain(200, 1e9, 64e3);
  const McmResult r = sim.Simulate(chain, sim.BalancedPartition(chain));
  ASSERT_TRUE(r.valid) << r.error;
  EXPECT_GT(r.chips_used, 1);
  EXPECT_LE(r.chips_used, 36);
  EXPECT_GT(r.throughput, sim.Simulate(chain, std::vector<int32_t>(200, 0)).throughput);
}

}  // namespace
}  // namespace mltune::backends::mcm
