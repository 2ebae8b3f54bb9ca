#include "passes/registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace mltune::passes {

const Registry& Registry::Global() {
  static const Registry* registry = [] {
    auto* r = new Registry();
    RegisterAllPasses(*r);
    // XLA spells these names with underscores; users also write them hyphenated, and XLA's
    // SubByteNormalization is one class whose default use strips element sizes.
    r->RegisterAlias("gather-simplifier", "gather_simplifier");
    r->RegisterAlias("scatter-simplifier", "scatter_simplifier");
    r->RegisterAlias("sub-byte-normalization", "sub-byte-size-removal");
    return r;
  }();
  return *registry;
}

void Registry::Register(PassInfo info) { passes_.push_back(std::move(info)); }

void Registry::RegisterAlias(std::string alias, std::string name) {
  aliases_[std::move(alias)] = std::move(name);
}

const PassInfo* Registry::Find(std::string_view name) const {
  if (auto it = aliases_.find(name); it != aliases_.end()) name = it->second;
  for (const PassInfo& p : passes_) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

absl::StatusOr<std::unique_ptr<Pass>> Registry::Create(std::string_view name) const {
  const PassInfo* info = Find(name);
  if (info == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("unknown pass '", std::string(name), "' (mltune passes lists them)"));
  }
  return info->factory();
}

std::vector<const PassInfo*> Registry::List() const {
  std::vector<const PassInfo*> out;
  for (const PassInfo& p : passes_) out.push_back(&p);
  std::sort(out.begin(), out.end(),
            [](const PassInfo* a, const PassInfo* b) { return a->name < b->name; });
  return out;
}

std::vector<std::string> Registry::Names() const {
  std::vector<std::string> out;
  for (const PassInfo* p : List()) out.push_back(p->name);
  return out;
}

}  // namespace mltune::passes
