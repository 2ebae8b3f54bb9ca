// Training the learned cost models on a store's kernel measurements, the library behind
// `mltune train-cost-model` and the daemon's retraining (which runs that command): read the
// <task>-kernel rows and kernel graphs, cross-validate on random kernels and on held-out programs
// next to the analytical baselines, optionally gate against the stored version, then train on
// everything and store the checkpoint as the next version of cost-model/<task>-<target>.
// tile: how well a model ranks a kernel's configurations (the paper's tile APE); fusion: how well
// it predicts kernel runtimes (the paper's fusion MAPE). LibTorch stays in
// mltune_costmodel_learned.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace mltune::opt::cost_model_training {

// Each field is the `mltune train-cost-model` flag of the same name (docs/cost_models.md).
struct TrainingOptions {
  std::string task = "tile";
  std::string target = "cpu";  // a spec name (cpu, tpu-v4-core, ...), as collect logged it
  std::string db;              // the store holding the measurements; the model is stored there
  std::string loss;  // costmodels::learned::ParseLoss; "": both for tile, mse-log for fusion
  int epochs = 60;
  int hidden = 64;
  int layers = 3;
  std::string readout = "mean-max-sum";  // the per-kernel pooling: mean-max-sum or mean-max
  std::string absolute_skip = "linear";  // the absolute head's skip from kernel features, or "none"
  // The absolute head's time: "pooled" (from the readout) or "node-sum" (plus a term per node).
  std::string absolute_head = "pooled";
  int transformer_layers = 0;        // self-attention layers over a kernel's nodes before pooling
  std::string pair_weights = "gap";  // rank pairs weighted by log(slow / fast), or "none"
  // tile: how much each kernel's rank pairs count: "equal", or "program-share", its share of its
  // program's time (learned::ProgramShareWeights), as the per-program APE weighs its picks.
  std::string kernel_weights = "equal";
  double min_pair_ratio = 1.0;      // rank pairs closer than this factor are not ranked
  double listwise_temperature = 0;  // > 0: a listwise rank term (ModelOptions), 0: pairwise
  double mape_weight = 0;           // the absolute loss's relative-error term
  // Regularisation (ModelOptions::dropout, weight_decay): the fusion model fits its training
  // kernels far better than kernels of programs it has not seen.
  double dropout = 0;
  double weight_decay = 0;
  int ensemble = 3;  // networks trained and averaged
  // Times each kernel of a real (not synthetic) program counts in training: the evaluation is on
  // real programs, and synthetic ones outnumber them.
  int real_weight = 1;
  // The leading node and kernel feature columns the model reads (0: all of them): features are
  // append-only, so this trains a model as it would have been before later slots were added,
  // on the same data (an ablation).
  int node_features = 0;
  int kernel_features = 0;
  // Share of the real kernels or programs each cross-validation fold holds out: round(1 / holdout)
  // folds (at least 2).
  double holdout = 0.25;
  // Leave out kernels whose fastest measurement is under this (timer noise dominates them).
  double min_seconds = 0;
  // fusion: kernels the daemon's fusion searches timed inside their modules (task
  // fusion-kernel-in-module) and no collect timed alone train too, when their time is at least
  // this: under a microsecond a kernel's time in its module is mostly the timer's and its
  // neighbours' (docs/cost_models.md). Never tested.
  double in_module_min_seconds = 1e-6;
  bool no_in_module = false;
  // tile: the guarded pick leaves the default configuration only where the absolute head
  // predicts at least this relative gain (learned::GuardDefaultPick).
  double pick_margin = 0.1;
  uint64_t seed = 0;
  bool no_store = false;
  bool no_eval = false;  // skip the cross-validations: train on everything and store
  // Which cross-validations run: "both", "random" (kernels) or "programs" (held out). One alone
  // lets the two run side by side, one process per core.
  std::string splits = "both";
  std::string predictions;  // CSV of every test row's measured and predicted runtimes ("": none)
  // A second store whose measurements of the task (kernels timed alone) test the model trained on
  // all of `db`: programs the training store knows only from elsewhere, or not at all.
  std::string test_db;
  // Store only a model that does at least about as well as the newest stored version on kernels
  // logged since it and held out of training (gate.h); TrainingOutcome::
  // gate_rejected otherwise.
  bool gate = false;
  double gate_share = 0.25;  // of the new kernels' programs held out
  // How much worse (relative) the new model may be: one training run against another of the
  // same recipe differed by up to 12% on held-out cpu kernels, tile and fusion (docs/daemon.md).
  double gate_margin = 0.15;
  int gate_min_kernels = 5;  // fewer held-out kernels to score: the gate is skipped
};

// One epoch of the final training (on every measurement), for a training curve.
struct EpochLoss {
  int epoch = 0;       // 1-based
  double loss = 0;     // mean total loss over the epoch's batches
  double mse = 0;      // its MSE term on normalised log seconds (0 when not trained)
  double rank = 0;     // its rank term per pair (0 when not trained)
  double seconds = 0;  // since training started
};

struct TrainingOutcome {
  std::string model;             // cost-model/<task>-<target>
  int64_t version = 0;           // the version stored; 0 when nothing was
  bool gate_rejected = false;    // --gate: the new model lost to the stored one and was not stored
  std::vector<EpochLoss> curve;  // the final training's epochs; empty when it did not run
};

// Trains as `options` say; the metric tables and what was stored go to `report`, warnings about
// the data to `warnings`. InvalidArgument names the bad option; a store without the task's
// measurements is FailedPrecondition, saying how to collect them.
absl::StatusOr<TrainingOutcome> TrainCostModel(const TrainingOptions& options, std::ostream& report,
                                               std::ostream& warnings);

// The options that shape the stored model (opt::guided::kTrainingRecipeFlags) as flags, with the
// loss resolved: the checkpoint's metadata keeps them, and the daemon retrains with them.
std::vector<std::string> TrainingRecipe(const TrainingOptions& options, const std::string& loss);

}  // namespace mltune::opt::cost_model_training
