// Internal to backends/gpu: how the GPU runner and its host emulator fill a program's parameters
// for timing (seeded), so that both see the same values the CPU runner would.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>

namespace mltune::backends::gpu {

inline int ElementBytes(const std::string& t) {
  if (t == "pred" || t == "s8" || t == "u8") return 1;
  if (t == "s16" || t == "u16" || t == "bf16" || t == "f16") return 2;
  if (t == "f32" || t == "s32" || t == "u32") return 4;
  if (t == "f64" || t == "s64" || t == "u64") return 8;
  return 0;
}

inline uint64_t SplitMix(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Uniform [-1, 1) floats, coin-flip preds, small non-negative integers (valid indices and
// shifts), as the CPU runner fills them.
inline void FillRandom(const std::string& type, int64_t elements, char* data, uint64_t* state) {
  const int eb = ElementBytes(type);
  for (int64_t i = 0; i < elements; ++i) {
    const uint64_t r = SplitMix(state);
    const double u = static_cast<double>(r >> 11) * (1.0 / 9007199254740992.0);
    char* p = data + i * eb;
    if (type == "f32") {
      const float f = static_cast<float>(2 * u - 1);
      std::memcpy(p, &f, 4);
    } else if (type == "f64") {
      const double f = 2 * u - 1;
      std::memcpy(p, &f, 8);
    } else if (type == "bf16" || type == "f16") {
      const float f = static_cast<float>(2 * u - 1);
      const uint16_t h = type == "bf16" ? static_cast<uint16_t>(std::bit_cast<uint32_t>(f) >> 16)
                                        : std::bit_cast<uint16_t>(static_cast<_Float16>(f));
      std::memcpy(p, &h, 2);
    } else if (type == "pred") {
      *p = static_cast<char>(r & 1);
    } else {
      const uint64_t v = r % 8;
      std::memcpy(p, &v, static_cast<size_t>(eb));
    }
  }
}

}  // namespace mltune::backends::gpu
