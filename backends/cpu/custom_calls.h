// Internal to backends/cpu: the framework custom-calls the backend computes itself, each an
// elementwise function of its one operand (as ir/evaluator's registry defines them).
#pragma once

#include <string>
#include <string_view>

#include "ir/module.h"

namespace mltune::backends::cpu::internal {

enum class KnownCustomCall {
  kNone,
  kIdentity,  // AwsNeuronTransferWithStaticRing: a transfer between Neuron cores
  kGeluErf,   // AwsNeuronGelu: GELU, the erf form
};

// kNone unless `instr` is a custom-call of a known target with one array operand of its shape.
KnownCustomCall FindKnownCustomCall(const ir::Instruction& instr);

// The C++ expression of `call` on the operand's value `x` of C type `ctype`.
std::string KnownCustomCallExpr(KnownCustomCall call, const std::string& x, std::string_view ctype);

}  // namespace mltune::backends::cpu::internal
