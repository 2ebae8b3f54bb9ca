// Pass registry: name -> factory. Every pass file defines one `Register<Pass>` function, and
// all_passes.cc calls each once, so adding a pass is one file plus one line, with no reliance on
// static initialisers that the linker may drop from a static library.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "passes/pass.h"

namespace mltune::passes {

struct PassInfo {
  std::string name;
  std::string description;  // one line, for `mltune passes`
  std::function<std::unique_ptr<Pass>()> factory;
};

class Registry {
 public:
  // The registry holding every pass of the library, filled on first use.
  static const Registry& Global();

  void Register(PassInfo info);
  // Another accepted spelling of a registered pass; Find and Create resolve it, List omits it.
  void RegisterAlias(std::string alias, std::string name);
  absl::StatusOr<std::unique_ptr<Pass>> Create(std::string_view name) const;
  const PassInfo* Find(std::string_view name) const;
  // Sorted by name.
  std::vector<const PassInfo*> List() const;
  // alias -> pass name, sorted by alias.
  const std::map<std::string, std::string, std::less<>>& Aliases() const { return aliases_; }
  std::vector<std::string> Names() const;

 private:
  std::vector<PassInfo> passes_;
  std::map<std::string, std::string, std::less<>> aliases_;
};

// Defined in all_passes.cc: registers every pass of the library.
void RegisterAllPasses(Registry& registry);

}  // namespace mltune::passes
