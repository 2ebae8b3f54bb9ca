// BuildKernelGraph: nodes, data edges and the kernel-level features.
//
// Kernel features (sizes as log2(1 + x)):
//   0     flops                          7     kernel inputs (values and weights read), log
//   1     transcendentals                8     kernel outputs, log
//   2     bytes read from outside        9     has a matmul (dot or convolution)
//   3     bytes written that leave it    10-13 that matmul's m, n, k, batch, log
//   4     arithmetic intensity: flops per byte moved (2 + 3), log
//   5     ops
//   6     iteration space: the largest result's elements
//   14-29 the configuration, one slot per parameter name (ConfigParameterNames order):
//         CPU backend block, unroll, simd, parallel, order, lanes, cache, impl, micro, mc, kc,
//         nc (backends/cpu/lowering.cc); tpu-sim tile_m, tile_n, tile_k, double_buffer
//         (optimizers/tiling). A slot holds 1 + the value (sizes: 1 + log2(1 + value)) and 0
//         when the kernel has no such parameter, so a parameter at 0 differs from an absent one.
//   30    the innermost reduced extent n of the kernel's largest reduce (the row its partial
//         accumulators fold), log; 0 without a reduce
//   31-32 the configuration applied to that row (set with the configuration): full steps of
//         `lanes` accumulators, log2(1 + floor(n / lanes)), and the scalar tail's share,
//         (n mod lanes) / n. 0 without `lanes`.
//   33    the inner loop's extent m of the kernel's largest output (its minor-most dimension
//         above 1: the loop `unroll` unrolls and `block` tiles), log; 0 without one
//   34-37 the configuration applied to that loop (set with the configuration): full steps of
//         `unroll`, log2(1 + floor(m / unroll)), and its remainder's share, (m mod unroll) / m;
//         with `block` > 0 the blocked inner trip count, log2(1 + min(block, m)), and the
//         partial block's share, (m mod block) / m. 0 without the parameter.
//   38-41 the work of the kernel's fused loop nests (index_flow.cc: ops computed once per
//         distinct index, hoisted out of the loops they do not depend on): 38 evaluations of ops
//         that do arithmetic, 39 of ops with transcendentals, 40 loads from outside that vary
//         along the inner loop with a non-unit stride, 41 those that step by one element, log
//   42    the elementwise math of those nests: the sum over elementwise ops of times computed x
//         the op's cost per element in the backend's code (element_cost.cc), picoseconds, log
//   43    1 when a scalar libm call (log, sin, atan2, pow, ...) is computed in an innermost loop:
//         that loop does not vectorize, so its other ops run scalar too
// Slots 30-43 were appended after models had been trained on 0-29: a model uses the leading
// slots it was trained with (costmodels/learned), so new slots go at the end.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <unordered_set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "costmodels/features/internal.h"
#include "costmodels/features/kernel_graph.h"

namespace mltune::costmodels::features {
namespace {

constexpr int kConfigBase = 14;
constexpr int kReducedRow = 30;
constexpr int kLaneSteps = 31;
constexpr int kLaneTail = 32;
constexpr int kInnerLoop = 33;
constexpr int kUnrollSteps = 34;
constexpr int kUnrollTail = 35;
constexpr int kBlockTrip = 36;
constexpr int kBlockTail = 37;
constexpr int kFlowWork = 38;
constexpr int kFlowTranscendental = 39;
constexpr int kFlowStridedLoads = 40;
constexpr int kFlowContiguousLoads = 41;
constexpr int kElementMath = 42;
constexpr int kScalarCallInner = 43;

struct ParamSlot {
  const char* name;
  bool size;  // a size or count: log-scaled
};
constexpr ParamSlot kParams[] = {
    {"block", true},  {"unroll", true}, {"simd", false},  {"parallel", false},
    {"order", false}, {"lanes", true},  {"cache", false}, {"impl", false},
    {"micro", false}, {"mc", true},     {"kc", true},     {"nc", true},
    {"tile_m", true}, {"tile_n", true}, {"tile_k", true}, {"double_buffer", false},
};
static_assert(kConfigBase + static_cast<int>(std::size(kParams)) == kReducedRow,
              "static figures, then one slot per configuration parameter, then slot 30");
static_assert(kScalarCallInner + 1 == kKernelFeatures, "the loop nests' math is last");

// The innermost reduced dimension's extent of the reduce with the largest operand: where a
// reduction's `lanes` accumulators fold (backends/cpu/codegen.cc), so how many full vector steps
// and how long a scalar tail a lane count leaves. 0 without a reduce.
int64_t ReducedRow(const KernelView& view) {
  int64_t row = 0;
  double largest = -1;
  for (const ir::Instruction* instr : view.instrs) {
    if (instr == nullptr || instr->opcode() != ir::Opcode::kReduce || instr->operand_count() == 0 ||
        instr->dimensions.empty()) {
      continue;
    }
    const ir::Shape& in = instr->operand(0)->shape();
    if (!in.IsArray()) continue;
    const int64_t innermost = *std::max_element(instr->dimensions.begin(), instr->dimensions.end());
    if (innermost < 0 || innermost >= in.rank()) continue;
    if (const double elements = static_cast<double>(in.ElementCount()); elements > largest) {
      largest = elements;
      row = in.dimensions(innermost);
    }
  }
  return row;
}

// The minor-most dimension above 1 of the kernel's largest output: the inner loop of the CPU
// backend's loop nest (backends/cpu/codegen.cc, LoopNest), which `unroll` unrolls and `block`
// tiles. 0 when every output is a single element.
int64_t InnerLoop(const KernelView& view) {
  int64_t inner = 0;
  double largest = -1;
  for (int32_t i = 0; i < view.size(); ++i) {
    const ir::Instruction* instr = view.instrs[static_cast<size_t>(i)];
    if (instr == nullptr || !view.is_output[static_cast<size_t>(i)]) continue;
    const ir::Shape* shape = FirstArray(instr->shape());
    if (shape == nullptr) continue;
    const double elements = static_cast<double>(shape->ElementCount());
    if (elements <= largest) continue;
    largest = elements;
    inner = 0;
    const std::vector<int64_t>& dims = shape->dimensions();
    for (auto d = dims.rbegin(); d != dims.rend(); ++d) {
      if (*d > 1) {
        inner = *d;
        break;
      }
    }
  }
  return inner;
}

// An extent stored as log2(1 + n) back as n; the rounding undoes the float's error (exact to
// n ~ 1e5, and beyond that a remainder's share is under step / n either way).
double StoredExtent(float slot) { return std::round(std::exp2(static_cast<double>(slot)) - 1); }

// The share of n (>= 1) left over after whole steps of `step` (> 0): (n mod step) / n.
float RemainderShare(double n, int64_t step) {
  const double s = static_cast<double>(step);
  return static_cast<float>((n - std::floor(n / s) * s) / n);
}

// A loop of n iterations in steps of `step`: log2(1 + full steps) and the remainder's share of n.
// Slots untouched when there is no loop or no step.
void SetSteps(double n, int64_t step, float* steps_slot, float* tail_slot) {
  if (step <= 0 || n < 1) return;
  *steps_slot = Log2p(std::floor(n / static_cast<double>(step)));
  *tail_slot = RemainderShare(n, step);
}

// Slots 31-32 and 34-37 from the stored extents (30, 33) and one configuration parameter.
void SetAppliedFeatures(std::string_view name, int64_t value, KernelGraph* graph) {
  std::vector<float>& k = graph->kernel_features;
  if (name == "lanes") {
    SetSteps(StoredExtent(k[kReducedRow]), value, &k[kLaneSteps], &k[kLaneTail]);
  } else if (name == "unroll") {
    SetSteps(StoredExtent(k[kInnerLoop]), value, &k[kUnrollSteps], &k[kUnrollTail]);
  } else if (name == "block") {
    const double m = StoredExtent(k[kInnerLoop]);
    if (value <= 0 || m < 1) return;
    k[kBlockTrip] = Log2p(std::min(m, static_cast<double>(value)));
    k[kBlockTail] = RemainderShare(m, value);
  }
}

void FillKernelFeatures(const KernelView& view, float* out) {
  double flops = 0, transcendentals = 0, in_bytes = 0, out_bytes = 0, space = 0;
  int32_t inputs = 0, outputs = 0;
  std::unordered_set<int32_t> producers, weights;
  const OpNode* matmul = nullptr;
  for (int32_t i = 0; i < view.size(); ++i) {
    const OpNode& n = view.node(i);
    flops += n.cost.flops;
    transcendentals += n.cost.transcendentals;
    space = std::max(space, static_cast<double>(n.rows) * static_cast<double>(n.cols));
    for (const OpInput& in : n.inputs) {
      if (view.local.count(in.node) == 0 && producers.insert(in.node).second) {
        in_bytes += in.bytes;
        ++inputs;
      }
    }
    for (const OpWeight& w : n.weights) {
      if (weights.insert(w.id).second) {
        in_bytes += w.bytes;
        ++inputs;
      }
    }
    if (view.is_output[static_cast<size_t>(i)]) {
      out_bytes += n.output_bytes;
      ++outputs;
    }
    if (n.matmul && matmul == nullptr) matmul = &n;
  }
  out[0] = Log2p(flops);
  out[1] = Log2p(transcendentals);
  out[2] = Log2p(in_bytes);
  out[3] = Log2p(out_bytes);
  out[4] = Log2p(in_bytes + out_bytes > 0 ? flops / (in_bytes + out_bytes) : 0);
  out[5] = Log2p(view.size());
  out[6] = Log2p(space);
  out[7] = Log2p(inputs);
  out[8] = Log2p(outputs);
  if (matmul != nullptr) {
    out[9] = 1;
    out[10] = Log2p(static_cast<double>(matmul->mm.m));
    out[11] = Log2p(static_cast<double>(matmul->mm.n));
    out[12] = Log2p(static_cast<double>(matmul->mm.k));
    out[13] = Log2p(static_cast<double>(matmul->mm.batch));
  }
}

}  // namespace

float Log2p(double x) { return static_cast<float>(std::log2(1.0 + std::max(x, 0.0))); }

const ir::Shape* FirstArray(const ir::Shape& shape) {
  if (!shape.IsTuple()) return shape.IsArray() ? &shape : nullptr;
  for (const ir::Shape& s : shape.tuple_shapes()) {
    if (const ir::Shape* a = FirstArray(s); a != nullptr) return a;
  }
  return nullptr;
}

int ConfigSlot(std::string_view parameter) {
  for (size_t i = 0; i < std::size(kParams); ++i) {
    if (parameter == kParams[i].name) return kConfigBase + static_cast<int>(i);
  }
  return -1;
}

const std::vector<std::string>& ConfigParameterNames() {
  static const auto* names = [] {
    auto* v = new std::vector<std::string>();
    for (const ParamSlot& p : kParams) v->push_back(p.name);
    return v;
  }();
  return *names;
}

absl::StatusOr<KernelView> MakeKernelView(const OpGraph& graph, const ir::Module& module,
                                          const std::vector<int32_t>& nodes) {
  if (nodes.empty()) return absl::InvalidArgumentError("kernel features: the kernel has no ops");
  KernelView view;
  view.graph = &graph;
  view.nodes = nodes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (nodes[i] < 0 || nodes[i] >= graph.size()) {
      return absl::InvalidArgumentError(absl::StrCat("kernel features: node id ", nodes[i],
                                                     " is outside the op graph (", graph.size(),
                                                     " nodes)"));
    }
    if (!view.local.emplace(nodes[i], static_cast<int32_t>(i)).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel features: node id ", nodes[i], " is listed twice"));
    }
  }
  const ir::Computation* entry = module.entry();
  for (int32_t i = 0; i < view.size(); ++i) {
    const OpNode& n = view.node(i);
    view.instrs.push_back(entry != nullptr ? entry->FindInstruction(n.name) : nullptr);
    bool leaves = n.is_output;
    for (int32_t u : n.users) leaves = leaves || view.local.count(u) == 0;
    bool reads = false;
    for (const OpInput& in : n.inputs) reads = reads || view.local.count(in.node) == 0;
    // A weight of more than one element is an array read from memory; scalars are inlined.
    for (const OpWeight& w : n.weights) reads = reads || w.bytes > 8;
    view.is_output.push_back(leaves ? 1 : 0);
    view.reads_input.push_back(reads ? 1 : 0);
  }
  return view;
}

absl::Status SetConfiguration(const Configuration& config, KernelGraph* graph) {
  if (graph->kernel_features.size() != static_cast<size_t>(kKernelFeatures)) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel features: ", graph->kernel_features.size(), " kernel features, not ",
                     kKernelFeatures));
  }
  std::vector<float>& k = graph->kernel_features;
  std::fill(k.begin() + kConfigBase, k.begin() + kReducedRow, 0.0f);
  std::fill(k.begin() + kLaneSteps, k.begin() + kInnerLoop, 0.0f);
  std::fill(k.begin() + kUnrollSteps, k.begin() + kBlockTail + 1, 0.0f);
  for (const auto& [name, value] : config) {
    const int slot = ConfigSlot(name);
    if (slot < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kernel features: configuration parameter '", name,
          "' has no kernel-feature slot (add it to costmodels/features/kernel_features.cc)"));
    }
    const ParamSlot& p = kParams[slot - kConfigBase];
    graph->kernel_features[static_cast<size_t>(slot)] =
        1.0f + (p.size ? Log2p(static_cast<double>(value)) : static_cast<float>(value));
    SetAppliedFeatures(p.name, value, graph);
  }
  return absl::OkStatus();
}

absl::StatusOr<Configuration> ParseConfiguration(std::string_view text) {
  Configuration config;
  if (text.empty()) return config;
  for (absl::string_view part : absl::StrSplit(absl::string_view(text.data(), text.size()), ',')) {
    const size_t eq = part.find('=');
    int64_t value = 0;
    if (eq == absl::string_view::npos || eq == 0 ||
        !absl::SimpleAtoi(part.substr(eq + 1), &value)) {
      return absl::InvalidArgumentError(absl::StrCat("configuration '", std::string(text),
                                                     "': expected name=integer, got '",
                                                     std::string(part), "'"));
    }
    config.emplace_back(std::string(part.substr(0, eq)), value);
  }
  return config;
}

absl::StatusOr<KernelGraph> BuildKernelGraph(const OpGraph& graph, const ir::Module& module,
                                             const std::vector<int32_t>& nodes,
                                             const Configuration& config) {
  absl::StatusOr<KernelView> view = MakeKernelView(graph, module, nodes);
  if (!view.ok()) return view.status();
  const IndexFlow flow = AnalyzeIndexFlow(*view);
  KernelGraph g;
  g.node_features.resize(static_cast<size_t>(view->size()) * kNodeFeatures);
  for (int32_t i = 0; i < view->size(); ++i) {
    const OpNode& n = view->node(i);
    g.opcodes.push_back(OpcodeId(n.opcode));
    FillNodeFeatures(*view, flow, i, &g.node_features[static_cast<size_t>(i) * kNodeFeatures]);
    for (const OpInput& in : n.inputs) {
      auto it = view->local.find(in.node);
      if (it == view->local.end()) continue;
      g.edge_src.push_back(it->second);
      g.edge_dst.push_back(i);
    }
  }
  g.kernel_features.assign(kKernelFeatures, 0.0f);
  FillKernelFeatures(*view, g.kernel_features.data());
  g.kernel_features[kReducedRow] = Log2p(static_cast<double>(ReducedRow(*view)));
  g.kernel_features[kInnerLoop] = Log2p(static_cast<double>(InnerLoop(*view)));
  g.kernel_features[kFlowWork] = Log2p(flow.compute_evaluations);
  g.kernel_features[kFlowTranscendental] = Log2p(flow.transcendental_evaluations);
  g.kernel_features[kFlowStridedLoads] = Log2p(flow.strided_loads);
  g.kernel_features[kFlowContiguousLoads] = Log2p(flow.contiguous_loads);
  g.kernel_features[kElementMath] = Log2p(1000.0 * flow.total_element_ns);
  g.kernel_features[kScalarCallInner] = flow.scalar_call_inner ? 1.0f : 0.0f;
  if (absl::Status s = SetConfiguration(config, &g); !s.ok()) return s;
  return g;
}

}  // namespace mltune::costmodels::features
