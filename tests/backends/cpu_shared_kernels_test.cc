// Kernels that compute the same thing on other buffers (a stack of identical layers) share one
// generated function: the program defines it once and calls it for each, results match the
// evaluator, and the profiled entry still times each kernel apart.
#include <cstdlib>
#include <string>

#include "backends/cpu/cpu_backend.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"

namespace mltune::backends::cpu {
namespace {

// Five identical layers, tanh(x w + b), with their own weights. Fusion puts each layer's bias and
// tanh into the next layer's dot (its prologue), so the three middle kernels are the same.
constexpr char kModule[] = R"(
HloModule layers
ENTRY e {
  x = f32[8,64] parameter(0)
  w0 = f32[64,64] parameter(1)
  w1 = f32[64,64] parameter(2)
  w2 = f32[64,64] parameter(3)
  w3 = f32[64,64] parameter(4)
  w4 = f32[64,64] parameter(5)
  b0 = f32[64] parameter(6)
  b1 = f32[64] parameter(7)
  b2 = f32[64] parameter(8)
  b3 = f32[64] parameter(9)
  b4 = f32[64] parameter(10)
  d0 = f32[8,64] dot(x, w0), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  c0 = f32[8,64] broadcast(b0), dimensions={1}
  a0 = f32[8,64] add(d0, c0)
  y0 = f32[8,64] tanh(a0)
  d1 = f32[8,64] dot(y0, w1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  c1 = f32[8,64] broadcast(b1), dimensions={1}
  a1 = f32[8,64] add(d1, c1)
  y1 = f32[8,64] tanh(a1)
  d2 = f32[8,64] dot(y1, w2), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  c2 = f32[8,64] broadcast(b2), dimensions={1}
  a2 = f32[8,64] add(d2, c2)
  y2 = f32[8,64] tanh(a2)
  d3 = f32[8,64] dot(y2, w3), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  c3 = f32[8,64] broadcast(b3), dimensions={1}
  a3 = f32[8,64] add(d3, c3)
  y3 = f32[8,64] tanh(a3)
  d4 = f32[8,64] dot(y3, w4), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  c4 = f32[8,64] broadcast(b4), dimensions={1}
  a4 = f32[8,64] add(d4, c4)
  ROOT y4 = f32[8,64] tanh(a4)
})";

class CpuSharedKernelsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0); }
};

int64_t Count(const std::string& text, const std::string& what) {
  int64_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_F(CpuSharedKernelsTest, IdenticalLayersShareOneFunction) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(kModule);
  ASSERT_TRUE(module.ok()) << module.status();
  absl::StatusOr<CompiledModule> compiled = CompileModule(**module);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const int64_t kernels = static_cast<int64_t>(compiled->lowered.kernels.size());
  const std::string& source = compiled->program.source;
  // One definition serves the three middle layers; the entry calls it three times.
  EXPECT_EQ(kernels, 5);
  EXPECT_EQ(Count(source, "(char* const* b, char* ws) {"), 3) << source;
  EXPECT_TRUE(CheckAgainstEvaluator(**module, *compiled, 2).ok());
  MeasureOptions options;
  options.kernel_times = true;
  options.max_seconds = 0.05;
  absl::StatusOr<Timing> t = Measure(compiled->object, compiled->program, 0, options);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(static_cast<int64_t>(t->kernel_s.size()), kernels);
}

}  // namespace
}  // namespace mltune::backends::cpu
