#include "backends/cpu/cut_unsupported.h"

#include "absl/strings/str_cat.h"
#include "backends/cpu/lowering.h"
#include "ir/computation.h"

namespace mltune::backends::cpu {
namespace {

absl::Status CannotCut(const ir::Instruction& instr, std::string_view why) {
  return absl::UnimplementedError(absl::StrCat("cannot cut '", instr.name(), "' (",
                                               std::string(ir::OpcodeName(instr.opcode())),
                                               ") out of the module: ", std::string(why)));
}

}  // namespace

absl::StatusOr<CutModule> CutUnsupported(const ir::Module& module) {
  CutModule out;
  out.module = module.Clone();
  ir::Computation& entry = *out.module->entry();
  // Removed after the walk, which holds pointers to them; users before what they use. Removing
  // them explicitly also drops the collectives and side-effecting calls dead-code removal keeps.
  std::vector<ir::Instruction*> removed;
  for (ir::Instruction* instr : entry.MakePostOrder()) {
    if (instr->opcode() == ir::Opcode::kParameter) continue;
    // Cut away already: a get-tuple-element whose value a parameter now stands for.
    if (instr->users().empty() && instr != entry.root()) continue;
    if (CheckInstructionSupported(*instr).ok()) continue;
    // What its users read: the array itself, or the elements taken out of a tuple.
    std::vector<ir::Instruction*> values;
    if (instr->shape().IsArray()) {
      values.push_back(instr);
    } else {
      if (instr == entry.root()) return CannotCut(*instr, "it is the tuple-shaped root");
      for (ir::Instruction* user : instr->users()) {
        if (user->opcode() != ir::Opcode::kGetTupleElement) {
          return CannotCut(*instr, absl::StrCat("'", user->name(), "' uses the whole tuple"));
        }
        values.push_back(user);
      }
    }
    for (ir::Instruction* value : values) {
      auto p = std::make_unique<ir::Instruction>(
          ir::Opcode::kParameter, value->shape(),
          out.module->UniqueInstructionName(absl::StrCat(value->name(), ".cut")));
      p->parameter_number = entry.parameter_count();
      if (absl::Status s = CheckInstructionSupported(*p); !s.ok()) {
        return CannotCut(
            *value, absl::StrCat("no parameter can stand in for it: ", std::string(s.message())));
      }
      ir::Instruction* param = entry.AddInstruction(std::move(p));
      value->ReplaceAllUsesWith(param);
      out.cut.push_back(value->name());
      if (value != instr) removed.push_back(value);
    }
    removed.push_back(instr);
  }
  for (ir::Instruction* instr : removed) {
    if (absl::Status s = entry.RemoveInstruction(instr); !s.ok()) return s;
  }
  entry.RemoveDeadInstructions();
  // The entry's signature changed.
  out.module->entry_computation_layout.clear();
  if (absl::Status s = CheckSupported(*out.module); !s.ok()) return s;
  return out;
}

}  // namespace mltune::backends::cpu
