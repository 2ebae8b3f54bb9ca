// computation-deduplicator: XLA's HloComputationDeduplicator. Walking callees before callers, a
// computation identical to an earlier one (same instructions and structure, callees equal or
// already found duplicates) is replaced everywhere by that one and removed. As XLA, the entry,
// computations of more than 128 instructions and ones holding more than 1 KiB of constants are
// not considered (comparing them costs more than it saves).
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/hlo_builder.h"
#include "ir/module.h"
#include "passes/pass.h"
#include "passes/registry.h"

namespace mltune::passes {
namespace {

using ir::Computation;
using ir::Instruction;

constexpr int64_t kMaxInstructions = 128;
constexpr int64_t kMaxConstantBytes = 1024;

bool ContainsLargeConstants(const Computation& c) {
  int64_t bytes = 0;
  for (const Instruction* i : c.instructions()) {
    if (i->opcode() != ir::Opcode::kConstant) continue;
    bytes += i->shape().ByteSize();
    if (bytes > kMaxConstantBytes) return true;
  }
  return false;
}

class ComputationDeduplicator : public Pass {
 public:
  std::string_view name() const override { return "computation-deduplicator"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    std::unordered_map<const Computation*, Computation*> replacement;
    auto canonical = [&](const Computation* c) {
      auto it = replacement.find(c);
      return it == replacement.end() ? c : it->second;
    };
    // Callees compare equal when they are, or have been found to be, the same computation.
    ir::ComputationEq callee_eq = [&](const Computation* a, const Computation* b) {
      return canonical(a) == canonical(b);
    };
    std::unordered_map<std::string, std::vector<Computation*>> unique;
    for (Computation* c : module.MakeComputationPostOrder()) {
      if (c->is_entry() || c->instruction_count() > kMaxInstructions ||
          ContainsLargeConstants(*c) || c->root() == nullptr) {
        continue;
      }
      std::vector<Computation*>& bucket =
          unique[absl::StrCat(c->parameter_count(), " ", c->instruction_count(), " ",
                              c->root()->shape().ToString(true))];
      Computation* original = nullptr;
      for (Computation* candidate : bucket) {
        if (ComputationsEqual(*candidate, *c, callee_eq)) {
          original = candidate;
          break;
        }
      }
      if (original != nullptr) {
        replacement[c] = original;
      } else {
        bucket.push_back(c);
      }
    }
    if (replacement.empty()) return false;
    for (Computation* c : module.computations()) {
      for (Instruction* i : c->instructions()) {
        for (Computation*& callee : i->mutable_called_computations()) {
          auto it = replacement.find(callee);
          if (it != replacement.end()) callee = it->second;
        }
      }
    }
    for (const auto& [duplicate, original] : replacement) {
      (void)module.RemoveComputation(const_cast<Computation*>(duplicate));
    }
    return true;
  }
};

}  // namespace

void RegisterComputationDeduplicator(Registry& registry) {
  registry.Register({"computation-deduplicator",
                     "replaces calls to duplicate computations by calls to one copy",
                     [] { return std::make_unique<ComputationDeduplicator>(); }});
}

}  // namespace mltune::passes
