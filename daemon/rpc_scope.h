// Internal to daemon/: an RPC's metrics scope (count and latency, by method and code) and the
// absl-to-gRPC status translation the daemon's services share.
#pragma once

#include <chrono>
#include <string>

#include "absl/status/status.h"
#include "daemon/metrics/metrics.h"
#include "grpcpp/support/status.h"

namespace mltune::daemon {

inline grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // absl::StatusCode mirrors grpc::StatusCode value for value.
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

// Counts and times one RPC for the metrics, with the code it ends with.
class RpcScope {
 public:
  RpcScope(Metrics& metrics, const char* method)
      : metrics_(metrics), method_(method), start_(std::chrono::steady_clock::now()) {}
  grpc::Status Done(const absl::Status& status) {
    metrics_.ObserveRequest(
        method_, absl::StatusCodeToString(status.code()),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
    return ToGrpc(status);
  }

 private:
  Metrics& metrics_;
  const char* method_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace mltune::daemon
