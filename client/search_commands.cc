// `mltune search pass-order`: searches pass orders with a strategy from optimizers/core and
// compares the best order's op count (or, with --score latency, its measured latency on the CPU
// backend) with XLA's default pipeline on the same module.
#include <chrono>
#include <ostream>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/cli_commands.h"
#include "client/load.h"
#include "ir/ir.h"
#include "optimizers/core/search.h"
#include "optimizers/pass_order/cpu_latency.h"
#include "optimizers/pass_order/pass_order.h"
#include "passes/default_pipelines.h"

namespace mltune::client {
namespace {

// Seconds in the unit that keeps three significant digits readable.
std::string FormatSeconds(double s) {
  if (s >= 1) return absl::StrFormat("%.3g s", s);
  if (s >= 1e-3) return absl::StrFormat("%.3g ms", s * 1e3);
  return absl::StrFormat("%.3g us", s * 1e6);
}

}  // namespace

absl::StatusOr<int64_t> DefaultPipelineOpCount(const ir::Module& module, const std::string& target,
                                               double* ms) {
  std::unique_ptr<passes::Pipeline> pipeline = passes::MakeDefaultPipeline(target);
  if (pipeline == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown target '", target, "' (expected cpu or gpu)"));
  }
  std::unique_ptr<ir::Module> copy = module.Clone();
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<bool> changed = pipeline->Run(*copy);
  if (ms != nullptr) {
    *ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  }
  if (!changed.ok()) return changed.status();
  return opt::pass_order::OpCount(*copy);
}

int RunSearch(const SearchCommand& cmd, std::ostream& out, std::ostream& err) {
  if (cmd.problem == "tile" || cmd.problem == "fusion") return RunCpuSearch(cmd, out, err);
  if (cmd.problem != "pass-order") {
    err << "error: unknown search problem '" << cmd.problem
        << "' (available: pass-order, tile, fusion)\n";
    return 1;
  }
  std::unique_ptr<ir::Module> module = LoadVerified(cmd.file, err);
  if (module == nullptr) return 1;
  absl::StatusOr<std::unique_ptr<opt::Strategy>> strategy =
      opt::StrategyRegistry::Global().Create(cmd.strategy);
  if (!strategy.ok()) {
    err << "error: " << strategy.status().message()
        << " (available: " << absl::StrJoin(opt::StrategyRegistry::Global().Names(), ", ") << ")\n";
    return 1;
  }
  if (cmd.score != "op-count" && cmd.score != "latency") {
    err << "error: --score " << cmd.score << ": expected op-count or latency\n";
    return 1;
  }
  const bool by_latency = cmd.score == "latency";
  if (by_latency && cmd.target != "cpu") {
    err << "error: --score latency measures the CPU backend's code: --target cpu only\n";
    return 1;
  }
  if (by_latency && !(cmd.measure_seconds > 0)) {
    err << "error: --measure-seconds must be > 0\n";
    return 1;
  }
  opt::pass_order::PassOrderOptions options;
  options.episode_length = cmd.max_length;
  if (cmd.warm_start) options.seed_pipeline = cmd.target;
  std::shared_ptr<opt::pass_order::CpuLatencyScorer> latency;
  if (by_latency) {
    if (absl::Status s = opt::pass_order::CheckLatencyScorable(*module); !s.ok()) {
      err << "error: " << s.message() << "\n";
      return 1;
    }
    opt::pass_order::CpuLatencyOptions latency_options;
    latency_options.measure = opt::pass_order::LatencyMeasureOptions(cmd.measure_seconds);
    latency_options.seed = cmd.seed;
    latency = std::make_shared<opt::pass_order::CpuLatencyScorer>(latency_options);
    options.cost_model = opt::pass_order::LatencyScoreFn(latency);
  }
  absl::StatusOr<std::unique_ptr<opt::pass_order::PassOrderProblem>> problem =
      opt::pass_order::PassOrderProblem::Create(*module, options);
  if (!problem.ok()) {
    err << "error: " << problem.status().message() << "\n";
    return 1;
  }
  double default_ms = 0;
  absl::StatusOr<int64_t> default_ops = DefaultPipelineOpCount(*module, cmd.target, &default_ms);
  if (!default_ops.ok()) {
    err << "error: default pipeline: " << default_ops.status().message() << "\n";
    return 1;
  }
  double default_seconds = 0;
  if (by_latency) {
    absl::StatusOr<double> s = opt::pass_order::DefaultCpuPipelineLatency(*module, *latency);
    if (!s.ok()) {
      err << "error: " << s.status().message() << "\n";
      return 1;
    }
    default_seconds = *s;
  }
  opt::Budget budget;
  budget.max_steps = cmd.budget;
  budget.max_seconds = cmd.max_seconds;
  absl::StatusOr<opt::Result> result = (*strategy)->Search(**problem, budget, cmd.seed);
  if (!result.ok()) {
    err << "error: search: " << result.status().message() << "\n";
    return 1;
  }
  const int64_t original = (*problem)->initial_op_count();
  std::unique_ptr<ir::Module> best = (*problem)->Apply(result->best);
  const int64_t tuned = opt::pass_order::OpCount(*best);
  const std::vector<std::string> names = (*problem)->PassNames(result->best);
  auto pct = [](int64_t from, int64_t to) { return from ? 100.0 * (from - to) / from : 0.0; };

  out << absl::StrFormat("module %s, strategy %s, budget %d steps (used %d in %.2f s), seed %d\n",
                         module->name(), cmd.strategy, cmd.budget, result->steps, result->seconds,
                         cmd.seed);
  out << absl::StrFormat("  original op count         %8d\n", original);
  out << absl::StrFormat("  XLA default (%s) order    %8d  (-%.1f%%, %.1f ms)\n", cmd.target,
                         *default_ops, pct(original, *default_ops), default_ms);
  out << absl::StrFormat("  best order found          %8d  (-%.1f%%)\n", tuned,
                         pct(original, tuned));
  out << absl::StrFormat("  vs the default order      %+7.1f%% op count\n",
                         *default_ops ? 100.0 * (tuned - *default_ops) / *default_ops : 0.0);
  if (by_latency) {
    const opt::pass_order::CpuLatencyStats st = latency->stats();
    const double original_s = (*problem)->initial_score();
    const double tuned_s = latency->Score(*best);
    out << absl::StrFormat(
        "  measured latency (cpu backend, 1 thread, <= %g s of runs each): original %s, XLA "
        "default %s, best %s (%+.1f%% vs the default)\n",
        cmd.measure_seconds, FormatSeconds(original_s), FormatSeconds(default_seconds),
        FormatSeconds(tuned_s), 100.0 * (tuned_s - default_seconds) / default_seconds);
    out << absl::StrFormat(
        "  %d distinct modules compiled and timed (%d repeats answered from the memo, %d not "
        "lowerable, %d failed); compile %.1f s, runs %.1f s\n",
        st.measured, st.memo_hits, st.unsupported, st.failed, st.compile_seconds,
        st.measure_seconds);
    if (!latency->first_error().empty()) {
      out << "  first invalid candidate: " << latency->first_error() << "\n";
    }
  }
  out << absl::StrFormat("best sequence (%d passes): %s\n", names.size(),
                         names.empty() ? "(none)" : absl::StrJoin(names, ","));
  absl::Status verified = ir::VerifyModule(*best);
  if (!verified.ok()) {
    err << "error: the best module does not verify: " << verified.message() << "\n";
    return 1;
  }
  if (!cmd.output.empty() && !WriteModule(*best, cmd.output, out, err)) return 1;
  return 0;
}

}  // namespace mltune::client
