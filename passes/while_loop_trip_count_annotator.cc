// while-loop-trip-count-annotator: XLA's WhileLoopTripCountAnnotator. Sets the backend_config of
// every while loop whose trip count is statically known (see ComputeWhileLoopTripCount) to XLA's
// WhileLoopBackendConfig in JSON: known_trip_count, plus known_induction_variable and, for
// `i = c0; ...; i += c` loops, known_init_step. Semantics are untouched. Unlike XLA (which reports
// a change whenever it annotates), it reports a change only when some config text differs, so it is
// idempotent.
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/hlo_builder.h"
#include "ir/module.h"
#include "passes/pass.h"
#include "passes/registry.h"
#include "passes/while_util.h"

namespace mltune::passes {
namespace {

using ir::Computation;
using ir::Instruction;
using ir::Opcode;

// Init and step of an integer scalar induction variable updated as `i + c` (or `c + i`).
std::optional<std::pair<int64_t, int64_t>> InitAndStep(const Instruction* while_op, int64_t idx) {
  const Instruction* init = while_op->operand(0)->operand(idx);
  const Instruction* update = while_op->while_body()->root()->operand(idx);
  if (!init->shape().IsScalar() || !ir::IsIntegral(init->shape().element_type()) ||
      update->opcode() != Opcode::kAdd) {
    return std::nullopt;
  }
  std::optional<ir::Literal> init_value = EvaluateConstantExpression(init);
  if (!init_value.has_value()) return std::nullopt;
  for (const Instruction* op : update->operands()) {
    if (op->opcode() == Opcode::kConstant && op->literal.has_value() && op->shape().IsScalar()) {
      return std::make_pair(init_value->GetAsInt64(0), op->literal->GetAsInt64(0));
    }
  }
  return std::nullopt;
}

class WhileLoopTripCountAnnotator : public Pass {
 public:
  std::string_view name() const override { return "while-loop-trip-count-annotator"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    for (Computation* c : module.MakeComputationPostOrder()) {
      for (Instruction* i : c->instructions()) {
        if (i->opcode() != Opcode::kWhile) continue;
        std::optional<int64_t> trip_count = ComputeWhileLoopTripCount(i);
        if (!trip_count.has_value()) continue;
        std::string config = absl::StrCat("{\"known_trip_count\":{\"n\":\"", *trip_count, "\"}");
        if (std::optional<int64_t> idx = GetLoopInductionVarTupleIdx(i)) {
          if (auto init_step = InitAndStep(i, *idx)) {
            absl::StrAppend(&config, ",\"known_init_step\":{\"init\":\"", init_step->first,
                            "\",\"step\":\"", init_step->second, "\"}");
          }
          absl::StrAppend(&config, ",\"known_induction_variable\":{\"tuple_index\":\"", *idx,
                          "\"}");
        }
        config += "}";
        if (i->backend_config == config) continue;
        i->backend_config = config;
        changed = true;
      }
    }
    return changed;
  }
};

}  // namespace

void RegisterWhileLoopTripCountAnnotator(Registry& registry) {
  registry.Register({"while-loop-trip-count-annotator",
                     "records statically known while-loop trip counts in backend_config",
                     [] { return std::make_unique<WhileLoopTripCountAnnotator>(); }});
}

}  // namespace mltune::passes
