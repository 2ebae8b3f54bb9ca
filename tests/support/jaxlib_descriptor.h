// A jaxlib descriptor as HLO text prints it in backend_config: little-endian fields of the given
// byte widths, every byte as an octal escape (the LAPACK-style and threefry custom-calls' opaque).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace mltune::testing {

inline std::string JaxlibDescriptor(const std::vector<std::pair<int64_t, int>>& fields) {
  std::string out = "\"";
  for (auto [value, bytes] : fields) {
    for (int i = 0; i < bytes; ++i) {
      const unsigned b = static_cast<unsigned>((static_cast<uint64_t>(value) >> (8 * i)) & 0xff);
      out += absl::StrCat("\\", b / 64, (b / 8) % 8, b % 8);
    }
  }
  return out + "\"";
}

}  // namespace mltune::testing
