// Internal to mltune_daemon: the mltune.v1.CompileService implementation. It validates requests
// into JobSpecs, answers from the results cache, hands jobs to the JobScheduler and translates its
// views back to wire messages. Only daemon.cc includes this header (it pulls in generated code).
#pragma once

#include <atomic>
#include <chrono>
#include <string>

#include "absl/status/statusor.h"
#include "daemon/config.h"
#include "daemon/job_scheduler.h"
#include "daemon/metrics/metrics.h"
#include "mltune/v1/compile_service.grpc.pb.h"
#include "storage/store.h"

namespace mltune::daemon {

class CompileServiceImpl final : public mltune::v1::CompileService::Service {
 public:
  CompileServiceImpl(const DaemonConfig& config, storage::Store& store, Metrics& metrics,
                     JobScheduler& scheduler, std::string metrics_address);

  grpc::Status SubmitCompile(grpc::ServerContext* context,
                             const mltune::v1::SubmitCompileRequest* request,
                             mltune::v1::SubmitCompileResponse* response) override;
  grpc::Status WatchJob(grpc::ServerContext* context, const mltune::v1::WatchJobRequest* request,
                        grpc::ServerWriter<mltune::v1::Job>* writer) override;
  grpc::Status GetJob(grpc::ServerContext* context, const mltune::v1::GetJobRequest* request,
                      mltune::v1::Job* response) override;
  grpc::Status CancelJob(grpc::ServerContext* context, const mltune::v1::CancelJobRequest* request,
                         mltune::v1::CancelJobResponse* response) override;
  grpc::Status LookupCache(grpc::ServerContext* context,
                           const mltune::v1::LookupCacheRequest* request,
                           mltune::v1::LookupCacheResponse* response) override;
  grpc::Status ListStrategies(grpc::ServerContext* context,
                              const mltune::v1::ListStrategiesRequest* request,
                              mltune::v1::ListStrategiesResponse* response) override;
  grpc::Status ListWorkers(grpc::ServerContext* context,
                           const mltune::v1::ListWorkersRequest* request,
                           mltune::v1::ListWorkersResponse* response) override;
  grpc::Status GetStats(grpc::ServerContext* context, const mltune::v1::GetStatsRequest* request,
                        mltune::v1::GetStatsResponse* response) override;

  // Rebuilds a stored job's spec from its serialized request (the scheduler's Decoder).
  absl::StatusOr<JobSpec> DecodeStoredJob(const storage::JobRecord& record) const;

 private:
  absl::StatusOr<JobSpec> BuildSpec(const mltune::v1::SubmitCompileRequest& request) const;
  absl::Status FillJob(const JobView& view, mltune::v1::Job* job);
  absl::Status FillResult(const storage::ResultRecord& record, bool from_cache, bool omit_artifacts,
                          mltune::v1::TaskResult* result) const;

  const DaemonConfig& config_;
  storage::Store& store_;
  Metrics& metrics_;
  JobScheduler& scheduler_;
  std::string metrics_address_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<int64_t> cache_hits_{0};
  std::atomic<int64_t> cache_misses_{0};
};

}  // namespace mltune::daemon
