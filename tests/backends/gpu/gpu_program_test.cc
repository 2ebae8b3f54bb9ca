// A module on the GPU: buffers and launches planned consistently with the PTX (each launch passes
// as many buffers as its entry takes), kinds not generated refused by name, and, where a device
// is attached (scripts/gpu_check), every op-suite module whose kernels the GPU generates run and
// compared with the reference evaluator. Without a device the run says why, and that test skips.
#include "backends/gpu/gpu_program.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/gpu/device.h"
#include "backends/gpu/gpu_codegen.h"
#include "gtest/gtest.h"
#include "ir/evaluator/evaluator.h"
#include "ir/hlo_parser.h"
#include "optimizers/tiling/gpu_tile_problem.h"
#include "tests/backends/op_cases.h"

namespace mltune::backends::gpu {
namespace {

struct Compiled {
  std::unique_ptr<ir::Module> original, optimized;
  cpu::LoweredModule lowered;
  absl::StatusOr<GpuModuleProgram> program = absl::UnknownError("not compiled");
};

// kAlternatives: every dot and convolution on cuBLASLt (impl 1) and every reduction over major
// dimensions in column tiles (split 3), whatever their defaults; kCudnn: every convolution cuDNN
// takes on cuDNN (impl 5), the rest as the defaults.
enum class Variant { kDefaults, kAlternatives, kCudnn };
const char* VariantName(Variant v) {
  return v == Variant::kDefaults ? "defaults" : v == Variant::kCudnn ? "cuDNN" : "alternatives";
}

Compiled Compile(const char* hlo, Variant variant = Variant::kDefaults) {
  Compiled c;
  absl::StatusOr<std::unique_ptr<ir::Module>> parsed = ir::ParseHloText(hlo);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return c;
  c.original = *std::move(parsed);
  absl::StatusOr<std::unique_ptr<ir::Module>> optimized =
      cpu::RunCpuPipeline(*c.original, /*nhwc_convolutions=*/false);
  EXPECT_TRUE(optimized.ok()) << optimized.status();
  if (!optimized.ok()) return c;
  c.optimized = *std::move(optimized);
  absl::StatusOr<cpu::LoweredModule> lowered = cpu::Lower(*c.optimized);
  EXPECT_TRUE(lowered.ok()) << lowered.status();
  if (!lowered.ok()) return c;
  c.lowered = *std::move(lowered);
  NvrtcOptions options;
  options.cache_dir = std::string(MLTUNE_TEST_KERNEL_CACHE) + "-gpu";
  absl::StatusOr<DeviceDescriptor> device = ProbeDevice(0);
  if (device.ok()) options.arch = device->Arch();
  std::vector<cpu::KernelConfig> configs;
  if (variant != Variant::kDefaults) {
    for (const cpu::Kernel& k : c.lowered.kernels) {
      const std::vector<cpu::KernelParam> params = GpuKernelParams(k);
      cpu::KernelConfig config = DefaultGpuConfig(k);
      for (size_t i = 0; i < params.size(); ++i) {
        const std::vector<int64_t>& choices = params[i].choices;
        const bool cudnn = std::find(choices.begin(), choices.end(), 5) != choices.end();
        if (variant == Variant::kCudnn) {
          if (params[i].name == "impl" && cudnn) config[i] = 5;
          continue;
        }
        if (params[i].name == "impl") config[i] = 1;
        if (params[i].name == "split" && config[i] == 0) config[i] = 3;
      }
      configs.push_back(config);
    }
  }
  c.program = CompileGpuModule(c.lowered, configs, options);
  return c;
}

// The number of .param entries of `entry` in `ptx`.
int PtxParams(const std::string& ptx, const std::string& entry) {
  const size_t at = ptx.find(absl::StrCat(".entry ", entry, "("));
  if (at == std::string::npos) return -1;
  const size_t end = ptx.find(')', at);
  int n = 0;
  for (size_t p = ptx.find(".param", at); p != std::string::npos && p < end;
       p = ptx.find(".param", p + 1)) {
    ++n;
  }
  return n;
}

constexpr char kBlock[] = R"(
HloModule block
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
max {
  c = f32[] parameter(0)
  d = f32[] parameter(1)
  ROOT m = f32[] maximum(c, d)
}
ENTRY e {
  x = f32[8,64] parameter(0)
  w = f32[64,32] parameter(1)
  bias = f32[32] parameter(2)
  h = f32[8,32] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  bb = f32[8,32] broadcast(bias), dimensions={1}
  z = f32[8,32] add(h, bb)
  ninf = f32[] constant(-inf)
  mx = f32[8] reduce(z, ninf), dimensions={1}, to_apply=max
  mxb = f32[8,32] broadcast(mx), dimensions={0}
  sh = f32[8,32] subtract(z, mxb)
  ex = f32[8,32] exponential(sh)
  zero = f32[] constant(0)
  sm = f32[8] reduce(ex, zero), dimensions={1}, to_apply=add
  smb = f32[8,32] broadcast(sm), dimensions={0}
  p = f32[8,32] divide(ex, smb)
  total = f32[] reduce(p, zero), dimensions={0,1}, to_apply=add
  ROOT t = (f32[8,32], f32[]) tuple(p, total)
})";

TEST(GpuProgramTest, LaunchesPassTheBuffersTheirEntriesTake) {
  if (NvrtcVersion().empty()) GTEST_SKIP() << "built without the CUDA toolkit: no NVRTC";
  Compiled c = Compile(kBlock);
  ASSERT_TRUE(c.program.ok()) << c.program.status();
  const GpuModuleProgram& p = *c.program;
  EXPECT_EQ(p.params.size(), 3u);
  ASSERT_EQ(p.results.size(), 2u);
  EXPECT_EQ(p.ptx.size(), c.lowered.kernels.size());
  std::set<int32_t> launched;
  for (const GpuModuleProgram::Launch& l : p.launches) {
    launched.insert(l.kernel);
    if (l.kind != GpuModuleProgram::Launch::Kind::kKernel) continue;
    ASSERT_LT(l.module, static_cast<int64_t>(p.ptx.size()));
    EXPECT_EQ(PtxParams(p.ptx[static_cast<size_t>(l.module)], l.entry),
              static_cast<int>(l.args.size()))
        << l.entry;
    for (int64_t b : l.args) {
      EXPECT_GE(b, 0) << l.entry;
      EXPECT_LT(b, static_cast<int64_t>(p.buffer_bytes.size())) << l.entry;
    }
  }
  EXPECT_EQ(launched.size(), c.lowered.kernels.size());
  for (const GpuModuleProgram::Result& r : p.results) {
    ASSERT_GE(r.buffer, 0);
    EXPECT_EQ(p.buffer_bytes[static_cast<size_t>(r.buffer)], r.shape.ByteSize());
  }
  // A launch reads only buffers written before it (or parameters).
  std::set<int64_t> ready;
  for (const GpuModuleProgram::Param& param : p.params) ready.insert(param.buffer);
  for (size_t i = 0; i < p.launches.size(); ++i) {
    const GpuModuleProgram::Launch& l = p.launches[i];
    if (l.kind != GpuModuleProgram::Launch::Kind::kKernel) continue;
    const cpu::Kernel& k = c.lowered.kernels[static_cast<size_t>(l.kernel)];
    for (size_t a = 0; a < k.inputs.size() && a < l.args.size(); ++a) {
      EXPECT_TRUE(ready.count(l.args[a]) != 0) << l.entry << " reads buffer " << l.args[a];
    }
    for (int64_t b : l.args) ready.insert(b);
  }
}

TEST(GpuProgramTest, KindsNotGeneratedAreListedByName) {
  if (NvrtcVersion().empty()) GTEST_SKIP() << "built without the CUDA toolkit: no NVRTC";
  Compiled c = Compile(R"(
HloModule m
cmp {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT lt = pred[] compare(a, b), direction=LT
}
ENTRY e {
  x = f32[16] parameter(0)
  ROOT s = f32[16] sort(x), dimensions={0}, to_apply=cmp
})");
  ASSERT_FALSE(c.program.ok());
  EXPECT_TRUE(absl::IsUnimplemented(c.program.status())) << c.program.status();
  EXPECT_NE(c.program.status().message().find("(sort)"), std::string::npos) << c.program.status();
}

// Without a device the runner says why nothing ran; with one, see the next test.
TEST(GpuProgramTest, WithoutADeviceTheRunSaysWhy) {
  if (NvrtcVersion().empty()) GTEST_SKIP() << "built without the CUDA toolkit: no NVRTC";
  if (GpuAbsentReason().empty()) GTEST_SKIP() << "a GPU is attached";
  Compiled c = Compile(kBlock);
  ASSERT_TRUE(c.program.ok()) << c.program.status();
  absl::StatusOr<GpuTiming> t = MeasureGpu(*c.program, 1);
  EXPECT_TRUE(absl::IsUnavailable(t.status())) << t.status();
  EXPECT_NE(t.status().message().find("CUDA"), std::string::npos) << t.status();
}

// Whether some kernel of the case's plan offers cuDNN.
bool TakesCudnn(const cpu::LoweredModule& lowered) {
  for (const cpu::Kernel& k : lowered.kernels) {
    for (const cpu::KernelParam& p : GpuKernelParams(k)) {
      if (p.name == "impl" && std::find(p.choices.begin(), p.choices.end(), 5) != p.choices.end()) {
        return true;
      }
    }
  }
  return false;
}

// Op-suite case `name` compiled (with the defaults, or a variant) and run through
// `options.runner`, checked against the evaluator; skipped where the GPU does not take a kernel
// (or, for kCudnn, where no convolution goes to cuDNN).
void CheckOpCase(const std::string& name, Variant variant, const GpuMeasureOptions& options) {
  const Case* found = nullptr;
  for (const Case& c : kOpCases) {
    if (c.name == name) found = &c;
  }
  ASSERT_NE(found, nullptr);
  Compiled c = Compile(found->hlo, variant);
  if (absl::IsUnimplemented(c.program.status())) {
    GTEST_SKIP() << c.program.status().message();
  }
  ASSERT_TRUE(c.program.ok()) << c.program.status();
  if (variant == Variant::kCudnn && !TakesCudnn(c.lowered)) return;
  int64_t ill = 0;
  const absl::Status s =
      CheckGpuAgainstEvaluator(*c.original, *c.program, 3, options, nullptr, &ill);
  EXPECT_TRUE(s.ok()) << VariantName(variant) << ": " << s;
}

class GpuOpSuiteTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (NvrtcVersion().empty()) GTEST_SKIP() << "built without the CUDA toolkit: no NVRTC";
    const std::string absent = GpuAbsentReason();
    if (!absent.empty()) GTEST_SKIP() << "needs a GPU (scripts/gpu_check): " << absent;
  }
};

TEST_P(GpuOpSuiteTest, MatchesTheEvaluatorOnTheDevice) {
  CheckOpCase(GetParam(), Variant::kDefaults, {});
}

// The library GEMM over im2col packs, the column-tile reductions and cuDNN's convolutions, which
// the small cases do not take by default.
TEST_P(GpuOpSuiteTest, AlternativeImplementationsMatchTheEvaluatorOnTheDevice) {
  CheckOpCase(GetParam(), Variant::kAlternatives, {});
  if (IsSkipped() || HasFatalFailure()) return;
  CheckOpCase(GetParam(), Variant::kCudnn, {});
}

// Every op-suite case, with its defaults and with the alternatives, run by mltune-gpu-emulator
// (the kernels compiled as host C++, a host thread per GPU thread where a kernel synchronizes) and
// checked against the evaluator: the generated code's indexing and arithmetic, without a GPU.
class GpuEmulatedOpSuiteTest : public ::testing::TestWithParam<const char*> {};

TEST_P(GpuEmulatedOpSuiteTest, MatchesTheEvaluatorOnTheHost) {
#ifndef MLTUNE_GPU_EMULATOR
  GTEST_SKIP() << "built without the CUDA toolkit: no mltune-gpu-emulator";
#else
  if (NvrtcVersion().empty()) GTEST_SKIP() << "built without the CUDA toolkit: no NVRTC";
  GpuMeasureOptions options;
  options.runner = MLTUNE_GPU_EMULATOR;
  options.timeout_seconds = 60;
  for (Variant variant : {Variant::kDefaults, Variant::kAlternatives, Variant::kCudnn}) {
    CheckOpCase(GetParam(), variant, options);
    if (IsSkipped() || HasFatalFailure()) return;
  }
#endif
}

std::vector<const char*> CaseNames() {
  std::vector<const char*> names;
  for (const Case& c : kOpCases) names.push_back(c.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Ops, GpuOpSuiteTest, ::testing::ValuesIn(CaseNames()),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });
INSTANTIATE_TEST_SUITE_P(Ops, GpuEmulatedOpSuiteTest, ::testing::ValuesIn(CaseNames()),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param);
                         });

// The GPU's tile search space: each kernel's GPU parameters, identical kernels (two equal layers)
// tuned as one part; without a device a measurement is an error, so a candidate is invalid.
TEST(GpuProgramTest, TileSearchSpaceIsTheGpuParametersWithIdenticalKernelsTunedOnce) {
  if (NvrtcVersion().empty()) GTEST_SKIP() << "built without the CUDA toolkit: no NVRTC";
  Compiled c = Compile(R"(
HloModule layers
ENTRY e {
  x = f32[256,128] parameter(0)
  y = f32[256,128] parameter(1)
  a = f32[256,128] tanh(x)
  b = f32[256,128] tanh(y)
  ROOT t = (f32[256,128], f32[256,128]) tuple(a, b)
})");
  ASSERT_TRUE(c.program.ok()) << c.program.status();
  ASSERT_EQ(c.lowered.kernels.size(), 2u);
  const cpu::LoweredModule space = opt::tiling::WithGpuParams(c.lowered);
  for (const cpu::Kernel& k : space.kernels) {
    ASSERT_FALSE(k.params.empty());
    EXPECT_EQ(k.params[0].name, "block");
  }
  absl::StatusOr<std::string> a = opt::tiling::GpuKernelProgramKey(space, space.kernels[0]);
  absl::StatusOr<std::string> b = opt::tiling::GpuKernelProgramKey(space, space.kernels[1]);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  NvrtcOptions nvrtc;
  nvrtc.cache_dir = std::string(MLTUNE_TEST_KERNEL_CACHE) + "-gpu";
  opt::tiling::CpuTileProblem problem(space, opt::tiling::GpuKernelMeasure(space, nvrtc, {}, 1),
                                      opt::tiling::GpuKernelProgramKey);
  EXPECT_EQ(problem.Parts().size(), 1u);
  EXPECT_NE(problem.ActionName(0, 1).find("block=128"), std::string::npos)
      << problem.ActionName(0, 1);
  if (GpuAbsentReason().empty()) return;
  EXPECT_FALSE(std::isfinite(problem.Evaluate(problem.DefaultCandidate())));
  EXPECT_NE(problem.last_error().find("CUDA"), std::string::npos) << problem.last_error();
}

}  // namespace
}  // namespace mltune::backends::gpu
