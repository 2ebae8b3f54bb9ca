// The retraining gate of `mltune train-cost-model --gate`: before a retrained cost model replaces
// the newest stored version (the incumbent), both are scored on kernels neither has trained on,
// and the new one is stored only when it is not clearly worse. The held-out kernels are those
// logged since the incumbent was stored (it cannot have seen them), whole programs holding a share
// of them (or a share of the kernels, when they come from one program); the candidate trains
// without them. A
// recipe change, drifting data or a bad batch of measurements then cannot silently replace a
// model the daemon serves (daemon/model_refresher.h passes --gate).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mltune::opt::cost_model_training {

// One kernel of the training data, as the gate sees it.
struct GateKernel {
  std::string program;
  int64_t first_logged_ms = 0;  // its earliest measurement
  bool eligible = false;        // may be tested: a real program's kernel (not synthetic)
};

// Which kernels the gate holds out: among the eligible ones first logged after `incumbent_ms`,
// whole programs drawn at random by `seed` until they hold `share` of those kernels, passing over
// any that would take them past twice the share (at least one program: the smallest, when every
// program is that large), or, when the kernels all come from one program, `share` of them (at
// least one).
// Whole programs, because the daemon meets programs it has never seen. Returns a flag per kernel;
// none set when no eligible kernel is newer than the incumbent.
std::vector<bool> GateHoldout(std::span<const GateKernel> kernels, int64_t incumbent_ms,
                              double share, uint64_t seed);

// Errors (the share of tile configuration pairs misordered, or the fusion time-weighted APE, as
// fractions) under this much are noise: no candidate is rejected for losing by less.
inline constexpr double kGateNoiseFloor = 0.01;

// The largest error a candidate may have on the held-out kernels where the incumbent has
// `incumbent_error`: incumbent * (1 + margin) + kGateNoiseFloor. A negative margin demands an
// improvement.
double GateBound(double incumbent_error, double margin);
// Whether a candidate with `candidate_error` may replace the incumbent: at most GateBound.
bool GatePasses(double candidate_error, double incumbent_error, double margin);

}  // namespace mltune::opt::cost_model_training
