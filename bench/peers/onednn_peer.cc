#include "bench/peers/onednn_peer.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#if MLTUNE_HAVE_DNNL
#include <dnnl.h>
#include <omp.h>
#endif

namespace mltune::bench {

#if MLTUNE_HAVE_DNNL

namespace {

// Sets the calling thread's OpenMP team size for oneDNN and restores it on exit: the nthreads ICV
// is per thread, so this does not change other threads, and a caller that also uses OpenMP (e.g.
// LibTorch in the same process) gets its setting back.
class OmpThreadsScope {
 public:
  explicit OmpThreadsScope(int threads) : previous_(omp_get_max_threads()) {
    omp_set_num_threads(threads);
  }
  ~OmpThreadsScope() { omp_set_num_threads(previous_); }
  OmpThreadsScope(const OmpThreadsScope&) = delete;
  OmpThreadsScope& operator=(const OmpThreadsScope&) = delete;

 private:
  int previous_;
};

std::vector<float> RandomMatrix(int64_t elements, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(elements));
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace

bool OneDnnAvailable() { return true; }

double OneDnnSgemmSeconds(int64_t m, int64_t n, int64_t k, double min_seconds) {
  if (m <= 0 || n <= 0 || k <= 0) return -1.0;
  std::mt19937 rng(0);
  const std::vector<float> a = RandomMatrix(m * k, rng);
  const std::vector<float> b = RandomMatrix(k * n, rng);
  std::vector<float> c(static_cast<size_t>(m * n), 0.0f);

  OmpThreadsScope one_thread(1);
  auto gemm = [&] {
    // Row-major (oneDNN's convention since 1.0): lda = k, ldb = n, ldc = n; beta 0 overwrites C.
    return dnnl_sgemm('N', 'N', m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
  };
  // The first call JIT-generates oneDNN's kernels and faults C's pages in; keep both out of timing.
  for (int i = 0; i < 2; ++i) {
    if (gemm() != dnnl_success) return -1.0;
  }

  constexpr int kMinReps = 5, kMaxReps = 10000;
  std::vector<double> times;
  double total = 0.0;
  while (static_cast<int>(times.size()) < kMaxReps &&
         (static_cast<int>(times.size()) < kMinReps || total < min_seconds)) {
    const auto start = std::chrono::steady_clock::now();
    const dnnl_status_t status = gemm();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (status != dnnl_success) return -1.0;
    times.push_back(s);
    total += s;
  }
  const size_t mid = times.size() / 2;
  std::nth_element(times.begin(), times.begin() + mid, times.end());
  return times[mid];
}

#else  // no oneDNN in this build: the benchmark reports the peer as missing.

bool OneDnnAvailable() { return false; }

double OneDnnSgemmSeconds(int64_t, int64_t, int64_t, double) { return -1.0; }

#endif

}  // namespace mltune::bench
