#include "optimizers/device_partition/json_util.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace mltune::opt::partition {

using nlohmann::json;

absl::StatusOr<json> ParseJsonText(std::string_view text, std::string_view source) {
  try {
    return json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    const size_t end = std::min<size_t>(e.byte > 0 ? e.byte - 1 : 0, text.size());
    size_t line = 1, column = 1;
    for (size_t i = 0; i < end; ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return absl::InvalidArgumentError(absl::StrCat(std::string(source), ":", line, ":", column,
                                                   ": invalid JSON (", e.what(), ")"));
  }
}

absl::Status FieldError(std::string_view where, std::string_view field, std::string_view message) {
  if (field.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(where), ": ", std::string(message)));
  }
  return absl::InvalidArgumentError(absl::StrCat(std::string(where), ": field '",
                                                 std::string(field), "': ", std::string(message)));
}

absl::Status JsonReader::Number(const char* field, double* out, bool required) const {
  if (!object_.contains(field)) {
    return required ? FieldError(where_, field, "missing (expected a number >= 0)")
                    : absl::OkStatus();
  }
  const json& v = object_[field];
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0) {
    return FieldError(where_, field, absl::StrCat("expected a finite number >= 0, got ", v.dump()));
  }
  *out = v.get<double>();
  return absl::OkStatus();
}

absl::Status JsonReader::Integer(const char* field, int64_t* out, bool required) const {
  if (!object_.contains(field)) {
    return required ? FieldError(where_, field, "missing (expected an integer)") : absl::OkStatus();
  }
  const json& v = object_[field];
  if (!v.is_number_integer()) {
    return FieldError(where_, field, absl::StrCat("expected an integer, got ", v.dump()));
  }
  *out = v.get<int64_t>();
  return absl::OkStatus();
}

absl::Status JsonReader::Flag(const char* field, bool* out, bool required) const {
  if (!object_.contains(field)) {
    return required ? FieldError(where_, field, "missing (expected true, false, 1 or 0)")
                    : absl::OkStatus();
  }
  const json& v = object_[field];
  if (v.is_boolean()) {
    *out = v.get<bool>();
  } else if (v.is_number_integer() && (v.get<int64_t>() == 0 || v.get<int64_t>() == 1)) {
    *out = v.get<int64_t>() == 1;
  } else {
    return FieldError(where_, field, absl::StrCat("expected true, false, 1 or 0, got ", v.dump()));
  }
  return absl::OkStatus();
}

}  // namespace mltune::opt::partition
