// A concatenate of many operands (a scan's stacked steps, a DenseNet block) is a kernel root of
// its own, written operand by operand, and a narrow one still fuses into its consumer. Both
// match the evaluator under every parameter value of their kernels.
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_backend.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "tests/backends/cpu_variants.h"

namespace mltune::backends::cpu {
namespace {

// `wide`: 12 steps' results stacked and reduced over the steps (kMaxFusedConcatOperands is 8);
// `narrow`: 3 of them, concatenated into an elementwise consumer.
constexpr char kModule[] = R"(
HloModule m
add {
  a0 = f32[] parameter(0)
  a1 = f32[] parameter(1)
  ROOT ar = f32[] add(a0, a1)
}
ENTRY e {
  p = f32[12,64,16] parameter(0)
  s0 = f32[1,64,16] slice(p), slice={[0:1], [0:64], [0:16]}
  e0 = f32[1,64,16] multiply(s0, s0)
  x0 = f32[1,64,16] exponential(e0)
  s1 = f32[1,64,16] slice(p), slice={[1:2], [0:64], [0:16]}
  e1 = f32[1,64,16] multiply(s1, s1)
  x1 = f32[1,64,16] exponential(e1)
  s2 = f32[1,64,16] slice(p), slice={[2:3], [0:64], [0:16]}
  e2 = f32[1,64,16] multiply(s2, s2)
  x2 = f32[1,64,16] exponential(e2)
  s3 = f32[1,64,16] slice(p), slice={[3:4], [0:64], [0:16]}
  e3 = f32[1,64,16] multiply(s3, s3)
  x3 = f32[1,64,16] exponential(e3)
  s4 = f32[1,64,16] slice(p), slice={[4:5], [0:64], [0:16]}
  e4 = f32[1,64,16] multiply(s4, s4)
  x4 = f32[1,64,16] exponential(e4)
  s5 = f32[1,64,16] slice(p), slice={[5:6], [0:64], [0:16]}
  e5 = f32[1,64,16] multiply(s5, s5)
  x5 = f32[1,64,16] exponential(e5)
  s6 = f32[1,64,16] slice(p), slice={[6:7], [0:64], [0:16]}
  e6 = f32[1,64,16] multiply(s6, s6)
  x6 = f32[1,64,16] exponential(e6)
  s7 = f32[1,64,16] slice(p), slice={[7:8], [0:64], [0:16]}
  e7 = f32[1,64,16] multiply(s7, s7)
  x7 = f32[1,64,16] exponential(e7)
  s8 = f32[1,64,16] slice(p), slice={[8:9], [0:64], [0:16]}
  e8 = f32[1,64,16] multiply(s8, s8)
  x8 = f32[1,64,16] exponential(e8)
  s9 = f32[1,64,16] slice(p), slice={[9:10], [0:64], [0:16]}
  e9 = f32[1,64,16] multiply(s9, s9)
  x9 = f32[1,64,16] exponential(e9)
  s10 = f32[1,64,16] slice(p), slice={[10:11], [0:64], [0:16]}
  e10 = f32[1,64,16] multiply(s10, s10)
  x10 = f32[1,64,16] exponential(e10)
  s11 = f32[1,64,16] slice(p), slice={[11:12], [0:64], [0:16]}
  e11 = f32[1,64,16] multiply(s11, s11)
  x11 = f32[1,64,16] exponential(e11)
  wide = f32[12,64,16] concatenate(x0, x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11), dimensions={0}
  zero = f32[] constant(0)
  r = f32[64,16] reduce(wide, zero), dimensions={0}, to_apply=add
  narrow = f32[3,64,16] concatenate(e0, e1, e2), dimensions={0}
  n = f32[3,64,16] negate(narrow)
  ROOT t = (f32[64,16], f32[3,64,16]) tuple(r, n)
})";

// `compiled` and every single-parameter variant of its kernels match the evaluator.
void ExpectEveryVariantMatches(const ir::Module& module, const CompiledModule& compiled) {
  EXPECT_TRUE(CheckAgainstEvaluator(module, compiled, 1).ok());
  for (const ConfigVariant& v : SingleParameterVariants(compiled.lowered, compiled.configs)) {
    absl::StatusOr<CompiledModule> variant = CompileModule(module, v.configs);
    ASSERT_TRUE(variant.ok()) << v.label << ": " << variant.status();
    const absl::Status s = CheckAgainstEvaluator(module, *variant, 1);
    EXPECT_TRUE(s.ok()) << v.label << ": " << s;
  }
}

class CpuConcatTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0); }
};

TEST_F(CpuConcatTest, WideConcatenatesAreKernelRootsWrittenOperandByOperand) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(kModule);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<CompiledModule> compiled = CompileModule(**module);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  int wide_roots = 0, narrow_roots = 0;
  for (const Kernel& k : compiled->lowered.kernels) {
    for (const ir::Instruction* o : k.outputs) {
      if (o->opcode() != ir::Opcode::kConcatenate) continue;
      (o->operand_count() == 12 ? wide_roots : narrow_roots)++;
    }
  }
  EXPECT_EQ(wide_roots, 1);
  EXPECT_EQ(narrow_roots, 0);
  // Each of the 12 operands gets a loop nest of its own: its offset along the steps appears.
  EXPECT_NE(compiled->program.source.find(") + 11"), std::string::npos);
  ExpectEveryVariantMatches(**module, *compiled);
}

// An unrolled linear scan, as ONNX exports of state-space models have it: h[t] = a[t] * h[t-1] +
// b[t], every step's state reshaped to [1,64,16] and stacked. `steps` of them.
std::string UnrolledScan(int steps) {
  std::string text =
      absl::StrCat("HloModule m\nENTRY e {\n  a = f32[", steps, ",64,16] parameter(0)\n  b = f32[",
                   steps, ",64,16] parameter(1)\n");
  std::string operands;
  for (int t = 0; t < steps; ++t) {
    const std::string slice = absl::StrCat("slice={[", t, ":", t + 1, "], [0:64], [0:16]}");
    absl::StrAppend(&text, "  as", t, " = f32[1,64,16] slice(a), ", slice, "\n  ar", t,
                    " = f32[64,16] reshape(as", t, ")\n  bs", t, " = f32[1,64,16] slice(b), ",
                    slice, "\n  br", t, " = f32[64,16] reshape(bs", t, ")\n");
    if (t == 0) {
      absl::StrAppend(&text, "  h0 = f32[64,16] add(ar0, br0)\n");
    } else {
      absl::StrAppend(&text, "  m", t, " = f32[64,16] multiply(ar", t, ", h", t - 1, ")\n  h", t,
                      " = f32[64,16] add(m", t, ", br", t, ")\n");
    }
    absl::StrAppend(&text, "  o", t, " = f32[1,64,16] reshape(h", t, ")\n");
    absl::StrAppend(&operands, t == 0 ? "" : ", ", "o", t);
  }
  absl::StrAppend(&text, "  ROOT c = f32[", steps, ",64,16] concatenate(", operands,
                  "), dimensions={0}\n}\n");
  return text;
}

// Each step reads the previous state back from the output: the kernel does one multiply per step,
// not the whole chain again for each (quadratic: a Mamba export's scans took 77 ms each).
TEST_F(CpuConcatTest, UnrolledScanReadsEarlierStepsBackFromTheOutput) {
  constexpr int kSteps = 24;
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(UnrolledScan(kSteps));
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<CompiledModule> compiled = CompileModule(**module);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  ASSERT_EQ(compiled->lowered.kernels.size(), 1u);
  int64_t multiplies = 0;
  for (size_t at = compiled->program.source.find("mt_mul("); at != std::string::npos;
       at = compiled->program.source.find("mt_mul(", at + 1)) {
    ++multiplies;
  }
  EXPECT_LE(multiplies, kSteps + 4);  // quadratic would be 276
  ExpectEveryVariantMatches(**module, *compiled);
}

}  // namespace
}  // namespace mltune::backends::cpu
