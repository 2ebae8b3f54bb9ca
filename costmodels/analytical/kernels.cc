#include "costmodels/analytical/kernels.h"

#include <algorithm>
#include <unordered_map>

#include "absl/strings/str_cat.h"

namespace mltune::costmodels {
namespace {

// At most one of these per kernel: each wants its own loop nest (a matrix-unit schedule, or a
// reduction's accumulation order), as in XLA's fusion rules.
bool IsHeavy(const OpNode& node) {
  if (node.matmul) return true;
  static const char* const kHeavy[] = {
      "reduce",        "reduce-window",        "gather",
      "dynamic-slice", "dynamic-update-slice", "select-and-scatter",
      "cholesky",      "triangular-solve"};
  for (const char* op : kHeavy) {
    if (node.opcode == op) return true;
  }
  return false;
}

// Reductions and gathers are kernel roots, as in XLA: fused into a consumer that broadcasts their
// result they would be recomputed per element. A dot may carry its elementwise epilogue.
bool IsFusible(const OpNode& node) {
  if (node.opcode == "concatenate" &&
      node.inputs.size() + node.weights.size() > static_cast<size_t>(kMaxFusedConcatOperands)) {
    return false;
  }
  return !node.opaque && !node.users.empty() && (node.matmul || !IsHeavy(node));
}

const OpNode& Node(const OpGraph& graph, int32_t i) { return graph.nodes[static_cast<size_t>(i)]; }

// XLA's InstructionFusion::IsExpensive for elementwise ops: transcendentals and divisions.
bool IsExpensive(const OpNode& node) {
  static const char* const kFloat[] = {"exponential", "exponential-minus-one",
                                       "log",         "log-plus-one",
                                       "logistic",    "power",
                                       "rsqrt",       "sqrt",
                                       "cbrt",        "tanh",
                                       "erf",         "sine",
                                       "cosine",      "tan",
                                       "atan2"};
  if (node.opcode == "divide" || node.opcode == "remainder") return true;
  const bool floating = node.element_type == "f32" || node.element_type == "f64" ||
                        node.element_type == "f16" || node.element_type == "bf16";
  for (const char* op : kFloat) {
    if (floating && node.opcode == op) return true;
  }
  return false;
}

double Elements(const OpNode& node) {
  return static_cast<double>(node.rows) * static_cast<double>(node.cols);
}

// How many times a kernel computes each element of `node` fused into `user`, whose elements it
// computes `user_reuse` times: a matrix op packs its operands once, whatever its epilogue does;
// a concatenate or pad places each operand element once, however much larger its result; other
// ops that outgrow their operand repeat it (a broadcast). Counting a concatenate as a broadcast
// kept Swin's exact GELU (exp and divides, under the patch merging's concatenate) out of its
// GEMM: six single-op kernels each wrote 4.8 MB.
double FusedReuse(const OpNode& user, const OpNode& node, double user_reuse) {
  if (user.matmul) return 1.0;
  if (user.opcode == "concatenate" || user.opcode == "pad") return user_reuse;
  return user_reuse * std::max(1.0, Elements(user) / Elements(node));
}

}  // namespace

std::vector<int32_t> FusibleProducers(const OpGraph& graph) {
  std::vector<int32_t> out;
  for (int32_t i = 0; i < graph.size(); ++i) {
    if (IsFusible(Node(graph, i))) out.push_back(i);
  }
  return out;
}

FusionPlan PlanFusion(const OpGraph& graph, const std::vector<uint8_t>& allow) {
  const int32_t n = graph.size();
  std::vector<int32_t> position(static_cast<size_t>(n), -1);  // index into `allow`
  {
    int32_t p = 0;
    for (int32_t i = 0; i < n; ++i) {
      if (IsFusible(Node(graph, i))) position[static_cast<size_t>(i)] = p++;
    }
  }
  // Kernels grow from their root backwards, so a kernel's nodes all come after any producer
  // considered for it: every user of that producer being inside keeps the kernel convex.
  std::vector<int32_t> kernel_of(static_cast<size_t>(n), -1);
  std::vector<int32_t> heavy;  // per provisional kernel
  std::vector<uint8_t> root_opaque;
  // Per node, how many times its kernel computes each of its elements: the product of the
  // broadcasting (element-count growth) on its way to the kernel's root. A matrix op's operand
  // is packed once, so it does not count.
  std::vector<double> reuse(static_cast<size_t>(n), 1.0);
  for (int32_t i = n - 1; i >= 0; --i) {
    const OpNode& node = Node(graph, i);
    int32_t target = -1;
    const int32_t pos = position[static_cast<size_t>(i)];
    const bool allowed = pos >= 0 && (allow.empty() || (static_cast<size_t>(pos) < allow.size() &&
                                                        allow[static_cast<size_t>(pos)] != 0));
    double fused_reuse = 1.0;
    if (allowed) {
      target = kernel_of[static_cast<size_t>(node.users.front())];
      for (int32_t user : node.users) {
        if (kernel_of[static_cast<size_t>(user)] != target) target = -1;
        fused_reuse = std::max(
            fused_reuse, FusedReuse(Node(graph, user), node, reuse[static_cast<size_t>(user)]));
      }
      if (target >= 0 && (root_opaque[static_cast<size_t>(target)] != 0 ||
                          heavy[static_cast<size_t>(target)] + (IsHeavy(node) ? 1 : 0) > 1)) {
        target = -1;
      }
      // As XLA's fusion: an expensive op is not fused where its consumer reuses its elements
      // (through a broadcast): EfficientNet's batch norms computed rsqrt(var) per pixel.
      if (target >= 0 && IsExpensive(node) && fused_reuse > 1.0) target = -1;
    }
    if (target < 0) {
      target = static_cast<int32_t>(heavy.size());
      heavy.push_back(0);
      root_opaque.push_back(node.opaque ? 1 : 0);
      fused_reuse = 1.0;
    }
    reuse[static_cast<size_t>(i)] = fused_reuse;
    kernel_of[static_cast<size_t>(i)] = target;
    if (IsHeavy(node)) ++heavy[static_cast<size_t>(target)];
  }
  // Number kernels by their root (largest node), which orders them topologically.
  FusionPlan plan;
  std::vector<int32_t> renumber(heavy.size(), -1);
  plan.kernel_of.assign(static_cast<size_t>(n), -1);
  std::vector<int32_t> root(heavy.size(), -1);
  for (int32_t i = 0; i < n; ++i) root[static_cast<size_t>(kernel_of[static_cast<size_t>(i)])] = i;
  std::vector<int32_t> order(heavy.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = static_cast<int32_t>(k);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return root[static_cast<size_t>(a)] < root[static_cast<size_t>(b)];
  });
  for (size_t k = 0; k < order.size(); ++k) {
    renumber[static_cast<size_t>(order[k])] = static_cast<int32_t>(k);
  }
  plan.kernels.resize(heavy.size());
  for (int32_t i = 0; i < n; ++i) {
    const int32_t k = renumber[static_cast<size_t>(kernel_of[static_cast<size_t>(i)])];
    plan.kernel_of[static_cast<size_t>(i)] = k;
    plan.kernels[static_cast<size_t>(k)].push_back(i);
  }
  return plan;
}

FusionPlan PlanFusionByPriority(const OpGraph& graph, const std::vector<int32_t>& priority) {
  const int32_t n = graph.size();
  const std::vector<int32_t> producers = FusibleProducers(graph);
  // Union-find over kernels, each op starting alone. A kernel absorbs a producer only when all
  // the producer's users are inside it, so kernels stay convex (no path leaves and re-enters).
  std::vector<int32_t> parent(static_cast<size_t>(n));
  std::vector<int32_t> heavy(static_cast<size_t>(n)), opaque(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    parent[static_cast<size_t>(i)] = i;
    heavy[static_cast<size_t>(i)] = IsHeavy(Node(graph, i)) ? 1 : 0;
    opaque[static_cast<size_t>(i)] = Node(graph, i).opaque ? 1 : 0;
  }
  auto find = [&](int32_t x) {
    while (parent[static_cast<size_t>(x)] != x) {
      parent[static_cast<size_t>(x)] = parent[static_cast<size_t>(parent[static_cast<size_t>(x)])];
      x = parent[static_cast<size_t>(x)];
    }
    return x;
  };
  std::vector<size_t> order;
  for (size_t p = 0; p < producers.size(); ++p) {
    if (p < priority.size() && priority[p] > 0) order.push_back(p);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (priority[a] != priority[b]) return priority[a] > priority[b];
    return producers[a] > producers[b];
  });
  // PlanFusion's reuse rule, as producers join: exact when they join in reverse topological
  // order (equal priorities), so all ones is still PlanFusion's default plan.
  std::vector<double> reuse(static_cast<size_t>(n), 1.0);
  for (size_t p : order) {
    const int32_t node = producers[p];
    const OpNode& op = Node(graph, node);
    const int32_t target = find(op.users.front());
    bool ok = true;
    double fused_reuse = 1.0;
    for (int32_t user : op.users) {
      ok &= find(user) == target;
      fused_reuse = std::max(fused_reuse,
                             FusedReuse(Node(graph, user), op, reuse[static_cast<size_t>(user)]));
    }
    const int32_t own = find(node);
    if (!ok || own == target || opaque[static_cast<size_t>(target)] != 0 ||
        heavy[static_cast<size_t>(target)] + heavy[static_cast<size_t>(own)] > 1 ||
        (IsExpensive(op) && fused_reuse > 1.0)) {
      continue;
    }
    reuse[static_cast<size_t>(node)] = fused_reuse;
    parent[static_cast<size_t>(own)] = target;
    heavy[static_cast<size_t>(target)] += heavy[static_cast<size_t>(own)];
  }
  // Number kernels by their largest op, which orders them topologically.
  std::vector<int32_t> root(static_cast<size_t>(n), -1);
  for (int32_t i = 0; i < n; ++i) root[static_cast<size_t>(find(i))] = i;
  std::vector<int32_t> number(static_cast<size_t>(n), -1);
  FusionPlan plan;
  plan.kernel_of.assign(static_cast<size_t>(n), -1);
  for (int32_t i = 0; i < n; ++i) {
    const int32_t r = find(i);
    if (root[static_cast<size_t>(r)] == i) {
      number[static_cast<size_t>(r)] = plan.size();
      plan.kernels.emplace_back();
    }
  }
  for (int32_t i = 0; i < n; ++i) {
    const int32_t k = number[static_cast<size_t>(find(i))];
    plan.kernel_of[static_cast<size_t>(i)] = k;
    plan.kernels[static_cast<size_t>(k)].push_back(i);
  }
  return plan;
}

FusionPlan Unfused(const OpGraph& graph) {
  FusionPlan plan;
  for (int32_t i = 0; i < graph.size(); ++i) {
    plan.kernel_of.push_back(i);
    plan.kernels.push_back({i});
  }
  return plan;
}

absl::Status ValidateFusion(const OpGraph& graph, const FusionPlan& plan) {
  const int32_t n = graph.size();
  if (static_cast<int32_t>(plan.kernel_of.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("fusion plan covers ", plan.kernel_of.size(), " ops; the graph has ", n));
  }
  const int32_t kernels = plan.size();
  std::vector<int32_t> heavy(static_cast<size_t>(kernels), 0);
  std::vector<int32_t> count(static_cast<size_t>(kernels), 0);
  std::vector<int32_t> opaque(static_cast<size_t>(kernels), 0);
  for (int32_t i = 0; i < n; ++i) {
    const int32_t k = plan.kernel_of[static_cast<size_t>(i)];
    if (k < 0 || k >= kernels) {
      return absl::InvalidArgumentError(
          absl::StrCat("op '", Node(graph, i).name, "' is in kernel ", k, "; there are ", kernels));
    }
    const std::vector<int32_t>& members = plan.kernels[static_cast<size_t>(k)];
    if (std::find(members.begin(), members.end(), i) == members.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("op '", Node(graph, i).name, "' is not listed in its kernel ", k));
    }
    ++count[static_cast<size_t>(k)];
    if (IsHeavy(Node(graph, i))) ++heavy[static_cast<size_t>(k)];
    if (Node(graph, i).opaque) ++opaque[static_cast<size_t>(k)];
  }
  for (int32_t k = 0; k < kernels; ++k) {
    const size_t kk = static_cast<size_t>(k);
    if (count[kk] != static_cast<int32_t>(plan.kernels[kk].size())) {
      return absl::InvalidArgumentError(absl::StrCat("kernel ", k, " lists ops of other kernels"));
    }
    if (heavy[kk] > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel ", k, " has ", heavy[kk],
                       " matrix or reduction ops; a kernel may have at most one"));
    }
    if (opaque[kk] > 0 && count[kk] > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kernel ", k, " fuses an op that must run alone (control flow, custom call, sort, ...)"));
    }
  }
  // Kernel-level DAG must be acyclic (Kahn's algorithm).
  std::vector<std::vector<int32_t>> succ(static_cast<size_t>(kernels));
  std::vector<int32_t> indegree(static_cast<size_t>(kernels), 0);
  for (int32_t i = 0; i < n; ++i) {
    const int32_t to = plan.kernel_of[static_cast<size_t>(i)];
    for (const OpInput& in : Node(graph, i).inputs) {
      const int32_t from = plan.kernel_of[static_cast<size_t>(in.node)];
      if (from == to) continue;
      succ[static_cast<size_t>(from)].push_back(to);
      ++indegree[static_cast<size_t>(to)];
    }
  }
  std::vector<int32_t> ready;
  for (int32_t k = 0; k < kernels; ++k) {
    if (indegree[static_cast<size_t>(k)] == 0) ready.push_back(k);
  }
  int32_t done = 0;
  while (!ready.empty()) {
    const int32_t k = ready.back();
    ready.pop_back();
    ++done;
    for (int32_t s : succ[static_cast<size_t>(k)]) {
      if (--indegree[static_cast<size_t>(s)] == 0) ready.push_back(s);
    }
  }
  if (done != kernels) {
    for (int32_t k = 0; k < kernels; ++k) {
      if (indegree[static_cast<size_t>(k)] > 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("kernels form a cycle through kernel ", k, " (root '",
                         Node(graph, plan.kernels[static_cast<size_t>(k)].back()).name,
                         "'): data leaves a kernel and comes back into it"));
      }
    }
  }
  return absl::OkStatus();
}

std::vector<KernelSummary> SummarizeKernels(const OpGraph& graph, const FusionPlan& plan) {
  std::vector<KernelSummary> out;
  out.reserve(plan.kernels.size());
  std::vector<uint8_t> feeds_matmul(static_cast<size_t>(graph.size()), 0);
  for (int32_t k = 0; k < plan.size(); ++k) {
    const std::vector<int32_t>& members = plan.kernels[static_cast<size_t>(k)];
    KernelSummary s;
    s.id = k;
    if (members.empty()) {
      out.push_back(s);
      continue;
    }
    const OpNode& root = Node(graph, members.back());
    s.name = root.name;
    s.element_type = root.element_type;
    s.element_bytes = root.element_bytes;
    s.ops = static_cast<int32_t>(members.size());
    // The matrix op and the kernel nodes feeding it: their outside inputs are re-read per tile.
    int32_t matmul = -1;
    for (int32_t i : members) {
      if (Node(graph, i).matmul) matmul = i;
    }
    if (matmul >= 0) {
      const OpNode& mm = Node(graph, matmul);
      s.matmul = true;
      s.mm = mm.mm;
      s.matmul_element_bytes = mm.element_bytes;
      feeds_matmul[static_cast<size_t>(matmul)] = 1;
      for (auto it = members.rbegin(); it != members.rend(); ++it) {
        if (feeds_matmul[static_cast<size_t>(*it)] == 0) continue;
        for (const OpInput& in : Node(graph, *it).inputs) {
          if (plan.kernel_of[static_cast<size_t>(in.node)] == k) {
            feeds_matmul[static_cast<size_t>(in.node)] = 1;
          }
        }
      }
    }
    std::unordered_map<int32_t, double> external;  // producer -> bytes (largest edge)
    std::unordered_map<int32_t, bool> external_to_matmul;
    std::unordered_map<int32_t, double> weights;
    std::unordered_map<int32_t, bool> weight_to_matmul;
    int64_t best_elements = 0;
    for (int32_t i : members) {
      const OpNode& node = Node(graph, i);
      const bool to_matmul = feeds_matmul[static_cast<size_t>(i)] != 0;
      if (i == matmul) {
        s.matrix_flops += node.cost.matrix_flops;
        s.vector_flops += node.cost.flops - node.cost.matrix_flops;
      } else {
        s.vector_flops += node.cost.flops;
      }
      s.transcendentals += node.cost.transcendentals;
      if (node.rows * node.cols > best_elements) {
        best_elements = node.rows * node.cols;
        s.rows = node.rows;
        s.cols = node.cols;
      }
      for (const OpInput& in : node.inputs) {
        if (plan.kernel_of[static_cast<size_t>(in.node)] == k) continue;
        double& bytes = external[in.node];
        bytes = std::max(bytes, in.bytes);
        external_to_matmul[in.node] = external_to_matmul[in.node] || to_matmul;
        const OpNode& producer = Node(graph, in.node);
        const int64_t elements = static_cast<int64_t>(in.bytes) / producer.element_bytes;
        if (elements > best_elements && producer.cols > 0) {
          best_elements = elements;
          s.cols = producer.cols;
          s.rows = std::max<int64_t>(1, elements / producer.cols);
        }
      }
      for (const OpWeight& w : node.weights) {
        weights[w.id] = w.bytes;
        weight_to_matmul[w.id] = weight_to_matmul[w.id] || to_matmul;
        const size_t id = static_cast<size_t>(w.id);
        if (id < graph.weight_cols.size() && id < graph.weight_rows.size() &&
            graph.weight_rows[id] * graph.weight_cols[id] > best_elements) {
          best_elements = graph.weight_rows[id] * graph.weight_cols[id];
          s.rows = graph.weight_rows[id];
          s.cols = graph.weight_cols[id];
        }
      }
      bool leaves = node.is_output;
      for (int32_t user : node.users) {
        if (plan.kernel_of[static_cast<size_t>(user)] != k) leaves = true;
      }
      if (leaves) s.output_bytes += node.output_bytes;
      feeds_matmul[static_cast<size_t>(i)] = 0;  // reset for the next kernel
    }
    for (const auto& [producer, bytes] : external) {
      (external_to_matmul[producer] ? s.matmul_input_bytes : s.other_input_bytes) += bytes;
    }
    for (const auto& [id, bytes] : weights) {
      s.weight_bytes += bytes;
      (weight_to_matmul[id] ? s.matmul_input_bytes : s.other_input_bytes) += bytes;
    }
    if (members.size() == 1 && root.opaque) {
      // Control flow and the like: their own traffic, loop bodies included.
      s.opaque = true;
      s.other_input_bytes = std::max(s.input_bytes(), root.cost.bytes_read);
      s.matmul_input_bytes = 0;
      s.output_bytes = std::max(s.output_bytes, root.cost.bytes_written);
      s.matmul = false;
    }
    s.roofline_cost.flops = s.matrix_flops + s.vector_flops;
    s.roofline_cost.matrix_flops = s.matrix_flops;
    s.roofline_cost.transcendentals = s.transcendentals;
    s.roofline_cost.bytes_read = s.input_bytes();
    s.roofline_cost.bytes_written = s.output_bytes;
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace mltune::costmodels
