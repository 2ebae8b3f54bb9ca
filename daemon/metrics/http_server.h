// A minimal HTTP/1.1 server for Prometheus scrapes: GET /metrics answers with a body made on
// each request, anything else gets 404/405, and every connection closes after one answer.
// mltuned's own rather than civetweb (prometheus-cpp's exposer): civetweb starts its threads
// with a fixed 100 KiB stack, which glibc refuses once the process's static TLS outgrows it
// (OpenBLAS alone brings 60 KiB), so the metrics port failed wherever OpenBLAS was the BLAS.
// Internal to mltune_metrics; metrics.h is the folder's public header.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

namespace mltune::daemon {

class MetricsHttpServer {
 public:
  // Binds `host`:`port` (port 0 picks a free one) and serves on one thread with the default
  // stack; `body` is called once per GET /metrics, from that thread.
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(
      const std::string& host, int port, std::function<std::string()> body);
  // Stops accepting, finishes the answer in progress, joins the thread.
  ~MetricsHttpServer();
  MetricsHttpServer(const MetricsHttpServer&) = delete;
  MetricsHttpServer& operator=(const MetricsHttpServer&) = delete;

  int port() const { return port_; }

 private:
  MetricsHttpServer() = default;
  void Serve();
  void Answer(int fd);

  int listen_fd_ = -1;
  int wake_fd_ = -1;  // an eventfd the destructor writes to end Serve()
  int port_ = 0;
  std::function<std::string()> body_;
  std::thread thread_;
};

}  // namespace mltune::daemon
