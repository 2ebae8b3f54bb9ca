// The dataflow graph of a module's entry computation with one node per op that does work: the
// common input of the fusion planner, the TPU simulator, the multi-chip partitioner and the
// placement simulator. Parameters, constants and tuple plumbing (tuple, get-tuple-element,
// bitcast) are not nodes: edges run through them to the op that produced the data, and the
// parameters and constants an op reads are its resident weights. Plain structs, so tests and
// other front ends (ONNX later) can build graphs by hand.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "costmodels/analytical/analytical.h"
#include "ir/module.h"

namespace mltune::costmodels {

// A data dependency: `bytes` of the producer's result flow into the consumer.
struct OpInput {
  int32_t node = -1;
  double bytes = 0;
};

// A parameter or constant an op reads, by `id` (shared ids are the same array).
struct OpWeight {
  int32_t id = -1;
  double bytes = 0;
};

// A dot or convolution as a batched matrix multiply: [batch, m, k] x [batch, k, n].
struct MatmulDims {
  int64_t batch = 1, m = 0, n = 0, k = 0;
};

struct OpNode {
  std::string name;          // the instruction's name
  std::string opcode;        // HLO opcode name
  std::string element_type;  // of the result (of its first array for tuples), e.g. "f32"
  int64_t element_bytes = 4;
  // Costs of the op as its own kernel; control flow and fusions include what they call.
  OpCost cost;
  double output_bytes = 0;  // the result's array bytes (summed over tuple elements)
  // The result (its largest array for tuples) as a 2-D iteration space: rows = product of the
  // leading dimensions, cols = the minor-most dimension (the vector units' lane dimension).
  int64_t rows = 1, cols = 1;
  bool matmul = false;  // dot or convolution; `mm` is set
  MatmulDims mm;
  // Vector-unit friendly and cheap to recompute: fusible into its consumers (elementwise,
  // broadcast, reshape, transpose, slice, concatenate, convert, pad, iota, ...).
  bool elementwise_like = false;
  // Runs as one opaque kernel and cannot be fused (control flow, custom calls, sort, ...).
  bool opaque = false;
  std::vector<OpInput> inputs;    // producers, each listed once, in operand order
  std::vector<int32_t> users;     // consumers, each listed once
  std::vector<OpWeight> weights;  // parameters and constants read
  bool is_output = false;         // part of the entry's result
  // Seconds its kernel was measured to take on one of the target's devices (a CPU worker's
  // kernel times, backends/cpu MeasuredKernelGraph); 0: the simulators estimate it.
  double measured_s = 0;
};

struct OpGraph {
  std::string module_name;
  std::vector<OpNode> nodes;         // topologically ordered: inputs precede their users
  int32_t weight_count = 0;          // weight ids are in [0, weight_count)
  std::vector<double> weight_bytes;  // by weight id
  // By weight id, its (largest) array as OpNode's rows x cols; empty in hand-built graphs. A
  // kernel that reduces a parameter iterates over the parameter, not its small result.
  std::vector<int64_t> weight_rows, weight_cols;

  int32_t size() const { return static_cast<int32_t>(nodes.size()); }
  // Fills every node's `users` from the inputs (for hand-built graphs).
  void LinkUsers();
};

// The entry computation of `module` as an op graph.
OpGraph BuildOpGraph(const ir::Module& module);
// `computation` of `module` (a while's body, a branch) as an op graph.
OpGraph BuildOpGraph(const ir::Module& module, const ir::Computation& computation);

}  // namespace mltune::costmodels
