#include "backends/cpu/codegen.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "backends/cpu/custom_calls.h"
#include "backends/cpu/element_expr.h"
#include "backends/cpu/gemm_shape.h"
#include "backends/cpu/onednn_conv.h"
#include "backends/cpu/rng_bit_generator.h"
#include "backends/cpu/row_fusion.h"
#include "backends/cpu/units.h"
#include "costmodels/analytical/kernels.h"
#include "ir/evaluator/evaluator.h"
#include "ir/float_types.h"

namespace mltune::backends::cpu {
namespace {

std::vector<int64_t> NonUnitDimensions(const std::vector<int64_t>& dims) {
  std::vector<int64_t> out;
  for (int64_t n : dims) {
    if (n != 1) out.push_back(n);
  }
  return out;
}

using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;

constexpr int64_t kAlign = 64;
int64_t AlignUp(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

struct LoopOptions {
  bool simd = false;
  int64_t unroll = 1;
  int64_t block = 0;
  bool parallel = false;
  // Hoist each of the body's values above the loops whose indices it does not read, to just
  // inside the deepest loop it depends on (GCC's vectorizer recomputes invariants per vector
  // otherwise: a per-channel sqrt per element). Only for bodies made of Value() calls and
  // stores, whose locals are all Var()s.
  bool hoist = false;
};

// A program's text: its kernels' functions, and the bodies of its entry (plain and with each
// kernel timed) over `args`, `results` and `scratch`; a called program is one function more.
// The program's own kernels (an empty prefix) each open a section of their own and their calls
// are marked as a block (units.h), so the program can be split into translation units.
struct ProgramText {
  std::string kernels, entry, profiled;
  int64_t scratch_bytes = 0;
  bool onednn = false, onednn_conv = false;
};
// Kernel functions are named `prefix` + "k" + id.
absl::StatusOr<ProgramText> EmitProgram(const LoweredModule& module,
                                        const std::vector<KernelConfig>& configs,
                                        const std::string& prefix, ConstantPool* pool);

class KernelEmitter : public ElementEmitter {
 public:
  KernelEmitter(const Kernel& kernel, const KernelConfig& config, ConstantPool* pool)
      : ElementEmitter(kernel, CppDialect()), config_(config), pool_(pool) {}

  // `top`: a kernel of the program itself, laid out as units.h's kernel sections expect; false
  // for the kernels of a called program, which are its caller's helpers.
  absl::StatusOr<std::string> Emit(const std::string& fn, bool top);
  int64_t workspace_bytes() const { return ws_bytes_; }
  bool uses_onednn() const { return onednn_; }
  bool uses_onednn_conv() const { return onednn_conv_; }
  const std::string& helpers() const { return helpers_; }

 private:
  // The configuration's value of parameter `name`, or `absent` where the kernel has none.
  int64_t Param(std::string_view name, int64_t absent = 0) const {
    for (size_t i = 0; i < k_.params.size(); ++i) {
      if (k_.params[i].name == name) return config_[i];
    }
    return absent;
  }
  // The `lanes` parameter for a fold over n elements. More lanes than elements never run the
  // vector loop (all n go to the scalar tail), so they get one accumulator: an unused array of 32
  // (pred or f32) is not folded away by the compiler, and its per-output set-up and combine made
  // a reduce over 4 elements 14x slower (measured: 369 us against 26 us for lanes=1).
  int64_t LanesFor(int64_t n) const {
    const int64_t lanes = std::max<int64_t>(1, Param("lanes"));
    return lanes > n ? 1 : lanes;
  }
  // A GEMM parameter, or its default where the kernel has none (GemmParamsFor left it out:
  // no choice changes this kernel's code).
  int64_t GemmParam(std::string_view name) const { return Param(name, GemmParamDefault(name)); }
  int64_t Alloc(int64_t bytes) {
    const int64_t off = ws_bytes_;
    ws_bytes_ = AlignUp(ws_bytes_ + std::max<int64_t>(bytes, 1), kAlign);
    return off;
  }

  std::string External(const Instruction* instr, const Idx& idx) override;
  // Row caches and a matrix op's GEMM result.
  std::string Provided(const Instruction* instr, const Idx& idx) override;
  std::string HeavyLoad(const Idx& idx);
  // A reduction's combiner as the emitter folds with it.
  struct ReducerFns {
    std::string fn;  // the computation as a C++ function of two values
    // Where the computation is a floating-point maximum or minimum of its parameters: the plain
    // compare and select. The fold uses it with a separate "NaN seen" flag, because the
    // NaN-propagating form becomes a compare-and-branch chain in a scalar loop (3x slower).
    std::string fast;
  };
  ReducerFns Reducer(const ir::Computation& comp, PrimitiveType t);
  // `lanes` partial accumulators (and their NaN flags) of a fold: declared and set to `init` by
  // DeclareAccumulators, folded with FoldInto, combined by CombineAccumulators, which returns
  // the reduction's value.
  struct Accumulators {
    ReducerFns red;
    std::string type, acc, nan;  // nan empty where red.fast is
    int64_t lanes;
  };
  Accumulators DeclareAccumulators(const ReducerFns& red, const std::string& type,
                                   const std::string& init, int64_t lanes);
  void FoldInto(const Accumulators& a, const std::string& slot, const std::string& v);
  std::string CombineAccumulators(const Accumulators& a);

  // Emits a loop nest over `dims`; `body` runs in the innermost scope with the indices.
  void LoopNest(const std::vector<int64_t>& dims, const LoopOptions& opts,
                const std::function<void(const Idx&)>& body);
  void StoreOutputs(const std::vector<const Instruction*>& outputs, const LoopOptions& opts);
  // Output `dus`, a dynamic-update-slice, written as XLA writes one in place: its operand
  // copied, then the update's window alone. Read element by element (a select between the
  // update and the operand), the update's expression would run for every element of the whole
  // output: GNMT's loop bodies recomputed a step's LSTM cell for each of the 32 steps.
  void StoreDynamicUpdateSlice(const Instruction* dus, const LoopOptions& opts);
  // Output `concat`, a concatenate of more than kMaxFusedConcatOperands operands, written
  // operand by operand, so each element computes one operand rather than selecting among all.
  // A member operand that later operands use is read back from the output once stored: an
  // unrolled scan (h[t] = a[t] * h[t-1] + b[t], every h[t] an operand) is then linear, not
  // quadratic (a Mamba ONNX export's scans took 77 ms each).
  void StoreConcatenate(const Instruction* concat, const LoopOptions& opts);
  std::string OutPtr(const Instruction* o) const { return out_ptr_.at(o); }

  absl::Status EmitLoop();
  absl::Status EmitScatter();
  absl::Status EmitSelectAndScatter();
  // Kernels of one tuple-shaped op (lowering.h's operand_leaves and called programs).
  absl::Status EmitWhile();
  absl::Status EmitConditional();
  absl::Status EmitSort();
  absl::Status EmitLibrary();
  absl::Status EmitLinalg();
  absl::Status EmitTriangularSolve();
  // Operand leaf `leaf` as an array expression of its storage type: an input or a constant.
  std::string LeafArray(const Instruction* leaf);
  // Appends called program `called` as function `name` to the helpers; returns its scratch bytes.
  absl::StatusOr<int64_t> CalledProgram(const LoweredModule& called, const std::string& name);
  absl::Status EmitReduce();
  absl::Status EmitReduceWindow();
  absl::Status EmitReduceWindowRows(const std::vector<ir::WindowDim>& win);
  // Emits `int64_t j = 0;`, a loop folding `lanes` columns per step (an omp simd loop over the
  // lanes, `fold(j + l, "l")`), then the scalar tail (`fold(j, "0")`): a reduction over n
  // columns into `lanes` partial accumulators.
  void FoldLanes(const std::string& j, int64_t lanes, int64_t n,
                 const std::function<void(const std::string& col, const std::string& slot)>& fold);
  absl::Status EmitRow();
  // Per reduce of a row kernel, the members its pass caches for later passes.
  std::vector<std::vector<const Instruction*>> RowCachePlan(
      const std::vector<const Instruction*>& reduces, const std::vector<int64_t>& outer) const;
  absl::Status EmitMatmul();
  // True when `x`'s value depends on frozen inputs (Kernel::frozen_inputs) and constants alone,
  // so a packed copy of it stays valid until the parameters change; `inputs` gets the inputs it
  // reads.
  bool Frozen(const Instruction* x, std::vector<const Instruction*>* inputs = nullptr) const;
  // Declares float* `name`, a packed copy of `operand` (`bytes`) that the code emitted until
  // EndPack fills: scratch filled on every call or, where the operand is Frozen (and reads at
  // most 4 inputs), a buffer of its own per set of input buffers, filled once per parameter
  // epoch (mt_params_epoch). Returns which.
  // A copy made from constants alone is kept in a global that every kernel whose packing code is
  // the same shares: an unrolled LSTM's 33 steps each kept their own 6.8 MB copy of one weight,
  // streamed from memory on every step.
  bool BeginPack(const std::string& name, int64_t bytes, const Instruction* operand);
  void EndPack(bool once);
  // The convolution `mm` on oneDNN's primitive (impl 2 and 3), then the epilogue;
  // `weights_frozen`: reordered once per parameter epoch, not on every call.
  absl::Status EmitConvPrimitive(const std::string& src, const std::string& weights,
                                 bool weights_frozen,
                                 const std::vector<const Instruction*>& others);
  // The depthwise (impl kDepthwiseImpl) or grouped (kGroupedImpl) convolution `k_.root` into
  // `out`, the row-major array of its shape: its operand expression computed row by row into a
  // ring of the rows the window needs (channel-minor, zero-padded), each output row by mt_dw_row
  // or mt_gc_row.
  void EmitRowConvolution(const std::string& out);
  // GEMM over packed A [batch][m][k], B [batch][k][n] into C [batch][m][n].
  // `a_trans`: A is stored [batch][k][m]; `b_trans`: B is stored [batch][n][k]. `b_frozen`: B
  // depends on frozen inputs and constants alone (oneDNN's matmul then keeps it prepacked).
  void EmitGemm(const std::string& a, const std::string& b, const std::string& c, int64_t batch,
                int64_t m, int64_t n, int64_t kdim, bool a_trans = false, bool b_trans = false,
                bool b_frozen = false);

  KernelConfig config_;
  ConstantPool* pool_;
  std::string fn_;  // the kernel function's name, which names its helpers
  std::string helpers_;
  std::unordered_map<const Instruction*, std::string> in_ptr_, out_ptr_;
  int64_t ws_bytes_ = 0;
  bool onednn_ = false;
  bool onednn_conv_ = false;  // oneDNN's convolution or matmul primitive (needs its header)
  // After a matrix op's GEMM, its value is read from `heavy_buffer_` (HeavyLoad).
  std::string heavy_buffer_;
  std::function<std::string(const Idx&)> heavy_index_;
  std::unordered_map<const ir::Computation*, ReducerFns> reducers_;
  // Row kernels: members read from a row cache (its name), indexed by the minor index.
  std::unordered_map<const Instruction*, std::string> row_cache_;
  // Members already stored as a concatenate's operand: the concatenate and the operand's offset
  // along its dimension (StoreConcatenate).
  struct StoredOperand {
    const Instruction* concat;
    const Instruction* operand;
    int64_t offset;
  };
  std::unordered_map<const Instruction*, StoredOperand> stored_operands_;
  bool top_ = false;  // a kernel of the program itself (Emit's `top`)
  // The packs BeginPack opened: where the declaration of its list and its filling code start.
  struct OpenPack {
    std::string name;
    int64_t bytes;
    size_t declaration, body;
    bool constant;  // made from constants alone
  };
  std::vector<OpenPack> open_packs_;
  // File-scope declarations of the shared packs' lists.
  std::string shared_packs_;
};

std::string KernelEmitter::Provided(const Instruction* instr, const Idx& idx) {
  if (auto cached = row_cache_.find(instr); cached != row_cache_.end()) {
    return Var(CType(instr->shape().element_type()),
               absl::StrCat(cached->second, "[", idx.back(), "]"));
  }
  if (!heavy_buffer_.empty() && instr == k_.root) return HeavyLoad(idx);
  if (auto stored = stored_operands_.find(instr); stored != stored_operands_.end()) {
    const Instruction* concat = stored->second.concat;
    // The operand is `instr` or a reshape of it that adds or drops unit dimensions.
    Idx at;
    size_t next = 0;
    for (int64_t n : stored->second.operand->shape().dimensions()) {
      if (n == 1) {
        at.push_back("0");
        continue;
      }
      while (instr->shape().dimensions()[next] == 1) ++next;
      at.push_back(idx[next++]);
    }
    const size_t d = static_cast<size_t>(concat->dimensions[0]);
    at[d] = absl::StrCat("(", at[d], ") + ", stored->second.offset);
    const PrimitiveType t = concat->shape().element_type();
    return Var(CType(t), LoadAs(t, absl::StrCat(OutPtr(concat), "[",
                                                Linear(concat->shape().dimensions(), at), "]")));
  }
  return "";
}

std::string KernelEmitter::External(const Instruction* instr, const Idx& idx) {
  const Instruction* base = BaseValue(instr);
  const PrimitiveType t = instr->shape().element_type();
  if (base->opcode() == Opcode::kConstant) {
    if (base->literal->element_count() == 1) return LiteralText(*base->literal, 0, dialect_);
    return Var(CType(t),
               LoadAs(t, absl::StrCat(pool_->Name(base), "[",
                                      LinearIndex(instr->shape().dimensions(), idx), "]")));
  }
  const std::string load =
      absl::StrCat(in_ptr_.at(base), "[", LinearIndex(instr->shape().dimensions(), idx), "]");
  return Var(CType(t), LoadAs(t, load));
}

std::string KernelEmitter::HeavyLoad(const Idx& idx) {
  return Var("float", absl::StrCat(heavy_buffer_, "[", heavy_index_(idx), "]"));
}

KernelEmitter::ReducerFns KernelEmitter::Reducer(const ir::Computation& comp, PrimitiveType t) {
  auto it = reducers_.find(&comp);
  if (it != reducers_.end()) return it->second;
  const std::string name = absl::StrCat("red_", fn_, "_", reducers_.size());
  const std::string ct = CType(t);
  std::string text = ScalarFunction(comp, name, dialect_);
  ReducerFns fns{.fn = name, .fast = ""};
  const Instruction* root = comp.root();
  const bool max = root->opcode() == Opcode::kMaximum, min = root->opcode() == Opcode::kMinimum;
  if ((max || min) && ir::IsFloatingPoint(t) && root->operand_count() == 2 &&
      root->operand(0)->opcode() == Opcode::kParameter &&
      root->operand(1)->opcode() == Opcode::kParameter && root->operand(0) != root->operand(1)) {
    fns.fast = absl::StrCat(name, "_fast");
    // The accumulator comes first: a NaN value replaces it and the flag records it.
    absl::StrAppend(&text, "inline ", ct, " ", fns.fast, "(", ct, " a, ", ct, " b) { return a ",
                    max ? ">" : "<", " b ? a : b; }\n");
  }
  helpers_ += text;
  reducers_[&comp] = fns;
  return fns;
}

KernelEmitter::Accumulators KernelEmitter::DeclareAccumulators(const ReducerFns& red,
                                                               const std::string& type,
                                                               const std::string& init,
                                                               int64_t lanes) {
  Accumulators a{.red = red, .type = type, .acc = NewName("acc"), .nan = "", .lanes = lanes};
  Line(absl::StrCat(type, " ", a.acc, "[", lanes, "];"));
  Line(absl::StrCat("for (int l = 0; l < ", lanes, "; ++l) ", a.acc, "[l] = ", init, ";"));
  if (!red.fast.empty()) {
    // An int flag per lane: as wide as an f32 lane, so the simd fold stays one vector width.
    a.nan = NewName("nan");
    Line(absl::StrCat("int ", a.nan, "[", lanes, "];"));
    Line(absl::StrCat("for (int l = 0; l < ", lanes, "; ++l) ", a.nan, "[l] = ", init, " != ", init,
                      ";"));
  }
  return a;
}

void KernelEmitter::FoldInto(const Accumulators& a, const std::string& slot, const std::string& v) {
  const std::string acc = absl::StrCat(a.acc, "[", slot, "]");
  if (a.nan.empty()) {
    Line(absl::StrCat(acc, " = ", a.red.fn, "(", acc, ", ", v, ");"));
    return;
  }
  Line(absl::StrCat(acc, " = ", a.red.fast, "(", acc, ", ", v, ");"));
  Line(absl::StrCat(a.nan, "[", slot, "] |= ", v, " != ", v, ";"));
}

std::string KernelEmitter::CombineAccumulators(const Accumulators& a) {
  const std::string acc0 = absl::StrCat(a.acc, "[0]"), accl = absl::StrCat(a.acc, "[l]");
  if (a.nan.empty()) {
    Line(absl::StrCat("for (int l = 1; l < ", a.lanes, "; ++l) ", acc0, " = ", a.red.fn, "(", acc0,
                      ", ", accl, ");"));
    return acc0;
  }
  Open(absl::StrCat("for (int l = 1; l < ", a.lanes, "; ++l) {"));
  Line(absl::StrCat(acc0, " = ", a.red.fast, "(", acc0, ", ", accl, ");"));
  Line(absl::StrCat(a.nan, "[0] |= ", a.nan, "[l];"));
  Close();
  return absl::StrCat("(", a.nan, "[0] ? std::numeric_limits<", a.type, ">::quiet_NaN() : ", acc0,
                      ")");
}

void KernelEmitter::LoopNest(const std::vector<int64_t>& dims, const LoopOptions& opts,
                             const std::function<void(const Idx&)>& body) {
  const size_t rank = dims.size();
  const std::string p = NewName("i");
  Idx idx(rank);
  for (size_t d = 0; d < rank; ++d) {
    idx[d] = dims[d] == 1 ? "0" : absl::StrCat(p, "_", d);
    if (dims[d] > 1) index_.Bound(idx[d], 0, dims[d] - 1);
  }
  int opened = 0;
  std::vector<HoistLevel> levels;  // the loops opened so far, when hoisting
  // `trips`: the loop's constant trip count, or 0 where its bound is only known at run time.
  auto open_loop = [&](size_t d, const std::string& from, const std::string& to, bool inner,
                       int64_t trips) {
    // GCC takes no loop pragma between `omp parallel for` and its loop: a loop that is both the
    // parallel and the inner one is only split across threads.
    const size_t before = code_.size();
    const std::string before_indent = indent_;
    if (opened == 0 && opts.parallel) {
      Line("#pragma omp parallel for schedule(static)");
    } else {
      if (inner && opts.simd) Line("#pragma GCC ivdep");
      // A short constant inner loop is left to GCC (kShortInnerLoop), whatever `unroll` asks.
      const bool short_loop = trips > 0 && trips <= kShortInnerLoop;
      if (inner && opts.unroll > 1 && !short_loop) {
        Line(absl::StrCat("#pragma GCC unroll ", opts.unroll));
      }
    }
    Open(absl::StrCat("for (int64_t ", idx[d], " = ", from, "; ", idx[d], " < ", to, "; ++", idx[d],
                      ") {"));
    ++opened;
    if (opts.hoist) {
      var_level_[idx[d]] = static_cast<int>(levels.size());
      levels.push_back({before, before_indent});
      if (inner) {
        hoist_levels_ = levels;
        hoist_depth_ = indent_.size();
      }
    }
  };
  std::vector<size_t> loops;
  for (size_t d = 0; d < rank; ++d) {
    if (dims[d] != 1) loops.push_back(d);
  }
  Open("{");
  // A tile as wide as the minor dimension or wider walks as block=0 does, only behind bounds
  // the compiler cannot see; so blocking applies only to dimensions longer than the block.
  if (opts.block > 0 && loops.size() >= 2 && opts.block < dims[loops.back()]) {
    const size_t a = loops[loops.size() - 2], b = loops.back();
    const bool block_a = opts.block < dims[a];
    for (size_t j = 0; j + 2 < loops.size(); ++j) {
      open_loop(loops[j], "0", absl::StrCat(dims[loops[j]]), false, dims[loops[j]]);
    }
    const std::string ab = absl::StrCat(idx[a], "b"), bb = absl::StrCat(idx[b], "b");
    if (opened == 0 && opts.parallel) Line("#pragma omp parallel for schedule(static)");
    if (block_a) {
      Open(absl::StrCat("for (int64_t ", ab, " = 0; ", ab, " < ", dims[a], "; ", ab,
                        " += ", opts.block, ") {"));
      ++opened;
    }
    Open(absl::StrCat("for (int64_t ", bb, " = 0; ", bb, " < ", dims[b], "; ", bb,
                      " += ", opts.block, ") {"));
    ++opened;
    if (block_a) {
      open_loop(a, ab,
                absl::StrCat("std::min<int64_t>(", ab, " + ", opts.block, ", ", dims[a], ")"),
                false, 0);
    } else {
      open_loop(a, "0", absl::StrCat(dims[a]), false, dims[a]);
    }
    open_loop(b, bb, absl::StrCat("std::min<int64_t>(", bb, " + ", opts.block, ", ", dims[b], ")"),
              true, 0);
  } else {
    for (size_t j = 0; j < loops.size(); ++j) {
      open_loop(loops[j], "0", absl::StrCat(dims[loops[j]]), j + 1 == loops.size(), dims[loops[j]]);
    }
  }
  PushScope();
  body(idx);
  PopScope();
  hoist_levels_.clear();
  var_level_.clear();
  for (int i = 0; i < opened; ++i) Close();
  Close();
}

void KernelEmitter::StoreOutputs(const std::vector<const Instruction*>& outputs,
                                 const LoopOptions& opts) {
  // Outputs of one shape share a loop nest (and their common subexpressions).
  std::map<std::vector<int64_t>, std::vector<const Instruction*>> groups;
  std::vector<std::vector<int64_t>> order;
  for (const Instruction* o : outputs) {
    if (o->opcode() == Opcode::kDynamicUpdateSlice) {
      StoreDynamicUpdateSlice(o, opts);
      continue;
    }
    if (o->opcode() == Opcode::kConcatenate &&
        o->operand_count() > costmodels::kMaxFusedConcatOperands) {
      StoreConcatenate(o, opts);
      continue;
    }
    auto& g = groups[o->shape().dimensions()];
    if (g.empty()) order.push_back(o->shape().dimensions());
    g.push_back(o);
  }
  LoopOptions hoisting = opts;
  hoisting.hoist = true;
  for (const std::vector<int64_t>& dims : order) {
    if (Product(dims) == 0) continue;
    LoopNest(dims, hoisting, [&](const Idx& idx) {
      for (const Instruction* o : groups[dims]) {
        const std::string v = Value(o, idx);
        Line(absl::StrCat(OutPtr(o), "[", Linear(dims, idx),
                          "] = ", StoreAs(o->shape().element_type(), v), ";"));
      }
    });
  }
}

void KernelEmitter::StoreConcatenate(const Instruction* concat, const LoopOptions& opts) {
  const std::vector<int64_t>& od = concat->shape().dimensions();
  const size_t d = static_cast<size_t>(concat->dimensions[0]);
  const PrimitiveType t = concat->shape().element_type();
  LoopOptions hoisting = opts;
  hoisting.hoist = true;
  int64_t offset = 0;
  for (const Instruction* operand : concat->operands()) {
    const std::vector<int64_t>& dims = operand->shape().dimensions();
    if (Product(dims) > 0) {
      LoopNest(dims, hoisting, [&](const Idx& idx) {
        Idx at = idx;
        at[d] = absl::StrCat("(", idx[d], ") + ", offset);
        Line(absl::StrCat(OutPtr(concat), "[", Linear(od, at),
                          "] = ", StoreAs(t, Value(operand, idx)), ";"));
      });
      // Each block is its own loop nest (and parallel region), so later ones may read it: the
      // operand, and what it reshapes by adding or dropping unit dimensions.
      for (const Instruction* x = operand; k_.Contains(x);) {
        stored_operands_.emplace(x, StoredOperand{concat, operand, offset});
        if (x->opcode() != Opcode::kReshape && x->opcode() != Opcode::kBitcast) break;
        x = x->operand(0);
        if (NonUnitDimensions(x->shape().dimensions()) != NonUnitDimensions(dims)) break;
      }
    }
    offset += dims[d];
  }
}

void KernelEmitter::StoreDynamicUpdateSlice(const Instruction* dus, const LoopOptions& opts) {
  const std::vector<int64_t>& od = dus->shape().dimensions();
  const std::vector<int64_t>& ud = dus->operand(1)->shape().dimensions();
  const PrimitiveType t = dus->shape().element_type();
  if (Product(od) == 0) return;
  LoopOptions hoisting = opts;
  hoisting.hoist = true;
  // The operand's buffer may be the output's (a while's state updated in place): then only the
  // window is written.
  const Instruction* base = BaseValue(dus->operand(0));
  const bool may_alias = !k_.Contains(dus->operand(0)) && in_ptr_.count(base) != 0;
  if (may_alias) {
    Open(absl::StrCat("if ((const void*)", in_ptr_.at(base), " != (const void*)", OutPtr(dus),
                      ") {"));
  }
  LoopNest(od, hoisting, [&](const Idx& idx) {
    Line(absl::StrCat(OutPtr(dus), "[", Linear(od, idx),
                      "] = ", StoreAs(t, Value(dus->operand(0), idx)), ";"));
  });
  if (may_alias) Close();
  if (Product(ud) == 0) return;
  LoopNest(ud, hoisting, [&](const Idx& u) {
    Idx at(u.size());
    for (size_t d = 0; d < u.size(); ++d) {
      const std::string start =
          ClampedStart(dus->operand(static_cast<int64_t>(d) + 2), od[d] - ud[d]);
      at[d] = absl::StrCat("(", start, ") + (", u[d], ")");
    }
    Line(absl::StrCat(OutPtr(dus), "[", Linear(od, at),
                      "] = ", StoreAs(t, Value(dus->operand(1), u)), ";"));
  });
}

absl::Status KernelEmitter::EmitLoop() {
  LoopOptions opts;
  opts.block = Param("block");
  opts.unroll = Param("unroll");
  opts.simd = Param("simd") != 0;
  opts.parallel = Param("parallel") != 0;
  StoreOutputs(k_.outputs, opts);
  return absl::OkStatus();
}

// XLA's scatter (as ir/evaluator/gather_scatter.cc): the output starts as the operand; then, in
// the updates' order, each update element's window start comes from its index vector, a window
// that does not fit the operand is skipped whole, and the combiner folds the update into the
// output element. Sequential, so updates to one element apply in order.
// XLA's select-and-scatter (a max pool's gradient), as the evaluator runs it: the output starts
// as the init value; for each source element in order, the window it stands for selects an
// operand element (the first valid one, replaced by each later one the select computation does
// not keep it over; padding is never selected), and the scatter computation folds the source
// element into that output element.
absl::Status KernelEmitter::EmitSelectAndScatter() {
  const Instruction* s = k_.root;
  const Instruction* operand = s->operand(0);
  const Instruction* source = s->operand(1);
  const PrimitiveType t = s->shape().element_type();
  const PrimitiveType ot = operand->shape().element_type();
  const std::vector<int64_t>& od = s->shape().dimensions();
  const std::vector<int64_t>& sd = source->shape().dimensions();
  const std::string out = OutPtr(s);
  if (Product(od) == 0) return absl::OkStatus();
  const std::string init = Value(s->operand(2), {});
  LoopNest(od, LoopOptions{}, [&](const Idx& idx) {
    Line(absl::StrCat(out, "[", Linear(od, idx), "] = ", StoreAs(t, init), ";"));
  });
  if (Product(sd) == 0) return absl::OkStatus();
  const std::string select = absl::StrCat(fn_, "_select");
  helpers_ += ScalarFunction(*s->called_computations()[0], select, dialect_);
  const std::string scatter = Reducer(*s->called_computations()[1], t).fn;
  const std::string in = LeafArray(BaseValue(operand));
  LoopNest(sd, LoopOptions{}, [&](const Idx& idx) {
    Line("int64_t sel = -1;");
    int opened = 0;
    std::vector<std::string> pos;
    for (size_t d = 0; d < od.size(); ++d) {
      const ir::WindowDim& w = s->window->dims[d];
      const std::string wv = NewName("w");
      Open(absl::StrCat("for (int64_t ", wv, " = 0; ", wv, " < ", w.size, "; ++", wv, ") {"));
      ++opened;
      const std::string raw = NewName("p");
      Line(absl::StrCat("const int64_t ", raw, " = (", idx[d], ")*", w.stride, " + ", wv, "*",
                        w.window_dilation, " - ", w.padding_low, ";"));
      std::string at = raw;
      if (w.base_dilation > 1) {
        Line(
            absl::StrCat("if (", raw, " < 0 || ", raw, " % ", w.base_dilation, " != 0) continue;"));
        at = absl::StrCat("(", raw, " / ", w.base_dilation, ")");
      }
      Line(absl::StrCat("if (", at, " < 0 || ", at, " >= ", od[d], ") continue;"));
      pos.push_back(at);
    }
    Line(absl::StrCat("const int64_t at = ", Linear(od, pos), ";"));
    Line(absl::StrCat("if (sel < 0 || !", select, "(", LoadAs(ot, absl::StrCat(in, "[sel]")), ", ",
                      LoadAs(ot, absl::StrCat(in, "[at]")), ")) sel = at;"));
    for (int i = 0; i < opened; ++i) Close();
    const std::string v = Value(source, idx);
    Line(absl::StrCat(
        "if (sel >= 0) ", out, "[sel] = ",
        StoreAs(t, absl::StrCat(scatter, "(", LoadAs(t, absl::StrCat(out, "[sel]")), ", ", v, ")")),
        ";"));
  });
  return absl::OkStatus();
}

absl::Status KernelEmitter::EmitScatter() {
  const Instruction* s = k_.root;
  if (s->opcode() == Opcode::kSelectAndScatter) return EmitSelectAndScatter();
  const Instruction* operand = s->operand(0);
  const Instruction* updates = s->operand(2);
  const PrimitiveType t = s->shape().element_type();
  const std::vector<int64_t>& od = s->shape().dimensions();
  const std::vector<int64_t>& ud = updates->shape().dimensions();
  const std::string out = OutPtr(s);
  if (Product(od) > 0) {
    LoopNest(od, LoopOptions{}, [&](const Idx& idx) {
      Line(absl::StrCat(out, "[", Linear(od, idx), "] = ", StoreAs(t, Value(operand, idx)), ";"));
    });
  }
  if (Product(ud) == 0 || Product(od) == 0) return absl::OkStatus();
  const std::string combine = Reducer(*s->to_apply(), t).fn;
  LoopNest(ud, LoopOptions{}, [&](const Idx& idx) {
    std::vector<std::string> fits;
    const Idx target = ScatterTarget(s, idx, &fits);
    const std::string slot = absl::StrCat(out, "[", Linear(od, target), "]");
    const std::string update = Value(updates, idx);
    Open(fits.empty() ? std::string("{")
                      : absl::StrCat("if (", absl::StrJoin(fits, " && "), ") {"));
    Line(absl::StrCat(slot, " = ",
                      StoreAs(t, absl::StrCat(combine, "(", LoadAs(t, slot), ", ", update, ")")),
                      ";"));
    Close();
  });
  return absl::OkStatus();
}

std::string KernelEmitter::LeafArray(const Instruction* leaf) {
  if (leaf->opcode() == Opcode::kConstant) return pool_->Name(leaf);
  return in_ptr_.at(leaf);
}

absl::StatusOr<int64_t> KernelEmitter::CalledProgram(const LoweredModule& called,
                                                     const std::string& name) {
  absl::StatusOr<ProgramText> text = EmitProgram(called, {}, absl::StrCat(name, "_"), pool_);
  if (!text.ok()) return text.status();
  absl::StrAppend(&helpers_, text->kernels, "void ", name,
                  "(void* const* args, void* const* results, char* scratch) {\n"
                  "  (void)args; (void)results; (void)scratch;\n",
                  text->entry, "}\n");
  onednn_ |= text->onednn;
  onednn_conv_ |= text->onednn_conv;
  return text->scratch_bytes;
}

// True when the body's result `i` is a dynamic-update-slice of its parameter `i` and nothing else
// reads that parameter, so the update can be written into the state itself (as XLA's buffer
// assignment aliases it): a scan's per-step output row then costs its row, not a copy of the
// whole stacked output twice per step (Mamba's 786 KB per step and loop).
bool UpdatesLeafInPlace(const LoweredModule& body, size_t i) {
  if (i >= body.results.size() || i >= body.parameters.size()) return false;
  const Instruction* r = body.results[i];
  const Instruction* p = body.parameters[i];
  if (r->opcode() != Opcode::kDynamicUpdateSlice || BaseValue(r->operand(0)) != p) return false;
  if (std::count(body.results.begin(), body.results.end(), r) != 1) return false;
  // Every reader of the parameter's buffer is the update itself (bitcasts of it included).
  std::vector<const Instruction*> readers = {p};
  for (size_t k = 0; k < readers.size(); ++k) {
    for (const Instruction* u : readers[k]->users()) {
      if (u->opcode() == Opcode::kBitcast) {
        readers.push_back(u);
      } else if (u != r) {
        return false;
      }
    }
  }
  return true;
}

// XLA's while: the state (the kernel's outputs) starts as the operand; then, while the condition
// holds, the body maps the state to the next one. Body results other than a leaf it passes
// through unchanged or updates in place are written apart and copied back, since the body still
// reads the state.
absl::Status KernelEmitter::EmitWhile() {
  const LoweredModule& cond = *k_.called[0];
  const LoweredModule& body = *k_.called[1];
  const absl::StatusOr<int64_t> cond_scratch = CalledProgram(cond, fn_ + "_cond");
  if (!cond_scratch.ok()) return cond_scratch.status();
  const absl::StatusOr<int64_t> body_scratch = CalledProgram(body, fn_ + "_body");
  if (!body_scratch.ok()) return body_scratch.status();
  const size_t n = k_.outputs.size();
  std::vector<std::string> state, next;
  std::vector<std::pair<size_t, int64_t>> copies;  // (leaf, bytes) copied back each iteration
  std::vector<std::pair<size_t, int64_t>> after;   // (leaf, bytes) copied out once, at the end
  for (size_t i = 0; i < n; ++i) {
    const int64_t bytes = k_.outputs[i]->shape().ByteSize();
    const bool through = i < body.results.size() && i < body.parameters.size() &&
                         body.results[i] == body.parameters[i];
    if (through) {
      // A leaf the body passes through unchanged (an RNN's weights) is read where it lies and
      // copied out once, where anything reads the result: the 2-layer LSTM LM copied 14 MB of
      // weights into each loop's state per call.
      state.push_back(absl::StrCat("(char*)", LeafArray(k_.operand_leaves[i])));
      const Instruction* o = k_.outputs[i];
      const bool live = !o->users().empty() || o->parent()->root() == o;
      if (bytes > 0 && live) after.emplace_back(i, bytes);
      next.push_back(state[i]);
      continue;
    }
    state.push_back(absl::StrCat("(char*)", OutPtr(k_.outputs[i])));
    if (bytes > 0) {
      Line(absl::StrCat("std::memcpy(", state[i], ", ", LeafArray(k_.operand_leaves[i]), ", ",
                        bytes, ");"));
    }
    if (UpdatesLeafInPlace(body, i)) {
      next.push_back(state[i]);
    } else {
      next.push_back(absl::StrCat("ws + ", Alloc(bytes)));
      if (bytes > 0) copies.emplace_back(i, bytes);
    }
  }
  const int64_t sub = Alloc(std::max(*cond_scratch, *body_scratch));
  const std::string args = absl::StrJoin(state, ", ");
  Open("for (;;) {");
  Line("uint8_t go = 0;");
  Line(absl::StrCat("{ void* a[] = {", args, n > 0 ? ", " : "", "nullptr}; void* r[] = {&go}; ",
                    fn_, "_cond(a, r, ws + ", sub, "); }"));
  Line("if (!go) break;");
  Line(absl::StrCat("{ void* a[] = {", args, n > 0 ? ", " : "", "nullptr}; void* r[] = {",
                    absl::StrJoin(next, ", "), n > 0 ? ", " : "", "nullptr}; ", fn_,
                    "_body(a, r, ws + ", sub, "); }"));
  for (const auto& [i, bytes] : copies) {
    Line(absl::StrCat("std::memcpy(", state[i], ", ", next[i], ", ", bytes, ");"));
  }
  Close();
  for (const auto& [i, bytes] : after) {
    Line(absl::StrCat("std::memcpy((char*)", OutPtr(k_.outputs[i]), ", ", state[i], ", ", bytes,
                      ");"));
  }
  return absl::OkStatus();
}

// XLA's conditional: a pred index runs branch 0 when true, 1 when false; an s32 index out of
// range runs the last branch. The branch writes the kernel's outputs.
absl::Status KernelEmitter::EmitConditional() {
  const Instruction* c = k_.root;
  const int64_t branches = static_cast<int64_t>(k_.called.size());
  std::vector<std::string> outs;
  for (const Instruction* o : k_.outputs) outs.push_back(absl::StrCat("(char*)", OutPtr(o)));
  outs.push_back("nullptr");
  int64_t scratch = 0;
  std::vector<std::string> calls;
  size_t at = 1;  // operand_leaves[0] is the index
  for (int64_t b = 0; b < branches; ++b) {
    const std::string name = absl::StrCat(fn_, "_branch", b);
    absl::StatusOr<int64_t> bs = CalledProgram(*k_.called[static_cast<size_t>(b)], name);
    if (!bs.ok()) return bs.status();
    scratch = std::max(scratch, *bs);
    const ir::Shape& operand = c->operand(b + 1)->shape();
    const int64_t leaves = operand.IsTuple() ? operand.tuple_size() : 1;
    std::vector<std::string> args;
    for (int64_t l = 0; l < leaves; ++l) {
      args.push_back(absl::StrCat("(void*)", LeafArray(k_.operand_leaves[at++])));
    }
    args.push_back("nullptr");
    calls.push_back(absl::StrCat("{ void* a[] = {", absl::StrJoin(args, ", "), "}; void* r[] = {",
                                 absl::StrJoin(outs, ", "), "}; ", name, "(a, r, ws + @); }"));
  }
  const int64_t sub = Alloc(scratch);
  const std::string index = absl::StrCat("(int64_t)", LeafArray(k_.operand_leaves[0]), "[0]");
  if (c->operand(0)->shape().element_type() == PrimitiveType::kPred) {
    Line(absl::StrCat("const int64_t branch = ", index, " ? 0 : 1;"));
  } else {
    Line(absl::StrCat("int64_t branch = ", index, ";"));
    Line(absl::StrCat("if (branch < 0 || branch >= ", branches, ") branch = ", branches - 1, ";"));
  }
  Open("switch (branch) {");
  for (int64_t b = 0; b < branches; ++b) {
    std::string call = calls[static_cast<size_t>(b)];
    call.replace(call.find('@'), 1, absl::StrCat(sub));
    Line(absl::StrCat("case ", b, ": ", call, " break;"));
  }
  Close();
  return absl::OkStatus();
}

// XLA's sort: each slice along the sort dimension is ordered by the comparator over all operands'
// elements, stably (as the evaluator sorts), and every operand is permuted alike.
absl::Status KernelEmitter::EmitSort() {
  const Instruction* s = k_.root;
  const std::vector<int64_t>& dims = s->operand(0)->shape().dimensions();
  const int64_t d = s->dimensions[0];
  const int64_t n = dims[static_cast<size_t>(d)];
  if (Product(dims) == 0) return absl::OkStatus();
  const std::string cmp = absl::StrCat(fn_, "_less");
  helpers_ += ScalarFunction(*s->to_apply(), cmp, dialect_);
  int64_t stride = 1;
  for (size_t i = static_cast<size_t>(d) + 1; i < dims.size(); ++i) stride *= dims[i];
  const int64_t perm_at = Alloc(n * static_cast<int64_t>(sizeof(int64_t)));
  std::vector<int64_t> outer = dims;
  outer[static_cast<size_t>(d)] = 1;
  const size_t k = static_cast<size_t>(s->operand_count());
  LoopNest(outer, LoopOptions{}, [&](const Idx& idx) {
    const std::string base = IntVar(Linear(dims, idx));
    Line(absl::StrCat("int64_t* const perm = (int64_t*)(ws + ", perm_at, ");"));
    Line(absl::StrCat("for (int64_t j = 0; j < ", n, "; ++j) perm[j] = j;"));
    std::vector<std::string> args;
    for (size_t o = 0; o < k; ++o) {
      const std::string a = LeafArray(k_.operand_leaves[o]);
      for (const char* side : {"x", "y"}) {
        args.push_back(LoadAs(s->operand(o)->shape().element_type(),
                              absl::StrCat(a, "[", base, " + ", side, " * ", stride, "]")));
      }
    }
    Line(absl::StrCat("std::stable_sort(perm, perm + ", n, ", [&](int64_t x, int64_t y) { return ",
                      cmp, "(", absl::StrJoin(args, ", "), "); });"));
    Open(absl::StrCat("for (int64_t j = 0; j < ", n, "; ++j) {"));
    for (size_t o = 0; o < k; ++o) {
      Line(absl::StrCat(OutPtr(k_.outputs[o]), "[", base, " + j * ", stride, "] = ",
                        LeafArray(k_.operand_leaves[o]), "[", base, " + perm[j] * ", stride, "];"));
    }
    Close();
  });
  return absl::OkStatus();
}

absl::Status KernelEmitter::EmitLibrary() {
  const Instruction* c = k_.root;
  if (c->opcode() == Opcode::kTriangularSolve) return EmitTriangularSolve();
  if (c->opcode() == Opcode::kRngBitGenerator) {
    absl::StatusOr<std::string> code = RngBitGeneratorCode(
        *c, LeafArray(k_.operand_leaves[0]), OutPtr(k_.outputs[0]), OutPtr(k_.outputs[1]));
    if (!code.ok()) return code.status();
    for (absl::string_view line : absl::StrSplit(*code, '\n', absl::SkipEmpty())) {
      Line(std::string(line));
    }
    return absl::OkStatus();
  }
  switch (internal::FindLibraryCall(*c)) {
    case internal::LibraryCall::kThreefry2x32: {
      const int64_t n = k_.outputs[0]->shape().ElementCount();
      std::vector<std::string> in;
      for (const Instruction* leaf : k_.operand_leaves) in.push_back(LeafArray(leaf));
      Line("#pragma omp simd");
      Open(absl::StrCat("for (int64_t i = 0; i < ", n, "; ++i) {"));
      Line(absl::StrCat("mt_threefry2x32(", in[0], "[i], ", in[1], "[i], ", in[2], "[i], ", in[3],
                        "[i], &", OutPtr(k_.outputs[0]), "[i], &", OutPtr(k_.outputs[1]), "[i]);"));
      Close();
      return absl::OkStatus();
    }
    case internal::LibraryCall::kLuPivotsToPermutation: {
      // The permutation the pivots' row swaps apply to 0..size-1; out-of-range pivots skipped.
      const int64_t pivots = c->operand(0)->shape().dimensions().back();
      const int64_t size = c->shape().dimensions().back();
      const int64_t batch = c->shape().ElementCount() / size;
      const std::string in = LeafArray(k_.operand_leaves[0]), out = OutPtr(k_.outputs[0]);
      Open(absl::StrCat("for (int64_t b = 0; b < ", batch, "; ++b) {"));
      Line(absl::StrCat("int32_t* const perm = ", out, " + b * ", size, ";"));
      Line(absl::StrCat("for (int64_t i = 0; i < ", size, "; ++i) perm[i] = (int32_t)i;"));
      Open(absl::StrCat("for (int64_t i = 0; i < ", std::min(pivots, size), "; ++i) {"));
      Line(absl::StrCat("const int64_t j = ", in, "[b * ", pivots, " + i];"));
      Line(absl::StrCat("if (j >= 0 && j < ", size, ") std::swap(perm[i], perm[j]);"));
      Close();
      Close();
      return absl::OkStatus();
    }
    case internal::LibraryCall::kPotrf:
    case internal::LibraryCall::kGetrf:
    case internal::LibraryCall::kGeqrf:
    case internal::LibraryCall::kOrgqr:
    case internal::LibraryCall::kTrsm:
      return EmitLinalg();
    case internal::LibraryCall::kNone:
      break;
  }
  return absl::InternalError(absl::StrCat("no library routine for '", c->name(), "'"));
}

// HLO's triangular-solve: b copied to the output, then each matrix of the batch solved in place by
// the runtime's routine (the LAPACK-style trsm's).
absl::Status KernelEmitter::EmitTriangularSolve() {
  const Instruction* c = k_.root;
  const ir::TriangularSolveOptions& opt = *c->triangular_solve;
  const std::vector<int64_t>& bd = c->shape().dimensions();
  const int64_t rank = static_cast<int64_t>(bd.size());
  const int64_t m = bd[static_cast<size_t>(rank - 2)], n = bd[static_cast<size_t>(rank - 1)];
  const int64_t k = opt.left_side ? m : n;
  const int64_t es = ir::BitWidth(c->shape().element_type()) / 8;
  const int64_t bytes = c->shape().ByteSize();
  if (bytes == 0) return absl::OkStatus();
  const std::string out = absl::StrCat("(char*)", OutPtr(k_.outputs[0]));
  Line(absl::StrCat("std::memcpy(", out, ", ", LeafArray(k_.operand_leaves[1]), ", ", bytes, ");"));
  Open(absl::StrCat("for (int64_t b = 0; b < ", c->shape().ElementCount() / (m * n), "; ++b) {"));
  Line(absl::StrCat("mltune_rt_trsm(", c->shape().element_type() == PrimitiveType::kF64 ? 1 : 0,
                    ", (const char*)", LeafArray(k_.operand_leaves[0]), " + b * ", k * k * es, ", ",
                    out, " + b * ", m * n * es, ", ", m, ", ", n, ", ", opt.left_side ? 1 : 0, ", ",
                    opt.lower ? 1 : 0, ", ",
                    opt.transpose_a != ir::TriangularTranspose::kNoTranspose ? 1 : 0, ", ",
                    opt.unit_diagonal ? 1 : 0, ");"));
  Close();
  return absl::OkStatus();
}

// LAPACK-style calls: the results start zeroed (workspace and info leaves), the matrix is copied
// to the first, and the runtime routine factors or solves each matrix of the batch in place.
absl::Status KernelEmitter::EmitLinalg() {
  const Instruction* c = k_.root;
  const absl::StatusOr<ir::LinalgCall> call = ir::DecodeLinalgCall(*c);
  if (!call.ok()) return call.status();
  const internal::LibraryCall kind = internal::FindLibraryCall(*c);
  const PrimitiveType t = c->operand(0)->shape().element_type();
  const int64_t es = ir::BitWidth(t) / 8;
  const std::string f64 = t == PrimitiveType::kF64 ? "1" : "0";
  for (const Instruction* o : k_.outputs) {
    const int64_t bytes = o->shape().ByteSize();
    if (bytes > 0) Line(absl::StrCat("std::memset(", OutPtr(o), ", 0, ", bytes, ");"));
  }
  const size_t matrix = kind == internal::LibraryCall::kTrsm ? 1 : 0;
  const std::string out = absl::StrCat("(char*)", OutPtr(k_.outputs[0]));
  const int64_t bytes = k_.outputs[0]->shape().ByteSize();
  if (bytes > 0) {
    Line(absl::StrCat("std::memcpy(", out, ", ", LeafArray(k_.operand_leaves[matrix]), ", ", bytes,
                      ");"));
  }
  const int64_t mn = call->m * call->n, k = call->k;
  Open(absl::StrCat("for (int64_t b = 0; b < ", call->batch, "; ++b) {"));
  const std::string at = absl::StrCat(out, " + b * ", mn * es);
  switch (kind) {
    case internal::LibraryCall::kPotrf:
      Line(absl::StrCat(OutPtr(k_.outputs[1]), "[b] = mltune_rt_potrf(", f64, ", ", at, ", ",
                        call->n, ", ", call->lower ? 1 : 0, ");"));
      break;
    case internal::LibraryCall::kGetrf:
      Line(absl::StrCat(OutPtr(k_.outputs[2]), "[b] = mltune_rt_getrf(", f64, ", ", at, ", ",
                        call->m, ", ", call->n, ", ", OutPtr(k_.outputs[1]), " + b * ", k, ");"));
      break;
    case internal::LibraryCall::kGeqrf:
      Line(absl::StrCat("mltune_rt_geqrf(", f64, ", ", at, ", ", call->m, ", ", call->n,
                        ", (char*)", OutPtr(k_.outputs[1]), " + b * ", k * es, ");"));
      break;
    case internal::LibraryCall::kOrgqr:
      Line(absl::StrCat("mltune_rt_orgqr(", f64, ", ", at, ", ", call->m, ", ", call->n, ", ", k,
                        ", (const char*)", LeafArray(k_.operand_leaves[1]), " + b * ", k * es,
                        ");"));
      break;
    case internal::LibraryCall::kTrsm:
      Line(absl::StrCat("mltune_rt_trsm(", f64, ", (const char*)", LeafArray(k_.operand_leaves[0]),
                        " + b * ", k * k * es, ", ", at, ", ", call->m, ", ", call->n, ", ",
                        call->left_side ? 1 : 0, ", ", call->lower ? 1 : 0, ", ",
                        call->transpose ? 1 : 0, ", ", call->unit_diagonal ? 1 : 0, ");"));
      break;
    default:
      return absl::InternalError("not a LAPACK-style call");
  }
  Close();
  return absl::OkStatus();
}

absl::Status KernelEmitter::EmitReduce() {
  const Instruction* r = k_.root;
  const Instruction* x = r->operand(0);
  const PrimitiveType t = r->shape().element_type();
  const std::string ct = CType(t);
  const std::vector<int64_t>& xd = x->shape().dimensions();
  const std::vector<int64_t>& od = r->shape().dimensions();
  std::vector<bool> reduced(xd.size(), false);
  for (int64_t d : r->dimensions) reduced[static_cast<size_t>(d)] = true;
  std::vector<const Instruction*> others;
  for (const Instruction* o : k_.outputs) {
    if (o != r) others.push_back(o);
  }
  StoreOutputs(others, LoopOptions{.simd = true});
  if (Product(od) == 0) return absl::OkStatus();
  const ReducerFns red = Reducer(*r->to_apply(), t);
  const std::string init = Value(r->operand(1), {});
  const std::string out = OutPtr(r);
  const bool parallel = Param("parallel") != 0;
  std::vector<size_t> red_dims, kept_dims;
  for (size_t d = 0; d < xd.size(); ++d) (reduced[d] ? red_dims : kept_dims).push_back(d);

  if (Param("order") == 1 || Product(xd) == 0) {
    // Walk the operand in memory order; each element folds into its output element.
    LoopNest(od, LoopOptions{.simd = true}, [&](const Idx& oi) {
      Line(absl::StrCat(out, "[", Linear(od, oi), "] = ", StoreAs(t, init), ";"));
    });
    if (Product(xd) == 0) return absl::OkStatus();
    const bool inner_kept = !xd.empty() && !reduced.back();
    // `parallel` splits the first loop LoopNest opens, the first dimension that is not 1; were
    // it a reduced one, every thread would fold into the same outputs.
    const auto first_loop = std::find_if(xd.begin(), xd.end(), [](int64_t n) { return n != 1; });
    const bool outer_kept = first_loop != xd.end() && !reduced[first_loop - xd.begin()];
    LoopOptions opts{.simd = inner_kept, .parallel = parallel && outer_kept};
    LoopNest(xd, opts, [&](const Idx& idx) {
      Idx oi;
      for (size_t d : kept_dims) oi.push_back(idx[d]);
      const std::string v = Value(x, idx);
      const std::string slot = absl::StrCat(out, "[", Linear(od, oi), "]");
      Line(absl::StrCat(slot, " = ",
                        StoreAs(t, absl::StrCat(red.fn, "(", LoadAs(t, slot), ", ", v, ")")), ";"));
    });
    return absl::OkStatus();
  }
  // Reduced dimensions innermost, `lanes` partial accumulators on the last one, or on the flat
  // run of the trailing ones (FlatReducedRun: its outer indices 0, the minor one walking it all).
  int64_t run_length = 1;
  const size_t merged = static_cast<size_t>(FlatReducedRun(k_, *r, &run_length));
  const int64_t lanes = red_dims.empty() ? 1 : LanesFor(run_length);
  std::vector<int64_t> kept_sizes;
  for (size_t d : kept_dims) kept_sizes.push_back(xd[d]);
  LoopNest(kept_sizes, LoopOptions{.parallel = parallel}, [&](const Idx& ki) {
    Idx idx(xd.size());
    for (size_t j = 0; j < kept_dims.size(); ++j) idx[kept_dims[j]] = ki[j];
    const Accumulators acc = DeclareAccumulators(red, ct, init, lanes);
    int opened = 0;
    for (size_t j = 0; j + 1 < red_dims.size(); ++j) {
      const size_t d = red_dims[j];
      const bool loop = xd[d] != 1 && j + merged < red_dims.size();  // not in the flat run
      idx[d] = loop ? NewName("r") : "0";
      if (loop) {
        Open(absl::StrCat("for (int64_t ", idx[d], " = 0; ", idx[d], " < ", xd[d], "; ++", idx[d],
                          ") {"));
        ++opened;
      }
    }
    if (!red_dims.empty()) {
      // A flat run walks its innermost dimension longer than 1: index expressions leave out
      // dimensions of length 1, so an index on one of those would be dropped.
      size_t last = red_dims.back();
      for (size_t i = 0; merged > 1 && i < merged; ++i) {
        if (xd[xd.size() - 1 - i] != 1) {
          idx[last].assign(1, '0');
          last = xd.size() - 1 - i;
          break;
        }
      }
      FoldLanes(NewName("j"), lanes, run_length,
                [&](const std::string& col, const std::string& slot) {
                  PushScope();
                  idx[last] = col;
                  FoldInto(acc, slot, Value(x, idx));
                  PopScope();
                });
    }
    for (int i = 0; i < opened; ++i) Close();
    const std::string value = CombineAccumulators(acc);
    Line(absl::StrCat(out, "[", Linear(od, ki), "] = ", StoreAs(t, value), ";"));
  });
  return absl::OkStatus();
}

void KernelEmitter::FoldLanes(
    const std::string& j, int64_t lanes, int64_t n,
    const std::function<void(const std::string& col, const std::string& slot)>& fold) {
  Line(absl::StrCat("int64_t ", j, " = 0;"));
  if (lanes > 1) {
    Open(absl::StrCat("for (; ", j, " + ", lanes, " <= ", n, "; ", j, " += ", lanes, ") {"));
    Line("#pragma omp simd");
    Open(absl::StrCat("for (int l = 0; l < ", lanes, "; ++l) {"));
    fold(absl::StrCat(j, " + l"), "l");
    Close();
    Close();
  }
  Open(absl::StrCat("for (; ", j, " < ", n, "; ++", j, ") {"));
  fold(j, "0");
  Close();
}

absl::Status KernelEmitter::EmitReduceWindow() {
  const Instruction* r = k_.root;
  const Instruction* x = r->operand(0);
  const PrimitiveType t = r->shape().element_type();
  const std::string ct = CType(t);
  const std::vector<int64_t>& xd = x->shape().dimensions();
  const std::vector<int64_t>& od = r->shape().dimensions();
  std::vector<const Instruction*> others;
  for (const Instruction* o : k_.outputs) {
    if (o != r) others.push_back(o);
  }
  StoreOutputs(others, LoopOptions{.simd = true});
  if (Product(od) == 0) return absl::OkStatus();
  const ReducerFns red = Reducer(*r->to_apply(), t);
  const std::string init = Value(r->operand(1), {});
  std::vector<ir::WindowDim> win(xd.size());
  if (r->window.has_value()) {
    for (size_t d = 0; d < xd.size() && d < r->window->dims.size(); ++d)
      win[d] = r->window->dims[d];
  }
  if (Param("order") == 1) return EmitReduceWindowRows(win);
  LoopOptions opts{.simd = Param("simd") != 0, .parallel = Param("parallel") != 0};
  LoopNest(od, opts, [&](const Idx& oi) {
    const Accumulators acc = DeclareAccumulators(red, ct, init, 1);
    Idx xi(xd.size());
    std::vector<std::string> valid;
    int opened = 0;
    for (size_t d = 0; d < xd.size(); ++d) {
      const ir::WindowDim& w = win[d];
      const bool padded = w.padding_low != 0 || w.padding_high != 0;
      // Without base dilation, the window positions that land inside the operand are one range,
      // computed before the loop: the loop then has no bounds test, and vectorizes (DLRM's
      // cumulative sum, a window as wide as its 729 inputs: 90-140 us before, 13 us after).
      const bool ranged = padded && w.base_dilation == 1 && w.size != 1;
      std::string wv = "0";
      if (w.size != 1) {
        std::string lo = "0", hi = absl::StrCat(w.size);
        if (ranged) {
          // pos = o*stride - pad + w*dilation in [0, n) <=> w in [ceil(a/dil), ceil((n+a)/dil))
          // with a = pad - o*stride, clamped to [0, size).
          const std::string a = IntVar(absl::StrCat(w.padding_low, " - (", oi[d], ")*", w.stride));
          const int64_t wd = w.window_dilation;
          lo = IntVar(absl::StrCat("std::max<int64_t>(0, ", a, " <= 0 ? 0 : (", a, " + ", wd - 1,
                                   ") / ", wd, ")"));
          hi = IntVar(absl::StrCat("std::min<int64_t>(", w.size, ", ", xd[d], " + ", a,
                                   " <= 0 ? 0 : (", xd[d], " + ", a, " + ", wd - 1, ") / ", wd,
                                   ")"));
        }
        wv = NewName("w");
        Open(absl::StrCat("for (int64_t ", wv, " = ", lo, "; ", wv, " < ", hi, "; ++", wv, ") {"));
        ++opened;
      }
      const std::string raw = IntVar(absl::StrCat("(", oi[d], ")*", w.stride, " - ", w.padding_low,
                                                  " + ", wv, "*", w.window_dilation));
      std::string pos = raw;
      if (w.base_dilation > 1) {
        valid.push_back(absl::StrCat(raw, " >= 0 && ", raw, " % ", w.base_dilation, " == 0"));
        pos = IntVar(absl::StrCat(raw, " / ", w.base_dilation));
      }
      if ((padded && !ranged) || w.base_dilation > 1) {
        valid.push_back(absl::StrCat(pos, " >= 0 && ", pos, " < ", xd[d]));
      }
      xi[d] = pos;
    }
    if (!valid.empty()) Open(absl::StrCat("if (", absl::StrJoin(valid, " && "), ") {"));
    PushScope();
    FoldInto(acc, "0", Value(x, xi));
    PopScope();
    if (!valid.empty()) Close();
    for (int i = 0; i < opened; ++i) Close();
    const std::string value = CombineAccumulators(acc);
    Line(absl::StrCat(OutPtr(r), "[", Linear(od, oi), "] = ", StoreAs(t, value), ";"));
  });
  return absl::OkStatus();
}

// Rows: for each row of the output (all but its minor dimension), the row is set to the init
// value, then every window position folds a contiguous range of the row with one vector loop. The
// range is where the window position lands inside the operand, so the loop has no bounds tests.
absl::Status KernelEmitter::EmitReduceWindowRows(const std::vector<ir::WindowDim>& win) {
  const Instruction* r = k_.root;
  const Instruction* x = r->operand(0);
  const std::vector<int64_t>& xd = x->shape().dimensions();
  const std::vector<int64_t>& od = r->shape().dimensions();
  const size_t last = od.size() - 1;
  const ReducerFns fns = Reducer(*r->to_apply(), r->shape().element_type());
  const std::string& red = fns.fn;
  const std::string& fast = fns.fast;
  const std::string init = Value(r->operand(1), {});
  const std::string out = OutPtr(r);
  const std::vector<int64_t> outer(od.begin(), od.end() - 1);
  LoopOptions opts{.parallel = Param("parallel") != 0};
  LoopNest(outer, opts, [&](const Idx& oo) {
    const std::string j = NewName("j");
    Idx oi = oo;
    oi.push_back(j);
    const std::string slot = absl::StrCat(out, "[", Linear(od, oi), "]");
    Line(absl::StrCat("for (int64_t ", j, " = 0; ", j, " < ", od[last], "; ++", j, ") ", slot,
                      " = ", init, ";"));
    Idx xi(xd.size());
    std::string wv = "0";  // the window position on the dimension at hand
    int opened = 0;
    // A small window on the minor dimension (pooling's 3x3 in NCHW) folds inside the row loop,
    // unrolled, over the interior columns, whose windows lie inside the operand: one pass over
    // the row per window row instead of one per window position, so a 56-wide row's loop
    // overhead and read-modify-write of the output are paid 3 times rather than 9.
    const ir::WindowDim& w = win[last];
    const bool inner = w.size > 1 && w.size <= kInnerWindowMax && w.base_dilation <= 1;
    for (size_t d = 0; d < xd.size(); ++d) {
      const ir::WindowDim& wd = win[d];
      const bool loop = wd.size != 1 && !(d == last && inner);
      wv = loop ? NewName("w") : std::string("0");
      if (loop) {
        Open(absl::StrCat("for (int64_t ", wv, " = 0; ", wv, " < ", wd.size, "; ++", wv, ") {"));
        ++opened;
      }
      if (d == last) break;
      const std::string raw = IntVar(absl::StrCat(
          "(", oo[d], ")*", wd.stride, " - ", wd.padding_low, " + ", wv, "*", wd.window_dilation));
      std::string pos = raw;
      std::vector<std::string> valid;
      if (wd.base_dilation > 1) {
        valid.push_back(absl::StrCat(raw, " >= 0 && ", raw, " % ", wd.base_dilation, " == 0"));
        pos = IntVar(absl::StrCat(raw, " / ", wd.base_dilation));
      }
      if (wd.padding_low != 0 || wd.padding_high != 0 || wd.base_dilation > 1) {
        valid.push_back(absl::StrCat(pos, " >= 0 && ", pos, " < ", xd[d]));
      }
      if (!valid.empty()) {
        Open(absl::StrCat("if (", absl::StrJoin(valid, " && "), ") {"));
        ++opened;
      }
      xi[d] = pos;
    }
    if (inner) {
      // Column j's window reads j*stride - low + k*dilation, k < size: inside the operand for j
      // in [lo, hi), constants; the columns outside test each position.
      const int64_t span = (w.size - 1) * w.window_dilation;
      const int64_t hi =
          std::clamp<int64_t>(xd[last] - 1 - span + w.padding_low < 0
                                  ? 0
                                  : (xd[last] - 1 - span + w.padding_low) / w.stride + 1,
                              0, od[last]);
      const int64_t lo = std::min<int64_t>(hi, (w.padding_low + w.stride - 1) / w.stride);
      auto fold_columns = [&](int64_t from, int64_t to, bool tested) {
        if (from >= to) return;
        if (!tested && Param("simd") != 0) Line("#pragma GCC ivdep");
        Open(absl::StrCat("for (int64_t ", j, " = ", from, "; ", j, " < ", to, "; ++", j, ") {"));
        PushScope();
        // A floating-point max or min folds with the plain compare and a NaN count (the slot's
        // NaN, from an earlier window row or the init, counts too): GCC does not vectorize a
        // chain of the NaN-propagating form over strided loads (4.0 ms against 0.17 ms), nor a
        // bool flag where the operand has selects of its own, such as a fused ReLU (GCC 12: "no
        // vectype"; ResNet-50's stem pool 5.4 ms); a float count vectorizes in both.
        const std::string ct = CType(r->shape().element_type());
        const std::string acc = NewName("a"), nan = fast.empty() ? "" : NewName("n");
        Line(absl::StrCat(ct, " ", acc, " = ", slot, ";"));
        if (!nan.empty()) {
          Line(absl::StrCat("float ", nan, " = ", acc, " != ", acc, " ? 1.f : 0.f;"));
        }
        for (int64_t k = 0; k < w.size; ++k) {
          PushScope();
          xi[last] = IntVar(
              absl::StrCat("(", j, ")*", w.stride, " + ", k * w.window_dilation - w.padding_low));
          if (tested)
            Open(absl::StrCat("if (", xi[last], " >= 0 && ", xi[last], " < ", xd[last], ") {"));
          const std::string v = Value(x, xi);
          if (nan.empty()) {
            Line(absl::StrCat(acc, " = ", red, "(", acc, ", ", v, ");"));
          } else {
            Line(absl::StrCat(acc, " = ", fast, "(", acc, ", ", v, ");"));
            Line(absl::StrCat(nan, " += ", v, " != ", v, " ? 1.f : 0.f;"));
          }
          if (tested) Close();
          PopScope();
        }
        Line(absl::StrCat(slot, " = ",
                          nan.empty() ? acc
                                      : absl::StrCat(nan, " != 0.f ? std::numeric_limits<", ct,
                                                     ">::quiet_NaN() : ", acc),
                          ";"));
        PopScope();
        Close();
      };
      fold_columns(0, lo, true);
      fold_columns(lo, hi, false);
      fold_columns(hi, od[last], true);
      for (int i = 0; i < opened; ++i) Close();
      return;
    }
    // The minor dimension: operand position j*stride + offset, offset = wv*dilation - low.
    const std::string offset =
        IntVar(absl::StrCat(wv, "*", w.window_dilation, " - ", w.padding_low));
    std::string lo = "0", hi = absl::StrCat(od[last]);
    if (w.padding_low != 0 || w.padding_high != 0) {
      // j*stride + offset in [0, xd): j from ceil(-offset / stride) to ceil((xd - offset) /
      // stride).
      lo = IntVar(
          absl::StrCat(offset, " >= 0 ? 0 : (-", offset, " + ", w.stride - 1, ") / ", w.stride));
      hi = IntVar(absl::StrCat("std::min<int64_t>(", od[last], ", ", xd[last], " - ", offset,
                               " <= 0 ? 0 : (", xd[last], " - ", offset, " + ", w.stride - 1,
                               ") / ", w.stride, ")"));
    }
    if (Param("simd") != 0) Line("#pragma GCC ivdep");
    Open(absl::StrCat("for (int64_t ", j, " = ", lo, "; ", j, " < ", hi, "; ++", j, ") {"));
    PushScope();
    xi[last] = IntVar(absl::StrCat("(", j, ")*", w.stride, " + ", offset));
    const std::string v = Value(x, xi);
    Line(absl::StrCat(slot, " = ", red, "(", slot, ", ", v, ");"));
    PopScope();
    Close();
    for (int i = 0; i < opened; ++i) Close();
  });
  return absl::OkStatus();
}

std::vector<std::vector<const Instruction*>> KernelEmitter::RowCachePlan(
    const std::vector<const Instruction*>& reduces, const std::vector<int64_t>& outer) const {
  std::vector<std::vector<const Instruction*>> plan(reduces.size());
  std::unordered_set<const Instruction*> cached;
  int64_t bytes = 0;
  for (size_t i = 0; i < reduces.size(); ++i) {
    const Instruction* x = reduces[i]->operand(0);
    const std::vector<int64_t>& row = x->shape().dimensions();
    // The members pass i evaluates at every (row, j): x and its elementwise operands of x's shape.
    std::unordered_set<const Instruction*> cone;
    std::vector<const Instruction*> stack = {x};
    while (!stack.empty()) {
      const Instruction* m = stack.back();
      stack.pop_back();
      if (!k_.Contains(m) || m->shape().dimensions() != row || !cone.insert(m).second) continue;
      if (ir::IsElementwise(m->opcode())) {
        for (const Instruction* o : m->operands()) stack.push_back(o);
      }
    }
    // Walk back from what later passes and the outputs read; the first member of the cone met on
    // each path is cached (below it nothing is read again).
    std::vector<const Instruction*> roots;
    for (size_t k = i + 1; k < reduces.size(); ++k) roots.push_back(reduces[k]->operand(0));
    for (const Instruction* o : k_.outputs) {
      if (o->opcode() != Opcode::kReduce && o->shape().dimensions().size() == outer.size() + 1) {
        roots.push_back(o);
      }
    }
    std::unordered_set<const Instruction*> seen;
    while (!roots.empty()) {
      const Instruction* m = roots.back();
      roots.pop_back();
      if (!k_.Contains(m) || !seen.insert(m).second || cached.count(m) != 0) continue;
      const Opcode op = m->opcode();
      if (cone.count(m) != 0 && op != Opcode::kBroadcast && op != Opcode::kConstant &&
          op != Opcode::kBitcast) {
        const int64_t size = Product(row) / std::max<int64_t>(1, Product(outer)) * 8;
        if (bytes + size > (int64_t{256} << 10)) continue;
        bytes += size;
        cached.insert(m);
        plan[i].push_back(m);
        continue;
      }
      if (ir::IsElementwise(op)) {
        for (const Instruction* o : m->operands()) roots.push_back(o);
      }
    }
  }
  return plan;
}

// One pass over the rows; per row, each reduce in turn folds the row (its operand computed inline,
// the values later passes need stored in row caches), then the outputs are written.
absl::Status KernelEmitter::EmitRow() {
  std::vector<const Instruction*> reduces;
  for (const Instruction* m : k_.members) {
    if (m->opcode() == Opcode::kReduce) reduces.push_back(m);
  }
  std::vector<int64_t> outer;
  if (reduces.empty() || !RowReduce(*reduces.front(), &outer)) {
    return absl::InternalError(absl::StrCat("row kernel '", k_.name, "' has no row reduce"));
  }
  std::vector<std::vector<const Instruction*>> cache_plan(reduces.size());
  if (Param("cache") != 0) cache_plan = RowCachePlan(reduces, outer);
  // The per-row members (a reduce's result scaled, rsqrt of a variance...) are computed once per
  // row, before the first pass that can use them, rather than inside the vector loops, where the
  // vectorizer would not hoist them.
  std::unordered_map<const Instruction*, std::unordered_set<const Instruction*>> reduces_below;
  std::vector<const Instruction*> per_row;
  for (const Instruction* m : k_.members) {
    std::unordered_set<const Instruction*>& below = reduces_below[m];
    for (const Instruction* o : m->operands()) {
      if (!k_.Contains(o)) continue;
      if (o->opcode() == Opcode::kReduce) below.insert(o);
      const auto& ob = reduces_below[o];
      below.insert(ob.begin(), ob.end());
    }
    if (m->opcode() != Opcode::kReduce && m->shape().IsArray() &&
        m->shape().dimensions() == outer) {
      per_row.push_back(m);
    }
  }
  LoopNest(outer, LoopOptions{.parallel = Param("parallel") != 0}, [&](const Idx& oi) {
    std::unordered_set<const Instruction*> done, computed;
    auto compute_ready = [&] {
      for (const Instruction* m : per_row) {
        if (computed.count(m) != 0) continue;
        const auto& below = reduces_below[m];
        if (std::all_of(below.begin(), below.end(),
                        [&](const Instruction* r) { return done.count(r) != 0; })) {
          Value(m, oi);
          computed.insert(m);
        }
      }
    };
    std::unordered_map<const Instruction*, std::string> buffers;
    for (size_t i = 0; i < reduces.size(); ++i) {
      for (const Instruction* m : cache_plan[i]) {
        const std::string name = NewName("rc");
        Line(absl::StrCat("alignas(64) ", CType(m->shape().element_type()), " ", name, "[",
                          m->shape().dimensions().back(), "];"));
        buffers[m] = name;
      }
    }
    for (size_t i = 0; i < reduces.size(); ++i) {
      compute_ready();
      const Instruction* r = reduces[i];
      const PrimitiveType t = r->shape().element_type();
      const int64_t n = r->operand(0)->shape().dimensions().back();
      const int64_t lanes = LanesFor(n);
      const std::string init = Value(r->operand(1), {});
      const Accumulators acc =
          DeclareAccumulators(Reducer(*r->to_apply(), t), CType(t), init, lanes);
      const std::string j = NewName("j");
      FoldLanes(j, lanes, n, [&](const std::string& col, const std::string& slot) {
        PushScope();
        Idx idx = oi;
        idx.push_back(col);
        const std::string v = Value(r->operand(0), idx);
        for (const Instruction* m : cache_plan[i]) {
          const std::string c = Value(m, idx);
          Line(absl::StrCat(buffers[m], "[", col, "] = ", c, ";"));
        }
        FoldInto(acc, slot, v);
        PopScope();
      });
      const std::string rv = Var(CType(t), CombineAccumulators(acc));
      memo_.back()[MemoKey(r, oi)] = rv;
      done.insert(r);
      for (const Instruction* m : cache_plan[i]) row_cache_[m] = buffers[m];
    }
    compute_ready();
    // Outputs: per-row values, then one vector loop per row shape.
    std::map<int64_t, std::vector<const Instruction*>> by_length;
    for (const Instruction* o : k_.outputs) {
      if (o->shape().dimensions().size() == outer.size()) {
        const std::string v = Value(o, oi);
        Line(absl::StrCat(OutPtr(o), "[", Linear(outer, oi),
                          "] = ", StoreAs(o->shape().element_type(), v), ";"));
      } else {
        by_length[o->shape().dimensions().back()].push_back(o);
      }
    }
    for (const auto& [n, outs] : by_length) {
      const std::string j = NewName("j");
      Line("#pragma GCC ivdep");
      Open(absl::StrCat("for (int64_t ", j, " = 0; ", j, " < ", n, "; ++", j, ") {"));
      PushScope();
      Idx idx = oi;
      idx.push_back(j);
      for (const Instruction* o : outs) {
        const std::string v = Value(o, idx);
        Line(absl::StrCat(OutPtr(o), "[", Linear(o->shape().dimensions(), idx),
                          "] = ", StoreAs(o->shape().element_type(), v), ";"));
      }
      PopScope();
      Close();
    }
    row_cache_.clear();
  });
  return absl::OkStatus();
}

bool KernelEmitter::Frozen(const Instruction* x, std::vector<const Instruction*>* inputs) const {
  if (!k_.Contains(x)) {
    const Instruction* base = BaseValue(x);
    if (base->opcode() == Opcode::kConstant) return true;
    if (k_.frozen_inputs.count(base) == 0) return false;
    if (inputs != nullptr && std::find(inputs->begin(), inputs->end(), base) == inputs->end()) {
      inputs->push_back(base);
    }
    return true;
  }
  const Opcode op = x->opcode();
  if (op == Opcode::kRng || op == Opcode::kRngBitGenerator || op == Opcode::kRngGetAndUpdateState ||
      op == Opcode::kCustomCall || op == Opcode::kParameter) {
    return false;
  }
  for (const Instruction* operand : x->operands()) {
    if (!Frozen(operand, inputs)) return false;
  }
  return true;
}

bool KernelEmitter::BeginPack(const std::string& name, int64_t bytes, const Instruction* operand) {
  std::vector<const Instruction*> inputs;
  if (!Frozen(operand, &inputs) || inputs.size() > 4) {
    Line(absl::StrCat("float* ", name, " = (float*)(ws + ", Alloc(bytes), ");"));
    return false;
  }
  std::vector<std::string> key;
  for (const Instruction* in : inputs) key.push_back(in_ptr_.at(in));
  while (key.size() < 4) key.push_back("nullptr");
  const size_t declaration = code_.size();
  Line(absl::StrCat("static mt_pack* ", name, "_packs = nullptr;"));
  Line(absl::StrCat("const void* const ", name, "_key[4] = {", absl::StrJoin(key, ", "), "};"));
  Line(absl::StrCat("bool ", name, "_fill = false;"));
  Line(absl::StrCat("float* ", name, " = (float*)mt_pack_for(&", name, "_packs, ", name,
                    "_key, mt_params_epoch, &", name, "_fill, [] { return (void*)mt_keep(", bytes,
                    "); })->data;"));
  Open(absl::StrCat("if (", name, "_fill) {"));
  PushScope();
  open_packs_.push_back({name, bytes, declaration, code_.size(), top_ && inputs.empty()});
  return true;
}

void KernelEmitter::EndPack(bool once) {
  if (!once) return;
  PopScope();
  Close();
  const OpenPack pack = open_packs_.back();
  open_packs_.pop_back();
  if (!pack.constant) return;
  // Equal filling code reads the same constants into the same places: one copy serves both.
  const std::string list = absl::StrCat(
      "mt_cpack_",
      absl::Hex(std::hash<std::string>{}(absl::StrCat(pack.bytes, ":", code_.substr(pack.body)))));
  const std::string local = absl::StrCat("static mt_pack* ", pack.name, "_packs = nullptr;");
  const size_t at = code_.find(local, pack.declaration);
  if (at == std::string::npos) return;
  code_.replace(at, local.size(), absl::StrCat("mt_pack*& ", pack.name, "_packs = ", list, ";"));
  const std::string guard = absl::AsciiStrToUpper(list);
  absl::StrAppend(&shared_packs_, "#ifndef ", guard, "\n#define ", guard,
                  "\n[[gnu::visibility(\"hidden\")]] inline mt_pack* ", list,
                  " = nullptr;\n#endif\n");
}

void KernelEmitter::EmitGemm(const std::string& a, const std::string& b, const std::string& c,
                             int64_t batch, int64_t m, int64_t n, int64_t kdim, bool a_trans,
                             bool b_trans, bool b_frozen) {
  if (batch * m * n == 0) return;
  const bool parallel = Param("parallel") != 0;
  const int64_t lda = a_trans ? m : kdim, ldb = b_trans ? kdim : n;
  if (Param("impl") == kMatmulPrimitiveImpl) {
    // Created on the kernel's first call (it JIT-compiles), then run on each call's buffers.
    onednn_ = onednn_conv_ = true;
    const std::string state = NewName("matmul");
    Line(absl::StrCat("static mt_matmul* const ", state, " = mt_matmul_create(", batch, ", ", m,
                      ", ", n, ", ", kdim, ", ", a_trans ? "true" : "false", ", ",
                      b_trans ? "true" : "false", ", ", b_frozen ? "true" : "false", ");"));
    Line(absl::StrCat("mt_matmul_run(", state, ", ", a, ", ", b, ", ", c, ", ",
                      b_frozen ? "mt_params_epoch" : "0", ");"));
    return;
  }
  if (Param("impl") == 1) {
    onednn_ = true;
    Open(absl::StrCat("for (int64_t g = 0; g < ", batch, "; ++g) {"));
    Line(absl::StrCat("dnnl_sgemm('", a_trans ? "T" : "N", "', '", b_trans ? "T" : "N", "', ", m,
                      ", ", n, ", ", kdim, ", 1.f, ", a, " + g*", m * kdim, "LL, ", lda, ", ", b,
                      " + g*", kdim * n, "LL, ", ldb, ", 0.f, ", c, " + g*", m * n, "LL, ", n,
                      ");"));
    Close();
    return;
  }
  const MicroKernelShape mk = MicroKernel(GemmParam("micro"));
  const int64_t mr = mk.rows, nr = 16 * mk.vectors;
  // Blocks clamped to the matrix: every block at least as large makes the same program, which
  // GemmParamsFor relies on.
  const int64_t mc = std::min(AlignUp(GemmParam("mc"), mr), AlignUp(m, mr));
  const int64_t nc = std::min(AlignUp(GemmParam("nc"), nr), AlignUp(n, nr));
  const int64_t kc = std::max<int64_t>(1, std::min(GemmParam("kc"), kdim));
  // A matrix-vector product takes mt_gemm's GEMV paths, which pack nothing.
  const bool gemv = m == 1 || n == 1;
  const int64_t pa = gemv ? 0 : Alloc(mc * kc * 4);
  const int64_t pb = gemv ? 0 : Alloc(nc * kc * 4);
  Open(absl::StrCat("for (int64_t g = 0; g < ", batch, "; ++g) {"));
  Line(absl::StrCat("mt_gemm<", mr, ", ", mk.vectors, ">(", m, ", ", n, ", ", kdim, ", ", a,
                    " + g*", m * kdim, "LL, ", lda, ", ", b, " + g*", kdim * n, "LL, ", ldb, ", ",
                    c, " + g*", m * n, "LL, ", n, ", ", mc, ", ", kc, ", ", nc, ", (float*)(ws + ",
                    pa, "), (float*)(ws + ", pb, "), ", parallel ? "true" : "false", ", ",
                    a_trans ? "true" : "false", ", ", b_trans ? "true" : "false", ");"));
  Close();
}

absl::Status KernelEmitter::EmitMatmul() {
  const Instruction* mm = k_.root;
  const Instruction* lhs = mm->operand(0);
  const Instruction* rhs = mm->operand(1);
  const std::vector<int64_t>& ld = lhs->shape().dimensions();
  const std::vector<int64_t>& rd = rhs->shape().dimensions();
  const std::vector<int64_t>& od = mm->shape().dimensions();
  std::vector<const Instruction*> others;
  for (const Instruction* o : k_.outputs) {
    if (o != mm) others.push_back(o);
  }
  // The kernel's one output when it is the product itself or a reshape of it: row-major order
  // is the same, so the GEMM writes there (a 50280-word LM head's 26 MB result was copied).
  const Instruction* sole_output = nullptr;
  if (k_.outputs.size() == 1) {
    const Instruction* o = k_.outputs[0];
    while (o != mm && k_.Contains(o) && o->shape().element_type() == mm->shape().element_type() &&
           (o->opcode() == Opcode::kReshape || o->opcode() == Opcode::kBitcast)) {
      o = o->operand(0);
    }
    if (o == mm) sole_output = k_.outputs[0];
  }
  // An operand read where it lies: a buffer, or a constant (a row-major array of the program).
  // Constant weights read in place rather than packed per call: MobileNetV3's 4 MB classifier
  // weight, stored [1000,1024] (ONNX Gemm transB=1), was transposed element by element on every
  // call (7.6 ms of the model's 11).
  auto in_place = [&](const Instruction* x) {
    const Instruction* base = BaseValue(x);
    return absl::StrCat("(const float*)",
                        base->opcode() == Opcode::kConstant ? pool_->Name(base) : in_ptr_.at(base));
  };
  // Packs `operand` into [order...] row-major at ws + offset, unless it already is a buffer or
  // constant laid out so; returns the pointer expression.
  auto pack = [&](const Instruction* operand, const std::vector<int64_t>& order,
                  const std::vector<int64_t>& dims,
                  const std::function<void(const Idx&, Idx*, std::string*)>& map) -> std::string {
    bool identity = true;
    for (size_t i = 0; i < order.size(); ++i) identity &= order[i] == static_cast<int64_t>(i);
    if (identity && map == nullptr) {
      // A reshape keeps row-major order: a reshaped buffer is read where it lies.
      const Instruction* x = operand;
      while (k_.Contains(x) &&
             (x->opcode() == Opcode::kReshape || x->opcode() == Opcode::kBitcast) &&
             x->shape().element_type() == x->operand(0)->shape().element_type()) {
        x = x->operand(0);
      }
      if (!k_.Contains(x)) return in_place(x);
    }
    const std::string name = NewName("pk");
    const bool once = BeginPack(name, Product(dims) * 4, operand);
    LoopNest(dims, LoopOptions{.simd = map == nullptr}, [&](const Idx& ni) {
      Idx oi(operand->shape().dimensions().size());
      std::string guard;
      if (map == nullptr) {
        for (size_t i = 0; i < order.size(); ++i) oi[static_cast<size_t>(order[i])] = ni[i];
      } else {
        map(ni, &oi, &guard);
      }
      if (guard.empty()) {
        const std::string v = Value(operand, oi);
        Line(absl::StrCat(name, "[", Linear(dims, ni), "] = ", v, ";"));
      } else {
        Open(absl::StrCat("if (", guard, ") {"));
        PushScope();
        const std::string v = Value(operand, oi);
        Line(absl::StrCat(name, "[", Linear(dims, ni), "] = ", v, ";"));
        PopScope();
        Close();
        Line(absl::StrCat("else ", name, "[", Linear(dims, ni), "] = 0.f;"));
      }
    });
    EndPack(once);
    return name;
  };

  // The products' shape, as GemmParamsFor sees it when choosing the parameters offered.
  const GemmShape shape = GemmShapeOf(*mm);
  const int64_t batch = shape.batch, m = shape.m, n = shape.n, kdim = shape.k;
  std::string a, b;
  bool a_trans = false, b_trans = false;  // operands read in place, transposed
  bool direct = false;                    // C is the output buffer, in its layout
  if (mm->opcode() == Opcode::kDot) {
    const ir::DotDimensionNumbers& dn = *mm->dot_dnums;
    std::vector<int64_t> lorder, rorder;
    std::vector<bool> lused(ld.size(), false), rused(rd.size(), false);
    for (int64_t d : dn.lhs_batch_dimensions) lorder.push_back(d), lused[d] = true;
    for (int64_t d : dn.lhs_contracting_dimensions) lused[d] = true;
    for (size_t d = 0; d < ld.size(); ++d) {
      if (!lused[d]) lorder.push_back(static_cast<int64_t>(d));
    }
    for (int64_t d : dn.lhs_contracting_dimensions) lorder.push_back(d);
    for (int64_t d : dn.rhs_batch_dimensions) rorder.push_back(d), rused[d] = true;
    for (int64_t d : dn.rhs_contracting_dimensions) rorder.push_back(d), rused[d] = true;
    for (size_t d = 0; d < rd.size(); ++d) {
      if (!rused[d]) rorder.push_back(static_cast<int64_t>(d));
    }
    std::vector<int64_t> lp, rp;
    for (int64_t d : lorder) lp.push_back(ld[static_cast<size_t>(d)]);
    for (int64_t d : rorder) rp.push_back(rd[static_cast<size_t>(d)]);
    // A buffer whose contracting dimensions come after its free ones (rhs) or before them (lhs)
    // is read transposed by the GEMM's packing rather than transposed first: a strided
    // transpose of BERT's tied 30522x768 embedding took half its inference time.
    auto in_order = [&](const Instruction* x, const std::vector<int64_t>& batch_dims,
                        const std::vector<int64_t>& first, const std::vector<int64_t>& second) {
      if (k_.Contains(x)) return false;
      std::vector<int64_t> order = batch_dims;
      order.insert(order.end(), first.begin(), first.end());
      order.insert(order.end(), second.begin(), second.end());
      if (order.size() != x->shape().dimensions().size()) return false;
      for (size_t i = 0; i < order.size(); ++i) {
        if (order[i] != static_cast<int64_t>(i)) return false;
      }
      return true;
    };
    std::vector<int64_t> lfree, rfree;
    for (size_t d = 0; d < ld.size(); ++d) {
      if (!lused[d]) lfree.push_back(static_cast<int64_t>(d));
    }
    for (size_t d = 0; d < rd.size(); ++d) {
      if (!rused[d]) rfree.push_back(static_cast<int64_t>(d));
    }
    a_trans = in_order(lhs, dn.lhs_batch_dimensions, dn.lhs_contracting_dimensions, lfree) &&
              !in_order(lhs, dn.lhs_batch_dimensions, lfree, dn.lhs_contracting_dimensions);
    // A frozen B stored [n][k] is transposed once for the library GEMM: dnnl_sgemm runs 'N','N'
    // 1.1-2x faster than 'N','T' on this machine's shapes (an LSTM LM's 10,000-word head 47 ->
    // 79 GFLOP/s; PyTorch's exports store every Linear's weight so).
    std::vector<const Instruction*> frozen_inputs;
    const bool pack_frozen_b =
        Param("impl") == 1 && Frozen(rhs, &frozen_inputs) && frozen_inputs.size() <= 4;
    b_trans = in_order(rhs, dn.rhs_batch_dimensions, rfree, dn.rhs_contracting_dimensions) &&
              !in_order(rhs, dn.rhs_batch_dimensions, dn.rhs_contracting_dimensions, rfree) &&
              !pack_frozen_b;
    a = a_trans ? in_place(lhs) : pack(lhs, lorder, lp, nullptr);
    b = b_trans ? in_place(rhs) : pack(rhs, rorder, rp, nullptr);
    direct = sole_output != nullptr;
    heavy_index_ = [this, od](const Idx& idx) { return LinearIndex(od, idx); };
  } else {
    const ir::ConvolutionDimensionNumbers& dn = *mm->conv_dnums;
    const size_t ns = dn.input_spatial_dimensions.size();
    std::vector<ir::WindowDim> win(ns);
    if (mm->window.has_value()) {
      for (size_t d = 0; d < ns && d < mm->window->dims.size(); ++d) win[d] = mm->window->dims[d];
    }
    for (const ir::WindowDim& w : win) {
      if (w.window_reversal) return absl::UnimplementedError("window reversal is not lowered");
    }
    if (Param("impl") == kDepthwiseImpl || Param("impl") == kGroupedImpl) {
      // The depthwise and grouped kernels write the convolution's row-major array: the output
      // itself where that is the kernel's one output, else scratch the epilogue reads.
      std::string out;
      if (sole_output != nullptr) {
        out = OutPtr(sole_output);
      } else {
        out = NewName("acc");
        Line(absl::StrCat("float* ", out, " = (float*)(ws + ", Alloc(Product(od) * 4), ");"));
      }
      EmitRowConvolution(out);
      if (sole_output == nullptr) {
        heavy_buffer_ = out;
        heavy_index_ = [this, od](const Idx& idx) { return LinearIndex(od, idx); };
        std::vector<const Instruction*> outs = others;
        if (std::find(k_.outputs.begin(), k_.outputs.end(), mm) != k_.outputs.end()) {
          outs.insert(outs.begin(), mm);
        }
        StoreOutputs(outs, LoopOptions{.simd = true});
      }
      return absl::OkStatus();
    }
    if (Param("impl") >= 2) {
      // oneDNN reads the operands in their own layouts: buffers and constants as they are (an
      // identity pack reads them in place); fused operand expressions are materialized.
      auto operand = [&](const Instruction* x) {
        std::vector<int64_t> order(x->shape().dimensions().size());
        for (size_t d = 0; d < order.size(); ++d) order[d] = static_cast<int64_t>(d);
        return pack(x, order, x->shape().dimensions(), nullptr);
      };
      const std::string src = operand(lhs);
      const std::string weights = operand(rhs);
      return EmitConvPrimitive(src, weights, Frozen(rhs), others);
    }
    // Feature groups split the input features, batch groups (a depthwise convolution's weight
    // gradient) the input batch; each group is one product of the batch, on its block of output
    // features. At most one of the two counts is above 1.
    const int64_t fgroups = std::max<int64_t>(1, mm->feature_group_count);
    const int64_t bgroups = std::max<int64_t>(1, mm->batch_group_count);
    const int64_t groups = fgroups * bgroups;
    const int64_t nb = ld[static_cast<size_t>(dn.input_batch_dimension)] / bgroups;
    const int64_t cg = ld[static_cast<size_t>(dn.input_feature_dimension)] / fgroups;
    const int64_t og = od[static_cast<size_t>(dn.output_feature_dimension)] / groups;
    std::vector<int64_t> os, ks, xs;
    for (size_t d = 0; d < ns; ++d) {
      os.push_back(od[static_cast<size_t>(dn.output_spatial_dimensions[d])]);
      ks.push_back(rd[static_cast<size_t>(dn.kernel_spatial_dimensions[d])]);
      xs.push_back(ld[static_cast<size_t>(dn.input_spatial_dimensions[d])]);
    }
    // im2col: A[g][b, o...][c, k...]
    std::vector<int64_t> adims = {groups, nb};
    adims.insert(adims.end(), os.begin(), os.end());
    adims.push_back(cg);
    adims.insert(adims.end(), ks.begin(), ks.end());
    a = pack(lhs, {}, adims, [&](const Idx& ni, Idx* xi, std::string* guard) {
      const std::string& g = ni[0];
      (*xi)[static_cast<size_t>(dn.input_batch_dimension)] =
          bgroups == 1 ? ni[1] : absl::StrCat("(", g, ")*", nb, " + ", ni[1]);
      const std::string& c = ni[2 + ns];
      (*xi)[static_cast<size_t>(dn.input_feature_dimension)] =
          fgroups == 1 ? c : absl::StrCat("(", g, ")*", cg, " + ", c);
      std::vector<std::string> valid;
      for (size_t d = 0; d < ns; ++d) {
        const ir::WindowDim& w = win[d];
        const std::string raw =
            IntVar(absl::StrCat("(", ni[2 + d], ")*", w.stride, " - ", w.padding_low, " + (",
                                ni[3 + ns + d], ")*", w.window_dilation));
        std::string pos = raw;
        if (w.base_dilation > 1) {
          valid.push_back(absl::StrCat(raw, " >= 0 && ", raw, " % ", w.base_dilation, " == 0"));
          pos = IntVar(absl::StrCat(raw, " / ", w.base_dilation));
        }
        valid.push_back(absl::StrCat(pos, " >= 0 && ", pos, " < ", xs[d]));
        (*xi)[static_cast<size_t>(dn.input_spatial_dimensions[d])] = pos;
      }
      *guard = absl::StrJoin(valid, " && ");
    });
    // weights: B[g][c, k...][n]
    std::vector<int64_t> bdims = {groups, cg};
    bdims.insert(bdims.end(), ks.begin(), ks.end());
    bdims.push_back(og);
    b = pack(rhs, {}, bdims, [&](const Idx& ni, Idx* wi, std::string* guard) {
      (*wi)[static_cast<size_t>(dn.kernel_input_feature_dimension)] = ni[1];
      (*wi)[static_cast<size_t>(dn.kernel_output_feature_dimension)] =
          groups == 1 ? ni[2 + ns] : absl::StrCat("(", ni[0], ")*", og, " + ", ni[2 + ns]);
      for (size_t d = 0; d < ns; ++d) {
        (*wi)[static_cast<size_t>(dn.kernel_spatial_dimensions[d])] = ni[2 + d];
      }
      guard->clear();
    });
    bool nhwc = dn.output_batch_dimension == 0 &&
                dn.output_feature_dimension == static_cast<int64_t>(ns) + 1;
    for (size_t d = 0; d < ns; ++d) {
      nhwc &= dn.output_spatial_dimensions[d] == static_cast<int64_t>(d) + 1;
    }
    direct = sole_output != nullptr && groups == 1 && nhwc;
    const int64_t mm_rows = m;
    heavy_index_ = [=, &dn](const Idx& idx) {
      Idx sp;
      for (size_t d = 0; d < ns; ++d) {
        sp.push_back(idx[static_cast<size_t>(dn.output_spatial_dimensions[d])]);
      }
      const std::string& bi = idx[static_cast<size_t>(dn.output_batch_dimension)];
      const std::string& f = idx[static_cast<size_t>(dn.output_feature_dimension)];
      const std::string row = absl::StrCat("(", bi, ")*", Product(os), "LL + ", Linear(os, sp));
      if (groups == 1) return absl::StrCat("(", row, ")*", og, "LL + (", f, ")");
      return absl::StrCat("((", f, ") / ", og, " * ", mm_rows, "LL + ", row, ")*", og, "LL + (", f,
                          ") % ", og);
    };
  }
  std::string c;
  if (direct) {
    c = OutPtr(sole_output);
  } else {
    c = NewName("acc");
    Line(absl::StrCat("float* ", c, " = (float*)(ws + ", Alloc(batch * m * n * 4), ");"));
  }
  EmitGemm(a, b, c, batch, m, n, kdim, a_trans, b_trans,
           mm->opcode() == Opcode::kDot && Frozen(rhs));
  if (!direct) {
    heavy_buffer_ = c;
    std::vector<const Instruction*> outs = others;
    if (std::find(k_.outputs.begin(), k_.outputs.end(), mm) != k_.outputs.end()) {
      outs.insert(outs.begin(), mm);
    }
    LoopOptions opts{.simd = true};
    StoreOutputs(outs, opts);
  }
  return absl::OkStatus();
}

absl::Status KernelEmitter::EmitConvPrimitive(const std::string& src, const std::string& weights,
                                              bool weights_frozen,
                                              const std::vector<const Instruction*>& others) {
  const Instruction* mm = k_.root;
  const std::vector<int64_t>& od = mm->shape().dimensions();
  // oneDNN's logical dimensions over the HLO buffers' row-major strides: no packing.
  const OneDnnConvShape shape = OneDnnConvShapeOf(*mm);
  // The destination: the kernel's output buffer when the convolution is one (the epilogue then
  // reads it there), else scratch in the convolution's row-major layout.
  std::string dst;
  if (std::find(k_.outputs.begin(), k_.outputs.end(), mm) != k_.outputs.end()) {
    dst = OutPtr(mm);
  } else {
    dst = NewName("acc");
    Line(absl::StrCat("float* ", dst, " = (float*)(ws + ", Alloc(Product(od) * 4), ");"));
  }
  onednn_ = onednn_conv_ = true;
  auto list = [](const std::vector<int64_t>& v) {
    return absl::StrCat("{", absl::StrJoin(v, ", "), "}");
  };
  const std::string state = NewName("conv");
  Open(absl::StrCat("static mt_conv* const ", state, " = [] {"));
  Line(absl::StrCat("const int64_t sd[] = ", list(shape.src_dims),
                    ", ss[] = ", list(shape.src_strides), ", wd[] = ", list(shape.weight_dims),
                    ", wst[] = ", list(shape.weight_strides), ", dd[] = ", list(shape.dst_dims),
                    ", ds[] = ", list(shape.dst_strides), ";"));
  Line(absl::StrCat("const int64_t st[] = ", list(shape.window_strides),
                    ", dl[] = ", list(shape.dilations), ", pl[] = ", list(shape.pad_low),
                    ", pr[] = ", list(shape.pad_high), ";"));
  Line("const int64_t* const dims[3] = {sd, wd, dd};");
  Line("const int64_t* const strides[3] = {ss, wst, ds};");
  Line(absl::StrCat("return mt_conv_create(", shape.spatial, ", ", shape.groups,
                    ", dims, strides, st, dl, pl, pr, ", Param("impl") == 3 ? "true" : "false",
                    ");"));
  indent_.resize(indent_.size() - 2);
  Line("}();");
  Line(absl::StrCat("mt_conv_run(", state, ", ", src, ", ", weights, ", ", dst, ", ",
                    weights_frozen ? "mt_params_epoch" : "0", ");"));
  if (!others.empty()) {
    heavy_buffer_ = dst;
    heavy_index_ = [this, od](const Idx& idx) { return LinearIndex(od, idx); };
    StoreOutputs(others, LoopOptions{.simd = true});
  }
  return absl::OkStatus();
}

void KernelEmitter::EmitRowConvolution(const std::string& out) {
  const Instruction* conv = k_.root;
  const Instruction* lhs = conv->operand(0);
  const Instruction* rhs = conv->operand(1);
  const ir::ConvolutionDimensionNumbers& dn = *conv->conv_dnums;
  const std::vector<int64_t>& ld = lhs->shape().dimensions();
  const std::vector<int64_t>& rd = rhs->shape().dimensions();
  const std::vector<int64_t>& od = conv->shape().dimensions();
  const size_t ns = dn.input_spatial_dimensions.size();
  auto at = [](const std::vector<int64_t>& v, int64_t d) { return v[static_cast<size_t>(d)]; };
  // A 1-D convolution is a 2-D one of height 1: its one spatial dimension is the row.
  auto window = [&](size_t d) {
    ir::WindowDim w;
    if (conv->window.has_value() && d < conv->window->dims.size()) w = conv->window->dims[d];
    return w;
  };
  const ir::WindowDim wy = ns == 2 ? window(0) : ir::WindowDim{}, wx = window(ns - 1);
  const int64_t n = at(ld, dn.input_batch_dimension), c = at(ld, dn.input_feature_dimension);
  const int64_t h = ns == 2 ? at(ld, dn.input_spatial_dimensions[0]) : 1;
  const int64_t w = at(ld, dn.input_spatial_dimensions[ns - 1]);
  const int64_t oh = ns == 2 ? at(od, dn.output_spatial_dimensions[0]) : 1;
  const int64_t ow = at(od, dn.output_spatial_dimensions[ns - 1]);
  const int64_t kh = ns == 2 ? at(rd, dn.kernel_spatial_dimensions[0]) : 1;
  const int64_t kw = at(rd, dn.kernel_spatial_dimensions[ns - 1]);
  const int64_t sy = std::max<int64_t>(1, wy.stride), sx = std::max<int64_t>(1, wx.stride);
  const int64_t dy = std::max<int64_t>(1, wy.window_dilation);
  const int64_t dx = std::max<int64_t>(1, wx.window_dilation);
  // Depthwise, rows and weights hold the channels padded to a multiple of 16 (cp); grouped, the
  // ring rows hold the input's ci channels and the weights and output rows its co, each group's
  // gi inputs feeding go outputs.
  const bool grouped = Param("impl") == kGroupedImpl;
  const int64_t co = at(od, dn.output_feature_dimension);
  const int64_t gi = at(rd, dn.kernel_input_feature_dimension);
  const int64_t go = co / conv->feature_group_count;
  const int64_t cp = grouped ? c : AlignUp(c, 16);  // a ring row's channels
  const int64_t cop = grouped ? co : cp;            // an output row's and the weights' channels
  const int64_t wp = w + wx.padding_low + wx.padding_high;  // a ring row's width, padding included
  const int64_t span = (kh - 1) * dy + 1;                   // the input rows one output row reads
  // Parallel, each task takes a band of one image's output rows with a ring of its own (the
  // rows where bands meet are computed twice); serial, one task per image.
  const bool parallel = Param("parallel") != 0;
  const int64_t bands = parallel ? std::min<int64_t>(oh, 4) : 1;
  const int64_t rings = parallel ? n * bands : 1;
  const int64_t ring_floats = span * wp * cp;
  const std::string ring = NewName("dwring"), wts = NewName("dww"), orow = NewName("dwo");
  const int64_t ring_off = Alloc(rings * ring_floats * 4);
  const int64_t o_off = Alloc(rings * ow * cop * 4);
  Line(absl::StrCat("float* ", ring, " = (float*)(ws + ", ring_off, ");"));
  // Depthwise, weights stored [kh][kw][cp] (HWIO, as JAX and TensorFlow keep them) are read where
  // they lie; others are packed so, per call or, frozen, once. Grouped, they are always packed
  // per vector of output channels, [co/lanes][kh][kw][gi][lanes] (mt_gc_row).
  const int64_t lanes = go % 16 == 0 ? 16 : go % 8 == 0 ? 8 : 4;
  const Instruction* wbase = rhs;
  while (k_.Contains(wbase) &&
         (wbase->opcode() == Opcode::kReshape || wbase->opcode() == Opcode::kBitcast)) {
    wbase = wbase->operand(0);
  }
  const int64_t rrank = static_cast<int64_t>(rd.size());
  bool weights_in_place =
      !grouped && cop == co && !k_.Contains(wbase) && wbase == rhs &&
      dn.kernel_output_feature_dimension == rrank - 1 &&
      (ns == 1 || dn.kernel_spatial_dimensions[0] < dn.kernel_spatial_dimensions[1]);
  for (size_t d = 0; d < rd.size(); ++d) {
    weights_in_place &=
        rd[d] == 1 || d + 1 == rd.size() ||
        std::find(dn.kernel_spatial_dimensions.begin(), dn.kernel_spatial_dimensions.end(),
                  static_cast<int64_t>(d)) != dn.kernel_spatial_dimensions.end();
  }
  if (weights_in_place) {
    const Instruction* base = BaseValue(rhs);
    Line(absl::StrCat("const float* ", wts, " = (const float*)",
                      base->opcode() == Opcode::kConstant ? pool_->Name(base) : in_ptr_.at(base),
                      ";"));
  } else {
    const int64_t bytes = kh * kw * gi * cop * 4;
    const bool once = BeginPack(wts, bytes, rhs);
    if (cop != co) Line(absl::StrCat("std::memset(", wts, ", 0, ", bytes, ");"));
    LoopNest({kh, kw, gi, co}, LoopOptions{.simd = true}, [&](const Idx& i) {
      Idx wi(rd.size(), "0");
      if (ns == 2) wi[static_cast<size_t>(dn.kernel_spatial_dimensions[0])] = i[0];
      wi[static_cast<size_t>(dn.kernel_spatial_dimensions[ns - 1])] = i[1];
      wi[static_cast<size_t>(dn.kernel_input_feature_dimension)] = i[2];
      wi[static_cast<size_t>(dn.kernel_output_feature_dimension)] = i[3];
      const std::string v = Value(rhs, wi);
      if (grouped) {
        Line(absl::StrCat(wts, "[((((", i[3], ")/", lanes, "*", kh, " + ", i[0], ")*", kw, " + ",
                          i[1], ")*", gi, " + ", i[2], ")*", lanes, " + (", i[3], ")%", lanes,
                          "] = ", v, ";"));
      } else {
        Line(absl::StrCat(wts, "[((", i[0], ")*", kw, " + ", i[1], ")*", cop, " + ", i[3],
                          "] = ", v, ";"));
      }
    });
    EndPack(once);
  }
  Line(absl::StrCat("float* ", orow, " = (float*)(ws + ", o_off, ");"));
  // Padding columns and channels are never written after this: they read as zeros. Where no
  // channel is padding, only the padding columns are cleared.
  if (cp != c || wx.padding_low + wx.padding_high >= w) {
    Line(absl::StrCat("std::memset(", ring, ", 0, ", rings * ring_floats * 4, ");"));
  } else {
    Open(absl::StrCat("for (int64_t r = 0; r < ", rings * span, "; ++r) {"));
    if (wx.padding_low > 0) {
      Line(absl::StrCat("std::memset(", ring, " + r*", wp * cp, "LL, 0, ", wx.padding_low * cp * 4,
                        ");"));
    }
    if (wx.padding_high > 0) {
      Line(absl::StrCat("std::memset(", ring, " + r*", wp * cp, "LL + ", (wx.padding_low + w) * cp,
                        ", 0, ", wx.padding_high * cp * 4, ");"));
    }
    Close();
  }
  const std::string t = NewName("dwt"), img = NewName("dwn"), row = NewName("dwy");
  const std::string filled = NewName("dwfilled"), rows = NewName("dwrows");
  const std::string r0 = NewName("dwr"), o0 = NewName("dwrow"), rr = NewName("dwin");
  Open(absl::StrCat("mt_for(", n * bands, ", ", parallel ? "true" : "false", ", [&](int64_t ", t,
                    ") {"));
  Line(absl::StrCat("const int64_t ", img, " = ", t, " / ", bands, ";"));
  index_.Bound(img, 0, n - 1);
  const std::string slot = parallel ? t : "0";
  Line(absl::StrCat("float* const ", r0, " = ", ring, " + ", slot, "*", ring_floats, "LL;"));
  Line(absl::StrCat("float* const ", o0, " = ", orow, " + ", slot, "*", ow * cop, "LL;"));
  // Input rows below `filled` are in the ring: rows are needed in increasing order, and a ring
  // of `span` rows holds every row the current output row reads.
  Line(absl::StrCat("int64_t ", filled, " = 0;"));
  Line(absl::StrCat("const float* ", rows, "[", kh, "];"));
  Open(absl::StrCat("for (int64_t ", row, " = ", t, " % ", bands, " * ", oh, " / ", bands, "; ",
                    row, " < (", t, " % ", bands, " + 1) * ", oh, " / ", bands, "; ++", row,
                    ") {"));
  index_.Bound(row, 0, oh - 1);
  Open(absl::StrCat("for (int64_t r = 0; r < ", kh, "; ++r) {"));
  const std::string iy = NewName("dwiy");
  Line(absl::StrCat("const int64_t ", iy, " = ", row, "*", sy, " - ", wy.padding_low, " + r*", dy,
                    ";"));
  Line(absl::StrCat("if (", iy, " < 0 || ", iy, " >= ", h, ") { ", rows,
                    "[r] = nullptr; continue; }"));
  Line(absl::StrCat(rows, "[r] = ", r0, " + (", iy, " % ", span, ")*", wp * cp, "LL;"));
  // A dilated window skips rows that a later output row reads: every row up to this one that
  // is still in the ring's reach is computed now.
  const std::string fy = NewName("dwfy");
  Open(absl::StrCat("for (int64_t ", fy, " = std::max<int64_t>(", filled, ", ", iy, " - ", span - 1,
                    "); ", fy, " <= ", iy, "; ++", fy, ") {"));
  index_.Bound(fy, 0, h - 1);
  Line(absl::StrCat("float* const ", rr, " = ", r0, " + (", fy, " % ", span, ")*", wp * cp, "LL;"));
  // The operand's row, channel-minor; the loop order follows the operand's own minor dimension.
  const bool channel_minor = dn.input_feature_dimension > dn.input_spatial_dimensions[ns - 1];
  const std::vector<int64_t> fill_dims =
      channel_minor ? std::vector<int64_t>{w, c} : std::vector<int64_t>{c, w};
  LoopNest(fill_dims, LoopOptions{.simd = true}, [&](const Idx& i) {
    const std::string& x = channel_minor ? i[0] : i[1];
    const std::string& ch = channel_minor ? i[1] : i[0];
    Idx xi(ld.size(), "0");
    xi[static_cast<size_t>(dn.input_batch_dimension)] = img;
    if (ns == 2) xi[static_cast<size_t>(dn.input_spatial_dimensions[0])] = fy;
    xi[static_cast<size_t>(dn.input_spatial_dimensions[ns - 1])] = x;
    xi[static_cast<size_t>(dn.input_feature_dimension)] = ch;
    const std::string v = Value(lhs, xi);
    Line(absl::StrCat(rr, "[((", x, ") + ", wx.padding_low, ")*", cp, " + ", ch, "] = ", v, ";"));
  });
  Close();  // for fy
  Line(absl::StrCat(filled, " = std::max<int64_t>(", filled, ", ", iy, " + 1);"));
  Close();  // for r
  // A channel-minor output with no padding channels holds the row as the row kernel writes it:
  // written in place, not through the row buffer.
  const size_t rank = od.size();
  const bool in_place = cop == co &&
                        dn.output_feature_dimension == static_cast<int64_t>(rank) - 1 &&
                        dn.output_spatial_dimensions[ns - 1] == static_cast<int64_t>(rank) - 2;
  Idx row_start(rank, "0");
  row_start[static_cast<size_t>(dn.output_batch_dimension)] = img;
  if (ns == 2) row_start[static_cast<size_t>(dn.output_spatial_dimensions[0])] = row;
  const std::string target = in_place ? absl::StrCat(out, " + ", LinearIndex(od, row_start)) : o0;
  if (grouped) {
    Line(absl::StrCat("mt_gc_row<", lanes, ", ", sx * cp, ", ", co, ", ", gi, ">(", ow, ", ", go,
                      ", ", kh, ", ", kw, ", ", dx * cp, ", ", rows, ", ", wts, ", ", target,
                      ");"));
  } else {
    Line(absl::StrCat("mt_dw_row(", ow, ", ", cp, ", ", kh, ", ", kw, ", ", sx * cp, ", ", dx * cp,
                      ", ", rows, ", ", wts, ", ", target, ");"));
  }
  if (!in_place) {
    const bool out_channel_minor =
        dn.output_feature_dimension > dn.output_spatial_dimensions[ns - 1];
    const std::vector<int64_t> store_dims =
        out_channel_minor ? std::vector<int64_t>{ow, co} : std::vector<int64_t>{co, ow};
    LoopNest(store_dims, LoopOptions{.simd = true}, [&](const Idx& i) {
      const std::string& x = out_channel_minor ? i[0] : i[1];
      const std::string& ch = out_channel_minor ? i[1] : i[0];
      Idx oi = row_start;
      oi[static_cast<size_t>(dn.output_spatial_dimensions[ns - 1])] = x;
      oi[static_cast<size_t>(dn.output_feature_dimension)] = ch;
      Line(absl::StrCat(out, "[", LinearIndex(od, oi), "] = ", o0, "[(", x, ")*", cop, " + ", ch,
                        "];"));
    });
  }
  Close();  // for row
  indent_.resize(indent_.size() - 2);
  Line("});");
}

absl::StatusOr<std::string> KernelEmitter::Emit(const std::string& fn, bool top) {
  top_ = top;
  if (config_.empty()) config_ = DefaultConfig(k_);
  if (config_.size() != k_.params.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel '", k_.name, "' takes ", k_.params.size(), " parameters; got ", config_.size()));
  }
  for (size_t i = 0; i < k_.params.size(); ++i) {
    const std::vector<int64_t>& c = k_.params[i].choices;
    if (std::find(c.begin(), c.end(), config_[i]) == c.end()) {
      return absl::InvalidArgumentError(absl::StrCat("kernel '", k_.name, "': ", k_.params[i].name,
                                                     "=", config_[i], " is not a choice"));
    }
  }
  fn_ = fn;
  memo_.emplace_back();
  std::string header;
  int64_t slot = 0;
  for (const Instruction* in : k_.inputs) {
    const std::string name = absl::StrCat("in", slot);
    absl::StrAppend(&header, "  const ", StorageType(in->shape().element_type()), "* __restrict ",
                    name, " = (const ", StorageType(in->shape().element_type()), "*)b[", slot,
                    "];\n");
    in_ptr_[in] = name;
    ++slot;
  }
  for (size_t j = 0; j < k_.outputs.size(); ++j) {
    const Instruction* o = k_.outputs[j];
    const std::string name = absl::StrCat("out", j);
    absl::StrAppend(&header, "  ", StorageType(o->shape().element_type()), "* __restrict ", name,
                    " = (", StorageType(o->shape().element_type()), "*)b[", slot, "];\n");
    out_ptr_[o] = name;
    ++slot;
  }
  absl::Status s;
  switch (k_.kind) {
    case KernelKind::kLoop:
      s = EmitLoop();
      break;
    case KernelKind::kReduce:
      s = EmitReduce();
      break;
    case KernelKind::kReduceWindow:
      s = EmitReduceWindow();
      break;
    case KernelKind::kRow:
      s = EmitRow();
      break;
    case KernelKind::kScatter:
      s = EmitScatter();
      break;
    case KernelKind::kWhile:
      s = EmitWhile();
      break;
    case KernelKind::kConditional:
      s = EmitConditional();
      break;
    case KernelKind::kSort:
      s = EmitSort();
      break;
    case KernelKind::kLibrary:
      s = EmitLibrary();
      break;
    case KernelKind::kDot:
    case KernelKind::kConvolution:
      s = EmitMatmul();
      break;
  }
  if (!s.ok()) return s;
  const std::string helpers = !top || helpers_.empty()
                                  ? helpers_
                                  : absl::StrCat("namespace {\n", helpers_, "}  // namespace\n");
  return absl::StrCat(shared_packs_, helpers, "// kernel ", k_.id, ": ", KernelKindName(k_.kind),
                      " '", k_.name, "', ", k_.members.size(), " ops\n", top ? "static " : "",
                      "void ", fn, "(char* const* b, char* ws) {\n  (void)ws;\n", header, code_,
                      "}\n");
}

struct Emitted {
  std::string text;
  int64_t workspace = 0;
  bool onednn = false;
  bool onednn_conv = false;
};

// Kernel text with its function's name `fn` (and the names made from it: called programs, their
// kernels) replaced by "@" and the "// kernel" comment lines dropped: equal for two kernels
// exactly when one function serves both.
std::string CanonicalKernelText(const std::string& text, const std::string& fn) {
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    end = end == std::string::npos ? text.size() : end + 1;
    const std::string_view line(text.data() + start, end - start);
    start = end;
    if (line.substr(0, 10) == "// kernel ") continue;
    size_t at = 0;
    for (size_t hit = line.find(fn); hit != std::string::npos; hit = line.find(fn, hit + 1)) {
      const size_t after = hit + fn.size();
      if ((hit > 0 && ident(line[hit - 1])) ||
          (after < line.size() && std::isdigit(static_cast<unsigned char>(line[after])))) {
        continue;
      }
      out.append(line.substr(at, hit - at));
      out.push_back('@');
      at = after;
    }
    out.append(line.substr(at));
  }
  return out;
}

absl::StatusOr<Emitted> EmitKernel(const Kernel& kernel, const KernelConfig& config,
                                   ConstantPool* pool, const std::string& fn, bool top) {
  KernelEmitter emitter(kernel, config, pool);
  absl::StatusOr<std::string> text = emitter.Emit(fn, top);
  if (!text.ok()) return text.status();
  return Emitted{*std::move(text), emitter.workspace_bytes(), emitter.uses_onednn(),
                 emitter.uses_onednn_conv()};
}

std::shared_ptr<const std::string> TakeSegment(ConstantPool* pool) {
  if (pool->segment().empty()) return nullptr;
  return std::make_shared<const std::string>(pool->TakeSegment());
}

// `onednn_conv`: the program calls oneDNN's convolution primitive, whose C API comes from its
// header (installed with the library as Debian's libdnnl-dev), included before the prelude.
// `kernels`: the kernel sections. `profiled`, when not empty, is the body of
// mltune_entry_profiled: the entry with each kernel call timed (see GenerateModule);
// `kernel_count` kernels. Laid out as units.h describes.
std::string Assemble(const ConstantPool& pool, const std::string& kernels, const std::string& entry,
                     int64_t scratch, bool onednn_conv, const std::string& profiled = "",
                     int32_t kernel_count = 0) {
  // The segment's base: constants in it are `#define`d views at fixed offsets from it. Declared
  // in the header every unit starts with and defined once in the entry section, so each unit
  // reads the one pointer mltune_bind_constants sets.
  const bool segment = !pool.segment().empty();
  std::string out = absl::StrCat(
      onednn_conv ? "#include <oneapi/dnnl/dnnl.h>\n" : "", Prelude(),
      onednn_conv ? OneDnnConvPrelude() : "",
      segment ? absl::StrCat(kHidden, "extern const char* mt_constants;\n") : "", kHidden,
      "extern uint64_t mt_params_epoch;\n",
      profiled.empty() ? ""
                       : "\n#include <time.h>\n"
                         "static inline int64_t mltune_now_ns() {\n  timespec t;\n"
                         "  clock_gettime(CLOCK_MONOTONIC, &t);\n"
                         "  return int64_t(t.tv_sec) * 1000000000 + t.tv_nsec;\n}\n",
      "\nnamespace {\n", pool.decls(), "}  // namespace\n\n", kernels, "\n", kEntrySection);
  if (segment) {
    absl::StrAppend(&out, kHidden, "const char* mt_constants = nullptr;\n",
                    "extern \"C\" int64_t mltune_constants_bytes() { return ",
                    pool.segment().size(), "; }\n",
                    "extern \"C\" void mltune_bind_constants(const void* segment) {\n",
                    "  mt_constants = static_cast<const char*>(segment);\n}\n");
  }
  // Frozen weights' packed copies (lowering.h's FrozenWeights) are made again once this moves.
  absl::StrAppend(&out, kHidden, "uint64_t mt_params_epoch = 1;\n",
                  "extern \"C\" void mltune_params_changed() { ++mt_params_epoch; }\n");
  absl::StrAppend(&out, "extern \"C\" int64_t mltune_scratch_bytes() { return ", scratch, "; }\n",
                  "extern \"C\" void mltune_entry(void* const* args, void* const* results, "
                  "char* scratch) {\n  (void)args; (void)results; (void)scratch;\n",
                  "  const mt_float_env float_env;\n", entry, "}\n");
  if (profiled.empty()) return out;
  // kernel_ns[kernel_count]: an empty timed region, the timer's own cost, which the runner
  // takes off each kernel's time.
  absl::StrAppend(
      &out, "extern \"C\" int32_t mltune_kernel_count() { return ", kernel_count, "; }\n",
      "extern \"C\" void mltune_entry_profiled(void* const* args, void* const* results, "
      "char* scratch, int64_t* kernel_ns) {\n  (void)args; (void)results; (void)scratch;\n",
      "  const mt_float_env float_env;\n", profiled,
      "  const int64_t t = mltune_now_ns();\n  kernel_ns[", kernel_count,
      "] += mltune_now_ns() - t;\n}\n");
  return out;
}

absl::StatusOr<ProgramText> EmitProgram(const LoweredModule& module,
                                        const std::vector<KernelConfig>& configs,
                                        const std::string& prefix, ConstantPool* pool) {
  ProgramText p;
  const bool top = prefix.empty();  // the program itself, not one a kernel calls
  const int32_t nk = static_cast<int32_t>(module.kernels.size());

  // Where each value lives: args[i], results[j] (its first result slot) or scratch + offset.
  std::unordered_map<const Instruction*, std::string> where;
  for (size_t i = 0; i < module.parameters.size(); ++i) {
    if (module.parameters[i] != nullptr) {
      where[module.parameters[i]] = absl::StrCat("(char*)args[", i, "]");
    }
  }
  for (size_t j = 0; j < module.results.size(); ++j) {
    const Instruction* r = module.results[j];
    if (module.producer.count(r) != 0 && where.count(r) == 0) {
      where[r] = absl::StrCat("(char*)results[", j, "]");
    }
  }
  // Temporaries: live from their kernel to their last reader; first fit by offset.
  std::unordered_map<const Instruction*, int32_t> last_use;
  for (const Kernel& k : module.kernels) {
    for (const Instruction* o : k.outputs) last_use[o] = std::max(last_use[o], k.id);
    for (const Instruction* in : k.inputs) last_use[in] = std::max(last_use[in], k.id);
  }
  struct Live {
    int64_t offset, size;
    int32_t until;
  };
  std::vector<Live> live;
  int64_t temp_bytes = 0;
  std::unordered_map<std::string, std::string> emitted_as;  // canonical text -> function
  // `profiled`: the entry again with each kernel call timed, so a measured plan also tells which
  // of its kernels took the time (Timing::kernel_s); the plain entry stays the one timed whole.
  std::string entry, profiled;
  int64_t workspace = 0;
  for (int32_t id = 0; id < nk; ++id) {
    const Kernel& k = module.kernels[static_cast<size_t>(id)];
    live.erase(
        std::remove_if(live.begin(), live.end(), [&](const Live& l) { return l.until < id; }),
        live.end());
    for (const Instruction* o : k.outputs) {
      if (where.count(o) != 0) continue;
      const int64_t size = AlignUp(std::max<int64_t>(1, o->shape().ByteSize()), kAlign);
      std::sort(live.begin(), live.end(),
                [](const Live& x, const Live& y) { return x.offset < y.offset; });
      int64_t offset = 0;
      for (const Live& l : live) {
        if (offset + size <= l.offset) break;
        offset = std::max(offset, l.offset + l.size);
      }
      live.push_back({offset, size, last_use[o]});
      temp_bytes = std::max(temp_bytes, offset + size);
      where[o] = absl::StrCat("scratch + ", offset);
    }
    const KernelConfig empty;
    const KernelConfig& config =
        static_cast<size_t>(id) < configs.size() ? configs[static_cast<size_t>(id)] : empty;
    std::string fn = absl::StrCat(prefix, "k", k.id);
    absl::StatusOr<Emitted> e = EmitKernel(k, config, pool, fn, top);
    if (!e.ok()) return e.status();
    // A kernel that computes what an earlier one does on other buffers (the layers of a
    // transformer, their gradients) calls the earlier function: a training step's source and
    // compile time shrink by the number of layers.
    auto [same, fresh] = emitted_as.try_emplace(CanonicalKernelText(e->text, fn), fn);
    if (fresh) {
      absl::StrAppend(&p.kernels, top ? absl::StrCat(kKernelSection, fn, "\n") : "", e->text);
    } else {
      fn = same->second;
    }
    workspace = std::max(workspace, e->workspace);
    p.onednn |= e->onednn;
    p.onednn_conv |= e->onednn_conv;
    std::vector<std::string> bufs;
    for (const Instruction* in : k.inputs) bufs.push_back(where.at(in));
    for (const Instruction* o : k.outputs) bufs.push_back(where.at(o));
    absl::StrAppend(&entry, "  { char* b[] = {", absl::StrJoin(bufs, ", "), "}; ", fn,
                    "(b, ws); }\n");
    absl::StrAppend(&profiled, "  { char* b[] = {", absl::StrJoin(bufs, ", "),
                    "}; const int64_t t = mltune_now_ns(); ", fn, "(b, ws); kernel_ns[", id,
                    "] += mltune_now_ns() - t; }\n");
  }
  const int64_t ws_offset = AlignUp(temp_bytes, kAlign);
  p.scratch_bytes = ws_offset + AlignUp(workspace, kAlign);
  entry = absl::StrCat("  char* const ws = scratch + ", ws_offset, ";\n  (void)ws;\n",
                       top ? kCallsBegin : "", entry, top ? kCallsEnd : "");
  profiled = absl::StrCat("  char* const ws = scratch + ", ws_offset, ";\n  (void)ws;\n",
                          top ? kCallsBegin : "", profiled, top ? kCallsEnd : "");
  // Results not written in place: parameters, constants, a value listed twice.
  for (size_t j = 0; j < module.results.size(); ++j) {
    const Instruction* r = module.results[j];
    const std::string slot = absl::StrCat("(char*)results[", j, "]");
    const int64_t bytes = r->shape().ByteSize();
    if (bytes == 0) continue;
    std::string src;
    if (r->opcode() == Opcode::kConstant) {
      src = absl::StrCat("(const char*)", pool->Name(r));
    } else {
      src = where.at(r);
    }
    if (src != slot) {
      // A called program's result may be the very buffer of its argument (a while's state leaf
      // its body passes through), hence the test.
      const std::string copy = absl::StrCat("  if (", slot, " != ", src, ") std::memcpy(", slot,
                                            ", ", src, ", ", bytes, ");\n");
      entry += copy;
      profiled += copy;
    }
  }
  p.entry = std::move(entry);
  p.profiled = std::move(profiled);
  return p;
}

}  // namespace

MicroKernelShape MicroKernel(int64_t micro) {
  switch (micro) {
    case 1:
      return {12, 2};
    case 2:
      return {8, 3};
    case 3:
      return {4, 4};
    default:
      return {6, 2};
  }
}

absl::StatusOr<Program> GenerateKernel(const LoweredModule& module, int32_t kernel,
                                       const KernelConfig& config) {
  if (kernel < 0 || kernel >= static_cast<int32_t>(module.kernels.size())) {
    return absl::InvalidArgumentError(absl::StrCat("no kernel ", kernel));
  }
  const Kernel& k = module.kernels[static_cast<size_t>(kernel)];
  ConstantPool pool(CppDialect(), /*in_segment=*/true);
  const std::string fn = absl::StrCat("k", k.id);
  absl::StatusOr<Emitted> e = EmitKernel(k, config, &pool, fn, /*top=*/true);
  if (!e.ok()) return e.status();
  Program p;
  std::string entry = "  char* b[] = {";
  size_t slot = 0;
  for (const Instruction* in : k.inputs) {
    p.params.push_back(in->shape());
    absl::StrAppend(&entry, slot++ == 0 ? "" : ", ", "(char*)args[", p.params.size() - 1, "]");
  }
  for (const Instruction* o : k.outputs) {
    p.results.push_back(o->shape());
    absl::StrAppend(&entry, slot++ == 0 ? "" : ", ", "(char*)results[", p.results.size() - 1, "]");
  }
  absl::StrAppend(&entry, "};\n  ", fn, "(b, scratch);\n");
  p.scratch_bytes = AlignUp(e->workspace, kAlign);
  p.uses_onednn = e->onednn;
  p.source = Assemble(pool, absl::StrCat(kKernelSection, fn, "\n", e->text), entry, p.scratch_bytes,
                      e->onednn_conv);
  p.constants = TakeSegment(&pool);
  return p;
}

absl::StatusOr<Program> GenerateModule(const LoweredModule& module,
                                       const std::vector<KernelConfig>& configs) {
  ConstantPool pool(CppDialect(), /*in_segment=*/true);
  Program p;
  for (const Instruction* param : module.parameters) p.params.push_back(param->shape());
  for (const Instruction* r : module.results) p.results.push_back(r->shape());
  absl::StatusOr<ProgramText> text = EmitProgram(module, configs, "", &pool);
  if (!text.ok()) return text.status();
  p.scratch_bytes = text->scratch_bytes;
  p.uses_onednn = text->onednn;
  const int32_t nk = static_cast<int32_t>(module.kernels.size());
  p.source = Assemble(pool, text->kernels, text->entry, p.scratch_bytes, text->onednn_conv,
                      nk > 0 ? text->profiled : "", nk);
  p.constants = TakeSegment(&pool);
  return p;
}

}  // namespace mltune::backends::cpu
