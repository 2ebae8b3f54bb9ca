#include "ir/primitive_type.h"

#include <array>
#include <utility>

namespace mltune::ir {
namespace {

constexpr std::array<std::pair<PrimitiveType, std::string_view>, 26> kNames = {{
    {PrimitiveType::kInvalid, "invalid"},
    {PrimitiveType::kPred, "pred"},
    {PrimitiveType::kS4, "s4"},
    {PrimitiveType::kS8, "s8"},
    {PrimitiveType::kS16, "s16"},
    {PrimitiveType::kS32, "s32"},
    {PrimitiveType::kS64, "s64"},
    {PrimitiveType::kU4, "u4"},
    {PrimitiveType::kU8, "u8"},
    {PrimitiveType::kU16, "u16"},
    {PrimitiveType::kU32, "u32"},
    {PrimitiveType::kU64, "u64"},
    {PrimitiveType::kF16, "f16"},
    {PrimitiveType::kBF16, "bf16"},
    {PrimitiveType::kF32, "f32"},
    {PrimitiveType::kF64, "f64"},
    {PrimitiveType::kF8E5M2, "f8e5m2"},
    {PrimitiveType::kF8E4M3FN, "f8e4m3fn"},
    {PrimitiveType::kF8E4M3B11FNUZ, "f8e4m3b11fnuz"},
    {PrimitiveType::kF8E5M2FNUZ, "f8e5m2fnuz"},
    {PrimitiveType::kF8E4M3FNUZ, "f8e4m3fnuz"},
    {PrimitiveType::kC64, "c64"},
    {PrimitiveType::kC128, "c128"},
    {PrimitiveType::kToken, "token"},
    {PrimitiveType::kTuple, "tuple"},
    {PrimitiveType::kOpaque, "opaque"},
}};

}  // namespace

std::string_view PrimitiveTypeName(PrimitiveType t) {
  for (const auto& [type, name] : kNames) {
    if (type == t) return name;
  }
  return "invalid";
}

std::optional<PrimitiveType> ParsePrimitiveType(std::string_view name) {
  for (const auto& [type, n] : kNames) {
    if (n == name && type != PrimitiveType::kInvalid && type != PrimitiveType::kTuple) return type;
  }
  return std::nullopt;
}

int BitWidth(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kPred:
      return 1;
    case PrimitiveType::kS4:
    case PrimitiveType::kU4:
      return 4;
    case PrimitiveType::kS8:
    case PrimitiveType::kU8:
    case PrimitiveType::kF8E5M2:
    case PrimitiveType::kF8E4M3FN:
    case PrimitiveType::kF8E4M3B11FNUZ:
    case PrimitiveType::kF8E5M2FNUZ:
    case PrimitiveType::kF8E4M3FNUZ:
      return 8;
    case PrimitiveType::kS16:
    case PrimitiveType::kU16:
    case PrimitiveType::kF16:
    case PrimitiveType::kBF16:
      return 16;
    case PrimitiveType::kS32:
    case PrimitiveType::kU32:
    case PrimitiveType::kF32:
      return 32;
    case PrimitiveType::kS64:
    case PrimitiveType::kU64:
    case PrimitiveType::kF64:
    case PrimitiveType::kC64:
      return 64;
    case PrimitiveType::kC128:
      return 128;
    default:
      return 0;
  }
}

int StorageBytes(PrimitiveType t) {
  int bits = BitWidth(t);
  return bits == 0 ? 0 : (bits < 8 ? 1 : bits / 8);
}

bool IsArrayType(PrimitiveType t) {
  return t != PrimitiveType::kInvalid && t != PrimitiveType::kTuple &&
         t != PrimitiveType::kToken && t != PrimitiveType::kOpaque;
}

bool IsSignedIntegral(PrimitiveType t) {
  return t == PrimitiveType::kS4 || t == PrimitiveType::kS8 || t == PrimitiveType::kS16 ||
         t == PrimitiveType::kS32 || t == PrimitiveType::kS64;
}

bool IsUnsignedIntegral(PrimitiveType t) {
  return t == PrimitiveType::kU4 || t == PrimitiveType::kU8 || t == PrimitiveType::kU16 ||
         t == PrimitiveType::kU32 || t == PrimitiveType::kU64;
}

bool IsIntegral(PrimitiveType t) { return IsSignedIntegral(t) || IsUnsignedIntegral(t); }

bool IsF8(PrimitiveType t) {
  return t == PrimitiveType::kF8E5M2 || t == PrimitiveType::kF8E4M3FN ||
         t == PrimitiveType::kF8E4M3B11FNUZ || t == PrimitiveType::kF8E5M2FNUZ ||
         t == PrimitiveType::kF8E4M3FNUZ;
}

bool IsFloatingPoint(PrimitiveType t) {
  return t == PrimitiveType::kF16 || t == PrimitiveType::kBF16 || t == PrimitiveType::kF32 ||
         t == PrimitiveType::kF64 || IsF8(t);
}

bool IsComplex(PrimitiveType t) { return t == PrimitiveType::kC64 || t == PrimitiveType::kC128; }

}  // namespace mltune::ir
