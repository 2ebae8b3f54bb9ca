// Undoes the C escaping XLA applies when printing a binary backend_config.
#include "ir/evaluator/backend_config.h"

namespace mltune::ir::eval {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

absl::StatusOr<std::string> DecodeBackendConfig(std::string_view printed) {
  std::string_view s = printed;
  if (s.empty()) return std::string();
  if (s.size() < 2 || s.front() != '"' || s.back() != '"') {
    return absl::InvalidArgumentError("backend_config is not a quoted string");
  }
  s = s.substr(1, s.size() - 2);
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\') {
      out.push_back(s[i]);
      continue;
    }
    if (++i >= s.size()) return absl::InvalidArgumentError("backend_config ends in a backslash");
    const char c = s[i];
    if (c >= '0' && c <= '7') {
      int v = 0;
      size_t k = 0;
      for (; k < 3 && i + k < s.size() && s[i + k] >= '0' && s[i + k] <= '7'; ++k) {
        v = v * 8 + (s[i + k] - '0');
      }
      i += k - 1;
      out.push_back(static_cast<char>(v & 0xff));
      continue;
    }
    if (c == 'x') {
      int v = 0;
      size_t k = 1;
      for (; k <= 2 && i + k < s.size() && HexValue(s[i + k]) >= 0; ++k) {
        v = v * 16 + HexValue(s[i + k]);
      }
      if (k == 1) return absl::InvalidArgumentError("backend_config has a bad \\x escape");
      i += k - 1;
      out.push_back(static_cast<char>(v));
      continue;
    }
    switch (c) {
      case 'n':
        out.push_back('\n');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 'a':
        out.push_back('\a');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'v':
        out.push_back('\v');
        break;
      default:  // \\ \" \' \? and anything else stand for themselves
        out.push_back(c);
        break;
    }
  }
  return out;
}

}  // namespace mltune::ir::eval
