// The analytical cost model on hand-computed cases: FLOPs and bytes of a dot, a convolution,
// elementwise and transcendental ops, a reduction (its reducer counted inside it, not again),
// free ops; roofline time in the compute-bound and memory-bound regimes of a spec.
#include "costmodels/analytical/analytical.h"

#include <memory>

#include "backends/spec/target_spec.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"

namespace mltune::costmodels {
namespace {

std::unique_ptr<ir::Module> Parse(const char* text) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : nullptr;
}

const ir::Instruction& Root(const ir::Module& m) { return *m.entry()->root(); }

TEST(AnalyticalTest, DotCountsTwoFlopsPerMultiplyAdd) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  a = f32[64,128] parameter(0)
  b = f32[128,256] parameter(1)
  ROOT d = f32[64,256] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  const OpCost c = InstructionCost(Root(*m));
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 64 * 256 * 128);
  EXPECT_DOUBLE_EQ(c.matrix_flops, c.flops);
  EXPECT_DOUBLE_EQ(c.bytes_read, 4.0 * (64 * 128 + 128 * 256));
  EXPECT_DOUBLE_EQ(c.bytes_written, 4.0 * 64 * 256);
}

TEST(AnalyticalTest, ConvolutionCountsKernelWindowTimesInputFeatures) {
  auto m = Parse(R"(HloModule m
ENTRY e {
  x = f32[1,8,8,16] parameter(0)
  k = f32[3,3,16,32] parameter(1)
  ROOT c = f32[1,8,8,32] convolution(x, k), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
})");
  EXPECT_DOUBLE_EQ(InstructionCost(Root(*m)).flops, 2.0 * (8 * 8 * 32) * (3 * 3 * 16));
}

TEST(AnalyticalTest, ElementwiseReduceAndFreeOps) {
  auto m = Parse(R"(HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[100,10] parameter(0)
  e1 = f32[100,10] exponential(p)
  zero = f32[] constant(0)
  r = f32[100] reduce(e1, zero), dimensions={1}, to_apply=add
  ROOT t = (f32[100], f32[100,10]) tuple(r, e1)
})");
  const ir::Computation& entry = *m->entry();
  OpCost exp_cost, reduce_cost;
  for (const ir::Instruction* i : entry.instructions()) {
    if (i->name() == "e1") exp_cost = InstructionCost(*i);
    if (i->name() == "r") reduce_cost = InstructionCost(*i);
  }
  EXPECT_DOUBLE_EQ(exp_cost.flops, 1000);
  EXPECT_DOUBLE_EQ(exp_cost.transcendentals, 1000);
  EXPECT_DOUBLE_EQ(exp_cost.bytes(), 8000);
  EXPECT_DOUBLE_EQ(reduce_cost.flops, 1000);  // one reducer application per input element
  EXPECT_DOUBLE_EQ(reduce_cost.bytes_written, 400);
  EXPECT_DOUBLE_EQ(InstructionCost(Root(*m)).bytes(), 0);  // tuple: free
  // The module: exp + reduce; the reducer's add is inside the reduce, not counted again.
  const OpCost total = ModuleCost(*m);
  EXPECT_DOUBLE_EQ(total.flops, 2000);
  EXPECT_DOUBLE_EQ(total.bytes(), 8000 + (4000 + 4 + 400));
}

TEST(AnalyticalTest, RooflineIsComputeOrMemoryBoundPlusOverhead) {
  backends::TargetSpec spec;
  spec.peak_ops = {{"f32", 1e12}, {"bf16", 4e12}};
  spec.memory = {{"hbm", 1 << 30, 1e11}};
  spec.kernel_overhead_s = 1e-6;
  OpCost compute_bound;
  compute_bound.flops = 1e9;       // 1 ms at 1 TFLOP/s
  compute_bound.bytes_read = 1e6;  // 10 us at 100 GB/s
  EXPECT_DOUBLE_EQ(RooflineSeconds(compute_bound, spec, "f32"), 1e-3 + 1e-6);
  EXPECT_DOUBLE_EQ(RooflineSeconds(compute_bound, spec, "bf16"), 0.25e-3 + 1e-6);
  OpCost memory_bound;
  memory_bound.flops = 1e6;
  memory_bound.bytes_written = 1e9;  // 10 ms
  EXPECT_DOUBLE_EQ(RooflineSeconds(memory_bound, spec, "f32"), 1e-2 + 1e-6);

  // A faster memory never makes a module slower.
  auto m = Parse(R"(HloModule m
ENTRY e {
  a = f32[256,256] parameter(0)
  b = f32[256,256] add(a, a)
  ROOT d = f32[256,256] dot(b, a), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  const double slow = ModuleRooflineSeconds(*m, spec);
  spec.memory[0].bandwidth *= 10;
  const double fast = ModuleRooflineSeconds(*m, spec);
  EXPECT_LT(fast, slow);
  EXPECT_GT(fast, 2 * spec.kernel_overhead_s);
}

}  // namespace
}  // namespace mltune::costmodels
