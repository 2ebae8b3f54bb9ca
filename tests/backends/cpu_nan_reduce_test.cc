// Reductions by a floating-point maximum or minimum propagate NaN (XLA's semantics) in every
// kernel form that folds them (a reduce's partial accumulators, a row kernel's passes, a reduce
// window, the memory-order walk) and under every parameter value: the generated folds use the
// plain compare and select with a separate "NaN seen" flag, and a NaN planted anywhere in a row
// (first, last, in the scalar tail, the whole row) must still reach its output. Checked against
// the reference evaluator on random inputs with the NaNs planted.
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include "backends/cpu/cpu_backend.h"
#include "gtest/gtest.h"
#include "ir/evaluator/evaluator.h"
#include "ir/hlo_parser.h"
#include "tests/backends/cpu_variants.h"

namespace mltune::backends::cpu {
namespace {

// rows: maximum over 130-element rows (8-lane folds and a 2-element tail); mins: f64 minimum;
// soft: a softmax, whose maximum is a row kernel's first pass; pool: max pooling; pool2: max
// pooling with the window on the minor dimension (NCHW), folded inside the row loop, with NaNs
// in its border and interior columns; pool3: the same over a fused ReLU (ResNet's stem), whose
// selects once kept the flagged fold from vectorizing; cols: a maximum over the leading dimension.
constexpr char kModule[] = R"(
HloModule m
max {
  mx0 = f32[] parameter(0)
  mx1 = f32[] parameter(1)
  ROOT mxr = f32[] maximum(mx0, mx1)
}
min64 {
  mn0 = f64[] parameter(0)
  mn1 = f64[] parameter(1)
  ROOT mnr = f64[] minimum(mn1, mn0)
}
add {
  ad0 = f32[] parameter(0)
  ad1 = f32[] parameter(1)
  ROOT adr = f32[] add(ad0, ad1)
}
ENTRY e {
  a = f32[12,130] parameter(0)
  b = f64[12,130] parameter(1)
  ninf = f32[] constant(-inf)
  inf64 = f64[] constant(inf)
  z = f32[] constant(0)
  rows = f32[12] reduce(a, ninf), dimensions={1}, to_apply=max
  mins = f64[12] reduce(b, inf64), dimensions={1}, to_apply=min64
  cols = f32[130] reduce(a, ninf), dimensions={0}, to_apply=max
  c = f32[12,130] parameter(2)
  m = f32[12] reduce(c, ninf), dimensions={1}, to_apply=max
  mb = f32[12,130] broadcast(m), dimensions={0}
  d = f32[12,130] subtract(c, mb)
  ex = f32[12,130] exponential(d)
  s = f32[12] reduce(ex, z), dimensions={1}, to_apply=add
  sb = f32[12,130] broadcast(s), dimensions={0}
  soft = f32[12,130] divide(ex, sb)
  p = f32[1,12,130,1] reshape(a)
  pool = f32[1,6,65,1] reduce-window(p, ninf), window={size=1x3x3x1 stride=1x2x2x1 pad=0_0x1_1x1_1x0_0}, to_apply=max
  q = f32[1,1,12,130] reshape(a)
  pool2 = f32[1,1,6,65] reduce-window(q, ninf), window={size=1x1x3x3 stride=1x1x2x2 pad=0_0x0_0x1_1x1_1}, to_apply=max
  zb = f32[1,1,12,130] broadcast(z), dimensions={}
  rq = f32[1,1,12,130] maximum(q, zb)
  pool3 = f32[1,1,6,65] reduce-window(rq, ninf), window={size=1x1x3x3 stride=1x1x2x2 pad=0_0x0_0x1_1x1_1}, to_apply=max
  ROOT t = (f32[12], f64[12], f32[130], f32[12,130], f32[1,6,65,1], f32[1,1,6,65], f32[1,1,6,65]) tuple(rows, mins, cols, soft, pool, pool2, pool3)
})";

// Row r of a [12,130] argument gets NaNs at these columns (rows 0, 1, 6, 8, 10, 11 stay finite).
const std::vector<std::vector<int>> kNanColumns = {{}, {},    {0}, {129}, {64}, {7, 8},
                                                   {}, {128}, {},  {},    {},   {}};

std::vector<ir::Literal> ArgumentsWithNaNs(const ir::Module& module) {
  absl::StatusOr<std::vector<ir::Literal>> args = ir::MakeRandomArguments(module, 5);
  EXPECT_TRUE(args.ok()) << args.status();
  for (ir::Literal& arg : *args) {
    for (size_t r = 0; r < kNanColumns.size(); ++r) {
      for (int col : kNanColumns[r]) {
        arg.SetFromDouble(static_cast<int64_t>(r) * 130 + col,
                          std::numeric_limits<double>::quiet_NaN());
      }
    }
    // Row 9: NaN throughout.
    for (int col = 0; col < 130; ++col) {
      arg.SetFromDouble(9 * 130 + col, std::numeric_limits<double>::quiet_NaN());
    }
  }
  return *args;
}

class CpuNanReduceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0); }
};

TEST_F(CpuNanReduceTest, MaxAndMinReductionsPropagateNaNUnderEveryParameterValue) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(kModule);
  ASSERT_TRUE(module.ok()) << module.status();
  const std::vector<ir::Literal> args = ArgumentsWithNaNs(**module);
  absl::StatusOr<ir::Literal> expected = ir::Evaluate(**module, args);
  ASSERT_TRUE(expected.ok()) << expected.status();
  const std::vector<ir::Literal> leaves = FlattenLeaves(*expected);
  // The planted NaNs reach the reference's rows and nothing else: the check below is not vacuous.
  for (int row = 0; row < 12; ++row) {
    const bool nan_row = !kNanColumns[static_cast<size_t>(row)].empty() || row == 9;
    EXPECT_EQ(std::isnan(leaves[0].GetAsDouble(row)), nan_row) << "rows " << row;
    EXPECT_EQ(std::isnan(leaves[1].GetAsDouble(row)), nan_row) << "mins " << row;
  }

  absl::StatusOr<CompiledModule> compiled = CompileModule(**module);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  // Every kernel form that folds is here, and the folds by maximum and minimum take the flagged
  // form.
  std::set<KernelKind> kinds;
  for (const Kernel& k : compiled->lowered.kernels) kinds.insert(k.kind);
  EXPECT_EQ(kinds.count(KernelKind::kReduce), 1u);
  EXPECT_EQ(kinds.count(KernelKind::kRow), 1u);
  EXPECT_EQ(kinds.count(KernelKind::kReduceWindow), 1u);
  EXPECT_NE(compiled->program.source.find("_fast("), std::string::npos) << compiled->program.source;
  auto check = [&](const std::vector<KernelConfig>& configs, const std::string& what) {
    absl::StatusOr<CompiledModule> variant = CompileModule(**module, configs);
    ASSERT_TRUE(variant.ok()) << what << ": " << variant.status();
    absl::StatusOr<std::vector<ir::Literal>> actual =
        Execute(variant->object, variant->program, args, MeasureOptions{});
    ASSERT_TRUE(actual.ok()) << what << ": " << actual.status();
    const absl::Status same = CompareLeaves(leaves, *actual, Tolerance{});
    EXPECT_TRUE(same.ok()) << what << ": " << same << "\n" << variant->program.source;
  };
  check(compiled->configs, "defaults");
  for (const ConfigVariant& v : SingleParameterVariants(compiled->lowered, compiled->configs)) {
    check(v.configs, v.label);
  }
}

// A NaN initial value makes the whole reduction NaN, as XLA's maximum would.
TEST_F(CpuNanReduceTest, NaNInitialValueGivesNaN) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(R"(
HloModule m
max {
  mx0 = f32[] parameter(0)
  mx1 = f32[] parameter(1)
  ROOT mxr = f32[] maximum(mx0, mx1)
}
ENTRY e {
  a = f32[4,37] parameter(0)
  init = f32[] parameter(1)
  ROOT r = f32[4] reduce(a, init), dimensions={1}, to_apply=max
})");
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<std::vector<ir::Literal>> args = ir::MakeRandomArguments(**module, 2);
  ASSERT_TRUE(args.ok());
  (*args)[1].SetFromDouble(0, std::numeric_limits<double>::quiet_NaN());
  absl::StatusOr<CompiledModule> compiled = CompileModule(**module);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  absl::StatusOr<std::vector<ir::Literal>> actual =
      Execute(compiled->object, compiled->program, *args, MeasureOptions{});
  ASSERT_TRUE(actual.ok()) << actual.status();
  for (int row = 0; row < 4; ++row) EXPECT_TRUE(std::isnan((*actual)[0].GetAsDouble(row))) << row;
}

}  // namespace
}  // namespace mltune::backends::cpu
