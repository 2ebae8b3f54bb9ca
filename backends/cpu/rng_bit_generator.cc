#include "backends/cpu/rng_bit_generator.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cpu/element_expr.h"
#include "ir/evaluator/rng_bits.h"

namespace mltune::backends::cpu {

absl::StatusOr<std::string> RngBitGeneratorCode(const ir::Instruction& rng,
                                                const std::string& state_in,
                                                const std::string& state_out,
                                                const std::string& bits_out) {
  absl::StatusOr<ir::RngBitAlgorithm> algorithm = ir::CheckRngBitGenerator(rng);
  if (!algorithm.ok()) return algorithm.status();
  const ir::Shape& bits = rng.shape().tuple_shapes(1);
  const std::vector<int64_t>& dims = bits.dimensions();
  const int width = ir::BitWidth(bits.element_type());
  const std::string st = StorageType(bits.element_type());
  const int64_t n = bits.ElementCount();
  const int64_t words = rng.operand(0)->shape().dimensions(0);
  // Everything is read before anything is written.
  std::string code =
      absl::StrCat("const uint64_t key = ", state_in, "[0];\n",
                   "const uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);\n");
  if (*algorithm == ir::RngBitAlgorithm::kThreeFry) {
    absl::StrAppend(&code, "const uint64_t ctr = ", state_in, "[1];\n");
    if (width == 64) {
      absl::StrAppend(&code, "for (int64_t e = 0; e < ", n, "; ++e) {\n",
                      "  const uint64_t c = ctr + (uint64_t)e;\n  uint32_t y0, y1;\n",
                      "  mt_threefry2x32(k0, k1, (uint32_t)c, (uint32_t)(c >> 32), &y0, &y1);\n  ",
                      bits_out, "[e] = (", st, ")((uint64_t)y0 | ((uint64_t)y1 << 32));\n}\n",
                      state_out, "[0] = key;\n", state_out, "[1] = ctr + ", n, "ULL;\n");
      return code;
    }
    // Pairs of elements along the split dimension share a counter (ThreeFrySplitDimension).
    const int64_t s = ir::ThreeFrySplitDimension(dims);
    int64_t len = 1, inner = 1, outer = 1;
    if (s >= 0) {
      len = dims[static_cast<size_t>(s)];
      for (size_t d = static_cast<size_t>(s) + 1; d < dims.size(); ++d) inner *= dims[d];
      for (size_t d = 0; d < static_cast<size_t>(s); ++d) outer *= dims[d];
    }
    const int64_t half = (len + 1) / 2;
    const int64_t counters = n == 0 ? 0 : outer * half * inner;
    if (counters == 0) {
      absl::StrAppend(&code, state_out, "[0] = key;\n", state_out, "[1] = ctr;\n");
      return code;
    }
    absl::StrAppend(
        &code, "for (int64_t h = 0; h < ", counters, "; ++h) {\n", "  const int64_t o = h / ",
        half * inner, ", j = (h / ", inner, ") % ", half, ", i = h % ", inner, ";\n",
        "  const uint64_t c = ctr + (uint64_t)h;\n  uint32_t y0, y1;\n",
        "  mt_threefry2x32(k0, k1, (uint32_t)c, (uint32_t)(c >> 32), &y0, &y1);\n",
        "  const int64_t at = (o * ", len, " + 2 * j) * ", inner, " + i;\n  ", bits_out, "[at] = (",
        st, ")y0;\n", "  if (2 * j + 1 < ", len, ") ", bits_out, "[at + ", inner, "] = (", st,
        ")y1;\n}\n", state_out, "[0] = key;\n", state_out, "[1] = ctr + ", counters, "ULL;\n");
    return code;
  }
  // Philox-4x32-10 over a 128-bit counter: words 1, 2 of a u64[3] state; word 1 (low) and the key
  // word (high) of a u64[2] one.
  const int64_t per_block = width == 64 ? 2 : 4;
  const int64_t blocks = (n + per_block - 1) / per_block;
  absl::StrAppend(&code, "const uint64_t lo0 = ", state_in, "[1], hi0 = ", state_in,
                  words >= 3 ? "[2]" : "[0]", ";\n", "for (int64_t b = 0; b < ", blocks,
                  "; ++b) {\n", "  const uint64_t lo = lo0 + (uint64_t)b;\n",
                  "  const uint64_t hi = lo < lo0 ? hi0 + 1 : hi0;\n",
                  "  uint32_t x0 = (uint32_t)lo, x1 = (uint32_t)(lo >> 32), x2 = (uint32_t)hi, "
                  "x3 = (uint32_t)(hi >> 32);\n",
                  "  uint32_t a0 = k0, a1 = k1;\n", "  for (int r = 0; r < 10; ++r) {\n",
                  "    const uint64_t p0 = (uint64_t)x0 * 0xD2511F53u;\n",
                  "    const uint64_t p1 = (uint64_t)x2 * 0xCD9E8D57u;\n",
                  "    x0 = (uint32_t)(p1 >> 32) ^ x1 ^ a0;\n    x1 = (uint32_t)p1;\n",
                  "    x2 = (uint32_t)(p0 >> 32) ^ x3 ^ a1;\n    x3 = (uint32_t)p0;\n",
                  "    a0 += 0x9E3779B9u;\n    a1 += 0xBB67AE85u;\n  }\n",
                  "  const uint32_t w[4] = {x0, x1, x2, x3};\n");
  if (width == 64) {
    absl::StrAppend(&code, "  for (int64_t j = 0; j < 2 && b * 2 + j < ", n, "; ++j) ", bits_out,
                    "[b * 2 + j] = (", st,
                    ")((uint64_t)w[2 * j] | ((uint64_t)w[2 * j + 1] << 32));\n}\n");
  } else {
    absl::StrAppend(&code, "  for (int64_t j = 0; j < 4 && b * 4 + j < ", n, "; ++j) ", bits_out,
                    "[b * 4 + j] = (", st, ")w[j];\n}\n");
  }
  absl::StrAppend(&code, "const uint64_t lo1 = lo0 + ", blocks, "ULL;\n", state_out, "[0] = key;\n",
                  state_out, "[1] = lo1;\n");
  if (words >= 3) {
    absl::StrAppend(&code, state_out, "[2] = lo1 < lo0 ? hi0 + 1 : hi0;\n");
  }
  return code;
}

}  // namespace mltune::backends::cpu
