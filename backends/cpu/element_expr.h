// Element expressions of fused kernels as C++ source text: the value of any member of a lowered
// kernel at symbolic indices, built from its operands' values through index arithmetic
// (broadcast, transpose, reshape, slice, pad, concatenate, gather, dynamic slices) and elementwise
// ops with XLA's semantics (the mt_* helpers of the target's prelude). The CPU code generator
// wraps it in loop nests; the GPU one (backends/gpu) in thread indices, with its own dialect.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cpu/index_algebra.h"
#include "backends/cpu/lowering.h"
#include "ir/literal.h"
#include "ir/module.h"

namespace mltune::backends::cpu {

// Symbolic indices, one C++ expression per dimension ("0" for a unit or fixed one).
using Idx = std::vector<std::string>;

// What differs between the C++ the system compiler reads and the CUDA C++ NVRTC reads: where the
// standard library's names live (the GPU prelude provides them in a namespace of its own) and how
// helper functions are declared.
struct TextDialect {
  std::string std_ns = "std::";                     // sqrt, erf, numeric_limits, bit_cast, min, max
  std::string function_qualifier = "inline";        // "__device__ __forceinline__" on the GPU
  std::string constant_qualifier = "static const";  // of file-scope constant arrays
};
const TextDialect& CppDialect();

// The C type a value of `t` is computed in (bf16 and f16 in float, pred as bool).
std::string CType(ir::PrimitiveType t);
// The type an element is stored as: pred one byte, bf16 and f16 their 16 bits.
std::string StorageType(ir::PrimitiveType t);
// A stored element `load` of type `t` as its C type, and a value as what is stored.
std::string LoadAs(ir::PrimitiveType t, const std::string& load);
std::string StoreAs(ir::PrimitiveType t, const std::string& v);
// Element `i` of `lit` as a C++ literal of its C type.
std::string LiteralText(const ir::Literal& lit, int64_t i, const TextDialect& dialect);
// The row-major linear index of `idx` in an array of `dims`.
std::string Linear(const std::vector<int64_t>& dims, const Idx& idx);
int64_t Product(const std::vector<int64_t>& v);
// `v` clamped to [lo, hi] as int64_t.
std::string Clamp(const std::string& v, int64_t lo, int64_t hi, const TextDialect& dialect);
// The C++ expression of elementwise `instr` on operand expressions `a` (XLA semantics through the
// prelude's mt_* helpers); a bf16 or f16 result is computed in float and rounded to its type.
std::string ElementwiseExpr(const ir::Instruction& instr, const std::vector<std::string>& a,
                            const TextDialect& dialect);
// Scalar computation `comp` (parameters, constants, scalar elementwise ops) as a C++ function
// `name` of its parameters p0, p1, ... in order.
std::string ScalarFunction(const ir::Computation& comp, const std::string& name,
                           const TextDialect& dialect);

// A program's non-scalar constants, each emitted once: as file-scope arrays of literals, or, in a
// pool made with `in_segment`, those over kInlineConstantBytes as views of the program's constants
// segment (`segment()`, bound at load time by `mltune_bind_constants`). Weights written as C++
// literals made g++ take minutes and over 14 GB for a model's 346 MB; small tables stay literals,
// which the compiler can fold.
class ConstantPool {
 public:
  static constexpr int64_t kInlineConstantBytes = 256;
  // Each constant's offset in the segment is a multiple of this (the vector loads' alignment).
  static constexpr int64_t kSegmentAlign = 64;

  explicit ConstantPool(TextDialect dialect = CppDialect(), bool in_segment = false)
      : dialect_(std::move(dialect)), in_segment_(in_segment) {}
  // The array holding constant `c`'s elements as stored (StorageType), declared on first use.
  std::string Name(const ir::Instruction* c);
  const std::string& decls() const { return decls_; }
  // The bytes of the constants kept out of the source; empty when none are.
  const std::string& segment() const { return segment_; }
  std::string TakeSegment() { return std::move(segment_); }

 private:
  TextDialect dialect_;
  bool in_segment_;
  std::unordered_map<const ir::Instruction*, std::string> names_;
  std::string decls_;
  std::string segment_;
};

// Builds a kernel body's text: lines, scoped names, and the memoized value of a member at
// symbolic indices. Subclasses say how values from outside the kernel are read (External) and
// may provide some members' values themselves (Provided: a cached row, a GEMM's result).
class ElementEmitter {
 public:
  ElementEmitter(const Kernel& kernel, TextDialect dialect)
      : k_(kernel), dialect_(std::move(dialect)) {}
  virtual ~ElementEmitter() = default;

 protected:
  void Line(const std::string& s);
  void Open(const std::string& s);
  void Close();
  std::string NewName(const std::string& prefix);
  // A new `const type v = expr;`, hoisted where the hoisting nest allows (BeginHoisting).
  std::string Var(const std::string& type, const std::string& expr);
  // An int64_t variable of `expr`, with its range where the index algebra knows it.
  std::string IntVar(const std::string& expr) {
    std::string v = Var("int64_t", expr);
    index_.BoundLike(v, expr);
    return v;
  }
  // The row-major linear index of `idx`, a valid index of an array of `dims`, simplified.
  std::string LinearIndex(const std::vector<int64_t>& dims, const Idx& idx);
  void PushScope() { memo_.emplace_back(); }
  void PopScope() { memo_.pop_back(); }
  static std::string MemoKey(const ir::Instruction* instr, const Idx& idx);
  // The value of `instr` at `idx` (a C++ expression: a variable or a literal).
  std::string Value(const ir::Instruction* instr, const Idx& idx);
  // The value of member `instr` at `idx`, computed from its operands' values.
  std::string Compute(const ir::Instruction* instr, const Idx& idx);
  // A dynamic slice's or update's start on one dimension: scalar `index` clamped to [0, limit],
  // as XLA clamps it so the window fits.
  std::string ClampedStart(const ir::Instruction* index, int64_t limit) {
    return IntVar(Clamp(absl::StrCat("(int64_t)", Value(index, {})), 0, limit));
  }
  // The output element scatter `s` folds update element `idx` into: its index vector's start
  // (read from the indices), plus the window offset. `fits` receives the conditions under which
  // the update's whole window fits the operand (XLA skips an update that does not fit).
  Idx ScatterTarget(const ir::Instruction* s, const Idx& idx, std::vector<std::string>* fits);
  std::string Clamp(const std::string& v, int64_t lo, int64_t hi) {
    std::string c = cpu::Clamp(v, lo, hi, dialect_);
    index_.Bound(c, lo, hi);
    return c;
  }
  // A value from outside the kernel (an input or a constant) at `idx`.
  virtual std::string External(const ir::Instruction* instr, const Idx& idx) = 0;
  // The value of `instr` at `idx` where the subclass keeps it itself; "" otherwise.
  virtual std::string Provided(const ir::Instruction* /*instr*/, const Idx& /*idx*/) { return ""; }

  // Hoisting (the CPU's loop nests): while `hoist_levels_` is set, Var places each value just
  // inside the deepest loop of the nest whose index it reads (`var_level_` holds each index's
  // and value's loop level; `hoist_depth_` the body's indentation).
  struct HoistLevel {
    size_t pos;
    std::string indent;
  };
  int LoopLevel(const std::string& expr) const;

  const Kernel& k_;
  TextDialect dialect_;
  std::string code_, indent_ = "  ";
  std::vector<std::map<std::string, std::string>> memo_;
  int64_t counter_ = 0;
  std::vector<HoistLevel> hoist_levels_;
  size_t hoist_depth_ = 0;
  std::unordered_map<std::string, int> var_level_;
  // What is known of the index expressions: loop bounds, clamps, reshapes' arithmetic.
  IndexAlgebra index_;
};

}  // namespace mltune::backends::cpu
