// The `mltune` CLI's offline subcommands, callable without a process so tests can drive them.
// Each writes its result to `out`, errors to `err`, and returns the process exit code.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "optimizers/cost_model_data/collect.h"
#include "optimizers/cost_model_training/train_cost_model.h"

namespace mltune::storage {
class Store;
}

namespace mltune::client {

struct ParseCommand {
  std::string file;
  bool json = false;
};
int RunParse(const ParseCommand& cmd, std::ostream& out, std::ostream& err);

struct PrintCommand {
  std::string file;
  bool metadata = true;
  bool operand_shapes = false;
};
int RunPrint(const PrintCommand& cmd, std::ostream& out, std::ostream& err);

struct EvalCommand {
  std::string file;
  uint64_t seed = 0;
  bool json = false;
};
int RunEval(const EvalCommand& cmd, std::ostream& out, std::ostream& err);

struct FingerprintCommand {
  std::string file;
};
int RunFingerprint(const FingerprintCommand& cmd, std::ostream& out, std::ostream& err);

struct OptCommand {
  std::string file;
  std::string pipeline;             // "cpu" or "gpu"; exclusive with `passes`
  std::vector<std::string> passes;  // explicit pass names, in order
  std::string output;               // write the optimized module here ("" = don't)
  bool verify = false;              // evaluate before and after and report the difference
  bool time_passes = false;         // print each pass's total time and change count
};
// `mltune opt`: runs a default pipeline or a pass list; prints op counts before and after.
int RunOpt(const OptCommand& cmd, std::ostream& out, std::ostream& err);

struct SearchCommand {
  std::string problem = "pass-order";
  std::string file;
  std::string strategy = "greedy";
  int64_t budget = 1000;   // environment steps (one pass application each)
  double max_seconds = 0;  // 0: no time limit
  uint64_t seed = 0;
  int64_t max_length = 40;     // longest pass sequence
  std::string target = "cpu";  // whose default pipeline is the baseline
  bool warm_start = true;      // start from the default pipeline's order
  // pass-order: "op-count", or "latency" (the CPU backend's measured seconds; --target cpu).
  std::string score = "op-count";
  double measure_seconds = 0.1;  // score latency: timed runs per candidate, at most
  std::string output;
  // tile on cpu with strategy model-topk: the store holding cost-model/tile-cpu.
  std::string model_db;
};
// `mltune search pass-order`: best pass order found within the budget, against XLA's default.
// `mltune search tile|fusion --target cpu`: the CPU backend's kernel parameters or fusion
// priorities, measured (RunCpuSearch, cpu_commands.cc).
int RunSearch(const SearchCommand& cmd, std::ostream& out, std::ostream& err);
int RunCpuSearch(const SearchCommand& cmd, std::ostream& out, std::ostream& err);

struct RunCommand {
  std::string file;
  std::string target = "cpu";
  bool check = false;  // compare with the reference evaluator; exit 1 on a mismatch
  int64_t repeat = 0;  // timed samples (0: until the spread is small, at most 1 s)
  bool tuned = false;  // also tune the kernels' parameters and time the tuned module
  std::string strategy = "annealing";
  int64_t budget = 32;  // tuning steps
  uint64_t seed = 0;    // inputs and search
  int threads = 1;
  bool json = false;
  std::string emit_source;  // write the generated C++ of the (untuned) module here
  // A store holding cost-model/fusion-cpu: also print the model's predicted time of the default
  // fusion's kernels next to the measured one.
  std::string model_db;
  // Also time each kernel inside the module's run (the profiled entry) and list them.
  bool kernel_times = false;
  std::string arch;  // --target gpu: the PTX's architecture ("": the device's, else sm_90)
  // --target gpu: run the program on the host through mltune-gpu-emulator and check it (no GPU
  // needed, nothing timed).
  bool emulate = false;
  // A seed to fill elided constants (constant({...})) with (ir::FillElidedConstants); "": none.
  std::string fill_elided;
};
// `mltune run`: compiles the module for the CPU (generated kernels), runs it, optionally checks it
// against the evaluator, and prints its latency (median and spread).
int RunRun(const RunCommand& cmd, std::ostream& out, std::ostream& err);
// `mltune run --target gpu` (gpu_run.cc): the same on the attached GPU (generated CUDA).
int RunGpuRun(const RunCommand& cmd, std::ostream& out, std::ostream& err);

struct SynthesizeCommand {
  std::string out;  // folder the programs are written to
  int64_t count = 100;
  uint64_t seed = 0;  // program i has seed + i
  int max_blocks = 4;
  int64_t max_elements = int64_t{1} << 20;
  int64_t max_flops = int64_t{1} << 28;
  std::vector<std::string> blocks;  // empty: every block (costmodels::synthetic)
};
// `mltune synthesize`: random ML-shaped HLO programs (costmodels/synthetic), each verified, as
// synthetic_<seed>.hlo files: training data for `mltune collect` beyond the corpus.
int RunSynthesize(const SynthesizeCommand& cmd, std::ostream& out, std::ostream& err);

struct PartitionGraphCommand {
  std::string out;  // the graph file (.json, the dnn-partitioning format)
  // A module (HLO text, or gzipped): its op graph with CPU-roofline costs; "" = a random layered
  // DAG of `nodes`.
  std::string hlo;
  int32_t microbatches = 1;  // --hlo: copies of the step, weights shared (GPipe's microbatches)
  int32_t nodes = 10000;     // random: the node count, and its shape:
  int32_t width = 32;
  int32_t fan_in = 3;
  int32_t reach = 3;
  double cpu_only = 0;
  double colocated = 0;
  uint64_t seed = 0;
  int32_t accelerators = 8;
  double memory_slack = 1.5;  // each accelerator holds slack x the graph's bytes / accelerators
  double link_gbps = 40;      // --hlo: GB/s an output moves at between devices
};
// `mltune partition-graph`: writes a graph for `mltune partition` (and bench/go_bench --large),
// from a module's op graph or at random, of any size.
int RunPartitionGraph(const PartitionGraphCommand& cmd, std::ostream& out, std::ostream& err);

struct SimulateCommand {
  std::string file;
  std::string target;     // a spec name, or a simulated worker's name (tpu-sim, mcm-sim, ...)
  int64_t top = 10;       // tpu targets: kernels listed, slowest first (0 = all)
  bool json = false;      // one JSON object instead of the tables
  std::string specs_dir;  // more target specs (*.json), as mltuned's --specs-dir
};
// `mltune simulate`: what the simulated worker of the target's kind (tpu-sim, mcm-sim,
// cluster-sim) says about the module's entry computation with the compiler's default decisions:
// kernel times, a pipeline partition's stages, or a placement's makespan.
int RunSimulate(const SimulateCommand& cmd, std::ostream& out, std::ostream& err);

struct PartitionCommand {
  std::string graph;      // a dnn-partitioning graph (.json) or an HLO module (anything else)
  std::string objective;  // graphs: throughput or latency (required); modules: the makespan
  // "" = go when --model is given or the pretrained partition/go checkpoint exists, else
  // local-search (graphs) or annealing (modules).
  std::string strategy;
  int64_t budget = 0;  // evaluations; 0 = the strategy's (search 1000, go 16, local-search none)
  // Wall-clock seconds for the iterative strategies (0: none); with --budget, whichever ends
  // first. One-shot strategies and GO's first decision ignore it.
  double seconds = 0;
  uint64_t seed = 0;
  bool json = false;
  std::string out;         // write the split (graphs) or the placement (modules) here
  std::string model;       // go: the checkpoint ("" = the pretrained partition/go)
  bool fine_tune = false;  // go: train on this graph with what is left of the budget
  // go: refine the best of the baselines (m-ETF, contiguous, METIS) rather than start from
  // nothing; each is one of the budget's samples.
  bool warm_start = true;
  // go on graphs with --seconds: the policy gets half the time left after its warm starts, a
  // descent from its split (local search's move, as dp-descent's from the DP's) the rest.
  bool refine = true;
  std::string evaluate;  // graphs: score this split file instead of searching
  std::string target;    // modules: a gpu-cluster, cpu-cluster or mcm target ("" = gpu-4x-nvlink)
  // Modules on a cluster: place the CPU worker's kernels, each costed by its time measured on
  // this host (backends/cpu MeasuredKernelGraph), not the module's ops by the roofline.
  bool measured = false;
  // Graphs, solver-backed strategies and go-fix/go-sample: each accelerator's classes a
  // contiguous piece (no class feeds a lower-numbered accelerator).
  bool contiguous = false;
};
// `mltune partition`: the best split of a dnn-partitioning graph a baseline, search strategy or
// the GO policy finds under the throughput or latency objective, or the score of a given split;
// for an HLO module, a placement of its ops on a cluster-sim target by simulated makespan. Prints
// the one-accelerator (one-device) and m-ETF values for reference.
int RunPartition(const PartitionCommand& cmd, std::ostream& out, std::ostream& err);

// `mltune passes`: every registered pass with its one-line description.
int RunListPasses(std::ostream& out, std::ostream& err);

// `mltune collect`: the library's options (optimizers/cost_model_data/collect.h), each a flag of
// the same name; --target also takes the simulators' names (tpu-sim).
using CollectCommand = opt::cost_model_data::CollectOptions;
int RunCollect(const CollectCommand& cmd, std::ostream& out, std::ostream& err);

struct TrainAgentCommand {
  std::string task = "pass-order";  // pass-order; go: partition or placement
  std::vector<std::string> graphs;  // HLO files, or folders searched recursively
  std::string algo;                 // ppo, dqn, maxq or go
  std::string encoder = "mlp";      // mlp or gnn
  int episodes = 200;
  int episode_length = 20;
  uint64_t seed = 0;
  int eval_every = 25;    // episodes; 0 = only the final evaluation
  double holdout = 0.25;  // fraction of the graphs held out for evaluation, in [0, 1)
  int64_t min_ops = 50;   // smaller graphs are skipped
  std::string store = "./var/mltune.db";
  bool no_store = false;
  std::string csv;             // training curve as CSV ("" = don't)
  std::string svg;             // training curve as an SVG plot ("" = don't)
  bool live_progress = false;  // one progress line redrawn with '\r' (a terminal), else lines
  // --algo go: graph families held out (evaluated every eval_every iterations), the cluster-sim
  // target HLO ops are timed on, the largest module trained on, a copy of the checkpoint.
  std::vector<std::string> holdout_families;
  std::string target = "gpu-4x-nvlink";
  int64_t max_units = 3000;
  int64_t imitation = 0;  // imitation iterations before PPO
  std::string out;
};
// `mltune train-agent`: trains an RL agent (optimizers/rl) on a set of graphs with a held-out
// split, evaluates it against the start and XLA's default CPU pipeline, writes the training curve
// and stores the checkpoint as the next version of `pass-order/rl-<algo>`.
int RunTrainAgent(const TrainAgentCommand& cmd, std::ostream& out, std::ostream& err);
// The store `train-agent` writes its checkpoint to, opened before training so an unwritable one
// fails at once: nullptr with --no-store; false, after saying why on `err`, when it cannot open.
bool OpenTrainAgentStore(const TrainAgentCommand& cmd, std::unique_ptr<storage::Store>* store,
                         std::ostream& err);
// `mltune train-agent --algo go` (RunTrainAgent hands it over): the GO policy across graphs,
// stored as the next version of `partition/go`.
int RunTrainGoAgent(const TrainAgentCommand& cmd, std::ostream& out, std::ostream& err);

// `mltune train-cost-model`: the library's options (optimizers/cost_model_training/
// train_cost_model.h), each a flag of the same name, and where to draw the training curve.
struct TrainCostModelCommand : opt::cost_model_training::TrainingOptions {
  std::string svg;  // the final training's loss per epoch as an SVG plot ("" = don't)
};
// `mltune train-cost-model`: trains the learned cost model on the store's <task>-kernel
// measurements and kernel graphs, prints the paper's metrics on a random split of kernels and on
// held-out programs next to the baselines (tile: the default configuration and the analytical
// tile model, ranking APE; fusion: the analytical roofline, runtime MAPE), then trains on all of
// them and stores the checkpoint as the next version of `cost-model/<task>-<target>` (tpu-sim
// resolved to its spec name, as collect logs it).
int RunTrainCostModel(const TrainCostModelCommand& cmd, std::ostream& out, std::ostream& err);

}  // namespace mltune::client
