// GO's network: GraphSAGE with separate producer and consumer aggregators, feature modulation by
// the graph's embedding, segmented recurrent attention over the topological order, and one head
// per decision; and the tensors a graph and a previous decision become.
#include "optimizers/rl/go_network.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace mltune::opt::rl::internal {
namespace {

constexpr double kNegative = -1e9;

}  // namespace

GraphTensors MakeTensors(const GoGraph& g) {
  GraphTensors t;
  t.n = g.units;
  t.x = torch::from_blob(const_cast<float*>(g.features.data()), {g.units, g.feature_size},
                         torch::kFloat32)
            .clone();
  std::vector<int64_t> src(g.edge_src.begin(), g.edge_src.end());
  std::vector<int64_t> dst(g.edge_dst.begin(), g.edge_dst.end());
  t.src = torch::tensor(src, torch::kLong);
  t.dst = torch::tensor(dst, torch::kLong);
  const torch::Tensor ones = torch::ones({static_cast<int64_t>(src.size())});
  t.in_deg = torch::zeros({t.n}).index_add_(0, t.dst, ones).clamp_min(1).unsqueeze(1);
  t.out_deg = torch::zeros({t.n}).index_add_(0, t.src, ones).clamp_min(1).unsqueeze(1);
  t.device_mask = torch::full({kGoMaxDevices}, kNegative);
  t.device_mask.slice(0, 0, std::max(1, g.devices)).fill_(0);
  return t;
}

torch::Tensor RefineInputs(const GoGraph& g, const GoDecision* prev) {
  torch::Tensor r = torch::zeros({g.units, kRefineSize});
  if (prev == nullptr || prev->device.size() != static_cast<size_t>(g.units)) return r;
  auto a = r.accessor<float, 2>();
  const int f = g.feature_size;
  std::vector<double> load(kGoMaxDevices, 0), memory(kGoMaxDevices, 0);
  for (int32_t i = 0; i < g.units; ++i) {
    const int32_t d = std::clamp(prev->device[static_cast<size_t>(i)], 0, kGoMaxDevices - 1);
    load[static_cast<size_t>(d)] += g.features[static_cast<size_t>(i * f)];
    memory[static_cast<size_t>(d)] += g.features[static_cast<size_t>(i * f + 1)];
  }
  // Balanced load reads 1; memory as a fraction of the device (feature 11 is the pressure).
  const double devices = std::max(1, g.devices);
  const double pressure = g.units > 0 ? g.features[11] : 0;
  for (int32_t i = 0; i < g.units; ++i) {
    const int32_t d = std::clamp(prev->device[static_cast<size_t>(i)], 0, kGoMaxDevices - 1);
    a[i][d] = 1;
    a[i][kGoMaxDevices] = static_cast<float>(load[static_cast<size_t>(d)] * devices);
    a[i][kGoMaxDevices + 1] =
        static_cast<float>(memory[static_cast<size_t>(d)] * devices * pressure);
    a[i][kGoMaxDevices + 2] = 1;
    if (prev->priority.size() == static_cast<size_t>(g.units)) {
      a[i][kGoMaxDevices + 3] =
          static_cast<float>(prev->priority[static_cast<size_t>(i)]) / (kGoPriorityLevels - 1);
    }
    if (prev->fusion.size() == static_cast<size_t>(g.units)) {
      a[i][kGoMaxDevices + 4] =
          static_cast<float>(prev->fusion[static_cast<size_t>(i)]) / (kGoPriorityLevels - 1);
    }
  }
  return r;
}

GoNetImpl::GoNetImpl(const GoConfig& c) : segment(c.segment) {
  const int64_t h = c.hidden;
  input = register_module("input", torch::nn::Linear(GoFeatureSize() + kRefineSize, h));
  for (int l = 0; l < c.sage_layers; ++l) {
    self_lin.push_back(register_module(absl::StrCat("sage", l, "_self"), torch::nn::Linear(h, h)));
    in_lin.push_back(register_module(absl::StrCat("sage", l, "_in"), torch::nn::Linear(h, h)));
    out_lin.push_back(register_module(absl::StrCat("sage", l, "_out"), torch::nn::Linear(h, h)));
    sage_norm.push_back(register_module(absl::StrCat("sage", l, "_norm"),
                                        torch::nn::LayerNorm(torch::nn::LayerNormOptions({h}))));
  }
  film = register_module("film", torch::nn::Linear(2 * h, 2 * h));
  for (int l = 0; l < c.attention_layers; ++l) {
    attention.push_back(register_module(
        absl::StrCat("attn", l),
        torch::nn::MultiheadAttention(torch::nn::MultiheadAttentionOptions(h, c.attention_heads))));
    attn_norm.push_back(register_module(absl::StrCat("attn", l, "_norm"),
                                        torch::nn::LayerNorm(torch::nn::LayerNormOptions({h}))));
    ff1.push_back(register_module(absl::StrCat("ff", l, "_1"), torch::nn::Linear(h, 2 * h)));
    ff2.push_back(register_module(absl::StrCat("ff", l, "_2"), torch::nn::Linear(2 * h, h)));
    ff_norm.push_back(register_module(absl::StrCat("ff", l, "_norm"),
                                      torch::nn::LayerNorm(torch::nn::LayerNormOptions({h}))));
  }
  device_head = register_module("device_head", torch::nn::Linear(h, kGoMaxDevices));
  priority_head = register_module("priority_head", torch::nn::Linear(h, kGoPriorityLevels));
  fusion_head = register_module("fusion_head", torch::nn::Linear(h, kGoPriorityLevels));
}

Logits GoNetImpl::forward(const GraphTensors& t, const torch::Tensor& refine) {
  torch::Tensor h = torch::relu(input(torch::cat({t.x, refine}, 1)));
  for (size_t l = 0; l < self_lin.size(); ++l) {
    // Mean over producers and over consumers, kept apart: direction matters for placement.
    const torch::Tensor from_in =
        torch::zeros_like(h).index_add_(0, t.dst, h.index_select(0, t.src)) / t.in_deg;
    const torch::Tensor from_out =
        torch::zeros_like(h).index_add_(0, t.src, h.index_select(0, t.dst)) / t.out_deg;
    h = sage_norm[l](h + torch::relu(self_lin[l](h) + in_lin[l](from_in) + out_lin[l](from_out)));
  }
  // Feature modulation: the graph's embedding scales and shifts every unit.
  const torch::Tensor graph = torch::cat({h.mean(0), std::get<0>(h.max(0))}, 0);
  const std::vector<torch::Tensor> gamma_beta = film(graph).chunk(2, 0);
  h = h * (1 + torch::tanh(gamma_beta[0])) + gamma_beta[1];
  // Segmented recurrent attention: each segment attends to itself and the previous segment's
  // output (kept without gradient, as Transformer-XL's memory).
  for (size_t l = 0; l < attention.size(); ++l) {
    std::vector<torch::Tensor> outs;
    torch::Tensor memory;
    for (int64_t s = 0; s < t.n; s += segment) {
      const torch::Tensor seg = h.slice(0, s, std::min<int64_t>(t.n, s + segment)).unsqueeze(1);
      const torch::Tensor kv = memory.defined() ? torch::cat({memory, seg}, 0) : seg;
      torch::Tensor y = std::get<0>(attention[l]->forward(seg, kv, kv, torch::Tensor(), false));
      y = attn_norm[l](seg + y);
      y = ff_norm[l](y + ff2[l](torch::relu(ff1[l](y))));
      outs.push_back(y);
      memory = y.detach();
    }
    h = torch::cat(outs, 0).squeeze(1);
  }
  return {device_head(h) + t.device_mask, priority_head(h), fusion_head(h)};
}

Heads HeadsOf(const GoGraph& g) { return {g.devices > 1, g.priorities, g.fusion}; }

torch::Tensor LogProb(const Logits& logits, const Actions& a, Heads heads) {
  torch::Tensor lp;
  auto add = [&](const torch::Tensor& l, const torch::Tensor& action) {
    const torch::Tensor x = torch::log_softmax(l, 1).gather(1, action);
    lp = lp.defined() ? lp + x : x;
  };
  if (heads.device) add(logits.device, a.device);
  if (heads.priority) add(logits.priority, a.priority);
  if (heads.fusion) add(logits.fusion, a.fusion);
  return lp;
}

torch::Tensor Entropy(const Logits& logits, Heads heads) {
  torch::Tensor e = torch::zeros({});
  auto add = [&](const torch::Tensor& l) {
    const torch::Tensor logp = torch::log_softmax(l, 1);
    e = e + (-(logp.exp() * logp).sum(1)).mean();
  };
  if (heads.device) add(logits.device);
  if (heads.priority) add(logits.priority);
  if (heads.fusion) add(logits.fusion);
  return e;
}

GoDecision DecisionAt(const GoGraph& g, const Actions& a, int64_t column) {
  GoDecision d;
  auto take = [&](const torch::Tensor& t, std::vector<int32_t>* out) {
    if (!t.defined()) return;
    const torch::Tensor c = t.select(1, column).contiguous();
    const int64_t* p = c.data_ptr<int64_t>();
    out->assign(p, p + c.size(0));
  };
  take(a.device, &d.device);
  take(a.priority, &d.priority);
  take(a.fusion, &d.fusion);
  if (d.device.empty()) d.device.assign(static_cast<size_t>(g.units), 0);
  return d;
}

}  // namespace mltune::opt::rl::internal
