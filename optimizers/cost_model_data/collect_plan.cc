#include "optimizers/cost_model_data/collect_plan.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ostream>
#include <unordered_set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "costmodels/features/kernel_graph.h"

namespace mltune::opt::cost_model_data {
namespace {

using Clock = std::chrono::steady_clock;
constexpr char kWorker[] = "mltune-collect";

}  // namespace

std::string AnalyticalTask(const std::string& log_task) {
  return absl::StrCat(log_task, "-analytical");
}

std::unique_ptr<ir::Module> LoadNoting(const ir::HloFile& file, std::ostream& err) {
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::LoadVerifiedHlo(file.path);
  if (!module.ok()) {
    err << "error: " << module.status().message() << "\n";
    return nullptr;
  }
  return *std::move(module);
}

uint64_t MixSeed(uint64_t seed, const std::string& hex) {
  return seed ^ std::strtoull(hex.substr(0, 16).c_str(), nullptr, 16);
}

absl::Status RunCollectPlan(const CollectOptions& cmd, CollectPlan& plan, storage::Store& store,
                            std::ostream& out, std::ostream& err) {
  // What the log already holds: "key\nconfiguration" pairs, and bare keys for once-per-kernel.
  storage::MeasurementFilter filter;
  filter.task = plan.log_task;
  filter.target = plan.target;
  absl::StatusOr<std::vector<storage::MeasurementRecord>> logged = store.QueryMeasurements(filter);
  if (!logged.ok()) return logged.status();
  std::unordered_set<std::string> done;
  for (const storage::MeasurementRecord& m : *logged) {
    done.insert(plan.once_per_kernel ? m.graph_key
                                     : absl::StrCat(m.graph_key, "\n", m.configuration));
  }

  const int64_t total = static_cast<int64_t>(plan.kernels.size());
  const Clock::time_point start = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  int64_t kernels_done = 0, measured = 0, skipped = 0, failed = 0, graphs = 0;
  bool out_of_time = false;
  Clock::time_point last_line = start;
  auto progress = [&](bool final) {
    const std::string line =
        absl::StrFormat("collect: kernels %d/%d, %d measured, %d already logged, %d failed, %.1f s",
                        kernels_done, total, measured, skipped, failed, elapsed());
    if (cmd.live_progress) {
      err << "\r" << line << (final ? "\n" : "") << std::flush;
    } else {
      err << line << "\n";
    }
    last_line = Clock::now();
  };

  const int rounds = std::max(1, plan.rounds);
  auto time_is_up = [&] { return cmd.seconds > 0 && elapsed() >= cmd.seconds; };
  auto put_graph = [&](const KernelPlan& k) -> absl::Status {
    absl::StatusOr<bool> put =
        store.PutKernelGraph(k.graph, costmodels::features::IsCurrentKernelGraph);
    if (!put.ok()) return put.status();
    graphs += *put ? 1 : 0;
    return absl::OkStatus();
  };
  // A trial's entry in `done`.
  auto trial_id = [&](const KernelPlan& k, const Trial& trial) {
    return plan.once_per_kernel ? k.graph.kernel_key
                                : absl::StrCat(k.graph.kernel_key, "\n", trial.configuration);
  };
  // First the kernels logged before: a stored graph this build cannot read (an older feature
  // set) is replaced, so a rerun over the same files refreshes a store after a feature change
  // without measuring again, whatever the time limit leaves of the run.
  std::unordered_set<const KernelPlan*> graph_in_store;
  for (const KernelPlan& k : plan.kernels) {
    if (std::any_of(k.trials.begin(), k.trials.end(),
                    [&](const Trial& t) { return done.count(trial_id(k, t)) != 0; })) {
      if (absl::Status s = put_graph(k); !s.ok()) return s;
      graph_in_store.insert(&k);
    }
  }
  for (KernelPlan& k : plan.kernels) {
    if (out_of_time) break;
    // Round one: every trial the log lacks. `taken` holds the indices that measured, `best`
    // their fastest so far.
    std::vector<size_t> taken;
    std::vector<Measured> best;
    bool graph_stored = graph_in_store.count(&k) != 0;
    for (size_t i = 0; i < k.trials.size(); ++i) {
      const Trial& trial = k.trials[i];
      const std::string id = trial_id(k, trial);
      if (done.count(id) != 0) {
        ++skipped;
        continue;
      }
      if (time_is_up()) {
        out_of_time = true;
        break;
      }
      // The graph goes in before its first measurement, so every logged row has one.
      if (!graph_stored) {
        if (absl::Status s = put_graph(k); !s.ok()) return s;
        graph_stored = true;
      }
      absl::StatusOr<Measured> m = trial.measure();
      if (!m.ok()) {
        err << k.label << " [" << trial.configuration << "]: " << m.status().message() << "\n";
        ++failed;
        continue;
      }
      done.insert(id);
      taken.push_back(i);
      best.push_back(*m);
    }
    // Later rounds run the other way each time, so no trial always follows the same neighbour
    // (whose caches and clock it would inherit). A failure here keeps the earlier rounds' time.
    for (int round = 1; round < rounds && !out_of_time && !taken.empty(); ++round) {
      for (size_t j = 0; j < taken.size(); ++j) {
        const size_t at = round % 2 == 1 ? taken.size() - 1 - j : j;
        if (time_is_up()) {
          out_of_time = true;
          break;
        }
        const Trial& trial = k.trials[taken[at]];
        absl::StatusOr<Measured> m = trial.measure();
        if (!m.ok()) {
          err << k.label << " [" << trial.configuration << "], round " << round + 1 << ": "
              << m.status().message() << "\n";
          continue;
        }
        best[at].seconds = std::min(best[at].seconds, m->seconds);
      }
    }
    std::vector<storage::MeasurementRecord> rows;
    for (size_t j = 0; j < taken.size(); ++j) {
      storage::MeasurementRecord row;
      row.graph_key = k.graph.kernel_key;
      row.task = plan.log_task;
      row.target = plan.target;
      row.configuration = k.trials[taken[j]].configuration;
      row.value = best[j].seconds;
      row.worker = kWorker;
      rows.push_back(row);
      if (best[j].analytical.has_value()) {
        row.task = AnalyticalTask(plan.log_task);
        row.value = *best[j].analytical;
        rows.push_back(row);
      }
    }
    if (!rows.empty()) {
      if (absl::Status s = store.AppendMeasurements(rows); !s.ok()) return s;
    }
    measured += static_cast<int64_t>(taken.size());
    if (out_of_time) break;
    ++kernels_done;
    // Simulated kernels finish by the thousand: a line per kernel would flood the terminal.
    if (cmd.live_progress || std::chrono::duration<double>(Clock::now() - last_line).count() >= 1 ||
        kernels_done == total) {
      progress(false);
    }
  }
  // Lines mode printed the last kernel's line already; a live line needs its end, and a stop
  // on the time limit its final counts.
  if (cmd.live_progress || out_of_time) progress(true);
  out << "collected " << measured << " measurement(s)"
      << (rounds > 1 ? absl::StrCat(" (each the fastest of ", rounds, " rounds)") : "") << " of "
      << kernels_done << "/" << total << " kernel(s) from " << plan.modules << " module(s) into "
      << cmd.db << "; " << graphs << " new or refreshed kernel graph(s), " << skipped
      << " already logged, " << failed << " failed"
      << (plan.rejected > 0 ? absl::StrCat(", ", plan.rejected, " invalid configuration(s) drawn")
                            : "")
      << (out_of_time
              ? absl::StrFormat("; stopped at the %.0f s limit (run again to resume)", cmd.seconds)
              : "")
      << "\n";
  return absl::OkStatus();
}

}  // namespace mltune::opt::cost_model_data
