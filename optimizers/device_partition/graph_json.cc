// Reading the repository's graph files: every field checked, errors naming the node or edge.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <queue>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "optimizers/device_partition/device_partition.h"
#include "optimizers/device_partition/json_util.h"

namespace mltune::opt::partition {
namespace {

using nlohmann::json;

// Kahn's algorithm; a graph with a cycle gets a partial order (IsDag() is then false).
std::vector<int32_t> TopologicalOrder(const PartitionGraph& g) {
  std::vector<int32_t> indegree(g.nodes.size(), 0);
  for (size_t v = 0; v < g.nodes.size(); ++v) indegree[v] = static_cast<int32_t>(g.pred[v].size());
  std::vector<int32_t> ready, order;
  for (int32_t v = g.size() - 1; v >= 0; --v) {
    if (indegree[static_cast<size_t>(v)] == 0) ready.push_back(v);
  }
  while (!ready.empty()) {
    const int32_t v = ready.back();
    ready.pop_back();
    order.push_back(v);
    const auto& succ = g.succ[static_cast<size_t>(v)];
    for (auto it = succ.rbegin(); it != succ.rend(); ++it) {
      if (--indegree[static_cast<size_t>(*it)] == 0) ready.push_back(*it);
    }
  }
  return order;
}

}  // namespace

void FinishGraph(PartitionGraph& g) {
  for (auto& list : g.succ) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  for (auto& list : g.pred) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  g.topo = TopologicalOrder(g);
  // Classes numbered in topological order of their first node, so a candidate (one device per
  // class) reads in the order the graph runs; nodes off a cycle follow in file order.
  std::vector<int32_t> renumber(static_cast<size_t>(g.groups), -1);
  int32_t next = 0;
  auto visit = [&](int32_t v) {
    int32_t& slot = renumber[static_cast<size_t>(g.nodes[static_cast<size_t>(v)].group)];
    if (slot < 0) slot = next++;
  };
  for (int32_t v : g.topo) visit(v);
  for (int32_t v = 0; v < g.size(); ++v) visit(v);
  for (PartitionNode& n : g.nodes) n.group = renumber[static_cast<size_t>(n.group)];
  // Then, where the graph of classes is acyclic, in its topological order (ties by that first
  // node): a class spanning the order (one layer's op in every microbatch) is otherwise numbered
  // before classes that feed it, and a run of classes in number order (the contiguous DP, the
  // pipeline stages) is then not contiguous.
  std::vector<std::vector<int32_t>> class_succ(static_cast<size_t>(g.groups));
  std::vector<int32_t> indegree(static_cast<size_t>(g.groups), 0);
  for (int32_t v = 0; v < g.size(); ++v) {
    const int32_t a = g.nodes[static_cast<size_t>(v)].group;
    for (int32_t w : g.succ[static_cast<size_t>(v)]) {
      const int32_t b = g.nodes[static_cast<size_t>(w)].group;
      if (a != b) class_succ[static_cast<size_t>(a)].push_back(b);
    }
  }
  for (auto& list : class_succ) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
    for (int32_t b : list) ++indegree[static_cast<size_t>(b)];
  }
  std::priority_queue<int32_t, std::vector<int32_t>, std::greater<int32_t>> ready;
  for (int32_t c = 0; c < g.groups; ++c) {
    if (indegree[static_cast<size_t>(c)] == 0) ready.push(c);
  }
  std::vector<int32_t> order;
  while (!ready.empty()) {
    const int32_t c = ready.top();
    ready.pop();
    order.push_back(c);
    for (int32_t b : class_succ[static_cast<size_t>(c)]) {
      if (--indegree[static_cast<size_t>(b)] == 0) ready.push(b);
    }
  }
  if (order.size() == static_cast<size_t>(g.groups)) {
    std::vector<int32_t> position(static_cast<size_t>(g.groups));
    for (size_t i = 0; i < order.size(); ++i)
      position[static_cast<size_t>(order[i])] = static_cast<int32_t>(i);
    for (PartitionNode& n : g.nodes) n.group = position[static_cast<size_t>(n.group)];
  }
  g.group_nodes.assign(static_cast<size_t>(g.groups), {});
  for (int32_t v = 0; v < g.size(); ++v) {
    g.group_nodes[static_cast<size_t>(g.nodes[static_cast<size_t>(v)].group)].push_back(v);
  }
}

absl::StatusOr<PartitionGraph> ParsePartitionGraph(std::string_view text, std::string_view source) {
  absl::StatusOr<json> root = ParseJsonText(text, source);
  if (!root.ok()) return root.status();
  if (!root->is_object()) return FieldError(source, "", "expected a JSON object");
  const std::string src(source);
  PartitionGraph g;
  g.name = std::string(source);
  JsonReader top(*root, src);
  int64_t accelerators = 0, cpus = 0;
  if (absl::Status s = top.Number("maxSizePerFPGA", &g.accelerator_bytes, true); !s.ok()) return s;
  if (absl::Status s = top.Integer("maxFPGAs", &accelerators, true); !s.ok()) return s;
  if (absl::Status s = top.Integer("maxCPUs", &cpus, true); !s.ok()) return s;
  if (accelerators < 1 || accelerators > 4096) {
    return FieldError(source, "maxFPGAs", "expected an accelerator count in [1, 4096]");
  }
  if (cpus < 0) return FieldError(source, "maxCPUs", "expected a count >= 0");
  g.accelerators = static_cast<int32_t>(accelerators);
  g.cpus = static_cast<int32_t>(cpus);
  if (!root->contains("nodes") || !(*root)["nodes"].is_array() || (*root)["nodes"].empty()) {
    return FieldError(source, "nodes", "expected a non-empty array of nodes");
  }
  if (!root->contains("edges") || !(*root)["edges"].is_array()) {
    return FieldError(source, "edges", "expected an array of edges");
  }

  std::map<int64_t, int32_t> index_of_id;
  std::map<int64_t, int32_t> group_of_class;
  std::vector<std::pair<bool, int64_t>> classes;  // (has class, class) per node
  const json& nodes = (*root)["nodes"];
  for (size_t i = 0; i < nodes.size(); ++i) {
    const std::string where = absl::StrCat(src, ": nodes[", i, "]");
    if (!nodes[i].is_object()) return FieldError(where, "", "expected an object");
    JsonReader r(nodes[i], where);
    PartitionNode n;
    double bytes = 0;
    int64_t color = 0;
    bool has_color = false;
    if (absl::Status s = r.Integer("id", &n.id, true); !s.ok()) return s;
    if (absl::Status s = r.Flag("supportedOnFpga", &n.accelerator_ok, true); !s.ok()) return s;
    if (absl::Status s = r.Number("cpuLatency", &n.cpu_latency, true); !s.ok()) return s;
    if (absl::Status s = r.Number("fpgaLatency", &n.accelerator_latency, true); !s.ok()) return s;
    if (absl::Status s = r.Flag("isBackwardNode", &n.backward, false); !s.ok()) return s;
    if (absl::Status s = r.Number("size", &bytes, false); !s.ok()) return s;
    if (nodes[i].contains("colorClass")) {
      has_color = true;
      if (absl::Status s = r.Integer("colorClass", &color, true); !s.ok()) return s;
    }
    if (nodes[i].contains("name") && nodes[i]["name"].is_string()) {
      n.name = nodes[i]["name"].get<std::string>();
    }
    n.bytes = bytes;
    if (index_of_id.count(n.id) != 0) {
      return FieldError(where, "id", absl::StrCat("duplicate node id ", n.id));
    }
    index_of_id[n.id] = static_cast<int32_t>(i);
    if (n.name.empty()) n.name = absl::StrCat("node", n.id);
    classes.emplace_back(has_color, color);
    g.nodes.push_back(std::move(n));
  }
  // Classes in order of first appearance; a node without one is a class of its own.
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!classes[i].first) {
      g.nodes[i].group = g.groups++;
      continue;
    }
    auto [it, inserted] = group_of_class.emplace(classes[i].second, g.groups);
    if (inserted) ++g.groups;
    g.nodes[i].group = it->second;
  }

  g.succ.assign(g.nodes.size(), {});
  g.pred.assign(g.nodes.size(), {});
  std::vector<bool> has_cost(g.nodes.size(), false);
  const json& edges = (*root)["edges"];
  for (size_t i = 0; i < edges.size(); ++i) {
    const std::string where = absl::StrCat(src, ": edges[", i, "]");
    if (!edges[i].is_object()) return FieldError(where, "", "expected an object");
    JsonReader r(edges[i], where);
    int64_t from = 0, to = 0;
    double cost = 0;
    if (absl::Status s = r.Integer("sourceId", &from, true); !s.ok()) return s;
    if (absl::Status s = r.Integer("destId", &to, true); !s.ok()) return s;
    if (absl::Status s = r.Number("cost", &cost, true); !s.ok()) return s;
    auto a = index_of_id.find(from), b = index_of_id.find(to);
    if (a == index_of_id.end()) {
      return FieldError(where, "sourceId", absl::StrCat("no node has id ", from));
    }
    if (b == index_of_id.end()) {
      return FieldError(where, "destId", absl::StrCat("no node has id ", to));
    }
    PartitionNode& producer = g.nodes[static_cast<size_t>(a->second)];
    if (has_cost[static_cast<size_t>(a->second)] && std::abs(producer.out_cost - cost) > 1e-6) {
      return FieldError(
          where, "cost",
          absl::StrCat("node ", from, " already has outgoing edges of cost ", producer.out_cost,
                       " (every edge out of a node moves the "
                       "same output, so costs must be equal)"));
    }
    has_cost[static_cast<size_t>(a->second)] = true;
    producer.out_cost = cost;
    if (a->second == b->second) continue;  // a self-loop moves nothing
    g.succ[static_cast<size_t>(a->second)].push_back(b->second);
    g.pred[static_cast<size_t>(b->second)].push_back(a->second);
  }
  FinishGraph(g);
  return g;
}

std::string FormatPartitionGraph(const PartitionGraph& g) {
  // A class of one node needs no colorClass: the reader gives such a node a class of its own.
  std::vector<int32_t> class_size(static_cast<size_t>(g.groups), 0);
  for (const PartitionNode& n : g.nodes) ++class_size[static_cast<size_t>(n.group)];
  json nodes = json::array();
  for (const PartitionNode& n : g.nodes) {
    json node = {{"id", n.id},
                 {"name", n.name},
                 {"supportedOnFpga", n.accelerator_ok ? 1 : 0},
                 {"cpuLatency", n.cpu_latency},
                 {"fpgaLatency", n.accelerator_latency},
                 {"isBackwardNode", n.backward ? 1 : 0},
                 {"size", n.bytes}};
    if (class_size[static_cast<size_t>(n.group)] > 1) node["colorClass"] = n.group;
    nodes.push_back(std::move(node));
  }
  json edges = json::array();
  for (size_t v = 0; v < g.nodes.size(); ++v) {
    for (int32_t w : g.succ[v]) {
      edges.push_back({{"sourceId", g.nodes[v].id},
                       {"destId", g.nodes[static_cast<size_t>(w)].id},
                       {"cost", g.nodes[v].out_cost}});
    }
  }
  json out = {{"maxSizePerFPGA", g.accelerator_bytes},
              {"maxFPGAs", g.accelerators},
              {"maxCPUs", g.cpus},
              {"nodes", std::move(nodes)},
              {"edges", std::move(edges)}};
  return out.dump() + "\n";
}

absl::StatusOr<PartitionGraph> LoadPartitionGraph(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::stringstream buffer;
  buffer << in.rdbuf();
  absl::StatusOr<PartitionGraph> g = ParsePartitionGraph(buffer.str(), path);
  if (!g.ok()) return g.status();
  const size_t slash = path.find_last_of('/');
  g->name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (g->name.size() > 5 && g->name.ends_with(".json")) g->name.resize(g->name.size() - 5);
  return g;
}

}  // namespace mltune::opt::partition
