// Internal to the evaluator: per-element-type traits (storage type, compute type, load/store with
// XLA's rounding and wrapping) and a dispatcher that picks the traits once per op, so inner loops
// are typed code rather than a type switch per element.
#pragma once

#include <bit>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/float_types.h"
#include "ir/primitive_type.h"

namespace mltune::ir::eval {

template <typename T>
struct IsComplexT : std::false_type {};
template <typename T>
struct IsComplexT<std::complex<T>> : std::true_type {};
template <typename C>
inline constexpr bool kIsComplex = IsComplexT<C>::value;
template <typename C>
inline constexpr bool kIsFloat = std::is_floating_point_v<C>;
template <typename C>
inline constexpr bool kIsBool = std::is_same_v<C, bool>;
template <typename C>
inline constexpr bool kIsInt = std::is_integral_v<C> && !kIsBool<C>;

// Native element types: storage and compute type are the same.
template <PrimitiveType kT, typename S, int kBitWidth>
struct NativeTraits {
  using Storage = S;
  using C = S;
  static constexpr PrimitiveType kType = kT;
  static constexpr int kBits = kBitWidth;
  static C Load(const uint8_t* base, int64_t i) {
    S s;
    std::memcpy(&s, base + i * sizeof(S), sizeof(S));
    return s;
  }
  static void Store(uint8_t* base, int64_t i, C v) {
    std::memcpy(base + i * sizeof(S), &v, sizeof(S));
  }
  static C Round(C v) { return v; }
};

template <PrimitiveType kT>
struct Traits;

template <>
struct Traits<PrimitiveType::kPred> {
  using Storage = uint8_t;
  using C = bool;
  static constexpr PrimitiveType kType = PrimitiveType::kPred;
  static constexpr int kBits = 1;
  static C Load(const uint8_t* base, int64_t i) { return base[i] != 0; }
  static void Store(uint8_t* base, int64_t i, C v) { base[i] = v ? 1 : 0; }
  static C Round(C v) { return v; }
};

// s4/u4 take one byte per element; arithmetic runs in 8 bits and stores wrap to 4 bits.
template <>
struct Traits<PrimitiveType::kS4> {
  using Storage = int8_t;
  using C = int8_t;
  static constexpr PrimitiveType kType = PrimitiveType::kS4;
  static constexpr int kBits = 4;
  static C Round(C v) {
    const int low = static_cast<uint8_t>(v) & 0xf;
    return static_cast<C>(low >= 8 ? low - 16 : low);
  }
  static C Load(const uint8_t* base, int64_t i) { return static_cast<C>(base[i]); }
  static void Store(uint8_t* base, int64_t i, C v) { base[i] = static_cast<uint8_t>(Round(v)); }
};

template <>
struct Traits<PrimitiveType::kU4> {
  using Storage = uint8_t;
  using C = uint8_t;
  static constexpr PrimitiveType kType = PrimitiveType::kU4;
  static constexpr int kBits = 4;
  static C Round(C v) { return static_cast<C>(v & 0xf); }
  static C Load(const uint8_t* base, int64_t i) { return base[i]; }
  static void Store(uint8_t* base, int64_t i, C v) { base[i] = Round(v); }
};

template <>
struct Traits<PrimitiveType::kS8> : NativeTraits<PrimitiveType::kS8, int8_t, 8> {};
template <>
struct Traits<PrimitiveType::kS16> : NativeTraits<PrimitiveType::kS16, int16_t, 16> {};
template <>
struct Traits<PrimitiveType::kS32> : NativeTraits<PrimitiveType::kS32, int32_t, 32> {};
template <>
struct Traits<PrimitiveType::kS64> : NativeTraits<PrimitiveType::kS64, int64_t, 64> {};
template <>
struct Traits<PrimitiveType::kU8> : NativeTraits<PrimitiveType::kU8, uint8_t, 8> {};
template <>
struct Traits<PrimitiveType::kU16> : NativeTraits<PrimitiveType::kU16, uint16_t, 16> {};
template <>
struct Traits<PrimitiveType::kU32> : NativeTraits<PrimitiveType::kU32, uint32_t, 32> {};
template <>
struct Traits<PrimitiveType::kU64> : NativeTraits<PrimitiveType::kU64, uint64_t, 64> {};
template <>
struct Traits<PrimitiveType::kF32> : NativeTraits<PrimitiveType::kF32, float, 32> {};
template <>
struct Traits<PrimitiveType::kF64> : NativeTraits<PrimitiveType::kF64, double, 64> {};
template <>
struct Traits<PrimitiveType::kC64> : NativeTraits<PrimitiveType::kC64, std::complex<float>, 64> {};
template <>
struct Traits<PrimitiveType::kC128>
    : NativeTraits<PrimitiveType::kC128, std::complex<double>, 128> {};

// f16 and bf16 compute in float and round to nearest even on every store, as XLA's CPU backend
// does (Eigen::half / bfloat16 arithmetic upcasts to float).
template <>
struct Traits<PrimitiveType::kF16> {
  using Storage = uint16_t;
  using C = float;
  static constexpr PrimitiveType kType = PrimitiveType::kF16;
  static constexpr int kBits = 16;
  static C Load(const uint8_t* base, int64_t i) {
    uint16_t b;
    std::memcpy(&b, base + i * 2, 2);
    return HalfToFloat(b);
  }
  static void Store(uint8_t* base, int64_t i, C v) {
    const uint16_t b = FloatToHalf(v);
    std::memcpy(base + i * 2, &b, 2);
  }
  static C Round(C v) { return HalfToFloat(FloatToHalf(v)); }
};

template <>
struct Traits<PrimitiveType::kBF16> {
  using Storage = uint16_t;
  using C = float;
  static constexpr PrimitiveType kType = PrimitiveType::kBF16;
  static constexpr int kBits = 16;
  static C Load(const uint8_t* base, int64_t i) {
    uint16_t b;
    std::memcpy(&b, base + i * 2, 2);
    return BF16ToFloat(b);
  }
  static void Store(uint8_t* base, int64_t i, C v) {
    const uint16_t b = FloatToBF16(v);
    std::memcpy(base + i * 2, &b, 2);
  }
  static C Round(C v) { return BF16ToFloat(FloatToBF16(v)); }
};

template <PrimitiveType kT>
struct F8Traits {
  using Storage = uint8_t;
  using C = float;
  static constexpr PrimitiveType kType = kT;
  static constexpr int kBits = 8;
  static C Load(const uint8_t* base, int64_t i) {
    return static_cast<float>(F8ToDouble(kT, base[i]));
  }
  static void Store(uint8_t* base, int64_t i, C v) { base[i] = DoubleToF8(kT, v); }
  static C Round(C v) { return static_cast<float>(F8ToDouble(kT, DoubleToF8(kT, v))); }
};
template <>
struct Traits<PrimitiveType::kF8E5M2> : F8Traits<PrimitiveType::kF8E5M2> {};
template <>
struct Traits<PrimitiveType::kF8E4M3FN> : F8Traits<PrimitiveType::kF8E4M3FN> {};
template <>
struct Traits<PrimitiveType::kF8E4M3B11FNUZ> : F8Traits<PrimitiveType::kF8E4M3B11FNUZ> {};
template <>
struct Traits<PrimitiveType::kF8E5M2FNUZ> : F8Traits<PrimitiveType::kF8E5M2FNUZ> {};
template <>
struct Traits<PrimitiveType::kF8E4M3FNUZ> : F8Traits<PrimitiveType::kF8E4M3FNUZ> {};

#define MLTUNE_EVAL_ARRAY_TYPES(V) \
  V(kPred)                         \
  V(kS4)                           \
  V(kS8)                           \
  V(kS16)                          \
  V(kS32)                          \
  V(kS64)                          \
  V(kU4)                           \
  V(kU8)                           \
  V(kU16)                          \
  V(kU32)                          \
  V(kU64)                          \
  V(kF16)                          \
  V(kBF16)                         \
  V(kF32)                          \
  V(kF64)                          \
  V(kF8E5M2)                       \
  V(kF8E4M3FN)                     \
  V(kF8E4M3B11FNUZ)                \
  V(kF8E5M2FNUZ)                   \
  V(kF8E4M3FNUZ)                   \
  V(kC64)                          \
  V(kC128)

// Calls f(Traits<t>{}) for an array element type. F must return something constructible from
// absl::Status (absl::Status or absl::StatusOr<...>).
template <typename F>
auto DispatchType(PrimitiveType t, F&& f) -> decltype(f(Traits<PrimitiveType::kF32>{})) {
  switch (t) {
#define MLTUNE_EVAL_CASE(name) \
  case PrimitiveType::name:    \
    return f(Traits<PrimitiveType::name>{});
    MLTUNE_EVAL_ARRAY_TYPES(MLTUNE_EVAL_CASE)
#undef MLTUNE_EVAL_CASE
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("no element arithmetic for type ", std::string(PrimitiveTypeName(t))));
}

// Wrapping integer arithmetic without signed-overflow UB: computes in a wide unsigned type.
template <typename C>
using WideUnsigned = std::conditional_t<(sizeof(C) <= 4), uint32_t, uint64_t>;

template <typename C>
C WrapAdd(C a, C b) {
  if constexpr (kIsInt<C>) {
    using W = WideUnsigned<C>;
    return static_cast<C>(static_cast<W>(a) + static_cast<W>(b));
  } else if constexpr (kIsBool<C>) {
    return a || b;
  } else {
    return a + b;
  }
}

template <typename C>
C WrapSub(C a, C b) {
  if constexpr (kIsInt<C>) {
    using W = WideUnsigned<C>;
    return static_cast<C>(static_cast<W>(a) - static_cast<W>(b));
  } else if constexpr (kIsBool<C>) {
    return a != b;
  } else {
    return a - b;
  }
}

template <typename C>
C WrapMul(C a, C b) {
  if constexpr (kIsInt<C>) {
    using W = WideUnsigned<C>;
    return static_cast<C>(static_cast<W>(a) * static_cast<W>(b));
  } else if constexpr (kIsBool<C>) {
    return a && b;
  } else {
    return a * b;
  }
}

// acc + a * b in the compute type (dot, convolution). Bool uses or/and.
template <typename C>
C MulAdd(C acc, C a, C b) {
  return WrapAdd(acc, WrapMul(a, b));
}

// The bits of a value as an unsigned number of the type's logical width.
template <typename Tr>
uint64_t LogicalBits(typename Tr::C v) {
  const uint64_t bits = static_cast<uint64_t>(v);
  if constexpr (Tr::kBits >= 64) {
    return bits;
  } else {
    return bits & ((uint64_t{1} << Tr::kBits) - 1);
  }
}

// Inverse of LogicalBits: the value whose low kBits bits are `bits` (sign-extended if signed).
template <typename Tr>
typename Tr::C FromLogicalBits(uint64_t bits) {
  using C = typename Tr::C;
  return Tr::Round(static_cast<C>(bits));
}

// Float total order key (XLA's TOTALORDER): -NaN < -inf < ... < -0 < +0 < ... < inf < +NaN.
inline int64_t TotalOrderKey(double v) {
  int64_t bits;
  std::memcpy(&bits, &v, 8);
  return bits < 0 ? bits ^ std::numeric_limits<int64_t>::max() : bits;
}
inline int32_t TotalOrderKey(float v) {
  int32_t bits;
  std::memcpy(&bits, &v, 4);
  return bits < 0 ? bits ^ std::numeric_limits<int32_t>::max() : bits;
}

// Promotes a compute value to a wide value of the same kind, used by convert.
template <typename C>
auto Widen(C v) {
  if constexpr (kIsComplex<C>) {
    return std::complex<double>(v.real(), v.imag());
  } else if constexpr (kIsFloat<C>) {
    return static_cast<double>(v);
  } else if constexpr (kIsBool<C>) {
    return static_cast<int64_t>(v ? 1 : 0);
  } else if constexpr (std::is_signed_v<C>) {
    return static_cast<int64_t>(v);
  } else {
    return static_cast<uint64_t>(v);
  }
}

}  // namespace mltune::ir::eval
