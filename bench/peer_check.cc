// Sanity check of the C++ benchmark peers by hand: the measured single-thread FP32 peak and
// oneDNN's single-thread SGEMM on square matrices, as GFLOP/s and as a share of that peak.
//
//   build/release/bench/peer_check [--seconds S] [--sizes 256,512,1024,2048]
#include <cstdint>
#include <cstdio>
#include <vector>

#include "CLI/CLI.hpp"
#include "bench/peers/onednn_peer.h"

int main(int argc, char** argv) {
  CLI::App app{"Single-thread FP32 peak and oneDNN SGEMM (bench/peers)"};
  double seconds = 0.5;
  std::vector<int64_t> sizes = {256, 512, 1024, 2048};
  app.add_option("--seconds", seconds, "Timed seconds per measurement")->capture_default_str();
  app.add_option("--sizes", sizes, "Square SGEMM sizes n (m = n = k)")->delimiter(',');
  CLI11_PARSE(app, argc, argv);

  const double peak = mltune::bench::MeasurePeakGflops(seconds);
  std::printf("measured FP32 FMA peak, 1 thread: %.1f GFLOP/s\n\n", peak);
  if (!mltune::bench::OneDnnAvailable()) {
    std::printf("oneDNN: not linked in this build (install libdnnl-dev and reconfigure)\n");
    return 0;
  }
  std::printf("oneDNN dnnl_sgemm, 1 thread, row-major C = A*B (median of repeats)\n");
  std::printf("%6s  %12s  %10s  %8s\n", "n", "median ms", "GFLOP/s", "of peak");
  for (int64_t n : sizes) {
    const double s = mltune::bench::OneDnnSgemmSeconds(n, n, n, seconds);
    if (s < 0) {
      std::printf("%6lld  dnnl_sgemm failed\n", static_cast<long long>(n));
      continue;
    }
    const double gflops = 2.0 * static_cast<double>(n) * n * n / s * 1e-9;
    std::printf("%6lld  %12.3f  %10.1f  %7.1f%%\n", static_cast<long long>(n), s * 1e3, gflops,
                100.0 * gflops / peak);
  }
  return 0;
}
