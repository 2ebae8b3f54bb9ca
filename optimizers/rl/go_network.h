// GO's network and the tensors around it (internal to optimizers/rl; LibTorch, so included only
// by go_network.cc and go_policy.cc).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "optimizers/rl/rl.h"

namespace mltune::opt::rl::internal {

// Refinement inputs per unit: the previous decision's device (one-hot), that device's compute
// load and memory, a flag that there was a previous decision, its priority and fusion levels.
inline constexpr int kRefineSize = kGoMaxDevices + 5;

// A graph's fixed tensors, built once per environment.
struct GraphTensors {
  torch::Tensor x;                // [n, F]
  torch::Tensor src, dst;         // [E]
  torch::Tensor in_deg, out_deg;  // [n, 1], at least 1
  torch::Tensor device_mask;      // [D]: 0 for usable devices, a large negative beyond
  int64_t n = 0;
};
GraphTensors MakeTensors(const GoGraph& g);

// The refinement inputs for a previous decision (all zero for the first one).
torch::Tensor RefineInputs(const GoGraph& g, const GoDecision* prev);

struct Logits {
  torch::Tensor device, priority, fusion;  // [n, D], [n, P], [n, P]
};

// GraphSAGE, feature modulation by the graph embedding, segmented recurrent attention, heads.
struct GoNetImpl : torch::nn::Module {
  explicit GoNetImpl(const GoConfig& c);
  Logits forward(const GraphTensors& t, const torch::Tensor& refine);

  int64_t segment;
  torch::nn::Linear input{nullptr}, film{nullptr};
  torch::nn::Linear device_head{nullptr}, priority_head{nullptr}, fusion_head{nullptr};
  std::vector<torch::nn::Linear> self_lin, in_lin, out_lin, ff1, ff2;
  std::vector<torch::nn::LayerNorm> sage_norm, attn_norm, ff_norm;
  std::vector<torch::nn::MultiheadAttention> attention;
};
TORCH_MODULE(GoNet);

// Which heads a graph's task uses.
struct Heads {
  bool device, priority, fusion;
};
Heads HeadsOf(const GoGraph& g);

// Sampled actions per head, [n, S] each (undefined when the head is unused).
struct Actions {
  torch::Tensor device, priority, fusion;
};

// Per unit and sample, the summed log-probability of the used heads' actions: [n, S].
torch::Tensor LogProb(const Logits& logits, const Actions& a, Heads heads);
// The mean per-unit entropy of the used heads.
torch::Tensor Entropy(const Logits& logits, Heads heads);
// Column `column` of `a` as a decision (devices all 0 when the device head is unused).
GoDecision DecisionAt(const GoGraph& g, const Actions& a, int64_t column);

}  // namespace mltune::opt::rl::internal
