// Row fusion decisions of the CPU lowering (which kernels become one row kernel, and which must
// not); the generated code of these modules is checked against the evaluator in cpu_ops_test.
#include <memory>
#include <string>

#include "backends/cpu/cpu_backend.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"

namespace mltune::backends::cpu {
namespace {

constexpr char kReducers[] = R"(
HloModule m
add {
  ad0 = f32[] parameter(0)
  ad1 = f32[] parameter(1)
  ROOT adr = f32[] add(ad0, ad1)
}
max {
  mx0 = f32[] parameter(0)
  mx1 = f32[] parameter(1)
  ROOT mxr = f32[] maximum(mx0, mx1)
}
)";

std::string KernelKinds(const std::string& entry) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(std::string(kReducers) + entry);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return "";
  absl::StatusOr<LoweredModule> lowered = Lower(**m);
  EXPECT_TRUE(lowered.ok()) << lowered.status();
  if (!lowered.ok()) return "";
  std::string kinds;
  for (const Kernel& k : lowered->kernels) {
    if (!kinds.empty()) kinds += ",";
    kinds += KernelKindName(k.kind);
  }
  return kinds;
}

TEST(CpuRowFusion, SoftmaxIsOneRowKernel) {
  EXPECT_EQ(KernelKinds(R"(
ENTRY e {
  a = f32[64,256] parameter(0)
  ninf = f32[] constant(-inf)
  z = f32[] constant(0)
  m = f32[64] reduce(a, ninf), dimensions={1}, to_apply=max
  mb = f32[64,256] broadcast(m), dimensions={0}
  d = f32[64,256] subtract(a, mb)
  ex = f32[64,256] exponential(d)
  s = f32[64] reduce(ex, z), dimensions={1}, to_apply=add
  sb = f32[64,256] broadcast(s), dimensions={0}
  ROOT o = f32[64,256] divide(ex, sb)
})"),
            "row");
}

TEST(CpuRowFusion, ConsumerThatReindexesRowsStaysApart) {
  // Broadcast along the other dimension: row i of b needs every row's reduce.
  EXPECT_EQ(KernelKinds(R"(
ENTRY e {
  a = f32[16,16] parameter(0)
  z = f32[] constant(0)
  s = f32[16] reduce(a, z), dimensions={1}, to_apply=add
  sb = f32[16,16] broadcast(s), dimensions={1}
  ROOT o = f32[16,16] subtract(a, sb)
})"),
            "reduce,loop");
  // A transpose of a row-dependent value.
  EXPECT_EQ(KernelKinds(R"(
ENTRY e {
  a = f32[16,16] parameter(0)
  z = f32[] constant(0)
  s = f32[16] reduce(a, z), dimensions={1}, to_apply=add
  sb = f32[16,16] broadcast(s), dimensions={0}
  d = f32[16,16] subtract(a, sb)
  ROOT o = f32[16,16] transpose(d), dimensions={1,0}
})"),
            "reduce,loop");
}

TEST(CpuRowFusion, OnlyMinorDimensionReducesOfBoundedRowsStartRows) {
  // A column reduce (dimension 0) is not a row reduce.
  EXPECT_EQ(KernelKinds(R"(
ENTRY e {
  a = f32[16,16] parameter(0)
  z = f32[] constant(0)
  s = f32[16] reduce(a, z), dimensions={0}, to_apply=add
  sb = f32[16,16] broadcast(s), dimensions={1}
  ROOT o = f32[16,16] subtract(a, sb)
})"),
            "reduce,loop");
  // Rows longer than kMaxRowLength stay separate kernels.
  EXPECT_EQ(KernelKinds(R"(
ENTRY e {
  a = f32[2,20000] parameter(0)
  z = f32[] constant(0)
  s = f32[2] reduce(a, z), dimensions={1}, to_apply=add
  sb = f32[2,20000] broadcast(s), dimensions={0}
  ROOT o = f32[2,20000] subtract(a, sb)
})"),
            "reduce,loop");
}

TEST(CpuRowFusion, ACycleThroughAnotherKernelPreventsTheMerge) {
  // sb, read by two kernels, is materialized and joins the reduce's row kernel. The last loop
  // kernel reads that kernel and a reduce-window (which never joins a row kernel) that reads it
  // too: merging the loop into the row kernel would make a cycle, so it stays apart.
  EXPECT_EQ(KernelKinds(R"(
ENTRY e {
  a = f32[8,8] parameter(0)
  z = f32[] constant(0)
  s = f32[8] reduce(a, z), dimensions={1}, to_apply=add
  sb = f32[8,8] broadcast(s), dimensions={0}
  w = f32[8,8] reduce-window(sb, z), window={size=1x2 pad=0_0x0_1}, to_apply=add
  d = f32[8,8] subtract(a, sb)
  ROOT o = f32[8,8] add(d, w)
})"),
            "row,reduce-window,loop");
}

TEST(CpuRowFusion, TheCpuPipelineKeepsLongMaxReducesWhole) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(std::string(kReducers) + R"(
ENTRY e {
  a = f32[64,4096] parameter(0)
  ninf = f32[] constant(-inf)
  ROOT m = f32[4096] reduce(a, ninf), dimensions={0}, to_apply=max
})");
  ASSERT_TRUE(m.ok()) << m.status();
  absl::StatusOr<std::unique_ptr<ir::Module>> opt = RunCpuPipeline(**m);
  ASSERT_TRUE(opt.ok()) << opt.status();
  for (const ir::Instruction* i : (*opt)->entry()->instructions()) {
    EXPECT_NE(i->opcode(), ir::Opcode::kReduceWindow) << "the tree reduction split ran";
  }
}

}  // namespace
}  // namespace mltune::backends::cpu
