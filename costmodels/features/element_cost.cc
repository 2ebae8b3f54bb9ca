// What one element of an elementwise op costs in the CPU backend's generated code.
//
// The op-level features count every transcendental alike, but the backend's code does not: exp,
// tanh and logistic are the prelude's vectorizable polynomials (under 1 ns an element), sqrt
// inlines to one instruction, while log, sin, atan2, erf, pow and fmod are scalar libm calls
// (4-25 ns) that also keep the loop around them from vectorizing. Scale-Mixtures' matrix-vector
// kernel, five atan2 per element, ran 10x longer than models that counted it as five exp
// predicted.
//
// The figures are `build/release/bench/element_costs` on the development machine (2026-11-25):
// nanoseconds per element of each op alone over 65,536 f32 values, loads and stores included, on
// the inputs `mltune collect` measures kernels with (uniform in [-1, 1): log and atan2 there take
// slower paths than on positive values), rounded. The classes matter, not the digits.
#include "costmodels/features/kernel_graph.h"
#include "ir/primitive_type.h"

namespace mltune::costmodels::features {

using ir::Opcode;

bool CallsScalarLibm(Opcode op, ir::PrimitiveType type) {
  if (!ir::IsFloatingPoint(type)) return false;
  switch (op) {
    case Opcode::kLog:
    case Opcode::kLog1p:
    case Opcode::kExpm1:
    case Opcode::kSin:
    case Opcode::kCos:
    case Opcode::kTan:
    case Opcode::kErf:
    case Opcode::kCbrt:
    case Opcode::kAtan2:
    case Opcode::kPower:
    case Opcode::kRemainder:
      return true;
    default:
      return false;
  }
}

double ElementCostNs(Opcode op, ir::PrimitiveType type) {
  if (!ir::IsFloatingPoint(type)) {
    switch (op) {
      case Opcode::kDivide:
      case Opcode::kRemainder:
        return 1.0;  // a checked scalar division
      case Opcode::kPower:
        return 2.0;  // a square-and-multiply loop
      default:
        return 0.1;
    }
  }
  switch (op) {
    case Opcode::kConvert:
      return 0.15;
    case Opcode::kDivide:
    case Opcode::kSign:
    case Opcode::kSqrt:
      return 0.2;
    case Opcode::kRsqrt:
      return 0.4;
    case Opcode::kExp:
      return 0.45;
    case Opcode::kLogistic:
      return 0.5;
    case Opcode::kTanh:
      return 0.85;
    case Opcode::kSin:
    case Opcode::kCos:
      return 4.2;
    case Opcode::kErf:
      return 4.4;
    case Opcode::kLog:
      return 6.3;
    case Opcode::kPower:
      return 7.0;
    case Opcode::kExpm1:
      return 9.0;
    case Opcode::kTan:
      return 10.0;
    case Opcode::kLog1p:
      return 11.0;
    case Opcode::kCbrt:
    case Opcode::kRemainder:
      return 16.0;
    case Opcode::kAtan2:
      return 25.0;
    default:
      return 0.1;  // add, multiply, compare, select, max, floor: a vector instruction per 8
  }
}

}  // namespace mltune::costmodels::features
