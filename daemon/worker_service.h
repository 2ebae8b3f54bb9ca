// Internal to daemon/: mltune.v1.WorkerService, through which remote measurement workers
// (mltune-worker) register, take batches of programs from the daemon's RemoteWorkerPool and
// return their timings. Every call needs a token with the "worker" role where tokens are on.
#pragma once

#include "daemon/access/access_policy.h"
#include "daemon/metrics/metrics.h"
#include "daemon/remote/remote_workers.h"
#include "mltune/v1/worker_service.grpc.pb.h"

namespace mltune::daemon {

class WorkerServiceImpl final : public mltune::v1::WorkerService::Service {
 public:
  WorkerServiceImpl(RemoteWorkerPool& pool, Metrics& metrics, const AccessPolicy& access);

  grpc::Status RegisterWorker(grpc::ServerContext* context,
                              const mltune::v1::RegisterWorkerRequest* request,
                              mltune::v1::RegisterWorkerResponse* response) override;
  grpc::Status TakeBatch(grpc::ServerContext* context, const mltune::v1::TakeBatchRequest* request,
                         mltune::v1::TakeBatchResponse* response) override;
  grpc::Status ReturnBatch(grpc::ServerContext* context,
                           const mltune::v1::ReturnBatchRequest* request,
                           mltune::v1::ReturnBatchResponse* response) override;
  grpc::Status Heartbeat(grpc::ServerContext* context, const mltune::v1::HeartbeatRequest* request,
                         mltune::v1::HeartbeatResponse* response) override;

 private:
  absl::Status Authorize(const grpc::ServerContext& context, const char* method) const;

  RemoteWorkerPool& pool_;
  Metrics& metrics_;
  const AccessPolicy& access_;
};

}  // namespace mltune::daemon
