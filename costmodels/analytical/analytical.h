// Analytical costs of HLO: floating-point (or integer) operations and bytes moved per
// instruction, summed per module, and roofline time on a target spec. The simulators build on
// these counts, and the learned cost models are compared against them.
#pragma once

#include <cstdint>
#include <string>

#include "backends/spec/target_spec.h"
#include "ir/module.h"

namespace mltune::costmodels {

struct OpCost {
  double flops = 0;            // multiply-adds count 2
  double transcendentals = 0;  // exp, log, tanh, ... (one per element)
  double bytes_read = 0;       // operands' array bytes
  double bytes_written = 0;    // result's array bytes
  double matrix_flops = 0;     // the part of `flops` a matrix unit runs (dot, convolution)

  double bytes() const { return bytes_read + bytes_written; }
  OpCost& operator+=(const OpCost& o);
};

// Costs of one instruction on its own (as an unfused kernel). Free ops (parameter, constant,
// tuple, get-tuple-element, bitcast, ...) cost nothing; control flow costs its operands' reads.
OpCost InstructionCost(const ir::Instruction& instr);

// The sum over every instruction of the computations reachable from the entry, each computation
// counted once (loop trip counts and call counts are not multiplied in), skipping reducer and
// comparator computations, which run inside their caller's element loop.
OpCost ModuleCost(const ir::Module& module);

// Roofline time of a cost on one device of `spec`: the larger of compute time (flops at the peak
// for `element_type`, e.g. "f32") and memory time (bytes at the outermost memory's bandwidth),
// plus the kernel overhead once.
double RooflineSeconds(const OpCost& cost, const backends::TargetSpec& spec,
                       const std::string& element_type);

// Roofline time of a module as unfused kernels: the sum of each instruction's roofline time
// (each with its own kernel overhead and its own element type), over the instructions
// ModuleCost counts.
double ModuleRooflineSeconds(const ir::Module& module, const backends::TargetSpec& spec);

}  // namespace mltune::costmodels
