// Internal to the evaluator: decoding the backend_config of jaxlib's GPU custom-calls, a C-escaped
// string holding a little-endian descriptor struct (e.g. "\002\000\000\000...").
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace mltune::ir::eval {

// The raw bytes of a backend_config as printed (quotes and C escapes included), or "" for none.
absl::StatusOr<std::string> DecodeBackendConfig(std::string_view printed);

// Reads little-endian fields in order, failing past the end.
class DescriptorReader {
 public:
  explicit DescriptorReader(std::string_view bytes) : bytes_(bytes) {}
  absl::StatusOr<int32_t> I32() { return Read<int32_t>(); }
  absl::StatusOr<int64_t> I64() { return Read<int64_t>(); }
  size_t remaining() const { return bytes_.size() - pos_; }

 private:
  template <typename T>
  absl::StatusOr<T> Read() {
    if (pos_ + sizeof(T) > bytes_.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("backend_config descriptor too short: ", bytes_.size(), " bytes"));
    }
    unsigned char b[sizeof(T)];
    std::memcpy(b, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(b[i]) << (8 * i);
    return static_cast<T>(v);
  }
  std::string_view bytes_;
  size_t pos_ = 0;
};

}  // namespace mltune::ir::eval
