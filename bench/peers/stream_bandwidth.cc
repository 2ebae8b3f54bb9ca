// StreamBandwidthGBs, alone in its file because it is compiled with -O3 -march=native
// (bench/CMakeLists.txt), as the generated kernels are: the loops use the widest vectors the CPU
// has, so the bound is what vector code reaches, not what the portable build's SSE2 reaches.
#include "bench/peers/stream_bandwidth.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace mltune::bench {
namespace {

typedef float V16 __attribute__((vector_size(64)));

// Eight independent sums: a vector add has 2-4 cycles of latency, and one chain would bound the
// loop by it rather than by the loads.
__attribute__((noinline)) float Read(const float* a, int64_t n) {
  V16 acc[8] = {};
  for (int64_t i = 0; i + 128 <= n; i += 128) {
    for (int u = 0; u < 8; ++u) acc[u] += *(const V16*)(a + i + 16 * u);
  }
  V16 total = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  float s = 0;
  for (int l = 0; l < 16; ++l) s += total[l];
  return s;
}

__attribute__((noinline)) void Copy(float* __restrict b, const float* __restrict a, int64_t n) {
  for (int64_t i = 0; i + 16 <= n; i += 16) *(V16*)(b + i) = *(const V16*)(a + i);
}

__attribute__((noinline)) void Triad(float* __restrict a, const float* __restrict b,
                                     const float* __restrict c, float s, int64_t n) {
  for (int64_t i = 0; i + 16 <= n; i += 16)
    *(V16*)(a + i) = *(const V16*)(b + i) + s * *(const V16*)(c + i);
}

}  // namespace

double StreamBandwidthGBs(StreamKind kind, int64_t bytes, double min_seconds) {
  const int64_t n = std::max<int64_t>(128, bytes / 4 / 128 * 128);
  const size_t size = static_cast<size_t>(n) * 4;
  float* a = static_cast<float*>(std::aligned_alloc(64, size));
  float* b = static_cast<float*>(std::aligned_alloc(64, size));
  float* c = static_cast<float*>(std::aligned_alloc(64, size));
  for (int64_t i = 0; i < n; ++i) a[i] = b[i] = c[i] = 1.0f / static_cast<float>(1 + i % 7);
  const int arrays = kind == StreamKind::kRead ? 1 : kind == StreamKind::kCopy ? 2 : 3;
  const double moved = static_cast<double>(arrays) * static_cast<double>(size);
  // Each repeat walks the arrays several times when they are small, so it lasts well over the
  // timer's resolution (at least 4 MB moved).
  const int64_t passes = std::max<int64_t>(1, (int64_t{4} << 20) / static_cast<int64_t>(moved));
  volatile float sink = 0;
  auto pass = [&] {
    if (kind == StreamKind::kRead) sink = sink + Read(a, n);
    if (kind == StreamKind::kCopy) Copy(b, a, n);
    if (kind == StreamKind::kTriad) Triad(a, b, c, 0.5f, n);
  };
  for (int w = 0; w < 2; ++w) pass();  // warm-up: pages touched, caches filled
  double best = 0, total = 0;
  int reps = 0;
  while (reps < 5 || total < min_seconds) {
    const auto start = std::chrono::steady_clock::now();
    for (int64_t p = 0; p < passes; ++p) pass();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, moved * static_cast<double>(passes) / s * 1e-9);
    total += s;
    ++reps;
  }
  std::free(a);
  std::free(b);
  std::free(c);
  return best;
}

}  // namespace mltune::bench
