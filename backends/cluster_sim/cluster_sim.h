// Event-driven simulator of an op graph placed on a multi-device cluster (as Placeto's and
// Baechi's simulators): each device runs one op at a time from its ready queue; a result needed on
// another device is sent once per destination device over the sender's send channel and the
// receiver's receive channel (latency + bytes / bandwidth, each channel one transfer at a time);
// each device's memory holds its resident weights, live activations and received tensors, with
// the peak tracked and running out of memory making the placement invalid.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/spec/target_spec.h"
#include "costmodels/analytical/op_graph.h"

namespace mltune::backends::cluster {

enum class QueuePolicy {
  kFifo,      // ready ops run in the order they became ready (ties: topological order)
  kPriority,  // the ready op with the highest priority first (ties: FIFO)
};

struct SimulationOptions {
  QueuePolicy policy = QueuePolicy::kFifo;
  std::vector<double> priority;  // per node, for kPriority (the scheduling task plugs in here)
};

// The order in which every device ran its ops and every channel carried its transfers: replaying
// it (Replay) gives a max-plus system, so faster links or devices never make it slower.
struct Schedule {
  std::vector<std::vector<int32_t>> device_order;  // per device: node ids in run order
  // Per sending device: (node, destination device) in send order.
  std::vector<std::vector<std::pair<int32_t, int32_t>>> send_order;
  // Per receiving device: (node, source device) in receive order; a transfer needs both of its
  // channels, so replaying the send order alone could pair them differently.
  std::vector<std::vector<std::pair<int32_t, int32_t>>> recv_order;
};

struct ClusterResult {
  bool valid = false;
  std::string error;  // why invalid (out of memory on device d: needs X, has Y; bad placement)
  double makespan_s = 0;
  std::vector<double> busy_s;             // per device, compute time
  std::vector<double> peak_memory_bytes;  // per device
  double transfer_bytes = 0;              // over all links
  int64_t transfers = 0;
  std::vector<double> finish_s;  // per node
  Schedule schedule;             // what ran where and when, for Replay
};

class ClusterSimulator {
 public:
  // `spec` needs devices >= 1, a peak, a memory level (the first is the device memory) and, with
  // more than one device, a link; checked by Create.
  static absl::StatusOr<ClusterSimulator> Create(const TargetSpec& spec);

  // `device_of_node[i]` is node i's device. Deterministic; thread-safe (const).
  ClusterResult Simulate(const costmodels::OpGraph& graph,
                         const std::vector<int32_t>& device_of_node,
                         const SimulationOptions& options = {}) const;
  // Runs `schedule` (from a Simulate of the same graph and placement) in its recorded orders.
  ClusterResult Replay(const costmodels::OpGraph& graph, const std::vector<int32_t>& device_of_node,
                       const Schedule& schedule) const;

  // The baseline placement (Baechi's m-ETF): in topological order, each op goes to the device
  // where it would finish earliest given the devices' loads and the transfers its inputs need,
  // among devices with memory left for it; all on device 0 when one device.
  std::vector<int32_t> EarliestFinishPlacement(const costmodels::OpGraph& graph) const;

  // Compute time of one node on one device: its measured time where it has one, else the
  // roofline on the spec plus the kernel overhead.
  double NodeSeconds(const costmodels::OpNode& node) const;

  const TargetSpec& spec() const { return spec_; }
  int32_t devices() const { return static_cast<int32_t>(spec_.devices); }

 private:
  explicit ClusterSimulator(TargetSpec spec) : spec_(std::move(spec)) {}
  TargetSpec spec_;
};

}  // namespace mltune::backends::cluster
