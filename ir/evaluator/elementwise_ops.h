// Internal to the evaluator: XLA's scalar semantics of the element-wise binary ops, as typed
// functors picked once per op (elementwise ops, reduce/scatter/map fast paths share them).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <complex>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/attributes.h"
#include "ir/evaluator/element_types.h"
#include "ir/opcode.h"

namespace mltune::ir::eval {

template <typename C>
C IntDivide(C a, C b) {
  if (b == 0) return static_cast<C>(-1);  // XLA: x / 0 = -1 (all ones)
  if constexpr (std::is_signed_v<C>) {
    if (a == std::numeric_limits<C>::min() && b == -1) return a;  // INT_MIN / -1 = INT_MIN
  }
  return static_cast<C>(a / b);
}

template <typename C>
C IntRemainder(C a, C b) {
  if (b == 0) return a;  // XLA: x % 0 = x
  if constexpr (std::is_signed_v<C>) {
    if (a == std::numeric_limits<C>::min() && b == -1) return 0;
  }
  return static_cast<C>(a % b);
}

// Integer power by squaring, wrapping; negative exponents give 1 for base 1 and 0 otherwise
// (XLA's evaluator).
template <typename C>
C IntPower(C base, C exponent) {
  if (base == 1 || exponent == 0) return 1;
  if constexpr (std::is_signed_v<C>) {
    if (exponent < 0) return 0;
  }
  using W = WideUnsigned<C>;
  W result = 1;
  W b = static_cast<W>(base);
  uint64_t e = static_cast<uint64_t>(exponent);
  while (e != 0) {
    if (e & 1) result *= b;
    b *= b;
    e >>= 1;
  }
  return static_cast<C>(result);
}

// IEEE 754-2019 maximum/minimum: NaN propagates, +0 > -0.
template <typename C>
C FloatMax(C a, C b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) return std::signbit(a) ? b : a;
  return a > b ? a : b;
}
template <typename C>
C FloatMin(C a, C b) {
  if (std::isnan(a)) return a;
  if (std::isnan(b)) return b;
  if (a == b) return std::signbit(a) ? a : b;
  return a < b ? a : b;
}

template <typename C>
C FloatPower(C a, C b) {
  if constexpr (kIsComplex<C>) {
    if (a == C(1) || b == C(0)) return C(1);
    return std::pow(a, b);
  } else {
    return std::pow(a, b);
  }
}

inline absl::Status NoSuchOp(Opcode op, PrimitiveType t) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(OpcodeName(op)), " is not defined on ",
                                                 std::string(PrimitiveTypeName(t))));
}

// Calls f(fn) where fn(C a, C b) -> C computes binary `op` on the type of Tr (before the store's
// rounding). Returns an error for ops not defined on the type.
template <typename Tr, typename F>
absl::Status WithBinaryOp(Opcode op, F&& f) {
  using C = typename Tr::C;
  switch (op) {
    case Opcode::kAdd:
      return f([](C a, C b) { return WrapAdd(a, b); });
    case Opcode::kSubtract:
      return f([](C a, C b) { return WrapSub(a, b); });
    case Opcode::kMultiply:
      return f([](C a, C b) { return WrapMul(a, b); });
    case Opcode::kDivide:
      if constexpr (kIsInt<C>) {
        return f([](C a, C b) { return IntDivide(a, b); });
      } else if constexpr (!kIsBool<C>) {
        return f([](C a, C b) { return a / b; });
      }
      break;
    case Opcode::kRemainder:
      if constexpr (kIsInt<C>) {
        return f([](C a, C b) { return IntRemainder(a, b); });
      } else if constexpr (kIsFloat<C>) {
        return f([](C a, C b) { return std::fmod(a, b); });
      }
      break;
    case Opcode::kMaximum:
      if constexpr (kIsFloat<C>) {
        return f([](C a, C b) { return FloatMax(a, b); });
      } else if constexpr (!kIsComplex<C>) {
        return f([](C a, C b) { return std::max(a, b); });
      }
      break;
    case Opcode::kMinimum:
      if constexpr (kIsFloat<C>) {
        return f([](C a, C b) { return FloatMin(a, b); });
      } else if constexpr (!kIsComplex<C>) {
        return f([](C a, C b) { return std::min(a, b); });
      }
      break;
    case Opcode::kPower:
      if constexpr (kIsInt<C>) {
        return f([](C a, C b) { return IntPower(a, b); });
      } else if constexpr (kIsBool<C>) {
        return f([](C a, C b) { return a || !b; });
      } else {
        return f([](C a, C b) { return FloatPower(a, b); });
      }
    case Opcode::kAtan2:
      if constexpr (kIsFloat<C>) {
        return f([](C a, C b) { return std::atan2(a, b); });
      }
      break;
    case Opcode::kAnd:
      if constexpr (kIsBool<C>) {
        return f([](C a, C b) { return a && b; });
      } else if constexpr (kIsInt<C>) {
        return f([](C a, C b) { return static_cast<C>(a & b); });
      }
      break;
    case Opcode::kOr:
      if constexpr (kIsBool<C>) {
        return f([](C a, C b) { return a || b; });
      } else if constexpr (kIsInt<C>) {
        return f([](C a, C b) { return static_cast<C>(a | b); });
      }
      break;
    case Opcode::kXor:
      if constexpr (kIsBool<C>) {
        return f([](C a, C b) { return a != b; });
      } else if constexpr (kIsInt<C>) {
        return f([](C a, C b) { return static_cast<C>(a ^ b); });
      }
      break;
    case Opcode::kShiftLeft:
      if constexpr (kIsInt<C>) {
        return f([](C a, C b) {
          const uint64_t amount = LogicalBits<Tr>(b);
          if (amount >= static_cast<uint64_t>(Tr::kBits)) return C{0};
          return FromLogicalBits<Tr>(LogicalBits<Tr>(a) << amount);
        });
      }
      break;
    case Opcode::kShiftRightLogical:
      if constexpr (kIsInt<C>) {
        return f([](C a, C b) {
          const uint64_t amount = LogicalBits<Tr>(b);
          if (amount >= static_cast<uint64_t>(Tr::kBits)) return C{0};
          return FromLogicalBits<Tr>(LogicalBits<Tr>(a) >> amount);
        });
      }
      break;
    case Opcode::kShiftRightArithmetic:
      if constexpr (kIsInt<C>) {
        return f([](C a, C b) {
          const uint64_t amount = LogicalBits<Tr>(b);
          // Sign of the logical-width value: for unsigned types the top logical bit.
          const uint64_t bits = LogicalBits<Tr>(a);
          const bool negative = (bits >> (Tr::kBits - 1)) & 1;
          if (amount >= static_cast<uint64_t>(Tr::kBits)) {
            return FromLogicalBits<Tr>(negative ? ~uint64_t{0} : 0);
          }
          uint64_t shifted = bits >> amount;
          if (negative && amount > 0) shifted |= ~uint64_t{0} << (Tr::kBits - amount);
          return FromLogicalBits<Tr>(shifted);
        });
      }
      break;
    default:
      break;
  }
  return NoSuchOp(op, Tr::kType);
}

// Comparison of two compute values with XLA's direction and comparison type.
template <typename C>
bool CompareValues(ComparisonDirection dir, bool total_order, C a, C b) {
  if constexpr (kIsComplex<C>) {
    switch (dir) {
      case ComparisonDirection::kEq:
        return a == b;
      case ComparisonDirection::kNe:
        return a != b;
      default:
        return false;  // the verifier rejects ordered complex comparisons
    }
  } else {
    if constexpr (kIsFloat<C>) {
      if (total_order) {
        return CompareValues(dir, false, TotalOrderKey(a), TotalOrderKey(b));
      }
    }
    switch (dir) {
      case ComparisonDirection::kEq:
        return a == b;
      case ComparisonDirection::kNe:
        return a != b;
      case ComparisonDirection::kGe:
        return a >= b;
      case ComparisonDirection::kGt:
        return a > b;
      case ComparisonDirection::kLe:
        return a <= b;
      case ComparisonDirection::kLt:
        return a < b;
    }
    return false;
  }
}

}  // namespace mltune::ir::eval
