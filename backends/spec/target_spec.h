// Declarative descriptions of the hardware a candidate is scored for: compute peaks per element
// type, memory levels, units (matrix unit, vector width), devices and the links between them.
// One JSON file per target under backends/specs/, read at start-up; the simulators and the
// analytical cost model take their numbers from here and nowhere else.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace mltune::backends {

struct MemoryLevel {
  std::string name;      // "hbm", "vmem", "sram", ...
  int64_t bytes = 0;     // capacity per device
  double bandwidth = 0;  // bytes/s per device
};

struct Link {
  std::string name;      // "ici", "nvlink", "pcie", "d2d"
  double bandwidth = 0;  // bytes/s per direction
  double latency_s = 0;
};

struct TargetSpec {
  std::string name;  // file stem, e.g. "tpu-v3-core"
  std::string kind;  // "tpu", "mcm", "gpu-cluster", "cpu"
  std::string description;
  double clock_ghz = 0;
  // Peak operations per second per device, by element type name ("bf16", "f32", "s8", ...).
  std::map<std::string, double> peak_ops;
  std::vector<MemoryLevel> memory;  // outermost (largest) first
  // Matrix unit and vector unit shape (0 when absent).
  int64_t matrix_unit_rows = 0, matrix_unit_cols = 0, matrix_units = 0;
  int64_t vector_lanes = 0;
  double kernel_overhead_s = 0;  // fixed cost of launching one kernel
  int64_t devices = 1;
  std::string topology;  // "single", "ring", "all-to-all"
  std::vector<Link> links;

  // Peak for `type`, falling back to f32's when the type is not listed; 0 when neither is.
  double PeakOps(std::string_view type) const;
  // The memory level named `name`, or nullptr.
  const MemoryLevel* Memory(std::string_view name) const;
};

// Parses a spec from JSON text. Errors are InvalidArgument and name `filename`, the line and
// column of a syntax error, or the field that is missing, mistyped or out of range.
absl::StatusOr<TargetSpec> ParseTargetSpec(std::string_view json, const std::string& filename);
absl::StatusOr<TargetSpec> LoadTargetSpec(const std::string& path);
// Every `*.json` under `dir`, by name; the first bad file is an error.
absl::StatusOr<std::map<std::string, TargetSpec>> LoadTargetSpecs(const std::string& dir);

}  // namespace mltune::backends

namespace mltune::backends {

// The targets a process knows: the specs built into the binary (backends/specs/*.json at build
// time), plus any a directory adds at start-up (a file with a built-in's name replaces it).
// Mutated only during start-up, before threads read it.
class TargetRegistry {
 public:
  static TargetRegistry& Global();

  absl::Status AddDirectory(const std::string& dir);
  void Add(TargetSpec spec);
  const TargetSpec* Find(std::string_view name) const;                 // nullptr when unknown
  std::vector<const TargetSpec*> OfKind(std::string_view kind) const;  // by name
  std::vector<std::string> Names() const;                              // sorted

 private:
  std::map<std::string, TargetSpec, std::less<>> specs_;
};

// The built-in specs' JSON texts by name (generated at build time).
const std::map<std::string, std::string>& BuiltinTargetSpecTexts();

}  // namespace mltune::backends
