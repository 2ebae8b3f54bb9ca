#include "daemon/worker_service.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "daemon/rpc_scope.h"
#include "remote/wire.h"

namespace mltune::daemon {
namespace {

namespace v1 = ::mltune::v1;

// The longest a TakeBatch waits: a worker's long-poll must not hold an RPC thread for long.
constexpr int kMaxWaitMs = 10'000;

}  // namespace

WorkerServiceImpl::WorkerServiceImpl(RemoteWorkerPool& pool, Metrics& metrics,
                                     const AccessPolicy& access)
    : pool_(pool), metrics_(metrics), access_(access) {}

absl::Status WorkerServiceImpl::Authorize(const grpc::ServerContext& context,
                                          const char* method) const {
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find("authorization");
  const std::string_view header = it == metadata.end()
                                      ? std::string_view()
                                      : std::string_view(it->second.data(), it->second.size());
  return access_.Authorize(header, Role::kWorker, method).status();
}

grpc::Status WorkerServiceImpl::RegisterWorker(grpc::ServerContext* context,
                                               const v1::RegisterWorkerRequest* request,
                                               v1::RegisterWorkerResponse* response) {
  RpcScope scope(metrics_, "RegisterWorker");
  if (absl::Status s = Authorize(*context, "RegisterWorker"); !s.ok()) return scope.Done(s);
  if (request->host().empty()) {
    return scope.Done(absl::InvalidArgumentError("RegisterWorker: host is empty"));
  }
  const absl::StatusOr<RemoteWorkerView> view =
      pool_.Register(request->host(), request->target(), request->device(), request->version());
  if (!view.ok()) {
    return scope.Done(absl::Status(view.status().code(),
                                   absl::StrCat("RegisterWorker: ", view.status().message())));
  }
  response->set_worker_id(view->id);
  response->set_heartbeat_seconds(pool_.heartbeat_seconds());
  return scope.Done(absl::OkStatus());
}

grpc::Status WorkerServiceImpl::TakeBatch(grpc::ServerContext* context,
                                          const v1::TakeBatchRequest* request,
                                          v1::TakeBatchResponse* response) {
  RpcScope scope(metrics_, "TakeBatch");
  if (absl::Status s = Authorize(*context, "TakeBatch"); !s.ok()) return scope.Done(s);
  const int wait_ms = std::clamp(request->wait_ms(), 0, kMaxWaitMs);
  absl::StatusOr<MeasureBatch> batch =
      pool_.Take(request->worker_id(), std::chrono::milliseconds(wait_ms));
  if (!batch.ok()) return scope.Done(batch.status());
  response->set_batch_id(batch->id);
  for (const MeasureCandidate& c : batch->candidates) {
    v1::Candidate* out = response->add_candidates();
    out->set_id(c.id);
    if (c.gpu_plan.has_value()) {
      remote::ToProto(*c.gpu_plan, c.gpu_timeout_seconds, out->mutable_gpu_plan());
      continue;
    }
    remote::ToProto(c.program, out->mutable_program());
    out->set_seed(c.seed);
    remote::ToProto(c.options, out->mutable_options());
  }
  return scope.Done(absl::OkStatus());
}

grpc::Status WorkerServiceImpl::ReturnBatch(grpc::ServerContext* context,
                                            const v1::ReturnBatchRequest* request,
                                            v1::ReturnBatchResponse*) {
  RpcScope scope(metrics_, "ReturnBatch");
  if (absl::Status s = Authorize(*context, "ReturnBatch"); !s.ok()) return scope.Done(s);
  std::vector<std::pair<uint64_t, MeasureOutcome>> measurements;
  for (const v1::Measurement& m : request->measurements()) {
    MeasureOutcome outcome;
    absl::StatusOr<backends::cpu::Timing> timing = remote::FromProto(m);
    outcome.status = timing.status();
    if (timing.ok()) {
      outcome.cpu = *std::move(timing);
      outcome.gpu = remote::FromProto(m.gpu_timing());
    }
    measurements.emplace_back(m.id(), std::move(outcome));
  }
  return scope.Done(
      pool_.Return(request->worker_id(), request->batch_id(), std::move(measurements)));
}

grpc::Status WorkerServiceImpl::Heartbeat(grpc::ServerContext* context,
                                          const v1::HeartbeatRequest* request,
                                          v1::HeartbeatResponse*) {
  RpcScope scope(metrics_, "Heartbeat");
  if (absl::Status s = Authorize(*context, "Heartbeat"); !s.ok()) return scope.Done(s);
  return scope.Done(pool_.Heartbeat(request->worker_id()));
}

}  // namespace mltune::daemon
