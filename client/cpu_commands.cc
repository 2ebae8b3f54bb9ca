// `mltune run FILE --target cpu` and `mltune search tile|fusion FILE --target cpu`: the CPU
// backend offline. The module goes through XLA's default CPU pipeline, is lowered to generated
// kernels, compiled (cached on disk) and run in the runner child; --check compares the results
// with the reference evaluator on the module as given.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/cpu_backend.h"
#include "client/cli_commands.h"
#include "client/load.h"
#include "costmodels/analytical/analytical.h"
#include "ir/evaluator/evaluator.h"
#include "nlohmann/json.hpp"
#include "optimizers/core/model_topk.h"
#include "optimizers/core/search.h"
#include "optimizers/fusion/cpu_fusion_problem.h"
#include "optimizers/guided/rankers.h"
#include "optimizers/guided/stored_cost_models.h"
#include "optimizers/tiling/confirm_tuned_kernels.h"
#include "optimizers/tiling/cpu_kernel_graph.h"
#include "optimizers/tiling/cpu_tile_problem.h"

namespace mltune::client {
namespace {

namespace cpu = backends::cpu;
using json = nlohmann::ordered_json;

std::string Ms(double s) { return absl::StrFormat("%.4g ms", s * 1e3); }

// Says how many elements matched only within their rounding spread, when any did.
std::string IllConditionedNote(int64_t elements) {
  if (elements == 0) return "";
  return absl::StrCat("; ", elements, " ill-conditioned element(s) only within ",
                      cpu::Tolerance{}.spread_factor,
                      "x how far rounding noise moves the evaluator");
}

std::string KernelCounts(const cpu::LoweredModule& lowered) {
  std::map<std::string, int> counts;
  for (const cpu::Kernel& k : lowered.kernels) ++counts[cpu::KernelKindName(k.kind)];
  std::vector<std::string> parts;
  for (const auto& [kind, n] : counts) parts.push_back(absl::StrCat(kind, " ", n));
  return absl::StrJoin(parts, ", ");
}

// Each kernel's time inside the module's run, slowest first, with its share of their sum, its key
// (the graph_key of the kernel's rows in a cost-model store) and, when given (one per kernel),
// what the fusion cost model predicts for it alone.
json PrintKernelTimes(const cpu::LoweredModule& lowered, const std::vector<double>& seconds,
                      const std::vector<double>& predicted, std::ostream& out) {
  json kernels = json::array();
  if (seconds.size() != lowered.kernels.size()) {
    out << "kernel times: none came back (" << seconds.size() << " for " << lowered.kernels.size()
        << " kernels)\n";
    return kernels;
  }
  double total = 0;
  for (double s : seconds) total += s;
  std::vector<size_t> order(seconds.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return seconds[a] > seconds[b]; });
  // Each matrix kernel's multiply-add flops (as 2): dots and convolutions are where real models
  // spend their time, and their rate against the machine's peak says how far a kernel is from
  // its limit.
  std::vector<double> matrix_flops(seconds.size(), 0);
  for (size_t i = 0; i < seconds.size(); ++i) {
    const cpu::Kernel& k = lowered.kernels[i];
    if (k.kind == cpu::KernelKind::kDot || k.kind == cpu::KernelKind::kConvolution) {
      matrix_flops[i] = costmodels::InstructionCost(*k.root).matrix_flops;
    }
  }
  double mm_flops = 0, mm_seconds = 0;
  for (size_t i = 0; i < seconds.size(); ++i) {
    if (matrix_flops[i] == 0) continue;
    mm_flops += matrix_flops[i];
    mm_seconds += seconds[i];
  }
  out << "kernel times inside the module's run (median; their sum " << Ms(total) << "):\n";
  if (mm_seconds > 0) {
    out << absl::StrFormat("  dots and convolutions: %s (%.1f%%), %.4g GFLOP at %.1f GFLOP/s\n",
                           Ms(mm_seconds), total > 0 ? 100 * mm_seconds / total : 0.0,
                           mm_flops * 1e-9, mm_flops * 1e-9 / mm_seconds);
  }
  const bool with_model = predicted.size() == seconds.size();
  out << absl::StrFormat("  %-28s %-10s %4s %12s %6s %8s %s %s\n", "kernel", "kind", "ops", "time",
                         "share", "GFLOP/s", with_model ? "   predicted" : "", "key");
  for (size_t i : order) {
    const cpu::Kernel& k = lowered.kernels[i];
    const std::string rate = matrix_flops[i] > 0 && seconds[i] > 0
                                 ? absl::StrFormat("%8.1f", matrix_flops[i] * 1e-9 / seconds[i])
                                 : absl::StrFormat("%8s", "-");
    absl::StatusOr<opt::tiling::CpuKernelFeatures> features =
        opt::tiling::CpuKernelFeaturesOf(lowered, k.id);
    const std::string key = features.ok() ? features->key : "";
    const bool has_prediction = with_model && std::isfinite(predicted[i]);
    const std::string prediction = !with_model ? ""
                                   : has_prediction
                                       ? absl::StrFormat(" %9.3f us", predicted[i] * 1e6)
                                       : absl::StrFormat(" %12s", "-");
    out << absl::StrFormat("  %-28s %-10s %4d %9.3f us %5.1f%% %s%s  %s\n", k.name,
                           cpu::KernelKindName(k.kind), k.members.size(), seconds[i] * 1e6,
                           total > 0 ? 100 * seconds[i] / total : 0.0, rate, prediction,
                           key.empty() ? "-" : key.substr(0, 16));
    json entry = {
        {"kernel", k.name},      {"kind", cpu::KernelKindName(k.kind)}, {"ops", k.members.size()},
        {"seconds", seconds[i]}, {"matrix_flops", matrix_flops[i]},     {"key", key}};
    if (has_prediction) entry["predicted_s"] = predicted[i];
    kernels.push_back(std::move(entry));
  }
  return kernels;
}

// Loads, verifies and runs the cpu pipeline; nullptr after printing the error.
std::unique_ptr<ir::Module> LoadForCpu(const std::string& file, const std::string& target,
                                       std::unique_ptr<ir::Module>* original, std::ostream& err) {
  if (target != "cpu") {
    err << "error: --target " << target
        << ": cpu and gpu run generated code (simulated targets: mltune simulate, or "
           "mltune submit to mltuned)\n";
    return nullptr;
  }
  *original = LoadVerified(file, err);
  if (*original == nullptr) return nullptr;
  absl::StatusOr<std::unique_ptr<ir::Module>> optimized = cpu::RunCpuPipeline(**original);
  if (!optimized.ok()) {
    err << "error: " << file << ": " << optimized.status().message() << "\n";
    return nullptr;
  }
  return *std::move(optimized);
}

cpu::MeasureOptions TimingOptions(int64_t repeat, int threads) {
  cpu::MeasureOptions m;
  m.threads = threads;
  if (repeat > 0) {
    m.min_reps = static_cast<int>(repeat);
    m.max_reps = static_cast<int>(repeat);
    m.max_seconds = 1e9;
  } else {
    m.max_seconds = 1.0;
  }
  return m;
}

// The tile search of `mltune run --tuned` and `mltune search tile`.
struct TileOutcome {
  std::vector<cpu::KernelConfig> configs;
  double default_seconds = 0, tuned_seconds = 0;  // summed kernel medians
  int64_t steps = 0, measurements = 0;
  // Kernels whose winner was measured again against the default; kernels set back to it.
  size_t confirmed = 0, reverted = 0;
};
// What `run --tuned` and `search tile` print about ConfirmWinners.
std::string ConfirmationText(const TileOutcome& t) {
  return absl::StrCat(t.confirmed, " kernel winner(s) measured again against the default; ",
                      t.reverted, " kernel(s) back to the default");
}
// The newest cost-model/<task>-cpu in the store at `db`, for model-topk.
absl::StatusOr<std::shared_ptr<const costmodels::learned::LearnedModel>> LoadCpuModel(
    const std::string& db, const std::string& task) {
  if (db.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "strategy model-topk ranks with a learned cost model: give --model-db STORE, a store "
        "holding ",
        opt::guided::CostModelName(task, "cpu"),
        " (mltune collect, then mltune train-cost-model)"));
  }
  absl::StatusOr<opt::guided::StoredCostModel> stored =
      opt::guided::LoadNewestCostModel(db, task, "cpu");
  if (!stored.ok()) return stored.status();
  return stored->model;
}

// `model_db` is read only for strategy model-topk.
absl::StatusOr<TileOutcome> TuneTiles(const cpu::LoweredModule& lowered,
                                      const std::string& strategy, int64_t budget, double seconds,
                                      uint64_t seed, int threads,
                                      const std::string& model_db = "") {
  const bool guided = strategy == opt::kModelTopK;
  absl::StatusOr<std::unique_ptr<opt::Strategy>> s =
      guided ? opt::CreateModelTopK() : opt::StrategyRegistry::Global().Create(strategy);
  if (!s.ok()) return s.status();
  std::shared_ptr<const costmodels::learned::LearnedModel> model;
  if (guided) {
    absl::StatusOr<std::shared_ptr<const costmodels::learned::LearnedModel>> loaded =
        LoadCpuModel(model_db, "tile");
    if (!loaded.ok()) return loaded.status();
    model = *std::move(loaded);
  }
  cpu::MeasureOptions measure;
  measure.threads = threads;
  measure.max_seconds = 0.05;
  const opt::tiling::CpuTileProblem::MeasureFn measure_kernel =
      [&](int32_t k, const cpu::KernelConfig& config) -> absl::StatusOr<double> {
    absl::StatusOr<cpu::Timing> t = cpu::MeasureKernel(lowered, k, config, {}, measure, seed);
    if (!t.ok()) return t.status();
    return t->median_s;
  };
  auto problem = std::make_unique<opt::tiling::CpuTileProblem>(lowered, measure_kernel);
  if (model != nullptr) problem->SetRanker(opt::guided::CpuTileRanker(model, lowered));
  TileOutcome out;
  out.default_seconds = problem->Evaluate(problem->DefaultCandidate());
  if (!std::isfinite(out.default_seconds)) {
    return absl::InternalError(absl::StrCat("the default kernels failed: ", problem->last_error()));
  }
  absl::StatusOr<opt::Result> r = (*s)->Search(*problem, opt::Budget(budget, seconds), seed);
  if (!r.ok()) return r.status();
  opt::Candidate best = r->best;
  if (!(r->best_score < out.default_seconds)) best = problem->DefaultCandidate();
  const opt::tiling::ConfirmedWinners confirmed =
      opt::tiling::ConfirmWinners(*problem, best, measure_kernel);
  best = confirmed.best;
  out.confirmed = confirmed.checks.size();
  out.reverted = confirmed.reverted.size();
  out.configs = problem->Decode(best);
  out.tuned_seconds = problem->Evaluate(best);
  out.steps = r->steps;
  out.measurements = problem->measurements();
  return out;
}

}  // namespace

int RunRun(const RunCommand& cmd, std::ostream& out, std::ostream& err) {
  if (!cmd.fill_elided.empty()) {
    uint64_t seed = 0;
    if (!absl::SimpleAtoi(cmd.fill_elided, &seed)) {
      err << "error: --fill-elided: expected a seed (an unsigned integer), got '" << cmd.fill_elided
          << "'\n";
      return 1;
    }
    SetFillElidedSeed(seed);
  }
  if (cmd.target == "gpu") return RunGpuRun(cmd, out, err);
  std::unique_ptr<ir::Module> original;
  std::unique_ptr<ir::Module> module = LoadForCpu(cmd.file, cmd.target, &original, err);
  if (module == nullptr) return 1;
  // A missing or unreadable model fails before anything is compiled or timed.
  std::optional<opt::guided::StoredCostModel> stored;
  if (!cmd.model_db.empty()) {
    absl::StatusOr<opt::guided::StoredCostModel> loaded =
        opt::guided::LoadNewestCostModel(cmd.model_db, "fusion", "cpu");
    if (!loaded.ok()) {
      err << "error: " << loaded.status().message() << "\n";
      return 1;
    }
    stored = *std::move(loaded);
  }
  absl::StatusOr<cpu::CompiledModule> compiled = cpu::CompileModule(*module);
  if (!compiled.ok()) {
    err << "error: " << compiled.status().message() << "\n";
    return 1;
  }
  json j;
  j["module"] = module->name();
  j["ops"] = compiled->lowered.graph.size();
  j["kernels"] = compiled->lowered.kernels.size();
  j["compile_s"] = compiled->object.compile_seconds;
  j["compile_cache_hit"] = compiled->object.cache_hit;
  j["compile_units"] = compiled->object.units;
  j["constants_bytes"] =
      compiled->program.constants != nullptr ? compiled->program.constants->size() : 0;
  out << "module " << module->name() << ": " << compiled->lowered.graph.size()
      << " ops after the cpu pipeline, " << compiled->lowered.kernels.size() << " kernels ("
      << KernelCounts(compiled->lowered) << ")\n";
  out << "compiled: "
      << (compiled->object.cache_hit ? "kernel cache hit"
                                     : absl::StrFormat("%.2f s", compiled->object.compile_seconds))
      << ", " << compiled->object.units << " translation unit"
      << (compiled->object.units == 1 ? "" : "s") << " (" << compiled->object.path << ")\n";
  if (!cmd.emit_source.empty()) {
    std::ofstream source(cmd.emit_source);
    source << compiled->program.source;
    if (!source.good()) {
      err << "error: cannot write " << cmd.emit_source << "\n";
      return 1;
    }
    out << "source: " << cmd.emit_source << "\n";
    if (compiled->program.constants != nullptr) {
      // The source names its large constants by offset into this segment (mltune-cpu-runner
      // --constants).
      const std::string segment = cmd.emit_source + ".constants";
      std::ofstream bytes(segment, std::ios::binary);
      bytes.write(compiled->program.constants->data(),
                  static_cast<std::streamsize>(compiled->program.constants->size()));
      if (!bytes.good()) {
        err << "error: cannot write " << segment << "\n";
        return 1;
      }
      out << "constants: " << segment << " (" << compiled->program.constants->size() << " bytes)\n";
    }
  }
  const cpu::MeasureOptions timing_options = TimingOptions(cmd.repeat, cmd.threads);
  int exit_code = 0;
  if (cmd.check) {
    int64_t ill_conditioned = 0;
    absl::Status s = cpu::CheckAgainstEvaluator(*original, *compiled, cmd.seed, timing_options, {},
                                                nullptr, &ill_conditioned);
    j["check"] = s.ok() ? "match" : std::string(s.message());
    j["check_ill_conditioned"] = ill_conditioned;
    if (s.ok()) {
      out << "check: matches the reference evaluator (seed " << cmd.seed << ")"
          << IllConditionedNote(ill_conditioned) << "\n";
    } else {
      out << "check: MISMATCH: " << s.message() << "\n";
      exit_code = 1;
    }
  }
  auto report = [&](const char* label, const cpu::CompiledModule& m) -> absl::StatusOr<double> {
    cpu::MeasureOptions options = timing_options;
    options.kernel_times = cmd.kernel_times;
    absl::StatusOr<cpu::Timing> t = cpu::Measure(m.object, m.program, cmd.seed, options);
    if (!t.ok()) return t.status();
    out << "latency (" << label << "): median " << Ms(t->median_s) << ", p25-p75 " << Ms(t->p25_s)
        << " - " << Ms(t->p75_s) << " (spread " << absl::StrFormat("%.1f%%", t->spread * 100)
        << "), " << t->samples << " samples of " << t->calls_per_sample << " call(s), "
        << cmd.threads << " thread(s)\n";
    j[label] = {{"median_s", t->median_s},
                {"p25_s", t->p25_s},
                {"p75_s", t->p75_s},
                {"spread", t->spread},
                {"samples", t->samples}};
    if (cmd.kernel_times) {
      std::vector<double> predicted;
      if (stored) {
        absl::StatusOr<std::vector<double>> p =
            opt::guided::CpuFusionKernelSeconds(*stored->model, m.lowered);
        if (!p.ok()) return p.status();
        predicted = *std::move(p);
      }
      j[label]["kernels"] = PrintKernelTimes(m.lowered, t->kernel_s, predicted, out);
    }
    return t->median_s;
  };
  absl::StatusOr<double> base = report("default kernels", *compiled);
  if (!base.ok()) {
    err << "error: " << base.status().message() << "\n";
    return 1;
  }
  if (stored) {
    // What the fusion cost model says of the same kernels: the default plan's kernels predicted
    // one by one (as collect measures them: alone, default parameters) and summed, as
    // model-topk ranks plans.
    const opt::fusion::CpuFusionProblem plans(compiled->lowered.graph, nullptr);
    absl::StatusOr<std::vector<double>> predicted =
        opt::guided::CpuFusionRanker(stored->model, *module)
            .rank({plans.Plan(plans.DefaultCandidate())});
    if (!predicted.ok() || predicted->size() != 1 || !std::isfinite(predicted->front())) {
      err << "error: the cost model cannot rank the default fusion: "
          << (predicted.ok() ? "no finite prediction" : predicted.status().message()) << "\n";
      return 1;
    }
    const std::string name = opt::guided::CostModelName("fusion", "cpu");
    out << "cost model: " << name << " v" << stored->version << " predicts "
        << Ms(predicted->front()) << " for the default fusion's kernels, each alone ("
        << absl::StrFormat("%.2fx", predicted->front() / *base) << " the measured median)\n";
    j["cost_model"] = {
        {"name", name}, {"version", stored->version}, {"predicted_s", predicted->front()}};
  }
  if (cmd.tuned) {
    absl::StatusOr<TileOutcome> tuned =
        TuneTiles(compiled->lowered, cmd.strategy, cmd.budget, 0, cmd.seed, cmd.threads);
    if (!tuned.ok()) {
      err << "error: tuning: " << tuned.status().message() << "\n";
      return 1;
    }
    absl::StatusOr<cpu::CompiledModule> best = cpu::CompileModule(*module, tuned->configs);
    if (!best.ok()) {
      err << "error: " << best.status().message() << "\n";
      return 1;
    }
    out << "tuned: " << cmd.strategy << ", " << tuned->steps << " steps, " << tuned->measurements
        << " kernel measurements; kernels alone " << Ms(tuned->default_seconds) << " -> "
        << Ms(tuned->tuned_seconds) << "\n";
    out << "confirmed: " << ConfirmationText(*tuned) << "\n";
    if (cmd.check) {
      int64_t ill_conditioned = 0;
      absl::Status s = cpu::CheckAgainstEvaluator(*original, *best, cmd.seed, timing_options, {},
                                                  nullptr, &ill_conditioned);
      if (!s.ok()) {
        out << "check (tuned): MISMATCH: " << s.message() << "\n";
        exit_code = 1;
      } else if (ill_conditioned > 0) {
        out << "check (tuned): matches" << IllConditionedNote(ill_conditioned) << "\n";
      }
    }
    absl::StatusOr<double> t = report("tuned kernels", *best);
    if (!t.ok()) {
      err << "error: " << t.status().message() << "\n";
      return 1;
    }
    out << "tuned vs default: " << absl::StrFormat("%+.1f%%", (*t / *base - 1) * 100) << "\n";
  }
  if (cmd.json) out << j.dump(1) << "\n";
  return exit_code;
}

int RunCpuSearch(const SearchCommand& cmd, std::ostream& out, std::ostream& err) {
  std::unique_ptr<ir::Module> original;
  std::unique_ptr<ir::Module> module = LoadForCpu(cmd.file, cmd.target, &original, err);
  if (module == nullptr) return 1;
  absl::StatusOr<cpu::LoweredModule> lowered = cpu::Lower(*module);
  if (!lowered.ok()) {
    err << "error: " << lowered.status().message() << "\n";
    return 1;
  }
  const cpu::MeasureOptions module_timing = TimingOptions(0, 1);
  auto module_seconds = [&](const std::vector<cpu::KernelConfig>& configs,
                            const costmodels::FusionPlan* plan) -> absl::StatusOr<double> {
    absl::StatusOr<cpu::Timing> t =
        cpu::MeasureModule(*module, configs, plan, module_timing, cmd.seed);
    if (!t.ok()) return t.status();
    return t->median_s;
  };
  if (cmd.problem == "tile") {
    absl::StatusOr<TileOutcome> tuned =
        TuneTiles(*lowered, cmd.strategy, cmd.budget, cmd.max_seconds, cmd.seed, 1, cmd.model_db);
    if (!tuned.ok()) {
      err << "error: " << tuned.status().message() << "\n";
      return 1;
    }
    out << "tile search on cpu: " << cmd.strategy << ", " << tuned->steps << " steps, "
        << tuned->measurements << " kernel measurements\n";
    out << absl::StrFormat("%-28s %-13s %s\n", "kernel", "kind", "tuned parameters");
    for (const cpu::Kernel& k : lowered->kernels) {
      std::vector<std::string> params;
      const cpu::KernelConfig& c = tuned->configs[static_cast<size_t>(k.id)];
      for (size_t p = 0; p < k.params.size(); ++p) {
        params.push_back(absl::StrCat(k.params[p].name, "=", c[p]));
      }
      out << absl::StrFormat("%-28s %-13s %s\n", k.name.substr(0, 28), cpu::KernelKindName(k.kind),
                             absl::StrJoin(params, " "));
    }
    out << "kernels alone: default " << Ms(tuned->default_seconds) << ", tuned "
        << Ms(tuned->tuned_seconds) << "\n";
    out << "confirmed: " << ConfirmationText(*tuned) << "\n";
    absl::StatusOr<double> d = module_seconds({}, nullptr);
    absl::StatusOr<double> t = module_seconds(tuned->configs, nullptr);
    if (d.ok() && t.ok()) {
      out << "whole module: default " << Ms(*d) << ", tuned " << Ms(*t) << " ("
          << absl::StrFormat("%+.1f%%", (*t / *d - 1) * 100) << ")\n";
    }
    return 0;
  }
  const bool guided = cmd.strategy == opt::kModelTopK;
  absl::StatusOr<std::unique_ptr<opt::Strategy>> strategy =
      guided ? opt::CreateModelTopK(opt::FusionModelTopKParams())
             : opt::StrategyRegistry::Global().Create(cmd.strategy);
  if (!strategy.ok()) {
    err << "error: " << strategy.status().message() << "\n";
    return 1;
  }
  // model-topk learns from each measured plan's kernel times (CpuFusionRanker's observe).
  cpu::MeasureOptions plan_timing = module_timing;
  plan_timing.kernel_times = guided;
  opt::fusion::CpuFusionProblem problem(
      lowered->graph,
      [&](const costmodels::FusionPlan& plan) -> absl::StatusOr<opt::fusion::PlanTiming> {
        absl::StatusOr<cpu::Timing> t =
            cpu::MeasureModule(*module, {}, &plan, plan_timing, cmd.seed);
        if (!t.ok()) return t.status();
        return opt::fusion::PlanTiming{t->median_s, t->kernel_s};
      });
  if (guided) {
    absl::StatusOr<std::shared_ptr<const costmodels::learned::LearnedModel>> model =
        LoadCpuModel(cmd.model_db, "fusion");
    if (!model.ok()) {
      err << "error: " << model.status().message() << "\n";
      return 1;
    }
    problem.SetRanker(opt::guided::CpuFusionRanker(*std::move(model), *module));
  }
  const double base = problem.Evaluate(problem.DefaultCandidate());
  if (!std::isfinite(base)) {
    err << "error: the default fusion failed: " << problem.last_error() << "\n";
    return 1;
  }
  const costmodels::FusionPlan unfused = costmodels::Unfused(problem.graph());
  absl::StatusOr<double> none = module_seconds({}, &unfused);
  absl::StatusOr<opt::Result> r =
      (*strategy)->Search(problem, opt::Budget(cmd.budget, cmd.max_seconds), cmd.seed);
  if (!r.ok()) {
    err << "error: " << r.status().message() << "\n";
    return 1;
  }
  const double best = std::min(base, r->best_score);
  const costmodels::FusionPlan plan =
      problem.Plan(r->best_score < base ? r->best : problem.DefaultCandidate());
  out << "fusion search on cpu: " << cmd.strategy << ", " << r->steps << " steps, "
      << problem.measurements() << " module measurements\n";
  if (none.ok())
    out << "  no fusion        " << Ms(*none) << "  (" << problem.graph().size() << " kernels)\n";
  out << "  default fusion   " << Ms(base) << "  ("
      << costmodels::PlanFusion(problem.graph()).size() << " kernels)\n";
  out << "  best found       " << Ms(best) << "  (" << plan.size() << " kernels, "
      << absl::StrFormat("%+.1f%%", (best / base - 1) * 100) << " vs default)\n";
  return 0;
}

}  // namespace mltune::client
