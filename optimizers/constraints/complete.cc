// Completing an assignment: variables in a fixed order, values in the strategy's order,
// chronological backtracking on dead ends; and the value orders of the strategies.
#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "optimizers/constraints/constraints.h"

namespace mltune::opt::constraints {
namespace {

std::vector<int32_t> ValuesOf(Domain d) {
  std::vector<int32_t> out;
  for (; d != 0; d &= d - 1) out.push_back(Lowest(d));
  return out;
}

std::string MostFailed(const Solver& solver) {
  std::vector<std::pair<int64_t, std::string>> by_count;
  for (const auto& [name, count] : solver.conflicts()) by_count.emplace_back(count, name);
  std::sort(by_count.rbegin(), by_count.rend());
  std::vector<std::string> parts;
  for (const auto& [count, name] : by_count) parts.push_back(absl::StrCat(name, " ", count));
  return absl::StrJoin(parts, ", ");
}

absl::StatusOr<std::vector<int32_t>> Walk(Solver& solver, const std::vector<int32_t>& given,
                                          const ValueOrder& choose, int64_t max_failures,
                                          int64_t* failures_out) {
  // Variables outside `given` come after it, in index order.
  std::vector<int32_t> order(given);
  std::vector<uint8_t> listed(static_cast<size_t>(solver.variables()), 0);
  for (int32_t v : given) listed[static_cast<size_t>(v)] = 1;
  for (int32_t v = 0; v < solver.variables(); ++v) {
    if (!listed[static_cast<size_t>(v)]) order.push_back(v);
  }
  struct Frame {
    size_t position;
    size_t checkpoint;
    std::vector<int32_t> values;
    size_t next = 0;
  };
  std::vector<Frame> frames;
  int64_t failures = 0;
  size_t position = 0;
  while (true) {
    while (position < order.size() && solver.fixed(order[position])) ++position;
    if (position == order.size()) break;
    const int32_t var = order[position];
    frames.push_back({position, solver.Checkpoint(), choose(var, solver.domain(var))});
    // Try the top frame's values; on a dead end, pop it and go on with the frame below.
    bool fixed = false;
    while (!fixed) {
      Frame& f = frames.back();
      const int32_t v = order[f.position];
      while (f.next < f.values.size()) {
        const int32_t value = f.values[f.next++];
        if (!(solver.domain(v) & ValueBit(value))) continue;
        if (solver.Fix(v, value)) {
          fixed = true;
          position = f.position + 1;
          break;
        }
        solver.Undo(f.checkpoint);
        *failures_out = ++failures;
        if (failures >= max_failures) {
          return absl::FailedPreconditionError(
              absl::StrCat("no valid assignment found in ", max_failures,
                           " failed tries; failures by constraint: ", MostFailed(solver),
                           "; the last: ", solver.conflict_constraint(), ": ", solver.conflict()));
        }
      }
      if (fixed) break;
      frames.pop_back();
      if (frames.empty()) {
        return absl::FailedPreconditionError(
            absl::StrCat("no valid assignment exists (every choice was tried); failures by "
                         "constraint: ",
                         MostFailed(solver), "; the last: ", solver.conflict_constraint(), ": ",
                         solver.conflict()));
      }
      solver.Undo(frames.back().checkpoint);
    }
  }
  return solver.Assignment();
}

}  // namespace

absl::StatusOr<std::vector<int32_t>> Complete(Solver& solver, const std::vector<int32_t>& order,
                                              const ValueOrder& choose,
                                              const CompleteOptions& options) {
  // Chronological backtracking thrashes when a dead end's cause lies far back, so a walk that
  // fails too often starts over: each variable's first choice stays first and the rest are
  // shuffled (randomized restarts with growing limits), and the last walk fills from the lowest
  // values (first fit).
  const size_t root = solver.Checkpoint();
  std::mt19937_64 rng(options.seed);
  const ValueOrder shuffled = [&choose, &rng](int32_t var, Domain domain) {
    std::vector<int32_t> values = choose(var, domain);
    if (values.size() > 2) std::shuffle(values.begin() + 1, values.end(), rng);
    return values;
  };
  const ValueOrder lowest = [](int32_t, Domain domain) { return ValuesOf(domain); };
  int64_t left = std::max<int64_t>(3, options.max_failures);
  int64_t limit = std::max<int64_t>(1, left / 8);
  absl::StatusOr<std::vector<int32_t>> result;
  for (int attempt = 0; left > 0; ++attempt) {
    const int64_t allowed = std::min(limit, left);
    const ValueOrder& values = attempt == 0 ? choose : allowed == left ? lowest : shuffled;
    int64_t failures = 0;
    result = Walk(solver, order, values, allowed, &failures);
    if (result.ok() || absl::StrContains(result.status().message(), "every choice was tried")) {
      return result;
    }
    solver.Undo(root);
    left -= failures;
    limit = limit * 3 / 2 + 1;
    if (left <= limit) limit = left;
  }
  return result;
}

ValueOrder UniformOrder(std::mt19937_64& rng) {
  return [&rng](int32_t, Domain domain) {
    std::vector<int32_t> values = ValuesOf(domain);
    std::shuffle(values.begin(), values.end(), rng);
    return values;
  };
}

ValueOrder NearestOrder(const std::vector<int32_t>& proposal) {
  return [&proposal](int32_t var, Domain domain) {
    std::vector<int32_t> values = ValuesOf(domain);
    const int32_t p = static_cast<size_t>(var) < proposal.size()
                          ? proposal[static_cast<size_t>(var)]
                          : Lowest(domain);
    std::stable_sort(values.begin(), values.end(),
                     [p](int32_t a, int32_t b) { return std::abs(a - p) < std::abs(b - p); });
    return values;
  };
}

ValueOrder SampledOrder(const std::vector<float>& weights, int32_t values, std::mt19937_64& rng) {
  return [&weights, values, &rng](int32_t var, Domain domain) {
    std::vector<int32_t> candidates = ValuesOf(domain);
    std::vector<double> w(candidates.size());
    for (size_t i = 0; i < candidates.size(); ++i) {
      const size_t at = static_cast<size_t>(var) * static_cast<size_t>(values) +
                        static_cast<size_t>(candidates[i]);
      w[i] = at < weights.size() ? std::max(0.0f, weights[at]) : 0.0;
    }
    std::vector<int32_t> out;
    // Draws without replacement in proportion to the weights; zero-weight values go last.
    while (!candidates.empty()) {
      const double total = std::accumulate(w.begin(), w.end(), 0.0);
      size_t pick = 0;
      if (total > 0) {
        double r = std::uniform_real_distribution<double>(0, total)(rng);
        while (pick + 1 < w.size() && r >= w[pick]) r -= w[pick++];
      } else {
        pick = std::uniform_int_distribution<size_t>(0, candidates.size() - 1)(rng);
      }
      out.push_back(candidates[pick]);
      candidates.erase(candidates.begin() + static_cast<std::ptrdiff_t>(pick));
      w.erase(w.begin() + static_cast<std::ptrdiff_t>(pick));
    }
    return out;
  };
}

absl::StatusOr<std::vector<int32_t>> Repair(const ConstrainedProblem& problem,
                                            const std::vector<int32_t>& proposal,
                                            const CompleteOptions& options) {
  absl::StatusOr<std::unique_ptr<Solver>> solver = problem.NewSolver();
  if (!solver.ok()) return solver.status();
  return Complete(**solver, problem.VariableOrder(), NearestOrder(proposal), options);
}

}  // namespace mltune::opt::constraints
