// NCHW networks run NHWC on the CPU backend: every convolution is rewritten to read and write
// [batch, spatial..., feature] (XLA CPU's ConvCanonicalization), and the transposes that brings
// are sunk through the elementwise ops, the max pool and the residual add between convolutions
// and cancelled, so only the network's input and output are transposed. Checked on the rewritten
// module's structure and by running it against the evaluator on the original.
#include <memory>
#include <string>

#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/hlo_rewrites.h"
#include "gtest/gtest.h"
#include "ir/evaluator/evaluator.h"
#include "ir/hlo_parser.h"
#include "passes/registry.h"
#include "tests/backends/cpu_pipelined.h"

namespace mltune::backends::cpu {
namespace {

// A ResNet stem and block as ONNX exports them (NCHW, OIHW): convolution, scale and shift, ReLU,
// a 3x3/s2 max pool, two 3x3 convolutions and a residual add, a global average pool.
constexpr char kNchwBlock[] = R"(HloModule block
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}
add {
  u = f32[] parameter(0)
  v = f32[] parameter(1)
  ROOT t = f32[] add(u, v)
}
ENTRY e {
  x = f32[2,3,16,16] parameter(0)
  w0 = f32[8,3,3,3] parameter(1)
  g = f32[8] parameter(2)
  w1 = f32[8,8,3,3] parameter(3)
  w2 = f32[8,8,3,3] parameter(4)
  c0 = f32[2,8,16,16] convolution(x, w0), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
  gb = f32[2,8,16,16] broadcast(g), dimensions={1}
  s0 = f32[2,8,16,16] multiply(c0, gb)
  z = f32[] constant(0)
  zb = f32[2,8,16,16] broadcast(z), dimensions={}
  r0 = f32[2,8,16,16] maximum(s0, zb)
  ninf = f32[] constant(-inf)
  p = f32[2,8,8,8] reduce-window(r0, ninf), window={size=1x1x3x3 stride=1x1x2x2 pad=0_0x0_0x1_1x1_1}, to_apply=max
  c1 = f32[2,8,8,8] convolution(p, w1), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
  zb1 = f32[2,8,8,8] broadcast(z), dimensions={}
  r1 = f32[2,8,8,8] maximum(c1, zb1)
  c2 = f32[2,8,8,8] convolution(r1, w2), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
  res = f32[2,8,8,8] add(c2, p)
  r2 = f32[2,8,8,8] maximum(res, zb1)
  ROOT gap = f32[2,8] reduce(r2, z), dimensions={2,3}, to_apply=add
})";

// `original` and `rewritten` evaluate to the same values on seeded arguments.
void ExpectSameValues(const ir::Module& original, const ir::Module& rewritten, uint64_t seed) {
  absl::StatusOr<std::vector<ir::Literal>> args = ir::MakeRandomArguments(original, seed);
  ASSERT_TRUE(args.ok());
  absl::StatusOr<ir::Literal> before = ir::Evaluate(original, *args);
  absl::StatusOr<ir::Literal> after = ir::Evaluate(rewritten, *args);
  ASSERT_TRUE(before.ok() && after.ok());
  ASSERT_EQ(before->shape().dimensions(), after->shape().dimensions());
  for (int64_t k = 0; k < before->shape().ElementCount(); ++k) {
    EXPECT_NEAR(before->GetAsDouble(k), after->GetAsDouble(k), 1e-4) << k;
  }
}

bool CanonicalConvolution(const ir::Instruction& conv) {
  const ir::ConvolutionDimensionNumbers& dn = *conv.conv_dnums;
  return dn.input_batch_dimension == 0 && dn.input_feature_dimension == 3 &&
         dn.input_spatial_dimensions == std::vector<int64_t>{1, 2} &&
         dn.output_batch_dimension == 0 && dn.output_feature_dimension == 3 &&
         dn.output_spatial_dimensions == std::vector<int64_t>{1, 2};
}

TEST(CpuConvLayoutTest, NchwBlockRunsNhwcWithTransposesOnlyAtItsInput) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(kNchwBlock);
  ASSERT_TRUE(module.ok()) << module.status();
  std::unique_ptr<ir::Module> rewritten = (*module)->Clone();
  absl::StatusOr<bool> better =
      CanonicalizeConvolutionLayouts(*rewritten, passes::Registry::Global());
  ASSERT_TRUE(better.ok()) << better.status();
  EXPECT_TRUE(*better);
  int convolutions = 0, transposes = 0;
  for (const ir::Instruction* i : rewritten->entry()->MakePostOrder()) {
    if (i->opcode() == ir::Opcode::kConvolution) {
      ++convolutions;
      EXPECT_TRUE(CanonicalConvolution(*i)) << i->name();
    }
    if (i->opcode() == ir::Opcode::kTranspose) {
      ++transposes;
      // Only at the boundary: of the network's input, or read by the final pool (which the
      // reduce kernel reads through, never copied).
      bool reduce_reads = !i->users().empty();
      for (const ir::Instruction* u : i->users())
        reduce_reads &= u->opcode() == ir::Opcode::kReduce;
      EXPECT_TRUE(i->operand(0)->opcode() == ir::Opcode::kParameter || reduce_reads)
          << i->name() << " sits between convolutions";
    }
    if (i->opcode() == ir::Opcode::kReduceWindow) {
      // The pool runs NHWC: its window spans dimensions 1 and 2.
      EXPECT_EQ(i->window->dims[1].size, 3) << i->name();
      EXPECT_EQ(i->window->dims[3].size, 1) << i->name();
    }
  }
  EXPECT_EQ(convolutions, 3);
  EXPECT_LE(transposes, 2);
  // The rewrite keeps the values: evaluated before and after on the same arguments.
  ExpectSameValues(**module, *rewritten, 3);
}

// An EfficientNet block as ONNX exports it: bias, SiLU (x * logistic(x), the activation read
// twice), a depthwise convolution, SiLU, a squeeze-and-excitation scale, a projection. The SiLUs
// run NHWC with the convolutions; no transpose is left between them.
constexpr char kNchwSiluBlock[] = R"(HloModule mbconv
add {
  u = f32[] parameter(0)
  v = f32[] parameter(1)
  ROOT t = f32[] add(u, v)
}
ENTRY e {
  x = f32[1,4,10,10] parameter(0)
  w0 = f32[8,4,1,1] parameter(1)
  b0 = f32[8] parameter(2)
  wd = f32[8,1,3,3] parameter(3)
  w2 = f32[4,8,1,1] parameter(4)
  c0 = f32[1,8,10,10] convolution(x, w0), window={size=1x1}, dim_labels=bf01_oi01->bf01
  bb = f32[1,8,10,10] broadcast(b0), dimensions={1}
  a0 = f32[1,8,10,10] add(c0, bb)
  n0 = f32[1,8,10,10] negate(a0)
  e0 = f32[1,8,10,10] exponential(n0)
  one = f32[] constant(1)
  ones = f32[1,8,10,10] broadcast(one), dimensions={}
  d0 = f32[1,8,10,10] add(ones, e0)
  l0 = f32[1,8,10,10] divide(ones, d0)
  s0 = f32[1,8,10,10] multiply(a0, l0)
  c1 = f32[1,8,10,10] convolution(s0, wd), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01, feature_group_count=8
  l1 = f32[1,8,10,10] logistic(c1)
  s1 = f32[1,8,10,10] multiply(c1, l1)
  z = f32[] constant(0)
  m = f32[1,8] reduce(s1, z), dimensions={2,3}, to_apply=add
  g = f32[1,8] logistic(m)
  gb = f32[1,8,10,10] broadcast(g), dimensions={0,1}
  se = f32[1,8,10,10] multiply(s1, gb)
  ROOT c2 = f32[1,4,10,10] convolution(se, w2), window={size=1x1}, dim_labels=bf01_oi01->bf01
})";

TEST(CpuConvLayoutTest, SiluAndExcitationBetweenConvolutionsRunNhwc) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(kNchwSiluBlock);
  ASSERT_TRUE(module.ok()) << module.status();
  std::unique_ptr<ir::Module> rewritten = (*module)->Clone();
  absl::StatusOr<bool> better =
      CanonicalizeConvolutionLayouts(*rewritten, passes::Registry::Global());
  ASSERT_TRUE(better.ok()) << better.status();
  EXPECT_TRUE(*better);
  for (const ir::Instruction* i : rewritten->entry()->MakePostOrder()) {
    if (i->opcode() != ir::Opcode::kTranspose) continue;
    bool reduce_reads = !i->users().empty();
    for (const ir::Instruction* u : i->users()) reduce_reads &= u->opcode() == ir::Opcode::kReduce;
    const bool boundary =
        i->operand(0)->opcode() == ir::Opcode::kParameter || rewritten->entry()->root() == i;
    EXPECT_TRUE(boundary || reduce_reads) << i->name() << " sits between convolutions";
  }
  ExpectSameValues(**module, *rewritten, 5);
}

TEST(CpuConvLayoutTest, SiluBlockMatchesTheEvaluatorThroughThePipeline) {
  absl::StatusOr<Pipelined> p = CompileThroughPipeline(kNchwSiluBlock);
  ASSERT_TRUE(p.ok()) << p.status();
  ExpectMatchesEvaluator(*p, {1, 2});
}

// A GroupNorm between convolutions reshapes the channels into groups: the transposes cannot
// pass the reshapes, so NHWC would leave strided copies around every layer; the rewrite says so.
TEST(CpuConvLayoutTest, TransposesThatDoNotCancelAreReported) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(R"(HloModule groupnorm
add {
  u = f32[] parameter(0)
  v = f32[] parameter(1)
  ROOT t = f32[] add(u, v)
}
ENTRY e {
  x = f32[1,8,6,6] parameter(0)
  w = f32[8,8,3,3] parameter(1)
  c = f32[1,8,6,6] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
  g = f32[1,2,4,6,6] reshape(c)
  z = f32[] constant(0)
  s = f32[1,2] reduce(g, z), dimensions={2,3,4}, to_apply=add
  sb = f32[1,2,4,6,6] broadcast(s), dimensions={0,1}
  d = f32[1,2,4,6,6] subtract(g, sb)
  r = f32[1,8,6,6] reshape(d)
  ROOT c2 = f32[1,8,6,6] convolution(r, w), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
})");
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<bool> better =
      CanonicalizeConvolutionLayouts(**module, passes::Registry::Global());
  ASSERT_TRUE(better.ok()) << better.status();
  EXPECT_FALSE(*better);
}

TEST(CpuConvLayoutTest, NhwcConvolutionsAreLeftAsTheyAre) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(R"(HloModule nhwc
ENTRY e {
  x = f32[1,8,8,4] parameter(0)
  w = f32[3,3,4,8] parameter(1)
  ROOT c = f32[1,8,8,8] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
})");
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_EQ(CanonicalizeConvolutions(**module), 0);
}

// Through the whole CPU pipeline and compiled: the generated program matches the evaluator.
TEST(CpuConvLayoutTest, NchwBlockMatchesTheEvaluatorThroughThePipeline) {
  absl::StatusOr<Pipelined> p = CompileThroughPipeline(kNchwBlock);
  ASSERT_TRUE(p.ok()) << p.status();
  ExpectMatchesEvaluator(*p, {1, 2});
}

}  // namespace
}  // namespace mltune::backends::cpu
