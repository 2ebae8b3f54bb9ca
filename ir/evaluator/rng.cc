// rng (uniform and normal), deterministic from EvalOptions::rng_seed. Values derive from raw
// 64-bit words rather than std::*_distribution, whose output is implementation-defined.
// rng-get-and-update-state returns a 128-bit counter (u64[2], low word first) that starts at a
// value derived from the seed and advances by the op's delta on every execution, as XLA's
// backends keep one such state per module (rng-expander builds its Philox generator on it).
// rng-bit-generator computes XLA's Threefry and Philox bit streams exactly (rng_bits.h).
#include <cmath>
#include <numbers>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ir/evaluator/eval_internal.h"
#include "ir/evaluator/rng_bits.h"

namespace mltune::ir::eval {
namespace {

// Uniform double in [0, 1) from the top 53 bits.
double Unit(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

// SplitMix64's output function: a bijective mix of 64 bits.
uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

std::array<uint64_t, 2> InitialRngState(uint64_t seed) {
  constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
  return {Mix64(seed + kGolden), Mix64(seed + 2 * kGolden)};
}

absl::StatusOr<int64_t> RngStateDelta(const Instruction& instr) {
  if (!instr.shape().IsArray() || instr.shape().element_type() != PrimitiveType::kU64 ||
      instr.shape().dimensions() != std::vector<int64_t>{2}) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rng-get-and-update-state must return u64[2], not ", instr.shape().ToString(false)));
  }
  const RawAttribute* delta = instr.FindExtraAttribute("delta");
  int64_t value = 0;
  if (delta == nullptr || !absl::SimpleAtoi(delta->value, &value)) {
    return absl::InvalidArgumentError("rng-get-and-update-state needs an integer delta=");
  }
  return value;
}

absl::StatusOr<Literal> HandleRngGetAndUpdateState(Evaluator& ev, const Instruction& instr,
                                                   Operands&) {
  absl::StatusOr<int64_t> delta = RngStateDelta(instr);
  if (!delta.ok()) return Invalid(instr, delta.status().message());
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  const std::array<uint64_t, 2> state = ev.GetAndUpdateRngState(*delta);
  out->Set<uint64_t>(0, state[0]);
  out->Set<uint64_t>(1, state[1]);
  return out;
}

absl::StatusOr<Literal> HandleRng(Evaluator& ev, const Instruction& instr, Operands& ops) {
  if (ops.size() != 2 || ops[0].element_count() != 1 || ops[1].element_count() != 1) {
    return Invalid(instr, "needs two scalar parameters");
  }
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  const PrimitiveType type = out->element_type();
  const int64_t n = out->element_count();
  if (instr.distribution == RandomDistribution::kNormal) {
    if (!IsFloatingPoint(type)) return Invalid(instr, "rng_normal needs a float type");
    const double mu = ops[0].GetAsDouble(0), sigma = ops[1].GetAsDouble(0);
    for (int64_t i = 0; i < n; ++i) {
      // Box-Muller with u1 in (0, 1] so the log is finite.
      const double u1 = 1.0 - Unit(ev.NextRandom());
      const double u2 = Unit(ev.NextRandom());
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
      out->SetFromDouble(i, mu + sigma * z);
    }
    return out;
  }
  if (IsFloatingPoint(type)) {
    const double a = ops[0].GetAsDouble(0), b = ops[1].GetAsDouble(0);
    for (int64_t i = 0; i < n; ++i) {
      out->SetFromDouble(i, a + (b - a) * Unit(ev.NextRandom()));
      // Rounding to a narrow type can reach b; XLA's interval is half-open.
      if (b > a && out->GetAsDouble(i) >= b) out->SetFromDouble(i, a);
    }
    return out;
  }
  if (IsIntegral(type) || type == PrimitiveType::kPred) {
    const int64_t a = ops[0].GetAsInt64(0), b = ops[1].GetAsInt64(0);
    const uint64_t range = b > a ? static_cast<uint64_t>(b) - static_cast<uint64_t>(a) : 0;
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t r = range == 0 ? 0 : ev.NextRandom() % range;
      out->SetFromInt64(i, static_cast<int64_t>(static_cast<uint64_t>(a) + r));
    }
    return out;
  }
  return Invalid(instr, "rng needs a float or integer type");
}

absl::StatusOr<Literal> HandleRngBitGenerator(Evaluator& ev, const Instruction& instr,
                                              Operands& ops) {
  absl::StatusOr<RngBitAlgorithm> algorithm = CheckRngBitGenerator(instr);
  if (!algorithm.ok()) return algorithm.status();
  const Literal& in = ops[0];
  std::vector<uint64_t> state(static_cast<size_t>(in.element_count()));
  for (size_t i = 0; i < state.size(); ++i) state[i] = in.Get<uint64_t>(static_cast<int64_t>(i));
  const Shape& bits_shape = instr.shape().tuple_shapes(1);
  const RngBits out = GenerateRngBits(*algorithm, state, bits_shape.dimensions(),
                                      BitWidth(bits_shape.element_type()));
  absl::StatusOr<Literal> new_state = ev.NewLiteral(instr.shape().tuple_shapes(0));
  if (!new_state.ok()) return new_state.status();
  for (size_t i = 0; i < state.size(); ++i) {
    new_state->Set<uint64_t>(static_cast<int64_t>(i), out.state[i]);
  }
  absl::StatusOr<Literal> bits = ev.NewLiteral(bits_shape);
  if (!bits.ok()) return bits.status();
  // The bit pattern in the element's width (signed types wrap into it).
  for (size_t i = 0; i < out.bits.size(); ++i) {
    bits->SetFromInt64(static_cast<int64_t>(i), static_cast<int64_t>(out.bits[i]));
  }
  std::vector<Literal> parts;
  parts.push_back(*std::move(new_state));
  parts.push_back(*std::move(bits));
  return Literal::MakeTuple(std::move(parts));
}

}  // namespace mltune::ir::eval
