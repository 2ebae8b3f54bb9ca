// JSON reading for the graph and split files (syntax errors at a line and column, field errors
// naming where they are and what was expected), and completing a graph. Internal to this folder.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace mltune::opt::partition {

absl::StatusOr<nlohmann::json> ParseJsonText(std::string_view text, std::string_view source);
// "<where>: <field>: <message>" (no field part when `field` is empty).
absl::Status FieldError(std::string_view where, std::string_view field, std::string_view message);

class JsonReader {
 public:
  JsonReader(const nlohmann::json& object, std::string where)
      : object_(object), where_(std::move(where)) {}
  // A finite number >= 0; absent and not required leaves `out` unchanged.
  absl::Status Number(const char* field, double* out, bool required) const;
  absl::Status Integer(const char* field, int64_t* out, bool required) const;
  // true/false or 1/0.
  absl::Status Flag(const char* field, bool* out, bool required) const;

 private:
  const nlohmann::json& object_;
  std::string where_;
};

struct PartitionGraph;
// Completes a graph whose nodes, succ and pred are set: deduplicates the edge lists, finds a
// topological order, renumbers the classes in it and lists each class's nodes.
void FinishGraph(PartitionGraph& graph);

}  // namespace mltune::opt::partition
