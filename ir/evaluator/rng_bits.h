// rng-bit-generator as XLA defines it: XLA's RngBitGeneratorExpander over the bit generators of
// its prng library (xla/hlo/builder/lib/prng.cc), which its CPU and GPU compilers run, with
// rng_default expanded as Philox. The reference evaluator computes it with these functions; the
// CPU backend generates the same arithmetic, and both are checked against each other and the
// published Random123 known-answer vectors.
//
// The state operand is u64[n]; word 0 is the key (two u32 words, low first) and stays.
//  - Threefry-2x32-20 (n = 2): word 1 is a 64-bit counter. 64-bit outputs take counter + i for
//    element i (low word | high word << 32). 32-bit outputs split the shape in two along its
//    first even dimension (else its longest): element j of the half shape takes counter + j and
//    gives the elements 2m and 2m + 1 of that dimension. The counter advances by the counters used.
//  - Philox-4x32-10: a 128-bit counter, words 1 (low) and 2 of a u64[3] state, or word 1 (low) and
//    word 0 (high) of a u64[2] state, whose new state keeps the low word alone. Block b takes
//    counter + b and gives 4 u32 words: 32-bit element e is word e % 4 of block e / 4; 64-bit
//    element e is words (0,1) or (2,3) of block e / 2.
// Outputs narrower than 32 bits are the 32-bit ones truncated to their low bits.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/instruction.h"

namespace mltune::ir {

enum class RngBitAlgorithm { kThreeFry, kPhilox };

// Threefry-2x32 with 20 rounds (Salmon et al., SC 2011) of `counter` under `key`.
std::array<uint32_t, 2> Threefry2x32(std::array<uint32_t, 2> key, std::array<uint32_t, 2> counter);
// Philox-4x32 with 10 rounds of `counter` under `key`.
std::array<uint32_t, 4> Philox4x32(std::array<uint32_t, 2> key, std::array<uint32_t, 4> counter);

// The algorithm rng-bit-generator `instr` runs (rng_default is Philox, as XLA's CPU and GPU
// compilers expand it), after checking its shapes: a u64[2] state (u64[2] or u64[3] for Philox)
// and an integer result of 8 to 64 bits. Unimplemented naming what is not supported otherwise.
absl::StatusOr<RngBitAlgorithm> CheckRngBitGenerator(const Instruction& instr);

struct RngBits {
  std::vector<uint64_t> state;  // the new state, as many words as the old
  std::vector<uint64_t> bits;   // per element in row-major order, in its low `width` bits
};
// The output of rng-bit-generator with state words `state` and a result of `dims` and `width`
// (8, 16, 32 or 64) bits per element.
RngBits GenerateRngBits(RngBitAlgorithm algorithm, const std::vector<uint64_t>& state,
                        const std::vector<int64_t>& dims, int width);

// The dimension ThreeFry's 32-bit outputs are split along: the first even one, else the first
// longest (-1 for a scalar).
int64_t ThreeFrySplitDimension(const std::vector<int64_t>& dims);

}  // namespace mltune::ir
