// The cluster simulator: a discrete-event simulation over flat arrays built once per call (the
// placement search calls Simulate many times a second on graphs of thousands of ops, so there is
// no per-node allocation and every step is O(log n)).
//
// Semantics (the header's contract, made exact):
// - An op is ready on its device once every input is there: a local producer has finished, or
//   the producer's transfer to this device has completed. A free device starts its best ready
//   op: kFifo by (ready time, node id), kPriority by (highest priority, ready time, node id).
// - A finished op requests one transfer per distinct remote device among its consumers, in the
//   order of their first consumer, carrying the largest edge bytes to that device. Every send
//   and receive channel serves its requests strictly in request order, one at a time; a transfer
//   starts when it heads both of its channels' queues and both are idle, and takes
//   latency + bytes / bandwidth of the spec's first link.
// - Memory per device: resident weights (distinct ids) for the whole run; an op's output from
//   its start until its local consumers have finished and its sends have completed (module
//   outputs stay); a received tensor from its transfer's start until its consumers on that
//   device have finished. Completions at one instant are processed before any start at that
//   instant, so what is freed at t is free for what starts at t. Using more than the first
//   memory level's bytes makes the placement invalid.
// - Replay uses the same engine with each device's run order and each channel's transfer order
//   fixed: every start is the max of its predecessors' finishes (a max-plus system).
#include "backends/cluster_sim/cluster_sim.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "costmodels/analytical/analytical.h"

namespace mltune::backends::cluster {
namespace {

using costmodels::OpGraph;
using costmodels::OpNode;

size_t Index(int32_t i) { return static_cast<size_t>(i); }

// The exact count, with a binary unit when it is large enough to need one.
std::string FormatBytes(double bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return absl::StrFormat("%.0f bytes", bytes);
  double scaled = bytes / 1024;
  int unit = 0;
  while (scaled >= 1024 && unit < 3) {
    scaled /= 1024;
    ++unit;
  }
  return absl::StrFormat("%.0f bytes (%.2f %s)", bytes, scaled, kUnits[unit]);
}

std::string NodeLabel(const OpGraph& graph, int32_t node) {
  const std::string& name = graph.nodes[Index(node)].name;
  return name.empty() ? absl::StrCat("node ", node) : absl::StrCat("node ", node, " (", name, ")");
}

// Empty when every node is on a device in [0, devices).
std::string PlacementError(const OpGraph& graph, const std::vector<int32_t>& device_of_node,
                           int32_t devices) {
  if (device_of_node.size() != graph.nodes.size()) {
    return absl::StrCat("bad placement: ", device_of_node.size(), " device ids for ", graph.size(),
                        " nodes");
  }
  for (int32_t i = 0; i < graph.size(); ++i) {
    const int32_t device = device_of_node[Index(i)];
    if (device < 0 || device >= devices) {
      return absl::StrCat("bad placement: ", NodeLabel(graph, i), " is on device ", device,
                          ", outside [0, ", devices, ")");
    }
  }
  return "";
}

// Empty when every input is an earlier node (the simulator relies on topological order).
std::string GraphError(const OpGraph& graph) {
  for (int32_t v = 0; v < graph.size(); ++v) {
    for (const costmodels::OpInput& in : graph.nodes[Index(v)].inputs) {
      if (in.node < 0 || in.node >= v) {
        return absl::StrCat("bad graph: ", NodeLabel(graph, v), " reads node ", in.node,
                            ", which is not an earlier node");
      }
    }
  }
  return "";
}

// Bytes an op's result occupies: its output, or more if an edge says it carries more.
std::vector<double> OutputBytes(const OpGraph& graph) {
  std::vector<double> bytes(graph.nodes.size());
  for (size_t i = 0; i < graph.nodes.size(); ++i) bytes[i] = graph.nodes[i].output_bytes;
  for (const OpNode& node : graph.nodes) {
    for (const costmodels::OpInput& in : node.inputs) {
      bytes[Index(in.node)] = std::max(bytes[Index(in.node)], in.bytes);
    }
  }
  return bytes;
}

// Weight ids index arrays of this size (hand-built graphs may leave weight_count short).
int32_t WeightSlots(const OpGraph& graph) {
  int32_t slots = std::max<int32_t>(graph.weight_count, 0);
  for (const OpNode& node : graph.nodes) {
    for (const costmodels::OpWeight& w : node.weights) slots = std::max(slots, w.id + 1);
  }
  return slots;
}

double WeightBytes(const OpGraph& graph, const costmodels::OpWeight& w) {
  if (w.id >= 0 && Index(w.id) < graph.weight_bytes.size()) return graph.weight_bytes[Index(w.id)];
  return w.bytes;
}

// The data flow of one placement in flat arrays: consumers per producer (CSR) and the transfers,
// one per producer and remote destination device, contiguous per producer.
struct Flow {
  struct Transfer {
    int32_t node = -1;
    int32_t src = -1;
    int32_t dst = -1;
    double bytes = 0;
    int32_t consumers = 0;  // input edges on `dst` that read it
  };

  std::vector<int32_t> in_begin;        // per node + 1: its input edges' ids
  std::vector<int32_t> out_begin;       // per node + 1: into out_edge
  std::vector<int32_t> out_edge;        // input edge ids grouped by producer
  std::vector<int32_t> edge_consumer;   // per input edge
  std::vector<int32_t> edge_transfer;   // per input edge: transfer id, -1 when local
  std::vector<int32_t> transfer_begin;  // per node + 1: into transfers
  std::vector<Transfer> transfers;
  std::vector<int32_t> local_edges;  // per node: input edges on its own device that read it
  std::vector<double> output_bytes;

  Flow(const OpGraph& graph, const std::vector<int32_t>& device_of_node, int32_t devices) {
    const int32_t n = graph.size();
    in_begin.assign(Index(n) + 1, 0);
    for (int32_t v = 0; v < n; ++v) {
      in_begin[Index(v) + 1] =
          in_begin[Index(v)] + static_cast<int32_t>(graph.nodes[Index(v)].inputs.size());
    }
    const int32_t edges = in_begin[Index(n)];
    edge_consumer.resize(Index(edges));
    out_begin.assign(Index(n) + 1, 0);
    for (int32_t v = 0; v < n; ++v) {
      for (const costmodels::OpInput& in : graph.nodes[Index(v)].inputs) {
        ++out_begin[Index(in.node) + 1];
      }
    }
    for (int32_t u = 0; u < n; ++u) out_begin[Index(u) + 1] += out_begin[Index(u)];
    out_edge.resize(Index(edges));
    std::vector<int32_t> fill(out_begin.begin(), out_begin.end() - 1);
    for (int32_t v = 0; v < n; ++v) {
      const std::vector<costmodels::OpInput>& inputs = graph.nodes[Index(v)].inputs;
      for (size_t k = 0; k < inputs.size(); ++k) {
        const int32_t edge = in_begin[Index(v)] + static_cast<int32_t>(k);
        edge_consumer[Index(edge)] = v;
        out_edge[Index(fill[Index(inputs[k].node)]++)] = edge;
      }
    }

    edge_transfer.assign(Index(edges), -1);
    transfer_begin.assign(Index(n) + 1, 0);
    local_edges.assign(Index(n), 0);
    std::vector<int32_t> transfer_to(Index(devices), -1);  // scratch, reset after each producer
    for (int32_t u = 0; u < n; ++u) {
      const int32_t src = device_of_node[Index(u)];
      const int32_t first = static_cast<int32_t>(transfers.size());
      for (int32_t e = out_begin[Index(u)]; e < out_begin[Index(u) + 1]; ++e) {
        const int32_t edge = out_edge[Index(e)];
        const int32_t dst = device_of_node[Index(edge_consumer[Index(edge)])];
        if (dst == src) {
          ++local_edges[Index(u)];
          continue;
        }
        int32_t& id = transfer_to[Index(dst)];
        if (id < 0) {
          id = static_cast<int32_t>(transfers.size());
          transfers.push_back({u, src, dst, 0, 0});
        }
        const int32_t consumer = edge_consumer[Index(edge)];
        const double bytes =
            graph.nodes[Index(consumer)].inputs[Index(edge - in_begin[Index(consumer)])].bytes;
        transfers[Index(id)].bytes = std::max(transfers[Index(id)].bytes, bytes);
        ++transfers[Index(id)].consumers;
        edge_transfer[Index(edge)] = id;
      }
      for (size_t t = Index(first); t < transfers.size(); ++t)
        transfer_to[Index(transfers[t].dst)] = -1;
      transfer_begin[Index(u) + 1] = static_cast<int32_t>(transfers.size());
    }
    output_bytes = OutputBytes(graph);
  }

  // The transfer of `node`'s result to `dst`, or -1.
  int32_t FindTransfer(int32_t node, int32_t dst) const {
    for (int32_t t = transfer_begin[Index(node)]; t < transfer_begin[Index(node) + 1]; ++t) {
      if (transfers[Index(t)].dst == dst) return t;
    }
    return -1;
  }
};

// One run of the event simulation: Simulate picks from ready queues, Replay follows a schedule.
class Engine {
 public:
  Engine(const ClusterSimulator& sim, const OpGraph& graph,
         const std::vector<int32_t>& device_of_node)
      : sim_(sim),
        graph_(graph),
        device_of_node_(device_of_node),
        devices_(sim.devices()),
        flow_(graph, device_of_node, sim.devices()) {}

  ClusterResult Simulate(const SimulationOptions& options) {
    replay_ = false;
    priority_ = options.policy == QueuePolicy::kPriority ? &options.priority : nullptr;
    return Run();
  }

  // `schedule` must already be checked by CheckSchedule.
  ClusterResult Replay(const Schedule& schedule) {
    replay_ = true;
    device_order_ = &schedule.device_order;
    return Run();
  }

  // Empty when `schedule` runs every node once on its device and carries every transfer once on
  // each of its two channels; fills the channels' fixed orders.
  std::string CheckSchedule(const Schedule& schedule) {
    const int32_t n = graph_.size();
    if (schedule.device_order.size() > Index(devices_) ||
        schedule.send_order.size() > Index(devices_) ||
        schedule.recv_order.size() > Index(devices_)) {
      return absl::StrCat("bad schedule: more rows than the ", devices_, " devices");
    }
    std::vector<uint8_t> seen(Index(n), 0);
    for (size_t d = 0; d < schedule.device_order.size(); ++d) {
      for (int32_t v : schedule.device_order[d]) {
        if (v < 0 || v >= n) return absl::StrCat("bad schedule: device ", d, " runs node ", v);
        if (Index(device_of_node_[Index(v)]) != d) {
          return absl::StrCat("bad schedule: device ", d, " runs ", NodeLabel(graph_, v),
                              ", which is placed on device ", device_of_node_[Index(v)]);
        }
        if (seen[Index(v)]++) {
          return absl::StrCat("bad schedule: ", NodeLabel(graph_, v), " runs twice");
        }
      }
    }
    for (int32_t v = 0; v < n; ++v) {
      if (!seen[Index(v)])
        return absl::StrCat("bad schedule: ", NodeLabel(graph_, v), " never runs");
    }
    send_queue_.assign(Index(devices_), {});
    recv_queue_.assign(Index(devices_), {});
    for (int side = 0; side < 2; ++side) {
      const auto& rows = side == 0 ? schedule.send_order : schedule.recv_order;
      const char* channel = side == 0 ? "send" : "receive";
      std::vector<uint8_t> carried(flow_.transfers.size(), 0);
      for (size_t d = 0; d < rows.size(); ++d) {
        for (const auto& [node, peer] : rows[d]) {
          // A send row names the destination, a receive row the source.
          const int32_t src = side == 0 ? static_cast<int32_t>(d) : peer;
          const int32_t dst = side == 0 ? peer : static_cast<int32_t>(d);
          const int32_t t = node >= 0 && node < n && device_of_node_[Index(node)] == src &&
                                    dst >= 0 && dst < devices_
                                ? flow_.FindTransfer(node, dst)
                                : -1;
          if (t < 0) {
            return absl::StrCat("bad schedule: ", channel, " channel of device ", d,
                                " carries node ", node, " from device ", src, " to device ", dst,
                                ", which is no transfer of this placement");
          }
          if (carried[Index(t)]++) {
            return absl::StrCat("bad schedule: ", channel, " channel of device ", d, " carries ",
                                NodeLabel(graph_, node), " twice");
          }
          (side == 0 ? send_queue_ : recv_queue_)[d].push_back(t);
        }
      }
      for (size_t t = 0; t < carried.size(); ++t) {
        if (!carried[t]) {
          const Flow::Transfer& tr = flow_.transfers[t];
          return absl::StrCat("bad schedule: no ", channel, " channel carries ",
                              NodeLabel(graph_, tr.node), " from device ", tr.src, " to device ",
                              tr.dst);
        }
      }
    }
    return "";
  }

 private:
  enum class EventKind : uint8_t { kOpFinish, kTransferEnd };
  struct Event {
    double time;
    int64_t seq;
    EventKind kind;
    int32_t id;
    bool operator>(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
  };
  struct ReadyOp {
    double priority;
    double ready_s;
    int32_t node;
  };
  // Heap order: true when `a` runs after `b`.
  static bool RunsAfter(const ReadyOp& a, const ReadyOp& b) {
    if (a.priority != b.priority) return a.priority < b.priority;
    if (a.ready_s != b.ready_s) return a.ready_s > b.ready_s;
    return a.node > b.node;
  }
  struct Channel {
    size_t head = 0;  // into its queue
    bool busy = false;
    bool dirty = false;
  };

  ClusterResult Run() {
    const int32_t n = graph_.size();
    const size_t devices = Index(devices_);
    const size_t transfers = flow_.transfers.size();
    result_ = ClusterResult();
    result_.busy_s.assign(devices, 0);
    result_.peak_memory_bytes.assign(devices, 0);
    result_.finish_s.assign(Index(n), 0);
    result_.schedule.device_order.assign(devices, {});
    result_.schedule.send_order.assign(devices, {});
    result_.schedule.recv_order.assign(devices, {});
    capacity_ = static_cast<double>(sim_.spec().memory.front().bytes);
    if (!sim_.spec().links.empty()) link_ = sim_.spec().links.front();
    failed_ = false;

    duration_.resize(Index(n));
    for (int32_t v = 0; v < n; ++v) duration_[Index(v)] = sim_.NodeSeconds(graph_.nodes[Index(v)]);
    pending_.resize(Index(n));
    for (int32_t v = 0; v < n; ++v) {
      pending_[Index(v)] = flow_.in_begin[Index(v) + 1] - flow_.in_begin[Index(v)];
    }
    local_left_ = flow_.local_edges;
    sends_left_.resize(Index(n));
    for (int32_t v = 0; v < n; ++v) {
      sends_left_[Index(v)] = flow_.transfer_begin[Index(v) + 1] - flow_.transfer_begin[Index(v)];
    }
    state_.assign(Index(n), kWaiting);
    consumers_left_.resize(transfers);
    for (size_t t = 0; t < transfers; ++t) consumers_left_[t] = flow_.transfers[t].consumers;
    requested_.assign(transfers, 0);
    usage_.assign(devices, 0);
    running_.assign(devices, -1);
    device_dirty_.assign(devices, 0);
    dirty_devices_.clear();
    ready_.assign(devices, {});
    next_in_order_.assign(devices, 0);
    send_.assign(devices, {});
    recv_.assign(devices, {});
    dirty_send_.clear();
    dirty_recv_.clear();
    if (!replay_) {
      send_queue_.assign(devices, {});
      recv_queue_.assign(devices, {});
    } else {
      // CheckSchedule may have fewer rows than devices.
      send_queue_.resize(devices);
      recv_queue_.resize(devices);
    }
    events_ = {};
    seq_ = 0;
    finished_ = 0;

    AllocateWeights();
    if (failed_) return Fail();
    for (int32_t v = 0; v < n; ++v) {
      if (pending_[Index(v)] == 0) MakeReady(v, 0);
    }
    Dispatch(0);
    while (!failed_ && !events_.empty()) {
      const double now = events_.top().time;
      // Every completion at `now` before any start at `now`.
      while (!events_.empty() && events_.top().time == now) {
        const Event event = events_.top();
        events_.pop();
        if (event.kind == EventKind::kOpFinish) {
          FinishOp(event.id, now);
        } else {
          EndTransfer(event.id, now);
        }
      }
      Dispatch(now);
    }
    if (failed_) return Fail();
    if (finished_ < n) {
      // Only a replayed schedule can wait on itself.
      failure_ = absl::StrCat("internal error: ", n - finished_, " of ", n, " ops never ran");
      for (size_t d = 0; replay_ && d < devices; ++d) {
        if (next_in_order_[d] < OrderOf(d).size()) {
          failure_ = absl::StrCat("bad schedule: it deadlocks; device ", d, " waits forever for ",
                                  NodeLabel(graph_, OrderOf(d)[next_in_order_[d]]), " (",
                                  n - finished_, " of ", n, " ops never ran)");
          break;
        }
      }
      return Fail();
    }
    result_.valid = true;
    for (double finish : result_.finish_s)
      result_.makespan_s = std::max(result_.makespan_s, finish);
    return std::move(result_);
  }

  ClusterResult Fail() {
    result_.valid = false;
    result_.makespan_s = 0;  // an invalid placement never scores
    result_.error = failure_;
    return std::move(result_);
  }

  const std::vector<int32_t>& OrderOf(size_t device) const {
    static const std::vector<int32_t> kEmpty;
    return device < device_order_->size() ? (*device_order_)[device] : kEmpty;
  }

  // `what` and `node` say what is being allocated, for the error (node -1: nothing to say).
  void Allocate(int32_t device, double bytes, double now, const char* what, int32_t node) {
    double& usage = usage_[Index(device)];
    usage += bytes;
    double& peak = result_.peak_memory_bytes[Index(device)];
    peak = std::max(peak, usage);
    if (usage > capacity_ && !failed_) {
      failed_ = true;
      failure_ = absl::StrFormat("out of memory on device %d: needs %s at t=%.6g s, capacity %s",
                                 device, FormatBytes(usage), now, FormatBytes(capacity_));
      if (node >= 0)
        absl::StrAppend(&failure_, " (allocating ", what, NodeLabel(graph_, node), ")");
    }
  }

  void Free(int32_t device, double bytes) { usage_[Index(device)] -= bytes; }

  // Resident weights: each distinct id once per device that runs an op reading it.
  void AllocateWeights() {
    const int32_t n = graph_.size();
    std::vector<int32_t> by_device_begin(Index(devices_) + 1, 0);
    for (int32_t v = 0; v < n; ++v) ++by_device_begin[Index(device_of_node_[Index(v)]) + 1];
    for (int32_t d = 0; d < devices_; ++d)
      by_device_begin[Index(d) + 1] += by_device_begin[Index(d)];
    std::vector<int32_t> by_device(Index(n));
    std::vector<int32_t> fill(by_device_begin.begin(), by_device_begin.end() - 1);
    for (int32_t v = 0; v < n; ++v) by_device[Index(fill[Index(device_of_node_[Index(v)])]++)] = v;
    std::vector<int32_t> resident_on(Index(WeightSlots(graph_)), -1);
    for (int32_t d = 0; d < devices_; ++d) {
      double bytes = 0;
      for (int32_t i = by_device_begin[Index(d)]; i < by_device_begin[Index(d) + 1]; ++i) {
        for (const costmodels::OpWeight& w : graph_.nodes[Index(by_device[Index(i)])].weights) {
          if (w.id >= 0) {
            if (resident_on[Index(w.id)] == d) continue;
            resident_on[Index(w.id)] = d;
          }
          bytes += WeightBytes(graph_, w);
        }
      }
      if (bytes > 0) Allocate(d, bytes, 0, "", -1);
      if (failed_) {
        absl::StrAppend(&failure_, " (its resident weights alone)");
        return;
      }
    }
  }

  void MarkDevice(int32_t device) {
    if (!device_dirty_[Index(device)]) {
      device_dirty_[Index(device)] = 1;
      dirty_devices_.push_back(device);
    }
  }
  void MarkChannel(std::vector<Channel>& channels, std::vector<int32_t>& dirty, int32_t device) {
    Channel& channel = channels[Index(device)];
    if (!channel.dirty) {
      channel.dirty = true;
      dirty.push_back(device);
    }
  }

  void MakeReady(int32_t node, double now) {
    const int32_t device = device_of_node_[Index(node)];
    if (!replay_) {
      const double priority = priority_ != nullptr ? (*priority_)[Index(node)] : 0;
      std::vector<ReadyOp>& heap = ready_[Index(device)];
      heap.push_back({priority, now, node});
      std::push_heap(heap.begin(), heap.end(), RunsAfter);
    }
    MarkDevice(device);
  }

  void Push(double time, EventKind kind, int32_t id) { events_.push({time, seq_++, kind, id}); }

  // Starts what can start at `now` on the devices and channels whose state changed.
  void Dispatch(double now) {
    // Starting an op changes no other device or channel, so one pass suffices.
    for (size_t i = 0; i < dirty_devices_.size() && !failed_; ++i) {
      const int32_t device = dirty_devices_[i];
      device_dirty_[Index(device)] = 0;
      TryStartOp(device, now);
    }
    dirty_devices_.clear();
    for (size_t i = 0; i < dirty_send_.size(); ++i) {
      const int32_t device = dirty_send_[i];
      Channel& channel = send_[Index(device)];
      channel.dirty = false;
      if (channel.head < send_queue_[Index(device)].size() && !failed_) {
        TryStartTransfer(send_queue_[Index(device)][channel.head], now);
      }
    }
    dirty_send_.clear();
    for (size_t i = 0; i < dirty_recv_.size(); ++i) {
      const int32_t device = dirty_recv_[i];
      Channel& channel = recv_[Index(device)];
      channel.dirty = false;
      if (channel.head < recv_queue_[Index(device)].size() && !failed_) {
        TryStartTransfer(recv_queue_[Index(device)][channel.head], now);
      }
    }
    dirty_recv_.clear();
  }

  void TryStartOp(int32_t device, double now) {
    if (running_[Index(device)] >= 0) return;
    int32_t node;
    if (replay_) {
      const std::vector<int32_t>& order = OrderOf(Index(device));
      size_t& next = next_in_order_[Index(device)];
      if (next >= order.size() || pending_[Index(order[next])] != 0) return;
      node = order[next++];
    } else {
      std::vector<ReadyOp>& heap = ready_[Index(device)];
      if (heap.empty()) return;
      std::pop_heap(heap.begin(), heap.end(), RunsAfter);
      node = heap.back().node;
      heap.pop_back();
    }
    running_[Index(device)] = node;
    state_[Index(node)] = kRunning;
    result_.schedule.device_order[Index(device)].push_back(node);
    result_.busy_s[Index(device)] += duration_[Index(node)];
    Allocate(device, flow_.output_bytes[Index(node)], now, "the output of ", node);
    Push(now + duration_[Index(node)], EventKind::kOpFinish, node);
  }

  void TryStartTransfer(int32_t t, double now) {
    const Flow::Transfer& tr = flow_.transfers[Index(t)];
    Channel& send = send_[Index(tr.src)];
    Channel& recv = recv_[Index(tr.dst)];
    if (!requested_[Index(t)] || send.busy || recv.busy) return;
    const std::vector<int32_t>& send_queue = send_queue_[Index(tr.src)];
    const std::vector<int32_t>& recv_queue = recv_queue_[Index(tr.dst)];
    if (send.head >= send_queue.size() || send_queue[send.head] != t) return;
    if (recv.head >= recv_queue.size() || recv_queue[recv.head] != t) return;
    ++send.head;
    ++recv.head;
    send.busy = true;
    recv.busy = true;
    result_.schedule.send_order[Index(tr.src)].push_back({tr.node, tr.dst});
    result_.schedule.recv_order[Index(tr.dst)].push_back({tr.node, tr.src});
    ++result_.transfers;
    result_.transfer_bytes += tr.bytes;
    Allocate(tr.dst, tr.bytes, now, "a received copy of ", tr.node);
    Push(now + link_.latency_s + tr.bytes / link_.bandwidth, EventKind::kTransferEnd, t);
  }

  // Frees `node`'s output once nothing on its device or on the wire needs it.
  void MaybeFreeOutput(int32_t node) {
    if (state_[Index(node)] != kFinished || local_left_[Index(node)] != 0 ||
        sends_left_[Index(node)] != 0 || graph_.nodes[Index(node)].is_output) {
      return;
    }
    state_[Index(node)] = kFreed;
    Free(device_of_node_[Index(node)], flow_.output_bytes[Index(node)]);
  }

  void FinishOp(int32_t node, double now) {
    const int32_t device = device_of_node_[Index(node)];
    result_.finish_s[Index(node)] = now;
    running_[Index(device)] = -1;
    state_[Index(node)] = kFinished;
    ++finished_;
    MarkDevice(device);
    // Local consumers have their input.
    for (int32_t e = flow_.out_begin[Index(node)]; e < flow_.out_begin[Index(node) + 1]; ++e) {
      const int32_t edge = flow_.out_edge[Index(e)];
      if (flow_.edge_transfer[Index(edge)] >= 0) continue;
      const int32_t consumer = flow_.edge_consumer[Index(edge)];
      if (--pending_[Index(consumer)] == 0) MakeReady(consumer, now);
    }
    // This op no longer needs its inputs.
    for (int32_t edge = flow_.in_begin[Index(node)]; edge < flow_.in_begin[Index(node) + 1];
         ++edge) {
      const int32_t t = flow_.edge_transfer[Index(edge)];
      if (t < 0) {
        const int32_t producer =
            graph_.nodes[Index(node)].inputs[Index(edge - flow_.in_begin[Index(node)])].node;
        --local_left_[Index(producer)];
        MaybeFreeOutput(producer);
      } else if (--consumers_left_[Index(t)] == 0) {
        Free(device, flow_.transfers[Index(t)].bytes);
      }
    }
    // Its result goes to every remote device that reads it.
    for (int32_t t = flow_.transfer_begin[Index(node)]; t < flow_.transfer_begin[Index(node) + 1];
         ++t) {
      const Flow::Transfer& tr = flow_.transfers[Index(t)];
      requested_[Index(t)] = 1;
      if (!replay_) {
        send_queue_[Index(tr.src)].push_back(t);
        recv_queue_[Index(tr.dst)].push_back(t);
      }
      MarkChannel(send_, dirty_send_, tr.src);
      MarkChannel(recv_, dirty_recv_, tr.dst);
    }
    MaybeFreeOutput(node);
  }

  void EndTransfer(int32_t t, double now) {
    const Flow::Transfer& tr = flow_.transfers[Index(t)];
    send_[Index(tr.src)].busy = false;
    recv_[Index(tr.dst)].busy = false;
    MarkChannel(send_, dirty_send_, tr.src);
    MarkChannel(recv_, dirty_recv_, tr.dst);
    for (int32_t e = flow_.out_begin[Index(tr.node)]; e < flow_.out_begin[Index(tr.node) + 1];
         ++e) {
      const int32_t edge = flow_.out_edge[Index(e)];
      if (flow_.edge_transfer[Index(edge)] != t) continue;
      const int32_t consumer = flow_.edge_consumer[Index(edge)];
      if (--pending_[Index(consumer)] == 0) MakeReady(consumer, now);
    }
    --sends_left_[Index(tr.node)];
    MaybeFreeOutput(tr.node);
  }

  enum NodeState : uint8_t { kWaiting, kRunning, kFinished, kFreed };

  const ClusterSimulator& sim_;
  const OpGraph& graph_;
  const std::vector<int32_t>& device_of_node_;
  const int32_t devices_;
  const Flow flow_;

  bool replay_ = false;
  const std::vector<double>* priority_ = nullptr;  // null: FIFO
  const std::vector<std::vector<int32_t>>* device_order_ = nullptr;
  double capacity_ = 0;
  Link link_;

  ClusterResult result_;
  bool failed_ = false;
  std::string failure_;
  std::vector<double> duration_;
  std::vector<int32_t> pending_;     // per node: inputs not yet on its device
  std::vector<int32_t> local_left_;  // per node: local consumer edges not yet finished
  std::vector<int32_t> sends_left_;  // per node: transfers not yet completed
  std::vector<NodeState> state_;
  std::vector<int32_t> consumers_left_;  // per transfer: consumer edges not yet finished
  std::vector<uint8_t> requested_;       // per transfer
  std::vector<double> usage_;            // per device
  std::vector<int32_t> running_;         // per device: node, or -1 when idle
  std::vector<uint8_t> device_dirty_;
  std::vector<int32_t> dirty_devices_;
  std::vector<std::vector<ReadyOp>> ready_;  // per device: heap (Simulate)
  std::vector<size_t> next_in_order_;        // per device: into its order (Replay)
  std::vector<Channel> send_, recv_;
  std::vector<std::vector<int32_t>> send_queue_, recv_queue_;  // per device: transfer ids
  std::vector<int32_t> dirty_send_, dirty_recv_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  int64_t seq_ = 0;
  int32_t finished_ = 0;
};

ClusterResult Invalid(std::string error) {
  ClusterResult result;
  result.error = std::move(error);
  return result;
}

}  // namespace

absl::StatusOr<ClusterSimulator> ClusterSimulator::Create(const TargetSpec& spec) {
  const std::string prefix = absl::StrCat("cluster simulator: target spec '", spec.name, "' ");
  if (spec.devices < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "needs at least one device (has ", spec.devices, ")"));
  }
  if (!(spec.PeakOps("f32") > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(prefix, "needs a positive f32 peak"));
  }
  if (spec.memory.empty() || spec.memory.front().bytes <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "needs a first memory level with a positive size (device memory)"));
  }
  if (spec.devices > 1 && (spec.links.empty() || !(spec.links.front().bandwidth > 0))) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "has ", spec.devices, " devices but no link with positive bandwidth"));
  }
  return ClusterSimulator(spec);
}

double ClusterSimulator::NodeSeconds(const costmodels::OpNode& node) const {
  if (node.measured_s > 0) return node.measured_s;
  return costmodels::RooflineSeconds(node.cost, spec_, node.element_type);
}

ClusterResult ClusterSimulator::Simulate(const costmodels::OpGraph& graph,
                                         const std::vector<int32_t>& device_of_node,
                                         const SimulationOptions& options) const {
  if (std::string error = PlacementError(graph, device_of_node, devices()); !error.empty()) {
    return Invalid(std::move(error));
  }
  if (options.policy == QueuePolicy::kPriority && options.priority.size() != graph.nodes.size()) {
    return Invalid(
        absl::StrCat("bad priorities: ", options.priority.size(), " for ", graph.size(), " nodes"));
  }
  if (std::string error = GraphError(graph); !error.empty()) return Invalid(std::move(error));
  return Engine(*this, graph, device_of_node).Simulate(options);
}

ClusterResult ClusterSimulator::Replay(const costmodels::OpGraph& graph,
                                       const std::vector<int32_t>& device_of_node,
                                       const Schedule& schedule) const {
  if (std::string error = PlacementError(graph, device_of_node, devices()); !error.empty()) {
    return Invalid(std::move(error));
  }
  if (std::string error = GraphError(graph); !error.empty()) return Invalid(std::move(error));
  Engine engine(*this, graph, device_of_node);
  if (std::string error = engine.CheckSchedule(schedule); !error.empty()) {
    return Invalid(std::move(error));
  }
  return engine.Replay(schedule);
}

std::vector<int32_t> ClusterSimulator::EarliestFinishPlacement(
    const costmodels::OpGraph& graph) const {
  const int32_t n = graph.size();
  std::vector<int32_t> placement(Index(n), 0);
  if (devices() == 1 || !GraphError(graph).empty()) return placement;
  const size_t devices = Index(this->devices());
  const Link& link = spec_.links.front();
  const double capacity = static_cast<double>(spec_.memory.front().bytes);
  const std::vector<double> output_bytes = OutputBytes(graph);
  const size_t weight_slots = Index(WeightSlots(graph));
  std::vector<uint8_t> resident(devices * weight_slots, 0);
  std::vector<double> memory(devices, 0);  // weights + every output placed there (conservative)
  std::vector<double> available(devices, 0);
  std::vector<double> finish(Index(n), 0);
  for (int32_t v = 0; v < n; ++v) {
    const OpNode& node = graph.nodes[Index(v)];
    const double seconds = NodeSeconds(node);
    int32_t best = -1, best_any = -1;
    double best_finish = 0, best_any_finish = 0;
    for (size_t d = 0; d < devices; ++d) {
      double start = available[d];
      for (const costmodels::OpInput& in : node.inputs) {
        double arrival = finish[Index(in.node)];
        if (Index(placement[Index(in.node)]) != d) {
          arrival += link.latency_s + in.bytes / link.bandwidth;
        }
        start = std::max(start, arrival);
      }
      const double end = start + seconds;
      double needed = memory[d] + output_bytes[Index(v)];
      for (const costmodels::OpWeight& w : node.weights) {
        if (w.id < 0 || !resident[d * weight_slots + Index(w.id)]) needed += WeightBytes(graph, w);
      }
      if (best_any < 0 || end < best_any_finish) {
        best_any = static_cast<int32_t>(d);
        best_any_finish = end;
      }
      if (needed <= capacity && (best < 0 || end < best_finish)) {
        best = static_cast<int32_t>(d);
        best_finish = end;
      }
    }
    // When no device has room, the earliest finish anyway: Simulate reports the shortage.
    if (best < 0) {
      best = best_any;
      best_finish = best_any_finish;
    }
    const size_t d = Index(best);
    placement[Index(v)] = best;
    finish[Index(v)] = best_finish;
    available[d] = best_finish;
    memory[d] += output_bytes[Index(v)];
    for (const costmodels::OpWeight& w : node.weights) {
      if (w.id >= 0 && resident[d * weight_slots + Index(w.id)]) continue;
      if (w.id >= 0) resident[d * weight_slots + Index(w.id)] = 1;
      memory[d] += WeightBytes(graph, w);
    }
  }
  return placement;
}

}  // namespace mltune::backends::cluster
