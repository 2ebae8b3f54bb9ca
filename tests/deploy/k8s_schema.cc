// YAML read as kubectl reads it, and the JSON Schema subset of the Kubernetes schemas.
#include "tests/deploy/k8s_schema.h"

#include <yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

namespace mltune::testing::k8s {
namespace {

using nlohmann::json;

std::string Mark(const yaml_mark_t& mark) {
  return std::to_string(mark.line + 1) + ":" + std::to_string(mark.column + 1);
}

// An integer as Go's strconv.ParseInt(s, 0, 64) reads it (go-yaml v2 resolves plain scalars with
// it after dropping underscores): a sign, then 0x hex, 0b binary, 0o or a leading 0 octal, else
// decimal. Falls back to uint64 for values above int64's range.
std::optional<json> ParseGoInteger(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  bool negative = false;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  int base = 10;
  if (s.size() - i > 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
    base = 16, i += 2;
  } else if (s.size() - i > 2 && s[i] == '0' && (s[i + 1] == 'b' || s[i + 1] == 'B')) {
    base = 2, i += 2;
  } else if (s.size() - i > 2 && s[i] == '0' && (s[i + 1] == 'o' || s[i + 1] == 'O')) {
    base = 8, i += 2;
  } else if (s.size() - i > 1 && s[i] == '0') {
    base = 8, i += 1;
  }
  if (i == s.size()) return std::nullopt;
  uint64_t magnitude = 0;
  for (; i < s.size(); ++i) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(s[i])));
    int digit = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                                                            : 99;
    if (digit >= base) return std::nullopt;
    if (magnitude > (std::numeric_limits<uint64_t>::max() - digit) / base) return std::nullopt;
    magnitude = magnitude * base + digit;
  }
  constexpr uint64_t kMaxInt = std::numeric_limits<int64_t>::max();
  if (!negative) {
    if (magnitude <= kMaxInt) return json(static_cast<int64_t>(magnitude));
    return json(magnitude);
  }
  if (magnitude <= kMaxInt) return json(-static_cast<int64_t>(magnitude));
  if (magnitude == kMaxInt + 1) return json(std::numeric_limits<int64_t>::min());
  return std::nullopt;
}

// A plain scalar resolved by YAML 1.1's rules as go-yaml v2 applies them.
json ResolvePlain(const std::string& text) {
  static const std::set<std::string> kNull = {"", "~", "null", "Null", "NULL"};
  static const std::set<std::string> kTrue = {"y",    "Y",    "yes", "Yes", "YES", "true",
                                              "True", "TRUE", "on",  "On",  "ON"};
  static const std::set<std::string> kFalse = {"n",     "N",     "no",  "No",  "NO", "false",
                                               "False", "FALSE", "off", "Off", "OFF"};
  if (kNull.count(text)) return nullptr;
  if (kTrue.count(text)) return true;
  if (kFalse.count(text)) return false;
  if (text == ".nan" || text == ".NaN" || text == ".NAN") {
    return std::numeric_limits<double>::quiet_NaN();
  }
  for (const char* inf : {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"}) {
    if (text == inf) return std::numeric_limits<double>::infinity();
  }
  for (const char* inf : {"-.inf", "-.Inf", "-.INF"}) {
    if (text == inf) return -std::numeric_limits<double>::infinity();
  }
  if (std::string_view("+-.0123456789").find(text[0]) == std::string_view::npos) return text;
  if (std::optional<json> integer = ParseGoInteger(text)) return *integer;
  std::string plain = text;
  plain.erase(std::remove(plain.begin(), plain.end(), '_'), plain.end());
  static const std::regex kFloat(R"([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?)");
  if (std::regex_match(plain, kFloat)) return std::strtod(plain.c_str(), nullptr);
  return text;
}

// libyaml's events, one at a time, building JSON values.
class YamlReader {
 public:
  explicit YamlReader(std::string_view text) {
    yaml_parser_initialize(&parser_);
    yaml_parser_set_input_string(&parser_, reinterpret_cast<const unsigned char*>(text.data()),
                                 text.size());
  }
  ~YamlReader() {
    if (has_event_) yaml_event_delete(&event_);
    yaml_parser_delete(&parser_);
  }
  YamlReader(const YamlReader&) = delete;
  YamlReader& operator=(const YamlReader&) = delete;

  bool Stream(std::vector<json>* documents, std::string* error) {
    if (!Next(error)) return false;
    if (event_.type != YAML_STREAM_START_EVENT) return Fail("expected the stream's start", error);
    while (true) {
      if (!Next(error)) return false;
      if (event_.type == YAML_STREAM_END_EVENT) return true;
      if (event_.type != YAML_DOCUMENT_START_EVENT) return Fail("expected a document", error);
      json document;
      if (!Next(error) || !Node(&document, error) || !Next(error)) return false;
      if (event_.type != YAML_DOCUMENT_END_EVENT) return Fail("expected the document's end", error);
      // kubectl skips empty documents (a stray `---`, a file of comments) too.
      if (!document.is_null()) documents->push_back(std::move(document));
    }
  }

 private:
  bool Next(std::string* error) {
    if (has_event_) yaml_event_delete(&event_);
    has_event_ = yaml_parser_parse(&parser_, &event_) != 0;
    if (!has_event_) {
      *error = Mark(parser_.problem_mark) + ": " +
               (parser_.problem != nullptr ? parser_.problem : "YAML error") +
               (parser_.context != nullptr ? std::string(" ") + parser_.context : "");
    }
    return has_event_;
  }

  bool Fail(const std::string& what, std::string* error) const {
    *error = Mark(event_.start_mark) + ": " + what;
    return false;
  }

  // The node starting at the current event; leaves its last event current.
  bool Node(json* out, std::string* error) {
    switch (event_.type) {
      case YAML_SCALAR_EVENT:
        return Scalar(out, error);
      case YAML_SEQUENCE_START_EVENT: {
        *out = json::array();
        while (true) {
          if (!Next(error)) return false;
          if (event_.type == YAML_SEQUENCE_END_EVENT) return true;
          json item;
          if (!Node(&item, error)) return false;
          out->push_back(std::move(item));
        }
      }
      case YAML_MAPPING_START_EVENT: {
        *out = json::object();
        while (true) {
          if (!Next(error)) return false;
          if (event_.type == YAML_MAPPING_END_EVENT) return true;
          if (event_.type != YAML_SCALAR_EVENT) return Fail("a key must be a scalar", error);
          const std::string key(reinterpret_cast<const char*>(event_.data.scalar.value),
                                event_.data.scalar.length);
          if (key == "<<" && event_.data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
            return Fail("merge keys (<<) are not supported", error);
          }
          // kubectl refuses a duplicate field rather than keeping one of them silently.
          if (out->contains(key)) return Fail("duplicate key \"" + key + "\"", error);
          json value;
          if (!Next(error) || !Node(&value, error)) return false;
          (*out)[key] = std::move(value);
        }
      }
      case YAML_ALIAS_EVENT:
        return Fail("aliases (*name) are not supported", error);
      default:
        return Fail("expected a value", error);
    }
  }

  bool Scalar(json* out, std::string* error) {
    const std::string text(reinterpret_cast<const char*>(event_.data.scalar.value),
                           event_.data.scalar.length);
    const char* tag = reinterpret_cast<const char*>(event_.data.scalar.tag);
    if (tag == nullptr || std::string_view(tag) == "!") {
      *out = event_.data.scalar.style == YAML_PLAIN_SCALAR_STYLE && tag == nullptr
                 ? ResolvePlain(text)
                 : json(text);
      return true;
    }
    const std::string_view t(tag);
    if (t == "tag:yaml.org,2002:str") {
      *out = text;
      return true;
    }
    static const std::map<std::string_view, json::value_t> kCore = {
        {"tag:yaml.org,2002:int", json::value_t::number_integer},
        {"tag:yaml.org,2002:float", json::value_t::number_float},
        {"tag:yaml.org,2002:bool", json::value_t::boolean},
        {"tag:yaml.org,2002:null", json::value_t::null}};
    auto it = kCore.find(t);
    if (it == kCore.end()) return Fail("unsupported tag " + std::string(t), error);
    *out = ResolvePlain(text);
    const bool integer = out->is_number_integer();
    const bool fits = out->type() == it->second ||
                      (it->second == json::value_t::number_float && out->is_number()) ||
                      (it->second == json::value_t::number_integer && integer);
    if (!fits) return Fail("\"" + text + "\" is no valid !!" + std::string(t.substr(18)), error);
    if (it->second == json::value_t::number_float) *out = out->get<double>();
    return true;
  }

  yaml_parser_t parser_;
  yaml_event_t event_;
  bool has_event_ = false;
};

// The JSON Schema name of a value's type.
std::string TypeName(const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      return "null";
    case json::value_t::boolean:
      return "boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
      return "integer";
    case json::value_t::number_float:
      return "number";
    case json::value_t::string:
      return "string";
    case json::value_t::array:
      return "array";
    default:
      return "object";
  }
}

bool HasType(const json& value, const std::string& type) {
  if (type == "number") return value.is_number();
  return TypeName(value) == type;
}

// A value as a message quotes it, cut short.
std::string Show(const json& value) {
  if (value.is_object()) return "a mapping";
  if (value.is_array()) return "a list";
  std::string text = value.dump();
  return text.size() > 40 ? text.substr(0, 37) + "..." : text;
}

// Standard base64 with padding, as Kubernetes decodes a Secret's data. (Not a std::regex: libstdc++
// matches recursively, one frame per character, and a certificate is thousands of them.)
bool IsBase64(const std::string& text) {
  if (text.size() % 4 != 0) return false;
  const size_t padding = text.ends_with("==") ? 2 : text.ends_with("=") ? 1 : 0;
  return std::all_of(text.begin(), text.end() - padding,
                     [](unsigned char c) { return std::isalnum(c) || c == '+' || c == '/'; });
}

std::string Where(const std::string& path) { return path.empty() ? "(top level)" : path; }

}  // namespace

bool ParseYamlStream(std::string_view text, std::vector<json>* documents, std::string* error) {
  documents->clear();
  YamlReader reader(text);
  return reader.Stream(documents, error);
}

std::string JoinPath(const std::string& parent, const std::string& key) {
  static const std::regex kWord("[A-Za-z0-9_-]+");
  if (!std::regex_match(key, kWord)) return parent + "[" + json(key).dump() + "]";
  return parent.empty() ? key : parent + "." + key;
}

std::string JoinPath(const std::string& parent, size_t index) {
  return parent + "[" + std::to_string(index) + "]";
}

bool SchemaSet::Load(const std::string& dir, std::string* error) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    json schema = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (!in || schema.is_discarded()) {
      *error = entry.path().string() + ": not readable JSON";
      return false;
    }
    schemas_[entry.path().stem().string()] = std::move(schema);
  }
  if (ec || schemas_.empty()) {
    *error = dir + ": no schemas" + (ec ? " (" + ec.message() + ")" : "");
    return false;
  }
  return true;
}

std::string SchemaSet::SchemaName(const std::string& api_version, const std::string& kind) {
  std::string name = kind;
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const size_t slash = api_version.find('/');
  if (slash == std::string::npos) return name + "-" + api_version;
  // The file names keep the group's first label: networking.k8s.io/v1 gives -networking-v1.
  const std::string group = api_version.substr(0, std::min(slash, api_version.find('.')));
  return name + "-" + group + "-" + api_version.substr(slash + 1);
}

std::vector<std::string> SchemaSet::Validate(const json& object) const {
  if (!object.is_object()) return {"(top level): expected a mapping, got " + Show(object)};
  const json* api_version = object.contains("apiVersion") ? &object["apiVersion"] : nullptr;
  const json* kind = object.contains("kind") ? &object["kind"] : nullptr;
  if (api_version == nullptr || !api_version->is_string() || kind == nullptr ||
      !kind->is_string()) {
    return {"(top level): apiVersion and kind must be strings"};
  }
  const std::string name = SchemaName(*api_version, *kind);
  auto it = schemas_.find(name);
  if (it == schemas_.end() || name.front() == '_') {
    return {"(top level): no schema for apiVersion " + api_version->get<std::string>() + " kind " +
            kind->get<std::string>() + " (" + name + ".json)"};
  }
  std::vector<std::string> errors;
  Check(it->second, name, object, "", &errors);
  return errors;
}

const json* SchemaSet::Resolve(const std::string& ref, std::string* file) const {
  // "/api/_definitions.json#/$defs/NAME": a file of this set (none: the referring one), then a
  // JSON pointer into it.
  const size_t hash = ref.find('#');
  if (hash == std::string::npos) return nullptr;
  if (hash > 0) {
    *file = ref.substr(0, hash);
    *file = file->substr(file->rfind('/') + 1);
    if (file->size() > 5 && file->ends_with(".json")) file->resize(file->size() - 5);
  }
  auto it = schemas_.find(*file);
  if (it == schemas_.end()) return nullptr;
  const json::json_pointer pointer(ref.substr(hash + 1));
  return it->second.contains(pointer) ? &it->second.at(pointer) : nullptr;
}

void SchemaSet::Check(const json& schema, const std::string& file, const json& value,
                      const std::string& path, std::vector<std::string>* errors) const {
  if (schema.is_boolean()) {
    if (!schema.get<bool>()) errors->push_back(Where(path) + ": not allowed");
    return;
  }
  // A keyword this validator does not know would be a check silently skipped: refuse it, so that
  // a schema update that brings one in fails here instead of passing everything.
  static const std::set<std::string> kKnown = {
      "$schema", "$id",      "$ref",       "type",  "enum",
      "format",  "required", "properties", "items", "additionalProperties",
      "oneOf",   "anyOf",    "allOf",      "title", "default"};
  for (auto it = schema.begin(); it != schema.end(); ++it) {
    const std::string& keyword = it.key();
    if (!kKnown.count(keyword) && !keyword.starts_with("x-") && keyword != "description") {
      errors->push_back(Where(path) + ": the schema's keyword \"" + keyword +
                        "\" is not supported by this validator");
    }
  }
  if (schema.contains("$ref")) {
    std::string target_file = file;
    const json* target = Resolve(schema["$ref"].get<std::string>(), &target_file);
    if (target == nullptr) {
      errors->push_back(Where(path) + ": unresolved $ref " + schema["$ref"].dump());
    } else {
      Check(*target, target_file, value, path, errors);
    }
  }
  if (schema.contains("type")) {
    const json& type = schema["type"];
    std::vector<std::string> types;
    if (type.is_string()) {
      types.push_back(type.get<std::string>());
    } else {
      for (const json& t : type) types.push_back(t.get<std::string>());
    }
    if (std::none_of(types.begin(), types.end(),
                     [&](const std::string& t) { return HasType(value, t); })) {
      std::string expected;
      for (size_t i = 0; i < types.size(); ++i) {
        expected += (i == 0 ? "" : i + 1 == types.size() ? " or " : ", ") + types[i];
      }
      errors->push_back(Where(path) + ": expected " + expected + ", got " + TypeName(value) + " " +
                        Show(value));
      return;  // the other keywords would only repeat the mismatch
    }
  }
  if (schema.contains("enum")) {
    const json& allowed = schema["enum"];
    if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
      errors->push_back(Where(path) + ": " + Show(value) + " is not one of " + allowed.dump());
    }
  }
  if (schema.contains("format")) {
    const std::string format = schema["format"].get<std::string>();
    if (format == "int32" && value.is_number_integer() &&
        (value.get<int64_t>() < std::numeric_limits<int32_t>::min() ||
         value.get<int64_t>() > std::numeric_limits<int32_t>::max())) {
      errors->push_back(Where(path) + ": " + Show(value) + " is out of int32 range");
    } else if ((format == "int32" || format == "int64") && value.is_number_unsigned()) {
      errors->push_back(Where(path) + ": " + Show(value) + " is out of " + format + " range");
    } else if (format == "byte" && value.is_string()) {
      if (!IsBase64(value.get<std::string>())) {
        errors->push_back(Where(path) + ": not base64 (format byte)");
      }
    } else if (format != "int32" && format != "int64" && format != "byte" &&
               format != "date-time") {
      // date-time is accepted unchecked: no manifest sets a timestamp (status fields do).
      errors->push_back(Where(path) + ": the schema's format \"" + format +
                        "\" is not supported by this validator");
    }
  }
  if (value.is_object()) {
    if (schema.contains("required")) {
      for (const json& name : schema["required"]) {
        if (!value.contains(name.get<std::string>())) {
          errors->push_back(Where(path) + ": missing required field " + name.dump());
        }
      }
    }
    const json* properties = schema.contains("properties") ? &schema["properties"] : nullptr;
    const json* additional =
        schema.contains("additionalProperties") ? &schema["additionalProperties"] : nullptr;
    for (const auto& [key, field] : value.items()) {
      const std::string field_path = JoinPath(path, key);
      if (properties != nullptr && properties->contains(key)) {
        Check((*properties)[key], file, field, field_path, errors);
      } else if (additional != nullptr && additional->is_boolean() && !additional->get<bool>()) {
        errors->push_back(field_path + ": unknown field");
      } else if (additional != nullptr && additional->is_object()) {
        Check(*additional, file, field, field_path, errors);
      }
    }
  }
  if (value.is_array() && schema.contains("items")) {
    for (size_t i = 0; i < value.size(); ++i) {
      Check(schema["items"], file, value[i], JoinPath(path, i), errors);
    }
  }
  // The alternatives' own errors, to say why none matched.
  auto alternatives = [&](const char* keyword, std::vector<std::vector<std::string>>* failures) {
    int matched = 0;
    for (const json& alternative : schema[keyword]) {
      std::vector<std::string> own;
      Check(alternative, file, value, path, &own);
      if (own.empty()) {
        ++matched;
      } else {
        failures->push_back(std::move(own));
      }
    }
    return matched;
  };
  auto summary = [](const std::vector<std::vector<std::string>>& failures) {
    std::string text;
    for (const std::vector<std::string>& own : failures) {
      text += (text.empty() ? "" : "; ") + own.front().substr(own.front().find(": ") + 2);
    }
    return text;
  };
  if (schema.contains("oneOf")) {
    std::vector<std::vector<std::string>> failures;
    const int matched = alternatives("oneOf", &failures);
    if (matched == 0) {
      errors->push_back(Where(path) + ": matches no alternative (" + summary(failures) + ")");
    } else if (matched > 1) {
      errors->push_back(Where(path) + ": matches " + std::to_string(matched) +
                        " alternatives of a oneOf (exactly one must)");
    }
  }
  if (schema.contains("anyOf")) {
    std::vector<std::vector<std::string>> failures;
    if (alternatives("anyOf", &failures) == 0) {
      errors->push_back(Where(path) + ": matches no alternative (" + summary(failures) + ")");
    }
  }
  if (schema.contains("allOf")) {
    for (const json& part : schema["allOf"]) Check(part, file, value, path, errors);
  }
}

}  // namespace mltune::testing::k8s
