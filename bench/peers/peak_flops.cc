// MeasurePeakGflops, alone in its file because it is compiled with -O3 -march=native
// (bench/CMakeLists.txt): the loop must use the widest FMA the CPU has, and the rest of the
// project keeps its portable flags.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>

#include "bench/peers/onednn_peer.h"

#if defined(__AVX512F__) || defined(__AVX2__) || defined(__FMA__)
#include <immintrin.h>
#endif

namespace mltune::bench {
namespace {

// Independent accumulator chains: an FMA has about 4 cycles of latency and a core issues up to 2
// per cycle, so at least 8 chains in flight are needed to keep both pipes busy; 12 leaves slack
// and still fits the 16 (AVX2) or 32 (AVX-512) vector registers with the two operands.
constexpr int kChains = 12;

#if defined(__AVX512F__)
using Vec = __m512;
constexpr int kLanes = 16;
inline Vec Set1(float x) { return _mm512_set1_ps(x); }
inline Vec Fma(Vec a, Vec b, Vec c) { return _mm512_fmadd_ps(a, b, c); }
inline void Store(float* p, Vec v) { _mm512_storeu_ps(p, v); }
#elif defined(__AVX2__) && defined(__FMA__)
using Vec = __m256;
constexpr int kLanes = 8;
inline Vec Set1(float x) { return _mm256_set1_ps(x); }
inline Vec Fma(Vec a, Vec b, Vec c) { return _mm256_fmadd_ps(a, b, c); }
inline void Store(float* p, Vec v) { _mm256_storeu_ps(p, v); }
#else
// No vector FMA on this target: a scalar estimate, far below what vector code reaches.
using Vec = float;
constexpr int kLanes = 1;
inline Vec Set1(float x) { return x; }
inline Vec Fma(Vec a, Vec b, Vec c) { return a * b + c; }
inline void Store(float* p, Vec v) { *p = v; }
#endif

// `iterations` rounds of kChains FMAs each. The multiplier and addend come from volatiles and the
// result is returned, so the compiler can neither fold the loop nor drop it; a = 1 - 2^-20 and
// b = 2^-20 keep the accumulators bounded (they converge to 1) and free of denormals.
float FmaLoop(int64_t iterations) {
  static volatile float a_in = 1.0f - 1.0f / (1 << 20), b_in = 1.0f / (1 << 20);
  const Vec a = Set1(a_in), b = Set1(b_in);
  Vec acc[kChains];
  for (int j = 0; j < kChains; ++j) acc[j] = Set1(static_cast<float>(j));
  for (int64_t i = 0; i < iterations; ++i) {
    // Unrolled fully at -O3: kChains independent FMAs per round, all operands in registers.
    for (int j = 0; j < kChains; ++j) acc[j] = Fma(acc[j], a, b);
  }
  // Summed through memory: GCC 12's _mm512_reduce_add_ps trips -Wuninitialized in its own header.
  float lanes[kLanes], s = 0;
  for (int j = 0; j < kChains; ++j) {
    Store(lanes, acc[j]);
    for (float x : lanes) s += x;
  }
  return s;
}

}  // namespace

double MeasurePeakGflops(double min_seconds) {
  // 25M vector FMAs per repeat: milliseconds, long against the timer, short against a time slice.
  constexpr int64_t kIterations = 1 << 21;
  // The results are summed and checked so that no call is dead code.
  double checksum = FmaLoop(kIterations / 16);  // warm-up: wakes the vector unit, settles clocks
  const double flops = 2.0 * kChains * kLanes * static_cast<double>(kIterations);
  double best = 0.0, total = 0.0;
  int reps = 0;
  while (reps < 5 || total < min_seconds) {
    const auto start = std::chrono::steady_clock::now();
    checksum += FmaLoop(kIterations);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best = std::max(best, flops / s * 1e-9);
    total += s;
    ++reps;
  }
  return std::isfinite(checksum) ? best : -1.0;
}

}  // namespace mltune::bench
