// RemoteWorkerPool, the daemon's queue of programs for remote measurement workers: a program is
// measured by a live worker of its target (and the timing names the worker), batches hold what is
// queued, a worker that stops heartbeating is lost and its batch goes to another worker, and with
// no live worker left the caller measures locally (nullopt). The workers here are threads of the
// test calling the pool directly; mltune-worker itself is tested in tests/worker.
#include "daemon/remote/remote_workers.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>

namespace mltune::daemon {
namespace {

using backends::cpu::Timing;
using std::chrono::milliseconds;

backends::cpu::Program ProgramNamed(const std::string& source) {
  backends::cpu::Program p;
  p.source = source;
  return p;
}

// A GPU worker's device: a compile-only sm_90 descriptor's key.
std::string GpuKey() { return backends::gpu::DescriptorForArch("sm_90").value().Key(); }

RemoteWorkerOptions FastOptions() {
  RemoteWorkerOptions options;
  options.heartbeat_seconds = 0.1;
  return options;
}

// A measurement of `seconds`, CPU and GPU alike.
MeasureOutcome Measured(size_t seconds) {
  MeasureOutcome o;
  o.status = absl::OkStatus();
  o.cpu.median_s = o.gpu.median_s = static_cast<double>(seconds);
  return o;
}

// Takes one batch and answers each program with a timing of its source's length.
void Serve(RemoteWorkerPool& pool, const std::string& worker) {
  absl::StatusOr<MeasureBatch> batch = pool.Take(worker, milliseconds(2000));
  ASSERT_TRUE(batch.ok()) << batch.status();
  ASSERT_FALSE(batch->id.empty());
  std::vector<std::pair<uint64_t, MeasureOutcome>> results;
  for (const MeasureCandidate& c : batch->candidates) {
    results.emplace_back(c.id, Measured(c.program.source.size()));
  }
  ASSERT_TRUE(pool.Return(worker, batch->id, std::move(results)).ok());
}

TEST(RemoteWorkerPoolTest, WithoutWorkersTheCallerMeasuresLocally) {
  RemoteWorkerPool pool(FastOptions());
  EXPECT_FALSE(pool.Measure("cpu", ProgramNamed("x"), 0, {}).has_value());
  pool.Register("gpu-box", "gpu", GpuKey(), "0.1").value();
  EXPECT_FALSE(pool.Measure("cpu", ProgramNamed("x"), 0, {}).has_value());
}

TEST(RemoteWorkerPoolTest, ALiveWorkerMeasuresAndIsNamed) {
  RemoteWorkerPool pool(FastOptions());
  const RemoteWorkerView w = pool.Register("cpu-box", "cpu", "Xeon, 8 cores", "0.1").value();
  EXPECT_EQ(w.state, "idle");
  std::thread worker([&] { Serve(pool, w.id); });
  std::optional<absl::StatusOr<Timing>> t = pool.Measure("cpu", ProgramNamed("abcd"), 7, {});
  worker.join();
  ASSERT_TRUE(t.has_value());
  ASSERT_TRUE(t->ok()) << t->status();
  EXPECT_EQ((*t)->median_s, 4);
  EXPECT_NE((*t)->measured_by.find("cpu-box"), std::string::npos) << (*t)->measured_by;
  EXPECT_NE((*t)->measured_by.find("Xeon"), std::string::npos);
  std::vector<RemoteWorkerView> views = pool.Workers();
  ASSERT_EQ(views.size(), 1u);
  EXPECT_EQ(views[0].measured, 1);
  EXPECT_EQ(views[0].state, "idle");
}

TEST(RemoteWorkerPoolTest, AFailedMeasurementComesBackAsItsError) {
  RemoteWorkerPool pool(FastOptions());
  const RemoteWorkerView w = pool.Register("cpu-box", "cpu", "", "0.1").value();
  std::thread worker([&] {
    absl::StatusOr<MeasureBatch> batch = pool.Take(w.id, milliseconds(2000));
    ASSERT_TRUE(batch.ok() && batch->candidates.size() == 1);
    std::vector<std::pair<uint64_t, MeasureOutcome>> results;
    MeasureOutcome failed;
    failed.status = absl::InvalidArgumentError("does not compile");
    results.emplace_back(batch->candidates[0].id, failed);
    ASSERT_TRUE(pool.Return(w.id, batch->id, std::move(results)).ok());
  });
  std::optional<absl::StatusOr<Timing>> t = pool.Measure("cpu", ProgramNamed("bad"), 0, {});
  worker.join();
  ASSERT_TRUE(t.has_value());
  EXPECT_TRUE(absl::IsInvalidArgument(t->status())) << t->status();
}

TEST(RemoteWorkerPoolTest, ALostWorkersBatchGoesToAnotherWorker) {
  RemoteWorkerPool pool(FastOptions());
  const RemoteWorkerView dead = pool.Register("dies", "cpu", "", "0.1").value();
  auto measured = std::async(std::launch::async,
                             [&] { return pool.Measure("cpu", ProgramNamed("abc"), 0, {}); });
  // The first worker takes the batch and then goes silent.
  absl::StatusOr<MeasureBatch> taken = pool.Take(dead.id, milliseconds(2000));
  ASSERT_TRUE(taken.ok() && taken->candidates.size() == 1);
  const RemoteWorkerView alive = pool.Register("lives", "cpu", "", "0.1").value();
  std::atomic<bool> stop{false};
  std::thread heartbeats([&] {
    while (!stop) {
      pool.Heartbeat(alive.id).IgnoreError();
      std::this_thread::sleep_for(milliseconds(20));
    }
  });
  Serve(pool, alive.id);
  std::optional<absl::StatusOr<Timing>> t = measured.get();
  stop = true;
  heartbeats.join();
  ASSERT_TRUE(t.has_value() && t->ok());
  EXPECT_NE((*t)->measured_by.find("lives"), std::string::npos) << (*t)->measured_by;
  // The lost worker must register again; its late answer is refused.
  EXPECT_TRUE(absl::IsNotFound(pool.Heartbeat(dead.id)));
  EXPECT_TRUE(absl::IsNotFound(pool.Return(dead.id, taken->id, {})));
  bool listed_lost = false;
  for (const RemoteWorkerView& v : pool.Workers())
    listed_lost |= v.id == dead.id && v.state == "lost";
  EXPECT_TRUE(listed_lost);
}

TEST(RemoteWorkerPoolTest, WhenTheOnlyWorkerIsLostTheCallerMeasuresLocally) {
  RemoteWorkerPool pool(FastOptions());
  const RemoteWorkerView w = pool.Register("dies", "cpu", "", "0.1").value();
  auto measured = std::async(std::launch::async,
                             [&] { return pool.Measure("cpu", ProgramNamed("abc"), 0, {}); });
  ASSERT_TRUE(pool.Take(w.id, milliseconds(2000)).ok());
  // No heartbeat: after three periods the worker is lost, the program requeued, nobody left.
  const auto start = std::chrono::steady_clock::now();
  std::optional<absl::StatusOr<Timing>> t = measured.get();
  EXPECT_FALSE(t.has_value());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(RemoteWorkerPoolTest, ABatchHoldsWhatIsQueued) {
  RemoteWorkerOptions options = FastOptions();
  options.max_batch = 3;
  RemoteWorkerPool pool(options);
  const RemoteWorkerView w = pool.Register("box", "cpu", "", "0.1").value();
  std::vector<std::future<std::optional<absl::StatusOr<Timing>>>> calls;
  for (int i = 0; i < 5; ++i) {
    calls.push_back(std::async(std::launch::async, [&pool, i] {
      return pool.Measure("cpu", ProgramNamed(std::string(static_cast<size_t>(i + 1), 'x')), 0, {});
    }));
  }
  // Let all five queue up before the worker asks.
  std::this_thread::sleep_for(milliseconds(100));
  absl::StatusOr<MeasureBatch> first = pool.Take(w.id, milliseconds(100));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->candidates.size(), 3u);
  std::vector<std::pair<uint64_t, MeasureOutcome>> results;
  for (const MeasureCandidate& c : first->candidates) {
    results.emplace_back(c.id, Measured(c.program.source.size()));
  }
  ASSERT_TRUE(pool.Return(w.id, first->id, std::move(results)).ok());
  Serve(pool, w.id);
  for (size_t i = 0; i < calls.size(); ++i) {
    std::optional<absl::StatusOr<Timing>> t = calls[i].get();
    ASSERT_TRUE(t.has_value() && t->ok());
    EXPECT_EQ((*t)->median_s, static_cast<double>(i + 1));
  }
}

// Programs carry their constants (a model's weights): a batch stops growing past
// max_batch_bytes, so one gRPC message stays under protobuf's 2 GiB, but always holds one.
TEST(RemoteWorkerPoolTest, ABatchStopsGrowingPastItsByteLimit) {
  RemoteWorkerOptions options = FastOptions();
  options.max_batch = 8;
  options.max_batch_bytes = 1000;
  RemoteWorkerPool pool(options);
  const RemoteWorkerView w = pool.Register("box", "cpu", "", "0.1").value();
  auto weights = std::make_shared<const std::string>(600, 'w');  // shared, counted per program
  std::vector<std::future<std::optional<absl::StatusOr<Timing>>>> calls;
  for (int i = 0; i < 3; ++i) {
    calls.push_back(std::async(std::launch::async, [&pool, &weights, i] {
      backends::cpu::Program program = ProgramNamed(std::string(static_cast<size_t>(i + 1), 'x'));
      program.constants = i < 2 ? weights : std::make_shared<const std::string>(5000, 'w');
      return pool.Measure("cpu", program, 0, {});
    }));
  }
  std::this_thread::sleep_for(milliseconds(100));
  std::vector<size_t> sizes;
  for (int batch = 0; batch < 3; ++batch) {
    absl::StatusOr<MeasureBatch> taken = pool.Take(w.id, milliseconds(100));
    ASSERT_TRUE(taken.ok()) << taken.status();
    sizes.push_back(taken->candidates.size());
    std::vector<std::pair<uint64_t, MeasureOutcome>> results;
    for (const MeasureCandidate& c : taken->candidates) {
      results.emplace_back(c.id, Measured(c.program.source.size()));
    }
    ASSERT_TRUE(pool.Return(w.id, taken->id, std::move(results)).ok());
  }
  // 600 + 600 bytes pass 1000: each of the three goes alone, the 5000-byte one too.
  EXPECT_EQ(sizes, (std::vector<size_t>{1, 1, 1}));
  for (auto& call : calls) {
    std::optional<absl::StatusOr<Timing>> t = call.get();
    ASSERT_TRUE(t.has_value() && t->ok());
  }
}

TEST(RemoteWorkerPoolTest, GpuProgramsGoToAWorkerOfTheirGpu) {
  RemoteWorkerPool pool(FastOptions());
  EXPECT_FALSE(pool.GpuDevice().has_value());
  EXPECT_FALSE(pool.MeasureGpu({}, {}).has_value());
  const RemoteWorkerView cpu = pool.Register("cpu-box", "cpu", "", "0.1").value();
  const RemoteWorkerView gpu = pool.Register("gpu-box", "gpu", GpuKey(), "0.1").value();
  ASSERT_TRUE(pool.GpuDevice().has_value());
  EXPECT_EQ(pool.GpuDevice()->Key(), GpuKey());
  backends::gpu::GpuPlanBundle bundle;
  bundle.plan_json = "{}";
  bundle.files["k0.ptx"] = "ptx";
  auto measured = std::async(std::launch::async, [&] { return pool.MeasureGpu(bundle, {}); });
  // The CPU worker never sees it; the GPU worker gets the bundle.
  absl::StatusOr<MeasureBatch> none = pool.Take(cpu.id, milliseconds(100));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->id.empty());
  absl::StatusOr<MeasureBatch> batch = pool.Take(gpu.id, milliseconds(2000));
  ASSERT_TRUE(batch.ok() && batch->candidates.size() == 1);
  ASSERT_TRUE(batch->candidates[0].gpu_plan.has_value());
  EXPECT_EQ(batch->candidates[0].gpu_plan->files.at("k0.ptx"), "ptx");
  std::vector<std::pair<uint64_t, MeasureOutcome>> results;
  results.emplace_back(batch->candidates[0].id, Measured(3));
  ASSERT_TRUE(pool.Return(gpu.id, batch->id, std::move(results)).ok());
  std::optional<absl::StatusOr<backends::gpu::GpuTiming>> t = measured.get();
  ASSERT_TRUE(t.has_value() && t->ok());
  EXPECT_EQ((*t)->median_s, 3);
}

TEST(RemoteWorkerPoolTest, BadRegistrationsAreRefused) {
  RemoteWorkerPool pool(FastOptions());
  absl::StatusOr<RemoteWorkerView> bad_gpu = pool.Register("box", "gpu", "H100", "0.1");
  EXPECT_TRUE(absl::IsInvalidArgument(bad_gpu.status())) << bad_gpu.status();
  EXPECT_NE(bad_gpu.status().message().find("DeviceDescriptor key"), std::string::npos);
  EXPECT_TRUE(absl::IsInvalidArgument(pool.Register("box", "tpu", "", "0.1").status()));
  EXPECT_TRUE(pool.Workers().empty());
}

TEST(RemoteWorkerPoolTest, UnknownWorkersMustRegister) {
  RemoteWorkerPool pool(FastOptions());
  EXPECT_TRUE(absl::IsNotFound(pool.Heartbeat("remote-9-x")));
  EXPECT_TRUE(absl::IsNotFound(pool.Take("remote-9-x", milliseconds(1)).status()));
  const RemoteWorkerView w = pool.Register("box", "cpu", "", "0.1").value();
  absl::StatusOr<MeasureBatch> empty = pool.Take(w.id, milliseconds(10));
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->id.empty());
  EXPECT_TRUE(absl::IsFailedPrecondition(pool.Return(w.id, "batch-77", {})));
}

}  // namespace
}  // namespace mltune::daemon
