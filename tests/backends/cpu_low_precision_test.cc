// bf16 and f16 models on the CPU backend: their dots and convolutions run as the f32 GEMM and
// convolution kernels (operands converted in the packing, the result rounded once), as XLA's CPU
// backend runs them, and whole blocks match the evaluator, which computes the 16-bit ops directly.
#include <cstdlib>
#include <memory>
#include <string>

#include "backends/cpu/cpu_backend.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "tests/backends/cpu_pipelined.h"

namespace mltune::backends::cpu {
namespace {

// A ConvNeXt block in bf16: depthwise 7x7 convolution, layer norm over the channels (in f32, as
// frameworks compute it), pointwise expansion, tanh GELU, projection, layer scale, residual.
constexpr char kConvNeXtBlock[] = R"(HloModule convnext_bf16

add_f32 {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT s = f32[] add(lhs, rhs)
}

ENTRY main {
  x = bf16[1,14,14,32] parameter(0)
  dw = bf16[7,7,1,32] parameter(1)
  w1 = bf16[32,128] parameter(2)
  w2 = bf16[128,32] parameter(3)
  gamma = bf16[32] parameter(4)
  conv = bf16[1,14,14,32] convolution(x, dw), window={size=7x7 pad=3_3x3_3}, dim_labels=b01f_01io->b01f, feature_group_count=32
  cf = f32[1,14,14,32] convert(conv)
  zero = f32[] constant(0)
  sum = f32[1,14,14] reduce(cf, zero), dimensions={3}, to_apply=add_f32
  inv_n = f32[] constant(0.03125)
  inv_nb = f32[1,14,14] broadcast(inv_n), dimensions={}
  mean = f32[1,14,14] multiply(sum, inv_nb)
  meanb = f32[1,14,14,32] broadcast(mean), dimensions={0,1,2}
  cen = f32[1,14,14,32] subtract(cf, meanb)
  sq = f32[1,14,14,32] multiply(cen, cen)
  ss = f32[1,14,14] reduce(sq, zero), dimensions={3}, to_apply=add_f32
  var = f32[1,14,14] multiply(ss, inv_nb)
  eps = f32[] constant(1e-06)
  epsb = f32[1,14,14] broadcast(eps), dimensions={}
  ve = f32[1,14,14] add(var, epsb)
  rs = f32[1,14,14] rsqrt(ve)
  rsb = f32[1,14,14,32] broadcast(rs), dimensions={0,1,2}
  nrm = f32[1,14,14,32] multiply(cen, rsb)
  ln = bf16[1,14,14,32] convert(nrm)
  h = bf16[1,14,14,128] dot(ln, w1), lhs_contracting_dims={3}, rhs_contracting_dims={0}
  half = bf16[] constant(0.5)
  halfb = bf16[1,14,14,128] broadcast(half), dimensions={}
  c0 = bf16[] constant(0.796875)
  c0b = bf16[1,14,14,128] broadcast(c0), dimensions={}
  c1 = bf16[] constant(0.044677734375)
  c1b = bf16[1,14,14,128] broadcast(c1), dimensions={}
  one = bf16[] constant(1)
  oneb = bf16[1,14,14,128] broadcast(one), dimensions={}
  h2 = bf16[1,14,14,128] multiply(h, h)
  h3 = bf16[1,14,14,128] multiply(h2, h)
  ch3 = bf16[1,14,14,128] multiply(c1b, h3)
  inner = bf16[1,14,14,128] add(h, ch3)
  arg = bf16[1,14,14,128] multiply(c0b, inner)
  t = bf16[1,14,14,128] tanh(arg)
  tp = bf16[1,14,14,128] add(oneb, t)
  hh = bf16[1,14,14,128] multiply(halfb, h)
  g = bf16[1,14,14,128] multiply(hh, tp)
  o = bf16[1,14,14,32] dot(g, w2), lhs_contracting_dims={3}, rhs_contracting_dims={0}
  gb = bf16[1,14,14,32] broadcast(gamma), dimensions={3}
  ls = bf16[1,14,14,32] multiply(o, gb)
  ROOT y = bf16[1,14,14,32] add(x, ls)
}
)";

// A bf16 linear layer as PyTorch/XLA exports one: the weight transposed into the dot, a bias,
// a scalar literal of the model's type (the f32-meets-double case), and an f32 loss-like sum.
constexpr char kLinear[] = R"(HloModule linear_bf16

add_f32 {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT sum = f32[] add(lhs, rhs)
}

ENTRY main {
  x = bf16[8,64] parameter(0)
  w = bf16[32,64] parameter(1)
  b = bf16[32] parameter(2)
  wt = bf16[64,32] transpose(w), dimensions={1,0}
  d = bf16[8,32] dot(x, wt), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = bf16[8,32] broadcast(b), dimensions={1}
  y = bf16[8,32] add(d, bb)
  zero = bf16[] constant(0)
  zb = bf16[8,32] broadcast(zero), dimensions={}
  r = bf16[8,32] maximum(y, zb)
  c = bf16[] constant(0.125)
  cb = bf16[8,32] broadcast(c), dimensions={}
  s = bf16[8,32] multiply(r, cb)
  sf = f32[8,32] convert(s)
  fz = f32[] constant(0)
  loss = f32[] reduce(sf, fz), dimensions={0,1}, to_apply=add_f32
  pf = f32[8,32] dot(x, wt), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  hx = f16[8,64] convert(x)
  hw = f16[64,32] convert(wt)
  hd = f16[8,32] dot(hx, hw), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  hc = f16[] constant(1.5)
  hcb = f16[8,32] broadcast(hc), dimensions={}
  hs = f16[8,32] multiply(hd, hcb)
  ROOT out = (bf16[8,32], f32[], f32[8,32], f16[8,32]) tuple(s, loss, pf, hs)
}
)";

// An f16 convolution (NCHW) with an f32 result.
constexpr char kF16Conv[] = R"(HloModule conv_f16

ENTRY main {
  x = f16[2,3,9,9] parameter(0)
  w = f16[8,3,3,3] parameter(1)
  ROOT c = f32[2,8,9,9] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
}
)";

class CpuLowPrecisionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0); }

  // Runs `text` through the CPU pipeline, checks that its dots and convolutions became `dots`
  // GEMM and `convs` convolution kernels, none fed by a kernel that only converts a parameter
  // (the converts fuse into the packing), and that the module matches the evaluator.
  static void Check(const char* text, int dots, int convs) {
    absl::StatusOr<Pipelined> p = CompileThroughPipeline(text);
    ASSERT_TRUE(p.ok()) << p.status();
    const CompiledModule* compiled = &p->compiled;
    int gemms = 0, convolutions = 0;
    for (const Kernel& k : compiled->lowered.kernels) {
      gemms += k.kind == KernelKind::kDot;
      convolutions += k.kind == KernelKind::kConvolution;
      for (const ir::Instruction* m : k.members) {
        EXPECT_FALSE(k.kind == KernelKind::kLoop && m->opcode() == ir::Opcode::kDot)
            << "dot '" << m->name() << "' folded element by element in loop kernel " << k.name;
      }
      const bool converts_a_parameter = k.kind == KernelKind::kLoop && k.members.size() == 1 &&
                                        k.root->opcode() == ir::Opcode::kConvert &&
                                        k.root->operand(0)->opcode() == ir::Opcode::kParameter;
      EXPECT_FALSE(converts_a_parameter) << "kernel " << k.name << " only converts a parameter";
    }
    EXPECT_EQ(gemms, dots);
    EXPECT_EQ(convolutions, convs);
    ExpectMatchesEvaluator(*p, {1, 2});
  }
};

TEST_F(CpuLowPrecisionTest, ConvNeXtBlockInBf16) { Check(kConvNeXtBlock, 2, 1); }

TEST_F(CpuLowPrecisionTest, LinearModelInBf16) { Check(kLinear, 3, 0); }

TEST_F(CpuLowPrecisionTest, F16ConvolutionWithAnF32Result) { Check(kF16Conv, 0, 1); }

// Lowered without the pipeline, a bf16 convolution is refused with the reason.
TEST_F(CpuLowPrecisionTest, UnconvertedConvolutionIsRefusedClearly) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(kF16Conv);
  ASSERT_TRUE(module.ok());
  const absl::Status s = CheckSupported(**module);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("convolution 'c'"), std::string::npos) << s;
  EXPECT_NE(std::string(s.message()).find("RunCpuPasses"), std::string::npos) << s;
}

}  // namespace
}  // namespace mltune::backends::cpu
