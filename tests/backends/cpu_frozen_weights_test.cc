// Frozen weights: entry parameters read only as a dot's or convolution's weights are packed once
// per parameter epoch. Checked on the rule (which parameters qualify) and in process on compiled
// programs of every convolution impl: the first call matches the evaluator, new weights are not
// read until mltune_params_changed (the packed copy is kept) where the impl packs them, and after
// it the results match the evaluator on the new weights.
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/cpu_backend.h"
#include "backends/cpu/gemm_shape.h"
#include "backends/cpu/onednn.h"
#include "gtest/gtest.h"
#include "ir/evaluator/evaluator.h"
#include "ir/hlo_parser.h"

namespace mltune::backends::cpu {
namespace {

class CpuFrozenWeightsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0); }
};

std::unique_ptr<ir::Module> Parse(const std::string& text) {
  absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseHloText(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : nullptr;
}

std::vector<std::string> FrozenNames(const ir::Module& m) {
  std::vector<std::string> names;
  for (const ir::Instruction* p : m.entry()->parameters()) {
    if (FrozenWeights(*m.entry()).count(p) != 0) names.push_back(p->name());
  }
  return names;
}

TEST_F(CpuFrozenWeightsTest, OnlyParametersReadAsWeightsAreFrozen) {
  // w: a dot's rhs through a transpose; k: a convolution's kernel; x: a dot's lhs; u: a weight
  // that is also updated (a training step's); b: a bias; g: a dot's rhs with its column blocks
  // swapped through slices and a concatenate (an ONNX LSTM's gate order).
  std::unique_ptr<ir::Module> m = Parse(R"(
HloModule rule
ENTRY e {
  x = f32[4,32] parameter(0)
  w = f32[24,32] parameter(1)
  u = f32[24,24] parameter(2)
  b = f32[24] parameter(3)
  i = f32[1,6,6,3] parameter(4)
  k = f32[3,3,3,8] parameter(5)
  wt = f32[32,24] transpose(w), dimensions={1,0}
  d = f32[4,24] dot(x, wt), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d2 = f32[4,24] dot(d, u), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  un = f32[24,24] add(u, u)
  bb = f32[4,24] broadcast(b), dimensions={1}
  s = f32[4,24] add(d2, bb)
  c = f32[1,4,4,8] convolution(i, k), window={size=3x3}, dim_labels=b01f_01io->b01f
  g = f32[32,16] parameter(6)
  g0 = f32[32,8] slice(g), slice={[0:32], [0:8]}
  g1 = f32[32,8] slice(g), slice={[0:32], [8:16]}
  gc = f32[32,16] concatenate(g1, g0), dimensions={1}
  dg = f32[4,16] dot(x, gc), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[4,24], f32[24,24], f32[1,4,4,8], f32[4,16]) tuple(s, un, c, dg)
})");
  ASSERT_NE(m, nullptr);
  if (!FrozenWeightsEnabled()) GTEST_SKIP() << "MLTUNE_NO_FROZEN_WEIGHTS is set";
  EXPECT_EQ(FrozenNames(*m), (std::vector<std::string>{"w", "k", "g"}));
  setenv("MLTUNE_NO_FROZEN_WEIGHTS", "1", 1);
  EXPECT_TRUE(FrozenNames(*m).empty());
  unsetenv("MLTUNE_NO_FROZEN_WEIGHTS");
}

// A compiled module loaded into this process, called on buffers the test owns.
class LoadedProgram {
 public:
  explicit LoadedProgram(const CompiledModule& c) : compiled_(c) {
    handle_ = dlopen(c.object.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(handle_, nullptr) << dlerror();
    if (handle_ == nullptr) return;
    entry_ = reinterpret_cast<Entry>(dlsym(handle_, "mltune_entry"));
    changed_ = reinterpret_cast<void (*)()>(dlsym(handle_, "mltune_params_changed"));
    auto scratch = reinterpret_cast<int64_t (*)()>(dlsym(handle_, "mltune_scratch_bytes"));
    EXPECT_NE(entry_, nullptr);
    EXPECT_NE(changed_, nullptr);
    scratch_.resize(static_cast<size_t>(scratch()) / sizeof(float) + 16);
  }
  ~LoadedProgram() {
    if (handle_ != nullptr) dlclose(handle_);
  }
  bool ok() const { return entry_ != nullptr && changed_ != nullptr; }
  void ParamsChanged() { changed_(); }

  // The f32 results of the entry on `args`, each argument copied where the previous call's was
  // (a frozen weight is read where it lies), 64-byte aligned as the runner allocates buffers.
  std::vector<std::vector<float>> RunAll(const std::vector<ir::Literal>& args) {
    in_.resize(args.size());
    std::vector<void*> in;
    for (size_t i = 0; i < args.size(); ++i) {
      in_[i].resize(static_cast<size_t>(args[i].size_bytes()) / sizeof(float) + 16);
      in.push_back(Aligned(in_[i]));
      std::memcpy(in.back(), args[i].untyped_data(), static_cast<size_t>(args[i].size_bytes()));
    }
    std::vector<std::vector<float>> out;
    std::vector<void*> results;
    for (const ir::Shape& r : compiled_.program.results) {
      out.emplace_back(static_cast<size_t>(r.ElementCount()) + 16);
      results.push_back(Aligned(out.back()));
    }
    entry_(in.data(), results.data(), static_cast<char*>(Aligned(scratch_)));
    for (size_t i = 0; i < out.size(); ++i) {
      const float* r = static_cast<const float*>(results[i]);
      out[i] = std::vector<float>(r, r + compiled_.program.results[i].ElementCount());
    }
    return out;
  }
  // The one f32 result of the entry on `args`.
  std::vector<float> Run(const std::vector<ir::Literal>& args) { return RunAll(args)[0]; }

 private:
  using Entry = void (*)(void* const*, void* const*, char*);
  const CompiledModule& compiled_;
  void* handle_ = nullptr;
  Entry entry_ = nullptr;
  void (*changed_)() = nullptr;
  static void* Aligned(std::vector<float>& v) {
    return reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(v.data()) + 63) / 64 * 64);
  }
  std::vector<float> scratch_;
  std::vector<std::vector<float>> in_;
};

// The index of `kernel`'s `impl` parameter, or params.size() where it has none.
size_t ImplParam(const Kernel& kernel) {
  size_t p = 0;
  while (p < kernel.params.size() && kernel.params[p].name != "impl") ++p;
  return p;
}

float MaxDifference(const ir::Literal& expected, const std::vector<float>& actual) {
  float worst = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    worst = std::max(worst, std::fabs(expected.Get<float>(static_cast<int64_t>(i)) - actual[i]));
  }
  return worst;
}

// Every kernel's default configuration with its `impl` parameter (at index impl_param) set to
// `impl`.
std::vector<KernelConfig> DefaultsWithImpl(const LoweredModule& lowered, size_t impl_param,
                                           int64_t impl) {
  std::vector<KernelConfig> configs;
  for (const Kernel& k : lowered.kernels) {
    configs.push_back(DefaultConfig(k));
    configs.back()[impl_param] = impl;
  }
  return configs;
}

// `m` compiled with every kernel's `impl` parameter (the first kernel's) set to `impl`.
absl::StatusOr<CompiledModule> CompileWithImpl(const ir::Module& m, int64_t impl) {
  absl::StatusOr<LoweredModule> lowered = Lower(m);
  if (!lowered.ok()) return lowered.status();
  if (lowered->kernels.empty()) return absl::InternalError("the module has no kernels");
  const size_t impl_param = ImplParam(lowered->kernels[0]);
  if (impl_param >= lowered->kernels[0].params.size()) {
    return absl::InternalError("the first kernel has no impl parameter");
  }
  return CompileModule(m, DefaultsWithImpl(*lowered, impl_param, impl));
}

// Two kernels of identical code, weights in arguments 1 and 3, results 0 and 1: right on two calls
// with the first weights, and on a third with the second ones after mltune_params_changed.
void ExpectTwinsRightOnEveryCall(const ir::Module& m, const CompiledModule& compiled,
                                 const std::vector<ir::Literal>& first,
                                 const std::vector<ir::Literal>& second) {
  LoadedProgram program(compiled);
  ASSERT_TRUE(program.ok());
  std::vector<ir::Literal> args = first;
  for (int call = 0; call < 3; ++call) {
    if (call == 2) {  // new weights, said so
      args[1] = second[1];
      args[3] = second[3];
      program.ParamsChanged();
    }
    absl::StatusOr<ir::Literal> expected = ir::Evaluate(m, args);
    ASSERT_TRUE(expected.ok());
    const std::vector<std::vector<float>> got = program.RunAll(args);
    ASSERT_EQ(got.size(), 2u);
    for (size_t r = 0; r < 2; ++r) {
      EXPECT_LT(MaxDifference(expected->elements()[r], got[r]), 1e-4)
          << "call " << call << ", result " << r;
    }
  }
}

TEST_F(CpuFrozenWeightsTest, PackedOncePerEpochOnEveryImpl) {
  // A 3x3 convolution with a bias and ReLU epilogue; its OIHW weights need packing for every
  // impl that packs (the generated GEMM's layout, oneDNN's blocked one).
  std::unique_ptr<ir::Module> m = Parse(R"(
HloModule conv
ENTRY e {
  x = f32[1,8,8,16] parameter(0)
  w = f32[32,16,3,3] parameter(1)
  c = f32[1,8,8,32] convolution(x, w), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_oi01->b01f
  zero = f32[] constant(0)
  z = f32[1,8,8,32] broadcast(zero), dimensions={}
  ROOT r = f32[1,8,8,32] maximum(c, z)
})");
  ASSERT_NE(m, nullptr);
  absl::StatusOr<LoweredModule> lowered = Lower(*m);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  ASSERT_EQ(lowered->kernels.size(), 1u);
  const Kernel& conv = lowered->kernels[0];
  ASSERT_EQ(conv.frozen_inputs.size(), 1u);
  const size_t impl_param = ImplParam(conv);
  ASSERT_LT(impl_param, conv.params.size());
  absl::StatusOr<std::vector<ir::Literal>> first = ir::MakeRandomArguments(*m, 1);
  absl::StatusOr<std::vector<ir::Literal>> second = ir::MakeRandomArguments(*m, 2);
  ASSERT_TRUE(first.ok() && second.ok());
  for (int64_t impl : conv.params[impl_param].choices) {
    SCOPED_TRACE(::testing::Message() << "impl " << impl);
    KernelConfig config = DefaultConfig(conv);
    config[impl_param] = impl;
    absl::StatusOr<CompiledModule> compiled = CompileModule(*m, {config});
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    LoadedProgram program(*compiled);
    ASSERT_TRUE(program.ok());
    std::vector<ir::Literal> args = {(*first)[0], (*first)[1]};
    absl::StatusOr<ir::Literal> old_result = ir::Evaluate(*m, args);
    ASSERT_TRUE(old_result.ok());
    EXPECT_LT(MaxDifference(*old_result, program.Run(args)), 1e-4);
    // New weight values, the parameters' epoch unchanged: impls that pack keep their copy.
    args[1] = (*second)[1];
    const std::vector<float> stale = program.Run(args);
    absl::StatusOr<ir::Literal> new_result = ir::Evaluate(*m, args);
    ASSERT_TRUE(new_result.ok());
    if (impl == 2) {
      EXPECT_LT(MaxDifference(*new_result, stale), 1e-4) << "impl 2 reads weights in place";
    } else {
      EXPECT_LT(MaxDifference(*old_result, stale), 1e-4) << "weights were packed again";
    }
    program.ParamsChanged();
    EXPECT_LT(MaxDifference(*new_result, program.Run(args)), 1e-4);
  }
}

// Two convolutions of identical code share one kernel function, each with its own weights: the
// function keeps one packed copy per weights buffer, on every impl that packs.
TEST_F(CpuFrozenWeightsTest, KernelsSharingAFunctionKeepTheirOwnPackedWeights) {
  std::unique_ptr<ir::Module> m = Parse(R"(
HloModule twins
ENTRY e {
  x1 = f32[1,6,6,8] parameter(0)
  w1 = f32[8,8,3,3] parameter(1)
  x2 = f32[1,6,6,8] parameter(2)
  w2 = f32[8,8,3,3] parameter(3)
  c1 = f32[1,6,6,8] convolution(x1, w1), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_oi01->b01f
  c2 = f32[1,6,6,8] convolution(x2, w2), window={size=3x3 pad=1_1x1_1}, dim_labels=b01f_oi01->b01f
  ROOT t = (f32[1,6,6,8], f32[1,6,6,8]) tuple(c1, c2)
})");
  ASSERT_NE(m, nullptr);
  absl::StatusOr<LoweredModule> lowered = Lower(*m);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  ASSERT_EQ(lowered->kernels.size(), 2u);
  const size_t impl_param = ImplParam(lowered->kernels[0]);
  ASSERT_LT(impl_param, lowered->kernels[0].params.size());
  absl::StatusOr<std::vector<ir::Literal>> first = ir::MakeRandomArguments(*m, 3);
  absl::StatusOr<std::vector<ir::Literal>> second = ir::MakeRandomArguments(*m, 4);
  ASSERT_TRUE(first.ok() && second.ok());
  for (int64_t impl : lowered->kernels[0].params[impl_param].choices) {
    SCOPED_TRACE(::testing::Message() << "impl " << impl);
    absl::StatusOr<CompiledModule> compiled =
        CompileModule(*m, DefaultsWithImpl(*lowered, impl_param, impl));
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    ExpectTwinsRightOnEveryCall(*m, *compiled, *first, *second);
  }
}

// The same for dots, whose impl 5 (oneDNN's matmul primitive) keeps frozen weights reordered into
// its own layout: two products of identical code, on every impl, right on every call, and right
// again after new weights are announced.
TEST_F(CpuFrozenWeightsTest, DotsSharingAFunctionKeepTheirOwnPackedWeights) {
  std::unique_ptr<ir::Module> m = Parse(R"(
HloModule twin_dots
ENTRY e {
  x1 = f32[16,64] parameter(0)
  w1 = f32[64,96] parameter(1)
  x2 = f32[16,64] parameter(2)
  w2 = f32[64,96] parameter(3)
  d1 = f32[16,96] dot(x1, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d2 = f32[16,96] dot(x2, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ROOT t = (f32[16,96], f32[16,96]) tuple(d1, d2)
})");
  ASSERT_NE(m, nullptr);
  absl::StatusOr<LoweredModule> lowered = Lower(*m);
  ASSERT_TRUE(lowered.ok()) << lowered.status();
  ASSERT_EQ(lowered->kernels.size(), 2u);
  ASSERT_EQ(lowered->kernels[0].frozen_inputs.size(), 1u);
  const size_t impl_param = ImplParam(lowered->kernels[0]);
  ASSERT_LT(impl_param, lowered->kernels[0].params.size());
  const std::vector<int64_t>& impls = lowered->kernels[0].params[impl_param].choices;
  if (OneDnnAvailable()) {
    EXPECT_NE(std::find(impls.begin(), impls.end(), kMatmulPrimitiveImpl), impls.end());
  }
  absl::StatusOr<std::vector<ir::Literal>> first = ir::MakeRandomArguments(*m, 5);
  absl::StatusOr<std::vector<ir::Literal>> second = ir::MakeRandomArguments(*m, 6);
  ASSERT_TRUE(first.ok() && second.ok());
  for (int64_t impl : impls) {
    SCOPED_TRACE(::testing::Message() << "impl " << impl);
    absl::StatusOr<CompiledModule> compiled =
        CompileModule(*m, DefaultsWithImpl(*lowered, impl_param, impl));
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    if (impl == kMatmulPrimitiveImpl) {
      EXPECT_NE(compiled->program.source.find("mt_params_epoch);"), std::string::npos)
          << "the matmul primitive was not told its weights are frozen";
    }
    ExpectTwinsRightOnEveryCall(*m, *compiled, *first, *second);
  }
}

// A frozen weight stored [n][k] (a PyTorch Linear's) is transposed once for the library GEMM,
// which then runs 'N','N'; its copy is kept until new weights are announced.
TEST_F(CpuFrozenWeightsTest, TransposedWeightsAreTransposedOnceForTheLibraryGemm) {
  std::unique_ptr<ir::Module> m = Parse(R"(
HloModule linear
ENTRY e {
  x = f32[12,40] parameter(0)
  w = f32[72,40] parameter(1)
  ROOT d = f32[12,72] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={1}
})");
  ASSERT_NE(m, nullptr);
  if (!OneDnnAvailable()) GTEST_SKIP() << "oneDNN is not available";
  absl::StatusOr<CompiledModule> compiled = CompileWithImpl(*m, 1);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  ASSERT_EQ(compiled->lowered.kernels.size(), 1u);
  EXPECT_NE(compiled->program.source.find("dnnl_sgemm('N', 'N'"), std::string::npos);
  absl::StatusOr<std::vector<ir::Literal>> first = ir::MakeRandomArguments(*m, 7);
  absl::StatusOr<std::vector<ir::Literal>> second = ir::MakeRandomArguments(*m, 8);
  ASSERT_TRUE(first.ok() && second.ok());
  LoadedProgram program(*compiled);
  ASSERT_TRUE(program.ok());
  std::vector<ir::Literal> args = *first;
  absl::StatusOr<ir::Literal> old_result = ir::Evaluate(*m, args);
  ASSERT_TRUE(old_result.ok());
  EXPECT_LT(MaxDifference(*old_result, program.Run(args)), 1e-4);
  args[1] = (*second)[1];
  EXPECT_LT(MaxDifference(*old_result, program.Run(args)), 1e-4) << "transposed again";
  program.ParamsChanged();
  absl::StatusOr<ir::Literal> new_result = ir::Evaluate(*m, args);
  ASSERT_TRUE(new_result.ok());
  EXPECT_LT(MaxDifference(*new_result, program.Run(args)), 1e-4);
}

// A constant weight that three products read through kernels of different code (each step of an
// unrolled LSTM has its own epilogue) is packed into one copy they share.
TEST_F(CpuFrozenWeightsTest, KernelsPackingOneConstantShareTheirCopy) {
  std::string rows;
  for (int r = 0; r < 72; ++r) {
    absl::StrAppend(&rows, r == 0 ? "" : ", ", "{");
    for (int c = 0; c < 40; ++c) absl::StrAppend(&rows, c == 0 ? "" : ", ", (r * 40 + c) % 13 - 6);
    absl::StrAppend(&rows, "}");
  }
  std::unique_ptr<ir::Module> m = Parse(absl::StrCat(R"(
HloModule steps
ENTRY e {
  x = f32[12,40] parameter(0)
  w = f32[72,40] constant({)",
                                                     rows, R"(})
  d1 = f32[12,72] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  e1 = f32[12,72] exponential(d1)
  d2 = f32[12,72] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  e2 = f32[12,72] negate(d2)
  d3 = f32[12,72] dot(x, w), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  e3 = f32[12,72] abs(d3)
  ROOT t = (f32[12,72], f32[12,72], f32[12,72]) tuple(e1, e2, e3)
})"));
  ASSERT_NE(m, nullptr);
  if (!OneDnnAvailable()) GTEST_SKIP() << "oneDNN is not available";
  absl::StatusOr<CompiledModule> compiled = CompileWithImpl(*m, 1);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  ASSERT_EQ(compiled->lowered.kernels.size(), 3u);
  const std::string& source = compiled->program.source;
  const size_t definition = source.find("inline mt_pack* mt_cpack_");
  ASSERT_NE(definition, std::string::npos) << "the copy is not shared";
  const std::string list =
      source.substr(definition + 16, source.find(' ', definition + 16) - definition - 16);
  int uses = 0;
  for (size_t at = source.find(absl::StrCat("_packs = ", list, ";")); at != std::string::npos;
       at = source.find(absl::StrCat("_packs = ", list, ";"), at + 1)) {
    ++uses;
  }
  EXPECT_EQ(uses, 3) << list;
  EXPECT_TRUE(CheckAgainstEvaluator(*m, *compiled, 1).ok());
}

TEST_F(CpuFrozenWeightsTest, WeightsThatAreNotFrozenArePackedOnEveryCall) {
  // The weights also feed the result, so they are not frozen: new values are read at once.
  std::unique_ptr<ir::Module> m = Parse(R"(
HloModule dot
add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}
ENTRY e {
  x = f32[8,32] parameter(0)
  w = f32[24,32] parameter(1)
  wt = f32[32,24] transpose(w), dimensions={1,0}
  d = f32[8,24] dot(x, wt), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  zero = f32[] constant(0)
  s = f32[24] reduce(w, zero), dimensions={1}, to_apply=add
  sb = f32[8,24] broadcast(s), dimensions={1}
  ROOT r = f32[8,24] add(d, sb)
})");
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(FrozenNames(*m).empty());
  absl::StatusOr<CompiledModule> compiled = CompileModule(*m);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  LoadedProgram program(*compiled);
  ASSERT_TRUE(program.ok());
  absl::StatusOr<std::vector<ir::Literal>> first = ir::MakeRandomArguments(*m, 1);
  absl::StatusOr<std::vector<ir::Literal>> second = ir::MakeRandomArguments(*m, 2);
  ASSERT_TRUE(first.ok() && second.ok());
  std::vector<ir::Literal> args = {(*first)[0], (*first)[1]};
  program.Run(args);
  args[1] = (*second)[1];
  absl::StatusOr<ir::Literal> expected = ir::Evaluate(*m, args);
  ASSERT_TRUE(expected.ok());
  EXPECT_LT(MaxDifference(*expected, program.Run(args)), 1e-4);
}

}  // namespace
}  // namespace mltune::backends::cpu
