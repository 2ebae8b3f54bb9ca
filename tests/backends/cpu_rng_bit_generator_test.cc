// rng-bit-generator on the CPU backend: each algorithm (rng_default, rng_three_fry, rng_philox),
// state size and output width, odd shapes and counters that carry, bit for bit what the
// evaluator computes; and dropout as a PyTorch/XLA training step draws it.
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_backend.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "tests/backends/cpu_pipelined.h"

namespace mltune::backends::cpu {
namespace {

// Generators over a parameter state (random words in [0, 8)) and over constant states whose
// counters wrap (Threefry's 64-bit counter; Philox's low word carrying into the high one).
constexpr char kGenerators[] = R"(HloModule rng_bits

ENTRY main {
  s2 = u64[2] parameter(0)
  s3 = u64[3] parameter(1)
  wrap2 = u64[2] constant({12345, 18446744073709551614})
  wrap3 = u64[3] constant({99, 18446744073709551615, 7})
  a = (u64[2], u32[3,5]) rng-bit-generator(s2), algorithm=rng_three_fry
  a0 = u64[2] get-tuple-element(a), index=0
  a1 = u32[3,5] get-tuple-element(a), index=1
  b = (u64[2], u64[7]) rng-bit-generator(s2), algorithm=rng_three_fry
  b0 = u64[2] get-tuple-element(b), index=0
  b1 = u64[7] get-tuple-element(b), index=1
  c = (u64[2], u8[4,6]) rng-bit-generator(wrap2), algorithm=rng_three_fry
  c0 = u64[2] get-tuple-element(c), index=0
  c1 = u8[4,6] get-tuple-element(c), index=1
  d = (u64[2], s32[]) rng-bit-generator(s2), algorithm=rng_three_fry
  d0 = u64[2] get-tuple-element(d), index=0
  d1 = s32[] get-tuple-element(d), index=1
  e = (u64[3], u32[2,3,5]) rng-bit-generator(s3), algorithm=rng_philox
  e0 = u64[3] get-tuple-element(e), index=0
  e1 = u32[2,3,5] get-tuple-element(e), index=1
  f = (u64[3], s64[5]) rng-bit-generator(wrap3), algorithm=rng_philox
  f0 = u64[3] get-tuple-element(f), index=0
  f1 = s64[5] get-tuple-element(f), index=1
  g = (u64[2], u16[9]) rng-bit-generator(s2), algorithm=rng_default
  g0 = u64[2] get-tuple-element(g), index=0
  g1 = u16[9] get-tuple-element(g), index=1
  h = (u64[2], u64[3]) rng-bit-generator(wrap2), algorithm=rng_default
  h0 = u64[2] get-tuple-element(h), index=0
  h1 = u64[3] get-tuple-element(h), index=1
  ROOT out = (u64[2], u32[3,5], u64[2], u64[7], u64[2], u8[4,6], u64[2], s32[], u64[3], u32[2,3,5], u64[3], s64[5], u64[2], u16[9], u64[2], u64[3]) tuple(a0, a1, b0, b1, c0, c1, d0, d1, e0, e1, f0, f1, g0, g1, h0, h1)
}
)";

// Dropout with p = 0.1 in a training step: bits to uniform floats (23 mantissa bits under the
// exponent of 1.0, minus 1), a keep mask, the kept activations scaled by 1/0.9; the new state is
// threaded to the next step.
constexpr char kDropout[] = R"(HloModule dropout

ENTRY main {
  x = f32[64,128] parameter(0)
  state = u64[2] parameter(1)
  rng = (u64[2], u32[64,128]) rng-bit-generator(state), algorithm=rng_default
  next = u64[2] get-tuple-element(rng), index=0
  bits = u32[64,128] get-tuple-element(rng), index=1
  nine = u32[] constant(9)
  nineb = u32[64,128] broadcast(nine), dimensions={}
  mant = u32[64,128] shift-right-logical(bits, nineb)
  one = u32[] constant(1065353216)
  oneb = u32[64,128] broadcast(one), dimensions={}
  fbits = u32[64,128] or(mant, oneb)
  f = f32[64,128] bitcast-convert(fbits)
  fone = f32[] constant(1)
  foneb = f32[64,128] broadcast(fone), dimensions={}
  u = f32[64,128] subtract(f, foneb)
  p = f32[] constant(0.1)
  pb = f32[64,128] broadcast(p), dimensions={}
  keep = pred[64,128] compare(u, pb), direction=GE
  scale = f32[] constant(1.11111116)
  sb = f32[64,128] broadcast(scale), dimensions={}
  xs = f32[64,128] multiply(x, sb)
  zero = f32[] constant(0)
  zb = f32[64,128] broadcast(zero), dimensions={}
  y = f32[64,128] select(keep, xs, zb)
  ROOT out = (f32[64,128], u64[2]) tuple(y, next)
}
)";

class CpuRngBitGeneratorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0); }

  static void Check(const char* text, int library_kernels) {
    absl::StatusOr<Pipelined> p = CompileThroughPipeline(text);
    ASSERT_TRUE(p.ok()) << p.status();
    const CompiledModule* compiled = &p->compiled;
    int library = 0;
    for (const Kernel& k : compiled->lowered.kernels) library += k.kind == KernelKind::kLibrary;
    EXPECT_EQ(library, library_kernels);
    // Integer results compare exactly: the streams are bit for bit the evaluator's.
    ExpectMatchesEvaluator(*p, {1, 2});
  }
};

TEST_F(CpuRngBitGeneratorTest, EveryAlgorithmStateAndWidthMatchesTheEvaluator) {
  Check(kGenerators, 8);
}

TEST_F(CpuRngBitGeneratorTest, DropoutOfATrainingStep) { Check(kDropout, 1); }

// Shapes XLA does not define are refused with the op and the reason.
TEST_F(CpuRngBitGeneratorTest, RefusesFloatBits) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(R"(HloModule bad

ENTRY main {
  s = u64[2] parameter(0)
  r = (u64[2], f32[4]) rng-bit-generator(s), algorithm=rng_philox
  ROOT b = f32[4] get-tuple-element(r), index=1
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<std::unique_ptr<ir::Module>> optimized = RunCpuPipeline(**module);
  ASSERT_FALSE(optimized.ok());
  EXPECT_NE(std::string(optimized.status().message()).find("rng-bit-generator 'r'"),
            std::string::npos)
      << optimized.status();
  EXPECT_NE(std::string(optimized.status().message()).find("f32"), std::string::npos)
      << optimized.status();
}

}  // namespace
}  // namespace mltune::backends::cpu
