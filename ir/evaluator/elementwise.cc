// Element-wise ops: unary math, binary arithmetic, compare, convert, bitcast-convert,
// reduce-precision, select and clamp, with XLA's semantics for every element type.
#include <bit>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "ir/evaluator/element_types.h"
#include "ir/evaluator/elementwise_ops.h"
#include "ir/evaluator/eval_internal.h"
#include "ir/evaluator/index_util.h"

namespace mltune::ir::eval {
namespace {

// Index step of an operand that may be a scalar broadcast over the output.
int64_t Step(const Literal& operand) { return operand.element_count() == 1 ? 0 : 1; }

absl::Status CheckCount(const Instruction& instr, const Literal& operand, int64_t n) {
  if (operand.element_count() != n && operand.element_count() != 1) {
    return Invalid(
        instr, absl::StrCat("operand has ", operand.element_count(), " elements, the result ", n));
  }
  return absl::OkStatus();
}

// The result buffer of an element-wise op. An operand that nothing else reads and that has the
// result's type and size is reused in place (every element is read before it is written), which
// spares allocating and zeroing large arrays; else a fresh literal. `reused` tells which.
absl::StatusOr<Literal> ResultBuffer(Evaluator& ev, const Instruction& instr, Operands& ops,
                                     int64_t& reused) {
  reused = -1;
  const Shape& shape = instr.shape();
  for (int64_t k = 0; k < ops.size(); ++k) {
    if (ops.CanTake(k) && shape.IsArray() && ops[k].shape().IsArray() &&
        ops[k].element_type() == shape.element_type() && ops[k].shape().SameDimensions(shape)) {
      reused = k;
      return ops.Take(k);
    }
  }
  return ev.NewLiteral(shape);
}

// --- unary ops that keep the element type ---

template <typename C>
C SignOf(C a) {
  if constexpr (kIsComplex<C>) {
    return a == C(0) ? C(0) : a / std::abs(a);
  } else if constexpr (kIsFloat<C>) {
    if (std::isnan(a) || a == 0) return a;
    return std::copysign(C(1), a);
  } else if constexpr (kIsBool<C>) {
    return a;
  } else if constexpr (std::is_signed_v<C>) {
    return static_cast<C>((a > 0) - (a < 0));
  } else {
    return static_cast<C>(a != 0 ? 1 : 0);
  }
}

template <typename Tr, typename F>
absl::Status WithUnaryOp(Opcode op, F&& f) {
  using C = typename Tr::C;
  switch (op) {
    case Opcode::kCopy:
      return f([](C a) { return a; });
    case Opcode::kAbs:
      if constexpr (kIsInt<C>) {
        if constexpr (std::is_signed_v<C>) {
          return f([](C a) { return a < 0 ? WrapSub(C{0}, a) : a; });
        } else {
          return f([](C a) { return a; });
        }
      } else if constexpr (kIsFloat<C>) {
        return f([](C a) { return std::fabs(a); });
      }
      break;
    case Opcode::kNegate:
      if constexpr (kIsInt<C>) {
        return f([](C a) { return WrapSub(C{0}, a); });
      } else if constexpr (!kIsBool<C>) {
        return f([](C a) { return -a; });
      }
      break;
    case Opcode::kSign:
      return f([](C a) { return SignOf(a); });
    case Opcode::kNot:
      if constexpr (kIsBool<C>) {
        return f([](C a) { return !a; });
      } else if constexpr (kIsInt<C>) {
        return f([](C a) { return static_cast<C>(~a); });
      }
      break;
    case Opcode::kPopulationCount:
      if constexpr (kIsInt<C>) {
        return f([](C a) { return static_cast<C>(std::popcount(LogicalBits<Tr>(a))); });
      }
      break;
    case Opcode::kClz:
      if constexpr (kIsInt<C>) {
        return f(
            [](C a) { return static_cast<C>(Tr::kBits - std::bit_width(LogicalBits<Tr>(a))); });
      }
      break;
    default:
      break;
  }
  if constexpr (kIsFloat<C>) {
    switch (op) {
      case Opcode::kCeil:
        return f([](C a) { return std::ceil(a); });
      case Opcode::kFloor:
        return f([](C a) { return std::floor(a); });
      case Opcode::kRoundNearestAfz:
        return f([](C a) { return std::round(a); });
      case Opcode::kRoundNearestEven:
        return f([](C a) { return std::nearbyint(a); });
      case Opcode::kCbrt:
        return f([](C a) { return std::cbrt(a); });
      case Opcode::kErf:
        return f([](C a) { return std::erf(a); });
      case Opcode::kExpm1:
        return f([](C a) { return std::expm1(a); });
      case Opcode::kLog1p:
        return f([](C a) { return std::log1p(a); });
      default:
        break;
    }
  }
  if constexpr (kIsFloat<C> || kIsComplex<C>) {
    switch (op) {
      case Opcode::kCos:
        return f([](C a) { return std::cos(a); });
      case Opcode::kSin:
        return f([](C a) { return std::sin(a); });
      case Opcode::kTan:
        return f([](C a) { return std::tan(a); });
      case Opcode::kTanh:
        return f([](C a) { return std::tanh(a); });
      case Opcode::kExp:
        return f([](C a) { return std::exp(a); });
      case Opcode::kLog:
        return f([](C a) { return std::log(a); });
      case Opcode::kSqrt:
        return f([](C a) { return std::sqrt(a); });
      case Opcode::kRsqrt:
        return f([](C a) { return C(1) / std::sqrt(a); });
      case Opcode::kLogistic:
        return f([](C a) { return C(1) / (C(1) + std::exp(-a)); });
      case Opcode::kExpm1:
        if constexpr (kIsComplex<C>) return f([](C a) { return std::exp(a) - C(1); });
        break;
      case Opcode::kLog1p:
        if constexpr (kIsComplex<C>) return f([](C a) { return std::log(C(1) + a); });
        break;
      default:
        break;
    }
  }
  return NoSuchOp(op, Tr::kType);
}

absl::StatusOr<Literal> Unary(Evaluator& ev, const Instruction& instr, Operands& ops) {
  int64_t reused;
  absl::StatusOr<Literal> out = ResultBuffer(ev, instr, ops, reused);
  if (!out.ok()) return out.status();
  const Literal& in = reused == 0 ? *out : ops[0];
  if (absl::Status s = CheckCount(instr, in, out->element_count()); !s.ok()) return s;
  if (in.element_type() != out->element_type()) {
    return Invalid(instr, "operand and result element types differ");
  }
  const uint8_t* a = in.untyped_data();
  uint8_t* o = out->untyped_data();
  const int64_t n = out->element_count();
  const int64_t step = Step(in);
  absl::Status s = DispatchType(in.element_type(), [&](auto tr) -> absl::Status {
    using Tr = decltype(tr);
    return WithUnaryOp<Tr>(instr.opcode(), [&](auto fn) {
      for (int64_t i = 0; i < n; ++i) Tr::Store(o, i, fn(Tr::Load(a, i * step)));
      return absl::OkStatus();
    });
  });
  if (!s.ok()) return s;
  return out;
}

// abs, real, imag: complex in, real out (or real in, real out for real/imag).
absl::StatusOr<Literal> ComplexPart(Evaluator& ev, const Instruction& instr, const Literal& in) {
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  if (absl::Status s = CheckCount(instr, in, out->element_count()); !s.ok()) return s;
  const int64_t n = out->element_count();
  const int64_t step = Step(in);
  const Opcode op = instr.opcode();
  for (int64_t i = 0; i < n; ++i) {
    const std::complex<double> z = in.GetAsComplex(i * step);
    double v = op == Opcode::kReal ? z.real() : op == Opcode::kImag ? z.imag() : 0;
    if (op == Opcode::kAbs) {
      // |z| in the component precision, as std::abs of complex<float> computes it.
      v = in.element_type() == PrimitiveType::kC64
              ? std::abs(
                    std::complex<float>(static_cast<float>(z.real()), static_cast<float>(z.imag())))
              : std::abs(z);
    }
    out->SetFromDouble(i, v);
  }
  return out;
}

absl::StatusOr<Literal> IsFinite(Evaluator& ev, const Instruction& instr, const Literal& in) {
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  if (absl::Status s = CheckCount(instr, in, out->element_count()); !s.ok()) return s;
  const int64_t step = Step(in);
  for (int64_t i = 0; i < out->element_count(); ++i) {
    out->Set<uint8_t>(i, std::isfinite(in.GetAsDouble(i * step)) ? 1 : 0);
  }
  return out;
}

// --- convert ---

template <typename Tr>
typename Tr::C SaturateToInt(double v) {
  using C = typename Tr::C;
  if (std::isnan(v)) return C{0};
  double lo, hi;
  if constexpr (Tr::kBits == 4) {
    lo = std::is_signed_v<C> ? -8 : 0;
    hi = std::is_signed_v<C> ? 7 : 15;
  } else {
    lo = static_cast<double>(std::numeric_limits<C>::min());
    hi = static_cast<double>(std::numeric_limits<C>::max());
  }
  if (v <= lo) return static_cast<C>(lo);
  if (v >= hi) {
    return Tr::kBits == 4 ? static_cast<C>(hi) : std::numeric_limits<C>::max();
  }
  return static_cast<C>(v);
}

// A widened source value (complex<double>, double, int64_t or uint64_t) as the type of Tr.
template <typename Tr, typename W>
typename Tr::C ConvertValue(W w) {
  using C = typename Tr::C;
  if constexpr (kIsComplex<W>) {
    if constexpr (kIsComplex<C>) {
      return C(static_cast<typename C::value_type>(w.real()),
               static_cast<typename C::value_type>(w.imag()));
    } else if constexpr (kIsBool<C>) {
      return w != W(0);
    } else {
      return ConvertValue<Tr>(w.real());
    }
  } else if constexpr (kIsFloat<W>) {
    if constexpr (kIsComplex<C>) {
      return C(static_cast<typename C::value_type>(w), 0);
    } else if constexpr (kIsFloat<C>) {
      return static_cast<C>(w);
    } else if constexpr (kIsBool<C>) {
      return w != 0;
    } else {
      return SaturateToInt<Tr>(w);
    }
  } else {
    if constexpr (kIsComplex<C>) {
      return C(static_cast<typename C::value_type>(w), 0);
    } else if constexpr (kIsBool<C>) {
      return w != 0;
    } else {
      // Integers wrap (C++20 conversions are modular); floats round once from the integer.
      return Tr::Round(static_cast<C>(w));
    }
  }
}

// --- bitcast-convert ---

int StreamBits(PrimitiveType t) { return t == PrimitiveType::kPred ? 8 : BitWidth(t); }

absl::StatusOr<Literal> BitcastConvert(Evaluator& ev, const Instruction& instr, const Literal& in) {
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  const int in_bits = StreamBits(in.element_type());
  const int out_bits = StreamBits(out->element_type());
  if (in.element_count() * in_bits != out->element_count() * out_bits) {
    return Invalid(instr, "operand and result have different bit sizes");
  }
  if (in_bits == out_bits && in_bits % 8 == 0) {
    std::memcpy(out->untyped_data(), in.untyped_data(), in.size_bytes());
    return out;
  }
  // Different widths (or 4-bit types): XLA bitcasts the bytes in memory order, which on a
  // little-endian machine is a bit stream with each element's low bits first.
  const int in_bytes = StorageBytes(in.element_type());
  const int out_bytes = StorageBytes(out->element_type());
  int64_t bit = 0;
  auto read_bit = [&](int64_t b) {
    const int64_t e = b / in_bits;
    const int64_t k = b % in_bits;
    return (in.untyped_data()[e * in_bytes + k / 8] >> (k % 8)) & 1;
  };
  for (int64_t e = 0; e < out->element_count(); ++e) {
    uint8_t* dst = out->untyped_data() + e * out_bytes;
    for (int k = 0; k < out_bits; ++k, ++bit) {
      if (read_bit(bit)) dst[k / 8] |= static_cast<uint8_t>(1u << (k % 8));
    }
    if (out->element_type() == PrimitiveType::kS4 && (dst[0] & 0x8)) dst[0] |= 0xf0;
  }
  return out;
}

// --- reduce-precision (XLA's bit-level algorithm, round to nearest even) ---

template <typename Fp, typename U>
Fp ReducePrecisionValue(Fp input, int exponent_bits, int mantissa_bits) {
  constexpr int kBits = sizeof(Fp) * 8;
  constexpr int kSrcMantissa = std::numeric_limits<Fp>::digits - 1;
  constexpr int kSrcExponent = kBits - 1 - kSrcMantissa;
  U v;
  std::memcpy(&v, &input, sizeof(Fp));
  if (mantissa_bits < kSrcMantissa) {
    const U last_bit_mask = U{1} << (kSrcMantissa - mantissa_bits);
    const U base_bias = (last_bit_mask >> 1) - 1;
    const U last_bit = (v & last_bit_mask) >> (kSrcMantissa - mantissa_bits);
    const U truncation_mask = ~(last_bit_mask - 1);
    v = (v + last_bit + base_bias) & truncation_mask;
  }
  if (exponent_bits < kSrcExponent) {
    const U sign_mask = U{1} << (kBits - 1);
    const U exp_mask = ((U{1} << kSrcExponent) - 1) << kSrcMantissa;
    const U exponent_bias = (U{1} << (kSrcExponent - 1)) - 1;
    const U reduced_bias = (U{1} << (exponent_bits - 1)) - 1;
    const U reduced_max = exponent_bias + reduced_bias;
    const U reduced_min = exponent_bias - reduced_bias;
    const U exponent = v & exp_mask;
    const bool overflows = exponent > (reduced_max << kSrcMantissa);
    const bool underflows = exponent <= (reduced_min << kSrcMantissa);
    const U signed_zero = v & sign_mask;
    const U signed_inf = signed_zero | exp_mask;
    if (overflows) v = signed_inf;
    if (underflows) v = signed_zero;
  }
  Fp result;
  std::memcpy(&result, &v, sizeof(Fp));
  if (std::isnan(input)) {
    result = mantissa_bits > 0 ? input : std::numeric_limits<Fp>::infinity();
  }
  return result;
}

absl::StatusOr<Literal> ReducePrecision(Evaluator& ev, const Instruction& instr,
                                        const Literal& in) {
  const int e = static_cast<int>(instr.exponent_bits);
  const int m = static_cast<int>(instr.mantissa_bits);
  if (e < 1 || m < 0) return Invalid(instr, "needs exponent_bits >= 1 and mantissa_bits >= 0");
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  if (absl::Status s = CheckCount(instr, in, out->element_count()); !s.ok()) return s;
  uint8_t* o = out->untyped_data();
  const uint8_t* a = in.untyped_data();
  const int64_t n = out->element_count();
  return DispatchType(in.element_type(), [&](auto tr) -> absl::StatusOr<Literal> {
    using Tr = decltype(tr);
    using C = typename Tr::C;
    if constexpr (std::is_same_v<C, float>) {
      for (int64_t i = 0; i < n; ++i) {
        Tr::Store(o, i, ReducePrecisionValue<float, uint32_t>(Tr::Load(a, i), e, m));
      }
      return *std::move(out);
    } else if constexpr (std::is_same_v<C, double>) {
      for (int64_t i = 0; i < n; ++i) {
        Tr::Store(o, i, ReducePrecisionValue<double, uint64_t>(Tr::Load(a, i), e, m));
      }
      return *std::move(out);
    } else {
      return NoSuchOp(instr.opcode(), Tr::kType);
    }
  });
}

// --- binary ---

absl::StatusOr<Literal> Binary(Evaluator& ev, const Instruction& instr, Operands& ops) {
  int64_t reused = -1;
  // compare and complex change the type, so they never reuse an operand.
  absl::StatusOr<Literal> out = ResultBuffer(ev, instr, ops, reused);
  if (!out.ok()) return out.status();
  const Literal& lhs = reused == 0 ? *out : ops[0];
  const Literal& rhs = reused == 1 ? *out : ops[1];
  const int64_t n = out->element_count();
  if (absl::Status s = CheckCount(instr, lhs, n); !s.ok()) return s;
  if (absl::Status s = CheckCount(instr, rhs, n); !s.ok()) return s;
  const PrimitiveType t = lhs.element_type();
  if (rhs.element_type() != t) return Invalid(instr, "operand element types differ");
  const uint8_t* a = lhs.untyped_data();
  const uint8_t* b = rhs.untyped_data();
  uint8_t* o = out->untyped_data();
  const int64_t sa = Step(lhs), sb = Step(rhs);
  const Opcode op = instr.opcode();
  absl::Status s;
  if (op == Opcode::kCompare) {
    if (!instr.comparison_direction.has_value()) return Invalid(instr, "has no direction");
    const ComparisonDirection dir = *instr.comparison_direction;
    const bool total = instr.comparison_type == ComparisonType::kFloatTotalOrder;
    s = DispatchType(t, [&](auto tr) -> absl::Status {
      using Tr = decltype(tr);
      for (int64_t i = 0; i < n; ++i) {
        o[i] = CompareValues(dir, total, Tr::Load(a, i * sa), Tr::Load(b, i * sb)) ? 1 : 0;
      }
      return absl::OkStatus();
    });
  } else if (op == Opcode::kComplex) {
    for (int64_t i = 0; i < n; ++i) {
      out->SetFromComplex(i, {lhs.GetAsDouble(i * sa), rhs.GetAsDouble(i * sb)});
    }
  } else {
    if (out->element_type() != t) return Invalid(instr, "result type differs from operands");
    s = DispatchType(t, [&](auto tr) -> absl::Status {
      using Tr = decltype(tr);
      return WithBinaryOp<Tr>(op, [&](auto fn) {
        for (int64_t i = 0; i < n; ++i) {
          Tr::Store(o, i, fn(Tr::Load(a, i * sa), Tr::Load(b, i * sb)));
        }
        return absl::OkStatus();
      });
    });
  }
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<Literal> Select(Evaluator& ev, const Instruction& instr, Operands& ops) {
  const Literal& pred = ops[0];
  const Literal& on_true = ops[1];
  const Literal& on_false = ops[2];
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  const int64_t n = out->element_count();
  for (const Literal* l : {&pred, &on_true, &on_false}) {
    if (absl::Status s = CheckCount(instr, *l, n); !s.ok()) return s;
  }
  if (on_true.element_type() != out->element_type() ||
      on_false.element_type() != out->element_type()) {
    return Invalid(instr, "branch types differ from the result");
  }
  const int64_t sp = Step(pred), st = Step(on_true), sf = Step(on_false);
  const int size = StorageBytes(out->element_type());
  DispatchBytes(size, [&](auto tag) {
    using E = decltype(tag);
    const uint8_t* p = pred.untyped_data();
    const uint8_t* t = on_true.untyped_data();
    const uint8_t* f = on_false.untyped_data();
    uint8_t* o = out->untyped_data();
    for (int64_t i = 0; i < n; ++i) {
      const uint8_t* src = p[i * sp] ? t + i * st * sizeof(E) : f + i * sf * sizeof(E);
      std::memcpy(o + i * sizeof(E), src, sizeof(E));
    }
  });
  return out;
}

absl::StatusOr<Literal> Clamp(Evaluator& ev, const Instruction& instr, Operands& ops) {
  const Literal& lo = ops[0];
  const Literal& x = ops[1];
  const Literal& hi = ops[2];
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  const int64_t n = out->element_count();
  for (const Literal* l : {&lo, &x, &hi}) {
    if (absl::Status s = CheckCount(instr, *l, n); !s.ok()) return s;
    if (l->element_type() != out->element_type()) return Invalid(instr, "types differ");
  }
  const int64_t sl = Step(lo), sx = Step(x), sh = Step(hi);
  absl::Status s = DispatchType(out->element_type(), [&](auto tr) -> absl::Status {
    using Tr = decltype(tr);
    using C = typename Tr::C;
    if constexpr (kIsComplex<C>) {
      return NoSuchOp(instr.opcode(), Tr::kType);
    } else {
      const uint8_t* pl = lo.untyped_data();
      const uint8_t* px = x.untyped_data();
      const uint8_t* ph = hi.untyped_data();
      uint8_t* o = out->untyped_data();
      for (int64_t i = 0; i < n; ++i) {
        const C l = Tr::Load(pl, i * sl), v = Tr::Load(px, i * sx), h = Tr::Load(ph, i * sh);
        if constexpr (kIsFloat<C>) {
          Tr::Store(o, i, FloatMin(FloatMax(v, l), h));
        } else {
          Tr::Store(o, i, std::min(std::max(v, l), h));
        }
      }
      return absl::OkStatus();
    }
  });
  if (!s.ok()) return s;
  return out;
}

}  // namespace

absl::StatusOr<Literal> ConvertLiteral(Evaluator& ev, const Literal& operand, PrimitiveType type) {
  Shape shape = operand.shape();
  shape.set_element_type(type);
  absl::StatusOr<Literal> out = ev.NewLiteral(shape);
  if (!out.ok()) return out.status();
  const uint8_t* a = operand.untyped_data();
  uint8_t* o = out->untyped_data();
  const int64_t n = operand.element_count();
  absl::Status s = DispatchType(operand.element_type(), [&](auto src) -> absl::Status {
    using Src = decltype(src);
    return DispatchType(type, [&](auto dst) -> absl::Status {
      using Dst = decltype(dst);
      for (int64_t i = 0; i < n; ++i) {
        Dst::Store(o, i, ConvertValue<Dst>(Widen(Src::Load(a, i))));
      }
      return absl::OkStatus();
    });
  });
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<Literal> HandleElementwise(Evaluator& ev, const Instruction& instr, Operands& ops) {
  const Opcode op = instr.opcode();
  switch (op) {
    case Opcode::kSelect:
      if (ops.size() != 3) return Invalid(instr, "needs 3 operands");
      return Select(ev, instr, ops);
    case Opcode::kClamp:
      if (ops.size() != 3) return Invalid(instr, "needs 3 operands");
      return Clamp(ev, instr, ops);
    case Opcode::kStochasticConvert:
      return absl::UnimplementedError("the evaluator does not implement stochastic-convert");
    default:
      break;
  }
  if (IsElementwiseBinary(op)) {
    if (ops.size() != 2) return Invalid(instr, "needs 2 operands");
    return Binary(ev, instr, ops);
  }
  if (ops.size() != 1) return Invalid(instr, "needs 1 operand");
  const Literal& in = ops[0];
  if (!instr.shape().IsArray() || !in.shape().IsArray()) {
    return Invalid(instr, "needs array operand and result");
  }
  switch (op) {
    case Opcode::kConvert: {
      if (in.element_count() != instr.shape().ElementCount()) {
        return Invalid(instr, "operand and result sizes differ");
      }
      absl::StatusOr<Literal> out = ConvertLiteral(ev, in, instr.shape().element_type());
      if (!out.ok()) return out.status();
      return out;
    }
    case Opcode::kBitcastConvert:
      return BitcastConvert(ev, instr, in);
    case Opcode::kReducePrecision:
      return ReducePrecision(ev, instr, in);
    case Opcode::kIsFinite:
      return IsFinite(ev, instr, in);
    case Opcode::kReal:
    case Opcode::kImag:
      return ComplexPart(ev, instr, in);
    case Opcode::kAbs:
      if (IsComplex(in.element_type())) return ComplexPart(ev, instr, in);
      return Unary(ev, instr, ops);
    case Opcode::kCopy:
      if (in.element_count() == instr.shape().ElementCount()) return ops.Take(0);
      return Invalid(instr, "operand and result sizes differ");
    default:
      return Unary(ev, instr, ops);
  }
}

}  // namespace mltune::ir::eval
