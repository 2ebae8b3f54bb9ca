#include "backends/tpu_sim/tpu_sim.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "costmodels/analytical/analytical.h"

namespace mltune::backends::tpu {
namespace {

constexpr int64_t kSublanes = 8;  // rows of a vector register; the MXU's streaming granule
// A transcendental occupies the vector unit for several cycles (polynomial evaluation).
constexpr double kTranscendentalCycles = 4;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t RoundUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }
int64_t Clamp(int64_t tile, int64_t dim) {
  return tile <= 0 ? dim : std::min(tile, std::max<int64_t>(dim, 1));
}
int64_t NextPow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

std::string MatmulType(int64_t element_bytes) {
  return element_bytes == 1 ? "s8" : element_bytes == 2 ? "bf16" : "f32";
}

std::string Mib(double bytes) { return absl::StrFormat("%.1f MiB", bytes / (1024.0 * 1024.0)); }

// Steps of a double-buffered (or not) pipeline: the first DMA and the last compute do not overlap.
double PipelineSeconds(int64_t steps, double compute, double dma, bool double_buffer) {
  if (steps <= 0) return 0;
  const double c = compute / static_cast<double>(steps);
  const double d = dma / static_cast<double>(steps);
  if (!double_buffer) return static_cast<double>(steps) * (c + d);
  return d + c + static_cast<double>(steps - 1) * std::max(c, d);
}

}  // namespace

std::string TileName(const TileConfig& tile) {
  auto dim = [](int64_t v) { return v <= 0 ? std::string("all") : absl::StrCat(v); };
  return absl::StrCat(dim(tile.m), "x", dim(tile.n), "x", dim(tile.k),
                      tile.double_buffer ? "" : " single-buffered");
}

absl::StatusOr<TpuSimulator> TpuSimulator::Create(const TargetSpec& spec, TpuSimOptions options) {
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(
        absl::StrCat("target '", spec.name, "' cannot run on the TPU simulator: ", what));
  };
  if (spec.matrix_unit_rows <= 0 || spec.matrix_unit_cols <= 0) return bad("no matrix_unit");
  if (spec.vector_lanes < kSublanes || spec.vector_lanes % kSublanes != 0) {
    return bad("vector_lanes must be a positive multiple of 8");
  }
  if (spec.clock_ghz <= 0) return bad("no clock_ghz");
  if (spec.PeakOps("f32") <= 0) return bad("no f32 peak");
  const MemoryLevel* hbm = spec.Memory("hbm");
  const MemoryLevel* vmem = spec.Memory("vmem");
  if (hbm == nullptr || hbm->bandwidth <= 0) return bad("no 'hbm' memory level with a bandwidth");
  if (vmem == nullptr || vmem->bytes <= 0) return bad("no 'vmem' memory level with a capacity");
  if (options.noise_stddev < 0) return bad("noise_stddev must be >= 0");
  return TpuSimulator(spec, options);
}

TpuSimulator::TpuSimulator(TargetSpec spec, TpuSimOptions options)
    : spec_(std::move(spec)), options_(options), rng_(options.seed) {
  hbm_bandwidth_ = spec_.Memory("hbm")->bandwidth;
  vmem_bytes_ = static_cast<double>(spec_.Memory("vmem")->bytes);
  vector_ops_per_s_ = static_cast<double>(spec_.vector_lanes) * spec_.clock_ghz * 1e9;
}

double TpuSimulator::Noise() {
  if (options_.noise_stddev <= 0) return 1.0;
  std::normal_distribution<double> z(0.0, options_.noise_stddev);
  return std::exp(z(rng_));
}

KernelTiming TpuSimulator::SimulateKernel(const costmodels::KernelSummary& kernel,
                                          const TileConfig& tile) {
  KernelTiming t = Model(kernel, tile);
  t.seconds *= Noise();
  return t;
}

KernelTiming TpuSimulator::Model(const costmodels::KernelSummary& kernel,
                                 const TileConfig& tile) const {
  KernelTiming t;
  t.valid = true;
  const double vector_work = kernel.vector_flops + kTranscendentalCycles * kernel.transcendentals;
  if (kernel.opaque) {
    t.seconds = costmodels::RooflineSeconds(kernel.roofline_cost, spec_, kernel.element_type);
    t.compute_s = t.seconds - spec_.kernel_overhead_s;
    t.hbm_bytes = kernel.roofline_cost.bytes();
    t.dma_s = t.hbm_bytes / hbm_bandwidth_;
    t.steps = 1;
    return t;
  }
  const int64_t lanes = spec_.vector_lanes / kSublanes;
  const int buffers = tile.double_buffer ? 2 : 1;
  if (kernel.matmul) {
    const costmodels::MatmulDims& d = kernel.mm;
    const int64_t M = std::max<int64_t>(1, d.m), N = std::max<int64_t>(1, d.n),
                  K = std::max<int64_t>(1, d.k), B = std::max<int64_t>(1, d.batch);
    const int64_t tm = Clamp(tile.m, M), tn = Clamp(tile.n, N), tk = Clamp(tile.k, K);
    const int64_t gm = CeilDiv(M, tm), gn = CeilDiv(N, tn), gk = CeilDiv(K, tk);
    // Tiles run whole: a ragged edge tile costs as much as a full one, and each is padded to the
    // MXU's shape (k x n weights of rows x cols; m streams in sublane groups).
    const int64_t pm = RoundUp(tm, kSublanes), pn = RoundUp(tn, spec_.matrix_unit_cols),
                  pk = RoundUp(tk, spec_.matrix_unit_rows);
    t.padded_matrix_flops = 2.0 * static_cast<double>(B) * static_cast<double>(gm * pm) *
                            static_cast<double>(gn * pn) * static_cast<double>(gk * pk);
    const double output_padding =
        static_cast<double>(gm * pm) * static_cast<double>(gn * pn) / (double(M) * double(N));
    t.compute_s = t.padded_matrix_flops / spec_.PeakOps(MatmulType(kernel.matmul_element_bytes)) +
                  vector_work * output_padding / vector_ops_per_s_;
    // A's row block is re-read for every column block and B's column block for every row block.
    const double eb = static_cast<double>(kernel.matmul_element_bytes);
    double lhs = double(B) * double(M) * double(K) * eb,
           rhs = double(B) * double(K) * double(N) * eb;
    if (lhs + rhs > 0 && kernel.matmul_input_bytes > 0) {
      const double scale = kernel.matmul_input_bytes / (lhs + rhs);
      lhs *= scale;
      rhs *= scale;
    }
    t.hbm_bytes =
        lhs * double(gn) + rhs * double(gm) + kernel.other_input_bytes + kernel.output_bytes;
    const double out_tile = double(pm * pn);
    const double epilogue = kernel.other_input_bytes * out_tile / (double(M) * double(N));
    t.vmem_bytes = buffers * (double(pm * pk + pk * pn) * eb +
                              out_tile * double(kernel.element_bytes) + epilogue) +
                   out_tile * 4.0;  // the f32 accumulator stays resident across k steps
    t.steps = B * gm * gn * gk;
  } else {
    const int64_t R = std::max<int64_t>(1, kernel.rows), C = std::max<int64_t>(1, kernel.cols);
    const int64_t tm = Clamp(tile.m, R), tn = Clamp(tile.n, C);
    const int64_t gr = CeilDiv(R, tm), gc = CeilDiv(C, tn);
    const int64_t pm = RoundUp(tm, kSublanes), pn = RoundUp(tn, lanes);
    const double padded = double(gr * pm) * double(gc * pn);
    t.compute_s = vector_work * padded / (double(R) * double(C)) / vector_ops_per_s_;
    t.hbm_bytes = kernel.input_bytes() + kernel.output_bytes;
    const double bytes_per_element = t.hbm_bytes / (double(R) * double(C));
    t.vmem_bytes = buffers * double(pm * pn) * bytes_per_element;
    t.steps = gr * gc;
  }
  t.dma_s = t.hbm_bytes / hbm_bandwidth_;
  if (t.vmem_bytes > vmem_bytes_) {
    t.valid = false;
    t.error = absl::StrCat("kernel '", kernel.name, "': tile ", TileName(tile), " needs ",
                           Mib(t.vmem_bytes), " of VMEM; the target has ", Mib(vmem_bytes_));
    t.seconds = 0;
    return t;
  }
  t.seconds = PipelineSeconds(t.steps, t.compute_s, t.dma_s, tile.double_buffer) +
              double(t.steps) * options_.step_overhead_s + spec_.kernel_overhead_s;
  return t;
}

TpuResult TpuSimulator::Simulate(const std::vector<costmodels::KernelSummary>& kernels,
                                 const std::vector<TileConfig>& tiles) {
  TpuResult result;
  result.valid = true;
  result.kernels.reserve(kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    const TileConfig tile = i < tiles.size() ? tiles[i] : DefaultTile(kernels[i]);
    KernelTiming t = SimulateKernel(kernels[i], tile);
    if (!t.valid && result.valid) {
      result.valid = false;
      result.error = t.error;
    }
    result.seconds += t.seconds;
    result.kernels.push_back(std::move(t));
  }
  if (!result.valid) result.seconds = 0;
  return result;
}

TileConfig TpuSimulator::DefaultTile(const costmodels::KernelSummary& kernel) const {
  TileConfig tile;
  if (kernel.opaque) return tile;
  const int64_t lanes = spec_.vector_lanes / kSublanes;
  const bool mm = kernel.matmul;
  const int64_t dims[3] = {mm ? kernel.mm.m : kernel.rows, mm ? kernel.mm.n : kernel.cols,
                           mm ? kernel.mm.k : 1};
  const int64_t granule[3] = {kSublanes, mm ? spec_.matrix_unit_cols : lanes,
                              mm ? spec_.matrix_unit_rows : 1};
  int64_t t[3];
  for (int i = 0; i < 3; ++i) {
    t[i] = std::min<int64_t>(512, NextPow2(RoundUp(std::max<int64_t>(1, dims[i]), granule[i])));
  }
  if (!mm) t[2] = 0;
  // Halve the largest dimension until the double-buffered working set fits half of VMEM, so the
  // compiler's choice leaves room for anything else resident.
  for (int iter = 0; iter < 64; ++iter) {
    tile = {t[0], t[1], mm ? t[2] : 0, true};
    const KernelTiming timing = Model(kernel, tile);
    if (timing.vmem_bytes <= vmem_bytes_ / 2) break;
    int largest = 0;
    for (int i = 1; i < (mm ? 3 : 2); ++i) {
      if (t[i] / granule[i] > t[largest] / granule[largest]) largest = i;
    }
    if (t[largest] <= granule[largest]) break;
    t[largest] /= 2;
  }
  return tile;
}

std::vector<int64_t> TpuSimulator::TileChoices(const costmodels::KernelSummary& kernel,
                                               int dimension) const {
  std::vector<int64_t> choices = {0};
  if (kernel.opaque || (!kernel.matmul && dimension == 2)) return choices;
  const int64_t lanes = spec_.vector_lanes / kSublanes;
  int64_t dim = 1, granule = kSublanes;
  if (kernel.matmul) {
    dim = dimension == 0 ? kernel.mm.m : dimension == 1 ? kernel.mm.n : kernel.mm.k;
    granule = dimension == 0   ? kSublanes
              : dimension == 1 ? spec_.matrix_unit_cols
                               : spec_.matrix_unit_rows;
  } else {
    dim = dimension == 0 ? kernel.rows : kernel.cols;
    granule = dimension == 0 ? kSublanes : lanes;
  }
  for (int64_t v = granule; v < dim && v <= 8192; v *= 2) choices.push_back(v);
  return choices;
}

}  // namespace mltune::backends::tpu
