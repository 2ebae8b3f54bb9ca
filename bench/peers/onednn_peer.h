// Peers for CPU operator benchmarks, in C++: oneDNN's single-thread SGEMM and the machine's
// measured single-thread FP32 FMA peak, so a benchmark can report its kernels against a vendor
// library and as a fraction of what the core can do. The Python side (PyTorch eager) is
// bench/peers/torch_ops.py.
//
// Both run on the calling thread only. The library builds without oneDNN (Debian: libdnnl-dev);
// then OneDnnAvailable() is false and OneDnnSgemmSeconds returns a negative value.
#pragma once

#include <cstdint>

namespace mltune::bench {

// True when this build links oneDNN.
bool OneDnnAvailable();

// Median seconds of one dnnl_sgemm call computing row-major C[m,n] = A[m,k] * B[k,n] (f32,
// inputs uniform in [-1, 1), fixed seed), after a warm-up call, repeated until the timed calls
// add up to `min_seconds` (at least 5, at most 10,000 calls). oneDNN uses OpenMP on Debian: the
// call runs with omp_set_num_threads(1) on the calling thread, restored afterwards, so it is a
// one-core number whatever OMP_NUM_THREADS says. Returns a negative value when oneDNN is not
// linked, the sizes are not positive, or dnnl_sgemm fails.
double OneDnnSgemmSeconds(int64_t m, int64_t n, int64_t k, double min_seconds);

// Single-thread FP32 peak in GFLOP/s (an FMA counts 2), measured with a register-resident loop of
// independent vector FMAs using the widest FMA this build's target has (compiled with
// -march=native: AVX-512 where the CPU has it). Repeats for about `min_seconds` and returns the
// best repeat: noise (interrupts, the other core's work) only slows a repeat, so the maximum is the
// estimate of the bound.
double MeasurePeakGflops(double min_seconds);

}  // namespace mltune::bench
