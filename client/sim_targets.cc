#include "client/sim_targets.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/spec/target_spec.h"

namespace mltune::client {
namespace {

struct Alias {
  const char* worker;
  const char* kind;
  const char* default_target;
};
constexpr Alias kAliases[] = {
    {"tpu-sim", "tpu", "tpu-v4-core"},
    {"mcm-sim", "mcm", "mcm-36"},
    {"cluster-sim", "gpu-cluster", "gpu-4x-nvlink"},
};

}  // namespace

std::string ResolveAlias(const std::string& target) {
  for (const Alias& a : kAliases) {
    if (target == a.worker) return a.default_target;
  }
  return target;
}

const char* WorkerOfKind(const std::string& kind) {
  for (const Alias& a : kAliases) {
    if (kind == a.kind) return a.worker;
  }
  return nullptr;
}

std::string KnownTargets() {
  std::vector<std::string> aliases;
  for (const Alias& a : kAliases)
    aliases.push_back(absl::StrCat(a.worker, " = ", a.default_target));
  return absl::StrCat("known: ", absl::StrJoin(backends::TargetRegistry::Global().Names(), ", "),
                      "; aliases: ", absl::StrJoin(aliases, ", "));
}

}  // namespace mltune::client
