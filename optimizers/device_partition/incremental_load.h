// The max-load objective kept up to date under moves of one colocation class, so local search
// scores a move in time proportional to the class's edges instead of the whole graph's (graphs of
// 10k-100k nodes). Internal to this folder.
#pragma once

#include <cstdint>
#include <vector>

#include "optimizers/device_partition/device_partition.h"

namespace mltune::opt::partition {

class IncrementalLoad {
 public:
  // `device`: one device per class (0: the CPU).
  IncrementalLoad(const PartitionGraph& graph, const std::vector<int32_t>& device);

  // Moves class `c` to device `to` (undo by moving it back).
  void Move(int32_t c, int32_t to);
  int32_t DeviceOf(int32_t c) const { return class_device_[static_cast<size_t>(c)]; }
  // MaxLoad's objective and memory overflow for the current split (valid is left true: the
  // moves local search makes keep colocation and CPU-only classes).
  SplitScore Score() const;
  // Recomputes every sum from scratch, dropping the rounding that moves add up.
  void Reset();

 private:
  void SetNode(int32_t w, int32_t to);
  int32_t& Count(int32_t u, int32_t d) {
    return successors_on_[static_cast<size_t>(u) * devices_ + static_cast<size_t>(d)];
  }
  double Latency(int32_t w, int32_t d) const;

  const PartitionGraph& g_;
  size_t devices_;
  std::vector<int32_t> class_device_, node_device_;
  std::vector<int32_t> successors_on_;  // [node][device]: how many of its successors are there
  std::vector<int32_t> elsewhere_;      // successors not on the node's own device
  std::vector<double> load_, bytes_;
};

}  // namespace mltune::opt::partition
