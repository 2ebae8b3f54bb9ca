// top-k and sorts with tuple-shaped results on the CPU backend: topk (JAX's lax.top_k) runs as a
// stable sort of (values, indices) sliced to k, and a variadic sort of (keys, iota) followed by
// gathers (sort-based mixture-of-experts dispatch) lowers as it is; both match the evaluator,
// ties and NaNs included.
#include <cstdlib>
#include <memory>
#include <string>

#include "backends/cpu/cpu_backend.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"
#include "tests/backends/cpu_pipelined.h"

namespace mltune::backends::cpu {
namespace {

// Rows with ties (values quantized to quarters) and NaNs of both signs, in f32, bf16 and s32;
// largest and smallest.
constexpr char kTopK[] = R"(HloModule topk

ENTRY main {
  p = f32[6,16] parameter(0)
  four = f32[] constant(4)
  fb = f32[6,16] broadcast(four), dimensions={}
  m = f32[6,16] multiply(p, fb)
  q = f32[6,16] floor(m)
  nan = f32[] constant(nan)
  nanb = f32[6,16] broadcast(nan), dimensions={}
  mnan = f32[6,16] negate(nanb)
  hi = f32[] constant(0.9)
  hib = f32[6,16] broadcast(hi), dimensions={}
  big = pred[6,16] compare(p, hib), direction=GT
  x1 = f32[6,16] select(big, nanb, q)
  lo = f32[] constant(-0.9)
  lob = f32[6,16] broadcast(lo), dimensions={}
  small = pred[6,16] compare(p, lob), direction=LT
  x = f32[6,16] select(small, mnan, x1)
  t = (f32[6,3], s32[6,3]) topk(x), k=3, largest=true
  tv = f32[6,3] get-tuple-element(t), index=0
  ti = s32[6,3] get-tuple-element(t), index=1
  s = (f32[6,5], s32[6,5]) topk(x), k=5, largest=false
  si = s32[6,5] get-tuple-element(s), index=1
  xb = bf16[6,16] convert(q)
  b = (bf16[6,2], s32[6,2]) topk(xb), k=2, largest=true
  bv = bf16[6,2] get-tuple-element(b), index=0
  bi = s32[6,2] get-tuple-element(b), index=1
  xi = s32[6,16] convert(q)
  i = (s32[6,4], s32[6,4]) topk(xi), k=4, largest=true
  iv = s32[6,4] get-tuple-element(i), index=0
  ii = s32[6,4] get-tuple-element(i), index=1
  ROOT out = (f32[6,3], s32[6,3], s32[6,5], bf16[6,2], s32[6,2], s32[6,4], s32[6,4]) tuple(tv, ti, si, bv, bi, iv, ii)
}
)";

// A top-2 mixture-of-experts router: router logits, softmax, top-2 experts per token, their
// weights renormalized, each token's two experts' outputs (a per-expert scale and bias,
// gathered by expert index) combined.
constexpr char kMoERouter[] = R"(HloModule moe_top2

max_f32 {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT m = f32[] maximum(a, b)
}

add_f32 {
  lhs = f32[] parameter(0)
  rhs = f32[] parameter(1)
  ROOT s = f32[] add(lhs, rhs)
}

ENTRY main {
  x = f32[16,32] parameter(0)
  wr = f32[32,8] parameter(1)
  escale = f32[8,32] parameter(2)
  ebias = f32[8,32] parameter(3)
  logits = f32[16,8] dot(x, wr), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  ninf = f32[] constant(-inf)
  mx = f32[16] reduce(logits, ninf), dimensions={1}, to_apply=max_f32
  mxb = f32[16,8] broadcast(mx), dimensions={0}
  sh = f32[16,8] subtract(logits, mxb)
  e = f32[16,8] exponential(sh)
  zero = f32[] constant(0)
  se = f32[16] reduce(e, zero), dimensions={1}, to_apply=add_f32
  seb = f32[16,8] broadcast(se), dimensions={0}
  probs = f32[16,8] divide(e, seb)
  top = (f32[16,2], s32[16,2]) topk(probs), k=2, largest=true
  tw = f32[16,2] get-tuple-element(top), index=0
  ti = s32[16,2] get-tuple-element(top), index=1
  tws = f32[16] reduce(tw, zero), dimensions={1}, to_apply=add_f32
  twsb = f32[16,2] broadcast(tws), dimensions={0}
  w = f32[16,2] divide(tw, twsb)
  sc = f32[16,2,32] gather(escale, ti), offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,32}
  bi = f32[16,2,32] gather(ebias, ti), offset_dims={2}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=2, slice_sizes={1,32}
  xb = f32[16,2,32] broadcast(x), dimensions={0,2}
  ex = f32[16,2,32] multiply(xb, sc)
  ey = f32[16,2,32] add(ex, bi)
  wb = f32[16,2,32] broadcast(w), dimensions={0,1}
  wy = f32[16,2,32] multiply(ey, wb)
  y = f32[16,32] reduce(wy, zero), dimensions={1}, to_apply=add_f32
  iota = s32[16,2,8] iota(), iota_dimension=2
  tib = s32[16,2,8] broadcast(ti), dimensions={0,1}
  onehot = pred[16,2,8] compare(iota, tib), direction=EQ
  ROOT out = (f32[16,32], pred[16,2,8], s32[16,2]) tuple(y, onehot, ti)
}
)";

// Sort-based dispatch: tokens sorted by their expert id (a stable sort of (expert, iota)), then
// gathered into expert order, scaled, and scattered back through the permutation.
constexpr char kSortDispatch[] = R"(HloModule sort_dispatch

lt_s32 {
  a = s32[] parameter(0)
  b = s32[] parameter(1)
  ia = s32[] parameter(2)
  ib = s32[] parameter(3)
  ROOT lt = pred[] compare(a, b), direction=LT
}

ENTRY main {
  x = f32[32,16] parameter(0)
  expert = s32[32] parameter(1)
  iota = s32[32] iota(), iota_dimension=0
  sorted = (s32[32], s32[32]) sort(expert, iota), dimensions={0}, is_stable=true, to_apply=lt_s32
  keys = s32[32] get-tuple-element(sorted), index=0
  perm = s32[32] get-tuple-element(sorted), index=1
  permi = s32[32,1] reshape(perm)
  gathered = f32[32,16] gather(x, permi), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,16}
  kf = f32[32] convert(keys)
  kb = f32[32,16] broadcast(kf), dimensions={0}
  scaled = f32[32,16] multiply(gathered, kb)
  ROOT out = (f32[32,16], s32[32], s32[32]) tuple(scaled, keys, perm)
}
)";

class CpuTopKSortTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0); }

  static void Check(const char* text, int sorts) {
    absl::StatusOr<Pipelined> p = CompileThroughPipeline(text);
    ASSERT_TRUE(p.ok()) << p.status();
    const CompiledModule* compiled = &p->compiled;
    int sort_kernels = 0;
    for (const Kernel& k : compiled->lowered.kernels) sort_kernels += k.kind == KernelKind::kSort;
    EXPECT_EQ(sort_kernels, sorts);
    ExpectMatchesEvaluator(*p, {1, 2, 3});
  }
};

TEST_F(CpuTopKSortTest, TopKWithTiesAndNaNsOfEachType) { Check(kTopK, 4); }

TEST_F(CpuTopKSortTest, TopTwoMixtureOfExpertsRouter) { Check(kMoERouter, 1); }

TEST_F(CpuTopKSortTest, SortOfKeysAndIotaThenGather) { Check(kSortDispatch, 1); }

// Without the pipeline's rewrite, topk is refused with the reason, not as a generic tuple.
TEST_F(CpuTopKSortTest, TopKOutsideThePipelineIsRefusedClearly) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(kTopK);
  ASSERT_TRUE(module.ok());
  const absl::Status s = CheckSupported(**module);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("topk 't'"), std::string::npos) << s;
  EXPECT_NE(std::string(s.message()).find("sort"), std::string::npos) << s;
}

}  // namespace
}  // namespace mltune::backends::cpu
