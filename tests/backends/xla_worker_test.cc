// The XLA worker against the installed jaxlib (build/xla-venv): measuring, checking outputs
// against a reference, refusing unknown options and passes, and surviving its child's death.
// Skips where no jax environment exists.
#include "backends/xla/xla_worker.h"

#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace mltune::backends::xla {
namespace {

constexpr char kScale[] = R"(HloModule scale

ENTRY main {
  p = f32[64,32] parameter(0)
  c = f32[] constant(FACTOR)
  b = f32[64,32] broadcast(c), dimensions={}
  m = f32[64,32] multiply(p, b)
  ROOT t = f32[64,32] tanh(m)
}
)";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Scale(const std::string& factor) {
  std::string text = kScale;
  text.replace(text.find("FACTOR"), 6, factor);
  return text;
}

class XlaWorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<XlaWorkerInfo> info = worker_.Describe();
    if (absl::IsUnavailable(info.status())) {
      GTEST_SKIP() << "no XLA worker here: " << info.status().message();
    }
    ASSERT_TRUE(info.ok()) << info.status();
    info_ = *info;
  }
  XlaWorker worker_{"cpu"};
  XlaWorkerInfo info_;
};

TEST_F(XlaWorkerTest, MeasuresAndChecksAgainstTheReference) {
  EXPECT_EQ(info_.name, "xla-cpu");
  EXPECT_EQ(info_.platform, "cpu");
  XlaMeasureRequest request;
  request.hlo_text = Scale("2");
  request.reference_hlo_text = Scale("2");
  request.max_seconds = 0.05;
  absl::StatusOr<XlaTiming> timing = worker_.Measure(request);
  ASSERT_TRUE(timing.ok()) << timing.status();
  EXPECT_TRUE(timing->checked);
  EXPECT_EQ(timing->max_abs_err, 0);
  EXPECT_GT(timing->median_s, 0);
  EXPECT_GE(timing->samples, 5);

  // A candidate computing something else is caught, not timed.
  request.hlo_text = Scale("3");
  timing = worker_.Measure(request);
  EXPECT_TRUE(absl::IsDataLoss(timing.status())) << timing.status();
  EXPECT_NE(timing.status().message().find("differs"), std::string::npos) << timing.status();
}

TEST_F(XlaWorkerTest, RefusesWhatXlaDoesNotKnow) {
  XlaMeasureRequest request;
  request.hlo_text = Scale("2");
  request.max_seconds = 0.01;
  request.options = {{"xla_cpu_no_such_option", "true"}};
  absl::StatusOr<XlaTiming> timing = worker_.Measure(request);
  EXPECT_TRUE(absl::IsInvalidArgument(timing.status())) << timing.status();
  EXPECT_NE(timing.status().message().find("xla_cpu_no_such_option"), std::string::npos);

  absl::StatusOr<std::map<std::string, std::string>> refused = worker_.RefusedOptions(
      {{"xla_cpu_enable_fast_math", "true"}, {"xla_cpu_no_such_option", "1"}});
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_EQ(refused->size(), 1u);
  EXPECT_TRUE(refused->contains("xla_cpu_no_such_option"));

  absl::StatusOr<std::vector<std::string>> unknown =
      worker_.UnknownPassNames({"algsimp", "dce", "no-such-pass-anywhere"});
  ASSERT_TRUE(unknown.ok()) << unknown.status();
  EXPECT_EQ(*unknown, std::vector<std::string>{"no-such-pass-anywhere"});

  request.options.clear();
  request.hlo_text = "HloModule broken\n\nENTRY main {\n  ROOT p = f32[2] parameter(0\n}\n";
  timing = worker_.Measure(request);
  EXPECT_TRUE(absl::IsInvalidArgument(timing.status())) << timing.status();
}

// The worker compiles a jitted function's module exactly as jax.jit does: the same optimized
// module, so the same code and runtime.
TEST_F(XlaWorkerTest, CompilesAsJaxJitDoes) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("xla_worker_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const std::string lowered = (dir / "lowered.hlo").string();
  const std::string compiled = (dir / "compiled.hlo").string();
  const std::string command = XlaPythonPath() + " " + MLTUNE_SOURCE_DIR +
                              "/tests/backends/xla_jit_reference.py " + lowered + " " + compiled;
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  absl::StatusOr<std::string> ours = worker_.OptimizedHlo(ReadFile(lowered), {});
  ASSERT_TRUE(ours.ok()) << ours.status();
  EXPECT_EQ(*ours, ReadFile(compiled));
  std::filesystem::remove_all(dir);
}

TEST_F(XlaWorkerTest, SurvivesItsChildsDeath) {
  ASSERT_GT(info_.child_pid, 0);
  ASSERT_EQ(kill(static_cast<pid_t>(info_.child_pid), SIGKILL), 0);
  XlaMeasureRequest request;
  request.hlo_text = Scale("2");
  request.max_seconds = 0.01;
  // The death is noticed on the next request, which either restarts the child first or fails
  // with Aborted; either way the one after it runs on a new child.
  absl::StatusOr<XlaTiming> first = worker_.Measure(request);
  if (!first.ok()) {
    EXPECT_TRUE(absl::IsAborted(first.status())) << first.status();
  }
  absl::StatusOr<XlaTiming> second = worker_.Measure(request);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(worker_.restarts(), 1);
  absl::StatusOr<XlaWorkerInfo> info = worker_.Describe();
  ASSERT_TRUE(info.ok());
  EXPECT_NE(info->child_pid, info_.child_pid);
}

}  // namespace
// The worker's scratch folder removed under it (a temp cleaner on a long-running daemon): the
// next request makes another and is measured.
TEST_F(XlaWorkerTest, MakesItsScratchFolderAgainWhenItIsRemoved) {
  std::string dir = (std::filesystem::temp_directory_path() / "xla-scratch-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const char* old = std::getenv("TMPDIR");
  const std::optional<std::string> saved =
      old == nullptr ? std::nullopt : std::optional<std::string>(old);
  setenv("TMPDIR", dir.c_str(), 1);
  {
    XlaWorker worker("cpu");
    XlaMeasureRequest request;
    request.hlo_text = Scale("2");
    request.reference_hlo_text = Scale("2");
    request.max_seconds = 0.02;
    ASSERT_TRUE(worker.Measure(request).ok());
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      std::filesystem::remove_all(e.path());
    }
    absl::StatusOr<XlaTiming> again = worker.Measure(request);
    EXPECT_TRUE(again.ok()) << again.status();
  }
  if (saved.has_value()) {
    setenv("TMPDIR", saved->c_str(), 1);
  } else {
    unsetenv("TMPDIR");
  }
  std::filesystem::remove_all(dir);
}

// A child that exits before answering: the worker says why, and the scratch folder it made for
// the child is gone with it (a process that exits without destroying its workers, such as a
// CLI listing them, used to leave one per run in the temp folder). Needs only a Python.
TEST(XlaWorkerStartTest, AFailedStartSaysWhyAndLeavesNoFolder) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3 here";
  std::string dir = (std::filesystem::temp_directory_path() / "xla-start-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const std::string script = dir + "/exits.py";
  std::ofstream(script) << "import sys\nsys.exit(3)\n";
  auto saved = [](const char* name) {
    const char* v = std::getenv(name);
    return v == nullptr ? std::optional<std::string>() : std::optional<std::string>(v);
  };
  const std::optional<std::string> tmpdir = saved("TMPDIR"), python = saved("MLTUNE_XLA_PYTHON"),
                                   child = saved("MLTUNE_XLA_CHILD");
  setenv("TMPDIR", dir.c_str(), 1);
  setenv("MLTUNE_XLA_PYTHON", "/usr/bin/python3", 1);
  setenv("MLTUNE_XLA_CHILD", script.c_str(), 1);
  {
    XlaWorker worker("cpu");
    absl::StatusOr<XlaWorkerInfo> info = worker.Describe();
    EXPECT_TRUE(absl::IsUnavailable(info.status())) << info.status();
    EXPECT_NE(info.status().message().find("does not start"), std::string::npos) << info.status();
    int entries = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      ++entries;
      EXPECT_EQ(e.path().filename(), "exits.py") << e.path();
    }
    EXPECT_EQ(entries, 1);
  }
  auto restore = [](const char* name, const std::optional<std::string>& v) {
    if (v.has_value()) {
      setenv(name, v->c_str(), 1);
    } else {
      unsetenv(name);
    }
  };
  restore("TMPDIR", tmpdir);
  restore("MLTUNE_XLA_PYTHON", python);
  restore("MLTUNE_XLA_CHILD", child);
  std::filesystem::remove_all(dir);
}

}  // namespace mltune::backends::xla
