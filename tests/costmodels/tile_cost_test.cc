// The analytical tile model (costmodels/analytical/tile_cost.h): a roofline whose only tile
// effect is a matmul's operand re-reads, so it is blind to what the simulator adds (padding to
// the MXU, per-step overhead, double buffering).
#include "costmodels/analytical/tile_cost.h"

#include <memory>
#include <vector>

#include "backends/spec/target_spec.h"
#include "backends/tpu_sim/tpu_sim.h"
#include "costmodels/analytical/analytical.h"
#include "costmodels/analytical/op_graph.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"

namespace mltune::costmodels {
namespace {

// The default fusion's kernels of a module.
std::vector<KernelSummary> Kernels(const char* text) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(text);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return {};
  const OpGraph graph = BuildOpGraph(**m);
  return SummarizeKernels(graph, PlanFusion(graph));
}

const backends::TargetSpec& Spec() {
  const backends::TargetSpec* spec = backends::TargetRegistry::Global().Find("tpu-v4-core");
  EXPECT_NE(spec, nullptr);
  return *spec;
}

constexpr char kDot[] = R"(HloModule m
ENTRY e {
  a = f32[2048,2048] parameter(0)
  b = f32[2048,2048] parameter(1)
  ROOT d = f32[2048,2048] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})";

TEST(TileCostTest, MatmulRereadsOperandsPerTileRowAndColumn) {
  const std::vector<KernelSummary> kernels = Kernels(kDot);
  ASSERT_EQ(kernels.size(), 1u);
  const KernelSummary& k = kernels[0];
  ASSERT_TRUE(k.matmul);
  const backends::TargetSpec& spec = Spec();
  const double bandwidth = spec.Memory("hbm")->bandwidth;
  const double compute = k.matrix_flops / spec.PeakOps("f32");
  const double operand = 2048.0 * 2048.0 * 4;  // bytes of each operand and of the result
  // The whole matrix as one tile: each operand read once.
  EXPECT_NEAR(AnalyticalTileSeconds(k, {0, 0, 0}, spec),
              std::max(compute, 3 * operand / bandwidth) + spec.kernel_overhead_s, 1e-12);
  // 128 x 128 output tiles: A re-read for each of 16 column blocks, B for each of 16 row blocks.
  const double small = AnalyticalTileSeconds(k, {128, 128, 0}, spec);
  EXPECT_NEAR(small, std::max(compute, 33 * operand / bandwidth) + spec.kernel_overhead_s, 1e-12);
  EXPECT_GT(small, AnalyticalTileSeconds(k, {0, 0, 0}, spec));
  // The contraction step moves nothing in this model.
  EXPECT_EQ(AnalyticalTileSeconds(k, {128, 128, 128}, spec), small);
}

TEST(TileCostTest, IgnoresWhatTheSimulatorAdds) {
  // A tiny matmul: the simulator pads it to the MXU and pays per-step overhead; the analytical
  // model does not, so it is faster than the simulator for small ragged tiles.
  const std::vector<KernelSummary> kernels = Kernels(R"(HloModule m
ENTRY e {
  a = f32[40,24] parameter(0)
  b = f32[24,40] parameter(1)
  ROOT d = f32[40,40] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  ASSERT_EQ(kernels.size(), 1u);
  absl::StatusOr<backends::tpu::TpuSimulator> sim = backends::tpu::TpuSimulator::Create(Spec());
  ASSERT_TRUE(sim.ok()) << sim.status();
  backends::tpu::TileConfig tile;
  tile.m = 8;
  tile.n = 128;
  const backends::tpu::KernelTiming simulated = sim->SimulateKernel(kernels[0], tile);
  ASSERT_TRUE(simulated.valid) << simulated.error;
  EXPECT_LT(AnalyticalTileSeconds(kernels[0], {8, 128, 0}, Spec()), simulated.seconds);
}

TEST(TileCostTest, ElementwiseKernelsAreTileIndependent) {
  const std::vector<KernelSummary> kernels = Kernels(R"(HloModule m
ENTRY e {
  x = f32[512,1024] parameter(0)
  ROOT y = f32[512,1024] exponential(x)
})");
  ASSERT_EQ(kernels.size(), 1u);
  const double whole = AnalyticalTileSeconds(kernels[0], {}, Spec());
  EXPECT_GT(whole, Spec().kernel_overhead_s);
  EXPECT_EQ(AnalyticalTileSeconds(kernels[0], {8, 128, 0}, Spec()), whole);
  EXPECT_EQ(AnalyticalTileSeconds(kernels[0], {64, 256, 0}, Spec()), whole);
}

}  // namespace
}  // namespace mltune::costmodels
