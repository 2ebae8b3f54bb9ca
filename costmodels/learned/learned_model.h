// The learned cost model of issue 9 (Kaufman et al., "A Learned Performance Model for TPUs",
// MLSys 2021): a graph neural network over one kernel's ops. Each node's opcode embedding and
// scalar features go through GraphSAGE layers that aggregate producers and consumers with
// separate weights (data flows one way, so the direction carries meaning); a per-kernel readout
// (mean and max over nodes) joined with the kernel's features (static figures and the tunable
// configuration) feeds two heads: the absolute head predicts log runtime (trained with MSE on log
// seconds), the relative head a score whose order within a kernel predicts the order of runtimes
// (trained with a pairwise rank loss over configurations of the same kernel).
// LibTorch stays inside costmodels/learned/model.cc: this header has plain types only.
// docs/cost_models.md describes the model, its training and checkpoints.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "costmodels/features/kernel_graph.h"

namespace mltune::costmodels::learned {

// Which heads training fits: kMseLog the absolute head only, kRankHinge / kRankLogistic the
// relative head only, kBoth both (one shared network, the two losses summed).
enum class Loss { kMseLog, kRankHinge, kRankLogistic, kBoth };
std::string_view LossName(Loss loss);  // "mse-log", "rank-hinge", "rank-logistic", "both"
absl::StatusOr<Loss> ParseLoss(std::string_view name);
// Whether `loss` ranks with the logistic pair term, the one a listwise term
// (ModelOptions::listwise_temperature) replaces: rank-logistic, or both without rank_hinge.
bool HasLogisticRankTerm(Loss loss, bool rank_hinge);

struct ModelOptions {
  // Architecture (fixed at creation; saved with the model).
  int vocabulary_size =
      0;  // opcode ids are in [0, vocabulary_size); features::OpcodeVocabularySize()
  int node_features = features::kNodeFeatures;
  int kernel_features = features::kKernelFeatures;
  int embedding_dim = 32;
  int hidden_dim = 64;
  int sage_layers = 3;
  // Readout: mean and max over nodes, plus (with sum_readout) the sum. A kernel's time grows with
  // its op count, which mean and max alone cannot see; checkpoints from before the option load
  // without it.
  bool sum_readout = true;
  // The absolute head adds a linear function of the normalised kernel features (log FLOPs, log
  // bytes, ...) to the network's output, so predicted log time extrapolates along the sizes
  // past the largest training kernel instead of flattening where the ReLU layers saturate.
  // Checkpoints from before the option load without it.
  bool linear_skip = true;
  // The absolute head's time is the pooled readout's term plus one positive term per node (each
  // node predicts its own log time): a fused loop costs about the sum of its ops. Checkpoints
  // from before the option load without it.
  bool node_time_sum = false;
  // Transformer encoder layers over each kernel's nodes, between the GraphSAGE layers and the
  // pooling (the paper's optional transformer reduction): GraphSAGE sees `sage_layers` hops
  // along the data edges, self-attention relates any two ops of a kernel. 0: none; checkpoints
  // from before the option load without it.
  int transformer_layers = 0;
  int attention_heads = 4;  // per transformer layer; hidden_dim must be a multiple
  double dropout = 0;
  // Training.
  uint64_t seed = 0;
  double learning_rate = 1e-3;
  double weight_decay = 0;
  int epochs = 50;
  int batch_size = 32;  // graphs per optimizer step; also the chunk size of Predict
  Loss loss = Loss::kBoth;
  // The absolute loss adds this times the mean relative error |predicted / measured - 1| (the
  // paper's fusion MAPE) to the MSE on log seconds. MSE on logs predicts the geometric middle of
  // what a kernel's features allow; MAPE charges a time predicted k times too high far more than
  // one k times too low, so where the features leave the time uncertain the weighted loss leans
  // low. 0: MSE alone.
  double relative_error_weight = 0;
  double hinge_margin = 1.0;  // kRankHinge (and kBoth's rank term when rank_hinge is true)
  bool rank_hinge = false;    // kBoth: hinge instead of logistic for its rank term
  // Weight each rank pair by 1 + log(slow / fast): ordering a 5 ns kernel's configuration before
  // a 1 us one matters more than two within 1% of each other, which an unweighted loss counts
  // alike; close pairs keep weight 1, as they decide the top pick.
  bool weight_pairs_by_gap = true;
  // Pairs whose slower runtime is within this factor of the faster are not ranked: their order is
  // within the timer's noise (two configurations of a kernel at the call floor), and fitting it
  // teaches preferences that carry over to kernels where they are wrong. 1 ranks every pair.
  double min_pair_ratio = 1.0;
  // > 0: the rank term is listwise instead of pairwise (ListNet with a temperature): per group,
  // the cross-entropy between softmax(-score) over its configurations and the target
  // softmax(-log(seconds) / listwise_temperature). Pairwise losses spend their gradient ordering
  // slow configurations among themselves; the target puts nearly all its mass on configurations
  // within a few temperatures (in log seconds) of the group's fastest, which is what the top pick
  // needs, and treats times closer than that as near-ties (timer noise). 0: pairwise.
  // min_pair_ratio and weight_pairs_by_gap apply to pairs only; rank_weight weighs each group.
  double listwise_temperature = 0;
  // LibTorch intra-op threads, set process-wide on creation (as optimizers/rl does): 1 keeps
  // results reproducible and leaves the daemon's other job threads their cores.
  int threads = 1;
  // Members of the ensemble: networks trained alike from different initial weights and batch
  // orders, whose predictions are averaged. A single network's top pick for a kernel moves
  // from one training run to the next; the average's moves less. Training and inference cost
  // grow with the count. Checkpoints from before ensembles hold one.
  int ensemble = 1;
  // How far a kernel's true log runtime strays from the ensemble's mean, fitted on held-out
  // programs after training (train-cost-model; FitRuntimeSpread): its variance is taken as
  // spread_floor + spread_scale * (members' standard deviation)^2. Members agree too well on
  // kernels unlike any they trained on (their errors are shared), hence the scale and floor.
  // RuntimePoint::kRelativeError uses it; 0 and 0 (checkpoints from before it): no shift.
  double spread_floor = 0;
  double spread_scale = 0;
};
absl::Status ValidateOptions(const ModelOptions& options);

// Which point of a kernel's predicted runtime distribution (log-normal: the ensemble's mean,
// the variance above) PredictSeconds reports.
enum class RuntimePoint {
  // exp(mean): the median. What plan costs and rankings use: unbiased in log seconds.
  kMedian,
  // exp(mean - variance): the value that minimises the expected relative error
  // |predicted - true| / true (the paper's MAPE). Relative error punishes a time predicted k
  // times too high by k - 1, one k times too low by less than 1, so where the model is unsure
  // (its members disagree) the best answer leans low.
  kRelativeError,
};

// One measured configuration: a kernel graph, the group it belongs to (the same kernel or
// program under different configurations: rank pairs are formed within a group only) and its
// measured runtime in seconds (> 0).
struct Sample {
  const features::KernelGraph* graph = nullptr;
  int64_t group = 0;
  double seconds = 0;
  // How much its group's rank pairs count in the rank loss (ProgramShareWeights); the same for
  // every sample of a group.
  double rank_weight = 1;
};

struct EpochReport {
  int epoch = 0;         // 1-based
  double loss = 0;       // mean total loss over the epoch's batches
  double mse_loss = 0;   // mean MSE on normalised log seconds (0 when not trained)
  double rank_loss = 0;  // mean rank loss per pair (0 when not trained)
  double seconds = 0;    // since training started
};

struct TrainReport {
  std::vector<EpochReport> epochs;  // one per epoch run
  int64_t samples = 0;
  int64_t rank_pairs = 0;  // within-group pairs ranked (runtimes beyond min_pair_ratio apart)
  bool stopped_early = false;
  double seconds = 0;
};

// Called after each epoch; returning false ends training there (the daemon's stop hook).
using ProgressCallback = std::function<bool(const EpochReport&)>;

enum class Head {
  kAbsolute,  // predicted log(seconds)
  kRelative,  // a score: within a kernel, smaller = faster; not comparable across kernels
};

class LearnedModel {
 public:
  static absl::StatusOr<std::unique_ptr<LearnedModel>> Create(const ModelOptions& options);
  // From Save()'s bytes; InvalidArgument for anything else (never aborts).
  static absl::StatusOr<std::unique_ptr<LearnedModel>> Load(std::string_view bytes);
  ~LearnedModel();
  LearnedModel(const LearnedModel&) = delete;
  LearnedModel& operator=(const LearnedModel&) = delete;

  const ModelOptions& options() const;
  // True once Train ran (or a trained model was loaded): the normalisation statistics exist.
  bool trained() const;
  // Whether training fits `head` (the loss decides).
  bool HasHead(Head head) const;

  // Adam over options().epochs epochs of shuffled batches. The first call fits the feature
  // normalisation (mean and standard deviation of node features, kernel features and log
  // seconds over `samples`) and keeps it; later calls fine-tune with the same statistics.
  // Deterministic for a given seed, sample order and thread count.
  absl::StatusOr<TrainReport> Train(const std::vector<Sample>& samples,
                                    const ProgressCallback& progress = nullptr);

  // One value per graph, computed in batches of options().batch_size graphs merged into one
  // disjoint graph: equal to predicting each graph alone. Safe to call from several threads at
  // once (not during Train). InvalidArgument for a malformed graph, FailedPrecondition for a head
  // the loss does not train or a model that was never trained. `spread`, when given, receives per
  // graph the standard deviation of the ensemble members' values (log seconds for the absolute
  // head; 0 for one member): how much they disagree, which grows on graphs unlike the training
  // set's.
  absl::StatusOr<std::vector<double>> Predict(
      const std::vector<const features::KernelGraph*>& graphs, Head head = Head::kAbsolute,
      std::vector<double>* spread = nullptr) const;
  // The absolute head's runtime in seconds per graph, at `point` (RuntimePoint); errors as
  // Predict's.
  absl::StatusOr<std::vector<double>> PredictSeconds(
      const std::vector<const features::KernelGraph*>& graphs, RuntimePoint point) const;

  std::string Save() const;

 private:
  struct Impl;
  explicit LearnedModel(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Checks a graph against the model's sizes: node feature and kernel feature counts, opcode ids in
// range, edge endpoints in range, at least one node.
absl::Status ValidateGraph(const features::KernelGraph& graph, const ModelOptions& options);

// Evaluation metrics (the paper's): `group`, `truth` (measured seconds) and `predicted` (a value
// per sample where smaller = faster: log seconds or a relative score) are parallel.
struct RankMetrics {
  // Tile-task APE: per group, truth of the predicted-fastest sample over the fastest truth, minus
  // 1 (0 = the model picks the best configuration); the paper reports the mean in percent.
  double ape_mean = 0;
  double ape_median = 0;
  // The same with the best of the 5 best-ranked samples instead of the first (what a tuner that
  // measures the model's top 5, as the paper does per kernel and model-topk does, ends up with).
  double ape_top5_mean = 0;
  // Kendall's tau-b between predicted and true order within each group, averaged over groups.
  double kendall_tau = 0;
  int groups = 0;  // groups with at least two samples (the only ones counted)
  // The paper's tile-size APE, per program over its kernels: the time the picks lose against the
  // best, summed, over the best times summed (sum(pick - best) / sum(best)); then the mean and
  // median over programs. Weighted by runtime, so a 2 ns kernel's pick counts as what it costs
  // the program, not as much as a millisecond kernel's. Only with `program` given.
  double program_ape_mean = 0;
  double program_ape_median = 0;
  int programs = 0;
};
// `program` (optional, parallel to `group`) names each sample's program; a group's program is its
// first sample's.
RankMetrics EvaluateRanking(std::span<const int64_t> group, std::span<const double> truth,
                            std::span<const double> predicted,
                            std::span<const int64_t> program = {});
// The model's pick when it may leave the compiler's default only with confidence: per group, the
// relative head's first choice stands where the absolute head predicts it at least `margin`
// faster than the default (default / pick >= 1 + margin); elsewhere the default moves to the
// front and the rest keep their order. A wrong move can cost several times the kernel's time
// (a thread pool on a 5 ns kernel), staying costs at most what the default loses, so a compiler
// that takes the model's answer unmeasured should move only on a clear predicted gain.
// `score` (relative head, smaller = faster), `log_seconds` (absolute head) and `is_default` are
// parallel to `group`; returns the adjusted scores (groups without a default unchanged).
std::vector<double> GuardDefaultPick(std::span<const int64_t> group, std::span<const double> score,
                                     std::span<const double> log_seconds,
                                     const std::vector<bool>& is_default, double margin);
// Mean absolute percentage error (as a fraction) of predicted seconds against measured ones.
double Mape(std::span<const double> truth_seconds, std::span<const double> predicted_seconds);
// The median of the same relative errors: MAPE's robust twin, which a few noisy nanosecond kernels
// do not move.
double MedianApe(std::span<const double> truth_seconds, std::span<const double> predicted_seconds);
// The error of summed times: sum |predicted - measured| over sum measured (rows with a positive
// measured time). A fusion plan's predicted time is its kernels' sum, so this is how far the model
// moves plan times; a 2 ns kernel predicted 10x off counts for its 2 ns, as in the plan.
double TimeWeightedApe(std::span<const double> truth_seconds,
                       std::span<const double> predicted_seconds);
// MAPE by the measured runtime: rows with a positive measured time fall into bands [edges[i],
// edges[i + 1]) (the first band from 0, the last without an upper end; `edges` ascending and
// positive), so a figure over thousands of kernels shows whether the error sits in nanosecond
// kernels at the call's floor or in the long ones that make up a program's time. Each band gives
// its row count, its MAPE and its share of the summed relative errors (0 for an empty band).
struct RuntimeBand {
  double lower_seconds = 0, upper_seconds = 0;  // upper 0: no upper end
  int64_t rows = 0;
  double mape = 0;
  double error_share = 0;
};
std::vector<RuntimeBand> MapeByRuntime(std::span<const double> truth_seconds,
                                       std::span<const double> predicted_seconds,
                                       std::span<const double> edges);
// Rank-loss weights that mirror the per-program tile APE: per group (kernel), its best time's
// share of its program's summed best times, times the program's group count, so a program's
// groups average 1 and each program weighs the same in total. The APE charges a pick by the time
// it costs the program, so the pairs of a 2 ns kernel beside a 20 ms one count for almost
// nothing, while a program of small kernels still counts in full. `group`, `seconds` and
// `program` are parallel; returns one weight per entry.
std::vector<double> ProgramShareWeights(std::span<const int64_t> group,
                                        std::span<const double> seconds,
                                        std::span<const int64_t> program);
// The runtime variance model of ModelOptions::spread_floor / spread_scale: the pair that
// minimises the MAPE of exp(log_mean - floor - scale * spread^2) against `truth_seconds` (a
// grid search, floor in [0, 2], scale in [0, 20]). `log_mean` and `spread` are an ensemble's
// out-of-fold predictions (LearnedModel::Predict); all three are parallel and non-empty.
struct RuntimeSpread {
  double floor = 0;
  double scale = 0;
};
RuntimeSpread FitRuntimeSpread(std::span<const double> truth_seconds,
                               std::span<const double> log_mean, std::span<const double> spread);
// exp(log_mean - floor - scale * spread^2) per entry: RuntimePoint::kRelativeError's seconds.
std::vector<double> RelativeErrorSeconds(std::span<const double> log_mean,
                                         std::span<const double> spread, RuntimeSpread fit);
// Kendall's tau-b of two equally long sequences; 0 when either is constant.
double KendallTau(std::span<const double> a, std::span<const double> b);

}  // namespace mltune::costmodels::learned
