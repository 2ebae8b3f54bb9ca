// mltuned starts and serves its metrics whichever libblas.so.3 the process loads: Debian's
// reference BLAS, OpenBLAS, BLIS, ATLAS, each installed alternative in turn (through
// LD_LIBRARY_PATH, as the dynamic loader would find it once selected), and the system's choice.
// OpenBLAS's 60 KiB of static TLS used to break the metrics server (daemon/metrics/http_server.h).
#include <glob.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "client/daemon_process.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/http_get.h"

namespace mltune::daemon {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Every folder that holds a libblas.so.3 alternative (Debian installs them side by side).
std::vector<std::string> InstalledBlasFolders() {
  std::vector<std::string> folders;
  glob_t found{};
  if (glob("/usr/lib/*-linux-gnu/*/libblas.so.3", 0, nullptr, &found) == 0) {
    for (size_t i = 0; i < found.gl_pathc; ++i) {
      folders.push_back(fs::path(found.gl_pathv[i]).parent_path().string());
    }
  }
  globfree(&found);
  return folders;
}

// The libblas.so.3 files mapped into process `pid`, resolved.
std::string MappedBlas(pid_t pid) {
  std::ifstream maps("/proc/" + std::to_string(pid) + "/maps");
  std::string line, mapped;
  while (std::getline(maps, line)) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    const std::string file = line.substr(slash);
    if (file.find("blas") != std::string::npos && mapped.find(file) == std::string::npos) {
      mapped += file + "\n";
    }
  }
  return mapped;
}

// Starts mltuned with LD_LIBRARY_PATH = `library_path` (unset when empty) and scrapes /metrics.
void ExpectServesMetrics(const std::string& library_path) {
  SCOPED_TRACE("LD_LIBRARY_PATH=" + library_path);
  const char* saved = std::getenv("LD_LIBRARY_PATH");
  const std::string restore = saved == nullptr ? "" : saved;
  if (library_path.empty()) {
    unsetenv("LD_LIBRARY_PATH");
  } else {
    setenv("LD_LIBRARY_PATH", library_path.c_str(), 1);
  }
  client::DaemonOptions options;
  options.binary = MLTUNE_DAEMON_PATH;
  auto daemon = client::DaemonProcess::Start(options);
  if (saved == nullptr) {
    unsetenv("LD_LIBRARY_PATH");
  } else {
    setenv("LD_LIBRARY_PATH", restore.c_str(), 1);
  }
  ASSERT_TRUE(daemon.ok()) << daemon.status();
  const std::string mapped = MappedBlas((*daemon)->pid());
  if (!library_path.empty()) {
    // The alternative under test is the one loaded, else the case proves nothing.
    const std::string blas = fs::canonical(fs::path(library_path) / "libblas.so.3").string();
    EXPECT_THAT(mapped, HasSubstr(blas));
  }
  const std::string address = (*daemon)->metrics_address();
  const int port = std::stoi(address.substr(address.rfind(':') + 1));
  const std::string response = testing::HttpGet(port, "/metrics");
  EXPECT_THAT(response, StartsWith("HTTP/1.1 200")) << "loaded:\n" << mapped;
  EXPECT_THAT(testing::Body(response), HasSubstr("mltune_build_info{"));
}

TEST(BlasAlternativesTest, MltunedServesMetricsUnderEveryInstalledBlas) {
  const std::vector<std::string> folders = InstalledBlasFolders();
  if (folders.empty()) GTEST_SKIP() << "no libblas.so.3 alternative under /usr/lib/*-linux-gnu/";
  for (const std::string& folder : folders) ExpectServesMetrics(folder);
}

TEST(BlasAlternativesTest, MltunedServesMetricsUnderTheSystemsChoice) { ExpectServesMetrics(""); }

}  // namespace
}  // namespace mltune::daemon
