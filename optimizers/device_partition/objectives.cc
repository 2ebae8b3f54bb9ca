// The paper's two objectives on a split, and the checks every split must pass.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "optimizers/device_partition/device_partition.h"

namespace mltune::opt::partition {
namespace {

// Devices 0..the highest the split uses (at least the graph's).
int32_t DeviceCount(const PartitionGraph& g, const Split& split) {
  int32_t top = g.accelerators;
  for (int32_t d : split) top = std::max(top, d);
  return top + 1;
}

// Device range, unsupported nodes, colocation and memory; fills everything but the objective.
SplitScore Check(const PartitionGraph& g, const Split& split) {
  SplitScore score;
  auto invalid = [&](std::string error) {
    score.valid = false;
    score.error = std::move(error);
    return score;
  };
  if (split.size() != g.nodes.size()) {
    return invalid(
        absl::StrCat("the split places ", split.size(), " nodes, the graph has ", g.nodes.size()));
  }
  const int32_t top = DeviceCount(g, split) - 1;
  std::vector<double> bytes(static_cast<size_t>(top) + 1, 0);
  for (size_t v = 0; v < split.size(); ++v) {
    const PartitionNode& n = g.nodes[v];
    if (split[v] < 0) return invalid(absl::StrCat("node ", n.id, " is on device ", split[v]));
    if (split[v] == 0 && g.cpus == 0) {
      return invalid(absl::StrCat("node ", n.id, " is on the CPU, and the graph has no CPU"));
    }
    if (split[v] != 0 && !n.accelerator_ok) {
      return invalid(absl::StrCat("node ", n.id, " is not supported on an accelerator"));
    }
    bytes[static_cast<size_t>(split[v])] += n.bytes;
  }
  for (const std::vector<int32_t>& members : g.group_nodes) {
    for (int32_t v : members) {
      if (split[static_cast<size_t>(v)] != split[static_cast<size_t>(members[0])]) {
        return invalid(absl::StrCat("nodes ", g.nodes[static_cast<size_t>(members[0])].id, " and ",
                                    g.nodes[static_cast<size_t>(v)].id,
                                    " share a colocation class but not a device"));
      }
    }
  }
  if (top > g.accelerators) {
    score.feasible = false;
    score.error =
        absl::StrCat("the split uses accelerator ", top, ", the graph has ", g.accelerators);
  }
  for (int32_t d = 1; d <= top; ++d) {
    score.max_bytes = std::max(score.max_bytes, bytes[static_cast<size_t>(d)]);
    score.overflow_bytes += std::max(0.0, bytes[static_cast<size_t>(d)] - g.accelerator_bytes);
    if (bytes[static_cast<size_t>(d)] > g.accelerator_bytes && score.feasible) {
      score.feasible = false;
      score.error = absl::StrCat("accelerator ", d, " holds ", bytes[static_cast<size_t>(d)],
                                 " bytes, over its ", g.accelerator_bytes);
    }
  }
  return score;
}

}  // namespace

std::string_view ObjectiveName(Objective objective) {
  return objective == Objective::kThroughput ? "throughput" : "latency";
}

absl::StatusOr<Objective> ParseObjective(std::string_view name) {
  if (name == "throughput") return Objective::kThroughput;
  if (name == "latency") return Objective::kLatency;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown objective '", std::string(name), "' (expected throughput or latency)"));
}

SplitScore MaxLoad(const PartitionGraph& g, const Split& split) {
  SplitScore score = Check(g, split);
  if (!score.valid) return score;
  const size_t devices = static_cast<size_t>(DeviceCount(g, split));
  std::vector<double> load(devices, 0);
  std::vector<bool> used(devices, false);
  for (size_t v = 0; v < split.size(); ++v) {
    const size_t d = static_cast<size_t>(split[v]);
    used[d] = true;
    load[d] += d == 0 ? g.nodes[v].cpu_latency : g.nodes[v].accelerator_latency;
  }
  // A node's output is sent once and received once by every other device that reads it; the
  // CPU pays for neither (its transfers overlap with compute in the paper's model).
  std::vector<int32_t> stamp(devices, -1);
  for (size_t u = 0; u < split.size(); ++u) {
    const int32_t own = split[u];
    bool sent = false;
    for (int32_t w : g.succ[u]) {
      const int32_t d = split[static_cast<size_t>(w)];
      if (d == own || stamp[static_cast<size_t>(d)] == static_cast<int32_t>(u)) continue;
      stamp[static_cast<size_t>(d)] = static_cast<int32_t>(u);
      sent = true;
      if (d != 0) load[static_cast<size_t>(d)] += g.nodes[u].out_cost;
    }
    if (sent && own != 0) load[static_cast<size_t>(own)] += g.nodes[u].out_cost;
  }
  score.objective = 0;
  for (size_t d = 0; d < devices; ++d) {
    if (used[d]) score.objective = std::max(score.objective, load[d]);
  }
  return score;
}

SplitScore Latency(const PartitionGraph& g, const Split& split) {
  SplitScore score = Check(g, split);
  if (!score.valid) return score;
  if (!g.IsDag()) {
    score.valid = false;
    score.error = "the latency objective needs an acyclic graph";
    return score;
  }
  const size_t n = g.nodes.size();
  // Pieces: for each accelerator, the number of times a path has left and re-entered its set.
  std::vector<int32_t> unit(n, -1);
  std::vector<bool> on_cpu(n, false);
  int32_t units = 0;
  const int32_t devices = DeviceCount(g, split);
  std::vector<bool> used(static_cast<size_t>(devices), false);
  for (size_t v = 0; v < n; ++v) used[static_cast<size_t>(split[v])] = true;
  std::vector<int32_t> level(n);
  for (int32_t d = 1; d < devices; ++d) {
    if (!used[static_cast<size_t>(d)]) continue;
    int32_t max_level = 0;
    for (int32_t v : g.topo) {
      const bool inside = split[static_cast<size_t>(v)] == d;
      int32_t l = inside ? 1 : 0;
      for (int32_t u : g.pred[static_cast<size_t>(v)]) {
        const bool u_inside = split[static_cast<size_t>(u)] == d;
        l = std::max(l, level[static_cast<size_t>(u)] + (inside && !u_inside ? 1 : 0));
      }
      level[static_cast<size_t>(v)] = l;
      if (inside) max_level = std::max(max_level, l);
    }
    for (size_t v = 0; v < n; ++v) {
      if (split[v] == d) unit[v] = units + level[v] - 1;
    }
    units += max_level;
  }
  for (size_t v = 0; v < n; ++v) {
    if (split[v] == 0) {
      on_cpu[v] = true;
      unit[v] = units++;
    }
  }
  std::vector<std::vector<int32_t>> members(static_cast<size_t>(units));
  for (size_t v = 0; v < n; ++v)
    members[static_cast<size_t>(unit[v])].push_back(static_cast<int32_t>(v));
  // The pieces in a topological order of the contracted graph (acyclic by construction).
  std::vector<int32_t> indegree(static_cast<size_t>(units), 0);
  std::vector<std::vector<int32_t>> unit_succ(static_cast<size_t>(units));
  for (size_t u = 0; u < n; ++u) {
    for (int32_t w : g.succ[u]) {
      const int32_t a = unit[u], b = unit[static_cast<size_t>(w)];
      if (a == b) continue;
      unit_succ[static_cast<size_t>(a)].push_back(b);
      ++indegree[static_cast<size_t>(b)];
    }
  }
  std::vector<int32_t> ready;
  for (int32_t p = 0; p < units; ++p) {
    if (indegree[static_cast<size_t>(p)] == 0) ready.push_back(p);
  }
  std::vector<double> finish(n, 0);
  std::vector<int32_t> stamp(n, -1);
  double last = 0;
  int32_t done = 0;
  while (!ready.empty()) {
    const int32_t p = ready.back();
    ready.pop_back();
    ++done;
    const std::vector<int32_t>& piece = members[static_cast<size_t>(p)];
    double start = 0, in_cost = 0, run = 0, out_cost = 0;
    for (int32_t v : piece) {
      const PartitionNode& node = g.nodes[static_cast<size_t>(v)];
      run += on_cpu[static_cast<size_t>(v)] ? node.cpu_latency : node.accelerator_latency;
      for (int32_t u : g.pred[static_cast<size_t>(v)]) {
        if (unit[static_cast<size_t>(u)] == p || stamp[static_cast<size_t>(u)] == p) continue;
        stamp[static_cast<size_t>(u)] = p;
        start = std::max(start, finish[static_cast<size_t>(u)]);
        in_cost += g.nodes[static_cast<size_t>(u)].out_cost;
      }
      for (int32_t w : g.succ[static_cast<size_t>(v)]) {
        if (unit[static_cast<size_t>(w)] != p) {
          out_cost += node.out_cost;
          break;
        }
      }
    }
    // A CPU node runs where its inputs already are: it pays no transfers.
    const double end =
        on_cpu[static_cast<size_t>(piece[0])] ? start + run : start + in_cost + run + out_cost;
    for (int32_t v : piece) finish[static_cast<size_t>(v)] = end;
    last = std::max(last, end);
    for (int32_t q : unit_succ[static_cast<size_t>(p)]) {
      if (--indegree[static_cast<size_t>(q)] == 0) ready.push_back(q);
    }
  }
  if (done != units) {
    score.valid = false;
    score.error = "the split's pieces form a cycle";
    return score;
  }
  score.objective = last;
  return score;
}

SplitScore Score(const PartitionGraph& g, const Split& split, Objective objective) {
  return objective == Objective::kThroughput ? MaxLoad(g, split) : Latency(g, split);
}

}  // namespace mltune::opt::partition
