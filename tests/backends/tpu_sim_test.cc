// The TPU simulator on hand-computed kernels: MXU padding, operand re-reads across tiles, VMEM
// capacity, double buffering, overheads, opaque kernels, the seeded noise model, and properties
// (more HBM bandwidth or a higher peak never makes a kernel slower; an invalid tile never scores).
#include "backends/tpu_sim/tpu_sim.h"

#include <cmath>
#include <memory>
#include <random>

#include "absl/strings/match.h"
#include "costmodels/analytical/kernels.h"
#include "costmodels/analytical/op_graph.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"

namespace mltune::backends::tpu {
namespace {

using costmodels::KernelSummary;

TargetSpec Spec(double hbm_bandwidth = 1e12, double peak = 100e12) {
  TargetSpec spec;
  spec.name = "test-core";
  spec.kind = "tpu";
  spec.clock_ghz = 1.0;
  spec.peak_ops = {{"f32", peak}, {"bf16", 4 * peak}};
  spec.memory = {{"hbm", int64_t{1} << 34, hbm_bandwidth}, {"vmem", 16 << 20, 10e12}};
  spec.matrix_unit_rows = spec.matrix_unit_cols = 128;
  spec.matrix_units = 1;
  spec.vector_lanes = 1024;
  spec.kernel_overhead_s = 2e-6;
  return spec;
}

TpuSimulator Sim(const TargetSpec& spec = Spec(), TpuSimOptions options = {}) {
  options.step_overhead_s = 0.5e-6;
  absl::StatusOr<TpuSimulator> sim = TpuSimulator::Create(spec, options);
  EXPECT_TRUE(sim.ok()) << sim.status();
  return *std::move(sim);
}

KernelSummary Matmul(int64_t m, int64_t n, int64_t k, int64_t element_bytes = 4) {
  KernelSummary s;
  s.name = "dot";
  s.element_type = element_bytes == 4 ? "f32" : "bf16";
  s.element_bytes = element_bytes;
  s.matmul = true;
  s.mm = {1, m, n, k};
  s.matmul_element_bytes = element_bytes;
  s.matrix_flops = 2.0 * m * n * k;
  s.matmul_input_bytes = double(element_bytes) * (m * k + k * n);
  s.output_bytes = double(element_bytes) * m * n;
  s.rows = m;
  s.cols = n;
  return s;
}

KernelSummary Elementwise(int64_t rows, int64_t cols, double ops_per_element) {
  KernelSummary s;
  s.name = "add";
  s.element_type = "f32";
  s.rows = rows;
  s.cols = cols;
  s.vector_flops = ops_per_element * rows * cols;
  s.other_input_bytes = 8.0 * rows * cols;  // two f32 inputs
  s.output_bytes = 4.0 * rows * cols;
  return s;
}

TEST(TpuSimTest, MatmulTiledByHand) {
  TpuSimulator sim = Sim();
  const KernelTiming t = sim.SimulateKernel(Matmul(256, 256, 256), {128, 128, 256, true});
  ASSERT_TRUE(t.valid) << t.error;
  // 2 x 2 output tiles, one k step; nothing to pad.
  EXPECT_EQ(t.steps, 4);
  EXPECT_DOUBLE_EQ(t.padded_matrix_flops, 2.0 * 256 * 256 * 256);
  const double compute = 2.0 * 256 * 256 * 256 / 100e12;
  EXPECT_DOUBLE_EQ(t.compute_s, compute);
  // A (256 KiB) is read once per column block (2), B once per row block (2), C written once.
  const double operand = 256.0 * 256 * 4;
  EXPECT_DOUBLE_EQ(t.hbm_bytes, 2 * operand + 2 * operand + operand);
  const double dma = t.hbm_bytes / 1e12;
  EXPECT_DOUBLE_EQ(t.dma_s, dma);
  // Double-buffered: first DMA + last compute, then 3 steps at the slower of the two.
  const double c = compute / 4, d = dma / 4;
  EXPECT_NEAR(t.seconds, d + c + 3 * std::max(c, d) + 4 * 0.5e-6 + 2e-6, 1e-15);
  // Working set: two buffers of a 128x256 and a 256x128 f32 tile and the 128x128 output, plus the
  // f32 accumulator.
  EXPECT_DOUBLE_EQ(t.vmem_bytes, 2 * (2 * 128.0 * 256 * 4 + 128.0 * 128 * 4) + 128.0 * 128 * 4);
}

TEST(TpuSimTest, MatrixWorkIsPaddedToTheMxuShape) {
  TpuSimulator sim = Sim();
  const KernelTiming t = sim.SimulateKernel(Matmul(100, 100, 100), {});
  ASSERT_TRUE(t.valid);
  // m pads to 104 (sublanes), n and k to 128 (the 128x128 MXU).
  EXPECT_DOUBLE_EQ(t.padded_matrix_flops, 2.0 * 104 * 128 * 128);
  EXPECT_EQ(t.steps, 1);
  // Smaller tiles re-read the operands: n tile 64 reads A twice... and pads each to 128.
  const KernelTiming split = sim.SimulateKernel(Matmul(100, 100, 100), {0, 64, 0, true});
  EXPECT_DOUBLE_EQ(split.padded_matrix_flops, 2.0 * 104 * 256 * 128);
  EXPECT_DOUBLE_EQ(split.hbm_bytes, 2 * 100.0 * 100 * 4 + 100.0 * 100 * 4 + 100.0 * 100 * 4);
  EXPECT_GT(split.seconds, t.seconds);
}

TEST(TpuSimTest, TileThatDoesNotFitVmemIsInvalidAndNeverScores) {
  TpuSimulator sim = Sim();
  const KernelTiming t = sim.SimulateKernel(Matmul(4096, 4096, 4096), {4096, 4096, 4096, true});
  EXPECT_FALSE(t.valid);
  EXPECT_TRUE(absl::StrContains(t.error, "VMEM")) << t.error;
  EXPECT_TRUE(absl::StrContains(t.error, "16.0 MiB")) << t.error;
  EXPECT_EQ(t.seconds, 0);
  const TpuResult all = sim.Simulate({Matmul(256, 256, 256), Matmul(4096, 4096, 4096)},
                                     {{}, {4096, 4096, 4096, true}});
  EXPECT_FALSE(all.valid);
  EXPECT_EQ(all.seconds, 0);
  EXPECT_EQ(all.error, t.error);
  // Single buffering halves the input buffers: a tile can fit only that way.
  const KernelTiming single =
      sim.SimulateKernel(Matmul(2048, 2048, 2048), {1024, 1024, 512, false});
  const KernelTiming twice = sim.SimulateKernel(Matmul(2048, 2048, 2048), {1024, 1024, 512, true});
  EXPECT_TRUE(single.valid) << single.error;
  EXPECT_FALSE(twice.valid);
}

TEST(TpuSimTest, DoubleBufferingOverlapsDmaWithCompute) {
  TpuSimulator sim = Sim();
  const KernelSummary k = Matmul(1024, 1024, 1024);
  const KernelTiming on = sim.SimulateKernel(k, {256, 256, 256, true});
  const KernelTiming off = sim.SimulateKernel(k, {256, 256, 256, false});
  ASSERT_TRUE(on.valid && off.valid);
  const double overhead = on.steps * 0.5e-6 + 2e-6;
  EXPECT_NEAR(off.seconds, on.compute_s + on.dma_s + overhead, 1e-12);
  EXPECT_LT(on.seconds, off.seconds);
}

TEST(TpuSimTest, ElementwiseKernelPadsToVregsAndPaysPerStep) {
  TpuSimulator sim = Sim();
  const KernelSummary k = Elementwise(10000, 1000, 10);
  // 120 MB streamed: the whole array cannot be one tile.
  EXPECT_FALSE(sim.SimulateKernel(k, {}).valid);
  const KernelTiming big = sim.SimulateKernel(k, {500, 0, 0, true});
  ASSERT_TRUE(big.valid) << big.error;
  // 20 tiles of 500 x 1000 pad to 504 x 1024 (8 sublanes x 128 lanes); the vector unit runs
  // 1024 lanes at 1 GHz.
  EXPECT_DOUBLE_EQ(big.compute_s, 1e8 * (20 * 504.0 * 1024) / (10000.0 * 1000) / 1.024e12);
  EXPECT_DOUBLE_EQ(big.hbm_bytes, 12.0 * 10000 * 1000);
  EXPECT_EQ(big.steps, 20);
  EXPECT_DOUBLE_EQ(big.vmem_bytes, 2 * 504.0 * 1024 * 12);  // 12 bytes per element, 2 buffers
  const double c = big.compute_s / 20, d = big.dma_s / 20;
  EXPECT_NEAR(big.seconds, c + d + 19 * std::max(c, d) + 20 * 0.5e-6 + 2e-6, 1e-12);
  const KernelTiming single = sim.SimulateKernel(k, {500, 0, 0, false});
  EXPECT_NEAR(single.seconds, big.compute_s + big.dma_s + 20 * 0.5e-6 + 2e-6, 1e-12);
  const KernelTiming tiny = sim.SimulateKernel(k, {8, 0, 0, true});
  EXPECT_EQ(tiny.steps, 1250);
  EXPECT_GT(tiny.seconds, big.seconds);  // 1250 step overheads
}

// A reduction of a parameter to a scalar (jit__var__1.31's reduce.9) iterates over the
// parameter: its working set is a tile of the parameter, not a padded scalar tile times the
// whole reduced extent (which once needed 288 MiB and fit no tile).
TEST(TpuSimTest, FullReductionOfAParameterTilesTheParameter) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(R"(HloModule var
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[24,24,64] parameter(0)
  z = f32[] constant(0)
  ROOT r = f32[] reduce(p, z), dimensions={0,1,2}, to_apply=add
})");
  ASSERT_TRUE(m.ok()) << m.status();
  const costmodels::OpGraph graph = costmodels::BuildOpGraph(**m);
  const std::vector<KernelSummary> kernels =
      costmodels::SummarizeKernels(graph, costmodels::PlanFusion(graph));
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].rows, 24 * 24);
  EXPECT_EQ(kernels[0].cols, 64);
  TpuSimulator sim = Sim();
  const KernelTiming t = sim.SimulateKernel(kernels[0], sim.DefaultTile(kernels[0]));
  ASSERT_TRUE(t.valid) << t.error;
  // Every element read once (and the init constant), the scalar written; in 576 x 64 padded to
  // 576 x 128 lanes: two buffers of at most the padded array.
  EXPECT_DOUBLE_EQ(t.hbm_bytes, 24.0 * 24 * 64 * 4 + 4 + 4);
  EXPECT_LE(t.vmem_bytes, 2 * 576.0 * 128 * 4.0001);
  EXPECT_LE(t.seconds, 1e-4);
}

TEST(TpuSimTest, TranscendentalsCostMoreVectorCycles) {
  TpuSimulator sim = Sim();
  KernelSummary plain = Elementwise(1024, 1024, 1);
  KernelSummary exp = plain;
  exp.transcendentals = 1024.0 * 1024;
  EXPECT_DOUBLE_EQ(sim.SimulateKernel(exp, {}).compute_s,
                   5 * sim.SimulateKernel(plain, {}).compute_s);
}

TEST(TpuSimTest, OpaqueKernelIsItsRoofline) {
  TpuSimulator sim = Sim();
  KernelSummary s;
  s.name = "while";
  s.element_type = "f32";
  s.opaque = true;
  s.roofline_cost.flops = 1e9;
  s.roofline_cost.bytes_read = 4e6;
  const KernelTiming t = sim.SimulateKernel(s, {64, 64, 64, true});
  ASSERT_TRUE(t.valid);
  EXPECT_DOUBLE_EQ(t.seconds, std::max(1e9 / 100e12, 4e6 / 1e12) + 2e-6);
}

TEST(TpuSimTest, DefaultTileFitsHalfOfVmemAndChoicesStartWithWhole) {
  TpuSimulator sim = Sim();
  const KernelSummary big = Matmul(8192, 8192, 8192);
  const TileConfig tile = sim.DefaultTile(big);
  const KernelTiming t = sim.SimulateKernel(big, tile);
  ASSERT_TRUE(t.valid) << TileName(tile);
  EXPECT_LE(t.vmem_bytes, 8 << 20);
  EXPECT_LE(tile.m, 512);
  EXPECT_GE(tile.m, 8);
  const std::vector<int64_t> n = sim.TileChoices(Matmul(100, 1000, 300), 1);
  EXPECT_EQ(n, (std::vector<int64_t>{0, 128, 256, 512}));
  EXPECT_EQ(sim.TileChoices(Elementwise(10, 10, 1), 2), (std::vector<int64_t>{0}));
}

TEST(TpuSimTest, NoiseIsSeededAndCentredOnTheModel) {
  const KernelSummary k = Matmul(512, 512, 512);
  TpuSimulator exact = Sim();
  TpuSimulator a = Sim(Spec(), {0, 0.05, 7});
  TpuSimulator b = Sim(Spec(), {0, 0.05, 7});
  TpuSimulator c = Sim(Spec(), {0, 0.05, 8});
  const double truth = exact.SimulateKernel(k, {}).seconds;
  double sum = 0;
  bool differs = false;
  for (int i = 0; i < 400; ++i) {
    const double x = a.SimulateKernel(k, {}).seconds;
    EXPECT_DOUBLE_EQ(x, b.SimulateKernel(k, {}).seconds);
    differs = differs || x != c.SimulateKernel(k, {}).seconds;
    EXPECT_NE(x, truth);
    sum += x;
  }
  EXPECT_TRUE(differs);
  EXPECT_NEAR(sum / 400 / truth, 1.0, 0.02);
}

TEST(TpuSimTest, CreateRejectsSpecsWithoutTheUnits) {
  TargetSpec spec = Spec();
  spec.matrix_unit_rows = 0;
  EXPECT_FALSE(TpuSimulator::Create(spec).ok());
  spec = Spec();
  spec.memory.pop_back();
  const absl::Status s = TpuSimulator::Create(spec).status();
  EXPECT_TRUE(absl::StrContains(s.message(), "vmem")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "test-core")) << s;
}

TEST(TpuSimTest, MoreBandwidthOrPeakNeverSlowerOnRandomKernelsAndTiles) {
  std::mt19937_64 rng(11);
  auto dim = [&] { return int64_t{1} << std::uniform_int_distribution<int>(3, 12)(rng); };
  TpuSimulator base = Sim(), fast_memory = Sim(Spec(2e12)), fast_compute = Sim(Spec(1e12, 300e12));
  int checked = 0;
  for (int i = 0; i < 2000; ++i) {
    const bool mm = i % 2 == 0;
    KernelSummary k = mm ? Matmul(dim() + 3, dim(), dim() - 1) : Elementwise(dim(), dim() + 5, 3);
    k.vector_flops += 1000;
    const std::vector<int64_t> m = base.TileChoices(k, 0), n = base.TileChoices(k, 1),
                               kk = base.TileChoices(k, 2);
    const TileConfig tile{m[rng() % m.size()], n[rng() % n.size()], kk[rng() % kk.size()],
                          rng() % 2 == 0};
    const KernelTiming t = base.SimulateKernel(k, tile);
    if (!t.valid) {
      EXPECT_EQ(t.seconds, 0);
      continue;
    }
    ++checked;
    EXPECT_LE(fast_memory.SimulateKernel(k, tile).seconds, t.seconds * (1 + 1e-12));
    EXPECT_LE(fast_compute.SimulateKernel(k, tile).seconds, t.seconds * (1 + 1e-12));
  }
  EXPECT_GT(checked, 500);
}

}  // namespace
}  // namespace mltune::backends::tpu
