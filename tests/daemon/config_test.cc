// mltuned's flags and config file: defaults, a TOML file under command-line overrides, and clear
// errors (exit code 2) for bad values, unknown flags and malformed addresses.
#include "daemon/config.h"

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/daemon/daemon_test_util.h"

namespace mltune::daemon {
namespace {

struct Parsed {
  std::optional<int> exit_code;
  DaemonConfig config;
  std::string out, err;
};

Parsed Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "mltuned");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  Parsed p;
  std::ostringstream out, err;
  p.exit_code = ParseDaemonFlags(static_cast<int>(argv.size()), argv.data(), &p.config, out, err);
  p.out = out.str();
  p.err = err.str();
  return p;
}

TEST(DaemonConfigTest, DefaultsAreTheDocumentedOnes) {
  Parsed p = Parse({});
  ASSERT_FALSE(p.exit_code.has_value()) << p.err;
  EXPECT_EQ(p.config.listen, "127.0.0.1:8470");
  EXPECT_EQ(p.config.metrics_listen, "127.0.0.1:9470");
  EXPECT_EQ(p.config.data_dir, "./var");
  EXPECT_GE(p.config.worker_threads, 1);  // 0 resolves to the core count
  EXPECT_EQ(p.config.queue_size, 64);
  EXPECT_EQ(p.config.default_strategy, "beam");
  EXPECT_EQ(p.config.retrain_rows, 1000);
  EXPECT_EQ(p.config.retrain_idle_seconds, 60);
  EXPECT_TRUE(p.config.retrain_gate);
  EXPECT_EQ(p.config.trainer, "");
}

TEST(DaemonConfigTest, RetrainingFlags) {
  Parsed p = Parse({"--retrain-rows", "0", "--retrain-idle-seconds", "2.5", "--trainer",
                    "/opt/mltune/bin/mltune", "--trainer-args", "--epochs 30 --ensemble 1",
                    "--no-retrain-gate"});
  ASSERT_FALSE(p.exit_code.has_value()) << p.err;
  EXPECT_EQ(p.config.retrain_rows, 0);
  EXPECT_EQ(p.config.retrain_idle_seconds, 2.5);
  EXPECT_EQ(p.config.trainer, "/opt/mltune/bin/mltune");
  EXPECT_EQ(p.config.trainer_args, "--epochs 30 --ensemble 1");
  EXPECT_FALSE(p.config.retrain_gate);
}

TEST(DaemonConfigTest, AConfigFileSetsFlagsAndTheCommandLineWins) {
  testing::TempDir dir;
  const std::string file = (dir.path() / "mltuned.toml").string();
  // A non-loopback address needs TLS and tokens, or insecure (tests/daemon/daemon_access_test).
  std::ofstream(file) << "# mltuned settings\nlisten = \"0.0.0.0:9000\"\nqueue-size = 5\n"
                         "max-job-seconds = 30.5\ndata-dir = \"/srv/mltune\"\ninsecure = true\n";
  Parsed p = Parse({"--config", file, "--queue-size", "7"});
  ASSERT_FALSE(p.exit_code.has_value()) << p.err;
  EXPECT_EQ(p.config.listen, "0.0.0.0:9000");
  EXPECT_EQ(p.config.queue_size, 7);
  EXPECT_EQ(p.config.max_job_seconds, 30.5);
  EXPECT_EQ(p.config.data_dir, "/srv/mltune");
  EXPECT_TRUE(p.config.insecure);
}

TEST(DaemonConfigTest, BadValuesExitWithCode2AndNameTheFlag) {
  struct Case {
    std::vector<std::string> args;
    std::string needle;
  };
  for (const Case& c : std::vector<Case>{
           {{"--queue-size", "0"}, "--queue-size"},
           {{"--listen", "nonsense"}, "--listen"},
           {{"--metrics-listen", "host:99999"}, "--metrics-listen"},
           {{"--worker-threads", "many"}, "--worker-threads"},
           {{"--max-graph-bytes", "0"}, "--max-graph-bytes"},
           {{"--default-budget-steps", "10", "--max-budget-steps", "5"}, "--default-budget-steps"},
           {{"--no-such-flag"}, "--no-such-flag"},
           {{"--retrain-rows", "-1"}, "--retrain-rows"},
           {{"--retrain-idle-seconds", "-3"}, "--retrain-idle-seconds"},
           {{"--config", "/no/such/file.toml"}, "file.toml"},
       }) {
    Parsed p = Parse(c.args);
    EXPECT_EQ(p.exit_code, std::optional<int>(2)) << c.needle;
    EXPECT_NE(p.err.find(c.needle), std::string::npos) << p.err;
  }
}

TEST(DaemonConfigTest, HelpAndVersionExitZero) {
  Parsed help = Parse({"--help"});
  EXPECT_EQ(help.exit_code, std::optional<int>(0));
  EXPECT_NE(help.out.find("--data-dir"), std::string::npos);
  EXPECT_NE(help.out.find("--config"), std::string::npos);
  Parsed version = Parse({"--version"});
  EXPECT_EQ(version.exit_code, std::optional<int>(0));
  EXPECT_NE(version.out.find("0.1.0"), std::string::npos);
}

TEST(DaemonConfigTest, ValidateConfigAcceptsAnEmptyMetricsAddress) {
  DaemonConfig config;
  config.metrics_listen = "";
  config.worker_threads = 1;
  EXPECT_TRUE(ValidateConfig(config).ok());
}

}  // namespace
}  // namespace mltune::daemon
