// The daemon's remote measurement workers (mltune-worker, on the machines that hold the
// hardware): who is registered and alive, and the queues of programs waiting to be measured, one
// per CPU target and one per GPU model (a program compiled for one GPU runs on that GPU only). A
// search thread's Measure puts a program in its queue and waits; a worker's long-poll takes
// queued programs as a batch and returns their timings. A worker that stops heartbeating is
// marked lost and its batch goes back to the queue for another worker, or, when none is left, to
// the daemon's own runner. No gRPC types here: the daemon's WorkerService translates.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/cpu/codegen.h"
#include "backends/cpu/runner.h"
#include "backends/gpu/device.h"
#include "backends/gpu/gpu_program.h"

namespace mltune::daemon {

struct RemoteWorkerOptions {
  // How often workers must heartbeat; one silent for three periods is lost.
  double heartbeat_seconds = 1;
  int max_batch = 8;  // programs handed out in one batch
  // A batch grows no further once its programs (their sources and constants: a model's weights)
  // pass this many bytes; it always holds one. One gRPC message carries a batch, and protobuf
  // refuses messages over 2 GiB.
  int64_t max_batch_bytes = int64_t{256} << 20;
  // How long a lost worker stays in the listing.
  double forget_lost_seconds = 600;
};

struct RemoteWorkerView {
  std::string id;
  std::string host;
  std::string target;  // "cpu" or "gpu"
  std::string device;  // for "gpu", DeviceDescriptor::Key()
  std::string version;
  std::string state;  // "idle", "busy" (measuring a batch) or "lost"
  std::string batch_id;
  int64_t measured = 0;  // programs measured since it registered
  int64_t registered_ms = 0;
  int64_t last_seen_ms = 0;
};

// A CPU program with its seed and timing options, or (gpu_plan set) a GPU timing run.
struct MeasureCandidate {
  uint64_t id = 0;
  backends::cpu::Program program;
  uint64_t seed = 0;
  backends::cpu::MeasureOptions options;
  std::optional<backends::gpu::GpuPlanBundle> gpu_plan;
  double gpu_timeout_seconds = 0;
};

// A candidate's measurement: its status, and the timing of its kind.
struct MeasureOutcome {
  absl::Status status = absl::UnknownError("not measured");
  backends::cpu::Timing cpu;
  backends::gpu::GpuTiming gpu;
};

struct MeasureBatch {
  std::string id;  // "" when the wait ended without work
  std::vector<MeasureCandidate> candidates;
};

class RemoteWorkerPool {
 public:
  explicit RemoteWorkerPool(RemoteWorkerOptions options = {});
  ~RemoteWorkerPool();
  RemoteWorkerPool(const RemoteWorkerPool&) = delete;
  RemoteWorkerPool& operator=(const RemoteWorkerPool&) = delete;

  // --- The workers' side (WorkerService). NotFound for an unknown or lost worker: it must
  // register again. Register: InvalidArgument for a target other than cpu or gpu, or a gpu
  // worker whose device is not a DeviceDescriptor key.
  absl::StatusOr<RemoteWorkerView> Register(const std::string& host, const std::string& target,
                                            const std::string& device, const std::string& version);
  absl::Status Heartbeat(const std::string& worker_id);
  // Waits up to `wait` for programs of the worker's target; an empty batch when none came.
  absl::StatusOr<MeasureBatch> Take(const std::string& worker_id, std::chrono::milliseconds wait);
  // The batch's measurements, by candidate id. FailedPrecondition for a batch that is no longer
  // the worker's (it was handed to another after the worker was lost).
  absl::Status Return(const std::string& worker_id, const std::string& batch_id,
                      std::vector<std::pair<uint64_t, MeasureOutcome>> measurements);

  // --- The daemon's side. Measures `program` on a live worker of `target` and returns its
  // timing (measured_by names the worker), or nullopt when no live worker of `target` is there
  // to take it (the caller measures locally).
  std::optional<absl::StatusOr<backends::cpu::Timing>> Measure(
      const std::string& target, const backends::cpu::Program& program, uint64_t seed,
      const backends::cpu::MeasureOptions& options);
  // The GPU that GpuDevice() names times `bundle` (compiled for it); nullopt without a live GPU
  // worker of that model.
  std::optional<absl::StatusOr<backends::gpu::GpuTiming>> MeasureGpu(
      const backends::gpu::GpuPlanBundle& bundle, const backends::gpu::GpuMeasureOptions& options);
  // The device of the live GPU workers (the first by key, where models differ); nullopt: none.
  std::optional<backends::gpu::DeviceDescriptor> GpuDevice();
  std::vector<RemoteWorkerView> Workers();
  double heartbeat_seconds() const { return options_.heartbeat_seconds; }

  // Wakes every waiter and refuses further work; Measure calls return nullopt.
  void Shutdown();

 private:
  struct Pending;
  struct Worker;
  void ReapLoop();
  // Marks workers silent for three heartbeat periods lost and requeues their batches; under mu_.
  void ReapLocked(int64_t now_ms);
  // `queue`: "cpu", or a GPU model's GpuCacheTarget.
  bool HasLiveWorkerLocked(const std::string& queue) const;
  // Queues `candidate` and waits for its outcome; nullopt when no live worker serves `queue`.
  std::optional<MeasureOutcome> Run(const std::string& queue, MeasureCandidate candidate);

  RemoteWorkerOptions options_;
  // Part of every worker id, so that an id handed out before a restart names no worker after it.
  const std::string epoch_;
  std::mutex mu_;
  std::condition_variable work_cv_;  // workers wait for programs
  std::condition_variable done_cv_;  // Measure waits for its result
  std::map<std::string, std::unique_ptr<Worker>> workers_;
  std::map<std::string, std::deque<std::shared_ptr<Pending>>> queued_;  // by queue
  uint64_t next_candidate_ = 1;
  uint64_t next_worker_ = 1;
  uint64_t next_batch_ = 1;
  bool stopping_ = false;
  std::thread reaper_;
};

}  // namespace mltune::daemon
