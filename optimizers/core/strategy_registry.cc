#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "optimizers/core/search.h"
#include "optimizers/core/strategy_util.h"

namespace mltune::opt {

const StrategyRegistry& StrategyRegistry::Global() {
  static const StrategyRegistry* const registry = [] {
    auto* r = new StrategyRegistry;
    internal::RegisterRandomSearch(*r);
    internal::RegisterGreedySearch(*r);
    internal::RegisterBeamSearch(*r);
    internal::RegisterSimulatedAnnealing(*r);
    internal::RegisterEvolutionarySearch(*r);
    return r;
  }();
  return *registry;
}

void StrategyRegistry::Register(std::string name, std::string description, Factory factory) {
  entries_[std::move(name)] = Entry{std::move(description), std::move(factory)};
}

absl::StatusOr<std::unique_ptr<Strategy>> StrategyRegistry::Create(
    std::string_view name, const StrategyParams& params) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    return absl::NotFoundError(absl::StrCat("unknown search strategy '", std::string(name),
                                            "' (known: ", absl::StrJoin(Names(), ", "), ")"));
  }
  return it->second.factory(params);
}

std::vector<std::string> StrategyRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, entry] : entries_) names.push_back(name);
  return names;
}

std::string StrategyRegistry::Description(std::string_view name) const {
  auto it = entries_.find(name);
  return it == entries_.end() ? "" : it->second.description;
}

}  // namespace mltune::opt
