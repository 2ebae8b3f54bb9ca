// Split files in the repository's output format, and extending a forward split to the backward
// nodes of a training graph through colocation classes.
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "optimizers/device_partition/device_partition.h"
#include "optimizers/device_partition/json_util.h"

namespace mltune::opt::partition {

using nlohmann::json;

absl::StatusOr<Split> ParseSplit(const PartitionGraph& g, std::string_view text,
                                 std::string_view source) {
  absl::StatusOr<json> root = ParseJsonText(text, source);
  if (!root.ok()) return root.status();
  if (!root->is_object()) return FieldError(source, "", "expected a JSON object");
  std::map<int64_t, int32_t> index_of_id;
  for (int32_t v = 0; v < g.size(); ++v) index_of_id[g.nodes[static_cast<size_t>(v)].id] = v;
  Split split(g.nodes.size(), -1);
  auto read = [&](const char* key, bool accelerators) -> absl::Status {
    if (!root->contains(key)) {
      return accelerators ? FieldError(source, key, "missing (expected [{\"nodes\": [ids]}, ...])")
                          : absl::OkStatus();
    }
    const json& devices = (*root)[key];
    if (!devices.is_array()) return FieldError(source, key, "expected an array of devices");
    for (size_t d = 0; d < devices.size(); ++d) {
      const std::string where = absl::StrCat(std::string(source), ": ", key, "[", d, "]");
      if (!devices[d].is_object() || !devices[d].contains("nodes") ||
          !devices[d]["nodes"].is_array()) {
        return FieldError(where, "nodes", "expected an array of node ids");
      }
      for (const json& id : devices[d]["nodes"]) {
        if (!id.is_number_integer()) {
          return FieldError(where, "nodes", absl::StrCat("expected a node id, got ", id.dump()));
        }
        auto it = index_of_id.find(id.get<int64_t>());
        if (it == index_of_id.end()) {
          return FieldError(where, "nodes",
                            absl::StrCat("no node of ", g.name, " has id ", id.dump()));
        }
        const int32_t device = accelerators ? static_cast<int32_t>(d) + 1 : 0;
        int32_t& slot = split[static_cast<size_t>(it->second)];
        if (slot != -1 && slot != device) {
          return FieldError(where, "nodes", absl::StrCat("node ", id.dump(), " is on two devices"));
        }
        slot = device;
      }
    }
    return absl::OkStatus();
  };
  if (absl::Status s = read("fpgas", true); !s.ok()) return s;
  if (absl::Status s = read("cpus", false); !s.ok()) return s;
  // Nodes the split leaves out (the backward pass of a training graph) follow their class.
  for (int32_t v = 0; v < g.size(); ++v) {
    if (split[static_cast<size_t>(v)] != -1) continue;
    std::set<int32_t> devices;
    for (int32_t w : g.group_nodes[static_cast<size_t>(g.nodes[static_cast<size_t>(v)].group)]) {
      if (split[static_cast<size_t>(w)] != -1) devices.insert(split[static_cast<size_t>(w)]);
    }
    const int64_t id = g.nodes[static_cast<size_t>(v)].id;
    if (devices.empty()) {
      return FieldError(source, "",
                        absl::StrCat("node ", id,
                                     " is on no device, and no node of its "
                                     "colocation class is either"));
    }
    if (devices.size() > 1) {
      return FieldError(source, "",
                        absl::StrCat("node ", id,
                                     " is on no device, and its colocation class is "
                                     "on several"));
    }
  }
  for (int32_t v = 0; v < g.size(); ++v) {
    if (split[static_cast<size_t>(v)] != -1) continue;
    for (int32_t w : g.group_nodes[static_cast<size_t>(g.nodes[static_cast<size_t>(v)].group)]) {
      if (split[static_cast<size_t>(w)] != -1) {
        split[static_cast<size_t>(v)] = split[static_cast<size_t>(w)];
        break;
      }
    }
  }
  return split;
}

absl::StatusOr<Split> LoadSplit(const PartitionGraph& g, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  return ParseSplit(g, buffer.str(), path);
}

std::string FormatSplit(const PartitionGraph& g, const Split& split, Objective objective,
                        double objective_value) {
  int32_t top = g.accelerators;
  for (int32_t d : split) top = std::max(top, d);
  json fpgas = json::array();
  for (int32_t d = 1; d <= top; ++d) {
    json nodes = json::array();
    for (size_t v = 0; v < split.size(); ++v) {
      if (split[v] == d) nodes.push_back(g.nodes[v].id);
    }
    fpgas.push_back(json{{"nodes", nodes}});
  }
  json cpu = json::array();
  for (size_t v = 0; v < split.size(); ++v) {
    if (split[v] == 0) cpu.push_back(g.nodes[v].id);
  }
  json out;
  out[objective == Objective::kThroughput ? "maxLoad" : "totalLatency"] = objective_value;
  out["fpgas"] = fpgas;
  out["cpus"] = json::array({json{{"nodes", cpu}}});
  return out.dump(1) + "\n";
}

}  // namespace mltune::opt::partition
