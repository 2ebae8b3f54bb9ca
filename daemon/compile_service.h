// Internal to mltune_daemon: the mltune.v1.CompileService implementation. It validates requests
// into JobSpecs, answers from the results cache, hands jobs to the JobScheduler and translates its
// views back to wire messages. Only daemon.cc includes this header (it pulls in generated code).
#pragma once

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/access/access_policy.h"
#include "daemon/config.h"
#include "daemon/graph_input.h"
#include "daemon/job_scheduler.h"
#include "daemon/metrics/metrics.h"
#include "daemon/model_refresher.h"
#include "daemon/remote/remote_workers.h"
#include "mltune/v1/compile_service.grpc.pb.h"
#include "storage/store.h"

namespace mltune::daemon {

// The hot read paths (LookupCache, GetJob and the listings) use gRPC's callback API: they answer
// on the thread that read the request, without the hand-off to a sync worker thread that cost
// more than the lookup itself (bench/daemon_load). SubmitCompile may parse a large graph,
// UploadGraph reads a stream, and WatchJob blocks between updates, so they stay on the sync pool.
using CompileServiceBase = mltune::v1::CompileService::WithCallbackMethod_LookupCache<
    mltune::v1::CompileService::WithCallbackMethod_GetJob<
        mltune::v1::CompileService::WithCallbackMethod_CancelJob<
            mltune::v1::CompileService::WithCallbackMethod_ListStrategies<
                mltune::v1::CompileService::WithCallbackMethod_ListWorkers<
                    mltune::v1::CompileService::WithCallbackMethod_GetStats<
                        mltune::v1::CompileService::Service>>>>>>;

class CompileServiceImpl final : public CompileServiceBase {
 public:
  // `refresher` (the daemon's cost model retraining) is what GetStats reports of it.
  // Every call is first let through, or answered, by `access`.
  CompileServiceImpl(const DaemonConfig& config, storage::Store& store, Metrics& metrics,
                     JobScheduler& scheduler, const ModelRefresher& refresher,
                     std::string metrics_address, const AccessPolicy& access,
                     RemoteWorkerPool& remote_workers);

  grpc::Status SubmitCompile(grpc::ServerContext* context,
                             const mltune::v1::SubmitCompileRequest* request,
                             mltune::v1::SubmitCompileResponse* response) override;
  grpc::Status HasGraph(grpc::ServerContext* context, const mltune::v1::HasGraphRequest* request,
                        mltune::v1::HasGraphResponse* response) override;
  grpc::Status UploadGraph(grpc::ServerContext* context,
                           grpc::ServerReader<mltune::v1::GraphChunk>* reader,
                           mltune::v1::GraphRef* response) override;
  grpc::Status WatchJob(grpc::ServerContext* context, const mltune::v1::WatchJobRequest* request,
                        grpc::ServerWriter<mltune::v1::Job>* writer) override;
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* context,
                                   const mltune::v1::GetJobRequest* request,
                                   mltune::v1::Job* response) override;
  grpc::ServerUnaryReactor* CancelJob(grpc::CallbackServerContext* context,
                                      const mltune::v1::CancelJobRequest* request,
                                      mltune::v1::CancelJobResponse* response) override;
  grpc::ServerUnaryReactor* LookupCache(grpc::CallbackServerContext* context,
                                        const mltune::v1::LookupCacheRequest* request,
                                        mltune::v1::LookupCacheResponse* response) override;
  grpc::ServerUnaryReactor* ListStrategies(grpc::CallbackServerContext* context,
                                           const mltune::v1::ListStrategiesRequest* request,
                                           mltune::v1::ListStrategiesResponse* response) override;
  grpc::ServerUnaryReactor* ListWorkers(grpc::CallbackServerContext* context,
                                        const mltune::v1::ListWorkersRequest* request,
                                        mltune::v1::ListWorkersResponse* response) override;
  grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* context,
                                     const mltune::v1::GetStatsRequest* request,
                                     mltune::v1::GetStatsResponse* response) override;

  // Rebuilds a stored job's spec from its serialized request (the scheduler's Decoder).
  absl::StatusOr<JobSpec> DecodeStoredJob(const storage::JobRecord& record) const;

 private:
  // The caller's grant for `method` (nullptr where no tokens are configured), or the status to
  // answer with (AccessPolicy::Authorize).
  absl::StatusOr<const TokenGrant*> Caller(const grpc::ServerContextBase& context, Role role,
                                           const char* method) const;
  // OK, or the refusal (counted in the metrics as the method's).
  grpc::Status Admit(const grpc::ServerContextBase& context, Role role, const char* method);
  // Reserves a place among the jobs `grant` has queued or running (its max_queued), or says
  // RESOURCE_EXHAUSTED; Release ends the reservation, keeping `job_id` ("": none) as the
  // token's until it finishes.
  absl::Status Reserve(const TokenGrant& grant);
  void Release(const TokenGrant& grant, const std::string& job_id);

  grpc::Status DoGetJob(const mltune::v1::GetJobRequest& request, mltune::v1::Job* response);
  grpc::Status DoCancelJob(const mltune::v1::CancelJobRequest& request,
                           mltune::v1::CancelJobResponse* response);
  grpc::Status DoLookupCache(const mltune::v1::LookupCacheRequest& request,
                             mltune::v1::LookupCacheResponse* response);
  grpc::Status DoListStrategies(mltune::v1::ListStrategiesResponse* response);
  grpc::Status DoListWorkers(mltune::v1::ListWorkersResponse* response);
  grpc::Status DoGetStats(mltune::v1::GetStatsResponse* response);

  // Validates a request into a spec. The graph is parsed unless `need_module` is false and its
  // bytes were seen before: then only spec.fingerprint is set (enough to answer from the cache).
  absl::StatusOr<JobSpec> BuildSpec(const mltune::v1::SubmitCompileRequest& request,
                                    bool need_module) const;
  // OK for a registered strategy, or one every requested task runs itself (with its model
  // trained: FailedPrecondition otherwise); InvalidArgument naming the known ones.
  absl::Status CheckStrategy(const JobSpec& spec) const;
  // The SHA-256 of the graph's bytes: its `sha256`, or the hash of its inline `data`.
  absl::StatusOr<std::string> GraphSha256(const mltune::v1::Graph& graph) const;
  // The bytes of the stored graph `sha256` (NotFound naming `name` when none is stored).
  absl::StatusOr<std::string> StoredGraph(const std::string& sha256, const std::string& name) const;
  // Parses and verifies the request's graph (inline, or stored under `sha256`) into spec->module
  // and spec->fingerprint.
  absl::Status LoadModule(const mltune::v1::Graph& graph, const std::string& sha256,
                          JobSpec* spec) const;
  // The request as a job stores it: an inline graph moves to the graph store (once per content)
  // and the request keeps only its hash, so job rows stay small.
  absl::StatusOr<std::string> StoredRequest(const mltune::v1::SubmitCompileRequest& request,
                                            const std::string& sha256);
  // The graph's fingerprint, from the FingerprintCache or by loading it.
  absl::StatusOr<std::string> GraphFingerprint(const mltune::v1::Graph& graph) const;
  absl::Status FillJob(const JobView& view, mltune::v1::Job* job);
  absl::Status FillResult(const storage::ResultRecord& record, bool from_cache, bool omit_artifacts,
                          mltune::v1::TaskResult* result) const;

  const DaemonConfig& config_;
  storage::Store& store_;
  Metrics& metrics_;
  JobScheduler& scheduler_;
  const ModelRefresher& refresher_;
  std::string metrics_address_;
  std::chrono::steady_clock::time_point start_;
  mutable FingerprintCache fingerprints_;
  std::atomic<int64_t> cache_hits_{0};
  std::atomic<int64_t> cache_misses_{0};
  const AccessPolicy& access_;
  RemoteWorkerPool& remote_workers_;
  // Per token name: the jobs it submitted that may still be queued or running, and submissions
  // under way (in memory: after a restart a token's resumed jobs no longer count against it).
  struct Owned {
    std::vector<std::string> jobs;
    int pending = 0;
  };
  std::mutex owned_mu_;
  std::unordered_map<std::string, Owned> owned_;
};

}  // namespace mltune::daemon
