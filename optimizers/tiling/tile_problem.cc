#include "optimizers/tiling/tile_problem.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"

namespace mltune::opt::tiling {
namespace {

using backends::tpu::TileConfig;

// Dimension 0 m, 1 n, 2 k, 3 double buffering.
void SetDimension(int dimension, int64_t value, TileConfig& t) {
  switch (dimension) {
    case 0:
      t.m = value;
      break;
    case 1:
      t.n = value;
      break;
    case 2:
      t.k = value;
      break;
    default:
      t.double_buffer = value != 0;
  }
}

}  // namespace

costmodels::features::Configuration TpuTileConfiguration(const TileConfig& tile) {
  return {{"tile_m", tile.m},
          {"tile_n", tile.n},
          {"tile_k", tile.k},
          {"double_buffer", tile.double_buffer ? 1 : 0}};
}

std::string TpuTileConfigText(const TileConfig& tile) {
  return absl::StrCat("tile_m=", tile.m, ",tile_n=", tile.n, ",tile_k=", tile.k,
                      ",double_buffer=", tile.double_buffer ? 1 : 0);
}

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

  // Slots are grouped by kernel, in kernel order.
  std::vector<std::vector<int64_t>> parts;
  std::vector<int32_t> part_kernel;
  for (size_t p = 0; p < slots_.size(); ++p) {
    if (part_kernel.empty() || part_kernel.back() != slots_[p].kernel) {
      part_kernel.push_back(slots_[p].kernel);
      parts.emplace_back();
    }
    parts.back().push_back(static_cast<int64_t>(p));
  }
  backends::tpu::TpuSimulator probe = sim_;
  const backends::tpu::TpuResult defaults = probe.Simulate(kernels_, Decode(DefaultCandidate()));
  auto seconds = [&](int32_t kernel) {
    const size_t k = static_cast<size_t>(kernel);
    return k < defaults.kernels.size() ? defaults.kernels[k].seconds : 0.0;
  };
  std::vector<size_t> order(parts.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return seconds(part_kernel[a]) > seconds(part_kernel[b]);
  });
  for (size_t i : order) {
    parts_.push_back(std::move(parts[i]));
    part_kernel_.push_back(part_kernel[i]);
  }
}

std::vector<std::vector<int64_t>> TpuTileProblem::Parts() const { return parts_; }

absl::StatusOr<std::vector<double>> TpuTileProblem::RankSettings(
    int64_t part, const std::vector<Candidate>& settings) {
  if (!rank_) {
    return absl::FailedPreconditionError(
        "the tpu tile problem has no cost model attached to rank tiles with");
  }
  if (settings.empty()) return std::vector<double>{};
  if (part < 0 || part >= static_cast<int64_t>(parts_.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("no part ", part, " (the problem has ", parts_.size(), ")"));
  }
  const std::vector<int64_t>& positions = parts_[static_cast<size_t>(part)];
  const int32_t kernel = part_kernel_[static_cast<size_t>(part)];
  std::vector<TileConfig> tiles;
  for (const Candidate& s : settings) {
    if (s.size() != positions.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("a setting of kernel ", kernels_[static_cast<size_t>(kernel)].name, " has ",
                       s.size(), " values; it has ", positions.size(), " positions"));
    }
    TileConfig t;
    for (size_t i = 0; i < s.size(); ++i) {
      const size_t p = static_cast<size_t>(positions[i]);
      if (s[i] < 0 || static_cast<size_t>(s[i]) >= values_[p].size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("position ", p, ": choice ", s[i], " of ", values_[p].size()));
      }
      SetDimension(slots_[p].dimension, values_[p][static_cast<size_t>(s[i])], t);
    }
    tiles.push_back(t);
  }
  absl::StatusOr<std::vector<double>> scores = rank_(kernel, tiles);
  if (!scores.ok()) return scores;
  if (scores->size() != settings.size()) {
    return absl::InternalError(
        absl::StrCat("the ranker scored ", scores->size(), " of ", settings.size(), " tiles"));
  }
  return scores;
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
    SetDimension(slots_[p].dimension, values_[p][static_cast<size_t>(candidate[p])],
                 tiles[static_cast<size_t>(slots_[p].kernel)]);
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
  const std::vector<TileConfig> tiles = Decode(candidate);
  const backends::tpu::TpuResult r = sim_.Simulate(kernels_, tiles);
  if (observe_) observe_(tiles, r);
  return r.valid ? r.seconds : std::numeric_limits<double>::infinity();
}

}  // namespace mltune::opt::tiling
