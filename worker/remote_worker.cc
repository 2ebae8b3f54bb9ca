// RemoteWorker: mltune-worker's client of mltune.v1.WorkerService (registration, long-polled
// batches measured with the CPU backend, returns, and a heartbeat thread).
#include "worker/remote_worker.h"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netdb.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "backends/cpu/compiler.h"
#include "backends/cpu/runner.h"
#include "backends/gpu/device.h"
#include "backends/gpu/gpu_program.h"
#include "daemon/version.h"
#include "mltune/v1/worker_service.grpc.pb.h"
#include "mltune/v1/worker_service.pb.h"
#include "remote/wire.h"

namespace mltune::worker {

namespace cpu = backends::cpu;
using Clock = std::chrono::steady_clock;

namespace {

// Generated programs carry their constants (a model's weights), so a batch is as large as the
// daemon makes it (RemoteWorkerOptions::max_batch_bytes, past which it holds one program): no
// limit here but gRPC's own 2 GiB.
constexpr int kMaxMessageBytes = -1;
// Where the daemon's answer names no period.
constexpr double kDefaultHeartbeatSeconds = 5;

std::chrono::steady_clock::duration Seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

// The file's bytes, or "" with `error` set (the first error only), as the client reads them.
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

absl::Status FromGrpc(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

// Answers that the same call will get again however long the worker waits.
bool IsFatal(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnauthenticated ||
         status.code() == absl::StatusCode::kPermissionDenied ||
         status.code() == absl::StatusCode::kUnimplemented;
}

// The daemon answered `status` (fatal): the same code, and what to do about it.
absl::Status Refused(const std::string& server, const absl::Status& status) {
  std::string hint;
  switch (status.code()) {
    case absl::StatusCode::kUnauthenticated:
      hint = " (pass a token of mltuned's --tokens file with --token or $MLTUNE_TOKEN)";
      break;
    case absl::StatusCode::kPermissionDenied:
      hint = " (the token needs the \"worker\" role in mltuned's --tokens file)";
      break;
    case absl::StatusCode::kUnimplemented:
      hint = " (this mltuned does not serve mltune.v1.WorkerService: an older version?)";
      break;
    default:
      break;
  }
  return absl::Status(
      status.code(),
      absl::StrCat("mltuned at ", server, " refused this worker: ", status.message(), hint));
}

// Sleeps `seconds`, waking early once `stop` is set.
void SleepUnless(const std::atomic<bool>& stop, double seconds) {
  const Clock::time_point end = Clock::now() + Seconds(seconds);
  while (!stop.load() && Clock::now() < end) {
    std::this_thread::sleep_for(
        std::min<Clock::duration>(std::chrono::milliseconds(50), end - Clock::now()));
  }
}

// The candidate's timing options; fields a daemon left at zero (or the whole message) take the
// backend's defaults, since a zero time limit or repetition count would fail every candidate.
cpu::MeasureOptions MeasureOptionsOf(const v1::Candidate& candidate) {
  const cpu::MeasureOptions defaults;
  if (!candidate.has_options()) return defaults;
  cpu::MeasureOptions o = remote::FromProto(candidate.options());
  if (o.threads <= 0) o.threads = defaults.threads;
  if (o.min_reps <= 0) o.min_reps = defaults.min_reps;
  if (o.max_reps <= 0) o.max_reps = std::max(defaults.max_reps, o.min_reps);
  if (o.max_seconds <= 0) o.max_seconds = defaults.max_seconds;
  if (o.target_spread < 0) o.target_spread = defaults.target_spread;
  if (o.memory_limit_mb <= 0) o.memory_limit_mb = defaults.memory_limit_mb;
  if (o.timeout_seconds <= 0) o.timeout_seconds = defaults.timeout_seconds;
  return o;
}

absl::StatusOr<cpu::Timing> MeasureCandidate(const v1::Candidate& candidate) {
  absl::StatusOr<cpu::Program> program = remote::FromProto(candidate.program());
  if (!program.ok()) return program.status();
  absl::StatusOr<cpu::CompiledObject> compiled = cpu::CompileProgram(*program);
  if (!compiled.ok()) return compiled.status();
  // One timing at a time on this machine, whichever daemon asked: two at once would each slow the
  // other and both timings would be wrong.
  static std::mutex timing_mu;
  std::lock_guard<std::mutex> lock(timing_mu);
  return cpu::Measure(*compiled, *program, candidate.seed(), MeasureOptionsOf(candidate));
}

}  // namespace

// A GPU timing run, on this machine's GPU (or the runner the options name: the emulator, in tests).
absl::StatusOr<backends::gpu::GpuTiming> MeasureGpuCandidate(const v1::Candidate& candidate,
                                                             const WorkerOptions& options) {
  backends::gpu::GpuMeasureOptions o;
  if (candidate.gpu_plan().timeout_seconds() > 0) {
    o.timeout_seconds = candidate.gpu_plan().timeout_seconds();
  }
  o.runner = options.gpu_runner;
  static std::mutex timing_mu;  // one timing at a time on this GPU, whichever daemon asked
  std::lock_guard<std::mutex> lock(timing_mu);
  return backends::gpu::MeasureGpuBundle(remote::FromProto(candidate.gpu_plan()), o);
}

absl::Status CheckTarget(const std::string& target) {
  if (target == "cpu" || target == "gpu") return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("--target '", target, "': expected cpu or gpu"));
}

absl::StatusOr<std::vector<std::string>> ResolveAll(const std::string& server) {
  const size_t colon = server.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return absl::InvalidArgumentError(absl::StrCat("--server '", server, "': expected HOST:PORT"));
  }
  const std::string host = server.substr(0, colon), port = server.substr(colon + 1);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(absl::StrCat("cannot resolve ", host, ": ", gai_strerror(rc)));
  }
  std::set<std::string> addresses;
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    if (a->ai_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(a->ai_addr)->sin_addr, text, sizeof(text));
      addresses.insert(absl::StrCat(text, ":", port));
    } else if (a->ai_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(a->ai_addr)->sin6_addr, text,
                sizeof(text));
      addresses.insert(absl::StrCat("[", text, "]:", port));
    }
  }
  freeaddrinfo(found);
  return std::vector<std::string>(addresses.begin(), addresses.end());
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

struct RemoteWorker::Impl {
  WorkerOptions options;
  std::string device;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::WorkerService::Stub> stub;

  // The registration the heartbeat thread keeps alive, and what it found out.
  std::mutex mu;
  std::condition_variable cv;
  std::string worker_id;  // "" while unregistered
  double heartbeat_seconds = kDefaultHeartbeatSeconds;
  uint64_t generation = 0;       // bumped per registration: a late heartbeat answer is ignored
  bool lost = false;             // a heartbeat got NOT_FOUND for worker_id
  absl::Status heartbeat_fatal;  // a heartbeat got a fatal answer
  bool quit = false;

  std::atomic<int64_t> registrations{0}, batches{0}, candidates{0}, failed_candidates{0},
      heartbeats{0};
  Clock::time_point last_progress{};  // of the last progress line

  void Log(const std::string& line) const {
    if (options.log) options.log(line);
  }

  void Prepare(grpc::ClientContext& context, double seconds) const {
    context.set_deadline(std::chrono::system_clock::now() +
                         std::chrono::duration_cast<std::chrono::system_clock::duration>(
                             std::chrono::duration<double>(seconds)));
    if (!options.token.empty()) context.AddMetadata("authorization", "Bearer " + options.token);
  }

  absl::StatusOr<v1::RegisterWorkerResponse> Register() const {
    grpc::ClientContext context;
    Prepare(context, options.call_timeout_seconds);
    v1::RegisterWorkerRequest request;
    request.set_host(options.host);
    request.set_target(options.target);
    request.set_device(device);
    request.set_version(daemon::kMltuneVersion);
    v1::RegisterWorkerResponse response;
    if (absl::Status s = FromGrpc(stub->RegisterWorker(&context, request, &response)); !s.ok()) {
      return s;
    }
    if (response.worker_id().empty()) {
      return absl::InternalError("RegisterWorker answered without a worker id");
    }
    return response;
  }

  absl::StatusOr<v1::TakeBatchResponse> TakeBatch(const std::string& id) const {
    grpc::ClientContext context;
    Prepare(context, options.wait_ms / 1000.0 + options.call_timeout_seconds);
    v1::TakeBatchRequest request;
    request.set_worker_id(id);
    request.set_wait_ms(options.wait_ms);
    v1::TakeBatchResponse response;
    if (absl::Status s = FromGrpc(stub->TakeBatch(&context, request, &response)); !s.ok()) {
      return s;
    }
    return response;
  }

  absl::Status ReturnBatch(const v1::ReturnBatchRequest& request) const {
    grpc::ClientContext context;
    Prepare(context, options.call_timeout_seconds);
    v1::ReturnBatchResponse response;
    return FromGrpc(stub->ReturnBatch(&context, request, &response));
  }

  absl::Status Heartbeat(const std::string& id, double period) const {
    grpc::ClientContext context;
    // A heartbeat stuck behind a slow daemon must not delay the next one.
    Prepare(context, std::clamp(period, 1.0, std::max(1.0, options.call_timeout_seconds)));
    v1::HeartbeatRequest request;
    request.set_worker_id(id);
    v1::HeartbeatResponse response;
    return FromGrpc(stub->Heartbeat(&context, request, &response));
  }

  // Runs on its own thread for the whole of Run: heartbeats the current registration, also
  // while the main thread measures a long batch or waits on the daemon.
  void HeartbeatLoop() {
    std::unique_lock<std::mutex> lock(mu);
    while (!quit) {
      if (worker_id.empty()) {
        cv.wait(lock);
        continue;
      }
      const std::string id = worker_id;
      const double period = heartbeat_seconds;
      const uint64_t gen = generation;
      if (cv.wait_for(lock, Seconds(period), [&] { return quit || generation != gen; })) continue;
      lock.unlock();
      const absl::Status s = Heartbeat(id, period);
      lock.lock();
      if (generation != gen) continue;
      if (s.ok()) {
        ++heartbeats;
      } else if (s.code() == absl::StatusCode::kNotFound) {
        lost = true;
      } else if (IsFatal(s)) {
        heartbeat_fatal = s;
      }
      // Anything else (the daemon unreachable): the main thread's calls notice and back off.
    }
  }

  void SetRegistration(const std::string& id, double period) {
    {
      std::lock_guard<std::mutex> lock(mu);
      worker_id = id;
      heartbeat_seconds = period > 0 ? period : kDefaultHeartbeatSeconds;
      ++generation;
      lost = false;
    }
    cv.notify_all();
  }

  // NOT_FOUND once a heartbeat found the registration gone, the fatal answer a heartbeat got, or
  // OK.
  absl::Status HeartbeatNews() {
    std::lock_guard<std::mutex> lock(mu);
    if (!heartbeat_fatal.ok()) return heartbeat_fatal;
    if (lost) return absl::NotFoundError("mltuned no longer knows this worker (heartbeat)");
    return absl::OkStatus();
  }

  // Measures the batch one candidate at a time (parallel runs would disturb each other's
  // timings) and returns it. OK once returned or refused for good; NOT_FOUND when the daemon
  // dropped this worker or the batch (register again); a fatal answer; or the last error once
  // the daemon stayed unreachable for longer than it keeps a silent worker's batch.
  absl::Status MeasureAndReturn(const std::string& id, const v1::TakeBatchResponse& batch) {
    const Clock::time_point start = Clock::now();
    v1::ReturnBatchRequest request;
    request.set_worker_id(id);
    request.set_batch_id(batch.batch_id());
    int64_t failed = 0;
    for (const v1::Candidate& candidate : batch.candidates()) {
      // The daemon has handed the batch to another worker: measuring the rest is wasted time.
      if (absl::Status news = HeartbeatNews(); !news.ok()) {
        Log(absl::StrCat("abandoning batch ", batch.batch_id(), " after ",
                         request.measurements_size(), " of ", batch.candidates_size(),
                         " candidates: ", news.message()));
        return news;
      }
      v1::Measurement* m = request.add_measurements();
      m->set_id(candidate.id());
      absl::Status outcome;
      if (candidate.has_gpu_plan()) {
        absl::StatusOr<backends::gpu::GpuTiming> t = MeasureGpuCandidate(candidate, options);
        outcome = t.status();
        remote::ToProto(t, m);
      } else {
        absl::StatusOr<cpu::Timing> t = MeasureCandidate(candidate);
        outcome = t.status();
        remote::ToProto(t, m);
      }
      ++candidates;
      if (!outcome.ok()) {
        ++failed;
        ++failed_candidates;
      }
    }
    const double measure_seconds = std::chrono::duration<double>(Clock::now() - start).count();

    double backoff = options.reconnect_seconds;
    double period;
    {
      std::lock_guard<std::mutex> lock(mu);
      period = heartbeat_seconds;
    }
    // Past three heartbeat periods the daemon has dropped this worker and handed its batch on.
    const Clock::time_point give_up =
        Clock::now() + Seconds(std::max(3 * period, options.call_timeout_seconds));
    for (;;) {
      const absl::Status s = ReturnBatch(request);
      if (s.ok()) {
        ++batches;
        // The first batch, then a line per progress_seconds: a search hands out many small ones.
        const Clock::time_point now = Clock::now();
        if (batches.load() == 1 || now - last_progress >= Seconds(options.progress_seconds)) {
          last_progress = now;
          Log(absl::StrCat(batches.load(), " batches, ", candidates.load(), " candidates (",
                           failed_candidates.load(), " failed) measured; the last, ",
                           batch.batch_id(), ": ", batch.candidates_size(), " in ",
                           absl::SixDigits(measure_seconds), " s (", failed, " failed)"));
        }
        return absl::OkStatus();
      }
      if (IsFatal(s)) return s;
      if (s.code() == absl::StatusCode::kNotFound) {
        Log(absl::StrCat("mltuned did not take batch ", batch.batch_id(), " back (", s.message(),
                         "): it was handed to another worker"));
        return s;
      }
      const bool transient = s.code() == absl::StatusCode::kUnavailable ||
                             s.code() == absl::StatusCode::kDeadlineExceeded ||
                             s.code() == absl::StatusCode::kResourceExhausted;
      if (!transient) {
        // FAILED_PRECONDITION: the batch went to another worker while this one was thought lost;
        // the registration itself still stands.
        Log(absl::StrCat("mltuned did not take batch ", batch.batch_id(), " back: ", s.ToString()));
        return absl::OkStatus();
      }
      if (Clock::now() + Seconds(backoff) > give_up) {
        Log(absl::StrCat("giving up returning batch ", batch.batch_id(), ": ", s.ToString()));
        return s;
      }
      Log(absl::StrCat("returning batch ", batch.batch_id(), ": ", s.ToString(), "; retrying in ",
                       backoff, " s"));
      // Not cut short by a stop: a stopping worker still hands back the batch it measured.
      std::this_thread::sleep_for(Seconds(backoff));
      backoff = std::min(2 * backoff, options.max_reconnect_seconds);
    }
  }

  absl::Status Serve(const std::atomic<bool>& stop) {
    double backoff = options.reconnect_seconds;
    auto wait_after = [&](const std::string& what, const absl::Status& s) {
      Log(absl::StrCat(what, ": ", s.ToString(), "; retrying in ", backoff, " s"));
      SleepUnless(stop, backoff);
      backoff = std::min(2 * backoff, options.max_reconnect_seconds);
    };
    while (!stop.load()) {
      absl::StatusOr<v1::RegisterWorkerResponse> registered = Register();
      if (!registered.ok()) {
        // A registration the daemon finds invalid stays invalid.
        if (IsFatal(registered.status()) ||
            registered.status().code() == absl::StatusCode::kInvalidArgument) {
          return Refused(options.server, registered.status());
        }
        wait_after(absl::StrCat("cannot register with mltuned at ", options.server),
                   registered.status());
        continue;
      }
      backoff = options.reconnect_seconds;
      const std::string id = registered->worker_id();
      SetRegistration(id, registered->heartbeat_seconds());
      ++registrations;
      Log(absl::StrCat(registrations.load() == 1 ? "registered" : "registered again", " with ",
                       options.server, " as worker ", id, " (heartbeat every ",
                       registered->heartbeat_seconds(), " s)"));

      // Serve this registration until the daemon no longer knows it.
      while (!stop.load()) {
        if (absl::Status news = HeartbeatNews(); !news.ok()) {
          if (IsFatal(news)) return Refused(options.server, news);
          Log(absl::StrCat(news.message(), ": registering again"));
          break;
        }
        absl::StatusOr<v1::TakeBatchResponse> batch = TakeBatch(id);
        if (!batch.ok()) {
          if (IsFatal(batch.status())) return Refused(options.server, batch.status());
          if (batch.status().code() == absl::StatusCode::kNotFound) {
            Log(absl::StrCat("mltuned no longer knows worker ", id, " (", batch.status().message(),
                             "): registering again"));
            break;
          }
          // The daemon is away (or overloaded): the same registration is tried again, since a
          // daemon that restarted answers NOT_FOUND, and then the worker registers again.
          wait_after("taking a batch", batch.status());
          continue;
        }
        backoff = options.reconnect_seconds;
        if (batch->batch_id().empty()) continue;  // no work within wait_ms
        const absl::Status returned = MeasureAndReturn(id, *batch);
        if (IsFatal(returned)) return Refused(options.server, returned);
        if (returned.code() == absl::StatusCode::kNotFound) break;
        if (!returned.ok()) wait_after("returning a batch", returned);
      }
    }
    return absl::OkStatus();
  }
};

namespace {

// A CPU worker's device: "CPU MODEL, N cores, COMPILER VERSION MACHINE".
absl::StatusOr<std::string> CpuDeviceDescription() {
  absl::StatusOr<std::string> compiler = cpu::CompilerIdentity({});
  if (!compiler.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("this machine's C++ compiler, which compiles the candidates ($MLTUNE_CXX, "
                     "else g++): ",
                     compiler.status().message()));
  }
  // The identity ends with the CPU model (a kernel cache key), which the descriptor has already.
  const std::string cpu_descriptor = remote::CpuDescriptor();
  std::string identity = *compiler;
  const std::string model = cpu_descriptor.substr(0, cpu_descriptor.rfind(", "));
  if (absl::EndsWith(identity, model)) identity.resize(identity.size() - model.size());
  return absl::StrCat(cpu_descriptor, ", ",
                      std::string(absl::StripTrailingAsciiWhitespace(identity)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<RemoteWorker>> RemoteWorker::Create(WorkerOptions options) {
  if (absl::Status s = CheckTarget(options.target); !s.ok()) return s;
  if (options.server.empty()) {
    return absl::InvalidArgumentError("--server is required: mltuned's HOST:PORT");
  }
  if (options.wait_ms <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--wait-ms must be positive, got ", options.wait_ms));
  }
  if (!(options.reconnect_seconds > 0) || !(options.call_timeout_seconds > 0)) {
    return absl::InvalidArgumentError(
        "reconnect_seconds and call_timeout_seconds must be positive");
  }
  options.max_reconnect_seconds =
      std::max(options.max_reconnect_seconds, options.reconnect_seconds);
  if (options.cert_file.empty() != options.key_file.empty()) {
    return absl::InvalidArgumentError("--cert and --key go together (mutual TLS)");
  }
  // A token read from a file keeps its newline, and gRPC cannot send one in a header.
  options.token = std::string(absl::StripAsciiWhitespace(options.token));
  for (size_t i = 0; i < options.token.size(); ++i) {
    const unsigned char c = options.token[i];
    if (c < 0x20 || c > 0x7e) {
      return absl::InvalidArgumentError(
          absl::StrCat("the token (--token or $MLTUNE_TOKEN) has a character at position ", i,
                       " that cannot go in a request header (expected printable ASCII)"));
    }
  }
  if (options.host.empty()) options.host = HostName();

  auto impl = std::make_unique<Impl>();
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!options.ca_file.empty() || !options.cert_file.empty()) {
    std::string error;
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = ReadCredential("CA file (--ca)", options.ca_file, &error);
    ssl.pem_cert_chain = ReadCredential("certificate (--cert)", options.cert_file, &error);
    ssl.pem_private_key = ReadCredential("key (--key)", options.key_file, &error);
    if (!error.empty()) return absl::InvalidArgumentError(error);
    credentials = grpc::SslCredentials(ssl);
  }

  if (options.target == "gpu") {
    // The daemon compiles for this device and caches results under its key.
    absl::StatusOr<backends::gpu::DeviceDescriptor> gpu =
        options.gpu_arch.empty() ? backends::gpu::ProbeDevice(0)
                                 : backends::gpu::DescriptorForArch(options.gpu_arch);
    if (!gpu.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("--target gpu: no GPU here: ", gpu.status().message()));
    }
    impl->device = gpu->Key();
  } else {
    absl::StatusOr<std::string> cpu_device = CpuDeviceDescription();
    if (!cpu_device.ok()) return cpu_device.status();
    impl->device = *std::move(cpu_device);
  }

  grpc::ChannelArguments args;
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  // gRPC's own reconnection backoff grows to two minutes; a worker should find a restarted
  // daemon as soon as its own backoff tries again.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
              static_cast<int>(options.reconnect_seconds * 1000));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
              static_cast<int>(options.reconnect_seconds * 1000));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
              static_cast<int>(options.max_reconnect_seconds * 1000));
  if (!options.tls_name.empty()) args.SetSslTargetNameOverride(options.tls_name);
  impl->channel = grpc::CreateCustomChannel(options.server, credentials, args);
  impl->stub = v1::WorkerService::NewStub(impl->channel);
  impl->options = std::move(options);
  return std::unique_ptr<RemoteWorker>(new RemoteWorker(std::move(impl)));
}

RemoteWorker::RemoteWorker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RemoteWorker::~RemoteWorker() = default;

const std::string& RemoteWorker::host() const { return impl_->options.host; }
const std::string& RemoteWorker::server() const { return impl_->options.server; }
const std::string& RemoteWorker::device() const { return impl_->device; }

absl::Status RemoteWorker::Run(const std::atomic<bool>& stop) {
  Impl& w = *impl_;
  {
    std::lock_guard<std::mutex> lock(w.mu);
    w.quit = false;
    w.worker_id.clear();
    w.heartbeat_fatal = absl::OkStatus();
    w.lost = false;
  }
  std::thread heartbeat([&w] { w.HeartbeatLoop(); });
  const absl::Status result = w.Serve(stop);
  {
    std::lock_guard<std::mutex> lock(w.mu);
    w.quit = true;
    w.worker_id.clear();
  }
  w.cv.notify_all();
  heartbeat.join();
  return result;
}

WorkerStats RemoteWorker::stats() const {
  WorkerStats s;
  s.registrations = impl_->registrations.load();
  s.batches = impl_->batches.load();
  s.candidates = impl_->candidates.load();
  s.failed_candidates = impl_->failed_candidates.load();
  s.heartbeats = impl_->heartbeats.load();
  return s;
}

namespace {

// One daemon's loop inside ServeAll.
struct Loop {
  std::unique_ptr<RemoteWorker> worker;
  std::atomic<bool> stop{false};
  std::atomic<bool> finished{false};
  absl::Status status;
  std::thread thread;
};

}  // namespace

absl::Status ServeAll(const WorkerOptions& base, const std::vector<std::string>& servers,
                      bool resolve_all, double resolve_seconds, const std::atomic<bool>& stop,
                      const std::function<void(std::string_view)>& announce) {
  std::map<std::string, std::unique_ptr<Loop>> loops;  // by address
  absl::Status fatal;
  auto end = [&](const std::string& address, Loop& loop) {
    loop.stop = true;
    if (loop.thread.joinable()) loop.thread.join();
    const WorkerStats stats = loop.worker->stats();
    announce(absl::StrCat(stats.batches, " batches, ", stats.candidates, " candidates (",
                          stats.failed_candidates, " failed) measured for ", address));
    if (!loop.status.ok() && fatal.ok()) fatal = loop.status;
  };
  auto next_lookup = std::chrono::steady_clock::now();
  while (!stop && fatal.ok()) {
    if (std::chrono::steady_clock::now() >= next_lookup) {
      next_lookup = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(static_cast<int64_t>(resolve_seconds * 1000));
      // address -> the name its certificate must carry ("" = its own host).
      std::map<std::string, std::string> wanted;
      for (const std::string& server : servers) {
        if (!resolve_all) {
          wanted[server] = "";
          continue;
        }
        absl::StatusOr<std::vector<std::string>> addresses = ResolveAll(server);
        // A name that does not resolve now (no replica up yet) is looked up again later.
        if (!addresses.ok()) {
          announce(std::string(addresses.status().message()));
          continue;
        }
        for (const std::string& a : *addresses) wanted[a] = server.substr(0, server.rfind(':'));
      }
      for (auto it = loops.begin(); it != loops.end();) {
        if (wanted.contains(it->first)) {
          ++it;
          continue;
        }
        announce(absl::StrCat(it->first, " is gone: no longer serving it"));
        end(it->first, *it->second);
        it = loops.erase(it);
      }
      for (const auto& [address, tls_name] : wanted) {
        if (loops.contains(address)) continue;
        WorkerOptions one = base;
        one.server = address;
        one.tls_name = tls_name;
        absl::StatusOr<std::unique_ptr<RemoteWorker>> worker = RemoteWorker::Create(one);
        if (!worker.ok()) {
          fatal = worker.status();
          break;
        }
        announce(absl::StrCat("serving ", (*worker)->host(), " (", (*worker)->device(), ") to ",
                              address, tls_name.empty() ? "" : absl::StrCat(" (", tls_name, ")")));
        auto loop = std::make_unique<Loop>();
        loop->worker = *std::move(worker);
        Loop* raw = loop.get();
        loop->thread = std::thread([raw] {
          raw->status = raw->worker->Run(raw->stop);
          raw->finished = true;
        });
        loops[address] = std::move(loop);
      }
    }
    for (auto& [address, loop] : loops) {
      if (loop->finished && !loop->status.ok() && fatal.ok()) fatal = loop->status;
    }
    if (!fatal.ok()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    // The caller's stop reaches every loop.
    if (stop) {
      for (auto& [address, loop] : loops) loop->stop = true;
    }
  }
  for (auto& [address, loop] : loops) end(address, *loop);
  if (loops.empty() && fatal.ok() && !resolve_all && servers.empty()) {
    return absl::InvalidArgumentError("--server names no address");
  }
  return fatal;
}

}  // namespace mltune::worker
