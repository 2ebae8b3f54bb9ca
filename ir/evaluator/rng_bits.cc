#include "ir/evaluator/rng_bits.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"

namespace mltune::ir {
namespace {

uint32_t Rotl(uint32_t v, int r) { return (v << r) | (v >> (32 - r)); }
uint32_t Lo(uint64_t v) { return static_cast<uint32_t>(v); }
uint32_t Hi(uint64_t v) { return static_cast<uint32_t>(v >> 32); }
uint64_t Join(uint32_t lo, uint32_t hi) { return uint64_t{lo} | (uint64_t{hi} << 32); }

absl::Status Refuse(const Instruction& instr, const std::string& why) {
  return absl::UnimplementedError(absl::StrCat(
      "rng-bit-generator '", instr.name(), "'",
      instr.source_line() > 0 ? absl::StrCat(" (line ", instr.source_line(), ")") : "", ": ", why));
}

// A 128-bit counter {low, high} plus `n`.
std::array<uint64_t, 2> Add128(std::array<uint64_t, 2> c, uint64_t n) {
  const uint64_t low = c[0] + n;
  return {low, low < c[0] ? c[1] + 1 : c[1]};
}

}  // namespace

std::array<uint32_t, 2> Threefry2x32(std::array<uint32_t, 2> key, std::array<uint32_t, 2> counter) {
  static constexpr int kRotations[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const uint32_t ks[3] = {key[0], key[1], key[0] ^ key[1] ^ 0x1BD11BDAu};
  uint32_t x0 = counter[0] + ks[0], x1 = counter[1] + ks[1];
  // Five groups of four rounds, each followed by a key injection.
  for (int group = 0; group < 5; ++group) {
    for (int r = 0; r < 4; ++r) {
      x0 += x1;
      x1 = Rotl(x1, kRotations[(group % 2) * 4 + r]) ^ x0;
    }
    x0 += ks[(group + 1) % 3];
    x1 += ks[(group + 2) % 3] + static_cast<uint32_t>(group + 1);
  }
  return {x0, x1};
}

std::array<uint32_t, 4> Philox4x32(std::array<uint32_t, 2> key, std::array<uint32_t, 4> x) {
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{x[0]} * 0xD2511F53u;
    const uint64_t p1 = uint64_t{x[2]} * 0xCD9E8D57u;
    x = {Hi(p1) ^ x[1] ^ key[0], Lo(p1), Hi(p0) ^ x[3] ^ key[1], Lo(p0)};
    key = {key[0] + 0x9E3779B9u, key[1] + 0xBB67AE85u};
  }
  return x;
}

int64_t ThreeFrySplitDimension(const std::vector<int64_t>& dims) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] % 2 == 0) return static_cast<int64_t>(i);
  }
  int64_t longest = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (longest < 0 || dims[i] > dims[static_cast<size_t>(longest)]) {
      longest = static_cast<int64_t>(i);
    }
  }
  return longest;
}

absl::StatusOr<RngBitAlgorithm> CheckRngBitGenerator(const Instruction& instr) {
  const RawAttribute* attr = instr.FindExtraAttribute("algorithm");
  const std::string name = attr == nullptr ? "rng_default" : attr->value;
  RngBitAlgorithm algorithm;
  if (name == "rng_default" || name == "rng_philox") {
    algorithm = RngBitAlgorithm::kPhilox;
  } else if (name == "rng_three_fry") {
    algorithm = RngBitAlgorithm::kThreeFry;
  } else {
    return Refuse(instr, absl::StrCat("unknown algorithm ", name));
  }
  if (instr.operand_count() != 1 || !instr.operand(0)->shape().IsArray() ||
      instr.operand(0)->shape().element_type() != PrimitiveType::kU64 ||
      instr.operand(0)->shape().rank() != 1) {
    return Refuse(instr, "the state must be a u64 vector");
  }
  const int64_t words = instr.operand(0)->shape().dimensions(0);
  if (algorithm == RngBitAlgorithm::kThreeFry ? words != 2 : (words != 2 && words != 3)) {
    return Refuse(instr, absl::StrCat(name, " takes a u64[2] state",
                                      algorithm == RngBitAlgorithm::kPhilox ? " or u64[3]" : "",
                                      ", not u64[", words, "]"));
  }
  const Shape& shape = instr.shape();
  if (!shape.IsTuple() || shape.tuple_size() != 2 || !shape.tuple_shapes(1).IsArray() ||
      !shape.tuple_shapes(0).Compatible(instr.operand(0)->shape())) {
    return Refuse(instr, "the result must be (state, bits) with the state's shape");
  }
  const PrimitiveType t = shape.tuple_shapes(1).element_type();
  if (!IsIntegral(t) ||
      (BitWidth(t) != 8 && BitWidth(t) != 16 && BitWidth(t) != 32 && BitWidth(t) != 64)) {
    return Refuse(instr, absl::StrCat("bits of ", std::string(PrimitiveTypeName(t)),
                                      " are not generated (8- to 64-bit integers are)"));
  }
  return algorithm;
}

RngBits GenerateRngBits(RngBitAlgorithm algorithm, const std::vector<uint64_t>& state,
                        const std::vector<int64_t>& dims, int width) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  RngBits out;
  out.state = state;
  out.bits.assign(static_cast<size_t>(n), 0);
  const uint64_t mask = width == 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1;
  const std::array<uint32_t, 2> key = {Lo(state[0]), Hi(state[0])};
  if (algorithm == RngBitAlgorithm::kThreeFry) {
    const uint64_t counter = state[1];
    auto block = [&](uint64_t i) {
      const uint64_t c = counter + i;
      return Threefry2x32(key, {Lo(c), Hi(c)});
    };
    if (width == 64) {
      for (int64_t e = 0; e < n; ++e) {
        const std::array<uint32_t, 2> y = block(static_cast<uint64_t>(e));
        out.bits[static_cast<size_t>(e)] = Join(y[0], y[1]);
      }
      out.state[1] = counter + static_cast<uint64_t>(n);
      return out;
    }
    // 32 bits and narrower: pairs along the split dimension share a counter.
    const int64_t s = ThreeFrySplitDimension(dims);
    int64_t len = 1, inner = 1, outer = 1;
    if (s >= 0) {
      len = dims[static_cast<size_t>(s)];
      for (size_t d = static_cast<size_t>(s) + 1; d < dims.size(); ++d) inner *= dims[d];
      for (size_t d = 0; d < static_cast<size_t>(s); ++d) outer *= dims[d];
    }
    const int64_t half = (len + 1) / 2;
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < half; ++j) {
        for (int64_t i = 0; i < inner; ++i) {
          const std::array<uint32_t, 2> y =
              block(static_cast<uint64_t>((o * half + j) * inner + i));
          for (int64_t w = 0; w < 2 && 2 * j + w < len; ++w) {
            out.bits[static_cast<size_t>((o * len + 2 * j + w) * inner + i)] =
                y[static_cast<size_t>(w)] & mask;
          }
        }
      }
    }
    out.state[1] = counter + static_cast<uint64_t>(outer * half * inner);
    return out;
  }
  // Philox: the 128-bit counter's words as the state's size places them.
  std::array<uint64_t, 2> counter = state.size() >= 3 ? std::array<uint64_t, 2>{state[1], state[2]}
                                                      : std::array<uint64_t, 2>{state[1], state[0]};
  const int64_t per_block = width == 64 ? 2 : 4;
  const int64_t blocks = (n + per_block - 1) / per_block;
  for (int64_t b = 0; b < blocks; ++b) {
    const std::array<uint64_t, 2> c = Add128(counter, static_cast<uint64_t>(b));
    const std::array<uint32_t, 4> y = Philox4x32(key, {Lo(c[0]), Hi(c[0]), Lo(c[1]), Hi(c[1])});
    for (int64_t w = 0; w < per_block && b * per_block + w < n; ++w) {
      out.bits[static_cast<size_t>(b * per_block + w)] =
          width == 64 ? Join(y[static_cast<size_t>(2 * w)], y[static_cast<size_t>(2 * w + 1)])
                      : y[static_cast<size_t>(w)] & mask;
    }
  }
  counter = Add128(counter, static_cast<uint64_t>(blocks));
  out.state[1] = counter[0];
  if (state.size() >= 3) out.state[2] = counter[1];
  return out;
}

}  // namespace mltune::ir
