// Element types of HLO arrays, named exactly as XLA prints them (f32, bf16, f8e4m3fn, ...).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace mltune::ir {

enum class PrimitiveType : uint8_t {
  kInvalid,
  kPred,
  kS4,
  kS8,
  kS16,
  kS32,
  kS64,
  kU4,
  kU8,
  kU16,
  kU32,
  kU64,
  kF16,
  kBF16,
  kF32,
  kF64,
  kF8E5M2,
  kF8E4M3FN,
  kF8E4M3B11FNUZ,
  kF8E5M2FNUZ,
  kF8E4M3FNUZ,
  kC64,
  kC128,
  kToken,
  kTuple,
  kOpaque,
};

std::string_view PrimitiveTypeName(PrimitiveType t);
std::optional<PrimitiveType> ParsePrimitiveType(std::string_view name);

// Logical bit width of one element (4 for s4/u4, 1-byte storage for pred).
int BitWidth(PrimitiveType t);
// Bytes one element occupies in a Literal buffer (s4/u4 and pred take one byte each).
int StorageBytes(PrimitiveType t);

bool IsArrayType(PrimitiveType t);  // anything but tuple, token, opaque, invalid
bool IsIntegral(PrimitiveType t);   // s* and u*
bool IsSignedIntegral(PrimitiveType t);
bool IsUnsignedIntegral(PrimitiveType t);
bool IsFloatingPoint(PrimitiveType t);  // f*, bf16, f8*
bool IsF8(PrimitiveType t);
bool IsComplex(PrimitiveType t);

}  // namespace mltune::ir
