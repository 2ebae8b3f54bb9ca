// Splitting a profiled DNN graph across k accelerators and a CPU, in the computational model of
// "Efficient Algorithms for Device Placement of DNN Graph Operators" (Tarnawski et al., NeurIPS
// 2020) and the input format of its repository (msr-fiddle/dnn-partitioning): the throughput
// objective (max-load, the time per sample of a pipeline) and the latency objective (one sample
// through the contiguous pieces of each device), the memory limit and colocation classes, the
// split files, the baselines, and the split as a ConfigProblem for the search strategies.
// docs/placement.md describes the model and the baselines.
#pragma once

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "optimizers/constraints/constraints.h"
#include "optimizers/core/config_problem.h"

namespace mltune::costmodels {
struct OpGraph;
}

namespace mltune::opt::partition {

struct PartitionNode {
  int64_t id = 0;  // as in the file
  std::string name;
  bool accelerator_ok = true;      // supportedOnFpga
  double cpu_latency = 0;          // cpuLatency
  double accelerator_latency = 0;  // fpgaLatency
  bool backward = false;           // isBackwardNode
  double bytes = 0;                // size: memory on an accelerator
  double out_cost = 0;             // cost of every edge leaving the node: moving its output once
  // Colocation class, dense in [0, groups), numbered in a topological order of the graph of
  // classes where it is acyclic (ties by first node), else in topological order of first nodes.
  int32_t group = 0;
  std::string kind;  // op kind where known (HLO opcode), else ""
};

// A graph in the repository's format, nodes indexed densely in file order.
struct PartitionGraph {
  std::string name;
  double accelerator_bytes = 0;  // maxSizePerFPGA
  int32_t accelerators = 1;      // maxFPGAs (k)
  int32_t cpus = 0;              // maxCPUs
  std::vector<PartitionNode> nodes;
  std::vector<std::vector<int32_t>> succ, pred;  // by node index, each listed once
  int32_t groups = 0;
  std::vector<std::vector<int32_t>> group_nodes;  // by group: node indices
  std::vector<int32_t> topo;                      // node indices, a topological order

  int32_t size() const { return static_cast<int32_t>(nodes.size()); }
  bool IsDag() const { return topo.size() == nodes.size(); }
};

// Parses the JSON text of a graph; errors name `source`, the line and column of a syntax error,
// or the node or edge and the field that is wrong.
absl::StatusOr<PartitionGraph> ParsePartitionGraph(std::string_view json_text,
                                                   std::string_view source);
absl::StatusOr<PartitionGraph> LoadPartitionGraph(const std::string& path);

// An HLO module's op graph as a partition graph on `accelerators` devices of `accelerator_bytes`:
// latencies from the roofline (`seconds_per_node[i]`, accelerator; the CPU `cpu_slowdown` times
// slower), an op's output moved at `link_bytes_per_s`, weights as the op's memory.
PartitionGraph PartitionGraphFromOpGraph(const costmodels::OpGraph& graph,
                                         const std::vector<double>& seconds_per_node,
                                         int32_t accelerators, double accelerator_bytes,
                                         double link_bytes_per_s, double cpu_slowdown = 10);
// `microbatches` copies of that graph, as a pipeline runs the microbatches of a training step
// (GPipe): independent dataflow, and every op that reads a weight colocated with the first
// copy's, where the weight lives (counted once). Node ids run copy after copy.
PartitionGraph MicrobatchedPartitionGraph(const costmodels::OpGraph& graph,
                                          const std::vector<double>& seconds_per_node,
                                          int32_t microbatches, int32_t accelerators,
                                          double accelerator_bytes, double link_bytes_per_s,
                                          double cpu_slowdown = 10);

// A random layered DAG in the model's costs, for graphs larger than the profiled ones.
struct LayeredGraphOptions {
  int32_t nodes = 10000;
  int32_t width = 32;      // nodes per layer on average (each layer 1..2*width-1)
  int32_t max_fan_in = 3;  // inputs per node, 1..max_fan_in, from the previous `reach` layers
  int32_t reach = 3;       // layers back an input may come from (1: the previous layer only)
  int32_t accelerators = 8;
  double memory_slack = 1.5;         // accelerator_bytes = slack * total bytes / accelerators
  double cpu_only_fraction = 0;      // nodes the accelerators do not support
  double colocated_fraction = 0;     // single-input nodes colocated with their producer
  double link_bytes_per_unit = 4e5;  // an output's move costs its bytes / this
  uint64_t seed = 0;
};
// Accelerator latencies log-normal with median 10 (sigma 1), the CPU 5-20x slower; output bytes
// log-normal with median 1 MB (an output's move costs about a quarter of an average op's
// latency by default); a third of the nodes hold weights (median 4 MB). InvalidArgument for
// options out of range.
absl::StatusOr<PartitionGraph> LayeredRandomGraph(const LayeredGraphOptions& options);
// The graph in the repository's format (ParsePartitionGraph reads it back to the same graph).
std::string FormatPartitionGraph(const PartitionGraph& graph);

// Where each node runs: 0 = the CPU, 1..k = an accelerator (the repository's numbering).
using Split = std::vector<int32_t>;

enum class Objective { kThroughput, kLatency };
std::string_view ObjectiveName(Objective objective);  // "throughput", "latency"
absl::StatusOr<Objective> ParseObjective(std::string_view name);

struct SplitScore {
  double objective = std::numeric_limits<double>::infinity();  // lower is better
  double max_bytes = 0;                                        // the largest accelerator's memory
  double overflow_bytes = 0;  // summed over accelerators: bytes beyond accelerator_bytes
  // Within the graph's accelerators and each within accelerator_bytes. The objective is computed
  // regardless (the repository's tools only warn), searches treat infeasible splits as +infinity.
  bool feasible = true;
  bool valid = true;  // colocation respected, devices >= 0, unsupported nodes on the CPU
  std::string error;  // why not valid or not feasible
};

// Max-load: each accelerator's load is its nodes' latencies plus, for every node with an edge to
// another device, the node's out_cost once on its own device and once on each receiving
// accelerator; the CPU's load is its nodes' CPU latencies. The objective is the largest load.
SplitScore MaxLoad(const PartitionGraph& graph, const Split& split);
// Latency: each accelerator's nodes are cut into contiguous pieces (a path that leaves and
// re-enters the set starts a new piece); a piece starts when its last input arrives, pays for
// receiving every outside input, runs its nodes, and pays for sending every output that leaves;
// a CPU node starts when its inputs are done. The objective is the last finish. Needs a DAG.
SplitScore Latency(const PartitionGraph& graph, const Split& split);
SplitScore Score(const PartitionGraph& graph, const Split& split, Objective objective);

// Split files: {"fpgas": [{"nodes": [ids]}, ...], "cpus": [{"nodes": [ids]}]}. A split of the
// forward nodes of a training graph is extended to the backward nodes through their colocation
// classes (the repository's treatment of inference splits on training graphs).
absl::StatusOr<Split> ParseSplit(const PartitionGraph& graph, std::string_view json_text,
                                 std::string_view source);
absl::StatusOr<Split> LoadSplit(const PartitionGraph& graph, const std::string& path);
// `objective_key` is "maxLoad" or "totalLatency" (as the repository writes them).
std::string FormatSplit(const PartitionGraph& graph, const Split& split, Objective objective,
                        double objective_value);

// Baselines. All put unsupported nodes on the CPU and keep colocation classes together.
Split OneAccelerator(const PartitionGraph& graph);
Split RandomSplit(const PartitionGraph& graph, std::mt19937_64& rng);
// Baechi's m-ETF as a list scheduler in the model's costs: the ready class that can finish
// earliest goes to the accelerator where it finishes earliest, among those with memory left.
Split EarliestFinish(const PartitionGraph& graph);
// Pipeline stages: the classes in topological order cut into at most k contiguous runs of about
// equal compute, a run ending early when the next class would not fit its accelerator's memory.
Split ContiguousSplit(const PartitionGraph& graph);
// The best split into at most k contiguous runs of the classes in topological order, by dynamic
// programming over the cut points: a run's cost is its compute plus the outputs it sends and the
// inputs it receives; throughput minimises the largest run, latency the sum; runs fit memory.
// (The authors' DP ranges over every ideal of the graph; this one over one order, O(classes^2 k).)
// Above kMaxDpUnits classes the cuts fall between kMaxDpUnits blocks of consecutive classes of
// about equal compute: exact below, an approximation that keeps graphs of 100k nodes to seconds.
// ContiguousSplit's result when no such split fits.
inline constexpr int32_t kMaxDpUnits = 2048;
Split ContiguousDpSplit(const PartitionGraph& graph, Objective objective);
// The same DP over another topological order of the classes: among the classes whose predecessor
// classes are placed, the lowest `rank` next (ties by number). How GO's decisions are decoded: the
// policy proposes an order, the DP places the cuts. ContiguousDpSplit's when `rank` has not one
// entry per class.
Split RankedDpSplit(const PartitionGraph& graph, Objective objective,
                    const std::vector<double>& rank);
// PipeDream's planner (Narayanan et al., SOSP 2019) over the classes in topological order: the
// same DP over cut points, with a stage's time its compute, its sends and its receives
// overlapped (the largest of the three) rather than summed; without PipeDream's data-parallel
// stage replicas, which a split (one device per node) cannot express.
Split PipeDreamSplit(const PartitionGraph& g);
// METIS k-way on the symmetrised graph of colocation classes (vertex weight: latency, edge weight:
// transfer cost), balanced by latency.
absl::StatusOr<Split> MetisSplit(const PartitionGraph& graph, uint64_t seed);
// The repository's local search: from `restarts` random splits, move the one class whose move to
// another accelerator lowers the objective most, until no move helps. Stops when the search
// budget is spent: max_steps objective evaluations, max_seconds of wall time or `stop` (each
// <= 0 or unset: unlimited), checked before each evaluation after the first. `evaluations` gets
// the count spent. `first`: where the first descent starts (nullptr: a random split like the
// others).
Split LocalSearch(const PartitionGraph& graph, Objective objective, int restarts,
                  std::mt19937_64& rng, const Budget& budget, int64_t* evaluations,
                  const Split* first = nullptr);
// The same with an evaluation count alone (<= 0: unlimited).
Split LocalSearch(const PartitionGraph& graph, Objective objective, int restarts,
                  std::mt19937_64& rng, int64_t max_evaluations, int64_t* evaluations);

// Validity: what every strategy's answer must pass (docs/placement.md#validity).
// Why `split` is not contiguous: an accelerator's node feeds a lower-numbered accelerator,
// directly or through CPU nodes; "" when it is contiguous.
std::string ContiguityError(const PartitionGraph& graph, const Split& split);
// Why `split` is not a valid answer: the evaluator's error (colocation, CPU-only nodes, the
// accelerator count, memory, and for latency pieces that form a cycle), or with `contiguous` the
// contiguity error; "" when it is valid.
std::string SplitError(const PartitionGraph& graph, const Split& split, Objective objective,
                       bool contiguous = false);
// `proposal` when it is valid, else the valid split FIX finds nearest to it through
// PartitionProblem's solver, whose constraints imply validity. FailedPrecondition naming the
// constraint ("memory", ...) when the solver finds none.
absl::StatusOr<Split> ValidSplit(const PartitionGraph& graph, Objective objective,
                                 const Split& proposal, bool contiguous = false);

// A split as a configuration: one accelerator (action a = accelerator a + 1) per colocation
// class; classes holding an unsupported node are fixed to the CPU. Scores the objective;
// splits over the memory limit score +infinity. Seeds: one accelerator (when it fits), m-ETF and
// the contiguous DP. Its solver (for the solver-backed strategies and GO's FIX and SAMPLE modes)
// holds the memory per accelerator, classes that must run on the CPU, and, with `contiguous` or the
// latency objective, that no class feeds a lower-numbered accelerator, directly or through CPU
// classes (each accelerator's classes contiguous, which keeps latency's pieces acyclic).
class PartitionProblem : public constraints::ConstrainedProblem {
 public:
  // `seeds`: add the seeds above (the DP's costs 1.5 s on 100k nodes); false where the problem
  // only encodes, decodes or repairs.
  PartitionProblem(const PartitionGraph& graph, Objective objective, bool contiguous = false,
                   bool seeds = true);

  std::string name() const override { return "device-partition"; }
  SearchSpace space() const override { return space_; }
  double Evaluate(const Candidate& candidate) override;

  Split Decode(const Candidate& candidate) const;
  Candidate Encode(const Split& split) const;  // classes by their first node's device
  const PartitionGraph& graph() const { return graph_; }
  Objective objective() const { return objective_; }
  absl::StatusOr<std::unique_ptr<constraints::Solver>> NewSolver() const override;
  std::vector<int32_t> VariableOrder() const override;  // classes, numbered topologically

 private:
  const PartitionGraph& graph_;
  // The order constraint's edges: accelerator class a before class b (see NewSolver).
  void OrderEdges(std::vector<int32_t>* from, std::vector<int32_t>* to) const;

  Objective objective_;
  bool contiguous_;
  SearchSpace space_;
  std::vector<bool> cpu_group_;  // classes fixed to the CPU
};

}  // namespace mltune::opt::partition
