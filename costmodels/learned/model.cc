// The LibTorch side of the learned cost model: the network (opcode embedding, directed
// GraphSAGE layers, optional transformer layers over each kernel's nodes, mean+max(+sum) readout
// joined with kernel features, two heads, the absolute one with a linear skip from the kernel
// features), ensembles of such networks, batching of many kernels into one disjoint graph, training
// (MSE on log seconds, pairwise rank loss within groups, Adam) and checkpoints. The only file of
// the library that includes torch.
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "costmodels/learned/learned_model.h"
#include "nlohmann/json.hpp"

namespace mltune::costmodels::learned {
namespace {

using Clock = std::chrono::steady_clock;
using features::KernelGraph;
constexpr char kMagic[] = "MLTUNE-COSTMODEL-1\n";
// Standard deviations below this are treated as 1: a constant feature is centred, not blown up.
constexpr double kMinStd = 1e-6;

// Many kernels as one disjoint graph: node rows of every graph back to back, edges shifted by
// their graph's first node, and each node's graph index for the per-graph readout.
struct Batch {
  torch::Tensor opcodes;          // [N] int64
  torch::Tensor node_x;           // [N, node_features]
  torch::Tensor src, dst;         // [E] int64
  torch::Tensor graph_of_node;    // [N] int64
  torch::Tensor nodes_per_graph;  // [B, 1] float
  torch::Tensor kernel_x;         // [B, kernel_features]
  // Each node's row in a [B * max_nodes] padded layout, for the per-graph max and attention.
  torch::Tensor padded_slot;  // [N] int64
  int64_t graphs = 0;
  int64_t max_nodes = 0;
};

// from_blob wants a mutable pointer; the clone copies before anything could write.
torch::Tensor LongTensor(const std::vector<int64_t>& v) {
  return torch::from_blob(const_cast<int64_t*>(v.data()), {static_cast<int64_t>(v.size())},
                          torch::kInt64)
      .clone();
}

// Features are append-only (costmodels/features/kernel_graph.h): a graph built by a newer
// feature set carries more columns per row than a model trained before them, which reads the
// leading `width` of each of the `rows` rows. ValidateGraph checked the sizes.
template <typename T>
void AppendLeadingColumns(const std::vector<float>& values, int64_t rows, int width,
                          std::vector<T>* out) {
  const size_t stride = rows > 0 ? values.size() / static_cast<size_t>(rows) : 0;
  for (int64_t r = 0; r < rows; ++r) {
    const auto row = values.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(r) * stride);
    out->insert(out->end(), row, row + width);
  }
}

Batch MakeBatch(const std::vector<const KernelGraph*>& graphs, const ModelOptions& o) {
  std::vector<int64_t> opcodes, src, dst, graph_of_node, padded_slot;
  std::vector<float> node_x, kernel_x, counts;
  int64_t offset = 0, max_nodes = 0;
  for (const KernelGraph* k : graphs) max_nodes = std::max<int64_t>(max_nodes, k->size());
  for (size_t g = 0; g < graphs.size(); ++g) {
    const KernelGraph& k = *graphs[g];
    for (int32_t i = 0; i < k.size(); ++i) {
      opcodes.push_back(k.opcodes[i]);
      graph_of_node.push_back(static_cast<int64_t>(g));
      padded_slot.push_back(static_cast<int64_t>(g) * max_nodes + i);
    }
    AppendLeadingColumns(k.node_features, k.size(), o.node_features, &node_x);
    for (size_t e = 0; e < k.edge_src.size(); ++e) {
      src.push_back(offset + k.edge_src[e]);
      dst.push_back(offset + k.edge_dst[e]);
    }
    AppendLeadingColumns(k.kernel_features, 1, o.kernel_features, &kernel_x);
    counts.push_back(static_cast<float>(k.size()));
    offset += k.size();
  }
  Batch b;
  b.graphs = static_cast<int64_t>(graphs.size());
  b.max_nodes = max_nodes;
  b.padded_slot = LongTensor(padded_slot);
  b.opcodes = LongTensor(opcodes);
  b.src = LongTensor(src);
  b.dst = LongTensor(dst);
  b.graph_of_node = LongTensor(graph_of_node);
  b.node_x = torch::from_blob(node_x.data(), {offset, o.node_features}, torch::kFloat32).clone();
  b.kernel_x =
      torch::from_blob(kernel_x.data(), {b.graphs, o.kernel_features}, torch::kFloat32).clone();
  b.nodes_per_graph = torch::from_blob(counts.data(), {b.graphs, 1}, torch::kFloat32).clone();
  return b;
}

struct NetImpl : torch::nn::Module {
  explicit NetImpl(const ModelOptions& o)
      : hidden(o.hidden_dim),
        dropout(o.dropout),
        sum_readout(o.sum_readout),
        linear_skip(o.linear_skip),
        node_time_sum(o.node_time_sum) {
    embed = register_module("embed", torch::nn::Embedding(o.vocabulary_size, o.embedding_dim));
    node_in =
        register_module("node_in", torch::nn::Linear(o.embedding_dim + o.node_features, hidden));
    for (int l = 0; l < o.sage_layers; ++l) {
      self_w.push_back(
          register_module(absl::StrCat("sage", l, "_self"), torch::nn::Linear(hidden, hidden)));
      // Messages from producers and from consumers get their own weights (the paper's directed
      // aggregation); the self term carries the bias.
      in_w.push_back(
          register_module(absl::StrCat("sage", l, "_in"),
                          torch::nn::Linear(torch::nn::LinearOptions(hidden, hidden).bias(false))));
      out_w.push_back(
          register_module(absl::StrCat("sage", l, "_out"),
                          torch::nn::Linear(torch::nn::LinearOptions(hidden, hidden).bias(false))));
      // Sums over neighbours grow with degree; normalising each node keeps layers in range.
      norms.push_back(register_module(absl::StrCat("sage", l, "_norm"),
                                      torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden}))));
    }
    for (int l = 0; l < o.transformer_layers; ++l) {
      attention.push_back(
          register_module(absl::StrCat("transformer", l),
                          torch::nn::TransformerEncoderLayer(
                              torch::nn::TransformerEncoderLayerOptions(hidden, o.attention_heads)
                                  .dim_feedforward(2 * hidden)
                                  .dropout(o.dropout))));
    }
    readout1 = register_module(
        "readout1",
        torch::nn::Linear((o.sum_readout ? 3 : 2) * hidden + o.kernel_features, hidden));
    readout2 = register_module("readout2", torch::nn::Linear(hidden, hidden));
    absolute = register_module("absolute", torch::nn::Linear(hidden, 1));
    relative = register_module("relative", torch::nn::Linear(hidden, 1));
    if (linear_skip) {
      skip = register_module(
          "absolute_skip",
          torch::nn::Linear(torch::nn::LinearOptions(o.kernel_features, 1).bias(false)));
    }
    if (node_time_sum) {
      node_time1 = register_module(
          "node_time1", torch::nn::Linear(hidden + o.node_features + o.kernel_features, hidden));
      node_time2 = register_module("node_time2", torch::nn::Linear(hidden, 1));
      node_time_skip = register_module(
          "node_time_skip",
          torch::nn::Linear(torch::nn::LinearOptions(o.node_features, 1).bias(false)));
    }
    // Normalisation statistics live in buffers so checkpoints carry them with the weights.
    node_mean = register_buffer("node_mean", torch::zeros({o.node_features}));
    node_std = register_buffer("node_std", torch::ones({o.node_features}));
    kernel_mean = register_buffer("kernel_mean", torch::zeros({o.kernel_features}));
    kernel_std = register_buffer("kernel_std", torch::ones({o.kernel_features}));
    target = register_buffer("target", torch::tensor({0.0f, 1.0f}));  // log seconds mean, std
    fitted = register_buffer("fitted", torch::zeros({1}));
  }

  // (normalised log seconds, relative score), one of each per graph.
  std::pair<torch::Tensor, torch::Tensor> forward(const Batch& b) {
    torch::Tensor x = (b.node_x - node_mean) / node_std;
    torch::Tensor h = torch::relu(node_in(torch::cat({embed(b.opcodes), x}, 1)));
    h = torch::dropout(h, dropout, is_training());
    const int64_t n = h.size(0);
    for (size_t l = 0; l < self_w.size(); ++l) {
      torch::Tensor from_producers =
          torch::zeros({n, hidden}).index_add_(0, b.dst, h.index_select(0, b.src));
      torch::Tensor from_consumers =
          torch::zeros({n, hidden}).index_add_(0, b.src, h.index_select(0, b.dst));
      h = norms[l](torch::relu(self_w[l](h) + in_w[l](from_producers) + out_w[l](from_consumers)));
      h = torch::dropout(h, dropout, is_training());
    }
    if (!attention.empty()) h = Attend(b, h);
    torch::Tensor sum = torch::zeros({b.graphs, hidden}).index_add_(0, b.graph_of_node, h);
    torch::Tensor mean = sum / b.nodes_per_graph;
    // Every graph has a node (ValidateGraph), so no max is over -inf alone.
    torch::Tensor max = PerGraph(b, h).amax(1);
    torch::Tensor k = (b.kernel_x - kernel_mean) / kernel_std;
    // The sum is scaled by a fixed 1/16 so kernels of a few dozen ops stay in the range the
    // layer-normalised node states have.
    torch::Tensor z = torch::relu(readout1(sum_readout ? torch::cat({mean, max, sum / 16.0, k}, 1)
                                                       : torch::cat({mean, max, k}, 1)));
    z = torch::dropout(z, dropout, is_training());
    z = torch::relu(readout2(z));
    torch::Tensor a = absolute(z).squeeze(1);
    if (linear_skip) a = a + skip(k).squeeze(1);
    if (node_time_sum) a = AddNodeTimes(b, a, h, x, k);
    return {a, relative(z).squeeze(1)};
  }

  // The transformer layers over each graph's nodes: node rows padded to [max_nodes, B, W] (the
  // sequence-first layout LibTorch 1.13's encoder takes), padding masked out as keys, and the
  // nodes' rows read back.
  torch::Tensor Attend(const Batch& b, const torch::Tensor& h) {
    const int64_t width = h.size(1);
    torch::Tensor seq = PerGraph(b, h, 0).transpose(0, 1);
    const torch::Tensor padding =
        torch::arange(b.max_nodes, torch::kFloat32).unsqueeze(0).ge(b.nodes_per_graph);
    for (torch::nn::TransformerEncoderLayer& layer : attention) {
      seq = layer->forward(seq, torch::Tensor(), padding);
    }
    return seq.transpose(0, 1)
        .reshape({b.graphs * b.max_nodes, width})
        .index_select(0, b.padded_slot);
  }

  // Node rows [N, W] laid out per graph as [B, max_nodes, W], empty slots `empty` (-inf for the
  // per-graph reductions, max and log-sum-exp, which then run along dim 1; 0 for attention, which
  // masks them). index_copy is deterministic and differentiable, unlike LibTorch 1.13's
  // scatter_reduce, which is beta and warns on first use.
  static torch::Tensor PerGraph(const Batch& b, const torch::Tensor& rows,
                                float empty = -std::numeric_limits<float>::infinity()) {
    const int64_t width = rows.size(1);
    return torch::full({b.graphs * b.max_nodes, width}, empty)
        .index_copy(0, b.padded_slot, rows)
        .view({b.graphs, b.max_nodes, width});
  }

  // A fused loop's time is close to the sum of its ops' times, each growing with the elements
  // it computes: the pooled readout has to learn log(sum) of such terms, which it does not
  // extrapolate past the kernels it saw. Here each node predicts its own log time (from its
  // state, its features with a linear term along them, and the kernel's features), and the
  // kernel's time is the pooled term plus the nodes' times: a log-sum-exp in log seconds.
  torch::Tensor AddNodeTimes(const Batch& b, const torch::Tensor& pooled, const torch::Tensor& h,
                             const torch::Tensor& x, const torch::Tensor& k) {
    torch::Tensor c = node_time2(torch::relu(
                          node_time1(torch::cat({h, x, k.index_select(0, b.graph_of_node)}, 1)))) +
                      node_time_skip(x);
    // To log seconds (the target's normalisation undone), summed in linear space per graph
    // (empty slots, -inf, add nothing), then normalised back.
    const torch::Tensor mean = target[0], stdev = target[1];
    torch::Tensor terms = PerGraph(b, mean + stdev * c).squeeze(2);
    torch::Tensor log_time =
        torch::cat({terms, (mean + stdev * pooled).unsqueeze(1)}, 1).logsumexp(1);
    return (log_time - mean) / stdev;
  }

  int64_t hidden;
  double dropout;
  bool sum_readout;
  bool linear_skip;
  bool node_time_sum;
  torch::nn::Embedding embed{nullptr};
  torch::nn::Linear node_in{nullptr}, readout1{nullptr}, readout2{nullptr}, absolute{nullptr},
      relative{nullptr}, skip{nullptr}, node_time1{nullptr}, node_time2{nullptr},
      node_time_skip{nullptr};
  std::vector<torch::nn::Linear> self_w, in_w, out_w;
  std::vector<torch::nn::LayerNorm> norms;
  std::vector<torch::nn::TransformerEncoderLayer> attention;
  torch::Tensor node_mean, node_std, kernel_mean, kernel_std, target, fitted;
};
TORCH_MODULE(Net);

bool TrainsAbsolute(Loss loss) { return loss == Loss::kMseLog || loss == Loss::kBoth; }
bool TrainsRelative(Loss loss) { return loss != Loss::kMseLog; }

// Mean and standard deviation per column of a row-major [rows x cols] matrix.
std::pair<torch::Tensor, torch::Tensor> ColumnStats(const std::vector<double>& values,
                                                    int64_t cols) {
  std::vector<float> mean(cols, 0), stdev(cols, 1);
  const int64_t rows = cols > 0 ? static_cast<int64_t>(values.size()) / cols : 0;
  for (int64_t c = 0; c < cols && rows > 0; ++c) {
    double sum = 0, sq = 0;
    for (int64_t r = 0; r < rows; ++r) sum += values[r * cols + c];
    const double m = sum / rows;
    for (int64_t r = 0; r < rows; ++r)
      sq += (values[r * cols + c] - m) * (values[r * cols + c] - m);
    const double s = std::sqrt(sq / rows);
    mean[c] = static_cast<float>(m);
    stdev[c] = s > kMinStd ? static_cast<float>(s) : 1.0f;
  }
  return {torch::tensor(mean), torch::tensor(stdev)};
}

}  // namespace

struct LearnedModel::Impl {
  ModelOptions options;
  // The ensemble's members: the same network from different initial weights and batch orders
  // (member m from seed + m), sharing the normalisation statistics. Predictions average them.
  std::vector<Net> nets;
  std::vector<std::unique_ptr<torch::optim::Adam>> optimizers;

  explicit Impl(const ModelOptions& o) : options(o) {
    for (int m = 0; m < o.ensemble; ++m) {
      torch::manual_seed(o.seed + static_cast<uint64_t>(m));
      nets.push_back(Net(o));
      nets.back()->eval();
    }
    optimizers.resize(nets.size());
  }

  bool Fitted() const { return nets[0]->fitted.item<float>() > 0; }
  void SetMode(bool training) {
    for (Net& net : nets) training ? net->train() : net->eval();
  }

  // Fits the normalisation buffers on the training set.
  void Fit(const std::vector<Sample>& samples) {
    std::vector<double> node_rows, kernel_rows, log_seconds;
    for (const Sample& s : samples) {
      AppendLeadingColumns(s.graph->node_features, s.graph->size(), options.node_features,
                           &node_rows);
      AppendLeadingColumns(s.graph->kernel_features, 1, options.kernel_features, &kernel_rows);
      log_seconds.push_back(std::log(s.seconds));
    }
    torch::NoGradGuard no_grad;
    auto [nm, ns] = ColumnStats(node_rows, options.node_features);
    auto [km, ks] = ColumnStats(kernel_rows, options.kernel_features);
    auto [tm, ts] = ColumnStats(log_seconds, 1);
    for (Net& net : nets) {
      net->node_mean.copy_(nm);
      net->node_std.copy_(ns);
      net->kernel_mean.copy_(km);
      net->kernel_std.copy_(ks);
      net->target.copy_(torch::cat({tm, ts}));
      net->fitted.fill_(1);
    }
  }

  // Batches of sample indices for one epoch. With a rank loss each group's samples stay together
  // (groups in shuffled order), so batches hold many within-group pairs; MSE alone shuffles freely.
  std::vector<std::vector<size_t>> EpochBatches(const std::vector<Sample>& samples,
                                                std::mt19937_64& rng) const {
    std::vector<size_t> order;
    if (TrainsRelative(options.loss)) {
      std::map<int64_t, std::vector<size_t>> groups;
      for (size_t i = 0; i < samples.size(); ++i) groups[samples[i].group].push_back(i);
      std::vector<std::vector<size_t>> members;
      for (auto& [id, rows] : groups) {
        std::shuffle(rows.begin(), rows.end(), rng);
        members.push_back(std::move(rows));
      }
      std::shuffle(members.begin(), members.end(), rng);
      for (const auto& rows : members) order.insert(order.end(), rows.begin(), rows.end());
    } else {
      order.resize(samples.size());
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), rng);
    }
    std::vector<std::vector<size_t>> batches;
    for (size_t i = 0; i < order.size(); i += options.batch_size) {
      batches.emplace_back(order.begin() + i,
                           order.begin() + std::min(order.size(), i + options.batch_size));
    }
    return batches;
  }

  // The rank term of one batch: listwise or pairwise (ModelOptions::listwise_temperature).
  torch::Tensor RankLoss(const torch::Tensor& scores, const std::vector<Sample>& samples,
                         const std::vector<size_t>& rows) const {
    return options.listwise_temperature > 0 ? ListwiseLoss(scores, samples, rows)
                                            : PairwiseLoss(scores, samples, rows);
  }

  // Per group in the batch (a group cut by the batch boundary counts its part), the KL divergence
  // from the target distribution softmax(-log(seconds) / T) to softmax(-score), weighted by the
  // group's rank_weight and averaged; undefined if no group has two samples. KL rather than the
  // cross-entropy: the same gradient, and 0 at a perfect fit, so the reported loss reads as a fit.
  torch::Tensor ListwiseLoss(const torch::Tensor& scores, const std::vector<Sample>& samples,
                             const std::vector<size_t>& rows) const {
    std::map<int64_t, std::vector<int64_t>> groups;  // group -> positions in the batch
    for (size_t a = 0; a < rows.size(); ++a) {
      groups[samples[rows[a]].group].push_back(static_cast<int64_t>(a));
    }
    torch::Tensor total = torch::zeros({});
    double weight_sum = 0;
    for (const auto& [id, positions] : groups) {
      const double weight = samples[rows[positions[0]]].rank_weight;
      if (positions.size() < 2 || weight <= 0) continue;
      std::vector<float> logits;
      for (int64_t a : positions) {
        logits.push_back(
            static_cast<float>(-std::log(samples[rows[a]].seconds) / options.listwise_temperature));
      }
      const torch::Tensor target_log = torch::log_softmax(
          torch::from_blob(logits.data(), {static_cast<int64_t>(logits.size())}, torch::kFloat32)
              .clone(),
          0);
      const torch::Tensor predicted_log =
          torch::log_softmax(-scores.index_select(0, LongTensor(positions)), 0);
      total = total + weight * (target_log.exp() * (target_log - predicted_log)).sum();
      weight_sum += weight;
    }
    if (weight_sum <= 0) return {};
    return total / weight_sum;
  }

  // Mean pairwise rank loss over the batch's within-group pairs (fast, slow); undefined if none.
  torch::Tensor PairwiseLoss(const torch::Tensor& scores, const std::vector<Sample>& samples,
                             const std::vector<size_t>& rows) const {
    std::vector<int64_t> fast, slow;
    std::vector<float> weight;
    for (size_t a = 0; a < rows.size(); ++a) {
      for (size_t b = 0; b < rows.size(); ++b) {
        const Sample& sa = samples[rows[a]];
        const Sample& sb = samples[rows[b]];
        if (sa.group == sb.group && sa.seconds * options.min_pair_ratio < sb.seconds) {
          fast.push_back(static_cast<int64_t>(a));
          slow.push_back(static_cast<int64_t>(b));
          // 1 + the gap: close pairs, which decide the top pick, keep their weight.
          const double gap =
              options.weight_pairs_by_gap ? 1 + std::log(sb.seconds / sa.seconds) : 1;
          weight.push_back(static_cast<float>(gap * sa.rank_weight));
        }
      }
    }
    // No pair, or only pairs of weight 0: nothing to rank (and no 0 / 0).
    if (std::accumulate(weight.begin(), weight.end(), 0.0) <= 0) return {};
    const torch::Tensor w =
        torch::from_blob(weight.data(), {static_cast<int64_t>(weight.size())}, torch::kFloat32)
            .clone();
    // How much higher the slower sample scores: should be positive (smaller score = faster).
    torch::Tensor gap =
        scores.index_select(0, LongTensor(slow)) - scores.index_select(0, LongTensor(fast));
    const bool hinge =
        options.loss == Loss::kRankHinge || (options.loss == Loss::kBoth && options.rank_hinge);
    const torch::Tensor per_pair =
        hinge ? torch::relu(options.hinge_margin - gap) : torch::nn::functional::softplus(-gap);
    return (per_pair * w).sum() / w.sum();
  }

  TrainReport Train(const std::vector<Sample>& samples, const ProgressCallback& progress) {
    const Clock::time_point start = Clock::now();
    TrainReport report;
    report.samples = static_cast<int64_t>(samples.size());
    {
      std::map<int64_t, std::vector<double>> groups;
      for (const Sample& s : samples) groups[s.group].push_back(s.seconds);
      for (const auto& [id, secs] : groups) {
        for (size_t a = 0; a < secs.size(); ++a) {
          for (size_t b = a + 1; b < secs.size(); ++b) {
            report.rank_pairs +=
                std::max(secs[a], secs[b]) > std::min(secs[a], secs[b]) * options.min_pair_ratio;
          }
        }
      }
    }
    if (!Fitted()) Fit(samples);
    for (size_t m = 0; m < nets.size(); ++m) {
      if (optimizers[m]) continue;
      optimizers[m] = std::make_unique<torch::optim::Adam>(
          nets[m]->parameters(),
          torch::optim::AdamOptions(options.learning_rate).weight_decay(options.weight_decay));
    }
    const float target_mean = nets[0]->target[0].item<float>();
    const float target_std = nets[0]->target[1].item<float>();
    std::vector<float> target(samples.size());
    for (size_t i = 0; i < samples.size(); ++i) {
      target[i] = (static_cast<float>(std::log(samples[i].seconds)) - target_mean) / target_std;
    }
    torch::manual_seed(options.seed + 1);  // dropout masks
    std::vector<std::mt19937_64> rngs;
    for (size_t m = 0; m < nets.size(); ++m) rngs.emplace_back(options.seed + m);
    SetMode(true);
    // Epochs outside, members inside: a stop after any epoch leaves every member as trained as
    // the others.
    for (int epoch = 1; epoch <= options.epochs; ++epoch) {
      // Cosine decay of the learning rate over the run (down to 5%): large steps find the
      // region, small ones settle the fine differences between configurations.
      const double done = options.epochs > 1 ? (epoch - 1.0) / (options.epochs - 1.0) : 0.0;
      const double lr = options.learning_rate * (0.05 + 0.95 * 0.5 * (1 + std::cos(M_PI * done)));
      double loss_sum = 0, mse_sum = 0, rank_sum = 0;
      int batches = 0, rank_batches = 0;
      for (size_t m = 0; m < nets.size(); ++m) {
        torch::optim::Adam& opt = *optimizers[m];
        for (torch::optim::OptimizerParamGroup& g : opt.param_groups()) {
          static_cast<torch::optim::AdamOptions&>(g.options()).lr(lr);
        }
        for (const std::vector<size_t>& rows : EpochBatches(samples, rngs[m])) {
          std::vector<const KernelGraph*> graphs;
          std::vector<float> y;
          for (size_t r : rows) {
            graphs.push_back(samples[r].graph);
            y.push_back(target[r]);
          }
          auto [abs_out, rel_out] = nets[m]->forward(MakeBatch(graphs, options));
          torch::Tensor loss = torch::zeros({});
          if (TrainsAbsolute(options.loss)) {
            const torch::Tensor truth =
                torch::from_blob(y.data(), {static_cast<int64_t>(y.size())}, torch::kFloat32);
            torch::Tensor mse = torch::mse_loss(abs_out, truth);
            mse_sum += mse.item<double>();
            loss = loss + mse;
            if (options.relative_error_weight > 0) {
              // |predicted / measured - 1|, the ratio from the log-seconds difference.
              torch::Tensor ratio = torch::exp((abs_out - truth) * target_std);
              loss = loss + options.relative_error_weight * (ratio - 1).abs().mean();
            }
          }
          if (TrainsRelative(options.loss)) {
            torch::Tensor rank = RankLoss(rel_out, samples, rows);
            if (rank.defined()) {
              rank_sum += rank.item<double>();
              ++rank_batches;
              loss = loss + rank;
            }
          }
          ++batches;
          if (!loss.requires_grad()) continue;  // a rank-only batch without a pair
          loss_sum += loss.item<double>();
          opt.zero_grad();
          loss.backward();
          torch::nn::utils::clip_grad_norm_(nets[m]->parameters(), 1.0);
          opt.step();
        }
      }
      EpochReport e;
      e.epoch = epoch;
      e.loss = batches ? loss_sum / batches : 0;  // over every member's batches
      e.mse_loss = batches && TrainsAbsolute(options.loss) ? mse_sum / batches : 0;
      e.rank_loss = rank_batches ? rank_sum / rank_batches : 0;
      e.seconds = std::chrono::duration<double>(Clock::now() - start).count();
      report.epochs.push_back(e);
      if (progress && !progress(e)) {
        report.stopped_early = epoch < options.epochs;
        break;
      }
    }
    SetMode(false);
    report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return report;
  }

  // Not const: LibTorch modules have no const forward. Reads the weights only (eval mode, no
  // autograd), so concurrent calls are safe.
  std::vector<double> Predict(const std::vector<const KernelGraph*>& graphs, Head head,
                              std::vector<double>* spread) {
    torch::NoGradGuard no_grad;
    std::vector<double> out;
    out.reserve(graphs.size());
    if (spread != nullptr) spread->clear();
    const double target_mean = nets[0]->target[0].item<double>();
    const double target_std = nets[0]->target[1].item<double>();
    const double scale = head == Head::kAbsolute ? target_std : 1.0;
    for (size_t i = 0; i < graphs.size(); i += options.batch_size) {
      std::vector<const KernelGraph*> chunk(
          graphs.begin() + i, graphs.begin() + std::min(graphs.size(), i + options.batch_size));
      const Batch batch = MakeBatch(chunk, options);
      torch::Tensor values, squares;
      for (Net& net : nets) {
        auto [abs_out, rel_out] = net->forward(batch);
        torch::Tensor v = (head == Head::kAbsolute ? abs_out : rel_out).to(torch::kFloat64);
        values = values.defined() ? values + v : v;
        squares = squares.defined() ? squares + v * v : v * v;
      }
      const double members = static_cast<double>(nets.size());
      values = values / members;
      if (spread != nullptr) {
        const torch::Tensor sd =
            (squares / members - values * values).clamp_min(0).sqrt().mul(scale).contiguous();
        spread->insert(spread->end(), sd.data_ptr<double>(), sd.data_ptr<double>() + sd.numel());
      }
      if (head == Head::kAbsolute) values = values * target_std + target_mean;
      values = values.contiguous();
      out.insert(out.end(), values.data_ptr<double>(), values.data_ptr<double>() + values.numel());
    }
    return out;
  }

  std::string Save() const {
    nlohmann::json j;
    j["vocabulary_size"] = options.vocabulary_size;
    j["node_features"] = options.node_features;
    j["kernel_features"] = options.kernel_features;
    j["embedding_dim"] = options.embedding_dim;
    j["hidden_dim"] = options.hidden_dim;
    j["sage_layers"] = options.sage_layers;
    j["sum_readout"] = options.sum_readout;
    j["linear_skip"] = options.linear_skip;
    j["node_time_sum"] = options.node_time_sum;
    j["transformer_layers"] = options.transformer_layers;
    j["attention_heads"] = options.attention_heads;
    j["dropout"] = options.dropout;
    j["seed"] = options.seed;
    j["learning_rate"] = options.learning_rate;
    j["weight_decay"] = options.weight_decay;
    j["epochs"] = options.epochs;
    j["batch_size"] = options.batch_size;
    j["loss"] = std::string(LossName(options.loss));
    j["hinge_margin"] = options.hinge_margin;
    j["rank_hinge"] = options.rank_hinge;
    j["weight_pairs_by_gap"] = options.weight_pairs_by_gap;
    j["min_pair_ratio"] = options.min_pair_ratio;
    j["listwise_temperature"] = options.listwise_temperature;
    j["relative_error_weight"] = options.relative_error_weight;
    j["threads"] = options.threads;
    j["ensemble"] = options.ensemble;
    j["spread_floor"] = options.spread_floor;
    j["spread_scale"] = options.spread_scale;
    // One member: its weights at the archive's root, as before ensembles. Several: one
    // sub-archive each.
    torch::serialize::OutputArchive archive;
    if (nets.size() == 1) {
      nets[0]->save(archive);
    } else {
      for (size_t m = 0; m < nets.size(); ++m) {
        torch::serialize::OutputArchive member;
        nets[m]->save(member);
        archive.write(MemberKey(m), member);
      }
    }
    std::ostringstream weights;
    archive.save_to(weights);
    const std::string header = j.dump();
    return absl::StrCat(kMagic, header.size(), "\n", header, weights.str());
  }

  // Loads weights and buffers, then checks every tensor kept its shape: InputArchive replaces
  // tensors without comparing sizes, so a mismatched checkpoint would otherwise fail later.
  absl::Status LoadWeights(const std::string& bytes) {
    std::istringstream in(bytes);
    torch::serialize::InputArchive archive;
    archive.load_from(in);
    if (nets.size() == 1) return LoadMember(archive, nets[0]);
    for (size_t m = 0; m < nets.size(); ++m) {
      torch::serialize::InputArchive member;
      if (!archive.try_read(MemberKey(m), member)) {
        return absl::InvalidArgumentError(
            absl::StrCat("cost model checkpoint: no weights of ensemble member ", m));
      }
      if (absl::Status s = LoadMember(member, nets[m]); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  static std::string MemberKey(size_t m) { return absl::StrCat("member", m); }

  static absl::Status LoadMember(torch::serialize::InputArchive& archive, Net& net) {
    std::map<std::string, std::vector<int64_t>> expected;
    for (const auto& p : net->named_parameters()) expected[p.key()] = p.value().sizes().vec();
    for (const auto& b : net->named_buffers()) expected[b.key()] = b.value().sizes().vec();
    net->load(archive);
    for (const auto& p : net->named_parameters()) {
      if (p.value().sizes().vec() != expected[p.key()]) {
        return absl::InvalidArgumentError(
            absl::StrCat("cost model checkpoint: tensor ", p.key(), " has the wrong shape"));
      }
    }
    for (const auto& b : net->named_buffers()) {
      if (b.value().sizes().vec() != expected[b.key()]) {
        return absl::InvalidArgumentError(
            absl::StrCat("cost model checkpoint: tensor ", b.key(), " has the wrong shape"));
      }
    }
    net->eval();
    return absl::OkStatus();
  }
};

LearnedModel::LearnedModel(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
LearnedModel::~LearnedModel() = default;

absl::StatusOr<std::unique_ptr<LearnedModel>> LearnedModel::Create(const ModelOptions& options) {
  if (absl::Status s = ValidateOptions(options); !s.ok()) return s;
  torch::set_num_threads(options.threads);
  try {
    return std::unique_ptr<LearnedModel>(new LearnedModel(std::make_unique<Impl>(options)));
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("LearnedModel::Create: ", e.what()));
  }
}

const ModelOptions& LearnedModel::options() const { return impl_->options; }
bool LearnedModel::trained() const { return impl_->Fitted(); }
bool LearnedModel::HasHead(Head head) const {
  return head == Head::kAbsolute ? TrainsAbsolute(impl_->options.loss)
                                 : TrainsRelative(impl_->options.loss);
}

absl::StatusOr<TrainReport> LearnedModel::Train(const std::vector<Sample>& samples,
                                                const ProgressCallback& progress) {
  if (samples.empty()) return absl::InvalidArgumentError("Train: no samples");
  for (size_t i = 0; i < samples.size(); ++i) {
    const Sample& s = samples[i];
    if (s.graph == nullptr)
      return absl::InvalidArgumentError(absl::StrCat("sample ", i, ": no graph"));
    if (!(s.seconds > 0) || !std::isfinite(s.seconds)) {
      return absl::InvalidArgumentError(absl::StrCat("sample ", i, ": bad seconds ", s.seconds));
    }
    if (absl::Status st = ValidateGraph(*s.graph, impl_->options); !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("sample ", i, ": ", st.message()));
    }
  }
  try {
    return impl_->Train(samples, progress);
  } catch (const std::exception& e) {
    impl_->SetMode(false);
    return absl::InternalError(absl::StrCat("LearnedModel::Train: ", e.what()));
  }
}

absl::StatusOr<std::vector<double>> LearnedModel::Predict(
    const std::vector<const KernelGraph*>& graphs, Head head, std::vector<double>* spread) const {
  if (!HasHead(head)) {
    return absl::FailedPreconditionError(
        absl::StrCat("the ", head == Head::kAbsolute ? "absolute" : "relative",
                     " head is not trained by loss ", std::string(LossName(impl_->options.loss))));
  }
  if (!trained()) return absl::FailedPreconditionError("the cost model was never trained");
  for (size_t i = 0; i < graphs.size(); ++i) {
    if (graphs[i] == nullptr)
      return absl::InvalidArgumentError(absl::StrCat("graph ", i, ": null"));
    if (absl::Status st = ValidateGraph(*graphs[i], impl_->options); !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("graph ", i, ": ", st.message()));
    }
  }
  try {
    return impl_->Predict(graphs, head, spread);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("LearnedModel::Predict: ", e.what()));
  }
}

absl::StatusOr<std::vector<double>> LearnedModel::PredictSeconds(
    const std::vector<const KernelGraph*>& graphs, RuntimePoint point) const {
  // The median needs no spread.
  const bool shifted = point == RuntimePoint::kRelativeError;
  std::vector<double> spread;
  absl::StatusOr<std::vector<double>> log_mean =
      Predict(graphs, Head::kAbsolute, shifted ? &spread : nullptr);
  if (!log_mean.ok()) return log_mean.status();
  if (shifted) {
    return RelativeErrorSeconds(*log_mean, spread,
                                {impl_->options.spread_floor, impl_->options.spread_scale});
  }
  std::vector<double> seconds;
  seconds.reserve(log_mean->size());
  for (double v : *log_mean) seconds.push_back(std::exp(v));
  return seconds;
}

std::string LearnedModel::Save() const { return impl_->Save(); }

absl::StatusOr<std::unique_ptr<LearnedModel>> LearnedModel::Load(std::string_view bytes) {
  const std::string_view magic(kMagic);
  if (bytes.substr(0, magic.size()) != magic) {
    return absl::InvalidArgumentError("not an mltune cost model checkpoint (bad magic)");
  }
  bytes.remove_prefix(magic.size());
  const size_t newline = bytes.find('\n');
  size_t header_size = 0;
  if (newline == std::string_view::npos ||
      !absl::SimpleAtoi(std::string(bytes.substr(0, newline)), &header_size) ||
      header_size > bytes.size() - newline - 1) {
    return absl::InvalidArgumentError("cost model checkpoint: truncated header");
  }
  ModelOptions o;
  try {
    nlohmann::json j = nlohmann::json::parse(bytes.substr(newline + 1, header_size));
    o.vocabulary_size = j.at("vocabulary_size").get<int>();
    o.node_features = j.at("node_features").get<int>();
    o.kernel_features = j.at("kernel_features").get<int>();
    o.embedding_dim = j.at("embedding_dim").get<int>();
    o.hidden_dim = j.at("hidden_dim").get<int>();
    o.sage_layers = j.at("sage_layers").get<int>();
    o.sum_readout = j.value("sum_readout", false);      // absent in checkpoints from before it
    o.linear_skip = j.value("linear_skip", false);      // likewise
    o.node_time_sum = j.value("node_time_sum", false);  // likewise
    o.transformer_layers = j.value("transformer_layers", 0);  // likewise
    o.attention_heads = j.value("attention_heads", 4);
    o.dropout = j.at("dropout").get<double>();
    o.seed = j.at("seed").get<uint64_t>();
    o.learning_rate = j.at("learning_rate").get<double>();
    o.weight_decay = j.at("weight_decay").get<double>();
    o.epochs = j.at("epochs").get<int>();
    o.batch_size = j.at("batch_size").get<int>();
    absl::StatusOr<Loss> loss = ParseLoss(j.at("loss").get<std::string>());
    if (!loss.ok()) return loss.status();
    o.loss = *loss;
    o.hinge_margin = j.at("hinge_margin").get<double>();
    o.rank_hinge = j.at("rank_hinge").get<bool>();
    o.weight_pairs_by_gap = j.value("weight_pairs_by_gap", false);  // absent before it existed
    o.min_pair_ratio = j.value("min_pair_ratio", 1.0);
    o.listwise_temperature = j.value("listwise_temperature", 0.0);  // absent before it existed
    o.relative_error_weight = j.value("relative_error_weight", 0.0);
    o.threads = j.at("threads").get<int>();
    o.ensemble = j.value("ensemble", 1);
    o.spread_floor = j.value("spread_floor", 0.0);  // absent before it existed
    o.spread_scale = j.value("spread_scale", 0.0);
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("cost model checkpoint: bad header: ", e.what()));
  }
  absl::StatusOr<std::unique_ptr<LearnedModel>> model = Create(o);
  if (!model.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cost model checkpoint: ", model.status().message()));
  }
  try {
    absl::Status s =
        (*model)->impl_->LoadWeights(std::string(bytes.substr(newline + 1 + header_size)));
    if (!s.ok()) return s;
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("cost model checkpoint: bad weights: ", e.what()));
  }
  return model;
}

}  // namespace mltune::costmodels::learned
