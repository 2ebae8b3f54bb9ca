#include "daemon/remote/remote_workers.h"

#include <algorithm>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace mltune::daemon {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct RemoteWorkerPool::Pending {
  MeasureCandidate candidate;
  std::string queue;
  bool done = false;
  MeasureOutcome result;
};

struct RemoteWorkerPool::Worker {
  RemoteWorkerView view;
  std::string queue;  // "cpu", or its GPU model's GpuCacheTarget
  int polling = 0;    // Take calls waiting now: the worker is evidently alive
  std::vector<std::shared_ptr<Pending>> batch;  // the batch it measures now
};

RemoteWorkerPool::RemoteWorkerPool(RemoteWorkerOptions options)
    : options_(options), epoch_(absl::StrFormat("%06x", std::random_device()() & 0xffffff)) {
  options_.heartbeat_seconds = std::max(0.05, options_.heartbeat_seconds);
  options_.max_batch = std::max(1, options_.max_batch);
  reaper_ = std::thread([this] { ReapLoop(); });
}

RemoteWorkerPool::~RemoteWorkerPool() {
  Shutdown();
  if (reaper_.joinable()) reaper_.join();
}

void RemoteWorkerPool::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  stopping_ = true;
  work_cv_.notify_all();
  done_cv_.notify_all();
}

absl::StatusOr<RemoteWorkerView> RemoteWorkerPool::Register(const std::string& host,
                                                            const std::string& target,
                                                            const std::string& device,
                                                            const std::string& version) {
  std::string queue = target;
  if (target == "gpu") {
    absl::StatusOr<backends::gpu::DeviceDescriptor> d =
        backends::gpu::DeviceDescriptor::FromKey(device);
    if (!d.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a gpu worker's device must be its DeviceDescriptor key: ", d.status().message()));
    }
    queue = backends::gpu::GpuCacheTarget(*d);
  } else if (target != "cpu") {
    return absl::InvalidArgumentError(
        absl::StrCat("target '", target, "' is not measured remotely (cpu, gpu)"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto worker = std::make_unique<Worker>();
  worker->queue = queue;
  RemoteWorkerView& v = worker->view;
  v.id = absl::StrCat("remote-", epoch_, "-", next_worker_++, "-", host);
  v.host = host;
  v.target = target;
  v.device = device;
  v.version = version;
  v.state = "idle";
  v.registered_ms = v.last_seen_ms = NowMs();
  RemoteWorkerView view = v;
  workers_[v.id] = std::move(worker);
  return view;
}

absl::Status RemoteWorkerPool::Heartbeat(const std::string& worker_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = workers_.find(worker_id);
  if (it == workers_.end() || it->second->view.state == "lost") {
    return absl::NotFoundError(
        absl::StrCat("worker ", worker_id, " is not registered here; register again"));
  }
  it->second->view.last_seen_ms = NowMs();
  return absl::OkStatus();
}

namespace {

// About what a candidate adds to a TakeBatch answer.
int64_t CandidateBytes(const MeasureCandidate& c) {
  int64_t bytes = static_cast<int64_t>(c.program.source.size());
  if (c.program.constants != nullptr) bytes += static_cast<int64_t>(c.program.constants->size());
  if (c.gpu_plan.has_value()) {
    bytes += static_cast<int64_t>(c.gpu_plan->plan_json.size());
    for (const auto& [name, data] : c.gpu_plan->files) bytes += static_cast<int64_t>(data.size());
  }
  return bytes;
}

}  // namespace

absl::StatusOr<MeasureBatch> RemoteWorkerPool::Take(const std::string& worker_id,
                                                    std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mu_);
  auto live = [&]() -> Worker* {
    auto it = workers_.find(worker_id);
    if (it == workers_.end() || it->second->view.state == "lost") return nullptr;
    return it->second.get();
  };
  Worker* worker = live();
  if (worker == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("worker ", worker_id, " is not registered here; register again"));
  }
  worker->view.last_seen_ms = NowMs();
  const std::string queue_name = worker->queue;
  ++worker->polling;
  work_cv_.wait_for(lock, wait,
                    [&] { return stopping_ || live() == nullptr || !queued_[queue_name].empty(); });
  if (auto it = workers_.find(worker_id); it != workers_.end()) --it->second->polling;
  worker = live();
  if (worker == nullptr) {
    return absl::NotFoundError(absl::StrCat("worker ", worker_id, " was dropped; register again"));
  }
  worker->view.last_seen_ms = NowMs();
  MeasureBatch batch;
  std::deque<std::shared_ptr<Pending>>& queue = queued_[queue_name];
  if (stopping_ || queue.empty()) return batch;
  batch.id = absl::StrCat("batch-", next_batch_++);
  int64_t bytes = 0;
  while (!queue.empty() && static_cast<int>(batch.candidates.size()) < options_.max_batch) {
    const int64_t size = CandidateBytes(queue.front()->candidate);
    if (!batch.candidates.empty() && bytes + size > options_.max_batch_bytes) break;
    bytes += size;
    worker->batch.push_back(queue.front());
    batch.candidates.push_back(queue.front()->candidate);
    queue.pop_front();
  }
  worker->view.state = "busy";
  worker->view.batch_id = batch.id;
  return batch;
}

absl::Status RemoteWorkerPool::Return(
    const std::string& worker_id, const std::string& batch_id,
    std::vector<std::pair<uint64_t, MeasureOutcome>> measurements) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = workers_.find(worker_id);
  if (it == workers_.end() || it->second->view.state == "lost") {
    return absl::NotFoundError(absl::StrCat("worker ", worker_id,
                                            " was dropped (its batch went to another); register "
                                            "again"));
  }
  Worker& worker = *it->second;
  if (worker.view.batch_id != batch_id) {
    return absl::FailedPreconditionError(
        absl::StrCat("batch ", batch_id, " is not worker ", worker_id, "'s"));
  }
  worker.view.last_seen_ms = NowMs();
  const std::string by = absl::StrCat(worker.view.id, " (", worker.view.device, ")");
  for (auto& [id, outcome] : measurements) {
    for (const std::shared_ptr<Pending>& p : worker.batch) {
      if (p->candidate.id != id || p->done) continue;
      p->result = std::move(outcome);
      p->result.cpu.measured_by = by;
      p->done = true;
      ++worker.view.measured;
    }
  }
  // What the worker did not answer is measured again elsewhere.
  for (const std::shared_ptr<Pending>& p : worker.batch) {
    if (!p->done) queued_[p->queue].push_front(p);
  }
  worker.batch.clear();
  worker.view.batch_id.clear();
  worker.view.state = "idle";
  done_cv_.notify_all();
  work_cv_.notify_all();
  return absl::OkStatus();
}

std::optional<MeasureOutcome> RemoteWorkerPool::Run(const std::string& queue,
                                                    MeasureCandidate candidate) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_ || !HasLiveWorkerLocked(queue)) return std::nullopt;
  auto pending = std::make_shared<Pending>();
  pending->candidate = std::move(candidate);
  pending->candidate.id = next_candidate_++;
  pending->queue = queue;
  queued_[queue].push_back(pending);
  work_cv_.notify_all();
  while (!pending->done) {
    done_cv_.wait_for(
        lock, std::chrono::milliseconds(static_cast<int64_t>(options_.heartbeat_seconds * 1000)));
    if (pending->done) break;
    // Still queued, and nobody left to take it: measure here instead.
    std::deque<std::shared_ptr<Pending>>& waiting = queued_[queue];
    auto queued = std::find(waiting.begin(), waiting.end(), pending);
    if (queued != waiting.end() && (stopping_ || !HasLiveWorkerLocked(queue))) {
      waiting.erase(queued);
      return std::nullopt;
    }
  }
  return std::move(pending->result);
}

std::optional<absl::StatusOr<backends::cpu::Timing>> RemoteWorkerPool::Measure(
    const std::string& target, const backends::cpu::Program& program, uint64_t seed,
    const backends::cpu::MeasureOptions& options) {
  MeasureCandidate candidate;
  candidate.program = program;
  candidate.seed = seed;
  candidate.options = options;
  std::optional<MeasureOutcome> outcome = Run(target, std::move(candidate));
  if (!outcome.has_value()) return std::nullopt;
  if (!outcome->status.ok()) return absl::StatusOr<backends::cpu::Timing>(outcome->status);
  return absl::StatusOr<backends::cpu::Timing>(std::move(outcome->cpu));
}

std::optional<absl::StatusOr<backends::gpu::GpuTiming>> RemoteWorkerPool::MeasureGpu(
    const backends::gpu::GpuPlanBundle& bundle, const backends::gpu::GpuMeasureOptions& options) {
  std::optional<backends::gpu::DeviceDescriptor> device = GpuDevice();
  if (!device.has_value()) return std::nullopt;
  MeasureCandidate candidate;
  candidate.gpu_plan = bundle;
  candidate.gpu_timeout_seconds = options.timeout_seconds;
  std::optional<MeasureOutcome> outcome =
      Run(backends::gpu::GpuCacheTarget(*device), std::move(candidate));
  if (!outcome.has_value()) return std::nullopt;
  if (!outcome->status.ok()) return absl::StatusOr<backends::gpu::GpuTiming>(outcome->status);
  return absl::StatusOr<backends::gpu::GpuTiming>(std::move(outcome->gpu));
}

std::optional<backends::gpu::DeviceDescriptor> RemoteWorkerPool::GpuDevice() {
  std::string key;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, w] : workers_) {
      if (w->view.target != "gpu" || w->view.state == "lost") continue;
      if (key.empty() || w->view.device < key) key = w->view.device;
    }
  }
  if (key.empty()) return std::nullopt;
  absl::StatusOr<backends::gpu::DeviceDescriptor> d = backends::gpu::DeviceDescriptor::FromKey(key);
  if (!d.ok()) return std::nullopt;
  return *d;
}

bool RemoteWorkerPool::HasLiveWorkerLocked(const std::string& queue) const {
  for (const auto& [id, w] : workers_) {
    if (w->queue == queue && w->view.state != "lost") return true;
  }
  return false;
}

std::vector<RemoteWorkerView> RemoteWorkerPool::Workers() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<RemoteWorkerView> out;
  for (const auto& [id, w] : workers_) out.push_back(w->view);
  return out;
}

void RemoteWorkerPool::ReapLoop() {
  const auto period =
      std::chrono::milliseconds(static_cast<int64_t>(options_.heartbeat_seconds * 500));
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    work_cv_.wait_for(lock, period);
    if (stopping_) return;
    ReapLocked(NowMs());
  }
}

void RemoteWorkerPool::ReapLocked(int64_t now_ms) {
  const int64_t silent_ms = static_cast<int64_t>(options_.heartbeat_seconds * 3000);
  const int64_t forget_ms = static_cast<int64_t>(options_.forget_lost_seconds * 1000);
  bool changed = false;
  for (auto it = workers_.begin(); it != workers_.end();) {
    Worker& w = *it->second;
    if (w.view.state == "lost") {
      it = now_ms - w.view.last_seen_ms > forget_ms ? workers_.erase(it) : std::next(it);
      continue;
    }
    if (w.polling == 0 && now_ms - w.view.last_seen_ms > silent_ms) {
      w.view.state = "lost";
      for (const std::shared_ptr<Pending>& p : w.batch) {
        if (!p->done) queued_[p->queue].push_front(p);
      }
      w.batch.clear();
      w.view.batch_id.clear();
      changed = true;
    }
    ++it;
  }
  if (changed) {
    work_cv_.notify_all();
    done_cv_.notify_all();
  }
}

}  // namespace mltune::daemon
