#include "costmodels/analytical/tile_cost.h"

#include <algorithm>
#include <string>

#include "costmodels/analytical/analytical.h"

namespace mltune::costmodels {
namespace {

int64_t Clamp(int64_t tile, int64_t dim) {
  return tile <= 0 ? dim : std::min(tile, std::max<int64_t>(dim, 1));
}
int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

std::string MatmulType(int64_t element_bytes) {
  return element_bytes == 1 ? "s8" : element_bytes == 2 ? "bf16" : "f32";
}

}  // namespace

double AnalyticalTileSeconds(const KernelSummary& kernel, const AnalyticalTile& tile,
                             const backends::TargetSpec& spec) {
  if (kernel.opaque) return RooflineSeconds(kernel.roofline_cost, spec, kernel.element_type);
  const backends::MemoryLevel* hbm = spec.Memory("hbm");
  const double bandwidth =
      hbm != nullptr ? hbm->bandwidth : (spec.memory.empty() ? 0 : spec.memory.front().bandwidth);
  const double vector_rate = static_cast<double>(spec.vector_lanes) * spec.clock_ghz * 1e9;
  const double matrix_peak = spec.PeakOps(MatmulType(kernel.matmul_element_bytes));
  double compute = 0;
  if (kernel.matrix_flops > 0 && matrix_peak > 0) compute += kernel.matrix_flops / matrix_peak;
  if (vector_rate > 0) compute += (kernel.vector_flops + kernel.transcendentals) / vector_rate;

  double bytes = kernel.input_bytes() + kernel.output_bytes;
  if (kernel.matmul) {
    // The one tile effect this model knows: A's row block is read once per column block of the
    // output and B's column block once per row block.
    const MatmulDims& d = kernel.mm;
    const int64_t M = std::max<int64_t>(1, d.m), N = std::max<int64_t>(1, d.n),
                  K = std::max<int64_t>(1, d.k), B = std::max<int64_t>(1, d.batch);
    const double gm = static_cast<double>(CeilDiv(M, Clamp(tile.m, M)));
    const double gn = static_cast<double>(CeilDiv(N, Clamp(tile.n, N)));
    double lhs = double(B) * double(M) * double(K), rhs = double(B) * double(K) * double(N);
    // Split the operands' real bytes (broadcasts, other element types) in the dims' proportion.
    const double scale = lhs + rhs > 0 ? kernel.matmul_input_bytes / (lhs + rhs) : 0;
    lhs *= scale;
    rhs *= scale;
    bytes = lhs * gn + rhs * gm + kernel.other_input_bytes + kernel.output_bytes;
  }
  const double memory = bandwidth > 0 ? bytes / bandwidth : 0;
  return std::max(compute, memory) + spec.kernel_overhead_s;
}

}  // namespace mltune::costmodels
