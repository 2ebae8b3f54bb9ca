// The client library over gRPC: plain structs in client/rpc_client.h, wire types only here.
#include "client/rpc_client.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "client/graph_source.h"
#include "frontends/onnx/onnx_import.h"
#include "mltune/v1/compile_service.grpc.pb.h"

namespace mltune::client {
namespace {

namespace pb = ::mltune::v1;

constexpr char kUnreachablePrefix[] = "cannot reach mltuned at ";

// ---- wire -> plain ----

JobState FromProto(pb::JobState state) {
  switch (state) {
    case pb::JOB_STATE_QUEUED:
      return JobState::kQueued;
    case pb::JOB_STATE_RUNNING:
      return JobState::kRunning;
    case pb::JOB_STATE_DONE:
      return JobState::kDone;
    case pb::JOB_STATE_FAILED:
      return JobState::kFailed;
    case pb::JOB_STATE_CANCELLED:
      return JobState::kCancelled;
    default:
      return JobState::kUnspecified;
  }
}

Budget FromProto(const pb::Budget& b) { return Budget{b.steps(), b.seconds()}; }

TaskResult FromProto(const pb::TaskResult& r) {
  TaskResult out;
  out.task = r.task();
  out.target = r.target();
  out.fingerprint = r.fingerprint();
  out.strategy = r.strategy();
  out.original_score = r.original_score();
  out.baseline_score = r.baseline_score();
  out.tuned_score = r.tuned_score();
  out.budget_steps = r.budget_steps();
  for (const auto& [name, bytes] : r.artifacts()) out.artifacts.emplace(name, bytes);
  const pb::Provenance& p = r.provenance();
  out.provenance = Provenance{p.worker(), p.mltune_version(), p.search_version(),
                              p.created_unix_ms(), p.updated_unix_ms()};
  out.from_cache = r.from_cache();
  out.cache_hits = r.cache_hits();
  return out;
}

JobInfo FromProto(const pb::Job& j) {
  JobInfo out;
  out.job_id = j.job_id();
  out.state = FromProto(j.state());
  out.tasks.assign(j.tasks().begin(), j.tasks().end());
  out.target = j.target();
  out.strategy = j.strategy();
  out.budget = FromProto(j.budget());
  out.fingerprint = j.fingerprint();
  out.graph_name = j.graph_name();
  out.progress = j.progress();
  if (j.has_best_score()) out.best_score = j.best_score();
  out.steps_done = j.steps_done();
  out.error = j.error();
  for (const pb::TaskResult& r : j.results()) out.results.push_back(FromProto(r));
  out.attempts = j.attempts();
  out.created_unix_ms = j.created_unix_ms();
  out.started_unix_ms = j.started_unix_ms();
  out.finished_unix_ms = j.finished_unix_ms();
  return out;
}

NamedInfo FromProto(const pb::StrategyInfo& s) { return NamedInfo{s.name(), s.description(), {}}; }

NamedInfo FromProto(const pb::TaskInfo& t) {
  return NamedInfo{t.name(), t.description(), {t.targets().begin(), t.targets().end()}};
}

WorkerInfo FromProto(const pb::WorkerInfo& w) {
  return WorkerInfo{w.name(),
                    w.kind(),
                    {w.targets().begin(), w.targets().end()},
                    w.scorer(),
                    w.state(),
                    w.job_id(),
                    w.candidates_evaluated(),
                    w.device(),
                    w.host()};
}

ServerStats FromProto(const pb::GetStatsResponse& s) {
  ServerStats out;
  out.version = s.version();
  out.search_version = s.search_version();
  out.uptime_seconds = s.uptime_seconds();
  out.queue_depth = s.queue_depth();
  out.queue_capacity = s.queue_capacity();
  out.jobs_running = s.jobs_running();
  out.worker_threads = s.worker_threads();
  out.jobs_by_state.insert(s.jobs_by_state().begin(), s.jobs_by_state().end());
  out.cache_hits = s.cache_hits();
  out.cache_misses = s.cache_misses();
  out.cached_results = s.cached_results();
  out.measurements = s.measurements();
  out.data_dir = s.data_dir();
  out.store_path = s.store_path();
  out.metrics_address = s.metrics_address();
  out.retrain_rows = s.retrain_rows();
  out.retrain_idle_seconds = s.retrain_idle_seconds();
  for (const pb::CostModelStatus& m : s.cost_models()) {
    out.cost_models.push_back(
        {m.name(), m.version(), m.new_rows(), m.training(), m.last_outcome(), m.last_outcome_ms()});
  }
  out.cost_models_counted_ms = s.cost_models_counted_ms();
  out.stored_graphs = s.stored_graphs();
  out.stored_graph_bytes = s.stored_graph_bytes();
  out.max_graph_bytes = s.max_graph_bytes();
  return out;
}

// ---- plain -> wire ----

// The request's fields but its graph (Client::Impl::WireGraph fills that in).
pb::SubmitCompileRequest ToProto(const SubmitRequest& r) {
  pb::SubmitCompileRequest out;
  for (const std::string& task : r.tasks) out.add_tasks(task);
  out.set_target(r.target);
  out.mutable_budget()->set_steps(r.budget.steps);
  out.mutable_budget()->set_seconds(r.budget.seconds);
  out.set_strategy(r.strategy);
  out.mutable_options()->insert(r.options.begin(), r.options.end());
  out.set_skip_cache(r.skip_cache);
  return out;
}

}  // namespace

std::string ServerAddress(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("MLTUNE_SERVER");
  if (env != nullptr && env[0] != '\0') return env;
  return kDefaultServer;
}

std::string_view JobStateName(JobState state) {
  switch (state) {
    case JobState::kQueued:
      return "queued";
    case JobState::kRunning:
      return "running";
    case JobState::kDone:
      return "done";
    case JobState::kFailed:
      return "failed";
    case JobState::kCancelled:
      return "cancelled";
    case JobState::kUnspecified:
      break;
  }
  return "unspecified";
}

bool IsFinal(JobState state) {
  return state == JobState::kDone || state == JobState::kFailed || state == JobState::kCancelled;
}

bool IsUnreachable(const absl::Status& status) {
  return (status.code() == absl::StatusCode::kUnavailable ||
          status.code() == absl::StatusCode::kDeadlineExceeded) &&
         absl::StartsWith(status.message(), kUnreachablePrefix);
}

namespace {

// A request's graph as the caller gave it: exactly one of bytes, a file and a stored hash.
struct GraphInput {
  const std::string& bytes;
  const std::string& file;
  const std::string& sha256;
  GraphFormat format;
  const std::string& name;
};

// Seconds on top of the call timeout for `bytes` moved at `bytes_per_second`.
double Extra(int64_t bytes, double bytes_per_second) {
  return static_cast<double>(bytes) / bytes_per_second;
}
constexpr double kUploadRate = 1 << 20;  // bytes/s: a slow link still finishes a large model
constexpr double kParseRate = 16 << 20;  // bytes/s: the daemon reading, hashing and parsing

}  // namespace

struct Client::Impl {
  std::string address;
  ClientOptions options;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<pb::CompileService::Stub> stub;
  std::string setup_error;  // a credentials file that could not be read: every call says so

  // The token on the call, or the credentials file that could not be read.
  absl::Status Prepare(grpc::ClientContext& context) const {
    if (!setup_error.empty()) return absl::InvalidArgumentError(setup_error);
    if (!options.token.empty()) context.AddMetadata("authorization", "Bearer " + options.token);
    return absl::OkStatus();
  }

  // Prepare, and the call's deadline (`extra_seconds` more for a large graph).
  absl::Status PrepareUnary(grpc::ClientContext& context, double extra_seconds = 0) const {
    if (options.call_timeout_seconds > 0) {
      context.set_deadline(
          std::chrono::system_clock::now() +
          std::chrono::duration_cast<std::chrono::system_clock::duration>(
              std::chrono::duration<double>(options.call_timeout_seconds + extra_seconds)));
    }
    return Prepare(context);
  }

  // HasGraph: the stored graph's size, or nullopt.
  absl::StatusOr<std::optional<int64_t>> StoredSize(const std::string& sha256) const;
  absl::StatusOr<GraphRef> Upload(const GraphSource& source) const;
  // Fills `graph` from `input`: inline up to kInlineGraphBytes (or from a daemon without
  // UploadGraph), else uploaded once and named by hash. `sent` says how it went.
  absl::Status WireGraph(const GraphInput& input, pb::Graph* graph, GraphRef* sent) const;

  absl::Status Unreachable(const std::string& detail) const {
    return absl::UnavailableError(absl::StrCat(
        kUnreachablePrefix, address, " (", detail,
        "): is it running? (start it with scripts/run, or set --server / MLTUNE_SERVER)"));
  }

  // Same code and the server's message, except when the channel never got (or lost) its
  // connection: then the caller needs to hear that the daemon is not there, not gRPC's jargon.
  absl::Status Convert(const grpc::Status& status) const {
    if (status.ok()) return absl::OkStatus();
    const bool connected = channel->GetState(/*try_to_connect=*/false) == GRPC_CHANNEL_READY;
    if (!connected && (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                       status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED)) {
      return Unreachable(status.error_message());
    }
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  }
};

ClientOptions ClientOptionsFromEnvironment() {
  ClientOptions options;
  for (auto [name, field] : {std::pair{"MLTUNE_CA", &options.ca_file},
                             {"MLTUNE_CERT", &options.cert_file},
                             {"MLTUNE_KEY", &options.key_file},
                             {"MLTUNE_TOKEN", &options.token}}) {
    if (const char* value = std::getenv(name); value != nullptr) *field = value;
  }
  return options;
}

namespace {

// The file's bytes, or "" with `error` set.
std::string ReadCredential(const char* what, const std::string& path, std::string* error) {
  if (path.empty()) return "";
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  if (in) text << in.rdbuf();
  if (!in || text.str().empty()) {
    if (error->empty()) *error = absl::StrCat("cannot read the ", what, " ", path);
    return "";
  }
  return text.str();
}

}  // namespace

std::unique_ptr<Client> Client::Connect(const std::string& address, ClientOptions options) {
  // A token read from a file usually ends in a newline, which gRPC refuses in a header value.
  options.token = std::string(absl::StripAsciiWhitespace(options.token));
  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(options.max_message_bytes);
  args.SetMaxReceiveMessageSize(options.max_message_bytes);
  // Its own connection per Client: otherwise gRPC shares one TCP connection between channels with
  // equal arguments, and N clients would not be N connections (bench/daemon_load relies on this).
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  auto impl = std::make_unique<Impl>();
  impl->address = address;
  impl->options = options;
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!options.ca_file.empty() || !options.cert_file.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = ReadCredential("CA file (--ca)", options.ca_file, &impl->setup_error);
    ssl.pem_cert_chain =
        ReadCredential("certificate (--cert)", options.cert_file, &impl->setup_error);
    ssl.pem_private_key = ReadCredential("key (--key)", options.key_file, &impl->setup_error);
    credentials = grpc::SslCredentials(ssl);
  }
  impl->channel = grpc::CreateCustomChannel(address, credentials, args);
  impl->stub = pb::CompileService::NewStub(impl->channel);
  return std::unique_ptr<Client>(new Client(std::move(impl)));
}

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

const std::string& Client::address() const { return impl_->address; }

absl::Status Client::WaitForReady(double seconds) {
  if (!impl_->setup_error.empty()) return absl::InvalidArgumentError(impl_->setup_error);
  const auto deadline = std::chrono::system_clock::now() +
                        std::chrono::duration_cast<std::chrono::system_clock::duration>(
                            std::chrono::duration<double>(seconds));
  if (impl_->channel->WaitForConnected(deadline)) return absl::OkStatus();
  return impl_->Unreachable(absl::StrCat("no connection within ", seconds, " s"));
}

absl::StatusOr<std::optional<int64_t>> Client::Impl::StoredSize(const std::string& sha256) const {
  grpc::ClientContext context;
  if (absl::Status s = PrepareUnary(context); !s.ok()) return s;
  pb::HasGraphRequest request;
  request.set_sha256(sha256);
  pb::HasGraphResponse response;
  grpc::Status status = stub->HasGraph(&context, request, &response);
  if (!status.ok()) return Convert(status);
  if (!response.stored()) return std::nullopt;
  return response.size();
}

absl::StatusOr<GraphRef> Client::Impl::Upload(const GraphSource& source) const {
  if (!setup_error.empty()) return absl::InvalidArgumentError(setup_error);
  absl::StatusOr<std::string> sha256 = source.Sha256();
  if (!sha256.ok()) return sha256.status();
  GraphRef ref;
  ref.sha256 = *sha256;
  ref.size = source.size();
  absl::StatusOr<std::optional<int64_t>> stored = StoredSize(ref.sha256);
  if (!stored.ok()) return stored.status();
  if (stored->has_value()) {
    ref.already_stored = true;
    return ref;
  }
  grpc::ClientContext context;
  if (absl::Status s = PrepareUnary(context, Extra(ref.size, kUploadRate)); !s.ok()) return s;
  pb::GraphRef response;
  std::unique_ptr<grpc::ClientWriter<pb::GraphChunk>> writer =
      stub->UploadGraph(&context, &response);
  absl::Status read =
      source.ForEachPiece(kUploadChunkBytes, [&](std::string_view piece, int64_t offset) {
        pb::GraphChunk chunk;
        if (offset == 0) {
          chunk.set_sha256(ref.sha256);
          chunk.set_size(ref.size);
        }
        chunk.set_offset(offset);
        chunk.set_data(piece.data(), piece.size());
        // False once the daemon has answered: it had the graph (another client uploaded it since
        // the HasGraph above), or refused the upload (Finish says why).
        if (!writer->Write(chunk)) return false;
        ref.bytes_sent += static_cast<int64_t>(piece.size());
        return true;
      });
  if (!read.ok()) {
    context.TryCancel();
    writer->Finish().IgnoreError();
    return read;
  }
  writer->WritesDone();
  grpc::Status status = writer->Finish();
  if (!status.ok()) return Convert(status);
  ref.already_stored = response.already_stored();
  return ref;
}

absl::Status Client::Impl::WireGraph(const GraphInput& input, pb::Graph* graph,
                                     GraphRef* sent) const {
  const int given = !input.bytes.empty() + !input.file.empty() + !input.sha256.empty();
  // None at all goes as an empty graph, for the daemon to refuse as it refuses any.
  if (given > 1) {
    return absl::InvalidArgumentError(
        "give one of a graph's bytes, its file and the sha256 of an uploaded graph, not several");
  }
  graph->set_name(input.name);
  if (!input.sha256.empty()) {
    graph->set_sha256(input.sha256);
    graph->set_format(input.format == GraphFormat::kOnnx ? pb::GRAPH_FORMAT_ONNX
                                                         : pb::GRAPH_FORMAT_UNSPECIFIED);
    sent->sha256 = input.sha256;
    // Its size gives the request the time the daemon may take to parse it; a graph the daemon
    // lacks is its NOT_FOUND to report.
    absl::StatusOr<std::optional<int64_t>> size = StoredSize(input.sha256);
    if (!size.ok()) return size.status();
    sent->already_stored = size->has_value();
    sent->size = size->value_or(0);
    return absl::OkStatus();
  }
  absl::StatusOr<GraphSource> source =
      input.file.empty() ? GraphSource::FromBytes(input.bytes) : GraphSource::FromFile(input.file);
  if (!source.ok()) return source.status();
  // A binary graph is an ONNX model whatever the caller said: HLO text is printable.
  const bool onnx = input.format == GraphFormat::kOnnx || !ir::onnx::LooksLikeText(source->head());
  graph->set_format(onnx ? pb::GRAPH_FORMAT_ONNX : pb::GRAPH_FORMAT_HLO_TEXT);
  sent->size = source->size();
  if (source->size() > kInlineGraphBytes) {
    absl::StatusOr<GraphRef> uploaded = Upload(*source);
    if (uploaded.ok()) {
      *sent = *std::move(uploaded);
      graph->set_sha256(sent->sha256);
      return absl::OkStatus();
    }
    // A daemon older than UploadGraph takes the graph inline, within its message limit.
    if (uploaded.status().code() != absl::StatusCode::kUnimplemented) return uploaded.status();
  }
  absl::StatusOr<std::string> bytes = source->ReadAll();
  if (!bytes.ok()) return bytes.status();
  graph->set_data(*std::move(bytes));
  sent->bytes_sent = source->size();
  return absl::OkStatus();
}

absl::StatusOr<GraphRef> Client::UploadGraph(std::string_view bytes) {
  if (bytes.empty()) return absl::InvalidArgumentError("UploadGraph: the graph is empty");
  return impl_->Upload(GraphSource::FromBytes(bytes));
}

absl::StatusOr<GraphRef> Client::UploadGraphFile(const std::string& path) {
  absl::StatusOr<GraphSource> source = GraphSource::FromFile(path);
  if (!source.ok()) return source.status();
  return impl_->Upload(*source);
}

absl::StatusOr<SubmitResponse> Client::Submit(const SubmitRequest& request) {
  pb::SubmitCompileRequest wire = ToProto(request);
  SubmitResponse out;
  absl::Status graph =
      impl_->WireGraph(GraphInput{request.graph, request.graph_file, request.graph_sha256,
                                  request.format, request.graph_name},
                       wire.mutable_graph(), &out.graph);
  if (!graph.ok()) return graph;
  grpc::ClientContext context;
  if (absl::Status s = impl_->PrepareUnary(context, Extra(out.graph.size, kParseRate)); !s.ok()) {
    return s;
  }
  pb::SubmitCompileResponse response;
  grpc::Status status = impl_->stub->SubmitCompile(&context, wire, &response);
  if (!status.ok()) return impl_->Convert(status);
  out.job_id = response.job_id();
  out.attached = response.attached();
  out.cached = response.cached();
  out.job = FromProto(response.job());
  return out;
}

absl::StatusOr<JobInfo> Client::Watch(const std::string& job_id,
                                      const std::function<bool(const JobInfo&)>& on_update) {
  grpc::ClientContext context;  // no deadline: a search may run for hours
  if (absl::Status s = impl_->Prepare(context); !s.ok()) return s;
  pb::WatchJobRequest request;
  request.set_job_id(job_id);
  std::unique_ptr<grpc::ClientReader<pb::Job>> reader = impl_->stub->WatchJob(&context, request);
  std::optional<JobInfo> last;
  bool stopped = false;
  pb::Job job;
  while (reader->Read(&job)) {
    last = FromProto(job);
    if (IsFinal(last->state)) break;
    if (on_update && !on_update(*last)) {
      stopped = true;
      break;
    }
  }
  // The final snapshot goes to on_update too, after the loop so a stop request cannot skip it.
  if (last.has_value() && IsFinal(last->state) && on_update) on_update(*last);
  if (stopped || (last.has_value() && IsFinal(last->state))) {
    // Nothing more is wanted: cancel rather than wait for the server to close the stream.
    context.TryCancel();
    reader->Finish().IgnoreError();
    return *std::move(last);
  }
  grpc::Status status = reader->Finish();
  if (!status.ok()) return impl_->Convert(status);
  if (!last.has_value()) return absl::InternalError("WatchJob ended without a snapshot");
  return *std::move(last);
}

absl::StatusOr<JobInfo> Client::GetJob(const std::string& job_id) {
  grpc::ClientContext context;
  if (absl::Status s = impl_->PrepareUnary(context); !s.ok()) return s;
  pb::GetJobRequest request;
  request.set_job_id(job_id);
  pb::Job response;
  grpc::Status status = impl_->stub->GetJob(&context, request, &response);
  if (!status.ok()) return impl_->Convert(status);
  return FromProto(response);
}

absl::StatusOr<JobInfo> Client::Cancel(const std::string& job_id) {
  grpc::ClientContext context;
  if (absl::Status s = impl_->PrepareUnary(context); !s.ok()) return s;
  pb::CancelJobRequest request;
  request.set_job_id(job_id);
  pb::CancelJobResponse response;
  grpc::Status status = impl_->stub->CancelJob(&context, request, &response);
  if (!status.ok()) return impl_->Convert(status);
  return FromProto(response.job());
}

absl::StatusOr<LookupResponse> Client::Lookup(const LookupRequest& request) {
  const bool has_graph =
      !request.graph.empty() || !request.graph_file.empty() || !request.graph_sha256.empty();
  if (has_graph == !request.fingerprint.empty()) {
    return absl::InvalidArgumentError("lookup needs exactly one of a graph and a fingerprint");
  }
  pb::LookupCacheRequest wire;
  GraphRef sent;
  if (!request.fingerprint.empty()) {
    wire.set_fingerprint(request.fingerprint);
  } else {
    absl::Status graph =
        impl_->WireGraph(GraphInput{request.graph, request.graph_file, request.graph_sha256,
                                    request.format, request.graph_name},
                         wire.mutable_graph(), &sent);
    if (!graph.ok()) return graph;
  }
  grpc::ClientContext context;
  if (absl::Status s = impl_->PrepareUnary(context, Extra(sent.size, kParseRate)); !s.ok()) {
    return s;
  }
  wire.set_task(request.task);
  wire.set_target(request.target);
  wire.set_omit_artifacts(request.omit_artifacts);
  pb::LookupCacheResponse response;
  grpc::Status status = impl_->stub->LookupCache(&context, wire, &response);
  if (!status.ok()) return impl_->Convert(status);
  LookupResponse out;
  out.fingerprint = response.fingerprint();
  for (const pb::TaskResult& r : response.results()) out.results.push_back(FromProto(r));
  return out;
}

absl::StatusOr<StrategyList> Client::ListStrategies() {
  grpc::ClientContext context;
  if (absl::Status s = impl_->PrepareUnary(context); !s.ok()) return s;
  pb::ListStrategiesResponse response;
  grpc::Status status =
      impl_->stub->ListStrategies(&context, pb::ListStrategiesRequest(), &response);
  if (!status.ok()) return impl_->Convert(status);
  StrategyList out;
  for (const pb::StrategyInfo& s : response.strategies()) out.strategies.push_back(FromProto(s));
  for (const pb::TaskInfo& t : response.tasks()) out.tasks.push_back(FromProto(t));
  out.default_strategy = response.default_strategy();
  return out;
}

absl::StatusOr<std::vector<WorkerInfo>> Client::ListWorkers() {
  grpc::ClientContext context;
  if (absl::Status s = impl_->PrepareUnary(context); !s.ok()) return s;
  pb::ListWorkersResponse response;
  grpc::Status status = impl_->stub->ListWorkers(&context, pb::ListWorkersRequest(), &response);
  if (!status.ok()) return impl_->Convert(status);
  std::vector<WorkerInfo> out;
  for (const pb::WorkerInfo& w : response.workers()) out.push_back(FromProto(w));
  return out;
}

absl::StatusOr<ServerStats> Client::GetStats() {
  grpc::ClientContext context;
  if (absl::Status s = impl_->PrepareUnary(context); !s.ok()) return s;
  pb::GetStatsResponse response;
  grpc::Status status = impl_->stub->GetStats(&context, pb::GetStatsRequest(), &response);
  if (!status.ok()) return impl_->Convert(status);
  return FromProto(response);
}

}  // namespace mltune::client
