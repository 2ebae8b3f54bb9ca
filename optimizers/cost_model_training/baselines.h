// The analytical baselines train-cost-model prints next to the learned model, where they are not
// logged at collect time (tpu-sim rows carry theirs, task "<task>-analytical").
#pragma once

#include "costmodels/features/kernel_graph.h"

namespace mltune::opt::cost_model_training {

// This machine's figures for the CPU roofline (docs/cost_models.md; /work/shared/NOTES.md): one
// core's f32 FMA peak with AVX-512 (oneDNN SGEMM reached 214-232 GFLOP/s), and the streaming
// bandwidth an elementwise op on large buffers reaches (39-43 GB/s).
inline constexpr double kCpuPeakFlops = 222e9;
inline constexpr double kCpuBandwidth = 40e9;

// Roofline seconds of a CPU kernel from its graph's static kernel features (FLOPs,
// transcendentals, bytes read from outside and written out): max(ops / peak, bytes / bandwidth).
// The compiler writer's model: no launch overhead, caches or vectorization efficiency.
double CpuRooflineSeconds(const costmodels::features::KernelGraph& graph);

// A configuration-aware CPU kernel model of the same kind, the cpu tile baseline: the roofline
// with the compute rate scaled by what a compiler writer would assume each parameter buys
// (cpu_backend.md lists them): `parallel` the `threads` the kernels were measured with (tuning
// and `mltune collect` measure with one, KernelTuningMeasureOptions, so there it buys nothing:
// counting two cores made the roofline prefer a generated GEMM on "two cores" over oneDNN on
// one, which that measurement never gives); GEMMs (a matmul in the kernel) run at 90%
// of peak through oneDNN (`impl` >= 1) and 50% as generated code; other kernels at peak
// vectorized, 1/8 of it with `simd` off, half of it without unrolling (`unroll` u: 0.5 + u / 16),
// and reductions need 8 partial accumulators (`lanes`) to hide the add latency; `cache` off
// recomputes: 1.5x the FLOPs. Memory time does not depend on the configuration (`block`,
// `order`, `mc`/`kc`/`nc` and `micro` are not modelled), so memory-bound kernels tie, and ties
// rank the first logged (the default) configuration first.
double CpuTileSeconds(const costmodels::features::KernelGraph& graph,
                      const costmodels::features::Configuration& config, int threads);

}  // namespace mltune::opt::cost_model_training
