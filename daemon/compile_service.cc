#include "daemon/compile_service.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "backends/gpu/device.h"
#include "daemon/graph_input.h"
#include "daemon/graph_upload.h"
#include "daemon/pretrained_models.h"
#include "daemon/rpc_scope.h"
#include "daemon/sim_workers.h"
#include "daemon/task.h"
#include "daemon/version.h"
#include "daemon/xla_tasks.h"
#include "optimizers/core/search.h"
#include "optimizers/guided/stored_cost_models.h"

namespace mltune::daemon {
namespace {

namespace v1 = ::mltune::v1;
using Clock = std::chrono::steady_clock;

v1::JobState ToWire(storage::JobState state) {
  switch (state) {
    case storage::JobState::kQueued:
      return v1::JOB_STATE_QUEUED;
    case storage::JobState::kRunning:
      return v1::JOB_STATE_RUNNING;
    case storage::JobState::kDone:
      return v1::JOB_STATE_DONE;
    case storage::JobState::kFailed:
      return v1::JOB_STATE_FAILED;
    case storage::JobState::kCancelled:
      return v1::JOB_STATE_CANCELLED;
  }
  return v1::JOB_STATE_UNSPECIFIED;
}

bool IsFinal(storage::JobState state) {
  return state == storage::JobState::kDone || state == storage::JobState::kFailed ||
         state == storage::JobState::kCancelled;
}

GraphFormat FromWire(v1::GraphFormat format) {
  return format == v1::GRAPH_FORMAT_ONNX ? GraphFormat::kOnnx : GraphFormat::kHloText;
}

absl::Status CheckJobId(const std::string& id) {
  if (id.empty()) return absl::InvalidArgumentError("job_id is empty");
  return absl::OkStatus();
}

}  // namespace

CompileServiceImpl::CompileServiceImpl(const DaemonConfig& config, storage::Store& store,
                                       Metrics& metrics, JobScheduler& scheduler,
                                       const ModelRefresher& refresher, std::string metrics_address,
                                       const AccessPolicy& access, RemoteWorkerPool& remote_workers)
    : config_(config),
      store_(store),
      metrics_(metrics),
      scheduler_(scheduler),
      refresher_(refresher),
      metrics_address_(std::move(metrics_address)),
      start_(Clock::now()),
      access_(access),
      remote_workers_(remote_workers) {}

absl::StatusOr<std::string> CompileServiceImpl::GraphSha256(const v1::Graph& graph) const {
  if (graph.sha256().empty()) return GraphHash(graph.data());
  if (!graph.data().empty()) {
    return absl::InvalidArgumentError(
        "the graph has both data and sha256: send its bytes inline or refer to an uploaded graph "
        "by hash, not both");
  }
  return absl::AsciiStrToLower(graph.sha256());
}

absl::StatusOr<std::string> CompileServiceImpl::StoredGraph(const std::string& sha256,
                                                            const std::string& name) const {
  const std::string display = name.empty() ? "<graph>" : name;
  if (absl::Status s = CheckGraphHash(sha256); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(display, ": ", s.message()));
  }
  absl::StatusOr<std::optional<std::string>> bytes = store_.GetGraph(sha256);
  if (!bytes.ok()) return bytes.status();
  if (!bytes->has_value()) {
    return absl::NotFoundError(absl::StrCat(display, ": no graph with sha256 ", sha256,
                                            " is stored here; upload it first (UploadGraph)"));
  }
  // The store could have been damaged behind the daemon's back; a wrong graph would be tuned and
  // cached under another graph's key.
  if (GraphHash(**bytes) != sha256) {
    return absl::DataLossError(
        absl::StrCat(display, ": the stored graph ", sha256, " no longer matches its hash"));
  }
  return **std::move(bytes);
}

absl::Status CompileServiceImpl::LoadModule(const v1::Graph& graph, const std::string& sha256,
                                            JobSpec* spec) const {
  GraphLimits limits;
  limits.max_bytes = config_.max_graph_bytes;
  limits.max_instructions = config_.max_instructions;
  std::string stored;  // the bytes of a graph given by hash
  std::string_view data = graph.data();
  if (!graph.sha256().empty()) {
    absl::StatusOr<std::string> bytes = StoredGraph(sha256, graph.name());
    if (!bytes.ok()) return bytes.status();
    stored = *std::move(bytes);
    data = stored;
  }
  absl::StatusOr<LoadedGraph> loaded =
      LoadGraph(data, FromWire(graph.format()), graph.name(), limits);
  if (!loaded.ok()) return loaded.status();
  fingerprints_.Insert(sha256, loaded->format, loaded->fingerprint);
  spec->module = std::move(loaded->module);
  spec->fingerprint = std::move(loaded->fingerprint);
  return absl::OkStatus();
}

absl::StatusOr<std::string> CompileServiceImpl::GraphFingerprint(const v1::Graph& graph) const {
  absl::StatusOr<std::string> sha256 = GraphSha256(graph);
  if (!sha256.ok()) return sha256.status();
  std::optional<std::string> known = fingerprints_.Find(*sha256, FromWire(graph.format()));
  if (known.has_value()) return *known;
  JobSpec spec;
  if (absl::Status s = LoadModule(graph, *sha256, &spec); !s.ok()) return s;
  return spec.fingerprint;
}

absl::Status CompileServiceImpl::CheckStrategy(const JobSpec& spec) const {
  const opt::StrategyRegistry& strategies = opt::StrategyRegistry::Global();
  if (strategies.Create(spec.strategy).ok()) return absl::OkStatus();
  // Otherwise every task must run it itself, with its model trained.
  std::vector<std::string> known = strategies.Names();
  bool own_by_all = true;
  for (const std::string& name : spec.tasks) {
    const Task* task = TaskRegistry::Global().Find(name);
    bool own = false;
    for (const Task::OwnStrategy& strategy : task->own_strategies()) {
      known.push_back(strategy.name);
      if (strategy.name != spec.strategy) continue;
      own = true;
      const std::string model_name = strategy.ModelFor(spec.target);
      if (model_name.empty()) continue;
      absl::StatusOr<std::optional<storage::ModelRecord>> model = store_.LatestModel(model_name);
      if (!model.ok()) return model.status();
      if (!model->has_value()) {
        const std::string args =
            absl::StrCat(" --task ", name, " --target ", spec.target, " --db ", store_.path());
        const std::string train = absl::StartsWith(model_name, "cost-model/")
                                      ? absl::StrCat("mltune collect FILES", args,
                                                     "` then `mltune train-cost-model", args)
                                      : absl::StrCat("mltune train-agent --task ", name, " --algo ",
                                                     absl::StripPrefix(spec.strategy, "rl-"),
                                                     " --graphs DIR --store ", store_.path());
        return absl::FailedPreconditionError(
            absl::StrCat("strategy ", spec.strategy, " needs a trained model ", model_name,
                         " and the store has none; train one with `", train, "`"));
      }
    }
    own_by_all = own_by_all && own;
  }
  if (own_by_all) return absl::OkStatus();
  std::sort(known.begin(), known.end());
  known.erase(std::unique(known.begin(), known.end()), known.end());
  return absl::InvalidArgumentError(absl::StrCat("unknown strategy '", spec.strategy,
                                                 "' (known: ", absl::StrJoin(known, ", "), ")"));
}

absl::StatusOr<JobSpec> CompileServiceImpl::BuildSpec(const v1::SubmitCompileRequest& request,
                                                      bool need_module) const {
  JobSpec spec;
  // Cheap checks first: a bad parameter should not cost a parse of a large graph.
  // A worker name (tpu-sim, ...) means its default spec; the cache keys on the spec's name.
  spec.target = ResolveTarget(request.target().empty() ? "cpu" : request.target());
  for (const std::string& name : request.tasks()) spec.tasks.push_back(name);
  if (spec.tasks.empty()) {
    const SimWorker* simulated = WorkerForTarget(spec.target);
    spec.tasks.push_back(simulated != nullptr ? simulated->default_task : "pass-order");
  }
  std::set<std::string> seen;
  std::vector<std::string> known;
  for (const Task* task : TaskRegistry::Global().All()) known.emplace_back(task->name());
  spec.options = TaskOptions(request.options().begin(), request.options().end());
  for (const std::string& name : spec.tasks) {
    const Task* task = TaskRegistry::Global().Find(name);
    if (task == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("unknown task '", name, "' (known: ", absl::StrJoin(known, ", "), ")"));
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat("task '", name, "' is named twice"));
    }
    const std::vector<std::string> targets = task->targets();
    if (std::find(targets.begin(), targets.end(), spec.target) == targets.end()) {
      return absl::InvalidArgumentError(absl::StrCat("task ", name, " has no target '", spec.target,
                                                     "' (known: ", absl::StrJoin(targets, ", "),
                                                     ")"));
    }
    if (absl::Status s = task->ValidateOptions(spec.options, spec.target); !s.ok()) return s;
  }
  spec.strategy = request.strategy().empty() ? config_.default_strategy : request.strategy();
  if (absl::Status s = CheckStrategy(spec); !s.ok()) return s;
  const int64_t steps = request.budget().steps();
  if (steps < 0) {
    return absl::InvalidArgumentError(absl::StrCat("budget.steps is ", steps, "; must be >= 0"));
  }
  if (steps > config_.max_budget_steps) {
    return absl::InvalidArgumentError(
        absl::StrCat("budget.steps ", steps, " exceeds this daemon's limit of ",
                     config_.max_budget_steps, " (--max-budget-steps)"));
  }
  spec.budget_steps = steps == 0 ? config_.default_budget_steps : steps;
  const double seconds = request.budget().seconds();
  if (!std::isfinite(seconds) || seconds < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("budget.seconds is ", seconds, "; must be a finite number >= 0"));
  }
  spec.budget_seconds = seconds;
  spec.skip_cache = request.skip_cache();
  spec.graph_name = request.graph().name();

  absl::StatusOr<std::string> sha256 = GraphSha256(request.graph());
  if (!sha256.ok()) return sha256.status();
  spec.graph_sha256 = *sha256;
  if (!need_module) {
    std::optional<std::string> known =
        fingerprints_.Find(*sha256, FromWire(request.graph().format()));
    if (known.has_value()) {
      spec.fingerprint = *std::move(known);
      return spec;
    }
  }
  if (absl::Status s = LoadModule(request.graph(), *sha256, &spec); !s.ok()) return s;
  return spec;
}

absl::StatusOr<JobSpec> CompileServiceImpl::DecodeStoredJob(
    const storage::JobRecord& record) const {
  v1::SubmitCompileRequest request;
  if (!request.ParseFromString(record.request)) {
    return absl::DataLossError(absl::StrCat("job ", record.id, ": the stored request is corrupt"));
  }
  absl::StatusOr<JobSpec> spec = BuildSpec(request, /*need_module=*/true);
  if (!spec.ok()) return spec.status();
  spec->request = record.request;
  if (spec->fingerprint != record.key.fingerprint) {
    // The fingerprint changed with the code (a new version reads the graph differently).
    return absl::FailedPreconditionError(
        absl::StrCat("job ", record.id, ": the graph's fingerprint changed since it was queued"));
  }
  return spec;
}

absl::Status CompileServiceImpl::FillResult(const storage::ResultRecord& record, bool from_cache,
                                            bool omit_artifacts, v1::TaskResult* result) const {
  result->set_task(record.key.task);
  result->set_target(record.key.target);
  result->set_fingerprint(record.key.fingerprint);
  result->set_strategy(record.strategy);
  result->set_original_score(record.original_score.value_or(0));
  result->set_baseline_score(record.baseline_score);
  result->set_tuned_score(record.tuned_score);
  result->set_budget_steps(record.budget_steps);
  if (!omit_artifacts) {
    for (const auto& [name, data] : record.artifacts) (*result->mutable_artifacts())[name] = data;
  }
  v1::Provenance* provenance = result->mutable_provenance();
  provenance->set_worker(record.provenance.worker);
  provenance->set_mltune_version(record.provenance.mltune_version);
  provenance->set_search_version(record.key.search_version);
  provenance->set_created_unix_ms(record.provenance.created_ms);
  provenance->set_updated_unix_ms(record.provenance.updated_ms);
  result->set_from_cache(from_cache);
  result->set_cache_hits(record.hit_count);
  return absl::OkStatus();
}

namespace {
// What a job was asked to do, as the wire shows it.
void FillRequestFields(const JobSpec& spec, v1::Job* job) {
  for (const std::string& task : spec.tasks) job->add_tasks(task);
  job->set_target(spec.target);
  job->set_strategy(spec.strategy);
  job->mutable_budget()->set_steps(spec.budget_steps);
  job->mutable_budget()->set_seconds(spec.budget_seconds);
  job->set_fingerprint(spec.fingerprint);
  job->set_graph_name(spec.graph_name);
}
}  // namespace

absl::Status CompileServiceImpl::FillJob(const JobView& view, v1::Job* job) {
  const storage::JobRecord& r = view.record;
  job->set_job_id(r.id);
  job->set_state(ToWire(r.state));
  if (view.spec != nullptr) {
    FillRequestFields(*view.spec, job);
  } else {
    // Only the store knows this job: its row has the key and budget, the stored request the rest.
    for (absl::string_view task : absl::StrSplit(r.key.task, ','))
      job->add_tasks(std::string(task));
    job->set_target(r.key.target);
    job->set_strategy(r.strategy);
    job->mutable_budget()->set_steps(r.budget_steps);
    job->set_fingerprint(r.key.fingerprint);
    v1::SubmitCompileRequest request;
    if (request.ParseFromString(r.request)) {
      job->mutable_budget()->set_seconds(request.budget().seconds());
      job->set_graph_name(request.graph().name());
    }
  }
  job->set_progress(r.progress);
  if (r.best_score.has_value()) job->set_best_score(*r.best_score);
  job->set_steps_done(view.steps_done);
  job->set_error(r.error);
  job->set_attempts(r.attempts);
  job->set_created_unix_ms(r.created_ms);
  job->set_started_unix_ms(r.started_ms);
  job->set_finished_unix_ms(r.finished_ms);
  if (r.state == storage::JobState::kDone) {
    for (const std::string& task : job->tasks()) {
      // The spec knows the options, hence the score variant of each task's key.
      const storage::CacheKey key =
          view.spec != nullptr
              ? view.spec->TaskKey(task)
              : storage::CacheKey{r.key.fingerprint, task, r.key.target, r.key.search_version};
      absl::StatusOr<std::optional<storage::ResultRecord>> result = store_.LookupResult(key);
      if (!result.ok()) return result.status();
      if (!result->has_value()) continue;
      absl::Status s = FillResult(**result, false, false, job->add_results());
      if (!s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<const TokenGrant*> CompileServiceImpl::Caller(const grpc::ServerContextBase& context,
                                                             Role role, const char* method) const {
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find("authorization");
  const std::string_view header = it == metadata.end()
                                      ? std::string_view()
                                      : std::string_view(it->second.data(), it->second.size());
  return access_.Authorize(header, role, method);
}

grpc::Status CompileServiceImpl::Admit(const grpc::ServerContextBase& context, Role role,
                                       const char* method) {
  absl::StatusOr<const TokenGrant*> caller = Caller(context, role, method);
  if (caller.ok()) return grpc::Status::OK;
  RpcScope scope(metrics_, method);
  return scope.Done(caller.status());
}

absl::Status CompileServiceImpl::Reserve(const TokenGrant& grant) {
  if (grant.max_queued <= 0) return absl::OkStatus();
  std::lock_guard<std::mutex> lock(owned_mu_);
  Owned& owned = owned_[grant.name];
  std::erase_if(owned.jobs, [this](const std::string& id) {
    absl::StatusOr<JobView> view = scheduler_.Get(id);
    return !view.ok() || IsFinal(view->record.state);
  });
  const int64_t held = static_cast<int64_t>(owned.jobs.size()) + owned.pending;
  if (held >= grant.max_queued) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "token '", grant.name, "' has ", held, " jobs queued or running, its limit (max_queued=",
        grant.max_queued, "); wait for one to finish"));
  }
  ++owned.pending;
  return absl::OkStatus();
}

void CompileServiceImpl::Release(const TokenGrant& grant, const std::string& job_id) {
  if (grant.max_queued <= 0) return;
  std::lock_guard<std::mutex> lock(owned_mu_);
  Owned& owned = owned_[grant.name];
  --owned.pending;
  if (!job_id.empty() &&
      std::find(owned.jobs.begin(), owned.jobs.end(), job_id) == owned.jobs.end()) {
    owned.jobs.push_back(job_id);
  }
}

grpc::Status CompileServiceImpl::SubmitCompile(grpc::ServerContext* context,
                                               const v1::SubmitCompileRequest* request,
                                               v1::SubmitCompileResponse* response) {
  RpcScope scope(metrics_, "SubmitCompile");
  absl::StatusOr<const TokenGrant*> caller = Caller(*context, Role::kSubmit, "SubmitCompile");
  if (!caller.ok()) return scope.Done(caller.status());
  // A graph seen before is not parsed again unless the cache cannot answer.
  absl::StatusOr<JobSpec> spec = BuildSpec(*request, /*need_module=*/false);
  if (!spec.ok()) return scope.Done(spec.status());

  // The cache answers when every task has a result with at least the requested budget.
  if (!spec->skip_cache) {
    std::vector<storage::ResultRecord> hits;
    for (const std::string& task : spec->tasks) {
      absl::StatusOr<std::optional<storage::ResultRecord>> cached =
          store_.LookupResult(spec->TaskKey(task));
      if (!cached.ok()) return scope.Done(cached.status());
      if (storage::Decide(*cached, spec->budget_steps) != storage::CacheDecision::kHit) break;
      hits.push_back(**cached);
    }
    if (hits.size() == spec->tasks.size()) {
      v1::Job* job = response->mutable_job();
      job->set_state(v1::JOB_STATE_DONE);
      FillRequestFields(*spec, job);
      job->set_progress(1);
      for (storage::ResultRecord& hit : hits) {
        absl::StatusOr<int64_t> count = store_.RecordHit(hit.key);
        if (count.ok()) hit.hit_count = *count;
        absl::Status s = FillResult(hit, true, false, job->add_results());
        if (!s.ok()) return scope.Done(s);
        metrics_.CacheHit(hit.key.task);
        ++cache_hits_;
      }
      job->set_best_score(hits.back().tuned_score);
      response->set_cached(true);
      return scope.Done(absl::OkStatus());
    }
  }
  for (const std::string& task : spec->tasks) metrics_.CacheMiss(task);
  ++cache_misses_;
  if (spec->module == nullptr) {
    if (absl::Status s = LoadModule(request->graph(), spec->graph_sha256, &*spec); !s.ok()) {
      return scope.Done(s);
    }
  }
  absl::StatusOr<std::string> stored = StoredRequest(*request, spec->graph_sha256);
  if (!stored.ok()) return scope.Done(stored.status());
  spec->request = *std::move(stored);
  const TokenGrant* grant = *caller;
  if (grant != nullptr) {
    if (absl::Status s = Reserve(*grant); !s.ok()) return scope.Done(s);
  }
  absl::StatusOr<JobScheduler::Submitted> submitted =
      scheduler_.Submit(std::make_shared<const JobSpec>(*std::move(spec)));
  if (grant != nullptr) Release(*grant, submitted.ok() ? submitted->job_id : "");
  if (!submitted.ok()) return scope.Done(submitted.status());
  response->set_job_id(submitted->job_id);
  response->set_attached(submitted->attached);
  absl::StatusOr<JobView> view = scheduler_.Get(submitted->job_id);
  if (!view.ok()) return scope.Done(view.status());
  return scope.Done(FillJob(*view, response->mutable_job()));
}

absl::StatusOr<std::string> CompileServiceImpl::StoredRequest(
    const v1::SubmitCompileRequest& request, const std::string& sha256) {
  if (request.graph().data().empty()) return request.SerializeAsString();
  absl::StatusOr<bool> put = store_.PutGraph(sha256, request.graph().data());
  if (!put.ok()) return put.status();
  v1::SubmitCompileRequest stored = request;
  stored.mutable_graph()->clear_data();
  stored.mutable_graph()->set_sha256(sha256);
  return stored.SerializeAsString();
}

grpc::Status CompileServiceImpl::HasGraph(grpc::ServerContext* context,
                                          const v1::HasGraphRequest* request,
                                          v1::HasGraphResponse* response) {
  RpcScope scope(metrics_, "HasGraph");
  if (absl::StatusOr<const TokenGrant*> caller = Caller(*context, Role::kRead, "HasGraph");
      !caller.ok()) {
    return scope.Done(caller.status());
  }
  const std::string sha256 = absl::AsciiStrToLower(request->sha256());
  if (absl::Status s = CheckGraphHash(sha256); !s.ok()) return scope.Done(s);
  absl::StatusOr<std::optional<int64_t>> size = store_.GraphSize(sha256);
  if (!size.ok()) return scope.Done(size.status());
  response->set_stored(size->has_value());
  response->set_size(size->value_or(0));
  return scope.Done(absl::OkStatus());
}

grpc::Status CompileServiceImpl::UploadGraph(grpc::ServerContext* context,
                                             grpc::ServerReader<v1::GraphChunk>* reader,
                                             v1::GraphRef* response) {
  RpcScope scope(metrics_, "UploadGraph");
  if (absl::StatusOr<const TokenGrant*> caller = Caller(*context, Role::kSubmit, "UploadGraph");
      !caller.ok()) {
    return scope.Done(caller.status());
  }
  v1::GraphChunk chunk;
  if (!reader->Read(&chunk)) {
    return scope.Done(absl::InvalidArgumentError("UploadGraph: the stream had no chunk"));
  }
  const std::string sha256 = absl::AsciiStrToLower(chunk.sha256());
  // A graph stored before is answered at once: the client may stop sending.
  if (CheckGraphHash(sha256).ok()) {
    absl::StatusOr<std::optional<int64_t>> size = store_.GraphSize(sha256);
    if (!size.ok()) return scope.Done(size.status());
    if (size->has_value()) {
      response->set_sha256(sha256);
      response->set_size(**size);
      response->set_already_stored(true);
      return scope.Done(absl::OkStatus());
    }
  }
  absl::StatusOr<std::unique_ptr<GraphUpload>> upload =
      GraphUpload::Begin(chunk.sha256(), chunk.size(), config_.max_graph_bytes,
                         std::filesystem::path(config_.data_dir) / "uploads");
  if (!upload.ok()) return scope.Done(upload.status());
  do {
    absl::Status s = (*upload)->Add(chunk.sha256(), chunk.size(), chunk.offset(), chunk.data());
    if (!s.ok()) return scope.Done(s);
  } while (reader->Read(&chunk));
  if (context->IsCancelled()) {
    return scope.Done(absl::CancelledError("UploadGraph: the client cancelled the upload"));
  }
  absl::StatusOr<bool> stored = (*upload)->Finish(store_);
  if (!stored.ok()) return scope.Done(stored.status());
  response->set_sha256((*upload)->sha256());
  response->set_size((*upload)->size());
  response->set_already_stored(!*stored);
  return scope.Done(absl::OkStatus());
}

grpc::Status CompileServiceImpl::WatchJob(grpc::ServerContext* context,
                                          const v1::WatchJobRequest* request,
                                          grpc::ServerWriter<v1::Job>* writer) {
  RpcScope scope(metrics_, "WatchJob");
  if (absl::StatusOr<const TokenGrant*> caller = Caller(*context, Role::kRead, "WatchJob");
      !caller.ok()) {
    return scope.Done(caller.status());
  }
  if (absl::Status s = CheckJobId(request->job_id()); !s.ok()) return scope.Done(s);
  int64_t sent_version = -1;
  while (true) {
    absl::StatusOr<JobView> view = scheduler_.Get(request->job_id());
    if (!view.ok()) return scope.Done(view.status());
    if (!view->live || view->version != sent_version) {
      v1::Job job;
      if (absl::Status s = FillJob(*view, &job); !s.ok()) return scope.Done(s);
      if (!writer->Write(job)) {
        return scope.Done(absl::CancelledError("the watcher went away"));
      }
      sent_version = view->version;
    }
    if (IsFinal(view->record.state)) return scope.Done(absl::OkStatus());
    if (!view->live || scheduler_.stopped()) {
      return scope.Done(absl::UnavailableError(
          absl::StrCat("mltuned is shutting down; job ", request->job_id(),
                       " stays queued and resumes when the daemon restarts")));
    }
    if (context->IsCancelled()) return scope.Done(absl::CancelledError("the watcher went away"));
    scheduler_.WaitForChange(request->job_id(), sent_version, std::chrono::milliseconds(500));
  }
}

grpc::Status CompileServiceImpl::DoGetJob(const v1::GetJobRequest& r, v1::Job* response) {
  const v1::GetJobRequest* request = &r;
  RpcScope scope(metrics_, "GetJob");
  if (absl::Status s = CheckJobId(request->job_id()); !s.ok()) return scope.Done(s);
  absl::StatusOr<JobView> view = scheduler_.Get(request->job_id());
  if (!view.ok()) return scope.Done(view.status());
  return scope.Done(FillJob(*view, response));
}

grpc::Status CompileServiceImpl::DoCancelJob(const v1::CancelJobRequest& r,
                                             v1::CancelJobResponse* response) {
  const v1::CancelJobRequest* request = &r;
  RpcScope scope(metrics_, "CancelJob");
  if (absl::Status s = CheckJobId(request->job_id()); !s.ok()) return scope.Done(s);
  absl::StatusOr<JobView> view = scheduler_.Cancel(request->job_id());
  if (!view.ok()) return scope.Done(view.status());
  return scope.Done(FillJob(*view, response->mutable_job()));
}

grpc::Status CompileServiceImpl::DoLookupCache(const v1::LookupCacheRequest& r,
                                               v1::LookupCacheResponse* response) {
  const v1::LookupCacheRequest* request = &r;
  RpcScope scope(metrics_, "LookupCache");
  std::string fingerprint;
  if (request->has_graph()) {
    absl::StatusOr<std::string> graph_fingerprint = GraphFingerprint(request->graph());
    if (!graph_fingerprint.ok()) return scope.Done(graph_fingerprint.status());
    fingerprint = *std::move(graph_fingerprint);
  } else if (!request->fingerprint().empty()) {
    fingerprint = request->fingerprint();
  } else {
    return scope.Done(absl::InvalidArgumentError("give a graph or a fingerprint to look up"));
  }
  response->set_fingerprint(fingerprint);
  absl::StatusOr<std::vector<storage::ResultRecord>> results =
      store_.LookupResultsByFingerprint(fingerprint);
  if (!results.ok()) return scope.Done(results.status());
  for (const storage::ResultRecord& record : *results) {
    if (!IsCurrentSearchVersion(record.key.search_version)) continue;
    if (!request->task().empty() && record.key.task != request->task()) continue;
    if (!request->target().empty() && record.key.target != ResolveTarget(request->target())) {
      continue;
    }
    absl::Status s = FillResult(record, true, request->omit_artifacts(), response->add_results());
    if (!s.ok()) return scope.Done(s);
  }
  return scope.Done(absl::OkStatus());
}

grpc::Status CompileServiceImpl::DoListStrategies(v1::ListStrategiesResponse* response) {
  RpcScope scope(metrics_, "ListStrategies");
  const opt::StrategyRegistry& strategies = opt::StrategyRegistry::Global();
  for (const std::string& name : strategies.Names()) {
    v1::StrategyInfo* info = response->add_strategies();
    info->set_name(name);
    info->set_description(strategies.Description(name));
  }
  for (const Task* task : TaskRegistry::Global().All()) {
    for (const Task::OwnStrategy& strategy : task->own_strategies()) {
      v1::StrategyInfo* info = response->add_strategies();
      info->set_name(strategy.name);
      // The newest model served on each of the task's targets (agents: one for all).
      std::vector<std::string> served;
      std::set<std::string> asked;
      for (const std::string& target : task->targets()) {
        const std::string name = strategy.ModelFor(target);
        if (name.empty() || !asked.insert(name).second) continue;
        absl::StatusOr<std::optional<storage::ModelRecord>> record = store_.LatestModel(name);
        if (record.ok() && record->has_value()) {
          served.push_back(
              absl::StrCat(name, " v", (*record)->version, " (", ModelOrigin(**record), ")"));
        }
      }
      // A strategy that needs no model (the constraint solver's) says nothing of one.
      std::string model;
      if (!served.empty()) {
        model = absl::StrCat("; ", served.size() == 1 ? "model " : "models ",
                             absl::StrJoin(served, ", "));
      } else if (strategy.model) {
        model = "; no trained model yet";
      }
      info->set_description(
          absl::StrCat(std::string(task->name()), " only: ", strategy.description, model));
    }
    v1::TaskInfo* info = response->add_tasks();
    info->set_name(std::string(task->name()));
    info->set_description(task->description());
    for (const std::string& target : task->targets()) info->add_targets(target);
  }
  response->set_default_strategy(config_.default_strategy);
  return scope.Done(absl::OkStatus());
}

grpc::Status CompileServiceImpl::DoListWorkers(v1::ListWorkersResponse* response) {
  RpcScope scope(metrics_, "ListWorkers");
  std::set<std::string> targets;
  // Job threads score in-process only the targets no simulator serves (cpu, gpu).
  for (const Task* task : TaskRegistry::Global().All()) {
    for (const std::string& target : task->targets()) {
      if (WorkerForTarget(target) == nullptr && !IsXlaTarget(target)) targets.insert(target);
    }
  }
  for (const WorkerView& worker : scheduler_.Workers()) {
    v1::WorkerInfo* info = response->add_workers();
    info->set_name(worker.name);
    info->set_kind("in-process");
    for (const std::string& target : targets) info->add_targets(target);
    info->set_scorer("op-count; measured seconds (tile, fusion, pass-order score=latency)");
    info->set_state(worker.job_id.empty() ? "idle" : "busy");
    info->set_job_id(worker.job_id);
    info->set_candidates_evaluated(worker.candidates_evaluated);
  }
  // The GPU: its device as the driver describes it, or why there is none. Probed once: cuInit
  // takes a while, and the device does not change under a running daemon.
  const absl::StatusOr<backends::gpu::DeviceDescriptor>* gpu = &backends::gpu::AttachedDevice();
  {
    v1::WorkerInfo* info = response->add_workers();
    info->set_name("gpu0");
    info->set_kind("gpu");
    info->add_targets("gpu");
    info->set_scorer("measured seconds of generated CUDA (mltune run --target gpu); no tasks yet");
    info->set_state(gpu->ok() ? "idle" : "absent");
    info->set_device(gpu->ok() ? (*gpu)->Key() : std::string(gpu->status().message()));
  }
  // XLA itself (xla-cpu, xla-gpu): its jaxlib child's device, or why there is none.
  for (const std::string& target : XlaTargets()) {
    backends::xla::XlaWorker& xla = backends::xla::XlaWorker::Shared(XlaPlatformOf(target));
    const absl::StatusOr<backends::xla::XlaWorkerInfo> described = xla.Describe();
    v1::WorkerInfo* info = response->add_workers();
    info->set_name(target);
    info->set_kind("xla");
    info->add_targets(target);
    info->set_scorer("XLA's measured seconds (jaxlib compiling as jax.jit does)");
    info->set_state(described.ok() ? "idle" : "absent");
    info->set_device(described.ok() ? absl::StrCat(described->device, ", jax ", described->jax)
                                    : std::string(described.status().message()));
  }
  // Remote measurement workers, live and lost, with their hosts.
  for (const RemoteWorkerView& remote : remote_workers_.Workers()) {
    v1::WorkerInfo* info = response->add_workers();
    info->set_name(remote.id);
    info->set_kind("remote");
    info->add_targets(remote.target);
    info->set_scorer("measured seconds of generated code, on the worker's host");
    info->set_state(remote.state);
    info->set_candidates_evaluated(remote.measured);
    info->set_device(remote.device);
    info->set_host(remote.host);
  }
  // The simulators score the candidates of jobs on their targets, whichever thread runs them.
  const std::map<std::string, int64_t> simulated = scheduler_.SimulatedCandidates();
  const std::vector<WorkerView> threads = scheduler_.Workers();
  for (const SimWorker& sim : SimWorkers()) {
    v1::WorkerInfo* info = response->add_workers();
    info->set_name(sim.name);
    info->set_kind("simulator");
    for (const std::string& target : TargetsOf(sim)) info->add_targets(target);
    info->set_scorer(sim.scorer);
    std::string busy_job;
    for (const WorkerView& thread : threads) {
      const SimWorker* serving = WorkerForTarget(thread.target);
      if (!thread.job_id.empty() && serving != nullptr && serving->name == sim.name) {
        busy_job = thread.job_id;
      }
    }
    info->set_state(busy_job.empty() ? "idle" : "busy");
    info->set_job_id(busy_job);
    auto it = simulated.find(sim.name);
    info->set_candidates_evaluated(it == simulated.end() ? 0 : it->second);
  }
  return scope.Done(absl::OkStatus());
}

grpc::Status CompileServiceImpl::DoGetStats(v1::GetStatsResponse* response) {
  RpcScope scope(metrics_, "GetStats");
  response->set_version(kMltuneVersion);
  response->set_search_version(kSearchVersion);
  response->set_uptime_seconds(std::chrono::duration<double>(Clock::now() - start_).count());
  response->set_queue_depth(scheduler_.queue_depth());
  response->set_queue_capacity(scheduler_.queue_capacity());
  response->set_jobs_running(scheduler_.running());
  response->set_worker_threads(scheduler_.worker_threads());
  absl::StatusOr<std::map<std::string, int64_t>> jobs = store_.CountJobsByState();
  if (!jobs.ok()) return scope.Done(jobs.status());
  for (const auto& [state, count] : *jobs) (*response->mutable_jobs_by_state())[state] = count;
  response->set_cache_hits(cache_hits_);
  response->set_cache_misses(cache_misses_);
  absl::StatusOr<int64_t> results = store_.CountResults();
  if (!results.ok()) return scope.Done(results.status());
  response->set_cached_results(*results);
  absl::StatusOr<int64_t> measurements = store_.CountMeasurements();
  if (!measurements.ok()) return scope.Done(measurements.status());
  response->set_measurements(*measurements);
  absl::StatusOr<storage::GraphTotals> graphs = store_.CountGraphs();
  if (!graphs.ok()) return scope.Done(graphs.status());
  response->set_stored_graphs(graphs->graphs);
  response->set_stored_graph_bytes(graphs->bytes);
  response->set_max_graph_bytes(config_.max_graph_bytes);
  response->set_data_dir(config_.data_dir);
  response->set_store_path(store_.path());
  response->set_metrics_address(metrics_address_);
  const RefresherStatus retraining = refresher_.Status();
  response->set_retrain_rows(retraining.min_new_rows);
  response->set_retrain_idle_seconds(retraining.idle_seconds);
  response->set_cost_models_counted_ms(retraining.counted_ms);
  for (const ModelNewRows& m : retraining.models) {
    v1::CostModelStatus* model = response->add_cost_models();
    model->set_name(opt::guided::CostModelName(m.task, m.target));
    model->set_version(m.version);
    model->set_new_rows(m.new_rows);
    model->set_training(model->name() == retraining.training);
    if (auto last = retraining.last.find(model->name()); last != retraining.last.end()) {
      model->set_last_outcome(last->second.outcome);
      model->set_last_outcome_ms(last->second.ended_ms);
    }
  }
  return scope.Done(absl::OkStatus());
}

// The callback entry points answer inline (see CompileServiceBase).
namespace {
grpc::ServerUnaryReactor* FinishNow(grpc::CallbackServerContext* context,
                                    const grpc::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(status);
  return reactor;
}
}  // namespace

grpc::ServerUnaryReactor* CompileServiceImpl::GetJob(grpc::CallbackServerContext* context,
                                                     const v1::GetJobRequest* request,
                                                     v1::Job* response) {
  const grpc::Status admitted = Admit(*context, Role::kRead, "GetJob");
  return FinishNow(context, admitted.ok() ? DoGetJob(*request, response) : admitted);
}

grpc::ServerUnaryReactor* CompileServiceImpl::CancelJob(grpc::CallbackServerContext* context,
                                                        const v1::CancelJobRequest* request,
                                                        v1::CancelJobResponse* response) {
  const grpc::Status admitted = Admit(*context, Role::kAdmin, "CancelJob");
  return FinishNow(context, admitted.ok() ? DoCancelJob(*request, response) : admitted);
}

grpc::ServerUnaryReactor* CompileServiceImpl::LookupCache(grpc::CallbackServerContext* context,
                                                          const v1::LookupCacheRequest* request,
                                                          v1::LookupCacheResponse* response) {
  const grpc::Status admitted = Admit(*context, Role::kRead, "LookupCache");
  return FinishNow(context, admitted.ok() ? DoLookupCache(*request, response) : admitted);
}

grpc::ServerUnaryReactor* CompileServiceImpl::ListStrategies(grpc::CallbackServerContext* context,
                                                             const v1::ListStrategiesRequest*,
                                                             v1::ListStrategiesResponse* response) {
  const grpc::Status admitted = Admit(*context, Role::kRead, "ListStrategies");
  return FinishNow(context, admitted.ok() ? DoListStrategies(response) : admitted);
}

grpc::ServerUnaryReactor* CompileServiceImpl::ListWorkers(grpc::CallbackServerContext* context,
                                                          const v1::ListWorkersRequest*,
                                                          v1::ListWorkersResponse* response) {
  const grpc::Status admitted = Admit(*context, Role::kRead, "ListWorkers");
  return FinishNow(context, admitted.ok() ? DoListWorkers(response) : admitted);
}

grpc::ServerUnaryReactor* CompileServiceImpl::GetStats(grpc::CallbackServerContext* context,
                                                       const v1::GetStatsRequest*,
                                                       v1::GetStatsResponse* response) {
  const grpc::Status admitted = Admit(*context, Role::kRead, "GetStats");
  return FinishNow(context, admitted.ok() ? DoGetStats(response) : admitted);
}

}  // namespace mltune::daemon
