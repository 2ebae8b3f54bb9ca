#include "optimizers/core/strategy_util.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace mltune::opt::internal {

absl::Status CheckParams(const StrategyParams& params, std::string_view strategy,
                         std::initializer_list<std::string_view> known) {
  for (const auto& [name, value] : params) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::vector<std::string> names;
      for (std::string_view k : known) names.emplace_back(k);
      return absl::InvalidArgumentError(absl::StrCat(
          "strategy ", std::string(strategy), " has no parameter '", name,
          "' (known: ", names.empty() ? std::string("none") : absl::StrJoin(names, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

double Param(const StrategyParams& params, const std::string& name, double fallback) {
  auto it = params.find(name);
  return it == params.end() ? fallback : it->second;
}

Candidate RandomCandidate(const SearchSpace& space, int64_t length, std::mt19937_64& rng) {
  if (space.fixed_length) length = space.max_length;
  length = std::clamp<int64_t>(length, 0, space.max_length);
  Candidate c(static_cast<size_t>(length));
  for (int64_t i = 0; i < length; ++i) {
    c[i] = static_cast<Action>(Uniform(rng, space.ChoicesAt(i)));
  }
  return c;
}

ActionWeights::ActionWeights(int32_t actions)
    : tried_(static_cast<size_t>(actions), 0.0), changed_(static_cast<size_t>(actions), 0.0) {}

void ActionWeights::Observe(const Candidate& requested, const Candidate& effective) {
  for (Action a : requested) ++tried_[a];
  for (Action a : effective) ++changed_[a];
}

Action ActionWeights::Draw(std::mt19937_64& rng) const {
  double total = 0;
  for (size_t a = 0; a < tried_.size(); ++a) total += (changed_[a] + 1) / (tried_[a] + 2);
  double u = Uniform01(rng) * total;
  for (size_t a = 0; a < tried_.size(); ++a) {
    u -= (changed_[a] + 1) / (tried_[a] + 2);
    if (u < 0) return static_cast<Action>(a);
  }
  return static_cast<Action>(tried_.size() - 1);
}

Candidate Mutate(const SearchSpace& space, const Candidate& c, std::mt19937_64& rng,
                 const ActionWeights* weights) {
  const int64_t n = static_cast<int64_t>(c.size());
  Candidate out = c;
  auto draw = [&](int64_t i) {
    return weights != nullptr ? weights->Draw(rng)
                              : static_cast<Action>(Uniform(rng, space.ChoicesAt(i)));
  };
  auto replace = [&](int64_t i) {
    const int32_t choices = space.ChoicesAt(i);
    if (weights != nullptr) {
      // A few draws avoid the identity; then fall back to uniform.
      for (int attempt = 0; attempt < 4; ++attempt) {
        const Action v = weights->Draw(rng);
        if (v != out[i]) {
          out[i] = v;
          return;
        }
      }
    }
    Action v = static_cast<Action>(Uniform(rng, choices - 1));
    if (v >= out[i]) ++v;
    out[i] = v;
  };
  if (space.fixed_length) {
    std::vector<int64_t> mutable_positions;
    for (int64_t i = 0; i < n; ++i) {
      if (space.ChoicesAt(i) > 1) mutable_positions.push_back(i);
    }
    if (mutable_positions.empty()) return out;
    replace(mutable_positions[Uniform(rng, static_cast<int64_t>(mutable_positions.size()))]);
    return out;
  }
  enum Op { kReplace, kInsert, kDelete, kSwap };
  std::vector<Op> ops;
  if (n > 0 && space.ChoicesAt(0) > 1) ops.push_back(kReplace);
  if (n < space.max_length) ops.push_back(kInsert);
  if (n > 0) ops.push_back(kDelete);
  if (n > 1) ops.push_back(kSwap);
  if (ops.empty()) return out;
  switch (ops[Uniform(rng, static_cast<int64_t>(ops.size()))]) {
    case kReplace:
      replace(Uniform(rng, n));
      break;
    case kInsert: {
      const int64_t i = Uniform(rng, n + 1);
      out.insert(out.begin() + i, draw(i));
      break;
    }
    case kDelete:
      out.erase(out.begin() + Uniform(rng, n));
      break;
    case kSwap: {
      const int64_t i = Uniform(rng, n - 1);
      std::swap(out[i], out[i + 1]);
      break;
    }
  }
  return out;
}

Candidate Crossover(const SearchSpace& space, const Candidate& a, const Candidate& b,
                    std::mt19937_64& rng) {
  if (space.fixed_length) {
    Candidate out = a;
    for (size_t i = 0; i < out.size() && i < b.size(); ++i) {
      if (rng() & 1) out[i] = b[i];
    }
    return out;
  }
  const int64_t i = Uniform(rng, static_cast<int64_t>(a.size()) + 1);
  const int64_t j = Uniform(rng, static_cast<int64_t>(b.size()) + 1);
  Candidate out(a.begin(), a.begin() + i);
  out.insert(out.end(), b.begin() + j, b.end());
  if (static_cast<int64_t>(out.size()) > space.max_length) out.resize(space.max_length);
  return out;
}

std::optional<Grown> GrowRandomSequence(SearchContext& ctx, int64_t length) {
  const int32_t actions = ctx.space().ChoicesAt(0);
  length = std::min(length, ctx.space().max_length);
  Grown grown;
  grown.best_prefix_score = std::numeric_limits<double>::infinity();
  std::vector<bool> noop(static_cast<size_t>(actions), false);
  std::vector<Action> open;
  bool stepped = false;  // at least one evaluation went through
  while (static_cast<int64_t>(grown.candidate.size()) < length) {
    open.clear();
    for (Action a = 0; a < actions; ++a) {
      if (!noop[a]) open.push_back(a);
    }
    if (open.empty()) break;  // a fixed point
    Candidate next = grown.candidate;
    next.push_back(open[Uniform(ctx.rng(), static_cast<int64_t>(open.size()))]);
    std::optional<SearchContext::Evaluation> e = ctx.Evaluate(next);
    if (!e) {
      if (!stepped) return std::nullopt;
      break;
    }
    stepped = true;
    grown.best_prefix_score = std::min(grown.best_prefix_score, e->best_prefix_score);
    if (e->effective.size() == grown.candidate.size()) {
      noop[next.back()] = true;
    } else {
      grown.candidate = std::move(e->effective);
      noop.assign(noop.size(), false);
    }
  }
  if (!stepped) grown.best_prefix_score = ctx.initial_score();
  return grown;
}

const SearchContext::Evaluation* BestSeed(const SearchContext& ctx) {
  const SearchContext::Evaluation* best = nullptr;
  for (const SearchContext::Evaluation& e : ctx.seeds()) {
    if (best == nullptr || e.best_prefix_score < best->best_prefix_score) best = &e;
  }
  return best;
}

std::vector<Candidate> Neighbours(const SearchSpace& space, const Candidate& c) {
  std::vector<Candidate> out;
  for (size_t i = 0; i < c.size(); ++i) {
    for (Action v = 0; v < space.ChoicesAt(static_cast<int64_t>(i)); ++v) {
      if (v == c[i]) continue;
      out.push_back(c);
      out.back()[i] = v;
    }
  }
  return out;
}

bool HillClimb(SearchContext& ctx, Candidate current, double score) {
  for (;;) {
    Candidate best;
    double best_score = score;
    for (const Candidate& n : Neighbours(ctx.space(), current)) {
      std::optional<SearchContext::Evaluation> e = ctx.Evaluate(n);
      if (!e) return true;
      if (e->score < best_score) {
        best_score = e->score;
        best = n;
      }
    }
    if (!(best_score < score)) return false;
    current = std::move(best);
    score = best_score;
  }
}

bool NoOpMemo::IsNoOp(const State& s, Action a) const {
  const std::string key = s.Key();
  if (key.empty()) return false;
  auto it = memo_.find(key);
  return it != memo_.end() && it->second[a];
}

void NoOpMemo::MarkNoOp(const State& s, Action a) {
  const std::string key = s.Key();
  if (key.empty()) return;
  std::vector<bool>& v = memo_[key];
  if (v.empty()) v.assign(static_cast<size_t>(actions_), false);
  v[a] = true;
}

}  // namespace mltune::opt::internal
