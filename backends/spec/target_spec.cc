#include "backends/spec/target_spec.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace mltune::backends {
namespace {

using nlohmann::json;

// Line and column of a byte offset, for syntax errors.
std::pair<int, int> LineColumn(std::string_view text, size_t offset) {
  int line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

class Reader {
 public:
  Reader(const json& object, std::string where) : object_(object), where_(std::move(where)) {}

  absl::Status Error(const std::string& field, const std::string& what) const {
    return absl::InvalidArgumentError(absl::StrCat(where_, ": field '", field, "': ", what));
  }
  bool Has(const std::string& field) const { return object_.contains(field); }

  absl::Status String(const std::string& field, std::string* out, bool required = true) const {
    if (!object_.contains(field)) return required ? Error(field, "missing") : absl::OkStatus();
    if (!object_[field].is_string()) return Error(field, "expected a string");
    *out = object_[field].get<std::string>();
    return absl::OkStatus();
  }
  // A number >= 0 (> 0 when `positive`).
  absl::Status Number(const std::string& field, double* out, bool required, bool positive) const {
    if (!object_.contains(field)) return required ? Error(field, "missing") : absl::OkStatus();
    if (!object_[field].is_number()) return Error(field, "expected a number");
    const double value = object_[field].get<double>();
    if (!(value >= 0) || (positive && value == 0)) {
      return Error(field, absl::StrCat("expected a number ", positive ? "> 0" : ">= 0", ", got ",
                                       object_[field].dump()));
    }
    *out = value;
    return absl::OkStatus();
  }
  absl::Status Integer(const std::string& field, int64_t* out, bool required, bool positive) const {
    double value = static_cast<double>(*out);
    if (absl::Status s = Number(field, &value, required, positive); !s.ok()) return s;
    if (object_.contains(field) && !object_[field].is_number_integer()) {
      return Error(field, "expected an integer");
    }
    *out = static_cast<int64_t>(value);
    return absl::OkStatus();
  }

 private:
  const json& object_;
  std::string where_;
};

}  // namespace

double TargetSpec::PeakOps(std::string_view type) const {
  auto it = peak_ops.find(std::string(type));
  if (it != peak_ops.end()) return it->second;
  it = peak_ops.find("f32");
  return it != peak_ops.end() ? it->second : 0;
}

const MemoryLevel* TargetSpec::Memory(std::string_view name) const {
  for (const MemoryLevel& level : memory) {
    if (level.name == name) return &level;
  }
  return nullptr;
}

absl::StatusOr<TargetSpec> ParseTargetSpec(std::string_view text, const std::string& filename) {
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    auto [line, column] = LineColumn(text, e.byte > 0 ? e.byte - 1 : 0);
    return absl::InvalidArgumentError(
        absl::StrCat(filename, ":", line, ":", column, ": invalid JSON (", e.what(), ")"));
  }
  if (!root.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(filename, ": expected a JSON object"));
  }
  TargetSpec spec;
  Reader r(root, filename);
  if (absl::Status s = r.String("name", &spec.name); !s.ok()) return s;
  if (absl::Status s = r.String("kind", &spec.kind); !s.ok()) return s;
  if (absl::Status s = r.String("description", &spec.description, false); !s.ok()) return s;
  if (absl::Status s = r.Number("clock_ghz", &spec.clock_ghz, true, true); !s.ok()) return s;
  if (!root.contains("peak_ops") || !root["peak_ops"].is_object() || root["peak_ops"].empty()) {
    return r.Error("peak_ops", "expected an object of element type -> operations per second");
  }
  for (const auto& [type, value] : root["peak_ops"].items()) {
    if (!value.is_number() || !(value.get<double>() > 0)) {
      return r.Error(absl::StrCat("peak_ops.", type), "expected a number > 0");
    }
    spec.peak_ops[type] = value.get<double>();
  }
  if (!root.contains("memory") || !root["memory"].is_array() || root["memory"].empty()) {
    return r.Error("memory", "expected a non-empty array of {name, bytes, bandwidth}");
  }
  for (size_t i = 0; i < root["memory"].size(); ++i) {
    Reader m(root["memory"][i], absl::StrCat(filename, ": memory[", i, "]"));
    MemoryLevel level;
    if (absl::Status s = m.String("name", &level.name); !s.ok()) return s;
    if (absl::Status s = m.Integer("bytes", &level.bytes, true, true); !s.ok()) return s;
    if (absl::Status s = m.Number("bandwidth", &level.bandwidth, true, true); !s.ok()) return s;
    spec.memory.push_back(level);
  }
  if (root.contains("matrix_unit")) {
    Reader u(root["matrix_unit"], absl::StrCat(filename, ": matrix_unit"));
    if (absl::Status s = u.Integer("rows", &spec.matrix_unit_rows, true, true); !s.ok()) return s;
    if (absl::Status s = u.Integer("cols", &spec.matrix_unit_cols, true, true); !s.ok()) return s;
    if (absl::Status s = u.Integer("count", &spec.matrix_units, true, true); !s.ok()) return s;
  }
  if (absl::Status s = r.Integer("vector_lanes", &spec.vector_lanes, false, false); !s.ok()) {
    return s;
  }
  if (absl::Status s = r.Number("kernel_overhead_s", &spec.kernel_overhead_s, false, false);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = r.Integer("devices", &spec.devices, false, true); !s.ok()) return s;
  spec.topology = spec.devices > 1 ? "" : "single";
  if (absl::Status s = r.String("topology", &spec.topology, spec.devices > 1); !s.ok()) return s;
  if (spec.topology != "single" && spec.topology != "ring" && spec.topology != "all-to-all") {
    return r.Error("topology",
                   absl::StrCat("expected single, ring or all-to-all, got '", spec.topology, "'"));
  }
  if (root.contains("links")) {
    if (!root["links"].is_array()) return r.Error("links", "expected an array");
    for (size_t i = 0; i < root["links"].size(); ++i) {
      Reader l(root["links"][i], absl::StrCat(filename, ": links[", i, "]"));
      Link link;
      if (absl::Status s = l.String("name", &link.name); !s.ok()) return s;
      if (absl::Status s = l.Number("bandwidth", &link.bandwidth, true, true); !s.ok()) return s;
      if (absl::Status s = l.Number("latency_s", &link.latency_s, true, false); !s.ok()) return s;
      spec.links.push_back(link);
    }
  }
  if (spec.devices > 1 && spec.links.empty()) {
    return r.Error("links", "a target with several devices needs at least one link");
  }
  return spec;
}

absl::StatusOr<TargetSpec> LoadTargetSpec(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return ParseTargetSpec(text, path);
}

absl::StatusOr<std::map<std::string, TargetSpec>> LoadTargetSpecs(const std::string& dir) {
  std::error_code ec;
  std::map<std::string, TargetSpec> specs;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().extension() != ".json") continue;
    absl::StatusOr<TargetSpec> spec = LoadTargetSpec(entry.path().string());
    if (!spec.ok()) return spec.status();
    if (spec->name != entry.path().stem().string()) {
      return absl::InvalidArgumentError(absl::StrCat(entry.path().string(), ": name '", spec->name,
                                                     "' differs from the file name"));
    }
    specs.emplace(spec->name, *std::move(spec));
  }
  if (ec) return absl::NotFoundError(absl::StrCat(dir, ": ", ec.message()));
  return specs;
}

}  // namespace mltune::backends

namespace mltune::backends {

TargetRegistry& TargetRegistry::Global() {
  static TargetRegistry* registry = [] {
    auto* r = new TargetRegistry;
    for (const auto& [name, text] : BuiltinTargetSpecTexts()) {
      absl::StatusOr<TargetSpec> spec =
          ParseTargetSpec(text, absl::StrCat("<built-in ", name, ">"));
      // The built-ins are parsed by a test at build time; a bad one is a build defect.
      if (!spec.ok()) std::abort();
      r->Add(*std::move(spec));
    }
    return r;
  }();
  return *registry;
}

absl::Status TargetRegistry::AddDirectory(const std::string& dir) {
  absl::StatusOr<std::map<std::string, TargetSpec>> specs = LoadTargetSpecs(dir);
  if (!specs.ok()) return specs.status();
  for (auto& [name, spec] : *specs) Add(std::move(spec));
  return absl::OkStatus();
}

void TargetRegistry::Add(TargetSpec spec) {
  std::string name = spec.name;
  specs_.insert_or_assign(std::move(name), std::move(spec));
}

const TargetSpec* TargetRegistry::Find(std::string_view name) const {
  auto it = specs_.find(name);
  return it == specs_.end() ? nullptr : &it->second;
}

std::vector<const TargetSpec*> TargetRegistry::OfKind(std::string_view kind) const {
  std::vector<const TargetSpec*> out;
  for (const auto& [name, spec] : specs_) {
    if (spec.kind == kind) out.push_back(&spec);
  }
  return out;
}

std::vector<std::string> TargetRegistry::Names() const {
  std::vector<std::string> out;
  for (const auto& [name, spec] : specs_) out.push_back(name);
  return out;
}

}  // namespace mltune::backends
