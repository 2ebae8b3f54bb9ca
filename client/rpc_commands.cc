#include "client/rpc_commands.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <ostream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/result_plot.h"
#include "client/rpc_client.h"
#include "nlohmann/json.hpp"

namespace mltune::client {
namespace {

using Json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// "error: ..." on `err`; exit 2 when the daemon is not there, else 1.
int Fail(const absl::Status& status, std::ostream& err) {
  err << "error: " << status.message() << "\n";
  return IsUnreachable(status) ? kExitUnreachable : kExitError;
}

// Fail, naming the job when the daemon's message does not (so "not found" says what was not).
int FailJob(const absl::Status& status, const std::string& job_id, std::ostream& err) {
  if (IsUnreachable(status) || absl::StrContains(status.message(), job_id)) {
    return Fail(status, err);
  }
  return Fail(absl::Status(status.code(), absl::StrCat("job ", job_id, ": ", status.message())),
              err);
}

std::unique_ptr<Client> Connect(const std::string& server) {
  ClientOptions options = ClientOptionsFromEnvironment();
  const ConnectionFlags& flags = GlobalConnectionFlags();
  for (auto [flag, field] : {std::pair{&flags.ca, &options.ca_file},
                             {&flags.cert, &options.cert_file},
                             {&flags.key, &options.key_file},
                             {&flags.token, &options.token}}) {
    if (!flag->empty()) *field = *flag;
  }
  return Client::Connect(ServerAddress(server), options);
}

std::string FormatUnixMs(int64_t ms) {
  if (ms <= 0) return "-";
  const std::time_t seconds = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

// Percent by which `to` is lower than `from` (scores are costs: positive = better).
double PercentLower(double from, double to) { return from != 0 ? 100.0 * (from - to) / from : 0; }
// Signed change from `from` to `to` in percent (computed as to - from so equal scores print 0.0,
// not -0.0).
double PercentChange(double from, double to) { return from != 0 ? 100.0 * (to - from) / from : 0; }

std::vector<std::string> PassSequence(const TaskResult& r) {
  auto it = r.artifacts.find("pass_sequence");
  if (it == r.artifacts.end()) return {};
  std::vector<std::string> passes;
  for (absl::string_view line : absl::StrSplit(it->second, '\n', absl::SkipWhitespace())) {
    passes.emplace_back(line);
  }
  return passes;
}

// What the scores are: the worker records "<worker>/<scorer>" ("inprocess-0/op-count",
// "tpu-sim/simulated seconds").
std::string ScoreLabel(const TaskResult& r) {
  const size_t slash = r.provenance.worker.rfind('/');
  const std::string scorer =
      slash == std::string::npos ? "" : r.provenance.worker.substr(slash + 1);
  if (scorer == "op-count" || (scorer.empty() && r.task == "pass-order")) return "op count";
  return scorer.empty() ? "score" : scorer;
}

void PrintTaskResult(const TaskResult& r, std::ostream& out) {
  out << absl::StrFormat("%s on %s: strategy %s, budget %d steps%s\n", r.task, r.target,
                         r.strategy.empty() ? "-" : r.strategy, r.budget_steps,
                         r.from_cache ? absl::StrCat(", from cache (", r.cache_hits,
                                                     r.cache_hits == 1 ? " hit)" : " hits)")
                                      : "");
  // Long units (simulated stage seconds) get their own line so the numbers stay aligned.
  const std::string unit = ScoreLabel(r);
  if (unit.size() <= 22) {
    out << absl::StrFormat("  original %-22s %10g\n", unit, r.original_score);
  } else {
    out << absl::StrFormat("  scores in %s\n  original %-22s %10g\n", unit, "", r.original_score);
  }
  out << absl::StrFormat("  baseline (%s)%*s%10g  (%+.1f%%)\n",
                         r.task == "pass-order" ? "XLA default" : "compiler default",
                         r.task == "pass-order" ? 10 : 5, "", r.baseline_score,
                         PercentChange(r.original_score, r.baseline_score));
  out << absl::StrFormat("  tuned                           %10g  (%+.1f%%)\n", r.tuned_score,
                         PercentChange(r.original_score, r.tuned_score));
  out << absl::StrFormat("  improvement vs baseline         %9.1f%%\n",
                         PercentLower(r.baseline_score, r.tuned_score));
  if (r.task == "pass-order") {
    const std::vector<std::string> passes = PassSequence(r);
    out << absl::StrFormat("  pass sequence (%d): %s\n", passes.size(),
                           passes.empty() ? "(none)" : absl::StrJoin(passes, ","));
  } else {
    std::vector<std::string> names;
    for (const auto& [name, bytes] : r.artifacts) names.push_back(name);
    out << absl::StrFormat("  artifacts: %s (mltune result JOB --json shows them)\n",
                           absl::StrJoin(names, ", "));
  }
  const Provenance& p = r.provenance;
  out << absl::StrFormat(
      "  provenance: worker %s, mltune %s, search version %s, created %s, updated %s\n",
      p.worker.empty() ? "-" : p.worker, p.mltune_version.empty() ? "-" : p.mltune_version,
      p.search_version.empty() ? "-" : p.search_version, FormatUnixMs(p.created_unix_ms),
      FormatUnixMs(p.updated_unix_ms));
}

Json ResultJson(const TaskResult& r) {
  Json artifacts = Json::object();
  for (const auto& [name, bytes] : r.artifacts) artifacts[name] = bytes;
  return Json{
      {"task", r.task},
      {"target", r.target},
      {"fingerprint", r.fingerprint},
      {"strategy", r.strategy},
      {"original_score", r.original_score},
      {"baseline_score", r.baseline_score},
      {"tuned_score", r.tuned_score},
      {"improvement_vs_baseline_percent", PercentLower(r.baseline_score, r.tuned_score)},
      {"budget_steps", r.budget_steps},
      {"pass_sequence", PassSequence(r)},
      {"artifacts", artifacts},
      {"provenance",
       {{"worker", r.provenance.worker},
        {"mltune_version", r.provenance.mltune_version},
        {"search_version", r.provenance.search_version},
        {"created_unix_ms", r.provenance.created_unix_ms},
        {"updated_unix_ms", r.provenance.updated_unix_ms}}},
      {"from_cache", r.from_cache},
      {"cache_hits", r.cache_hits},
  };
}

Json JobJson(const JobInfo& j) {
  Json results = Json::array();
  for (const TaskResult& r : j.results) results.push_back(ResultJson(r));
  return Json{
      {"job_id", j.job_id},
      {"state", std::string(JobStateName(j.state))},
      {"tasks", j.tasks},
      {"target", j.target},
      {"strategy", j.strategy},
      {"budget", {{"steps", j.budget.steps}, {"seconds", j.budget.seconds}}},
      {"fingerprint", j.fingerprint},
      {"graph_name", j.graph_name},
      {"progress", j.progress},
      {"best_score", j.best_score.has_value() ? Json(*j.best_score) : Json(nullptr)},
      {"steps_done", j.steps_done},
      {"error", j.error},
      {"results", results},
      {"attempts", j.attempts},
      {"created_unix_ms", j.created_unix_ms},
      {"started_unix_ms", j.started_unix_ms},
      {"finished_unix_ms", j.finished_unix_ms},
  };
}

// Artifacts may one day be binary: replace invalid UTF-8 rather than throw.
void PrintJson(const Json& j, std::ostream& out) {
  out << j.dump(2, ' ', false, Json::error_handler_t::replace) << "\n";
}

// The job's header: state, what ran, how long.
void PrintJobHeader(const JobInfo& j, std::ostream& out) {
  std::string ran;
  if (j.started_unix_ms > 0 && j.finished_unix_ms >= j.started_unix_ms) {
    ran = absl::StrFormat(", ran %.2f s", (j.finished_unix_ms - j.started_unix_ms) / 1000.0);
  }
  out << absl::StrFormat(
      "job %s: %s (tasks %s, target %s, strategy %s, budget %d steps%s)%s\n", j.job_id,
      JobStateName(j.state), absl::StrJoin(j.tasks, ","), j.target.empty() ? "-" : j.target,
      j.strategy.empty() ? "-" : j.strategy, j.budget.steps,
      j.budget.seconds > 0 ? absl::StrFormat(", %g s", j.budget.seconds) : "", ran);
  out << absl::StrFormat("graph %s, fingerprint %s\n", j.graph_name.empty() ? "-" : j.graph_name,
                         j.fingerprint.empty() ? "-" : j.fingerprint);
}

// Writes the optimized HLO of the last task that produced one (tasks run in order, so that is the
// graph with every task applied).
bool WriteOptimizedHlo(const std::vector<TaskResult>& results, const std::string& path, bool json,
                       std::ostream& out, std::ostream& err) {
  const std::string* hlo = nullptr;
  for (const TaskResult& r : results) {
    auto it = r.artifacts.find("optimized_hlo");
    if (it != r.artifacts.end()) hlo = &it->second;
  }
  if (hlo == nullptr) {
    err << "error: the result has no optimized_hlo artifact to write to " << path << "\n";
    return false;
  }
  std::ofstream file(path, std::ios::binary);
  file << *hlo;
  if (!file) {
    err << "error: cannot write " << path << "\n";
    return false;
  }
  // With --json stdout holds only the JSON document.
  (json ? err : out) << "wrote " << path << "\n";
  return true;
}

// The end of `watch`, `submit --watch` and `result`: the summary (or JSON) of a finished job.
int ReportFinished(const JobInfo& job, const std::string& output, bool json, std::ostream& out,
                   std::ostream& err) {
  if (json) {
    PrintJson(JobJson(job), out);
  } else {
    PrintJobHeader(job, out);
    for (const TaskResult& r : job.results) PrintTaskResult(r, out);
  }
  if (job.state == JobState::kFailed) {
    err << "error: job " << job.job_id << " failed: " << (job.error.empty() ? "?" : job.error)
        << "\n";
    return kExitError;
  }
  if (job.state == JobState::kCancelled) {
    err << "error: job " << job.job_id << " was cancelled\n";
    return kExitError;
  }
  if (!output.empty() && !WriteOptimizedHlo(job.results, output, json, out, err)) {
    return kExitError;
  }
  return kExitOk;
}

// "steps 420/1000  best 215"
std::string StepsText(const JobInfo& j) {
  std::string text = absl::StrCat("steps ", j.steps_done);
  if (j.budget.steps > 0) absl::StrAppend(&text, "/", j.budget.steps);
  if (j.best_score.has_value()) absl::StrAppend(&text, absl::StrFormat("  best %g", *j.best_score));
  return text;
}

// "42%  steps 420/1000  best 215"
std::string ProgressDetails(const JobInfo& j) {
  return absl::StrFormat("%.0f%%  %s", 100 * j.progress, StepsText(j));
}

// Fixed-width state and percentage, so a live line does not jump about as it is redrawn.
std::string ProgressText(const JobInfo& j) {
  return absl::StrFormat("job %s %-9s %3.0f%%  %s", j.job_id, JobStateName(j.state),
                         100 * j.progress, StepsText(j));
}

// Shows a job's snapshots on `err` in the chosen style.
class Progress {
 public:
  Progress(ProgressStyle style, std::ostream& err) : style_(style), err_(err) {}

  void Update(const JobInfo& job) {
    if (style_ == ProgressStyle::kNone) return;
    const auto now = Clock::now();
    const bool changed = job.state != last_state_;
    const bool final = IsFinal(job.state);
    if (style_ == ProgressStyle::kLive) {
      // ~10 redraws a second are plenty for a human; the server may send one per search step.
      if (!changed && !final && now - last_ < std::chrono::milliseconds(100)) return;
      // '\r' back to the line's start, then clear to its end (the new text may be shorter).
      err_ << "\r" << ProgressText(job) << "\x1b[K" << (final ? "\n" : "") << std::flush;
      drawn_ = !final;
    } else {
      if (!changed && !final && now - last_ < std::chrono::seconds(1)) return;
      if (final && !changed) return;
      err_ << ProgressText(job) << "\n" << std::flush;
    }
    last_ = now;
    last_state_ = job.state;
  }

  // Ends a half-drawn live line, e.g. before an error.
  void Finish() {
    if (drawn_) err_ << "\n";
    drawn_ = false;
  }

 private:
  ProgressStyle style_;
  std::ostream& err_;
  Clock::time_point last_{};
  JobState last_state_ = JobState::kUnspecified;
  bool drawn_ = false;
};

int WatchAndReport(Client& client, const std::string& job_id, ProgressStyle style,
                   const std::string& output, bool json, std::ostream& out, std::ostream& err) {
  Progress progress(style, err);
  absl::StatusOr<JobInfo> job = client.Watch(job_id, [&](const JobInfo& snapshot) {
    progress.Update(snapshot);
    return true;
  });
  progress.Finish();
  if (!job.ok()) return FailJob(job.status(), job_id, err);
  return ReportFinished(*job, output, json, out, err);
}

// Left-aligned columns two spaces apart; the first row is the header.
void PrintTable(const std::vector<std::vector<std::string>>& rows, std::ostream& out) {
  std::vector<size_t> widths;
  for (const auto& row : rows) {
    widths.resize(std::max(widths.size(), row.size()));
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      absl::StrAppend(&line, row[i]);
      if (i + 1 < row.size()) line.append(widths[i] - row[i].size() + 2, ' ');
    }
    out << line << "\n";
  }
}

// What sending a graph by hash took, for `submit`'s log and --json ("graph": ...).
Json GraphJson(const GraphRef& g) {
  return Json{{"sha256", g.sha256},
              {"size", g.size},
              {"bytes_sent", g.bytes_sent},
              {"already_stored", g.already_stored}};
}

void ReportUpload(const std::string& file, const GraphRef& g, std::ostream& err) {
  if (g.sha256.empty()) return;  // sent inline: nothing to say
  const std::string size = absl::StrFormat("%.1f MiB", static_cast<double>(g.size) / (1 << 20));
  if (g.already_stored) {
    err << file << " (" << size << ") is on the daemon already (sha256 " << g.sha256.substr(0, 12)
        << "...): not sent again\n";
  } else {
    err << "uploaded " << file << " (" << size << ", sha256 " << g.sha256.substr(0, 12) << "...)\n";
  }
}

}  // namespace

int RunSubmit(const SubmitCommand& cmd, std::ostream& out, std::ostream& err) {
  SubmitRequest request;
  // The client reads the file itself: piece by piece when it is large enough to be uploaded.
  request.graph_file = cmd.file;
  request.graph_name = cmd.file;
  request.tasks = cmd.tasks;
  request.target = cmd.target;
  request.strategy = cmd.strategy;
  request.budget = Budget{cmd.budget, cmd.seconds};
  request.skip_cache = cmd.skip_cache;
  for (const std::string& option : cmd.options) {
    const size_t eq = option.find('=');
    if (eq == std::string::npos || eq == 0) {
      err << "error: --option wants key=value, got '" << option << "'\n";
      return kExitError;
    }
    request.options[option.substr(0, eq)] = option.substr(eq + 1);
  }
  std::unique_ptr<Client> client = Connect(cmd.server);
  absl::StatusOr<SubmitResponse> response = client->Submit(request);
  if (!response.ok()) return Fail(response.status(), err);
  if (!cmd.json) ReportUpload(cmd.file, response->graph, err);

  if (response->cached) {
    if (cmd.json) {
      PrintJson(Json{{"job_id", ""},
                     {"cached", true},
                     {"attached", false},
                     {"job", JobJson(response->job)},
                     {"graph", GraphJson(response->graph)}},
                out);
    } else {
      out << "answered from cache (fingerprint " << response->job.fingerprint
          << "; no job queued)\n";
      for (const TaskResult& r : response->job.results) PrintTaskResult(r, out);
    }
    if (!cmd.output.empty() &&
        !WriteOptimizedHlo(response->job.results, cmd.output, cmd.json, out, err)) {
      return kExitError;
    }
    return kExitOk;
  }

  const std::string& id = response->job_id;
  if (!cmd.watch) {
    if (cmd.json) {
      PrintJson(Json{{"job_id", id},
                     {"cached", false},
                     {"attached", response->attached},
                     {"job", JobJson(response->job)},
                     {"graph", GraphJson(response->graph)}},
                out);
    } else if (response->attached) {
      out << "attached to running job " << id << " (an identical request is already "
          << JobStateName(response->job.state) << ")\n";
    } else {
      out << "submitted job " << id << "\n";
    }
    err << "follow it with: mltune watch " << id << "\n";
    if (!cmd.output.empty()) {
      err << "error: no result yet to write to " << cmd.output << ": add --watch, or run `mltune "
          << "result " << id << " -o " << cmd.output << "` once it is done\n";
      return kExitNoResult;
    }
    return kExitOk;
  }
  if (!cmd.json) {
    out << (response->attached ? "attached to running job " : "submitted job ") << id << "\n"
        << std::flush;
  }
  return WatchAndReport(*client, id, cmd.progress, cmd.output, cmd.json, out, err);
}

int RunWatch(const WatchCommand& cmd, std::ostream& out, std::ostream& err) {
  std::unique_ptr<Client> client = Connect(cmd.server);
  return WatchAndReport(*client, cmd.job, cmd.progress, cmd.output, cmd.json, out, err);
}

int RunResult(const ResultCommand& cmd, std::ostream& out, std::ostream& err) {
  std::unique_ptr<Client> client = Connect(cmd.server);
  absl::StatusOr<JobInfo> job = client->GetJob(cmd.job);
  if (!job.ok()) return FailJob(job.status(), cmd.job, err);
  if (!IsFinal(job->state)) {
    if (cmd.json) PrintJson(JobJson(*job), out);
    err << "job " << job->job_id << " is " << JobStateName(job->state) << " ("
        << ProgressDetails(*job) << "): no result yet; follow it with `mltune watch " << job->job_id
        << "`\n";
    return kExitNoResult;
  }
  const int code = ReportFinished(*job, cmd.output, cmd.json, out, err);
  if (code != 0 || cmd.plot.empty()) return code;
  absl::StatusOr<std::string> svg = ResultPlotSvg(*job);
  if (!svg.ok()) {
    err << "error: --plot: " << svg.status().message() << "\n";
    return kExitError;
  }
  std::ofstream file(cmd.plot, std::ios::binary);
  file << *svg;
  file.close();
  if (!file) {
    err << "error: cannot write " << cmd.plot << "\n";
    return kExitError;
  }
  (cmd.json ? err : out) << "best-so-far curves written to " << cmd.plot << "\n";
  return 0;
}

int RunLookup(const LookupCommand& cmd, std::ostream& out, std::ostream& err) {
  if (cmd.file.empty() == cmd.fingerprint.empty()) {
    err << "error: lookup needs a FILE or --fingerprint FP, not both\n";
    return kExitError;
  }
  LookupRequest request;
  if (!cmd.file.empty()) {
    request.graph_file = cmd.file;
    request.graph_name = cmd.file;
  }
  request.fingerprint = cmd.fingerprint;
  request.task = cmd.task;
  request.target = cmd.target;
  std::unique_ptr<Client> client = Connect(cmd.server);
  absl::StatusOr<LookupResponse> response = client->Lookup(request);
  if (!response.ok()) return Fail(response.status(), err);
  if (cmd.json) {
    Json results = Json::array();
    for (const TaskResult& r : response->results) results.push_back(ResultJson(r));
    PrintJson(Json{{"fingerprint", response->fingerprint}, {"results", results}}, out);
  }
  if (response->results.empty()) {
    std::string what = response->fingerprint;
    if (!cmd.task.empty()) absl::StrAppend(&what, ", task ", cmd.task);
    if (!cmd.target.empty()) absl::StrAppend(&what, ", target ", cmd.target);
    (cmd.json ? err : out) << "no cached result for " << what << "\n";
    return kExitNoResult;
  }
  if (!cmd.json) {
    out << absl::StrFormat("%d cached result%s for %s\n", response->results.size(),
                           response->results.size() == 1 ? "" : "s", response->fingerprint);
    for (const TaskResult& r : response->results) PrintTaskResult(r, out);
  }
  if (!cmd.output.empty() &&
      !WriteOptimizedHlo(response->results, cmd.output, cmd.json, out, err)) {
    return kExitError;
  }
  return kExitOk;
}

int RunCancel(const CancelCommand& cmd, std::ostream& out, std::ostream& err) {
  std::unique_ptr<Client> client = Connect(cmd.server);
  absl::StatusOr<JobInfo> job = client->Cancel(cmd.job);
  if (!job.ok()) return FailJob(job.status(), cmd.job, err);
  if (job->state == JobState::kCancelled) {
    out << "cancelled job " << job->job_id << "\n";
  } else {
    out << "cancelling job " << job->job_id << " (" << JobStateName(job->state)
        << "; a running search stops at its next step)\n";
  }
  return kExitOk;
}

int RunWorkers(const ServerCommand& cmd, std::ostream& out, std::ostream& err) {
  std::unique_ptr<Client> client = Connect(cmd.server);
  absl::StatusOr<std::vector<WorkerInfo>> workers = client->ListWorkers();
  if (!workers.ok()) return Fail(workers.status(), err);
  if (cmd.json) {
    Json list = Json::array();
    for (const WorkerInfo& w : *workers) {
      list.push_back({{"name", w.name},
                      {"kind", w.kind},
                      {"targets", w.targets},
                      {"scorer", w.scorer},
                      {"state", w.state},
                      {"job_id", w.job_id},
                      {"candidates_evaluated", w.candidates_evaluated},
                      {"device", w.device},
                      {"host", w.host}});
    }
    PrintJson(Json{{"workers", list}}, out);
    return kExitOk;
  }
  std::vector<std::vector<std::string>> rows = {
      {"NAME", "KIND", "HOST", "TARGETS", "SCORER", "STATE", "JOB", "CANDIDATES"}};
  for (const WorkerInfo& w : *workers) {
    rows.push_back({w.name, w.kind, w.host.empty() ? "-" : w.host, absl::StrJoin(w.targets, ","),
                    w.scorer, w.state, w.job_id.empty() ? "-" : w.job_id,
                    absl::StrCat(w.candidates_evaluated)});
  }
  PrintTable(rows, out);
  for (const WorkerInfo& w : *workers) {
    if (!w.device.empty()) out << w.name << ": " << w.device << "\n";
  }
  return kExitOk;
}

int RunStrategies(const ServerCommand& cmd, std::ostream& out, std::ostream& err) {
  std::unique_ptr<Client> client = Connect(cmd.server);
  absl::StatusOr<StrategyList> list = client->ListStrategies();
  if (!list.ok()) return Fail(list.status(), err);
  if (cmd.json) {
    Json tasks = Json::array();
    for (const NamedInfo& t : list->tasks) {
      tasks.push_back({{"name", t.name}, {"description", t.description}, {"targets", t.targets}});
    }
    Json strategies = Json::array();
    for (const NamedInfo& s : list->strategies) {
      strategies.push_back({{"name", s.name}, {"description", s.description}});
    }
    PrintJson(Json{{"tasks", tasks},
                   {"strategies", strategies},
                   {"default_strategy", list->default_strategy}},
              out);
    return kExitOk;
  }
  std::vector<std::vector<std::string>> tasks = {{"TASK", "TARGETS", "DESCRIPTION"}};
  for (const NamedInfo& t : list->tasks) {
    tasks.push_back({t.name, absl::StrJoin(t.targets, ","), t.description});
  }
  PrintTable(tasks, out);
  out << "\n";
  std::vector<std::vector<std::string>> strategies = {{"STRATEGY", "DESCRIPTION"}};
  for (const NamedInfo& s : list->strategies) {
    strategies.push_back(
        {s.name == list->default_strategy ? absl::StrCat(s.name, " (default)") : s.name,
         s.description});
  }
  PrintTable(strategies, out);
  return kExitOk;
}

int RunStats(const ServerCommand& cmd, std::ostream& out, std::ostream& err) {
  std::unique_ptr<Client> client = Connect(cmd.server);
  absl::StatusOr<ServerStats> s = client->GetStats();
  if (!s.ok()) return Fail(s.status(), err);
  if (cmd.json) {
    Json cost_models = Json::array();
    for (const CostModelInfo& m : s->cost_models) {
      cost_models.push_back({{"name", m.name},
                             {"version", m.version},
                             {"new_rows", m.new_rows},
                             {"training", m.training},
                             {"last_outcome", m.last_outcome},
                             {"last_outcome_ms", m.last_outcome_ms}});
    }
    PrintJson(Json{{"version", s->version},
                   {"search_version", s->search_version},
                   {"uptime_seconds", s->uptime_seconds},
                   {"queue_depth", s->queue_depth},
                   {"queue_capacity", s->queue_capacity},
                   {"jobs_running", s->jobs_running},
                   {"worker_threads", s->worker_threads},
                   {"jobs_by_state", s->jobs_by_state},
                   {"cache_hits", s->cache_hits},
                   {"cache_misses", s->cache_misses},
                   {"cached_results", s->cached_results},
                   {"measurements", s->measurements},
                   {"stored_graphs", s->stored_graphs},
                   {"stored_graph_bytes", s->stored_graph_bytes},
                   {"max_graph_bytes", s->max_graph_bytes},
                   {"data_dir", s->data_dir},
                   {"store_path", s->store_path},
                   {"metrics_address", s->metrics_address},
                   {"retrain_rows", s->retrain_rows},
                   {"retrain_idle_seconds", s->retrain_idle_seconds},
                   {"cost_models", cost_models},
                   {"cost_models_counted_ms", s->cost_models_counted_ms}},
              out);
    return kExitOk;
  }
  std::vector<std::string> by_state;
  for (const auto& [state, count] : s->jobs_by_state)
    by_state.push_back(absl::StrCat(state, " ", count));
  const int64_t lookups = s->cache_hits + s->cache_misses;
  out << absl::StrFormat("mltuned %s at %s (search version %s), up %.1f s\n", s->version,
                         client->address(), s->search_version, s->uptime_seconds);
  out << absl::StrFormat("queue          %d of %d queued, %d running on %d worker threads\n",
                         s->queue_depth, s->queue_capacity, s->jobs_running, s->worker_threads);
  out << absl::StrFormat("jobs           %s\n",
                         by_state.empty() ? "(none)" : absl::StrJoin(by_state, ", "));
  out << absl::StrFormat(
      "cache          %d hits, %d misses since start (%.1f%% hits); %d results "
      "stored\n",
      s->cache_hits, s->cache_misses, lookups ? 100.0 * s->cache_hits / lookups : 0.0,
      s->cached_results);
  out << absl::StrFormat("measurements   %d\n", s->measurements);
  out << absl::StrFormat(
      "graphs         %d stored (%.1f MiB), each once; the largest accepted %.0f MiB\n",
      s->stored_graphs, static_cast<double>(s->stored_graph_bytes) / (1 << 20),
      static_cast<double>(s->max_graph_bytes) / (1 << 20));
  out << absl::StrFormat("data dir       %s\n", s->data_dir);
  out << absl::StrFormat("store          %s\n", s->store_path);
  out << absl::StrFormat("metrics        %s\n",
                         s->metrics_address.empty()
                             ? "(not served)"
                             : absl::StrCat("http://", s->metrics_address, "/metrics"));
  if (s->retrain_rows <= 0) {
    out << "cost models    retraining off (mltuned --retrain-rows 0, or no mltune CLI found)\n";
    return kExitOk;
  }
  out << absl::StrFormat(
      "cost models    retrained at %d new training rows, after %g s without jobs\n",
      s->retrain_rows, s->retrain_idle_seconds);
  // Models with neither a version nor rows (a spec no job has used) would only be noise.
  bool any = false;
  for (const CostModelInfo& m : s->cost_models) {
    if (m.version == 0 && m.new_rows == 0 && !m.training) continue;
    any = true;
    out << absl::StrFormat("  %-30s %-5s %d new rows%s%s\n", m.name,
                           m.version > 0 ? absl::StrCat("v", m.version) : "-", m.new_rows,
                           m.training ? ", training now" : "",
                           m.last_outcome.empty() ? "" : ", last retraining " + m.last_outcome);
  }
  if (!any) {
    out << (s->cost_models_counted_ms == 0 ? "  (not counted yet)\n"
                                           : "  (no model and no training rows yet)\n");
  }
  return kExitOk;
}

ConnectionFlags& GlobalConnectionFlags() {
  static ConnectionFlags flags;
  return flags;
}

}  // namespace mltune::client
