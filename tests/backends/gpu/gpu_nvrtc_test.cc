#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "backends/gpu/nvrtc_compiler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace mltune::backends::gpu {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using ::testing::Not;

constexpr char kScale[] = R"(
extern "C" __global__ void scale_div(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] / a + 1.0f;
}
)";

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = getenv(name); old != nullptr) old_ = old, had_ = true;
    value == nullptr ? unsetenv(name) : setenv(name, value, 1);
  }
  ~ScopedEnv() { had_ ? setenv(name_, old_.c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

// Each test compiles into a fresh cache of its own.
class GpuNvrtcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (NvrtcVersion().empty()) GTEST_SKIP() << "built without the CUDA toolkit";
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    cache_dir_ = absl::StrCat(::testing::TempDir(), "/gpu_nvrtc_", info->name(), "_", getpid());
    fs::remove_all(cache_dir_);
  }
  void TearDown() override { fs::remove_all(cache_dir_); }

  NvrtcOptions Options(const std::string& arch, std::vector<std::string> flags = {}) const {
    NvrtcOptions options;
    options.arch = arch;
    options.extra_flags = std::move(flags);
    options.cache_dir = cache_dir_;
    return options;
  }

  // The files in the cache: only <key>.ptx, never a temporary left behind.
  std::vector<std::string> CacheFiles() const {
    std::vector<std::string> files;
    if (!fs::exists(cache_dir_)) return files;
    for (const auto& entry : fs::directory_iterator(cache_dir_)) {
      files.push_back(entry.path().filename().string());
    }
    return files;
  }

  std::string cache_dir_;
};

TEST_F(GpuNvrtcTest, CompilesAndAssemblesForSm80AndSm90) {
  EXPECT_THAT(NvrtcVersion(), MatchesRegex("[0-9]+\\.[0-9]+"));
  for (const char* arch : {"sm_80", "sm_90"}) {
    absl::StatusOr<PtxModule> module = CompileToPtx(kScale, "gpu_k0.cu", Options(arch));
    ASSERT_TRUE(module.ok()) << arch << ": " << module.status();
    EXPECT_FALSE(module->cache_hit);
    EXPECT_THAT(module->key, MatchesRegex("[0-9a-f]{64}"));
    EXPECT_THAT(module->ptx, HasSubstr(".entry scale_div("));
    EXPECT_THAT(module->ptx, HasSubstr(absl::StrCat(".target ", arch)));
    EXPECT_THAT(module->ptx, HasSubstr("gpu_k0.cu"));  // -lineinfo
    // No --use_fast_math by default: IEEE division.
    EXPECT_THAT(module->ptx, HasSubstr("div.rn.f32"));
    EXPECT_TRUE(AssemblePtx(module->ptx, arch).ok()) << AssemblePtx(module->ptx, arch);
    EXPECT_TRUE(fs::exists(absl::StrCat(cache_dir_, "/", module->key, ".ptx")));
  }
  EXPECT_EQ(CacheFiles().size(), 2u);
}

TEST_F(GpuNvrtcTest, SecondCompileIsACacheHit) {
  absl::StatusOr<PtxModule> first = CompileToPtx(kScale, "gpu_k0.cu", Options("sm_90"));
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<PtxModule> second = CompileToPtx(kScale, "gpu_k0.cu", Options("sm_90"));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_FALSE(first->cache_hit);
  EXPECT_TRUE(second->cache_hit);
  EXPECT_EQ(second->key, first->key);
  EXPECT_EQ(second->ptx, first->ptx);
  // The name is for messages only: the same source under another name is the same kernel.
  absl::StatusOr<PtxModule> renamed = CompileToPtx(kScale, "gpu_k7.cu", Options("sm_90"));
  ASSERT_TRUE(renamed.ok()) << renamed.status();
  EXPECT_TRUE(renamed->cache_hit);
  EXPECT_EQ(CacheFiles(), std::vector<std::string>{first->key + ".ptx"});
}

TEST_F(GpuNvrtcTest, ChangedSourceFlagOrArchIsAMiss) {
  absl::StatusOr<PtxModule> base = CompileToPtx(kScale, "k.cu", Options("sm_90"));
  ASSERT_TRUE(base.ok()) << base.status();
  absl::StatusOr<PtxModule> fast =
      CompileToPtx(kScale, "k.cu", Options("sm_90", {"--use_fast_math"}));
  ASSERT_TRUE(fast.ok()) << fast.status();
  EXPECT_FALSE(fast->cache_hit);
  EXPECT_NE(fast->key, base->key);
  // The flag reached NVRTC: fast math divides approximately.
  EXPECT_NE(fast->ptx, base->ptx);
  EXPECT_THAT(fast->ptx, Not(HasSubstr("div.rn.f32")));
  absl::StatusOr<PtxModule> sm80 = CompileToPtx(kScale, "k.cu", Options("sm_80"));
  ASSERT_TRUE(sm80.ok()) << sm80.status();
  EXPECT_FALSE(sm80->cache_hit);
  EXPECT_NE(sm80->key, base->key);
  absl::StatusOr<PtxModule> edited =
      CompileToPtx(absl::StrCat(kScale, "// edited\n"), "k.cu", Options("sm_90"));
  ASSERT_TRUE(edited.ok()) << edited.status();
  EXPECT_FALSE(edited->cache_hit);
  EXPECT_NE(edited->key, base->key);
  EXPECT_EQ(CacheFiles().size(), 4u);
}

TEST_F(GpuNvrtcTest, EmptyCachedFileIsRecompiled) {
  absl::StatusOr<PtxModule> first = CompileToPtx(kScale, "k.cu", Options("sm_90"));
  ASSERT_TRUE(first.ok()) << first.status();
  std::ofstream(absl::StrCat(cache_dir_, "/", first->key, ".ptx"), std::ios::trunc);
  absl::StatusOr<PtxModule> again = CompileToPtx(kScale, "k.cu", Options("sm_90"));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->cache_hit);
  EXPECT_EQ(again->ptx, first->ptx);
  EXPECT_TRUE(CompileToPtx(kScale, "k.cu", Options("sm_90"))->cache_hit);
}

TEST_F(GpuNvrtcTest, ConcurrentCompilesOfOneKernelAgree) {
  std::vector<absl::StatusOr<PtxModule>> results(4, absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = CompileToPtx(kScale, "k.cu", Options("sm_90")); });
  }
  for (std::thread& t : threads) t.join();
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->ptx, results[0]->ptx);
  }
  EXPECT_EQ(CacheFiles(), std::vector<std::string>{results[0]->key + ".ptx"});
}

TEST_F(GpuNvrtcTest, SyntaxErrorNamesFileAndLine) {
  const std::string source =
      "extern \"C\" __global__ void broken(float* y) {\n"
      "  int i = threadIdx.x;\n"
      "  y[i] = 1.0f +;\n"
      "}\n";
  absl::StatusOr<PtxModule> module = CompileToPtx(source, "gpu_k3.cu", Options("sm_90"));
  ASSERT_FALSE(module.ok());
  EXPECT_EQ(module.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(module.status().message()), HasSubstr("gpu_k3.cu(3)"));
  EXPECT_THAT(std::string(module.status().message()), HasSubstr("error"));
  EXPECT_TRUE(CacheFiles().empty());
}

TEST_F(GpuNvrtcTest, WarningsComeBackInTheLog) {
  const std::string source =
      "extern \"C\" __global__ void warns(float* y) {\n"
      "  int unused = 3;\n"
      "  y[threadIdx.x] = 1.0f;\n"
      "}\n";
  absl::StatusOr<PtxModule> module = CompileToPtx(source, "gpu_warn.cu", Options("sm_90"));
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_THAT(module->log, HasSubstr("gpu_warn.cu(2)"));
  EXPECT_THAT(module->log, HasSubstr("unused"));
}

// What the generated kernels' prelude needs: cuda::std from the toolkit's CCCL, bf16 and f16
// conversions, and the libdevice math XLA's elementwise ops lower to.
TEST_F(GpuNvrtcTest, PreludeHeadersAndMathCompile) {
  const std::string source = R"(
#include <cuda/std/limits>
#include <cuda/std/cmath>
#include <cuda/std/cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

extern "C" __global__ void prelude(const __nv_bfloat16* x, __nv_bfloat16* y, __half* h,
                                   cuda::std::int64_t n) {
  cuda::std::int64_t i = blockIdx.x * static_cast<cuda::std::int64_t>(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  float v = __bfloat162float(x[i]);
  float r = erff(v) + expm1f(v);
  if (cuda::std::isnan(r)) r = cuda::std::numeric_limits<float>::infinity();
  y[i] = __float2bfloat16_rn(r);
  h[i] = __float2half(r);
}
)";
  for (const char* arch : {"sm_80", "sm_90"}) {
    absl::StatusOr<PtxModule> module = CompileToPtx(source, "gpu_prelude.cu", Options(arch));
    ASSERT_TRUE(module.ok()) << arch << ": " << module.status();
    EXPECT_THAT(module->ptx, HasSubstr(".entry prelude("));
    EXPECT_TRUE(AssemblePtx(module->ptx, arch).ok()) << AssemblePtx(module->ptx, arch);
  }
}

TEST_F(GpuNvrtcTest, InvalidArchIsInvalidArgument) {
  for (const char* arch : {"gfx90a", "sm_x", "compute_90", ""}) {
    absl::StatusOr<PtxModule> module = CompileToPtx(kScale, "k.cu", Options(arch));
    ASSERT_FALSE(module.ok()) << arch;
    EXPECT_EQ(module.status().code(), absl::StatusCode::kInvalidArgument) << arch;
    EXPECT_THAT(std::string(module.status().message()), HasSubstr("expected sm_")) << arch;
    EXPECT_EQ(AssemblePtx(".version 9.0", arch).code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_TRUE(CacheFiles().empty());
  // A well-formed architecture NVRTC does not know comes back from NVRTC itself.
  absl::StatusOr<PtxModule> unknown = CompileToPtx(kScale, "k.cu", Options("sm_99"));
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(GpuNvrtcTest, PtxasRejectsGarbage) {
  absl::Status status = AssemblePtx("this is not PTX\n", "sm_90");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr("ptxas"));
  EXPECT_THAT(std::string(status.message()), HasSubstr(".version"));  // ptxas's own complaint
}

TEST_F(GpuNvrtcTest, PtxasResourceUsagePerEntry) {
  const std::string source = R"(
extern "C" __global__ void reverse(const float* x, float* y) {
  __shared__ float tile[256];
  tile[threadIdx.x] = x[blockIdx.x * 256 + threadIdx.x];
  __syncthreads();
  y[blockIdx.x * 256 + threadIdx.x] = tile[255 - threadIdx.x];
}
extern "C" __global__ void fill(float* y) { y[threadIdx.x] = 1.0f; }
)";
  absl::StatusOr<PtxModule> module = CompileToPtx(source, "k.cu", Options("sm_90"));
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<PtxasUsage> reverse = PtxasResourceUsage(module->ptx, "sm_90", "reverse");
  ASSERT_TRUE(reverse.ok()) << reverse.status();
  EXPECT_EQ(reverse->shared_bytes, 1024);
  EXPECT_GT(reverse->registers, 0);
  EXPECT_LE(reverse->registers, 255);
  EXPECT_EQ(reverse->spill_store_bytes, 0);
  EXPECT_EQ(reverse->spill_load_bytes, 0);
  absl::StatusOr<PtxasUsage> fill = PtxasResourceUsage(module->ptx, "sm_90", "fill");
  ASSERT_TRUE(fill.ok()) << fill.status();
  EXPECT_EQ(fill->shared_bytes, 0);
  EXPECT_GT(fill->registers, 0);
  absl::StatusOr<PtxasUsage> missing = PtxasResourceUsage(module->ptx, "sm_90", "rev");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
}

TEST(GpuNvrtcWithoutToolkitTest, EverythingIsUnimplemented) {
  if (!NvrtcVersion().empty()) GTEST_SKIP() << "built with the CUDA toolkit";
  absl::StatusOr<PtxModule> module = CompileToPtx(kScale, "k.cu", {});
  EXPECT_EQ(module.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(module.status().message()), HasSubstr("built without the CUDA toolkit"));
  EXPECT_EQ(AssemblePtx("", "sm_90").code(), absl::StatusCode::kUnimplemented);
}

TEST(GpuKernelCacheDirTest, FollowsTheEnvironment) {
  {
    ScopedEnv cache("MLTUNE_GPU_KERNEL_CACHE", "/somewhere/gpu");
    EXPECT_EQ(DefaultGpuKernelCacheDir(), "/somewhere/gpu");
  }
  ScopedEnv cache("MLTUNE_GPU_KERNEL_CACHE", nullptr);
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/xdg");
    EXPECT_EQ(DefaultGpuKernelCacheDir(), "/xdg/mltune/gpu-kernels");
  }
  ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
  ScopedEnv home("HOME", "/home/someone");
  EXPECT_EQ(DefaultGpuKernelCacheDir(), "/home/someone/.cache/mltune/gpu-kernels");
}

}  // namespace
}  // namespace mltune::backends::gpu
