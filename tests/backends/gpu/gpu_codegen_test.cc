// The GPU code generator without a GPU: every kernel of the op suite (tests/backends/op_cases.h)
// that the GPU generates, under its default configuration and every other value of each
// parameter (one at a time), compiles with NVRTC and assembles with ptxas for sm_90; kinds not
// generated yet say so. Running the kernels and comparing them with the evaluator needs a device
// (scripts/gpu_check).
#include "backends/gpu/gpu_codegen.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/lowering.h"
#include "backends/gpu/nvrtc_compiler.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "tests/backends/op_cases.h"

namespace mltune::backends::gpu {
namespace {

struct Lowered {
  std::unique_ptr<ir::Module> module;
  cpu::LoweredModule lowered;
};

Lowered LowerHlo(const char* hlo) {
  Lowered out;
  absl::StatusOr<std::unique_ptr<ir::Module>> parsed = ir::ParseHloText(hlo);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return out;
  absl::StatusOr<std::unique_ptr<ir::Module>> optimized =
      cpu::RunCpuPipeline(**parsed, /*nhwc_convolutions=*/false);
  EXPECT_TRUE(optimized.ok()) << optimized.status();
  if (!optimized.ok()) return out;
  out.module = *std::move(optimized);
  absl::StatusOr<cpu::LoweredModule> lowered = cpu::Lower(*out.module);
  EXPECT_TRUE(lowered.ok()) << lowered.status();
  if (lowered.ok()) out.lowered = *std::move(lowered);
  return out;
}

NvrtcOptions Options() {
  NvrtcOptions o;
  o.arch = "sm_90";
  o.cache_dir = std::string(MLTUNE_TEST_KERNEL_CACHE) + "-gpu";
  return o;
}

// The default configuration, then each other value of each parameter alone.
std::vector<cpu::KernelConfig> Variants(const cpu::Kernel& k) {
  const std::vector<cpu::KernelParam> params = GpuKernelParams(k);
  const cpu::KernelConfig base = DefaultGpuConfig(k);
  std::vector<cpu::KernelConfig> out = {base};
  for (size_t i = 0; i < params.size(); ++i) {
    for (size_t c = 1; c < params[i].choices.size(); ++c) {
      cpu::KernelConfig v = base;
      v[i] = params[i].choices[c];
      out.push_back(v);
    }
  }
  return out;
}

std::string Describe(const cpu::Kernel& k, const cpu::KernelConfig& config) {
  std::string s = absl::StrCat(k.name, " (", cpu::KernelKindName(k.kind), ")");
  const std::vector<cpu::KernelParam> params = GpuKernelParams(k);
  for (size_t i = 0; i < params.size() && i < config.size(); ++i) {
    absl::StrAppend(&s, " ", params[i].name, "=", config[i]);
  }
  return s;
}

class GpuCodegenTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (NvrtcVersion().empty()) GTEST_SKIP() << "built without the CUDA toolkit: no NVRTC";
  }
};

TEST_P(GpuCodegenTest, EveryConfigurationCompilesToPtxThatAssembles) {
  const Case* found = nullptr;
  for (const Case& c : kOpCases) {
    if (std::string(c.name) == GetParam()) found = &c;
  }
  ASSERT_NE(found, nullptr);
  Lowered l = LowerHlo(found->hlo);
  ASSERT_NE(l.module, nullptr);
  int generated = 0;
  for (const cpu::Kernel& k : l.lowered.kernels) {
    if (!CheckGpuSupported(k).ok()) continue;
    for (const cpu::KernelConfig& config : Variants(k)) {
      absl::StatusOr<GpuKernelProgram> program = GenerateGpuKernel(l.lowered, k.id, config);
      if (absl::IsInvalidArgument(program.status()) || absl::IsUnimplemented(program.status())) {
        // A dot tile needing too many threads, a convolution: said, not generated.
        EXPECT_NE(program.status().message().find(k.name), std::string::npos) << program.status();
        continue;
      }
      ASSERT_TRUE(program.ok()) << Describe(k, config) << ": " << program.status();
      ASSERT_FALSE(program->launches.empty()) << Describe(k, config);
      absl::StatusOr<PtxModule> ptx =
          CompileToPtx(program->source, program->name + ".cu", Options());
      ASSERT_TRUE(ptx.ok()) << Describe(k, config) << ": " << ptx.status() << "\n"
                            << program->source;
      for (const GpuLaunch& launch : program->launches) {
        if (launch.kind != GpuLaunch::Kind::kKernel) {  // cuBLASLt or cuDNN
          EXPECT_EQ(launch.args.size(), 3u) << Describe(k, config);
          continue;
        }
        EXPECT_NE(ptx->ptx.find(absl::StrCat(".entry ", launch.entry)), std::string::npos)
            << Describe(k, config) << ": no entry " << launch.entry;
        EXPECT_GE(launch.block, 32) << Describe(k, config);
        EXPECT_LE(launch.block, 1024) << Describe(k, config);
      }
      const absl::Status assembled = AssemblePtx(ptx->ptx, "sm_90");
      ASSERT_TRUE(assembled.ok()) << Describe(k, config) << ": " << assembled;
      ++generated;
    }
  }
  // Cases whose kernels are all of kinds not generated yet (control flow, sort, scatter,
  // convolutions, library calls) still lowered and said so; the rest produced code.
  RecordProperty("generated", generated);
}

std::vector<const char*> CaseNames() {
  std::vector<const char*> names;
  for (const Case& c : kOpCases) names.push_back(c.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Ops, GpuCodegenTest, ::testing::ValuesIn(CaseNames()),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

// Kinds the GPU does not generate yet are refused by name, before any code is written.
TEST(GpuCodegenSupportTest, UngeneratedKindsAreNamedInTheError) {
  Lowered l = LowerHlo(R"(
HloModule m
cond {
  p = (s32[], f32[4]) parameter(0)
  i = s32[] get-tuple-element(p), index=0
  n = s32[] constant(3)
  ROOT lt = pred[] compare(i, n), direction=LT
}
body {
  pb = (s32[], f32[4]) parameter(0)
  ib = s32[] get-tuple-element(pb), index=0
  xb = f32[4] get-tuple-element(pb), index=1
  one = s32[] constant(1)
  j = s32[] add(ib, one)
  y = f32[4] add(xb, xb)
  ROOT tb = (s32[], f32[4]) tuple(j, y)
}
ENTRY e {
  x = f32[4] parameter(0)
  z = s32[] constant(0)
  t = (s32[], f32[4]) tuple(z, x)
  w = (s32[], f32[4]) while(t), condition=cond, body=body
  ROOT r = f32[4] get-tuple-element(w), index=1
})");
  ASSERT_NE(l.module, nullptr);
  bool saw_while = false;
  for (const cpu::Kernel& k : l.lowered.kernels) {
    if (k.kind != cpu::KernelKind::kWhile) continue;
    saw_while = true;
    const absl::Status s = CheckGpuSupported(k);
    EXPECT_TRUE(absl::IsUnimplemented(s)) << s;
    EXPECT_NE(s.message().find("while"), std::string::npos) << s;
    EXPECT_TRUE(absl::IsUnimplemented(GenerateGpuKernel(l.lowered, k.id).status()));
  }
  EXPECT_TRUE(saw_while);
}

// A dot's tiles: a thread tile that does not divide the block tile, or a block of more than
// 1,024 threads, is refused with the kernel's name; the default compiles.
TEST(GpuCodegenSupportTest, DotTilesOutsideTheLimitsAreRefused) {
  Lowered l = LowerHlo(R"(
HloModule m
ENTRY e {
  a = f32[96,80] parameter(0)
  b = f32[80,72] parameter(1)
  ROOT d = f32[96,72] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  ASSERT_NE(l.module, nullptr);
  ASSERT_EQ(l.lowered.kernels.size(), 1u);
  const cpu::Kernel& k = l.lowered.kernels[0];
  ASSERT_EQ(k.kind, cpu::KernelKind::kDot);
  EXPECT_TRUE(GenerateGpuKernel(l.lowered, 0).ok());
  // tile 128x128 with 2x2 per thread: 4,096 threads.
  absl::StatusOr<GpuKernelProgram> big = GenerateGpuKernel(l.lowered, 0, {0, 128, 128, 16, 2, 2});
  EXPECT_TRUE(absl::IsInvalidArgument(big.status())) << big.status();
  EXPECT_NE(big.status().message().find("4096 threads"), std::string::npos) << big.status();
  // A value that is not a choice.
  EXPECT_TRUE(
      absl::IsInvalidArgument(GenerateGpuKernel(l.lowered, 0, {0, 48, 64, 16, 4, 4}).status()));
  // Too few values.
  EXPECT_TRUE(absl::IsInvalidArgument(GenerateGpuKernel(l.lowered, 0, {64}).status()));
}

// A dot's configuration with the generated GEMM (impl 0) and the default tiles.
cpu::KernelConfig Generated(const cpu::Kernel& k) {
  cpu::KernelConfig config = DefaultGpuConfig(k);
  config[0] = 0;
  return config;
}

// A dot whose epilogue reads its product transposed gets a second launch over a workspace;
// one whose epilogue is elementwise keeps it in registers.
TEST(GpuCodegenSupportTest, EpiloguesThatMoveTheProductGetASecondLaunch) {
  Lowered fused = LowerHlo(R"(
HloModule m
ENTRY e {
  a = f32[64,32] parameter(0)
  b = f32[32,48] parameter(1)
  c = f32[48] parameter(2)
  d = f32[64,48] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  cb = f32[64,48] broadcast(c), dimensions={1}
  s = f32[64,48] add(d, cb)
  z = f32[] constant(0)
  zb = f32[64,48] broadcast(z), dimensions={}
  ROOT r = f32[64,48] maximum(s, zb)
})");
  ASSERT_NE(fused.module, nullptr);
  int dots = 0;
  for (const cpu::Kernel& k : fused.lowered.kernels) {
    if (k.kind != cpu::KernelKind::kDot) continue;
    ++dots;
    absl::StatusOr<GpuKernelProgram> p = GenerateGpuKernel(fused.lowered, k.id, Generated(k));
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->launches.size(), 1u);
    EXPECT_TRUE(p->workspaces.empty());
  }
  EXPECT_EQ(dots, 1);
  Lowered moved = LowerHlo(R"(
HloModule m
ENTRY e {
  a = f32[64,32] parameter(0)
  b = f32[32,48] parameter(1)
  d = f32[64,48] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  t = f32[48,64] transpose(d), dimensions={1,0}
  ROOT r = f32[48,64] exponential(t)
})");
  ASSERT_NE(moved.module, nullptr);
  for (const cpu::Kernel& k : moved.lowered.kernels) {
    if (k.kind != cpu::KernelKind::kDot) continue;
    absl::StatusOr<GpuKernelProgram> p = GenerateGpuKernel(moved.lowered, k.id, Generated(k));
    ASSERT_TRUE(p.ok()) << p.status();
    if (k.outputs.size() == 1 && k.outputs[0] == k.root) continue;  // nothing fused after it
    ASSERT_EQ(p->launches.size(), 2u) << p->source;
    EXPECT_EQ(p->launches[1].entry, absl::StrCat(p->name, "_epilogue"));
    EXPECT_EQ(p->workspaces, std::vector<int64_t>{64 * 48 * 4});
  }
}

// Large dots default to cuBLASLt: operands read in place where they are row-major f32 buffers in
// the GEMM's order, packed otherwise, the product written into the dot's output when it is one,
// and an epilogue launch only where something is left to compute.
TEST(GpuCodegenSupportTest, LargeDotsGoToCublasLtWithPacksAndEpiloguesOnlyWhereNeeded) {
  Lowered plain = LowerHlo(R"(
HloModule m
ENTRY e {
  a = f32[128,64] parameter(0)
  b = f32[64,96] parameter(1)
  ROOT d = f32[128,96] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  ASSERT_NE(plain.module, nullptr);
  ASSERT_EQ(plain.lowered.kernels.size(), 1u);
  EXPECT_EQ(DefaultGpuConfig(plain.lowered.kernels[0])[0], 1);
  absl::StatusOr<GpuKernelProgram> p = GenerateGpuKernel(plain.lowered, 0);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->launches.size(), 1u);
  const GpuLaunch& gemm = p->launches[0];
  EXPECT_EQ(gemm.kind, GpuLaunch::Kind::kGemm);
  EXPECT_EQ(gemm.m, 128);
  EXPECT_EQ(gemm.n, 96);
  EXPECT_EQ(gemm.k, 64);
  EXPECT_EQ(gemm.algo, 1);
  ASSERT_EQ(gemm.args.size(), 3u);
  EXPECT_EQ(gemm.args[0].kind, GpuArg::Kind::kInput);
  EXPECT_EQ(gemm.args[1].kind, GpuArg::Kind::kInput);
  EXPECT_EQ(gemm.args[2].kind, GpuArg::Kind::kOutput);
  EXPECT_TRUE(p->workspaces.empty());

  Lowered packed = LowerHlo(R"(
HloModule m
ENTRY e {
  a = f32[64,128] parameter(0)
  b = f32[64,96] parameter(1)
  c = f32[96] parameter(2)
  d = f32[128,96] dot(a, b), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  cb = f32[128,96] broadcast(c), dimensions={1}
  ROOT s = f32[128,96] add(d, cb)
})");
  ASSERT_NE(packed.module, nullptr);
  for (const cpu::Kernel& k : packed.lowered.kernels) {
    if (k.kind != cpu::KernelKind::kDot) continue;
    absl::StatusOr<GpuKernelProgram> q = GenerateGpuKernel(packed.lowered, k.id);
    ASSERT_TRUE(q.ok()) << q.status();
    // The lhs is stored contraction-first: packed; the rhs is read in place; the bias added after.
    ASSERT_EQ(q->launches.size(), 3u) << q->source;
    EXPECT_EQ(q->launches[0].entry, absl::StrCat(q->name, "_pack_a"));
    EXPECT_EQ(q->launches[1].kind, GpuLaunch::Kind::kGemm);
    EXPECT_EQ(q->launches[1].args[0].kind, GpuArg::Kind::kWorkspace);
    EXPECT_EQ(q->launches[1].args[1].kind, GpuArg::Kind::kInput);
    EXPECT_EQ(q->launches[2].entry, absl::StrCat(q->name, "_epilogue"));
    EXPECT_EQ(q->workspaces, (std::vector<int64_t>{128 * 64 * 4, 128 * 96 * 4}));
    if (NvrtcVersion().empty()) continue;
    absl::StatusOr<PtxModule> ptx = CompileToPtx(q->source, q->name + ".cu", Options());
    ASSERT_TRUE(ptx.ok()) << ptx.status();
    EXPECT_TRUE(AssemblePtx(ptx->ptx, "sm_90").ok());
  }
}

// The only convolution kernel of `hlo`, generated with `impl` (the first GPU parameter; -1: the
// default), compiled to PTX and assembled where NVRTC is present.
void OnlyConvolution(const char* hlo, GpuKernelProgram* out, int64_t impl = -1) {
  Lowered l = LowerHlo(hlo);
  ASSERT_NE(l.module, nullptr);
  for (const cpu::Kernel& k : l.lowered.kernels) {
    if (k.kind != cpu::KernelKind::kConvolution) continue;
    cpu::KernelConfig config = DefaultGpuConfig(k);
    ASSERT_EQ(GpuKernelParams(k)[0].name, "impl");
    if (impl >= 0) config[0] = impl;
    absl::StatusOr<GpuKernelProgram> p = GenerateGpuKernel(l.lowered, k.id, config);
    ASSERT_TRUE(p.ok()) << p.status();
    *out = *std::move(p);
    if (NvrtcVersion().empty()) return;
    absl::StatusOr<PtxModule> ptx = CompileToPtx(out->source, out->name + ".cu", Options());
    ASSERT_TRUE(ptx.ok()) << ptx.status();
    EXPECT_TRUE(AssemblePtx(ptx->ptx, "sm_90").ok());
    return;
  }
  FAIL() << "no convolution kernel";
}

// The impl choices of the only convolution kernel of `hlo`, the default first.
std::vector<int64_t> ConvolutionImpls(const char* hlo) {
  Lowered l = LowerHlo(hlo);
  if (l.module == nullptr) return {};
  for (const cpu::Kernel& k : l.lowered.kernels) {
    if (k.kind == cpu::KernelKind::kConvolution) return GpuKernelParams(k)[0].choices;
  }
  return {};
}

constexpr char kNhwc3x3[] = R"(
HloModule m
ENTRY e {
  x = f32[1,14,14,64] parameter(0)
  w = f32[3,3,64,32] parameter(1)
  ROOT c = f32[1,14,14,32] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f
})";

constexpr char kNchw3x3[] = R"(
HloModule m
ENTRY e {
  x = f32[1,64,56,56] parameter(0)
  w = f32[32,64,3,3] parameter(1)
  ROOT c = f32[1,32,56,56] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=bf01_oi01->bf01
})";

// On cuBLASLt a convolution is a GEMM over im2col: an NHWC input of a 1x1 window at stride 1 and
// HWIO weights are read in place and the product is the NHWC output (the default there: cuDNN
// would have to pack the weights); a 3x3 window packs the input (zero where the window leaves
// it); an NCHW output takes the product through an epilogue.
TEST(GpuCodegenSupportTest, ConvolutionsOnCublasLtAreGemmsOverIm2col) {
  GpuKernelProgram pointwise;
  OnlyConvolution(R"(
HloModule m
ENTRY e {
  x = f32[2,14,14,64] parameter(0)
  w = f32[1,1,64,32] parameter(1)
  ROOT c = f32[2,14,14,32] convolution(x, w), window={size=1x1}, dim_labels=b01f_01io->b01f
})",
                  &pointwise);
  ASSERT_EQ(pointwise.launches.size(), 1u) << pointwise.source;
  const GpuLaunch& g = pointwise.launches[0];
  EXPECT_EQ(g.kind, GpuLaunch::Kind::kGemm);
  EXPECT_EQ(g.m, 2 * 14 * 14);
  EXPECT_EQ(g.n, 32);
  EXPECT_EQ(g.k, 64);
  EXPECT_EQ(g.args[0].kind, GpuArg::Kind::kInput);
  EXPECT_EQ(g.args[1].kind, GpuArg::Kind::kInput);
  EXPECT_EQ(g.args[2].kind, GpuArg::Kind::kOutput);

  GpuKernelProgram windowed;
  OnlyConvolution(kNhwc3x3, &windowed, /*impl=*/1);
  ASSERT_EQ(windowed.launches.size(), 2u) << windowed.source;
  EXPECT_EQ(windowed.launches[0].entry, absl::StrCat(windowed.name, "_pack_a"));
  EXPECT_EQ(windowed.launches[1].k, 9 * 64);
  EXPECT_EQ(windowed.launches[1].args[1].kind, GpuArg::Kind::kInput);
  EXPECT_EQ(windowed.launches[1].args[2].kind, GpuArg::Kind::kOutput);
  EXPECT_EQ(windowed.workspaces, (std::vector<int64_t>{14 * 14 * 9 * 64 * 4}));

  GpuKernelProgram nchw;
  OnlyConvolution(kNchw3x3, &nchw, /*impl=*/1);
  ASSERT_EQ(nchw.launches.size(), 4u) << nchw.source;  // pack, pack, GEMM, epilogue
  EXPECT_EQ(nchw.launches[2].kind, GpuLaunch::Kind::kGemm);
  EXPECT_EQ(nchw.launches[2].args[2].kind, GpuArg::Kind::kWorkspace);
  EXPECT_EQ(nchw.launches[3].entry, absl::StrCat(nchw.name, "_epilogue"));
}

// On cuDNN: NCHW/OIHW is read and written in place (one launch, the default where the GEMM has
// at least as many rows as its contraction); NHWC with HWIO weights packs the weights to OHWI;
// asymmetric padding is applied by packing the input; a depthwise convolution is cuDNN's
// grouped one; a 1-D convolution gets a unit spatial dimension; batch groups are not offered.
TEST(GpuCodegenSupportTest, ConvolutionsOnCudnnPackOnlyWhatItCannotRead) {
  GpuKernelProgram nchw;
  OnlyConvolution(kNchw3x3, &nchw);
  ASSERT_EQ(nchw.launches.size(), 1u) << nchw.source;
  const GpuLaunch& c = nchw.launches[0];
  EXPECT_EQ(c.kind, GpuLaunch::Kind::kConv);
  EXPECT_EQ(c.algo, 1);
  EXPECT_FALSE(c.conv.nhwc);
  EXPECT_EQ(c.conv.x, (std::vector<int64_t>{1, 64, 56, 56}));
  EXPECT_EQ(c.conv.w, (std::vector<int64_t>{32, 64, 3, 3}));
  EXPECT_EQ(c.conv.y, (std::vector<int64_t>{1, 32, 56, 56}));
  EXPECT_EQ(c.conv.pad, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(c.args[0].kind, GpuArg::Kind::kInput);
  EXPECT_EQ(c.args[1].kind, GpuArg::Kind::kInput);
  EXPECT_EQ(c.args[2].kind, GpuArg::Kind::kOutput);
  GpuKernelProgram third;
  OnlyConvolution(kNchw3x3, &third, /*impl=*/7);
  ASSERT_EQ(third.launches.size(), 1u);
  EXPECT_EQ(third.launches[0].algo, 3);

  // 196 rows against a contraction of 576: cuBLASLt by default.
  EXPECT_EQ(ConvolutionImpls(kNhwc3x3).front(), 1);
  GpuKernelProgram nhwc;
  OnlyConvolution(kNhwc3x3, &nhwc, /*impl=*/5);
  ASSERT_EQ(nhwc.launches.size(), 2u) << nhwc.source;
  EXPECT_EQ(nhwc.launches[0].entry, absl::StrCat(nhwc.name, "_pack_w"));
  const GpuLaunch& h = nhwc.launches[1];
  EXPECT_EQ(h.kind, GpuLaunch::Kind::kConv);
  EXPECT_TRUE(h.conv.nhwc);
  EXPECT_EQ(h.conv.w, (std::vector<int64_t>{32, 64, 3, 3}));
  EXPECT_EQ(h.args[0].kind, GpuArg::Kind::kInput);
  EXPECT_EQ(h.args[1].kind, GpuArg::Kind::kWorkspace);
  EXPECT_EQ(h.args[2].kind, GpuArg::Kind::kOutput);
  EXPECT_EQ(nhwc.workspaces, (std::vector<int64_t>{3 * 3 * 64 * 32 * 4}));

  GpuKernelProgram same;  // JAX's SAME padding at stride 2: 0 before, 1 after
  OnlyConvolution(R"(
HloModule m
ENTRY e {
  x = f32[1,16,16,8] parameter(0)
  w = f32[3,3,8,64] parameter(1)
  ROOT c = f32[1,8,8,64] convolution(x, w), window={size=3x3 stride=2x2 pad=0_1x0_1}, dim_labels=b01f_01io->b01f
})",
                  &same, /*impl=*/5);
  ASSERT_EQ(same.launches.size(), 3u) << same.source;
  EXPECT_EQ(same.launches[0].entry, absl::StrCat(same.name, "_pack_x"));
  EXPECT_EQ(same.launches[2].conv.x, (std::vector<int64_t>{1, 8, 17, 17}));
  EXPECT_EQ(same.launches[2].conv.pad, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(same.launches[2].conv.stride, (std::vector<int64_t>{2, 2}));

  GpuKernelProgram depthwise;
  OnlyConvolution(R"(
HloModule m
ENTRY e {
  x = f32[1,56,56,64] parameter(0)
  w = f32[3,3,1,64] parameter(1)
  ROOT c = f32[1,56,56,64] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_01io->b01f, feature_group_count=64
})",
                  &depthwise);
  ASSERT_FALSE(depthwise.launches.empty());
  EXPECT_EQ(depthwise.launches.back().kind, GpuLaunch::Kind::kConv);
  EXPECT_EQ(depthwise.launches.back().conv.groups, 64);
  EXPECT_EQ(depthwise.launches.back().conv.w, (std::vector<int64_t>{64, 1, 3, 3}));

  GpuKernelProgram one_d;
  OnlyConvolution(R"(
HloModule m
ENTRY e {
  x = f32[2,16,100] parameter(0)
  w = f32[32,16,5] parameter(1)
  ROOT c = f32[2,32,96] convolution(x, w), window={size=5}, dim_labels=bf0_oi0->bf0
})",
                  &one_d, /*impl=*/5);
  ASSERT_EQ(one_d.launches.size(), 1u) << one_d.source;
  EXPECT_EQ(one_d.launches[0].conv.x, (std::vector<int64_t>{2, 16, 100, 1}));
  EXPECT_EQ(one_d.launches[0].conv.y, (std::vector<int64_t>{2, 32, 96, 1}));

  const std::vector<int64_t> batch_grouped = ConvolutionImpls(R"(
HloModule m
ENTRY e {
  x = f32[4,1,5,5] parameter(0)
  dy = f32[4,1,2,2] parameter(1)
  ROOT c = f32[1,4,4,4] convolution(x, dy), window={size=2x2}, dim_labels=bf01_io01->bf01, batch_group_count=4
})");
  ASSERT_FALSE(batch_grouped.empty());
  EXPECT_EQ(std::count(batch_grouped.begin(), batch_grouped.end(), 5), 0);
}

}  // namespace
}  // namespace mltune::backends::gpu
