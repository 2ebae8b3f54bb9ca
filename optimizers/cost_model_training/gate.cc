#include "optimizers/cost_model_training/gate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

namespace mltune::opt::cost_model_training {
namespace {

// `share` of `n` items, at least one (n > 0).
size_t ShareOf(size_t n, double share) {
  const auto count = static_cast<size_t>(std::lround(share * static_cast<double>(n)));
  return std::clamp<size_t>(count, 1, n);
}

}  // namespace

std::vector<bool> GateHoldout(std::span<const GateKernel> kernels, int64_t incumbent_ms,
                              double share, uint64_t seed) {
  std::vector<bool> holdout(kernels.size(), false);
  std::vector<size_t> fresh;
  std::map<std::string, std::vector<size_t>> by_program;  // sorted: the draw depends on seed only
  for (size_t k = 0; k < kernels.size(); ++k) {
    if (!kernels[k].eligible || kernels[k].first_logged_ms <= incumbent_ms) continue;
    fresh.push_back(k);
    by_program[kernels[k].program].push_back(k);
  }
  if (fresh.empty()) return holdout;
  std::mt19937_64 rng(seed);
  if (by_program.size() == 1) {
    std::shuffle(fresh.begin(), fresh.end(), rng);
    fresh.resize(ShareOf(fresh.size(), share));
    for (size_t k : fresh) holdout[k] = true;
    return holdout;
  }
  std::vector<const std::vector<size_t>*> programs;
  for (const auto& [program, members] : by_program) programs.push_back(&members);
  std::shuffle(programs.begin(), programs.end(), rng);
  // Programs differ in size: counting kernels keeps the held-out set near its share, and a
  // program that would take it past twice the share is passed over (one large new program would
  // otherwise leave the candidate few new kernels to learn from), unless no other was taken.
  const size_t wanted = ShareOf(fresh.size(), share);
  size_t held = 0;
  const std::vector<size_t>* smallest = programs.front();
  for (const std::vector<size_t>* members : programs) {
    if (members->size() < smallest->size()) smallest = members;
    if (held >= wanted || held + members->size() > 2 * wanted) continue;
    for (size_t k : *members) holdout[k] = true;
    held += members->size();
  }
  if (held == 0) {
    for (size_t k : *smallest) holdout[k] = true;
  }
  return holdout;
}

double GateBound(double incumbent_error, double margin) {
  return incumbent_error * (1 + margin) + kGateNoiseFloor;
}

bool GatePasses(double candidate_error, double incumbent_error, double margin) {
  return candidate_error <= GateBound(incumbent_error, margin);
}

}  // namespace mltune::opt::cost_model_training
