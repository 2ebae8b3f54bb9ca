// Shared by the daemon tests: an in-process mltuned on ephemeral loopback ports with a private
// data directory, the bundled example, and a generated graph large enough that a search on it
// takes far longer than an RPC (so a job is reliably still queued or running when the test acts).
#pragma once

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "daemon/config.h"
#include "daemon/daemon.h"
#include "gtest/gtest.h"
#include "storage/store.h"

namespace mltune::daemon::testing {

inline std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline std::string ExampleHlo() {
  return ReadFile(std::filesystem::path(MLTUNE_SOURCE_DIR) / "examples" / "mlp_train_step.hlo");
}

// `blocks` blocks of 6 instructions, each full of work for algsimp and CSE. No instruction has
// many users, so every pass stays linear on it.
inline std::string SlowHlo(int blocks = 3000) {
  std::string text =
      "HloModule slow\n\nENTRY e {\n  p = f32[16,16] parameter(0)\n"
      "  zero = f32[] constant(0)\n  one = f32[] constant(1)\n  x0 = f32[16,16] negate(p)\n";
  for (int i = 1; i <= blocks; ++i) {
    absl::StrAppend(&text, "  o", i, " = f32[16,16] broadcast(one), dimensions={}\n");
    absl::StrAppend(&text, "  a", i, " = f32[16,16] multiply(x", i - 1, ", o", i, ")\n");
    absl::StrAppend(&text, "  z", i, " = f32[16,16] broadcast(zero), dimensions={}\n");
    absl::StrAppend(&text, "  d", i, " = f32[16,16] add(a", i, ", z", i, ")\n");
    absl::StrAppend(&text, "  e", i, " = f32[16,16] add(a", i, ", z", i, ")\n");
    absl::StrAppend(&text, "  x", i, " = f32[16,16] maximum(d", i, ", e", i, ")\n");
  }
  absl::StrAppend(&text, "  ROOT r = f32[16,16] negate(x", blocks, ")\n}\n");
  return text;
}

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            absl::StrCat("mltune_daemon_test_", getpid(), "_", counter_++);
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

inline DaemonConfig TestConfig(const std::filesystem::path& data_dir) {
  DaemonConfig config;
  config.listen = "127.0.0.1:0";
  config.metrics_listen = "";
  config.data_dir = data_dir.string();
  config.worker_threads = 2;
  config.drain_seconds = 0;  // tests that drain set their own
  config.max_budget_steps = 100'000'000;
  config.retrain_rows = 0;         // no trainer child unless a test asks for one
  config.pretrained_dir = "none";  // a store without models unless a test asks for them
  return config;
}

// The measurement log's rows of `task` on `target` in the store at `store_path` (the daemon's,
// opened beside it: SQLite in WAL mode serves both).
inline std::vector<storage::MeasurementRecord> LoggedMeasurements(const std::string& store_path,
                                                                  const std::string& task,
                                                                  const std::string& target) {
  absl::StatusOr<std::unique_ptr<storage::Store>> store = storage::Store::Open(store_path);
  EXPECT_TRUE(store.ok()) << store.status();
  if (!store.ok()) return {};
  storage::MeasurementFilter filter;
  filter.task = task;
  filter.target = target;
  absl::StatusOr<std::vector<storage::MeasurementRecord>> rows =
      (*store)->QueryMeasurements(filter);
  EXPECT_TRUE(rows.ok()) << rows.status();
  return rows.ok() ? *std::move(rows) : std::vector<storage::MeasurementRecord>{};
}

inline std::unique_ptr<Daemon> MustStart(const DaemonConfig& config) {
  absl::StatusOr<std::unique_ptr<Daemon>> daemon = Daemon::Start(config);
  EXPECT_TRUE(daemon.ok()) << daemon.status();
  return daemon.ok() ? *std::move(daemon) : nullptr;
}

}  // namespace mltune::daemon::testing
