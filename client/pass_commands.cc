// `mltune passes` and `mltune opt`: the pass library and running pipelines on a file.
#include <algorithm>
#include <chrono>
#include <optional>
#include <ostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/cli_commands.h"
#include "client/load.h"
#include "ir/evaluator/compare.h"
#include "ir/evaluator/evaluator.h"
#include "ir/ir.h"
#include "optimizers/pass_order/observation.h"
#include "passes/default_pipelines.h"
#include "passes/registry.h"

namespace mltune::client {

int RunListPasses(std::ostream& out, std::ostream& /*err*/) {
  const passes::Registry& registry = passes::Registry::Global();
  const auto infos = registry.List();
  out << absl::StrFormat("%d passes (XLA names; use with `mltune opt --passes a,b,c`):\n",
                         infos.size());
  for (const passes::PassInfo* info : infos) {
    out << absl::StrFormat("  %-36s %s\n", info->name, info->description);
  }
  for (const auto& [alias, name] : registry.Aliases()) {
    out << absl::StrFormat("  %-36s alias of %s\n", alias, name);
  }
  for (const std::string& target : passes::DefaultPipelineTargets()) {
    const std::vector<std::string> missing = passes::MissingDefaultPipelinePasses(target);
    out << absl::StrFormat("default pipeline '%s': %d pass runs", target,
                           passes::DefaultPipelinePassNames(target).size());
    if (!missing.empty()) {
      out << absl::StrFormat(", not yet in the library (skipped): %s",
                             absl::StrJoin(missing, ", "));
    }
    out << "\n";
  }
  return 0;
}

}  // namespace mltune::client

namespace mltune::client {
namespace {

using Clock = std::chrono::steady_clock;

absl::StatusOr<std::unique_ptr<passes::Pipeline>> BuildPipeline(const OptCommand& cmd,
                                                                std::ostream& out) {
  if (!cmd.pipeline.empty() && !cmd.passes.empty()) {
    return absl::InvalidArgumentError("give either --pipeline or --passes, not both");
  }
  if (!cmd.pipeline.empty()) {
    std::vector<std::string> skipped;
    std::unique_ptr<passes::Pipeline> p = passes::MakeDefaultPipeline(cmd.pipeline, &skipped);
    if (p == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown pipeline '", cmd.pipeline, "' (expected cpu or gpu)"));
    }
    if (!skipped.empty()) {
      out << absl::StrFormat("note: %d pipeline passes not in the library yet were skipped\n",
                             skipped.size());
    }
    return p;
  }
  if (cmd.passes.empty()) return absl::InvalidArgumentError("give --pipeline or --passes");
  auto p = std::make_unique<passes::Pipeline>("passes");
  for (const std::string& name : cmd.passes) {
    absl::StatusOr<std::unique_ptr<passes::Pass>> pass = passes::Registry::Global().Create(name);
    if (!pass.ok()) return pass.status();
    p->Add(*std::move(pass));
  }
  return p;
}

// Slowest first, as LLVM's -time-passes prints them.
void PrintPassTimings(const passes::PassTimings& timings, std::ostream& out) {
  std::vector<std::pair<std::string, passes::PassTimings::Entry>> rows(timings.by_pass.begin(),
                                                                       timings.by_pass.end());
  std::sort(rows.begin(), rows.end(),
            [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
  double total = 0;
  for (const auto& row : rows) total += row.second.seconds;
  out << absl::StrFormat("%-36s %6s %8s %10s %6s\n", "pass", "runs", "changed", "ms", "%");
  for (const auto& [name, e] : rows) {
    out << absl::StrFormat("%-36s %6d %8d %10.2f %5.1f%%\n", name, e.runs, e.changed,
                           1e3 * e.seconds, total > 0 ? 100 * e.seconds / total : 0.0);
  }
  out << absl::StrFormat("%-36s %6s %8s %10.2f\n", "total", "", "", 1e3 * total);
}

}  // namespace

int RunOpt(const OptCommand& cmd, std::ostream& out, std::ostream& err) {
  std::unique_ptr<ir::Module> module = LoadVerified(cmd.file, err);
  if (module == nullptr) return 1;
  absl::StatusOr<std::unique_ptr<passes::Pipeline>> pipeline = BuildPipeline(cmd, out);
  if (!pipeline.ok()) {
    err << "error: " << pipeline.status().message() << "\n";
    return 1;
  }
  // The untouched module is only needed to compare results.
  std::unique_ptr<ir::Module> original = cmd.verify ? module->Clone() : nullptr;
  const int64_t before = opt::pass_order::OpCount(*module);
  passes::PassTimings timings;
  const auto start = Clock::now();
  absl::StatusOr<bool> changed = [&] {
    std::optional<passes::ScopedPassTimings> scope;
    if (cmd.time_passes) scope.emplace(&timings);
    return (*pipeline)->Run(*module);
  }();
  const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (!changed.ok()) {
    err << "error: " << cmd.file << ": " << changed.status().message() << "\n";
    return 1;
  }
  absl::Status verified = ir::VerifyModule(*module);
  if (!verified.ok()) {
    err << "error: the optimized module does not verify: " << verified.message() << "\n";
    return 1;
  }
  const int64_t after = opt::pass_order::OpCount(*module);
  out << absl::StrFormat("%s: op count %d -> %d (%+.1f%%) in %.1f ms\n", module->name(), before,
                         after, before ? 100.0 * (after - before) / before : 0.0, ms);
  if (cmd.time_passes) PrintPassTimings(timings, out);
  if (cmd.verify) {
    constexpr int kSeeds = 3;
    double max_abs = 0, max_rel = 0;
    int64_t violations = 0;
    for (int seed = 1; seed <= kSeeds; ++seed) {
      absl::StatusOr<std::vector<ir::Literal>> args = ir::MakeRandomArguments(*original, seed);
      absl::StatusOr<ir::Literal> want =
          args.ok() ? ir::Evaluate(*original, *args) : absl::StatusOr<ir::Literal>(args.status());
      if (!want.ok()) {
        out << "verify: skipped, the original cannot be evaluated: " << want.status().message()
            << "\n";
        break;
      }
      absl::StatusOr<ir::Literal> got = ir::Evaluate(*module, *args);
      if (!got.ok()) {
        err << "error: the optimized module no longer evaluates: " << got.status().message()
            << "\n";
        return 1;
      }
      ir::LiteralDifference d = ir::CompareLiterals(*want, *got);
      max_abs = std::max(max_abs, d.max_abs);
      max_rel = std::max(max_rel, d.max_rel);
      violations += d.violations;
      if (seed == kSeeds) {
        out << absl::StrFormat(
            "verify: %d random input sets, largest difference %.3g absolute, %.3g relative; %d "
            "elements outside tolerance\n",
            kSeeds, max_abs, max_rel, violations);
      }
    }
    if (violations > 0) return 1;
  }
  if (!cmd.output.empty() && !WriteModule(*module, cmd.output, out, err)) return 1;
  return 0;
}

}  // namespace mltune::client
