// `mltune`: the command-line client. Offline subcommands work on HLO files directly; the RPC
// subcommands (submit, watch, result, lookup, cancel, workers, strategies, stats) talk to mltuned.
// Built twice: `mltune`, without LibTorch, and `mltune-full` (MLTUNE_FULL_CLI), which runs the
// subcommands that need it.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_join.h"
#include "client/cli_commands.h"
#include "client/full_cli.h"
#include "client/rpc_commands.h"
#include "costmodels/features/kernel_graph.h"
#include "costmodels/synthetic/synthetic_programs.h"

namespace {

// A trainer mltuned starts (daemon/model_refresher.cc) names it in MLTUNE_PARENT_PID and dies
// with it: after a daemon crash an orphan would keep training on a core beside the restarted
// daemon's kernel measurements.
void DieWithTheDaemon() {
  const char* parent = std::getenv("MLTUNE_PARENT_PID");
  if (parent == nullptr) return;
  const std::string pid = parent;
  unsetenv("MLTUNE_PARENT_PID");  // not for what this process starts
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The daemon may have died before prctl: then this process is already someone else's child.
  if (std::to_string(getppid()) != pid) _exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  DieWithTheDaemon();
  using namespace mltune::client;
  CLI::App app{
      "mltune: ML-compiler autotuning client. Offline subcommands read XLA HLO text; the others "
      "talk to mltuned (--server HOST:PORT, else $MLTUNE_SERVER, else 127.0.0.1:8470). Exit codes: "
      "0 ok, 1 error, 2 mltuned unreachable, 3 no result (lookup miss, job not finished; "
      "train-cost-model --gate: the new model lost to the stored one)."};
  app.require_subcommand(1);
  app.set_version_flag("--version", "mltune 0.1.0");

  ParseCommand parse;
  auto* parse_cmd = app.add_subcommand(
      "parse", "Parse and verify; print computations, instruction count and an opcode histogram");
  parse_cmd->add_option("file", parse.file, "HLO text file (.hlo, .txt, or .gz)")->required();
  parse_cmd->add_flag("--json", parse.json, "Print JSON instead of a table");

  PrintCommand print;
  bool no_metadata = false;
  auto* print_cmd = app.add_subcommand("print", "Parse, verify and print canonical HLO text");
  print_cmd->add_option("file", print.file, "HLO text file")->required();
  print_cmd->add_flag("--no-metadata", no_metadata, "Omit metadata={...}");
  print_cmd->add_flag("--operand-shapes", print.operand_shapes, "Print operand shapes inline");

  EvalCommand eval;
  auto* eval_cmd = app.add_subcommand(
      "eval", "Evaluate on seeded random inputs; print an output summary and a digest");
  eval_cmd->add_option("file", eval.file, "HLO text file")->required();
  eval_cmd->add_option("--seed", eval.seed, "Seed of the random inputs")->default_val(0);
  eval_cmd->add_flag("--json", eval.json, "Print JSON instead of a table");

  FingerprintCommand fingerprint;
  auto* fp_cmd = app.add_subcommand(
      "fingerprint", "Structural SHA-256 (ignores names, ids and metadata): the cache key");
  fp_cmd->add_option("file", fingerprint.file, "HLO text file")->required();

  auto* passes_cmd = app.add_subcommand("passes", "List the HLO passes, one line each");

  OptCommand opt;
  auto* opt_cmd = app.add_subcommand(
      "opt", "Run XLA's default pipeline or a list of passes; print op counts before and after");
  opt_cmd->add_option("file", opt.file, "HLO text file")->required();
  auto* pipeline_opt =
      opt_cmd->add_option("--pipeline", opt.pipeline, "Default pipeline: cpu or gpu (XLA's order)");
  auto* passes_opt =
      opt_cmd->add_option("--passes", opt.passes, "Comma-separated pass names (mltune passes)")
          ->delimiter(',');
  pipeline_opt->excludes(passes_opt);
  opt_cmd->add_option("-o,--output", opt.output, "Write the optimized module here");
  opt_cmd->add_flag("--verify", opt.verify,
                    "Evaluate before and after on random inputs; report the largest difference");
  opt_cmd->add_flag("--time-passes", opt.time_passes,
                    "Print the time and change count of every pass, slowest first");

  SearchCommand search;
  auto* search_cmd = app.add_subcommand(
      "search", "Search pass orders; compare the best with XLA's default pipeline");
  search_cmd
      ->add_option("problem", search.problem,
                   "pass-order, or tile|fusion (the CPU backend's kernels, measured; --target cpu)")
      ->required();
  search_cmd->add_option("file", search.file, "HLO text file")->required();
  search_cmd
      ->add_option("--strategy", search.strategy,
                   "random, greedy, beam, annealing or evolutionary; tile and fusion on cpu also "
                   "model-topk")
      ->default_val("greedy");
  search_cmd->add_option("--budget", search.budget, "Budget in environment steps")
      ->default_val(1000);
  search_cmd->add_option("--seconds", search.max_seconds, "Time budget (0: none)");
  search_cmd->add_option("--seed", search.seed, "Seed")->default_val(0);
  search_cmd->add_option("--max-length", search.max_length, "Longest pass sequence")
      ->default_val(40);
  search_cmd->add_option("--target", search.target, "Baseline pipeline: cpu or gpu")
      ->default_val("cpu");
  search_cmd->add_option("-o,--output", search.output, "Write the best module here");
  search_cmd->add_option("--model-db", search.model_db,
                         "tile|fusion --target cpu --strategy model-topk: the store whose newest "
                         "cost-model/tile-cpu (fusion: cost-model/fusion-cpu) ranks candidates");
  search_cmd->add_flag("!--no-warm-start", search.warm_start,
                       "Do not start from the default pipeline's order (search from scratch)");
  search_cmd
      ->add_option("--score", search.score,
                   "pass-order: op-count, or latency (compile each candidate with the CPU "
                   "backend and time it; --target cpu)")
      ->default_val("op-count");
  search_cmd
      ->add_option("--measure-seconds", search.measure_seconds,
                   "--score latency: timed runs per candidate, at most (seconds)")
      ->default_val(0.1);

  RunCommand run;
  auto* run_cmd = app.add_subcommand(
      "run",
      "Compile for the CPU or the GPU (generated kernels), run, check against the evaluator, "
      "time");
  run_cmd->add_option("file", run.file, "HLO text file")->required();
  run_cmd->add_option("--target", run.target, "cpu, or gpu (the attached CUDA device)")
      ->default_val("cpu");
  run_cmd->add_option("--arch", run.arch,
                      "--target gpu: the PTX's architecture (default: the device's, else sm_90)");
  run_cmd->add_flag("--check", run.check,
                    "Compare with the reference evaluator on seeded random inputs (exit 1 if not)");
  run_cmd->add_option("--repeat", run.repeat,
                      "Timed samples (0: until the spread is below 2% or 1 s of runs)");
  run_cmd->add_flag("--tuned", run.tuned, "Also tune the kernels' parameters and time the result");
  run_cmd->add_option("--strategy", run.strategy, "Tuning strategy")->default_val("annealing");
  run_cmd->add_option("--budget", run.budget, "Tuning steps")->default_val(32);
  run_cmd->add_option("--seed", run.seed, "Seed of the inputs and the search")->default_val(0);
  run_cmd->add_option("--threads", run.threads, "Threads of the generated code")->default_val(1);
  run_cmd->add_flag("--json", run.json, "Also print the figures as JSON");
  run_cmd->add_option("--emit-source", run.emit_source,
                      "Write the generated C++ source of the module to this file: one file "
                      "that compiles alone, whose marker comments are where the CPU worker "
                      "splits it into translation units compiled in parallel");
  run_cmd->add_flag("--emulate", run.emulate,
                    "--target gpu: run the generated CUDA on the host CPU (mltune-gpu-emulator) "
                    "and check it against the evaluator; no GPU needed, nothing timed");
  run_cmd->add_flag("--kernel-times", run.kernel_times,
                    "Also time each kernel inside the module's run and list them, slowest first, "
                    "with the GFLOP/s of dots and convolutions");
  run_cmd->add_option("--fill-elided", run.fill_elided,
                      "Give elided constants (constant({...})) seeded random values, so modules "
                      "shipped without their weights run; a warning says how many (also "
                      "MLTUNE_FILL_ELIDED=SEED)");
  run_cmd->add_option("--model-db", run.model_db,
                      "Store holding cost-model/fusion-cpu (mltune train-cost-model --task "
                      "fusion): also print its predicted time of the default fusion's kernels");

  SimulateCommand simulate;
  auto* simulate_cmd = app.add_subcommand(
      "simulate",
      "What a simulated worker says about the module: TPU kernel times, a multi-chip pipeline, "
      "or a cluster placement, by the target's kind");
  simulate_cmd->add_option("file", simulate.file, "HLO text file")->required();
  simulate_cmd
      ->add_option("--target", simulate.target,
                   "Target spec (mltuned's names, e.g. tpu-v4-core, mcm-36, gpu-8x-pcie) or a "
                   "simulator: tpu-sim, mcm-sim, cluster-sim")
      ->required();
  simulate_cmd->add_option("--top", simulate.top, "TPU targets: kernels listed (0: all)")
      ->default_val(10);
  simulate_cmd->add_flag("--json", simulate.json, "Print JSON instead of tables");
  simulate_cmd->add_option("--specs-dir", simulate.specs_dir,
                           "More target specs (*.json), as mltuned's --specs-dir");

  SynthesizeCommand synthesize;
  auto* synthesize_cmd = app.add_subcommand(
      "synthesize",
      "Write random ML-shaped HLO programs (dense, convolution, attention, normalisation, "
      "elementwise, reduction blocks with random shapes): extra training data for collect");
  synthesize_cmd->add_option("--out", synthesize.out, "Folder to write synthetic_<seed>.hlo to")
      ->required();
  synthesize_cmd->add_option("--count", synthesize.count, "Programs")->default_val(100);
  synthesize_cmd->add_option("--seed", synthesize.seed, "Seed of the first program")
      ->default_val(0);
  synthesize_cmd->add_option("--max-blocks", synthesize.max_blocks, "Blocks per program, at most")
      ->default_val(4);
  synthesize_cmd->add_option("--max-elements", synthesize.max_elements, "Largest array")
      ->default_val(int64_t{1} << 20);
  synthesize_cmd
      ->add_option("--max-flops", synthesize.max_flops, "Largest matmul or convolution, in FLOPs")
      ->default_val(int64_t{1} << 28);
  synthesize_cmd
      ->add_option("--blocks", synthesize.blocks,
                   // From the block registry, so a new block shows up here without an edit.
                   "Comma-separated blocks to build programs from (default: all, matmuls and "
                   "convolutions weighted up): " +
                       absl::StrJoin(mltune::costmodels::synthetic::SyntheticBlockNames(), ", "))
      ->delimiter(',');

  PartitionGraphCommand graph_gen;
  auto* graph_cmd = app.add_subcommand(
      "partition-graph",
      "Write a dnn-partitioning graph (.json) for partition: a module's op graph costed by the "
      "CPU roofline (--hlo, microbatches stacked), or a random layered DAG (--nodes)");
  graph_cmd->add_option("--out", graph_gen.out, "The graph file to write")->required();
  graph_cmd->add_option("--hlo", graph_gen.hlo, "An HLO module (text or .gz); else a random DAG");
  graph_cmd
      ->add_option("--microbatches", graph_gen.microbatches,
                   "--hlo: copies of the step, each weight-reading op colocated across "
                   "them (a pipeline's microbatches)")
      ->default_val(1);
  graph_cmd->add_option("--nodes", graph_gen.nodes, "Random: nodes")->default_val(10000);
  graph_cmd->add_option("--width", graph_gen.width, "Random: nodes per layer on average")
      ->default_val(32);
  graph_cmd->add_option("--fan-in", graph_gen.fan_in, "Random: most inputs per node")
      ->default_val(3);
  graph_cmd->add_option("--reach", graph_gen.reach, "Random: layers back an input may come from")
      ->default_val(3);
  graph_cmd->add_option("--cpu-only", graph_gen.cpu_only, "Random: fraction of CPU-only nodes")
      ->default_val(0);
  graph_cmd
      ->add_option("--colocated", graph_gen.colocated,
                   "Random: fraction of single-input nodes colocated with their producer")
      ->default_val(0);
  graph_cmd->add_option("--seed", graph_gen.seed, "Random: seed")->default_val(0);
  graph_cmd->add_option("--accelerators", graph_gen.accelerators, "Accelerators (maxFPGAs)")
      ->default_val(8);
  graph_cmd
      ->add_option("--memory-slack", graph_gen.memory_slack,
                   "Each accelerator holds this times the graph's bytes / accelerators")
      ->default_val(1.5);
  graph_cmd->add_option("--link-gbps", graph_gen.link_gbps, "--hlo: GB/s between devices")
      ->default_val(40);

  CollectCommand collect;
  auto* collect_cmd = app.add_subcommand(
      "collect",
      "Measure random valid configurations of every kernel into the store: the learned cost "
      "model's training data (resumable, time-bounded)");
  collect_cmd->add_option("inputs", collect.inputs, "HLO files, or folders searched recursively")
      ->required();
  collect_cmd
      ->add_option("--target", collect.target,
                   "cpu (measured), or tpu-sim / a tpu spec name such as tpu-v4-core (simulated)")
      ->default_val("cpu");
  collect_cmd
      ->add_option("--task", collect.task,
                   "tile (configurations per kernel) or fusion (kernels of random fusion plans)")
      ->default_val("tile");
  collect_cmd->add_option("--db", collect.db, "SQLite store (created when missing)")->required();
  collect_cmd->add_option("--seconds", collect.seconds, "Stop after this long (0: no limit)")
      ->default_val(0);
  collect_cmd
      ->add_option("--per-kernel", collect.per_kernel,
                   "tile: configurations per kernel, the default one included")
      ->default_val(8);
  collect_cmd
      ->add_option("--per-module", collect.per_module,
                   "Fusion plans per module, the default one included (0: fusion 8; cpu tile 1, "
                   "more adds the kernels of random fusion plans)")
      ->default_val(0);
  collect_cmd
      ->add_option("--rounds", collect.rounds,
                   "cpu: measurements per configuration, in rounds over each kernel's "
                   "configurations; the fastest is logged, as co-runners only slow a run down "
                   "(0: 3 on cpu, 1 on simulated targets)")
      ->default_val(0);
  collect_cmd
      ->add_option("--noise", collect.noise,
                   "tpu-sim: log-normal sigma of the simulated times (measurement noise)")
      ->default_val(0.02);
  collect_cmd
      ->add_option("--seed", collect.seed, "Seed of the configurations, plans, inputs and noise")
      ->default_val(0);
  collect_cmd->add_flag("--cut-unsupported", collect.cut_unsupported,
                        "cpu: ops the backend cannot run (sort, gather, custom calls, ...) become "
                        "parameters, so the rest of such a module's kernels are measured");

  TrainCostModelCommand train_cost;
  auto* train_cost_cmd = app.add_subcommand(
      "train-cost-model",
      "Train the learned cost model on the store's kernel measurements (mltune collect), print "
      "its metrics on held-out kernels and programs, store the checkpoint");
  train_cost_cmd
      ->add_option("--task", train_cost.task,
                   "tile (rank a kernel's configurations) or fusion (kernel runtimes)")
      ->default_val("tile");
  train_cost_cmd
      ->add_option("--target", train_cost.target,
                   "Whose measurements: cpu, tpu-sim or a tpu spec name (as collected)")
      ->default_val("cpu");
  train_cost_cmd->add_option("--db", train_cost.db, "SQLite store")->required();
  train_cost_cmd->add_option("--loss", train_cost.loss,
                             "mse-log, rank-hinge, rank-logistic, both (default: both for tile, "
                             "mse-log for fusion)");
  train_cost_cmd->add_option("--epochs", train_cost.epochs, "Training epochs")->default_val(60);
  train_cost_cmd->add_option("--hidden", train_cost.hidden, "Hidden width")->default_val(64);
  train_cost_cmd->add_option("--layers", train_cost.layers, "GraphSAGE layers")->default_val(3);
  train_cost_cmd
      ->add_option("--readout", train_cost.readout,
                   "Pooling over a kernel's nodes: mean-max-sum or mean-max")
      ->default_val("mean-max-sum");
  train_cost_cmd
      ->add_option("--absolute-skip", train_cost.absolute_skip,
                   "The absolute head adds a linear function of the kernel features (linear) "
                   "or not (none)")
      ->default_val("linear");
  train_cost_cmd
      ->add_option("--absolute-head", train_cost.absolute_head,
                   "The absolute head's time: from the pooled readout (pooled), or that plus a "
                   "time per node, summed (node-sum)")
      ->default_val("pooled");
  train_cost_cmd
      ->add_option("--transformer-layers", train_cost.transformer_layers,
                   "Transformer encoder layers over each kernel's nodes between the GraphSAGE "
                   "layers and the pooling (4 heads; 0: none)")
      ->default_val(0)
      ->check(CLI::Range(0, 4));
  train_cost_cmd
      ->add_option("--mape-weight", train_cost.mape_weight,
                   "The absolute head's loss adds this times the mean relative error of the "
                   "predicted times (MAPE) to the MSE on log seconds")
      ->default_val(0)
      ->check(CLI::Range(0.0, 100.0));
  train_cost_cmd
      ->add_option("--dropout", train_cost.dropout,
                   "Dropout rate after the node input, each GraphSAGE layer and the readout")
      ->default_val(0)
      ->check(CLI::Range(0.0, 0.9));
  train_cost_cmd
      ->add_option("--weight-decay", train_cost.weight_decay, "Adam's L2 penalty on the weights")
      ->default_val(0)
      ->check(CLI::Range(0.0, 1.0));
  train_cost_cmd
      ->add_option("--real-weight", train_cost.real_weight,
                   "Times each measurement of a real (not synthetic) program counts in training")
      ->default_val(1)
      ->check(CLI::Range(1, 100));
  train_cost_cmd
      ->add_option("--node-features", train_cost.node_features,
                   "Read only the leading N node feature columns (0: all; an ablation of later "
                   "features on the same data)")
      ->default_val(0)
      ->check(CLI::Range(0, mltune::costmodels::features::kNodeFeatures));
  train_cost_cmd
      ->add_option("--kernel-features", train_cost.kernel_features,
                   "Read only the leading N kernel feature columns (0: all)")
      ->default_val(0)
      ->check(CLI::Range(0, mltune::costmodels::features::kKernelFeatures));
  train_cost_cmd
      ->add_option("--ensemble", train_cost.ensemble,
                   "Networks trained from different seeds whose predictions are averaged")
      ->default_val(3)
      ->check(CLI::Range(1, 64));
  train_cost_cmd
      ->add_option("--min-pair-ratio", train_cost.min_pair_ratio,
                   "Rank pairs whose runtimes are within this factor are not ranked (>= 1)")
      ->default_val(1.0)
      ->check(CLI::Range(1.0, 100.0));
  train_cost_cmd
      ->add_option("--listwise-temperature", train_cost.listwise_temperature,
                   "> 0: the rank term is listwise, each kernel's configurations against "
                   "softmax(-log(seconds) / T); 0: pairwise")
      ->default_val(0.0)
      ->check(CLI::Range(0.0, 100.0));
  train_cost_cmd
      ->add_option("--pair-weights", train_cost.pair_weights,
                   "Rank-loss pairs weighted by log(slow / fast) (gap) or alike (none)")
      ->default_val("gap");
  train_cost_cmd
      ->add_option("--kernel-weights", train_cost.kernel_weights,
                   "tile: each kernel's rank pairs count alike (equal) or by its share of its "
                   "program's time (program-share), as the per-program APE weighs its picks")
      ->default_val("equal");
  train_cost_cmd
      ->add_option("--holdout", train_cost.holdout,
                   "Share each cross-validation fold holds out, in (0, 1): round(1 / holdout) "
                   "folds of the kernels or programs")
      ->default_val(0.25);
  train_cost_cmd
      ->add_option("--min-seconds", train_cost.min_seconds,
                   "Leave out kernels whose fastest measurement is under this (timer noise)")
      ->default_val(0);
  train_cost_cmd
      ->add_option("--in-module-min-seconds", train_cost.in_module_min_seconds,
                   "fusion: kernels the daemon timed only inside its modules' runs train when "
                   "their time is at least this")
      ->default_val(1e-6);
  train_cost_cmd->add_flag("--no-in-module", train_cost.no_in_module,
                           "fusion: train on kernels timed alone (collect) only");
  train_cost_cmd
      ->add_option("--pick-margin", train_cost.pick_margin,
                   "tile: the guarded pick leaves the default configuration only where the "
                   "absolute head predicts at least this gain (0.1 = 10% faster)")
      ->default_val(0.1);
  train_cost_cmd->add_option("--seed", train_cost.seed, "Seed")->default_val(0);
  train_cost_cmd->add_flag("--no-store", train_cost.no_store, "Do not store the checkpoint");
  train_cost_cmd->add_option("--svg", train_cost.svg,
                             "Write the final training's loss per epoch as an SVG plot");
  train_cost_cmd->add_flag("--no-eval", train_cost.no_eval,
                           "Skip the cross-validations: only train on everything and store");
  train_cost_cmd
      ->add_option("--splits", train_cost.splits,
                   "Cross-validations to run: both, random (kernels) or programs (held out); "
                   "one alone lets two processes run the two side by side")
      ->default_val("both");
  train_cost_cmd->add_option(
      "--predictions", train_cost.predictions,
      "Write a CSV of each test row's measured, learned and analytical runtime (both splits)");
  train_cost_cmd->add_flag(
      "--gate", train_cost.gate,
      "Store only if the model does about as well as the newest stored version on kernels logged "
      "since it, held out of training (exit 3 otherwise; mltuned's retraining passes it)");
  train_cost_cmd
      ->add_option("--gate-share", train_cost.gate_share,
                   "--gate: share of the new kernels' programs held out")
      ->default_val(0.25);
  train_cost_cmd
      ->add_option("--gate-margin", train_cost.gate_margin,
                   "--gate: how much worse the new model may do (0.15 = 15%, plus 1 point of "
                   "noise); negative demands an improvement")
      ->default_val(0.15);
  train_cost_cmd
      ->add_option("--gate-min-kernels", train_cost.gate_min_kernels,
                   "--gate: with fewer held-out kernels to score, store without comparing")
      ->default_val(5);
  train_cost_cmd->add_option(
      "--test-db", train_cost.test_db,
      "Also test the model trained on all of --db on this store's measurements of the task "
      "(e.g. programs --db knows only from the daemon's in-module times)");

  TrainAgentCommand train;
  auto* train_cmd = app.add_subcommand(
      "train-agent",
      "Train an RL pass-ordering agent on HLO graphs (held-out split by fingerprint); store the "
      "checkpoint as the next version of pass-order/rl-<algo>");
  train_cmd
      ->add_option("--task", train.task, "Task: pass-order; with --algo go: partition or placement")
      ->required();
  train_cmd->add_option("--graphs", train.graphs, "HLO files, or folders searched recursively")
      ->required();
  train_cmd->add_option("--algo", train.algo, "ppo, dqn, maxq or go (the GO graph policy)")
      ->required();
  train_cmd->add_option("--encoder", train.encoder, "mlp or gnn")->default_val("mlp");
  train_cmd->add_option("--episodes", train.episodes, "Training episodes")->default_val(200);
  train_cmd->add_option("--episode-length", train.episode_length, "Passes per episode")
      ->default_val(20);
  train_cmd->add_option("--seed", train.seed, "Seed")->default_val(0);
  train_cmd->add_option("--eval-every", train.eval_every, "Evaluate every K episodes (0: never)")
      ->default_val(25);
  train_cmd->add_option("--holdout", train.holdout, "Fraction of the graphs held out, [0, 1)")
      ->default_val(0.25);
  train_cmd->add_option("--min-ops", train.min_ops, "Skip graphs with fewer ops")->default_val(50);
  train_cmd->add_option("--store", train.store, "SQLite store for the checkpoint")
      ->default_val("./var/mltune.db");
  train_cmd->add_flag("--no-store", train.no_store, "Do not store the checkpoint");
  train_cmd->add_option("--csv", train.csv, "Write the training curve as CSV");
  train_cmd->add_option("--svg", train.svg, "Write the training curve as an SVG plot");
  train_cmd->add_option("--holdout-family", train.holdout_families,
                        "--algo go: graph families held out (e.g. resnet), evaluated as it trains");
  train_cmd->add_option("--target", train.target, "--algo go: cluster-sim target of HLO graphs")
      ->default_val("gpu-4x-nvlink");
  train_cmd->add_option("--max-units", train.max_units, "--algo go: largest HLO module (ops)")
      ->default_val(3000);
  train_cmd->add_option("--out", train.out, "--algo go: also write the checkpoint here");
  train_cmd
      ->add_option("--imitation", train.imitation,
                   "--algo go: iterations imitating the best baseline before PPO")
      ->default_val(0);

  PartitionCommand partition;
  auto* partition_cmd = app.add_subcommand(
      "partition",
      "Split a dnn-partitioning graph (.json) across accelerators and a CPU under the throughput "
      "or latency objective, or place an HLO module's ops on a simulated GPU cluster");
  partition_cmd
      ->add_option("graph", partition.graph,
                   "Partition graph (.json, the dnn-partitioning format) or HLO text file")
      ->required();
  partition_cmd->add_option("--objective", partition.objective,
                            "Graphs: throughput (max-load) or latency (required)");
  partition_cmd->add_option(
      "--strategy", partition.strategy,
      "Graphs: one-accelerator, m-etf, metis, contiguous, contiguous-dp, pipedream, "
      "local-search; modules: one-device, m-etf (clusters), balanced (MCMs); graphs and MCMs: "
      "solver-random, solver-annealing, solver-local-search, go-fix, go-sample; all: random, "
      "greedy, beam, annealing, evolutionary, go (default: go when its checkpoint exists, else "
      "local-search for graphs and annealing for modules)");
  partition_cmd->add_option(
      "--budget", partition.budget,
      "Evaluations (0: search strategies 1000, go 16, local-search until it converges)");
  partition_cmd->add_option(
      "--seconds", partition.seconds,
      "Wall-clock limit of the iterative strategies (local-search, the search and solver "
      "strategies, go's samples and fine-tuning; with --budget whichever ends first; 0: none). "
      "One-shot strategies and go's first decision ignore it; every run reports its time");
  partition_cmd->add_option("--seed", partition.seed, "Seed")->default_val(0);
  partition_cmd->add_flag("--json", partition.json, "Print one JSON object");
  partition_cmd->add_option(
      "--out", partition.out,
      "Write the split (graphs: the dnn-partitioning split format) or the placement (modules)");
  partition_cmd->add_option("--evaluate", partition.evaluate,
                            "Graphs: print the objective of this split file instead of searching");
  partition_cmd->add_option("--model", partition.model,
                            "go: the GO checkpoint (default: the pretrained partition--go.ckpt)");
  partition_cmd->add_flag("--fine-tune", partition.fine_tune,
                          "go: train on this graph with what is left of the budget");
  partition_cmd->add_flag("!--no-warm-start", partition.warm_start,
                          "go: start from nothing rather than refine the baselines' best");
  partition_cmd->add_flag("--measured", partition.measured,
                          "Modules on a cluster target: place the CPU worker's kernels, each "
                          "costed by its time measured on this host (e.g. --target "
                          "cpu-4x-ethernet)");
  partition_cmd->add_flag("!--no-refine", partition.refine,
                          "go on graphs with --seconds: return the policy's split as it is, not "
                          "refined by a descent with half the time");
  partition_cmd->add_option(
      "--target", partition.target,
      "Modules: a gpu-cluster target (gpu-{2,4,8}x-{nvlink,pcie}, cluster-sim; default "
      "gpu-4x-nvlink) or a multi-chip module (mcm-36, mcm-sim)");
  partition_cmd->add_flag("--contiguous", partition.contiguous,
                          "Graphs, solver-* and go-fix/go-sample: each accelerator's nodes a "
                          "contiguous piece of the graph");

  // ---- RPC subcommands (client/rpc_commands.h) ----
  auto add_server = [](CLI::App* cmd, std::string& server) {
    cmd->add_option("--server", server,
                    "mltuned address HOST:PORT (default: $MLTUNE_SERVER, else 127.0.0.1:8470)");
    ConnectionFlags& c = GlobalConnectionFlags();
    cmd->add_option("--ca", c.ca,
                    "TLS: the CA (PEM) that signed mltuned's certificate ($MLTUNE_CA)");
    cmd->add_option("--cert", c.cert, "Mutual TLS: this client's certificate (PEM, $MLTUNE_CERT)");
    cmd->add_option("--key", c.key, "Mutual TLS: this client's private key (PEM, $MLTUNE_KEY)");
    cmd->add_option("--token", c.token, "Bearer token for mltuned's --tokens ($MLTUNE_TOKEN)");
  };
  // A terminal gets one progress line redrawn in place; a pipe or log gets plain lines.
  const ProgressStyle progress_style =
      isatty(STDERR_FILENO) ? ProgressStyle::kLive : ProgressStyle::kLines;

  SubmitCommand submit;
  auto* submit_cmd = app.add_subcommand(
      "submit", "Tune a graph through mltuned: answered from its cache, or queued as a job");
  submit_cmd
      ->add_option("file", submit.file,
                   "HLO text or ONNX model file (over 1 MiB: uploaded once, by its SHA-256)")
      ->required();
  submit_cmd
      ->add_option("--task", submit.tasks,
                   "Task to run (repeatable; default: the target's natural task)")
      ->delimiter(',')
      ->allow_extra_args(false);
  submit_cmd
      ->add_option("--target", submit.target,
                   "Target: cpu, gpu, a spec name or tpu-sim|mcm-sim|cluster-sim")
      ->default_val("cpu");
  submit_cmd->add_option("--strategy", submit.strategy,
                         "random, greedy, beam, annealing or evolutionary (default: the daemon's)");
  submit_cmd->add_option("--budget", submit.budget, "Search steps (0: the daemon's default)");
  submit_cmd->add_option("--seconds", submit.seconds, "Time limit of the search (0: none)");
  submit_cmd
      ->add_option("--option", submit.options,
                   "Task option key=value (repeatable): seed, max_length, warm_start")
      ->allow_extra_args(false);
  submit_cmd->add_flag("--skip-cache", submit.skip_cache,
                       "Search again even when the cache could answer");
  submit_cmd->add_flag("--watch", submit.watch, "Follow the job to its end and print the result");
  submit_cmd->add_option("-o,--output", submit.output,
                         "Write the optimized HLO here (needs the result: cached or --watch)");
  submit_cmd->add_flag("--json", submit.json, "Print JSON instead of text");
  add_server(submit_cmd, submit.server);

  WatchCommand watch;
  auto* watch_cmd =
      app.add_subcommand("watch", "Follow a job's progress until it finishes, then its result");
  watch_cmd->add_option("job", watch.job, "Job id")->required();
  watch_cmd->add_option("-o,--output", watch.output, "Write the optimized HLO here");
  watch_cmd->add_flag("--json", watch.json, "Print the finished job as JSON");
  add_server(watch_cmd, watch.server);

  ResultCommand result;
  auto* result_cmd = app.add_subcommand(
      "result",
      "A finished job's scores (original, XLA default, tuned), pass sequence, provenance");
  result_cmd->add_option("job", result.job, "Job id")->required();
  result_cmd->add_option("-o,--output", result.output, "Write the optimized HLO here");
  result_cmd->add_option("--plot", result.plot,
                         "Write an SVG of each task's best score against search steps");
  result_cmd->add_flag("--json", result.json, "Print JSON with every field");
  add_server(result_cmd, result.server);

  LookupCommand lookup;
  auto* lookup_cmd = app.add_subcommand(
      "lookup", "Ask mltuned's cache about a graph (FILE or --fingerprint); queues nothing");
  auto* lookup_file = lookup_cmd->add_option("file", lookup.file,
                                             "HLO text or ONNX model file (as submit sends it)");
  auto* lookup_fp = lookup_cmd->add_option("--fingerprint", lookup.fingerprint,
                                           "Structural fingerprint (mltune fingerprint FILE)");
  lookup_file->excludes(lookup_fp);
  lookup_cmd->add_option("--task", lookup.task, "Only this task (default: every task)");
  lookup_cmd->add_option("--target", lookup.target, "Only this target (default: every target)");
  lookup_cmd->add_option("-o,--output", lookup.output, "Write the optimized HLO here");
  lookup_cmd->add_flag("--json", lookup.json, "Print JSON");
  add_server(lookup_cmd, lookup.server);

  CancelCommand cancel;
  auto* cancel_cmd = app.add_subcommand("cancel", "Cancel a queued or running job");
  cancel_cmd->add_option("job", cancel.job, "Job id")->required();
  add_server(cancel_cmd, cancel.server);

  ServerCommand workers;
  auto* workers_cmd = app.add_subcommand("workers", "mltuned's workers: kind, targets, state");
  workers_cmd->add_flag("--json", workers.json, "Print JSON");
  add_server(workers_cmd, workers.server);

  ServerCommand strategies;
  auto* strategies_cmd =
      app.add_subcommand("strategies", "The tasks and search strategies mltuned offers");
  strategies_cmd->add_flag("--json", strategies.json, "Print JSON");
  add_server(strategies_cmd, strategies.server);

  ServerCommand stats;
  auto* stats_cmd =
      app.add_subcommand("stats", "mltuned's queue, jobs, cache hit rate and store location");
  stats_cmd->add_flag("--json", stats.json, "Print JSON");
  add_server(stats_cmd, stats.server);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; any usage error exits 1 like every other failure.
    return app.exit(e) == 0 ? 0 : 1;
  }
  print.metadata = !no_metadata;

  if (*parse_cmd) return RunParse(parse, std::cout, std::cerr);
  if (*print_cmd) return RunPrint(print, std::cout, std::cerr);
  if (*eval_cmd) return RunEval(eval, std::cout, std::cerr);
  if (*fp_cmd) return RunFingerprint(fingerprint, std::cout, std::cerr);
  if (*passes_cmd) return RunListPasses(std::cout, std::cerr);
  if (*opt_cmd) return RunOpt(opt, std::cout, std::cerr);
  if (*simulate_cmd) return RunSimulate(simulate, std::cout, std::cerr);
  if (*synthesize_cmd) return RunSynthesize(synthesize, std::cout, std::cerr);
  if (*graph_cmd) return RunPartitionGraph(graph_gen, std::cout, std::cerr);
  if (*collect_cmd) {
    collect.live_progress = isatty(STDERR_FILENO);
    return RunCollect(collect, std::cout, std::cerr);
  }
#ifdef MLTUNE_FULL_CLI
  if (*search_cmd) return RunSearch(search, std::cout, std::cerr);
  if (*partition_cmd) return RunPartition(partition, std::cout, std::cerr);
  if (*run_cmd) return RunRun(run, std::cout, std::cerr);
  if (*train_cost_cmd) return RunTrainCostModel(train_cost, std::cout, std::cerr);
  if (*train_cmd) {
    train.live_progress = isatty(STDERR_FILENO);
    return RunTrainAgent(train, std::cout, std::cerr);
  }
#else
  // These load LibTorch: the lean front hands them to mltune-full, which parses them again.
  if (*search_cmd || *partition_cmd || *run_cmd || *train_cost_cmd || *train_cmd) {
    return ExecFullCli(argc, argv, std::cerr);
  }
#endif
  submit.progress = watch.progress = progress_style;
  if (*submit_cmd) return RunSubmit(submit, std::cout, std::cerr);
  if (*watch_cmd) return RunWatch(watch, std::cout, std::cerr);
  if (*result_cmd) return RunResult(result, std::cout, std::cerr);
  if (*lookup_cmd) return RunLookup(lookup, std::cout, std::cerr);
  if (*cancel_cmd) return RunCancel(cancel, std::cout, std::cerr);
  if (*workers_cmd) return RunWorkers(workers, std::cout, std::cerr);
  if (*strategies_cmd) return RunStrategies(strategies, std::cout, std::cerr);
  if (*stats_cmd) return RunStats(stats, std::cout, std::cerr);
  return 1;
}
