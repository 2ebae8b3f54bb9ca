// Multi-chip-module simulator (after Xie et al., "A Transferable Approach for Partitioning Machine
// Learning Models on Multi-Chip-Modules", MLSys 2022): the chips of an MCM target spec (36 chips
// of 24 TOPS and 32 MB SRAM on a 1-D ring of 16 GB/s die-to-die links in backends/specs/mcm-36)
// run an op graph as a pipeline, one stage per chip. A partition assigns every op to a chip; the
// pipeline's throughput is 1 / max over chips of (compute + transfer). Invalid partitions name the
// constraint they break and never get a score.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backends/spec/target_spec.h"
#include "costmodels/analytical/op_graph.h"

namespace mltune::backends::mcm {

// The constraints a partition must meet, in the order they are checked.
enum class Constraint {
  kNone,
  kShape,         // wrong length, or a chip id outside [0, chips)
  kAcyclic,       // data flows from a higher chip id to a lower one
  kSkippedChip,   // a chip between the first and the last used holds no op
  kTriangle,      // chips A < B < C with A->B, B->C and A->C dependencies
  kSramCapacity,  // a chip's weights and buffers exceed its SRAM
};
const char* ConstraintName(Constraint c);  // "acyclic", "skipped-chip", ...

struct ChipLoad {
  double compute_s = 0;   // its ops' time
  double transfer_s = 0;  // its outgoing link busy time (own sends and forwarded data)
  double sram_bytes = 0;  // weights + received inputs + its largest result
  int32_t ops = 0;
};

struct McmResult {
  bool valid = false;
  Constraint violated = Constraint::kNone;
  std::string error;         // names the constraint and the ops/chips involved; "" when valid
  double stage_seconds = 0;  // max over chips of compute + transfer: the pipeline's period
  double throughput = 0;     // inferences per second = 1 / stage_seconds
  int32_t chips_used = 0;
  int32_t bottleneck_chip = -1;
  double transfer_bytes = 0;    // bytes crossing die-to-die links, summed over hops
  std::vector<ChipLoad> chips;  // one per chip of the spec
};

class McmSimulator {
 public:
  // `spec` must be of kind "mcm" with devices, a peak, an "sram" (or first) memory level and one
  // link; checked by Create.
  static absl::StatusOr<McmSimulator> Create(const TargetSpec& spec);

  // `chip_of_node[i]` is the chip of op graph node i. Deterministic; thread-safe (const).
  McmResult Simulate(const costmodels::OpGraph& graph,
                     const std::vector<int32_t>& chip_of_node) const;

  // Each op's time on one chip (the roofline the simulation charges), by node.
  std::vector<double> OpSeconds(const costmodels::OpGraph& graph) const;

  // A reasonable partition: ops in topological order cut into contiguous runs of roughly equal
  // compute, one run per chip, as many chips as help (the baseline the search must beat).
  std::vector<int32_t> BalancedPartition(const costmodels::OpGraph& graph) const;

  // Decodes the search encoding: one 0/1 action per node in topological order, 1 = start the next
  // chip at this node. Chip ids are then non-decreasing along the topological order, so acyclicity
  // and no-skipped-chip hold by construction; ids past the last chip clamp to it.
  std::vector<int32_t> DecodeAdvances(const std::vector<int32_t>& advance) const;

  const TargetSpec& spec() const { return spec_; }
  int32_t chips() const { return static_cast<int32_t>(spec_.devices); }

 private:
  explicit McmSimulator(TargetSpec spec) : spec_(std::move(spec)) {}
  TargetSpec spec_;
};

}  // namespace mltune::backends::mcm
