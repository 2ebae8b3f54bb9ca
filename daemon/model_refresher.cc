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
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "nlohmann/json.hpp"
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
  // Not the daemon's sockets and store handles: a trainer outliving a killed daemon must not
  // hold its ports.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
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
  // The CLI links its life to the daemon's through MLTUNE_PARENT_PID (PR_SET_PDEATHSIG).
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    if (!std::string_view(*e).starts_with("MLTUNE_PARENT_PID=")) env_strings.emplace_back(*e);
  }
  env_strings.push_back(absl::StrCat("MLTUNE_PARENT_PID=", getpid()));
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  // posix_spawnp: --trainer may name a program on PATH.
  const int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), envp.data());
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

// "--epochs" of "--epochs=30".
std::string FlagName(const std::string& token) { return token.substr(0, token.find('=')); }

// A flag and the values after it, up to the next flag; tokens before the first flag stand alone.
std::vector<std::vector<std::string>> FlagGroups(const std::vector<std::string>& args) {
  std::vector<std::vector<std::string>> groups;
  for (const std::string& a : args) {
    if (a.starts_with("--") || groups.empty()) {
      groups.push_back({a});
    } else {
      groups.back().push_back(a);
    }
  }
  return groups;
}

// The metadata's "recipe", keeping only kTrainingRecipeFlags and their values: the store is the
// daemon's own, but a recipe must not point the trainer at other files (--predictions, --db).
std::vector<std::string> RecipeOf(const std::string& metadata_json) {
  const nlohmann::json meta =
      nlohmann::json::parse(metadata_json, nullptr, /*allow_exceptions=*/false);
  if (!meta.is_object() || !meta.contains("recipe") || !meta["recipe"].is_array()) return {};
  std::vector<std::string> tokens;
  for (const nlohmann::json& t : meta["recipe"]) {
    if (!t.is_string()) return {};
    tokens.push_back(t.get<std::string>());
  }
  std::vector<std::string> recipe;
  for (const std::vector<std::string>& group : FlagGroups(tokens)) {
    const std::string name = FlagName(group.front());
    if (std::find(std::begin(opt::guided::kTrainingRecipeFlags),
                  std::end(opt::guided::kTrainingRecipeFlags),
                  name) != std::end(opt::guided::kTrainingRecipeFlags)) {
      recipe.insert(recipe.end(), group.begin(), group.end());
    }
  }
  return recipe;
}

}  // namespace

std::vector<std::string> TrainingLogTasks(std::string_view task) {
  // As train-cost-model reads them: collect's and the daemon's kernels timed (or simulated) alone,
  // and for fusion the kernel times the daemon's cpu fusion runs take inside each measured plan.
  if (task == "fusion") return {"fusion-kernel", opt::fusion::kFusionKernelInModuleTask};
  return {std::string(task) + "-kernel"};
}

absl::StatusOr<std::vector<ModelNewRows>> NewRowsPerModel(
    storage::Store& store, const std::vector<std::string>& targets,
    const std::map<std::string, int64_t>& not_before_ms) {
  // Metadata only: the checkpoints' bytes are not needed to decide.
  absl::StatusOr<std::vector<storage::ModelRecord>> models = store.ListModels();
  if (!models.ok()) return models.status();
  std::map<std::string, const storage::ModelRecord*> newest;  // by name; ListModels sorts
  for (const storage::ModelRecord& m : *models) newest[m.name] = &m;
  std::vector<ModelNewRows> all;
  for (const std::string& target : targets) {
    for (const char* task : {"tile", "fusion"}) {
      const std::string name = opt::guided::CostModelName(task, target);
      ModelNewRows model{task, target, 0, 0, 0, {}};
      if (auto it = newest.find(name); it != newest.end()) {
        model.since_ms = it->second->created_ms;
        model.version = it->second->version;
        model.recipe = RecipeOf(it->second->metadata_json);
      }
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
      all.push_back(std::move(model));
    }
  }
  std::stable_sort(all.begin(), all.end(), [](const ModelNewRows& a, const ModelNewRows& b) {
    return a.new_rows > b.new_rows;
  });
  return all;
}

bool IsDue(const ModelNewRows& model, int64_t min_new_rows) {
  return model.new_rows >= std::max<int64_t>(1, min_new_rows);
}

absl::StatusOr<std::vector<ModelNewRows>> StaleModels(
    storage::Store& store, const std::vector<std::string>& targets, int64_t min_new_rows,
    const std::map<std::string, int64_t>& not_before_ms) {
  absl::StatusOr<std::vector<ModelNewRows>> all = NewRowsPerModel(store, targets, not_before_ms);
  if (!all.ok()) return all.status();
  std::erase_if(*all, [&](const ModelNewRows& m) { return !IsDue(m, min_new_rows); });
  return all;
}

std::vector<std::string> TrainerFlags(const std::vector<std::string>& recipe,
                                      const std::vector<std::string>& overrides) {
  std::set<std::string> overridden;
  for (const std::vector<std::string>& group : FlagGroups(overrides)) {
    overridden.insert(FlagName(group.front()));
  }
  std::vector<std::string> flags;
  for (const std::vector<std::string>& group : FlagGroups(recipe)) {
    if (!overridden.contains(FlagName(group.front()))) {
      flags.insert(flags.end(), group.begin(), group.end());
    }
  }
  flags.insert(flags.end(), overrides.begin(), overrides.end());
  return flags;
}

std::string DefaultTrainerPath() {
  auto executable = [](const fs::path& p) { return access(p.c_str(), X_OK) == 0; };
  if (const char* env = std::getenv("MLTUNE_CLI"); env != nullptr && env[0] != '\0') {
    return executable(env) ? env : "";
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  // mltune-full directly: the lean `mltune` would only exec it.
  for (const char* cli : {"mltune-full", "mltune"}) {
    if (!ec && executable(self.parent_path() / cli)) return (self.parent_path() / cli).string();
  }
  return executable(MLTUNE_CLI_BUILD_PATH) ? MLTUNE_CLI_BUILD_PATH : "";
}

std::string_view ModelRefresher::OutcomeName(Outcome outcome) {
  switch (outcome) {
    case Outcome::kStored:
      return "stored";
    case Outcome::kRejected:
      return "rejected";
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
    : store_(store), metrics_(metrics), busy_(std::move(busy)), options_(std::move(options)) {
  status_.min_new_rows = options_.min_new_rows;
  status_.idle_seconds = options_.idle_seconds;
}

RefresherStatus ModelRefresher::Status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

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

void ModelRefresher::RestoreLastTrainings() {
  absl::StatusOr<std::vector<storage::ModelTrainingRecord>> latest = store_.LatestModelTrainings();
  if (!latest.ok()) {
    std::cerr << "mltuned: model refresh: earlier trainings unreadable: " << latest.status()
              << "\n";
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (const storage::ModelTrainingRecord& r : *latest) {
    status_.last[r.name] = {r.outcome, r.ended_ms};
    // As Train does: the same rows would fail or lose the same way (a stored version since
    // then is newer, and NewRowsPerModel counts from the later of the two).
    if (r.outcome == "rejected" || r.outcome == "failed") not_before_ms_[r.name] = r.started_ms;
  }
}

void ModelRefresher::Loop() {
  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  Clock::time_point idle_since = Clock::now();
  // The log grows with jobs: it is counted again once idle after each, and otherwise only every
  // recount_seconds (another process may write into the store). The first count is at once, so
  // Status() shows the models from the start; training still waits for an idle spell.
  bool first = true;
  bool job_since_count = true;
  Clock::time_point counted = Clock::now();
  RestoreLastTrainings();
  while (WaitFor(options_.poll_seconds)) {
    if (busy_()) {
      idle_since = Clock::now();
      job_since_count = true;
      continue;
    }
    const bool idle_long = seconds_since(idle_since) >= options_.idle_seconds;
    if (!first && !idle_long) continue;
    if (!first && !job_since_count && seconds_since(counted) < options_.recount_seconds) continue;
    first = false;
    job_since_count = !idle_long;  // counted too early to train: count again once idle
    counted = Clock::now();
    absl::StatusOr<std::vector<ModelNewRows>> models =
        NewRowsPerModel(store_, options_.targets, not_before_ms_);
    if (!models.ok()) {
      // The store may be busy with another process: counted again after recount_seconds.
      std::cerr << "mltuned: model refresh: " << models.status() << "\n";
      continue;
    }
    for (const ModelNewRows& m : *models) {
      metrics_.SetCostModelNewRows(opt::guided::CostModelName(m.task, m.target), m.new_rows);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      status_.models = *models;
      status_.counted_ms = NowMs();
    }
    // Most new rows first.
    if (!idle_long || models->empty() || !IsDue(models->front(), options_.min_new_rows)) {
      continue;
    }
    const Outcome outcome = Train(models->front());
    if (outcome == Outcome::kStopped) return;
    // Another model may be due too (after a preemption, once the job has run).
    job_since_count = true;
  }
}

ModelRefresher::Outcome ModelRefresher::Train(const ModelNewRows& model) {
  const std::string name = opt::guided::CostModelName(model.task, model.target);
  std::vector<std::string> argv = {options_.trainer,    "train-cost-model", "--db",
                                   options_.store_path, "--task",           model.task,
                                   "--target",          model.target,       "--no-eval"};
  if (options_.gate) argv.push_back("--gate");
  const std::vector<std::string> flags = TrainerFlags(model.recipe, options_.trainer_args);
  argv.insert(argv.end(), flags.begin(), flags.end());
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
    const int64_t ended_ms = NowMs();
    {
      std::lock_guard<std::mutex> lock(mu_);
      status_.training.clear();
      status_.last[name] = {std::string(OutcomeName(outcome)), ended_ms};
    }
    // Kept in the store so a restarted daemon waits for new rows after a rejection too.
    const storage::ModelTrainingRecord record{
        name,           std::string(OutcomeName(outcome)),
        start_ms,       std::max(start_ms, ended_ms),
        model.new_rows, std::string(absl::StripPrefix(detail, ": "))};
    if (absl::Status s = store_.RecordModelTraining(record); !s.ok()) {
      std::cerr << "mltuned: training " << name << ": not recorded in the store: " << s << "\n";
    }
    std::cerr << "mltuned: training " << name << ": " << OutcomeName(outcome) << " after "
              << static_cast<int64_t>(seconds) << " s" << detail << "\n";
    return outcome;
  };
  metrics_.SetCostModelTrainerRunning(true);
  {
    std::lock_guard<std::mutex> lock(mu_);
    status_.training = name;
  }
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
      if (WIFEXITED(status) && WEXITSTATUS(status) == opt::guided::kGateRejectedExitCode) {
        return finish(Outcome::kRejected, ": it did worse than the stored version (see the log)");
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
