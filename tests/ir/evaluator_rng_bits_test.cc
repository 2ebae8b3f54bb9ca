// rng-bit-generator in the reference evaluator: the Threefry-2x32-20 and Philox-4x32-10 blocks
// against the Random123 known-answer vectors, and how XLA's expansion lays the blocks out over
// the result and advances the state.
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "ir/evaluator/rng_bits.h"
#include "tests/ir/evaluator_test_util.h"

namespace mltune::ir {
namespace {

using eval_test::EvalText;
using eval_test::ModuleText;

TEST(RngBitsTest, ThreefryMatchesRandom123KnownAnswers) {
  EXPECT_EQ(Threefry2x32({0, 0}, {0, 0}), (std::array<uint32_t, 2>{0x6b200159u, 0x99ba4efeu}));
  EXPECT_EQ(Threefry2x32({0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu}),
            (std::array<uint32_t, 2>{0x1cb996fcu, 0xbb002be7u}));
  EXPECT_EQ(Threefry2x32({0x13198a2eu, 0x03707344u}, {0x243f6a88u, 0x85a308d3u}),
            (std::array<uint32_t, 2>{0xc4923a9cu, 0x483df7a0u}));
}

TEST(RngBitsTest, PhiloxMatchesRandom123KnownAnswers) {
  EXPECT_EQ(Philox4x32({0, 0}, {0, 0, 0, 0}),
            (std::array<uint32_t, 4>{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
  EXPECT_EQ(
      Philox4x32({0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}),
      (std::array<uint32_t, 4>{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}));
  EXPECT_EQ(
      Philox4x32({0xa4093822u, 0x299f31d0u}, {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}),
      (std::array<uint32_t, 4>{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

// The result of `rng` (an HLO op text over state constant `state`) as (state, bits) literals.
std::pair<std::vector<uint64_t>, std::vector<uint64_t>> RunRng(const std::string& state,
                                                               const std::string& rng) {
  absl::StatusOr<Literal> r =
      EvalText(ModuleText(absl::StrCat("s = ", state, "\n ROOT r = ", rng)));
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return {};
  std::vector<uint64_t> s, b;
  for (int64_t i = 0; i < r->elements()[0].element_count(); ++i) {
    s.push_back(r->elements()[0].Get<uint64_t>(i));
  }
  const Literal& bits = r->elements()[1];
  for (int64_t i = 0; i < bits.element_count(); ++i) {
    b.push_back(static_cast<uint64_t>(bits.GetAsUint64(i)));
  }
  return {s, b};
}

// 32-bit Threefry output splits its shape along the first even dimension: a [3,2] result takes
// three counters, each giving a row (the values jax.random's rng_bit_generator prints for a zero
// state).
TEST(RngBitsTest, ThreefryPairsElementsAlongTheFirstEvenDimension) {
  auto [state, bits] = RunRng("u64[2] constant({0, 0})",
                              "(u64[2], u32[3,2]) rng-bit-generator(s), algorithm=rng_three_fry");
  EXPECT_EQ(state, (std::vector<uint64_t>{0, 3}));
  ASSERT_EQ(bits.size(), 6u);
  EXPECT_EQ(bits[0], 0x6b200159u);
  EXPECT_EQ(bits[1], 0x99ba4efeu);
  for (uint64_t row = 0; row < 3; ++row) {
    const std::array<uint32_t, 2> y = Threefry2x32({0, 0}, {static_cast<uint32_t>(row), 0});
    EXPECT_EQ(bits[2 * row], y[0]);
    EXPECT_EQ(bits[2 * row + 1], y[1]);
  }
  // [3,5] has no even dimension: it splits its longest, 5 -> 3 counters per row.
  auto [odd_state, odd] =
      RunRng("u64[2] constant({7, 100})",
             "(u64[2], u32[3,5]) rng-bit-generator(s), algorithm=rng_three_fry");
  EXPECT_EQ(odd_state, (std::vector<uint64_t>{7, 109}));
  const std::array<uint32_t, 2> y = Threefry2x32({7, 0}, {100 + 3 + 2, 0});  // row 1, pair 2
  EXPECT_EQ(odd[1 * 5 + 4], y[0]);
  // 64-bit: one counter per element, low word first.
  auto [state64, bits64] = RunRng("u64[2] constant({5, 9})",
                                  "(u64[2], u64[2]) rng-bit-generator(s), algorithm=rng_three_fry");
  EXPECT_EQ(state64, (std::vector<uint64_t>{5, 11}));
  const std::array<uint32_t, 2> y1 = Threefry2x32({5, 0}, {10, 0});
  EXPECT_EQ(bits64[1], uint64_t{y1[0]} | (uint64_t{y1[1]} << 32));
}

TEST(RngBitsTest, PhiloxTakesFourWordsPerCounterAndCarriesInto128Bits) {
  // u64[3]: key, counter low, counter high; the low word wraps and carries.
  auto [state, bits] = RunRng("u64[3] constant({3, 18446744073709551615, 4})",
                              "(u64[3], u32[6]) rng-bit-generator(s), algorithm=rng_philox");
  EXPECT_EQ(state, (std::vector<uint64_t>{3, 1, 5}));
  const std::array<uint32_t, 4> b0 = Philox4x32({3, 0}, {0xffffffffu, 0xffffffffu, 4, 0});
  const std::array<uint32_t, 4> b1 = Philox4x32({3, 0}, {0, 0, 5, 0});
  EXPECT_EQ(bits, (std::vector<uint64_t>{b0[0], b0[1], b0[2], b0[3], b1[0], b1[1]}));
  // u64[2] (rng_default is Philox): the counter's high word is the key word; the new state
  // keeps the low word alone.
  auto [state2, bits2] = RunRng("u64[2] constant({6, 10})",
                                "(u64[2], u64[3]) rng-bit-generator(s), algorithm=rng_default");
  EXPECT_EQ(state2, (std::vector<uint64_t>{6, 12}));
  const std::array<uint32_t, 4> c0 = Philox4x32({6, 0}, {10, 0, 6, 0});
  const std::array<uint32_t, 4> c1 = Philox4x32({6, 0}, {11, 0, 6, 0});
  EXPECT_EQ(bits2, (std::vector<uint64_t>{uint64_t{c0[0]} | (uint64_t{c0[1]} << 32),
                                          uint64_t{c0[2]} | (uint64_t{c0[3]} << 32),
                                          uint64_t{c1[0]} | (uint64_t{c1[1]} << 32)}));
  // 8-bit outputs are the 32-bit words' low bytes.
  auto [state8, bits8] = RunRng("u64[3] constant({1, 2, 3})",
                                "(u64[3], u8[5]) rng-bit-generator(s), algorithm=rng_philox");
  const std::array<uint32_t, 4> d0 = Philox4x32({1, 0}, {2, 0, 3, 0});
  EXPECT_EQ(bits8[3], d0[3] & 0xffu);
  EXPECT_EQ(state8, (std::vector<uint64_t>{1, 4, 3}));
}

TEST(RngBitsTest, RefusesWhatXlaDoesNotDefine) {
  for (const char* rng : {"(u64[3], u32[4]) rng-bit-generator(s), algorithm=rng_three_fry",
                          "(u64[3], f32[4]) rng-bit-generator(s), algorithm=rng_philox"}) {
    absl::StatusOr<Literal> r =
        EvalText(ModuleText(absl::StrCat("s = u64[3] constant({1, 2, 3})\n ROOT r = ", rng)));
    ASSERT_FALSE(r.ok()) << rng;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_NE(std::string(r.status().message()).find("rng-bit-generator"), std::string::npos)
        << r.status();
  }
}

}  // namespace
}  // namespace mltune::ir
