#include "backends/mcm_sim/mcm_sim.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace mltune::backends::mcm {
namespace {

using costmodels::OpGraph;
using costmodels::OpInput;
using costmodels::OpNode;
using costmodels::OpWeight;

// Chip sets are 64-bit masks, which is why Create caps the chip count at 64.
constexpr int32_t kMaxChips = 64;
using ChipMask = uint64_t;
constexpr ChipMask Bit(int32_t chip) { return ChipMask{1} << chip; }

const MemoryLevel* SramLevel(const TargetSpec& spec) {
  if (const MemoryLevel* sram = spec.Memory("sram")) return sram;
  return spec.memory.empty() ? nullptr : &spec.memory.front();
}

const Link* D2dLink(const TargetSpec& spec) {
  for (const Link& link : spec.links) {
    if (link.bandwidth > 0) return &link;
  }
  return nullptr;
}

// The peak an op of a type the spec does not list (nor f32) runs at: s8's, else the largest, so
// that no op takes infinite time. Create guarantees it is positive.
double FallbackPeak(const TargetSpec& spec) {
  double peak = spec.PeakOps("s8");
  for (const auto& [type, ops] : spec.peak_ops) peak = std::max(peak, ops);
  return peak;
}

// Per-op time: roofline of compute at the element type's peak against SRAM traffic, plus the fixed
// kernel launch. Peaks are memoized for the last few types seen because this runs millions of times
// per search and a graph holds only a handful of element types.
class OpTimer {
 public:
  OpTimer(const TargetSpec& spec, const MemoryLevel& sram) : spec_(spec), sram_(sram) {}

  double Seconds(const OpNode& node) {
    const double compute = (node.cost.flops + node.cost.transcendentals) / Peak(node.element_type);
    const double memory = (node.cost.bytes_read + node.cost.bytes_written) / sram_.bandwidth;
    return std::max(compute, memory) + spec_.kernel_overhead_s;
  }

 private:
  double Peak(const std::string& type) {
    for (size_t i = 0; i < cached_; ++i) {
      if (*cache_[i].type == type) return cache_[i].peak;
    }
    double peak = spec_.PeakOps(type);
    if (peak <= 0) peak = FallbackPeak(spec_);
    cache_[next_] = {&type, peak};
    next_ = (next_ + 1) % cache_.size();
    cached_ = std::min(cached_ + 1, cache_.size());
    return peak;
  }

  const TargetSpec& spec_;
  const MemoryLevel& sram_;
  struct CachedPeak {
    const std::string* type;  // a node's, alive for the call
    double peak;
  };
  std::array<CachedPeak, 4> cache_{};
  size_t cached_ = 0, next_ = 0;
};

bool IsProducer(const OpGraph& graph, int32_t node) { return node >= 0 && node < graph.size(); }

// Reused across calls on one thread so that Simulate allocates only its result.
struct Scratch {
  // Cross-chip edges grouped by producer (a counting sort): the edges of producer p are
  // edges[edge_begin[p], edge_begin[p + 1]).
  std::vector<int32_t> edge_begin;
  struct CrossEdge {
    int32_t chip;  // the consumer's
    double bytes;
  };
  std::vector<CrossEdge> edges;
  std::vector<ChipMask> weight_chips;  // by weight id: the chips that already count it
};

Scratch& ThreadScratch() {
  thread_local Scratch scratch;
  return scratch;
}

std::string OpName(const OpGraph& graph, int32_t node) {
  return absl::StrCat("'", graph.nodes[static_cast<size_t>(node)].name, "'");
}

// An op edge producer -> consumer from chip `from` to chip `to`, for naming a triangle's sides.
std::string EdgeBetween(const OpGraph& graph, const std::vector<int32_t>& chip_of_node,
                        int32_t from, int32_t to) {
  for (int32_t i = 0; i < graph.size(); ++i) {
    if (chip_of_node[static_cast<size_t>(i)] != to) continue;
    for (const OpInput& in : graph.nodes[static_cast<size_t>(i)].inputs) {
      if (IsProducer(graph, in.node) && chip_of_node[static_cast<size_t>(in.node)] == from) {
        return absl::StrFormat("op %s on chip %d feeds op %s on chip %d", OpName(graph, in.node),
                               from, OpName(graph, i), to);
      }
    }
  }
  return absl::StrFormat("chip %d feeds chip %d", from, to);
}

McmResult Invalid(McmResult result, Constraint constraint, std::string detail) {
  result.valid = false;
  result.violated = constraint;
  result.error = absl::StrCat(ConstraintName(constraint), ": ", detail);
  return result;
}

}  // namespace

const char* ConstraintName(Constraint c) {
  switch (c) {
    case Constraint::kNone:
      return "none";
    case Constraint::kShape:
      return "shape";
    case Constraint::kAcyclic:
      return "acyclic";
    case Constraint::kSkippedChip:
      return "skipped-chip";
    case Constraint::kTriangle:
      return "triangle";
    case Constraint::kSramCapacity:
      return "sram-capacity";
  }
  return "unknown";
}

absl::StatusOr<McmSimulator> McmSimulator::Create(const TargetSpec& spec) {
  const std::string where = absl::StrCat("target spec '", spec.name, "'");
  if (spec.kind != "mcm") {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " is of kind '", spec.kind,
                     "', not 'mcm': the MCM simulator needs a multi-chip module"));
  }
  if (spec.devices < 1 || spec.devices > kMaxChips) {
    return absl::InvalidArgumentError(absl::StrCat(where, " has ", spec.devices,
                                                   " devices; the MCM simulator supports 1 to ",
                                                   kMaxChips, " chips"));
  }
  if (FallbackPeak(spec) <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " has no positive peak_ops entry (s8 or any type)"));
  }
  const MemoryLevel* sram = SramLevel(spec);
  if (sram == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " has no memory level (the chips' SRAM, named \"sram\")"));
  }
  if (sram->bytes <= 0 || sram->bandwidth <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": memory level '", sram->name,
                                                   "' needs positive bytes and bandwidth"));
  }
  if (D2dLink(spec) == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, " has no link with positive bandwidth between its chips"));
  }
  return McmSimulator(spec);
}

McmResult McmSimulator::Simulate(const OpGraph& graph,
                                 const std::vector<int32_t>& chip_of_node) const {
  const int32_t num_chips = chips();
  const int32_t n = graph.size();
  McmResult result;
  result.chips.resize(static_cast<size_t>(num_chips));
  auto chip_of = [&](int32_t node) { return chip_of_node[static_cast<size_t>(node)]; };

  // shape
  if (static_cast<int32_t>(chip_of_node.size()) != n) {
    return Invalid(
        std::move(result), Constraint::kShape,
        absl::StrFormat("the partition has %d chip ids for %d ops", chip_of_node.size(), n));
  }
  ChipMask used = 0;
  std::array<int32_t, kMaxChips> first_op;
  first_op.fill(-1);
  for (int32_t i = 0; i < n; ++i) {
    const int32_t chip = chip_of(i);
    if (chip < 0 || chip >= num_chips) {
      return Invalid(std::move(result), Constraint::kShape,
                     absl::StrFormat("op %s (node %d) is on chip %d, outside [0, %d)",
                                     OpName(graph, i), i, chip, num_chips));
    }
    if (!(used & Bit(chip))) first_op[static_cast<size_t>(chip)] = i;
    used |= Bit(chip);
    ++result.chips[static_cast<size_t>(chip)].ops;
  }

  // acyclic; also gathers the chip-level dependencies and counts each producer's cross-chip edges
  Scratch& scratch = ThreadScratch();
  scratch.edge_begin.assign(static_cast<size_t>(n) + 1, 0);
  std::array<ChipMask, kMaxChips> feeds{};  // feeds[a]: the higher chips a sends to
  for (int32_t i = 0; i < n; ++i) {
    const int32_t to = chip_of(i);
    for (const OpInput& in : graph.nodes[static_cast<size_t>(i)].inputs) {
      if (!IsProducer(graph, in.node)) continue;
      const int32_t from = chip_of(in.node);
      if (from > to) {
        return Invalid(std::move(result), Constraint::kAcyclic,
                       absl::StrFormat("op %s on chip %d feeds op %s on chip %d (data must flow "
                                       "from lower to higher chip ids)",
                                       OpName(graph, in.node), from, OpName(graph, i), to));
      }
      if (from < to) {
        feeds[static_cast<size_t>(from)] |= Bit(to);
        ++scratch.edge_begin[static_cast<size_t>(in.node)];
      }
    }
  }

  // skipped-chip
  result.chips_used = std::popcount(used);
  if (used != 0) {
    const int32_t lowest = std::countr_zero(used);
    const int32_t highest = kMaxChips - 1 - std::countl_zero(used);
    for (int32_t chip = lowest + 1; chip < highest; ++chip) {
      if (used & Bit(chip)) continue;
      const int32_t below = kMaxChips - 1 - std::countl_zero(used & (Bit(chip) - 1));
      const int32_t above = std::countr_zero(used & ~(Bit(chip + 1) - 1));
      return Invalid(
          std::move(result), Constraint::kSkippedChip,
          absl::StrFormat("chip %d holds no op, but chip %d (op %s) and chip %d (op %s) do; the "
                          "used chips must be consecutive",
                          chip, below, OpName(graph, first_op[static_cast<size_t>(below)]), above,
                          OpName(graph, first_op[static_cast<size_t>(above)])));
    }
  }

  // triangle: a < b < c with a->b, b->c and a->c
  for (int32_t a = 0; a < num_chips; ++a) {
    const ChipMask from_a = feeds[static_cast<size_t>(a)];
    for (ChipMask rest = from_a; rest != 0; rest &= rest - 1) {
      const int32_t b = std::countr_zero(rest);
      const ChipMask closing = feeds[static_cast<size_t>(b)] & from_a;
      if (closing == 0) continue;
      const int32_t c = std::countr_zero(closing);
      return Invalid(std::move(result), Constraint::kTriangle,
                     absl::StrFormat("chips %d -> %d -> %d also depend directly %d -> %d (%s; %s; "
                                     "%s)",
                                     a, b, c, a, c, EdgeBetween(graph, chip_of_node, a, b),
                                     EdgeBetween(graph, chip_of_node, b, c),
                                     EdgeBetween(graph, chip_of_node, a, c)));
    }
  }

  // sram-capacity. Cross-chip edges are grouped by producer so that each producer's tensor is
  // counted once per receiving chip, at its largest edge into that chip (the same grouping sizes
  // the transfers). edge_begin[p] holds p's edge count: make it the end of p's range, then fill
  // each range from its end so that edge_begin[p] finishes at its start.
  for (int32_t p = 1; p <= n; ++p) {
    scratch.edge_begin[static_cast<size_t>(p)] += scratch.edge_begin[static_cast<size_t>(p) - 1];
  }
  scratch.edges.resize(static_cast<size_t>(scratch.edge_begin[static_cast<size_t>(n)]));
  for (int32_t i = 0; i < n; ++i) {
    const int32_t to = chip_of(i);
    for (const OpInput& in : graph.nodes[static_cast<size_t>(i)].inputs) {
      if (!IsProducer(graph, in.node) || chip_of(in.node) == to) continue;
      const int32_t slot = --scratch.edge_begin[static_cast<size_t>(in.node)];
      scratch.edges[static_cast<size_t>(slot)] = {to, in.bytes};
    }
  }
  std::array<double, kMaxChips> weight_bytes{}, received_bytes{}, largest_result{};
  // Tensors start and end their ring journey at these chips: hop h -> h + 1 carries what left chips
  // <= h and has not yet arrived at chips <= h, so per-hop loads come from one prefix sum instead
  // of walking every tensor's hops.
  std::array<double, kMaxChips> leaving_bytes{}, arriving_bytes{};
  std::array<int32_t, kMaxChips> leaving_sends{}, arriving_sends{};

  scratch.weight_chips.assign(static_cast<size_t>(std::max(graph.weight_count, 0)), 0);
  for (int32_t i = 0; i < n; ++i) {
    const OpNode& node = graph.nodes[static_cast<size_t>(i)];
    const int32_t chip = chip_of(i);
    const size_t c = static_cast<size_t>(chip);
    largest_result[c] = std::max(largest_result[c], node.output_bytes);
    for (const OpWeight& weight : node.weights) {
      if (weight.id >= 0) {
        // Ids past weight_count (a hand-built graph's slip) still dedupe.
        if (static_cast<size_t>(weight.id) >= scratch.weight_chips.size()) {
          scratch.weight_chips.resize(static_cast<size_t>(weight.id) + 1, 0);
        }
        ChipMask& holders = scratch.weight_chips[static_cast<size_t>(weight.id)];
        if (holders & Bit(chip)) continue;
        holders |= Bit(chip);
      }
      weight_bytes[c] += weight.bytes;
    }
    // This op's tensor, once per receiving chip at its largest edge there.
    const size_t begin = static_cast<size_t>(scratch.edge_begin[static_cast<size_t>(i)]);
    const size_t end = static_cast<size_t>(scratch.edge_begin[static_cast<size_t>(i) + 1]);
    if (begin == end) continue;
    std::array<double, kMaxChips> to_chip;
    ChipMask destinations = 0;
    for (size_t e = begin; e < end; ++e) {
      const Scratch::CrossEdge& edge = scratch.edges[e];
      const size_t d = static_cast<size_t>(edge.chip);
      if (!(destinations & Bit(edge.chip))) {
        destinations |= Bit(edge.chip);
        to_chip[d] = edge.bytes;
      } else {
        to_chip[d] = std::max(to_chip[d], edge.bytes);
      }
    }
    for (ChipMask rest = destinations; rest != 0; rest &= rest - 1) {
      const size_t d = static_cast<size_t>(std::countr_zero(rest));
      received_bytes[d] += to_chip[d];
      leaving_bytes[c] += to_chip[d];
      arriving_bytes[d] += to_chip[d];
      ++leaving_sends[c];
      ++arriving_sends[d];
    }
  }
  const MemoryLevel& sram = *SramLevel(spec_);
  for (int32_t chip = 0; chip < num_chips; ++chip) {
    const size_t c = static_cast<size_t>(chip);
    ChipLoad& load = result.chips[c];
    load.sram_bytes = weight_bytes[c] + received_bytes[c] + largest_result[c];
  }
  for (int32_t chip = 0; chip < num_chips; ++chip) {
    const size_t c = static_cast<size_t>(chip);
    if (result.chips[c].sram_bytes <= static_cast<double>(sram.bytes)) continue;
    int32_t last_op = first_op[c];
    for (int32_t i = n - 1; i >= 0; --i) {
      if (chip_of(i) == chip) {
        last_op = i;
        break;
      }
    }
    return Invalid(std::move(result), Constraint::kSramCapacity,
                   absl::StrFormat(
                       "chip %d needs %.0f bytes (weights %.0f, received tensors %.0f, largest "
                       "result %.0f) but its %s holds %d bytes; its %d ops run from op %s to op %s",
                       chip, result.chips[c].sram_bytes, weight_bytes[c], received_bytes[c],
                       largest_result[c], sram.name, sram.bytes, result.chips[c].ops,
                       OpName(graph, first_op[c]), OpName(graph, last_op)));
  }

  // Valid: the pipeline's cost.
  result.valid = true;
  OpTimer timer(spec_, sram);
  for (int32_t i = 0; i < n; ++i) {
    result.chips[static_cast<size_t>(chip_of(i))].compute_s +=
        timer.Seconds(graph.nodes[static_cast<size_t>(i)]);
  }
  const Link& link = *D2dLink(spec_);
  double on_hop_bytes = 0;
  int32_t on_hop_sends = 0;
  for (int32_t chip = 0; chip + 1 < num_chips; ++chip) {
    const size_t c = static_cast<size_t>(chip);
    on_hop_bytes += leaving_bytes[c] - arriving_bytes[c];
    on_hop_sends += leaving_sends[c] - arriving_sends[c];
    if (on_hop_sends == 0) {
      on_hop_bytes = 0;  // drop rounding residue when nothing is in flight
      continue;
    }
    result.chips[c].transfer_s = on_hop_bytes / link.bandwidth + on_hop_sends * link.latency_s;
    result.transfer_bytes += on_hop_bytes;
  }
  for (int32_t chip = 0; chip < num_chips; ++chip) {
    const ChipLoad& load = result.chips[static_cast<size_t>(chip)];
    const double stage = load.compute_s + load.transfer_s;
    if (stage > result.stage_seconds) {
      result.stage_seconds = stage;
      result.bottleneck_chip = chip;
    }
  }
  result.throughput = result.stage_seconds > 0 ? 1 / result.stage_seconds : 0;
  return result;
}

std::vector<double> McmSimulator::OpSeconds(const OpGraph& graph) const {
  OpTimer timer(spec_, *SramLevel(spec_));
  std::vector<double> seconds(static_cast<size_t>(graph.size()));
  for (int32_t i = 0; i < graph.size(); ++i) {
    seconds[static_cast<size_t>(i)] = timer.Seconds(graph.nodes[static_cast<size_t>(i)]);
  }
  return seconds;
}

std::vector<int32_t> McmSimulator::BalancedPartition(const OpGraph& graph) const {
  const int32_t n = graph.size();
  std::vector<int32_t> best(static_cast<size_t>(n), 0);
  if (n == 0) return best;
  OpTimer timer(spec_, *SramLevel(spec_));
  // Two ways to balance: by compute alone, and by compute and weight bytes together (a model
  // whose weights exceed one chip's SRAM needs its weights spread as much as its work).
  std::vector<double> compute(static_cast<size_t>(n)), weights(static_cast<size_t>(n), 0);
  double total_compute = 0, total_weights = 0;
  for (int32_t i = 0; i < n; ++i) {
    const OpNode& node = graph.nodes[static_cast<size_t>(i)];
    compute[static_cast<size_t>(i)] = timer.Seconds(node);
    for (const costmodels::OpWeight& w : node.weights) weights[static_cast<size_t>(i)] += w.bytes;
    total_compute += compute[static_cast<size_t>(i)];
    total_weights += weights[static_cast<size_t>(i)];
  }
  double best_throughput = 0;
  {
    const McmResult one_chip = Simulate(graph, best);
    if (one_chip.valid) best_throughput = one_chip.throughput;
  }
  std::vector<int32_t> candidate(static_cast<size_t>(n));
  std::vector<double> before(static_cast<size_t>(n) + 1, 0);  // load of the ops before i
  const int32_t max_runs = std::min(chips(), n);
  for (int metric = 0; metric < 2; ++metric) {
    if (metric == 1 && total_weights <= 0) break;
    for (int32_t i = 0; i < n; ++i) {
      double load = total_compute > 0 ? compute[static_cast<size_t>(i)] / total_compute : 0;
      if (metric == 1) load += weights[static_cast<size_t>(i)] / total_weights;
      before[static_cast<size_t>(i) + 1] = before[static_cast<size_t>(i)] + load;
    }
    const double total = before[static_cast<size_t>(n)];
    for (int32_t runs = 2; runs <= max_runs; ++runs) {
      // Each op goes to the share of the total load its midpoint falls in. A single op larger than
      // a share would leave a share empty, so runs are renumbered consecutively (no skipped chip).
      const double share = total / runs;
      int32_t chip = 0, previous_share = 0;
      for (int32_t i = 0; i < n; ++i) {
        const double midpoint =
            (before[static_cast<size_t>(i)] + before[static_cast<size_t>(i) + 1]) / 2;
        const int32_t in_share =
            share > 0 ? std::min(static_cast<int32_t>(midpoint / share), runs - 1) : 0;
        if (i > 0 && in_share > previous_share) ++chip;
        previous_share = in_share;
        candidate[static_cast<size_t>(i)] = chip;
      }
      const McmResult result = Simulate(graph, candidate);
      if (result.valid && result.throughput > best_throughput) {
        best_throughput = result.throughput;
        best = candidate;
      }
    }
  }
  return best;
}

std::vector<int32_t> McmSimulator::DecodeAdvances(const std::vector<int32_t>& advance) const {
  std::vector<int32_t> chip_of_node(advance.size(), 0);
  int32_t chip = 0;
  for (size_t i = 1; i < advance.size(); ++i) {
    if (advance[i] != 0 && chip + 1 < chips()) ++chip;
    chip_of_node[i] = chip;
  }
  return chip_of_node;
}

}  // namespace mltune::backends::mcm
