#include "daemon/model_refresher.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "optimizers/fusion/cpu_fusion_problem.h"
#include "optimizers/guided/stored_cost_models.h"

extern char** environ;

namespace mltune::daemon {
namespace {

namespace fs = std::filesystem;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A started trainer: its own process group (so a kill reaches anything it starts), lowest
// priority, output appended to the log.
absl::StatusOr<pid_t> Spawn(const std::vector<std::string>& argv, const std::string& log_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0640);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // The daemon blocks SIGTERM and SIGINT in every thread (main.cc); the child gets them back.
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot start the trainer ", argv[0], ": ", strerror(rc)));
  }
  // The trainer only runs while the daemon is idle, but RPCs still arrive; they come first.
  setpriority(PRIO_PROCESS, static_cast<id_t>(pid), 19);
  return pid;
}

}  // namespace

std::vector<std::string> TrainingLogTasks(std::string_view task) {
  // As train-cost-model reads them: collect's and the daemon's kernels timed (or simulated) alone,
  // and for fusion the kernel times the daemon's cpu fusion runs take inside each measured plan.
  if (task == "fusion") return {"fusion-kernel", opt::fusion::kFusionKernelInModuleTask};
  return {std::string(task) + "-kernel"};
}

absl::StatusOr<std::vector<StaleModel>> StaleModels(
    storage::Store& store, const std::vector<std::string>& targets, int64_t min_new_rows,
    const std::map<std::string, int64_t>& not_before_ms) {
  std::vector<StaleModel> stale;
  for (const std::string& target : targets) {
    for (const char* task : {"tile", "fusion"}) {
      const std::string name = opt::guided::CostModelName(task, target);
      absl::StatusOr<std::optional<storage::ModelRecord>> newest = store.LatestModel(name);
      if (!newest.ok()) return newest.status();
      StaleModel model{task, target, 0, newest->has_value() ? (*newest)->created_ms : 0};
      if (auto it = not_before_ms.find(name); it != not_before_ms.end()) {
        model.since_ms = std::max(model.since_ms, it->second);
      }
      for (const std::string& log_task : TrainingLogTasks(task)) {
        storage::MeasurementFilter filter;
        filter.task = log_task;
        filter.target = target;
        filter.after_ms = model.since_ms;
        absl::StatusOr<int64_t> count = store.CountMeasurements(filter);
        if (!count.ok()) return count.status();
        model.new_rows += *count;
      }
      if (model.new_rows >= std::max<int64_t>(1, min_new_rows)) stale.push_back(std::move(model));
    }
  }
  std::stable_sort(stale.begin(), stale.end(), [](const StaleModel& a, const StaleModel& b) {
    return a.new_rows > b.new_rows;
  });
  return stale;
}

std::string DefaultTrainerPath() {
  auto executable = [](const fs::path& p) { return access(p.c_str(), X_OK) == 0; };
  if (const char* env = std::getenv("MLTUNE_CLI"); env != nullptr && env[0] != '\0') {
    return executable(env) ? env : "";
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && executable(self.parent_path() / "mltune"))
    return (self.parent_path() / "mltune").string();
  return executable(MLTUNE_CLI_BUILD_PATH) ? MLTUNE_CLI_BUILD_PATH : "";
}

std::string_view ModelRefresher::OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kStored:
      return "stored";
    case Outcome::kFailed:
      return "failed";
    case Outcome::kPreempted:
      return "preempted";
    case Outcome::kStopped:
      return "stopped";
  }
  return "unknown";
}

ModelRefresher::ModelRefresher(storage::Store& store, Metrics& metrics, std::function<bool()> busy,
                               RefresherOptions options)
    : store_(store), metrics_(metrics), busy_(std::move(busy)), options_(std::move(options)) {}

ModelRefresher::~ModelRefresher() { Shutdown(); }

void ModelRefresher::Start() {
  if (options_.min_new_rows <= 0 || thread_.joinable()) return;
  thread_ = std::thread([this] { Loop(); });
}

void ModelRefresher::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool ModelRefresher::WaitFor(double seconds) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return stopping_; });
  return !stopping_;
}

void ModelRefresher::Loop() {
  using Clock = std::chrono::steady_clock;
  Clock::time_point idle_since = Clock::now();
  while (WaitFor(options_.poll_seconds)) {
    if (busy_()) {
      idle_since = Clock::now();
      continue;
    }
    if (std::chrono::duration<double>(Clock::now() - idle_since).count() < options_.idle_seconds) {
      continue;
    }
    absl::StatusOr<std::vector<StaleModel>> stale =
        StaleModels(store_, options_.targets, options_.min_new_rows, not_before_ms_);
    if (!stale.ok()) {
      std::cerr << "mltuned: model refresh: " << stale.status() << "\n";
      idle_since = Clock::now();  // the store may be busy with another process; try again later
      continue;
    }
    if (stale->empty()) continue;
    const Outcome outcome = Train(stale->front());
    if (outcome == Outcome::kStopped) return;
    // Preempted: a job runs now; the loop waits for the next idle spell.
    if (outcome == Outcome::kPreempted) idle_since = Clock::now();
  }
}

ModelRefresher::Outcome ModelRefresher::Train(const StaleModel& model) {
  const std::string name = opt::guided::CostModelName(model.task, model.target);
  std::vector<std::string> argv = {options_.trainer,    "train-cost-model", "--db",
                                   options_.store_path, "--task",           model.task,
                                   "--target",          model.target,       "--no-eval"};
  argv.insert(argv.end(), options_.trainer_args.begin(), options_.trainer_args.end());
  const int64_t start_ms = NowMs();
  {
    // A header per run, so the log says which output belongs to which model.
    FILE* log = std::fopen(options_.log_path.c_str(), "a");
    if (log != nullptr) {
      std::fprintf(log, "== %lld: %s: %lld new rows; %s\n", static_cast<long long>(start_ms),
                   name.c_str(), static_cast<long long>(model.new_rows),
                   absl::StrJoin(argv, " ").c_str());
      std::fclose(log);
    }
  }
  std::cerr << "mltuned: training " << name << " (" << model.new_rows << " new measurements; log "
            << options_.log_path << ")\n";
  const auto started = std::chrono::steady_clock::now();
  auto finish = [&](Outcome outcome, const std::string& detail) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    metrics_.CostModelTrained(name, OutcomeName(outcome), seconds);
    metrics_.SetCostModelTrainerRunning(false);
    std::cerr << "mltuned: training " << name << ": " << OutcomeName(outcome) << " after "
              << static_cast<int64_t>(seconds) << " s" << detail << "\n";
    return outcome;
  };
  metrics_.SetCostModelTrainerRunning(true);
  absl::StatusOr<pid_t> pid = Spawn(argv, options_.log_path);
  if (!pid.ok()) {
    not_before_ms_[name] = start_ms;
    return finish(Outcome::kFailed, absl::StrCat(": ", pid.status().message()));
  }
  while (true) {
    int status = 0;
    const pid_t done = waitpid(*pid, &status, WNOHANG);
    if (done == *pid) {
      // Tried again only once more rows arrive: the same data would fail the same way.
      not_before_ms_[name] = start_ms;
      if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        // A trainer that exits 0 without a new version (--trainer-args with --no-store, say)
        // would otherwise be run again at once, forever.
        absl::StatusOr<std::optional<storage::ModelRecord>> stored = store_.LatestModel(name);
        if (stored.ok() && stored->has_value() && (*stored)->created_ms >= start_ms) {
          not_before_ms_.erase(name);
          return finish(Outcome::kStored, absl::StrCat(": version ", (*stored)->version));
        }
        return finish(Outcome::kFailed, ": the trainer exited 0 but stored no new version");
      }
      return finish(Outcome::kFailed,
                    WIFEXITED(status)
                        ? absl::StrCat(": exit ", WEXITSTATUS(status), " (see the log)")
                        : absl::StrCat(": signal ", WTERMSIG(status)));
    }
    const bool stopping = !WaitFor(options_.poll_seconds);
    if (stopping || busy_()) {
      // SQLite makes the kill safe: an interrupted store write rolls back.
      kill(-*pid, SIGKILL);
      waitpid(*pid, &status, 0);
      return finish(stopping ? Outcome::kStopped : Outcome::kPreempted, "");
    }
  }
}

}  // namespace mltune::daemon
