// rng-expander: XLA's RngExpander (xla/service/rng_expander.cc, with the generator and the
// distributions of xla/client/lib/prng.cc, now xla/hlo/builder/lib/prng.cc). Every `rng` op
// becomes
//   call(key, state, a, b), to_apply=rng_<distribution>_<type>_<dims>
// with key a u64 constant and state = rng-get-and-update-state(), delta=W (u64[2]), both in the
// rng's computation as XLA places them. The called computation builds the numbers out of plain
// HLO integer and float ops:
//  - bits: Philox4x32-10 (XLA's PhiloxBitGenerator). The 64-bit key is split into two u32 words;
//    the 128-bit counter of Philox block i is state + i (state is the u64[2] {low, high} value
//    that rng-get-and-update-state returns). Each round's 32x32->64-bit products are multiplies
//    on u64 split into high and low u32 halves. Blocks give 4 u32 words each, used in order;
//    64-bit types take two words per element (low word first), as XLA's PhiloxRngBit64.
//  - uniform floats in [a, b): the mantissa trick, (bits >> (width - mantissa)) | bits(1.0)
//    bitcast to the float type, minus 1, times (b - a), plus a, then clamped to [a, b)
//    (rounding of the scaling can reach b). f16 and bf16 are computed in f32, as XLA converts
//    them to an f32 rng, and clamped again after the conversion back.
//  - uniform integers in [a, b): a + bits mod (b - a), with the modulus split in two halves so
//    signed types do not overflow (XLA's UniformIntDistribution).
//  - normals N(mu, sigma): XLA maps a uniform in (-1, 1) through sqrt(2) * erfinv; this IR has no
//    erf-inv op, so this pass uses Box-Muller instead, z = sqrt(-2 log(u1)) cos(2 pi u2) with
//    u1 in (0, 1] and u2 in [0, 1) from two uniforms per element (so twice the bits), then
//    mu + sigma * z (f16 and bf16 in f32).
// W, the state's delta, is the number of 32-bit words the computation consumes; a block uses one
// counter value per 4 words, so successive executions never reuse a counter. The key is a
// constant per rng, as XLA's (XLA mixes a per-module random value with the configured seed; here
// it is a fixed function of the rng's position, so the pass is deterministic). One computation is
// built per (distribution, shape) and shared by every rng with that pair.
//
// The values differ from those of the unexpanded rng: the reference evaluator draws `rng` from
// its own seeded generator, while the expansion draws Philox bits from rng-get-and-update-state.
// Random ops have no fixed value in XLA either (each backend and seed gives other numbers), so
// the pass preserves the distribution, not the samples; it is not checked for bit-equality.
//
// Skipped (left as rng): element types other than f16, bf16, f32, f64 (both distributions) and
// s32, s64, u32, u64 (uniform), dynamic shapes, rngs with control edges, rngs inside fusion
// computations.
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <numbers>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/hlo_builder.h"
#include "ir/module.h"
#include "passes/pass.h"
#include "passes/registry.h"

namespace mltune::passes {
namespace {

using ir::ComparisonDirection;
using ir::Computation;
using ir::Instruction;
using ir::Literal;
using ir::Opcode;
using ir::PrimitiveType;
using ir::RandomDistribution;
using ir::Shape;

// Philox4x32 constants (Salmon et al., as XLA's prng.cc).
constexpr uint32_t kPhiloxW32A = 0x9E3779B9;
constexpr uint32_t kPhiloxW32B = 0xBB67AE85;
constexpr uint32_t kPhiloxM4x32A = 0xD2511F53;
constexpr uint32_t kPhiloxM4x32B = 0xCD9E8D57;
constexpr int kPhiloxRounds = 10;

// The type the numbers are computed in: f16/bf16 in f32, as XLA expands them.
PrimitiveType ComputeType(PrimitiveType t) {
  return t == PrimitiveType::kF16 || t == PrimitiveType::kBF16 ? PrimitiveType::kF32 : t;
}

bool Supported(const Instruction* rng) {
  if (rng->opcode() != Opcode::kRng || rng->operand_count() != 2 || !rng->shape().IsArray() ||
      !rng->shape().is_static() || !rng->control_predecessors().empty() ||
      !rng->control_successors().empty()) {
    return false;
  }
  const PrimitiveType t = rng->shape().element_type();
  for (const Instruction* op : rng->operands()) {
    if (!op->shape().IsScalar() || op->shape().element_type() != t) return false;
  }
  switch (t) {
    case PrimitiveType::kF16:
    case PrimitiveType::kBF16:
    case PrimitiveType::kF32:
    case PrimitiveType::kF64:
      return true;
    case PrimitiveType::kS32:
    case PrimitiveType::kS64:
    case PrimitiveType::kU32:
    case PrimitiveType::kU64:
      return rng->distribution == RandomDistribution::kUniform;
    default:
      return false;
  }
}

// Random 32-bit words the expansion of `rng` consumes: its delta.
int64_t WordsConsumed(const Instruction* rng) {
  const int64_t n = rng->shape().ElementCount();
  const int64_t per_value = ir::BitWidth(ComputeType(rng->shape().element_type())) / 32;
  return n * per_value * (rng->distribution == RandomDistribution::kNormal ? 2 : 1);
}

// Emits instructions into one computation; all helpers work on arrays of one rank or scalars.
class Emitter {
 public:
  explicit Emitter(Computation& c) : c_(c) {}

  Computation& computation() { return c_; }

  Instruction* U32(uint32_t v) {
    return MakeConstant(c_, Literal::Scalar(PrimitiveType::kU32, uint64_t{v}));
  }
  Instruction* U64(uint64_t v) { return MakeConstant(c_, Literal::Scalar(PrimitiveType::kU64, v)); }
  Instruction* Int(PrimitiveType t, uint64_t v) { return MakeConstant(c_, Literal::Scalar(t, v)); }
  Instruction* Float(PrimitiveType t, double v) { return MakeScalarConstant(c_, t, v); }

  // `scalar` broadcast to `dims` (itself when dims is empty).
  Instruction* Splat(Instruction* scalar, const std::vector<int64_t>& dims) {
    if (dims.empty()) return scalar;
    return MakeBroadcast(c_, scalar, dims, {});
  }
  // Elementwise `op` of `x` and `y`, either of which may be a scalar broadcast to the other.
  Instruction* Op(Opcode op, Instruction* x, Instruction* y) {
    if (x->shape().IsScalar() && !y->shape().IsScalar()) x = Splat(x, y->shape().dimensions());
    if (y->shape().IsScalar() && !x->shape().IsScalar()) y = Splat(y, x->shape().dimensions());
    return MakeBinary(c_, op, x, y);
  }
  Instruction* Compare(ComparisonDirection d, Instruction* x, Instruction* y) {
    if (x->shape().IsScalar() && !y->shape().IsScalar()) x = Splat(x, y->shape().dimensions());
    if (y->shape().IsScalar() && !x->shape().IsScalar()) y = Splat(y, x->shape().dimensions());
    return MakeCompare(c_, d, x, y);
  }
  Instruction* Select(Instruction* pred, Instruction* x, Instruction* y) {
    return AddInstr(c_, Opcode::kSelect, Shape(x->shape().element_type(), x->shape().dimensions()),
                    {pred, x, y});
  }
  Instruction* Convert(Instruction* x, PrimitiveType t) {
    if (x->shape().element_type() == t) return x;
    return MakeConvert(c_, x, t);
  }
  Instruction* Bitcast(Instruction* x, PrimitiveType t) {
    if (x->shape().element_type() == t) return x;
    return AddInstr(c_, Opcode::kBitcastConvert, Shape(t, x->shape().dimensions()), {x});
  }
  // x >> amount (logical), x << amount.
  Instruction* Shr(Instruction* x, uint64_t amount) {
    return Op(Opcode::kShiftRightLogical, x, Int(x->shape().element_type(), amount));
  }
  Instruction* Shl(Instruction* x, uint64_t amount) {
    return Op(Opcode::kShiftLeft, x, Int(x->shape().element_type(), amount));
  }
  Instruction* Iota(PrimitiveType t, int64_t n) {
    Instruction* i = AddInstr(c_, Opcode::kIota, Shape(t, {n}), {});
    i->iota_dimension = 0;
    return i;
  }
  // Element `index` of a rank-1 array, as a scalar.
  Instruction* ScalarAt(Instruction* x, int64_t index) {
    return MakeReshape(c_, MakeSlice(c_, x, {{index, index + 1, 1}}), {});
  }
  // Column `column` of an [n, k] array, as [n].
  Instruction* Column(Instruction* x, int64_t column) {
    const int64_t n = x->shape().dimensions(0);
    return MakeReshape(c_, MakeSlice(c_, x, {{0, n, 1}, {column, column + 1, 1}}), {n});
  }

 private:
  Computation& c_;
};

// Philox4x32-10: `words` random u32 words (u32[words]) from the u64 scalar `key` and the
// u64[2] `state` (XLA's PhiloxRngBit32 with GetPhiloxInputsAndUpdatedState).
Instruction* PhiloxWords(Emitter& e, Instruction* key, Instruction* state, int64_t words) {
  const int64_t blocks = (words + 3) / 4;
  const std::vector<int64_t> dims = {blocks};
  // Counter of block i: the 128-bit state plus i.
  Instruction* state_low = e.Splat(e.ScalarAt(state, 0), dims);
  Instruction* state_high = e.Splat(e.ScalarAt(state, 1), dims);
  Instruction* counter_low = e.Op(Opcode::kAdd, state_low, e.Iota(PrimitiveType::kU64, blocks));
  Instruction* carry =
      e.Convert(e.Compare(ComparisonDirection::kLt, counter_low, state_low), PrimitiveType::kU64);
  Instruction* counter_high = e.Op(Opcode::kAdd, state_high, carry);
  auto low32 = [&](Instruction* x) { return e.Convert(x, PrimitiveType::kU32); };
  auto high32 = [&](Instruction* x) { return e.Convert(e.Shr(x, 32), PrimitiveType::kU32); };
  std::vector<Instruction*> x = {low32(counter_low), high32(counter_low), low32(counter_high),
                                 high32(counter_high)};
  Instruction* k0 = low32(key);
  Instruction* k1 = high32(key);
  // mulhi/mullo of a u32 array by a u32 constant, through one u64 product.
  auto mul = [&](Instruction* v, uint32_t m) {
    Instruction* product = e.Op(Opcode::kMultiply, e.Convert(v, PrimitiveType::kU64), e.U64(m));
    return std::make_pair(high32(product), low32(product));
  };
  for (int round = 0; round < kPhiloxRounds; ++round) {
    if (round > 0) {
      k0 = e.Op(Opcode::kAdd, k0, e.U32(kPhiloxW32A));
      k1 = e.Op(Opcode::kAdd, k1, e.U32(kPhiloxW32B));
    }
    auto [high0, low0] = mul(x[0], kPhiloxM4x32A);
    auto [high1, low1] = mul(x[2], kPhiloxM4x32B);
    x = {e.Op(Opcode::kXor, e.Op(Opcode::kXor, high1, x[1]), k0), low1,
         e.Op(Opcode::kXor, e.Op(Opcode::kXor, high0, x[3]), k1), low0};
  }
  // Words in order: block 0's four words, then block 1's, ...
  Computation& c = e.computation();
  std::vector<Instruction*> columns;
  for (Instruction* w : x) columns.push_back(MakeReshape(c, w, {blocks, 1}));
  Instruction* matrix =
      AddInstr(c, Opcode::kConcatenate, Shape(PrimitiveType::kU32, {blocks, 4}), columns);
  matrix->dimensions = {1};
  Instruction* flat = MakeReshape(c, matrix, {4 * blocks});
  if (4 * blocks == words) return flat;
  return MakeSlice(c, flat, {{0, words, 1}});
}

// `n` random unsigned integers of `bits` (32 or 64) bits, as u32[n] or u64[n].
Instruction* RandomBits(Emitter& e, Instruction* key, Instruction* state, int64_t n, int bits) {
  if (bits == 32) return PhiloxWords(e, key, state, n);
  Instruction* words = MakeReshape(e.computation(), PhiloxWords(e, key, state, 2 * n), {n, 2});
  Instruction* low = e.Convert(e.Column(words, 0), PrimitiveType::kU64);
  Instruction* high = e.Convert(e.Column(words, 1), PrimitiveType::kU64);
  return e.Op(Opcode::kOr, low, e.Shl(high, 32));
}

// Uniform values in [0, 1) of float type `t` (f32 or f64) from unsigned `bits` of its width.
Instruction* UnitFloats(Emitter& e, Instruction* bits, PrimitiveType t) {
  const bool f64 = t == PrimitiveType::kF64;
  const int width = f64 ? 64 : 32;
  const int mantissa = f64 ? 52 : 23;
  const uint64_t one_bits = f64 ? 0x3FF0000000000000ULL : 0x3F800000ULL;
  Instruction* mantissa_bits = e.Shr(bits, width - mantissa);
  Instruction* one_to_two =
      e.Bitcast(e.Op(Opcode::kOr, mantissa_bits, e.Int(bits->shape().element_type(), one_bits)), t);
  return e.Op(Opcode::kSubtract, one_to_two, e.Float(t, 1.0));
}

// The largest value of float type `t` below the scalar `b` (b > 0: one ulp less in magnitude;
// b < 0: one more; b = 0: the negative smallest subnormal).
Instruction* NextBelow(Emitter& e, Instruction* b) {
  const PrimitiveType t = b->shape().element_type();
  const int width = ir::BitWidth(t);
  const PrimitiveType s = width == 16   ? PrimitiveType::kS16
                          : width == 32 ? PrimitiveType::kS32
                                        : PrimitiveType::kS64;
  Instruction* ib = e.Bitcast(b, s);
  Instruction* zero = e.Float(t, 0.0);
  Instruction* down = e.Op(Opcode::kSubtract, ib, e.Int(s, 1));
  Instruction* up = e.Op(Opcode::kAdd, ib, e.Int(s, 1));
  // Sign bit and the lowest mantissa bit: -denorm_min.
  Instruction* negative_tiny = e.Int(s, (uint64_t{1} << (width - 1)) | 1);
  Instruction* below =
      e.Select(e.Compare(ComparisonDirection::kGt, b, zero), down,
               e.Select(e.Compare(ComparisonDirection::kLt, b, zero), up, negative_tiny));
  return e.Bitcast(below, t);
}

// Clamps `v` into [a, b) in the type of a and b.
Instruction* ClampBelow(Emitter& e, Instruction* v, Instruction* a, Instruction* b) {
  return e.Op(Opcode::kMaximum, e.Op(Opcode::kMinimum, v, NextBelow(e, b)), a);
}

Instruction* AddParameter(Computation& c, int64_t number, const Shape& shape,
                          const std::string& name) {
  auto p = std::make_unique<Instruction>(Opcode::kParameter, shape,
                                         c.parent()->UniqueInstructionName(name));
  p->parameter_number = number;
  return c.AddInstruction(std::move(p));
}

// The computation (key: u64[], state: u64[2], a, b) -> values of `rng`'s shape.
Computation* MakeRngComputation(ir::Module& module, const Instruction* rng) {
  const Shape& shape = rng->shape();
  const PrimitiveType type = shape.element_type();
  const PrimitiveType compute = ComputeType(type);
  const bool normal = rng->distribution == RandomDistribution::kNormal;
  const std::string name = absl::StrCat(normal ? "rng_normal_" : "rng_uniform_",
                                        std::string(ir::PrimitiveTypeName(type)), "_",
                                        absl::StrJoin(shape.dimensions(), "x"));
  Computation* c =
      module.AddComputation(std::make_unique<Computation>(UniqueComputationName(module, name)));
  Emitter e(*c);
  Instruction* key = AddParameter(*c, 0, Shape::Scalar(PrimitiveType::kU64), "key");
  Instruction* state = AddParameter(*c, 1, Shape(PrimitiveType::kU64, {2}), "state");
  Instruction* a = AddParameter(*c, 2, Shape::Scalar(type), normal ? "mu" : "a");
  Instruction* b = AddParameter(*c, 3, Shape::Scalar(type), normal ? "sigma" : "b");
  const int64_t n = shape.ElementCount();
  const int width = ir::BitWidth(compute);
  Instruction* values = nullptr;
  if (normal) {
    Instruction* u = UnitFloats(e, RandomBits(e, key, state, 2 * n, width), compute);
    // u1 in (0, 1] so its log is finite; u2 in [0, 1).
    Instruction* u1 = e.Op(Opcode::kSubtract, e.Float(compute, 1.0), MakeSlice(*c, u, {{0, n, 1}}));
    Instruction* u2 = MakeSlice(*c, u, {{n, 2 * n, 1}});
    Instruction* radius =
        MakeUnary(*c, Opcode::kSqrt,
                  e.Op(Opcode::kMultiply, e.Float(compute, -2.0), MakeUnary(*c, Opcode::kLog, u1)));
    Instruction* angle = e.Op(Opcode::kMultiply, e.Float(compute, 2 * std::numbers::pi), u2);
    Instruction* z = e.Op(Opcode::kMultiply, radius, MakeUnary(*c, Opcode::kCos, angle));
    Instruction* mu = e.Convert(a, compute);
    Instruction* sigma = e.Convert(b, compute);
    values = e.Convert(e.Op(Opcode::kAdd, e.Op(Opcode::kMultiply, z, sigma), mu), type);
  } else if (ir::IsFloatingPoint(type)) {
    Instruction* unit = UnitFloats(e, RandomBits(e, key, state, n, width), compute);
    Instruction* lo = e.Convert(a, compute);
    Instruction* hi = e.Convert(b, compute);
    Instruction* scaled =
        e.Op(Opcode::kAdd, e.Op(Opcode::kMultiply, unit, e.Op(Opcode::kSubtract, hi, lo)), lo);
    values = ClampBelow(e, scaled, lo, hi);
    if (compute != type) values = ClampBelow(e, e.Convert(values, type), a, b);
  } else {
    const PrimitiveType unsigned_type = width == 64 ? PrimitiveType::kU64 : PrimitiveType::kU32;
    Instruction* bits = RandomBits(e, key, state, n, width);
    Instruction* range =
        e.Op(Opcode::kSubtract, e.Bitcast(b, unsigned_type), e.Bitcast(a, unsigned_type));
    Instruction* dist = e.Op(Opcode::kRemainder, bits, range);
    Instruction* half = e.Shr(dist, 1);
    values = e.Op(Opcode::kAdd, e.Op(Opcode::kAdd, e.Bitcast(half, type), a),
                  e.Bitcast(e.Op(Opcode::kSubtract, dist, half), type));
  }
  // The rng's own shape, layout included.
  if (values->shape().dimensions() != shape.dimensions()) {
    values = MakeReshape(*c, values, shape.dimensions());
  }
  if (!values->shape().Equal(shape, /*compare_layout=*/true)) {
    values = AddInstr(*c, Opcode::kCopy, shape, {values});
  }
  c->set_root(values);
  return c;
}

// SplitMix64's mix: the key of the k-th rng this pass expands.
uint64_t KeyFor(uint64_t k) {
  uint64_t z = 0x6d6c74756e65ULL + k * 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

class RngExpander : public Pass {
 public:
  std::string_view name() const override { return "rng-expander"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    const std::unordered_set<const Computation*> fused = FusionComputations(module);
    std::map<std::pair<RandomDistribution, std::string>, Computation*> expansions;
    uint64_t expanded = 0;
    for (Computation* c : module.computations()) {
      if (fused.count(c)) continue;
      for (Instruction* rng : c->MakePostOrder()) {
        if (!Supported(rng)) continue;
        Computation*& callee =
            expansions[{rng->distribution, rng->shape().ToString(/*print_layout=*/true)}];
        if (callee == nullptr) callee = MakeRngComputation(module, rng);
        Instruction* key =
            MakeConstant(*c, Literal::Scalar(PrimitiveType::kU64, KeyFor(expanded++)));
        Instruction* state = AddInstr(*c, Opcode::kRngGetAndUpdateState,
                                      Shape(PrimitiveType::kU64, {2}), {}, "rng_state");
        state->extra_attributes.push_back({"delta", absl::StrCat(WordsConsumed(rng))});
        Instruction* call = AddInstr(*c, Opcode::kCall, rng->shape(),
                                     {key, state, rng->operand(0), rng->operand(1)}, rng->name());
        call->mutable_called_computations().push_back(callee);
        call->metadata = rng->metadata;
        rng->ReplaceAllUsesWith(call);
        if (absl::Status s = c->RemoveInstruction(rng); !s.ok()) return s;
      }
    }
    return expanded > 0;
  }
};

}  // namespace

void RegisterRngExpander(Registry& registry) {
  registry.Register({"rng-expander",
                     "expands rng (uniform, normal) into a Philox4x32 generator of plain HLO ops "
                     "fed by rng-get-and-update-state",
                     [] { return std::make_unique<RngExpander>(); }});
}

}  // namespace mltune::passes
