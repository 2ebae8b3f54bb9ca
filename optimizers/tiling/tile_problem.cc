#include "optimizers/tiling/tile_problem.h"

#include <cmath>
#include <cstdlib>
#include <limits>

#include "absl/strings/str_cat.h"

namespace mltune::opt::tiling {

using backends::tpu::TileConfig;

TpuTileProblem::TpuTileProblem(std::vector<costmodels::KernelSummary> kernels,
                               backends::tpu::TpuSimulator sim)
    : kernels_(std::move(kernels)), sim_(std::move(sim)) {
  // Only what can vary gets a position: opaque kernels and single-choice dimensions have none.
  for (int32_t k = 0; k < static_cast<int32_t>(kernels_.size()); ++k) {
    const costmodels::KernelSummary& kernel = kernels_[static_cast<size_t>(k)];
    if (kernel.opaque) continue;
    for (int d = 0; d < 3; ++d) {
      std::vector<int64_t> choices = sim_.TileChoices(kernel, d);
      if (choices.size() < 2) continue;
      slots_.push_back({k, d});
      values_.push_back(std::move(choices));
    }
    slots_.push_back({k, 3});
    values_.push_back({1, 0});
  }
  for (const std::vector<int64_t>& v : values_) {
    space_.choices.push_back(static_cast<int32_t>(v.size()));
  }
  space_.max_length = static_cast<int64_t>(slots_.size());
  space_.fixed_length = true;
  if (space_.choices.empty()) space_.choices = {1};
  (void)AddSeed(DefaultCandidate());
}

std::string TpuTileProblem::ActionName(int64_t position, Action action) const {
  const Slot& slot = slots_[static_cast<size_t>(position)];
  const int64_t v = values_[static_cast<size_t>(position)][static_cast<size_t>(action)];
  static const char* const kDim[] = {"m", "n", "k", "double_buffer"};
  return absl::StrCat(kernels_[static_cast<size_t>(slot.kernel)].name, ".", kDim[slot.dimension],
                      "=",
                      slot.dimension == 3 ? (v != 0 ? "true" : "false")
                      : v == 0            ? std::string("all")
                                          : absl::StrCat(v));
}

std::vector<TileConfig> TpuTileProblem::Decode(const Candidate& candidate) const {
  std::vector<TileConfig> tiles(kernels_.size());
  for (size_t p = 0; p < slots_.size() && p < candidate.size(); ++p) {
    const int64_t v = values_[p][static_cast<size_t>(candidate[p])];
    TileConfig& t = tiles[static_cast<size_t>(slots_[p].kernel)];
    switch (slots_[p].dimension) {
      case 0:
        t.m = v;
        break;
      case 1:
        t.n = v;
        break;
      case 2:
        t.k = v;
        break;
      default:
        t.double_buffer = v != 0;
    }
  }
  return tiles;
}

Candidate TpuTileProblem::DefaultCandidate() const {
  Candidate c(slots_.size(), 0);
  for (size_t p = 0; p < slots_.size(); ++p) {
    const TileConfig t = sim_.DefaultTile(kernels_[static_cast<size_t>(slots_[p].kernel)]);
    const int d = slots_[p].dimension;
    const int64_t want = d == 0 ? t.m : d == 1 ? t.n : d == 2 ? t.k : (t.double_buffer ? 1 : 0);
    // Nearest by ratio; "whole" (0) matches only itself.
    double best = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < values_[p].size(); ++i) {
      const int64_t v = values_[p][i];
      double distance;
      if (d == 3 || want == 0 || v == 0) {
        distance = v == want ? 0 : 1e9;
      } else {
        distance = std::abs(std::log(static_cast<double>(v) / static_cast<double>(want)));
      }
      if (distance < best) {
        best = distance;
        c[p] = static_cast<Action>(i);
      }
    }
  }
  return c;
}

backends::tpu::TpuResult TpuTileProblem::Simulate(const Candidate& candidate) {
  return sim_.Simulate(kernels_, Decode(candidate));
}

double TpuTileProblem::Evaluate(const Candidate& candidate) {
  const backends::tpu::TpuResult r = Simulate(candidate);
  return r.valid ? r.seconds : std::numeric_limits<double>::infinity();
}

}  // namespace mltune::opt::tiling
