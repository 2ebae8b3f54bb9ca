// Bit-exact conversions for the narrow float types (f16, bf16, the f8 family), with IEEE
// round-to-nearest-even, so the evaluator stores and reads them as XLA does.
#pragma once

#include <cstdint>

#include "ir/primitive_type.h"

namespace mltune::ir {

float HalfToFloat(uint16_t bits);
uint16_t FloatToHalf(float value);
float BF16ToFloat(uint16_t bits);
uint16_t FloatToBF16(float value);

// `type` must satisfy IsF8(). Out-of-range values become inf where the format has one, else NaN.
double F8ToDouble(PrimitiveType type, uint8_t bits);
uint8_t DoubleToF8(PrimitiveType type, double value);

}  // namespace mltune::ir
