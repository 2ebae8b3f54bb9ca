// rng-bit-generator as a library kernel: XLA's Threefry-2x32 and Philox-4x32 bit streams
// (ir/evaluator/rng_bits.h describes them), generated as plain C++ over the kernel's buffers, bit
// for bit what the reference evaluator computes.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "ir/instruction.h"

namespace mltune::backends::cpu {

// C++ statements computing rng-bit-generator `rng`: they read its u64 state from `state_in`,
// write the new state to `state_out` and the bits to `bits_out` (pointers to the stored types).
// Unimplemented (ir::CheckRngBitGenerator's) for what is not supported.
absl::StatusOr<std::string> RngBitGeneratorCode(const ir::Instruction& rng,
                                                const std::string& state_in,
                                                const std::string& state_out,
                                                const std::string& bits_out);

}  // namespace mltune::backends::cpu
