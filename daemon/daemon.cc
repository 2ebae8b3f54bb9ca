#include "daemon/daemon.h"

#include <filesystem>
#include <iostream>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "backends/spec/target_spec.h"
#include "daemon/compile_service.h"
#include "daemon/job_scheduler.h"
#include "daemon/metrics/metrics.h"
#include "daemon/model_refresher.h"
#include "daemon/pretrained_models.h"
#include "daemon/version.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "storage/store.h"

namespace mltune::daemon {

struct Daemon::Impl {
  DaemonConfig config;
  std::unique_ptr<storage::Store> store;
  std::unique_ptr<Metrics> metrics;
  std::unique_ptr<JobScheduler> scheduler;
  std::unique_ptr<ModelRefresher> refresher;  // after the scheduler: it asks it whether it is busy
  std::unique_ptr<CompileServiceImpl> service;
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
  options.store_path = store.path();
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
      store, metrics,
      [&scheduler] { return scheduler.running() > 0 || scheduler.queue_depth() > 0; },
      std::move(options));
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
  const std::filesystem::path store_path = std::filesystem::path(config.data_dir) / "mltune.db";
  absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(store_path.string());
  if (!store.ok()) return store.status();
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
  Impl* raw = impl.get();
  impl->scheduler = std::make_unique<JobScheduler>(
      *impl->store, *impl->metrics, options,
      [raw](const storage::JobRecord& record) { return raw->service->DecodeStoredJob(record); });
  impl->refresher = MakeRefresher(impl->config, *impl->store, *impl->metrics, *impl->scheduler);
  impl->service = std::make_unique<CompileServiceImpl>(impl->config, *impl->store, *impl->metrics,
                                                       *impl->scheduler, *impl->refresher,
                                                       impl->metrics->address());

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default, which would let a second daemon share the port silently.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(config.listen, grpc::InsecureServerCredentials(), &impl->port);
  builder.RegisterService(impl->service.get());
  // Room for the largest graph plus the request's other fields.
  const int max_message = static_cast<int>(config.max_graph_bytes + (1 << 20));
  builder.SetMaxReceiveMessageSize(max_message);
  builder.SetMaxSendMessageSize(max_message);
  grpc::ResourceQuota quota("mltuned");
  quota.SetMaxThreads(config.rpc_threads);
  builder.SetResourceQuota(quota);
  impl->server = builder.BuildAndStart();
  if (impl->server == nullptr || impl->port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", config.listen,
                                               " (in use, or not an address of this host?)"));
  }
  impl->address = absl::StrCat(config.listen.substr(0, config.listen.rfind(':')), ":", impl->port);
  // Jobs start only once the server answers, so a resumed job can be watched at once.
  if (absl::Status s = impl->scheduler->Start(); !s.ok()) {
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
  impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  impl_->server->Wait();
  impl_->scheduler.reset();
  impl_->store.reset();  // closes the SQLite file (WAL checkpointed by the last connection)
}

}  // namespace mltune::daemon
