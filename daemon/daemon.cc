#include "daemon/daemon.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "backends/cpu/runner.h"
#include "backends/gpu/device.h"
#include "backends/gpu/gpu_program.h"
#include "backends/spec/target_spec.h"
#include "daemon/access/access_policy.h"
#include "daemon/compile_service.h"
#include "daemon/job_scheduler.h"
#include "daemon/metrics/metrics.h"
#include "daemon/model_refresher.h"
#include "daemon/pretrained_models.h"
#include "daemon/remote/remote_workers.h"
#include "daemon/version.h"
#include "daemon/worker_service.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "storage/store.h"

namespace mltune::daemon {

struct Daemon::Impl {
  DaemonConfig config;
  std::unique_ptr<AccessPolicy> access;
  std::unique_ptr<storage::Store> store;
  std::unique_ptr<Metrics> metrics;
  std::unique_ptr<JobScheduler> scheduler;
  std::unique_ptr<ModelRefresher> refresher;  // after the scheduler: it asks it whether it is busy
  std::unique_ptr<CompileServiceImpl> service;
  // Remote measurement workers: the CPU backend's Measure goes to them while any is connected.
  std::unique_ptr<RemoteWorkerPool> remote_workers;
  std::unique_ptr<WorkerServiceImpl> worker_service;
  std::unique_ptr<grpc::Server> server;
  std::string address;
  int port = 0;
  std::mutex shutdown_mu;
  bool shut_down = false;
};

namespace {

// The cost models the daemon's jobs log training data for: cpu and every simulated TPU.
std::unique_ptr<ModelRefresher> MakeRefresher(const DaemonConfig& config, storage::Store& store,
                                              Metrics& metrics, JobScheduler& scheduler) {
  RefresherOptions options;
  options.min_new_rows = config.retrain_rows;
  options.idle_seconds = config.retrain_idle_seconds;
  options.gate = config.retrain_gate;
  options.trainer = config.trainer.empty() ? DefaultTrainerPath() : config.trainer;
  options.trainer_args = absl::StrSplit(config.trainer_args, ' ', absl::SkipWhitespace());
  // The full locator: path() hides a URL's password, which the trainer needs to connect.
  options.store_path = config.store.empty()
                           ? (std::filesystem::path(config.data_dir) / "mltune.db").string()
                           : config.store;
  options.log_path = (std::filesystem::path(config.data_dir) / "trainer.log").string();
  options.targets = {"cpu"};
  for (const backends::TargetSpec* spec : backends::TargetRegistry::Global().OfKind("tpu")) {
    options.targets.push_back(spec->name);
  }
  if (options.min_new_rows > 0 && options.trainer.empty()) {
    std::cerr << "mltuned: warning: no mltune CLI found beside mltuned (set --trainer, or "
                 "MLTUNE_CLI): the daemon will not retrain its cost models\n";
    options.min_new_rows = 0;
  }
  return std::make_unique<ModelRefresher>(
      store, metrics, [&scheduler] { return scheduler.busy(); }, std::move(options));
}

// Routes the backends' measurements to `pool`'s remote workers while any is connected (nullptr:
// back to this machine's runners): CPU programs, and GPU programs where this machine has no GPU,
// compiled for the remote GPU's architecture.
void InstallRemoteWorkers(RemoteWorkerPool* pool) {
  if (pool == nullptr) {
    backends::cpu::SetMeasureDelegate(nullptr);
    backends::gpu::SetGpuMeasureDelegate(nullptr);
    backends::gpu::SetRemoteDeviceProvider(nullptr);
    return;
  }
  backends::cpu::SetMeasureDelegate([pool](const backends::cpu::Program& program, uint64_t seed,
                                           const backends::cpu::MeasureOptions& options) {
    return pool->Measure("cpu", program, seed, options);
  });
  backends::gpu::SetGpuMeasureDelegate([pool](const backends::gpu::GpuPlanBundle& bundle,
                                              const backends::gpu::GpuMeasureOptions& options) {
    return pool->MeasureGpu(bundle, options);
  });
  backends::gpu::SetRemoteDeviceProvider([pool] { return pool->GpuDevice(); });
}

// Spool files of uploads whose daemon died mid-stream (the process named in the file is gone):
// they would never be removed otherwise. Live daemons sharing the folder keep theirs.
void RemoveAbandonedUploads(const std::filesystem::path& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::vector<std::string> parts = absl::StrSplit(name, '-');
    int pid = 0;
    if (parts.size() != 3 || !absl::EndsWith(name, ".part") || !absl::SimpleAtoi(parts[1], &pid)) {
      continue;
    }
    if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) std::filesystem::remove(entry.path(), ec);
  }
}

absl::StatusOr<std::string> ReadPem(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  if (in) text << in.rdbuf();
  if (!in || text.str().find("-----BEGIN ") == std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, "=", path, ": cannot read a PEM file there"));
  }
  return text.str();
}

// Plaintext, or TLS from the configured PEM files (mutual where a client CA is given).
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(const DaemonConfig& c) {
  if (c.tls_cert.empty()) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions options(
      c.tls_client_ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                              : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  absl::StatusOr<std::string> cert = ReadPem("tls-cert", c.tls_cert);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadPem("tls-key", c.tls_key);
  if (!key.ok()) return key.status();
  options.pem_key_cert_pairs.push_back({*key, *cert});
  if (!c.tls_client_ca.empty()) {
    absl::StatusOr<std::string> ca = ReadPem("tls-client-ca", c.tls_client_ca);
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *ca;
  }
  return grpc::SslServerCredentials(options);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Daemon>> Daemon::Start(const DaemonConfig& config) {
  if (absl::Status s = ValidateConfig(config); !s.ok()) return s;
  if (!config.specs_dir.empty()) {
    // Start-up only: the registry is read without locks once jobs run.
    if (absl::Status s = backends::TargetRegistry::Global().AddDirectory(config.specs_dir);
        !s.ok()) {
      return s;
    }
  }
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->access = std::make_unique<AccessPolicy>();
  if (!config.tokens_file.empty()) {
    absl::StatusOr<std::unique_ptr<AccessPolicy>> access = AccessPolicy::Load(config.tokens_file);
    if (!access.ok()) return access.status();
    impl->access = *std::move(access);
  }
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials = ServerCredentials(config);
  if (!credentials.ok()) return credentials.status();
  const std::string store_path =
      config.store.empty() ? (std::filesystem::path(config.data_dir) / "mltune.db").string()
                           : config.store;
  absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(store_path);
  if (!store.ok()) return store.status();
  RemoveAbandonedUploads(std::filesystem::path(config.data_dir) / "uploads");
  impl->store = *std::move(store);
  const std::string pretrained =
      config.pretrained_dir.empty() ? DefaultPretrainedDir() : config.pretrained_dir;
  if (!pretrained.empty() && pretrained != "none") {
    absl::StatusOr<std::vector<std::string>> installed =
        InstallPretrainedModels(*impl->store, pretrained);
    if (!installed.ok()) return installed.status();
    if (!installed->empty()) {
      std::cerr << "mltuned: stored " << installed->size() << " pretrained model(s) from "
                << pretrained << " as version 0\n";
    }
  }
  absl::StatusOr<std::unique_ptr<Metrics>> metrics = Metrics::Create(config.metrics_listen);
  if (!metrics.ok()) return metrics.status();
  impl->metrics = *std::move(metrics);

  SchedulerOptions options;
  options.worker_threads = config.worker_threads;
  options.queue_size = config.queue_size;
  options.max_job_seconds = config.max_job_seconds;
  options.max_attempts = config.max_attempts;
  options.search_version = kSearchVersion;
  options.lease_seconds = config.lease_seconds;
  Impl* raw = impl.get();
  impl->scheduler = std::make_unique<JobScheduler>(
      *impl->store, *impl->metrics, options,
      [raw](const storage::JobRecord& record) { return raw->service->DecodeStoredJob(record); });
  impl->refresher = MakeRefresher(impl->config, *impl->store, *impl->metrics, *impl->scheduler);
  impl->remote_workers = std::make_unique<RemoteWorkerPool>();
  impl->service = std::make_unique<CompileServiceImpl>(
      impl->config, *impl->store, *impl->metrics, *impl->scheduler, *impl->refresher,
      impl->metrics->address(), *impl->access, *impl->remote_workers);
  impl->worker_service =
      std::make_unique<WorkerServiceImpl>(*impl->remote_workers, *impl->metrics, *impl->access);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default, which would let a second daemon share the port silently.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(config.listen, *credentials, &impl->port);
  builder.RegisterService(impl->service.get());
  builder.RegisterService(impl->worker_service.get());
  // A request may carry a graph inline up to --max-graph-bytes (protobuf's 2 GiB message limit
  // caps that at 1 GiB); larger graphs come in chunks (UploadGraph). Answers are not limited: a
  // tuned module of a model keeps its weights.
  builder.SetMaxReceiveMessageSize(static_cast<int>(
      std::min(config.max_graph_bytes, int64_t{kMaxInlineGraphBytes}) + (int64_t{1} << 20)));
  builder.SetMaxSendMessageSize(-1);
  grpc::ResourceQuota quota("mltuned");
  quota.SetMaxThreads(config.rpc_threads);
  builder.SetResourceQuota(quota);
  impl->server = builder.BuildAndStart();
  if (impl->server == nullptr || impl->port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", config.listen,
                                               " (in use, or not an address of this host?)"));
  }
  impl->address = absl::StrCat(config.listen.substr(0, config.listen.rfind(':')), ":", impl->port);
  InstallRemoteWorkers(impl->remote_workers.get());
  // Jobs start only once the server answers, so a resumed job can be watched at once.
  if (absl::Status s = impl->scheduler->Start(); !s.ok()) {
    InstallRemoteWorkers(nullptr);
    impl->server->Shutdown();
    return s;
  }
  impl->refresher->Start();
  return std::unique_ptr<Daemon>(new Daemon(std::move(impl)));
}

Daemon::Daemon(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Daemon::~Daemon() { Shutdown(); }

const DaemonConfig& Daemon::config() const { return impl_->config; }
std::string Daemon::address() const { return impl_->address; }
int Daemon::port() const { return impl_->port; }
std::string Daemon::metrics_address() const { return impl_->metrics->address(); }
std::string Daemon::store_path() const { return impl_->store->path(); }

std::string Daemon::access_summary() const {
  const DaemonConfig& c = impl_->config;
  std::string tls = c.tls_cert.empty()        ? "plaintext (no TLS)"
                    : c.tls_client_ca.empty() ? "TLS"
                                              : "mutual TLS (client certificates required)";
  std::string tokens =
      impl_->access->enabled()
          ? absl::StrCat(impl_->access->size(), " bearer token(s) from ", c.tokens_file)
          : "no tokens (every caller may submit, cancel and read)";
  std::string summary = absl::StrCat(tls, ", ", tokens);
  if (c.insecure && !IsLoopbackAddress(c.listen)) {
    absl::StrAppend(&summary, "; --insecure on a non-loopback address");
  }
  return summary;
}

void Daemon::Shutdown() {
  std::lock_guard<std::mutex> lock(impl_->shutdown_mu);
  if (impl_->shut_down) return;
  impl_->shut_down = true;
  if (grpc::HealthCheckServiceInterface* health = impl_->server->GetHealthCheckService()) {
    health->SetServingStatus(false);
  }
  // The trainer first: it must not outlive the store, and draining jobs need the cores.
  if (impl_->refresher != nullptr) impl_->refresher->Shutdown();
  // Jobs next: watchers keep streaming while running jobs drain, and see the final states.
  impl_->scheduler->Shutdown(impl_->config.drain_seconds);
  // Then the workers' long-polls, which would hold the server's shutdown up.
  InstallRemoteWorkers(nullptr);
  impl_->remote_workers->Shutdown();
  impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  impl_->server->Wait();
  impl_->scheduler.reset();
  impl_->store.reset();  // closes the SQLite file (WAL checkpointed by the last connection)
}

}  // namespace mltune::daemon
