#include "ir/float_types.h"

#include <array>
#include <cmath>
#include <cstring>
#include <limits>

namespace mltune::ir {
namespace {

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

struct F8Format {
  int exp_bits;
  int mant_bits;
  int bias;
  bool ieee;  // IEEE-like: all-ones exponent is inf/NaN
  bool fnuz;  // 0x80 is the only NaN, no negative zero, no inf
};

F8Format FormatOf(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kF8E5M2:
      return {5, 2, 15, true, false};
    case PrimitiveType::kF8E4M3FN:
      return {4, 3, 7, false, false};
    case PrimitiveType::kF8E4M3B11FNUZ:
      return {4, 3, 11, false, true};
    case PrimitiveType::kF8E5M2FNUZ:
      return {5, 2, 16, false, true};
    case PrimitiveType::kF8E4M3FNUZ:
      return {4, 3, 8, false, true};
    default:
      return {5, 2, 15, true, false};
  }
}

double DecodeF8(const F8Format& f, uint8_t bits) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (f.fnuz && bits == 0x80) return nan;
  const bool negative = bits & 0x80;
  const int exp_mask = (1 << f.exp_bits) - 1;
  const int exp = (bits >> f.mant_bits) & exp_mask;
  const int mant = bits & ((1 << f.mant_bits) - 1);
  if (f.ieee && exp == exp_mask) {
    if (mant != 0) return nan;
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  }
  if (!f.ieee && !f.fnuz && exp == exp_mask && mant == (1 << f.mant_bits) - 1) return nan;
  double value;
  if (exp == 0) {
    value = std::ldexp(static_cast<double>(mant), 1 - f.bias - f.mant_bits);
  } else {
    value = std::ldexp(static_cast<double>(mant + (1 << f.mant_bits)), exp - f.bias - f.mant_bits);
  }
  return negative ? -value : value;
}

// Every f8 type has 256 codes: decode them all once and round by nearest search. Simple and
// obviously right, which is what a reference evaluator needs.
struct F8Table {
  std::array<double, 256> values;
  double max_finite = 0;
};

const F8Table& TableFor(PrimitiveType t) {
  static const auto make = [](PrimitiveType type) {
    F8Table table;
    F8Format f = FormatOf(type);
    for (int i = 0; i < 256; ++i) {
      table.values[i] = DecodeF8(f, static_cast<uint8_t>(i));
      if (std::isfinite(table.values[i])) {
        table.max_finite = std::max(table.max_finite, table.values[i]);
      }
    }
    return table;
  };
  static const F8Table e5m2 = make(PrimitiveType::kF8E5M2);
  static const F8Table e4m3fn = make(PrimitiveType::kF8E4M3FN);
  static const F8Table e4m3b11 = make(PrimitiveType::kF8E4M3B11FNUZ);
  static const F8Table e5m2fnuz = make(PrimitiveType::kF8E5M2FNUZ);
  static const F8Table e4m3fnuz = make(PrimitiveType::kF8E4M3FNUZ);
  switch (t) {
    case PrimitiveType::kF8E4M3FN:
      return e4m3fn;
    case PrimitiveType::kF8E4M3B11FNUZ:
      return e4m3b11;
    case PrimitiveType::kF8E5M2FNUZ:
      return e5m2fnuz;
    case PrimitiveType::kF8E4M3FNUZ:
      return e4m3fnuz;
    default:
      return e5m2;
  }
}

uint8_t NanCode(const F8Format& f) { return f.fnuz ? 0x80 : 0x7f; }

}  // namespace

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t mant = h & 0x3ff;
  if (exp == 0x1f) return BitsFloat(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  return BitsFloat(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t FloatToHalf(float value) {
  const uint32_t u = FloatBits(value);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u) {  // inf or NaN; keep NaN quiet and non-zero
    return sign | (abs > 0x7f800000u ? 0x7e00 : 0x7c00);
  }
  if (abs >= 0x477ff000u) return sign | 0x7c00;  // rounds to >= 65520: overflow to inf
  if (abs < 0x38800000u) {                        // below the smallest normal half: subnormal
    // value * 2^24 rounded to nearest even gives the subnormal mantissa.
    float scaled = std::fabs(value) * 16777216.0f;
    uint32_t m = static_cast<uint32_t>(std::nearbyint(scaled));
    return sign | static_cast<uint16_t>(m);
  }
  // Normal: rebias the exponent and round the 13 dropped mantissa bits to nearest even.
  uint32_t rebased = abs - (112u << 23);
  uint32_t rounded = rebased + 0xfffu + ((rebased >> 13) & 1u);
  return sign | static_cast<uint16_t>(rounded >> 13);
}

float BF16ToFloat(uint16_t bits) { return BitsFloat(static_cast<uint32_t>(bits) << 16); }

uint16_t FloatToBF16(float value) {
  uint32_t u = FloatBits(value);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

double F8ToDouble(PrimitiveType type, uint8_t bits) { return TableFor(type).values[bits]; }

uint8_t DoubleToF8(PrimitiveType type, double value) {
  const F8Format f = FormatOf(type);
  const F8Table& table = TableFor(type);
  if (std::isnan(value)) return NanCode(f);
  const bool negative = std::signbit(value);
  const double mag = std::fabs(value);
  if (std::isinf(mag)) {
    if (f.ieee) return negative ? 0xfc : 0x7c;
    return NanCode(f);
  }
  // Search the non-negative codes (0x00..0x7f) for the nearest; ties go to the even code.
  int best = -1;
  double best_err = 0;
  for (int code = 0; code < 0x80; ++code) {
    double v = table.values[code];
    if (!std::isfinite(v)) continue;
    double err = std::fabs(v - mag);
    if (best < 0 || err < best_err || (err == best_err && (code & 1) == 0)) {
      best = code;
      best_err = err;
    }
  }
  // Beyond the largest finite value by more than half an ulp: overflow.
  const double top = table.max_finite;
  const double ulp = top - table.values[best > 0 ? best - 1 : 0];
  if (mag > top && mag - top >= ulp / 2 && !(mag - top == ulp / 2 && (best & 1) == 0)) {
    if (f.ieee) return negative ? 0xfc : 0x7c;
    return NanCode(f);
  }
  uint8_t code = static_cast<uint8_t>(best);
  if (negative && !(f.fnuz && code == 0)) code |= 0x80;  // fnuz has no negative zero
  return code;
}

}  // namespace mltune::ir
