#include "ir/verifier.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/shape_inference.h"

namespace mltune::ir {
namespace {

#define MLTUNE_VERIFY_RETURN_IF_ERROR(expr)     \
  do {                                          \
    if (absl::Status _st = (expr); !_st.ok()) { \
      return _st;                               \
    }                                           \
  } while (0)

std::string Str(const Shape& s, bool layout = false) { return s.ToString(layout); }

template <typename... Args>
absl::Status ComputationError(const Computation& c, const Args&... args) {
  return absl::InvalidArgumentError(absl::StrCat("computation ", c.name(), ": ", args...));
}

template <typename... Args>
absl::Status InstructionError(const Computation& c, const Instruction& i, const Args&... args) {
  const std::string line =
      i.source_line() > 0 ? absl::StrCat(" (line ", i.source_line(), ")") : std::string();
  return absl::InvalidArgumentError(
      absl::StrCat("computation ", c.name(), ", instruction ", i.name(), line, ": ", args...));
}

// Why `shape` is not a well-formed shape, or nullopt when it is.
std::optional<std::string> ShapeProblem(const Shape& shape) {
  const PrimitiveType t = shape.element_type();
  if (t == PrimitiveType::kInvalid) return "invalid element type";
  if (!shape.IsTuple() && !shape.tuple_shapes().empty()) {
    return absl::StrCat("non-tuple shape ", Str(shape), " has tuple elements");
  }
  if (shape.IsTuple()) {
    if (shape.rank() != 0) return "tuple shape has dimensions";
    for (int64_t i = 0; i < shape.tuple_size(); ++i) {
      if (std::optional<std::string> p = ShapeProblem(shape.tuple_shapes(i))) {
        return absl::StrCat("tuple element ", i, ": ", *p);
      }
    }
    return std::nullopt;
  }
  if (!shape.IsArray()) {
    if (shape.rank() != 0) return absl::StrCat(Str(shape), " cannot have dimensions");
    return std::nullopt;
  }
  if (shape.dynamic_dimensions().size() != shape.dimensions().size()) {
    return absl::StrCat(Str(shape), " has ", shape.dynamic_dimensions().size(),
                        " dynamic flags for ", shape.rank(), " dimensions");
  }
  for (int64_t i = 0; i < shape.rank(); ++i) {
    const int64_t d = shape.dimensions(i);
    if (d < 0 && d != kUnboundedDim) {
      return absl::StrCat(Str(shape), " has negative dimension ", i, " of size ", d);
    }
  }
  if (shape.layout().has_value()) {
    const std::vector<int64_t>& m2m = shape.layout()->minor_to_major;
    std::vector<bool> seen(shape.rank(), false);
    bool ok = static_cast<int64_t>(m2m.size()) == shape.rank();
    for (size_t i = 0; ok && i < m2m.size(); ++i) {
      if (m2m[i] < 0 || m2m[i] >= shape.rank() || seen[m2m[i]]) {
        ok = false;
      } else {
        seen[m2m[i]] = true;
      }
    }
    if (!ok) {
      return absl::StrCat(Str(shape, true), ": layout {", absl::StrJoin(m2m, ","),
                          "} is not a permutation of 0..", shape.rank() - 1);
    }
  }
  return std::nullopt;
}

// The subshape at `index`, or nullptr when the index leaves the shape.
const Shape* Subshape(const Shape& shape, const std::vector<int64_t>& index) {
  const Shape* s = &shape;
  for (int64_t i : index) {
    if (!s->IsTuple() || i < 0 || i >= s->tuple_size()) return nullptr;
    s = &s->tuple_shapes(i);
  }
  return s;
}

std::string IndexStr(const std::vector<int64_t>& index) {
  return absl::StrCat("{", absl::StrJoin(index, ","), "}");
}

class Verifier {
 public:
  Verifier(const Module& module, const VerifyOptions& options)
      : module_(module), options_(options) {}

  absl::Status Run() {
    if (module_.entry() == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("module ", module_.name(), ": has no entry computation"));
    }
    comps_ = module_.computations();
    MLTUNE_VERIFY_RETURN_IF_ERROR(IndexComputations());
    for (int32_t c = 0; c < static_cast<int32_t>(comps_.size()); ++c) {
      MLTUNE_VERIFY_RETURN_IF_ERROR(CheckStructure(c));
    }
    for (int32_t c = 0; c < static_cast<int32_t>(comps_.size()); ++c) {
      MLTUNE_VERIFY_RETURN_IF_ERROR(CheckAcyclic(c));
    }
    MLTUNE_VERIFY_RETURN_IF_ERROR(CheckCallGraphAcyclic());
    for (const Computation* c : comps_) {
      for (const Instruction* i : c->instructions()) {
        MLTUNE_VERIFY_RETURN_IF_ERROR(CheckShape(*c, *i));
      }
    }
    return CheckAliases();
  }

 private:
  struct InstrInfo {
    int32_t computation;
    int32_t local;  // position in its computation's instruction list
  };

  absl::Status IndexComputations() {
    std::unordered_set<std::string_view> names;
    int64_t total = 0;
    for (int32_t c = 0; c < static_cast<int32_t>(comps_.size()); ++c) {
      comp_index_.emplace(comps_[c], c);
      if (!names.insert(comps_[c]->name()).second) {
        return ComputationError(*comps_[c], "computation name is not unique in the module");
      }
      if (comps_[c]->parent() != &module_) {
        return ComputationError(*comps_[c], "its parent is not this module");
      }
      total += comps_[c]->instruction_count();
    }
    if (!comp_index_.count(module_.entry())) {
      return ComputationError(*module_.entry(),
                              "the entry computation is not one of the module's computations");
    }
    instrs_.resize(comps_.size());
    instr_index_.reserve(static_cast<size_t>(total));
    for (int32_t c = 0; c < static_cast<int32_t>(comps_.size()); ++c) {
      instrs_[c] = comps_[c]->instructions();
      for (int32_t i = 0; i < static_cast<int32_t>(instrs_[c].size()); ++i) {
        if (!instr_index_.emplace(instrs_[c][i], InstrInfo{c, i}).second) {
          return InstructionError(*comps_[c], *instrs_[c][i],
                                  "appears more than once in the module");
        }
      }
    }
    return absl::OkStatus();
  }

  // Where `other`, used by `user`, lives relative to `user`'s computation, as an error.
  absl::Status CheckSameComputation(int32_t c, const Instruction& user, const Instruction* other,
                                    std::string_view role_sv, int64_t n) {
    const std::string role(role_sv);
    if (other == nullptr) return InstructionError(*comps_[c], user, role, " ", n, " is null");
    auto it = instr_index_.find(other);
    if (it == instr_index_.end()) {
      return InstructionError(*comps_[c], user, role, " ", n, " (", other->name(),
                              ") is not in any computation of the module");
    }
    if (it->second.computation != c) {
      return InstructionError(*comps_[c], user, role, " ", n, " (", other->name(),
                              ") belongs to computation ", comps_[it->second.computation]->name());
    }
    return absl::OkStatus();
  }

  absl::Status CheckStructure(int32_t c) {
    const Computation& comp = *comps_[c];
    const Instruction* root = comp.root();
    if (root == nullptr) return ComputationError(comp, "has no root instruction");
    auto root_it = instr_index_.find(root);
    if (root_it == instr_index_.end() || root_it->second.computation != c) {
      return ComputationError(comp, "root ", root->name(), " is not in this computation");
    }
    const std::vector<Instruction*>& instrs = instrs_[c];
    int64_t num_params = 0;
    for (const Instruction* i : instrs) {
      if (i->opcode() == Opcode::kParameter) ++num_params;
    }
    std::vector<const Instruction*> params(num_params, nullptr);
    for (const Instruction* i : instrs) {
      if (i->name().empty()) return InstructionError(comp, *i, "instruction has an empty name");
      auto [it, inserted] = instr_names_.emplace(i->name(), i);
      if (!inserted) {
        return InstructionError(
            comp, *i, "name is not unique in the module (also used in ", "computation ",
            it->second->parent() != nullptr ? it->second->parent()->name() : std::string("<none>"),
            ")");
      }
      if (i->parent() != &comp) {
        return InstructionError(comp, *i, "its parent is not this computation");
      }
      if (i->opcode() == Opcode::kParameter) {
        const int64_t n = i->parameter_number;
        if (n < 0 || n >= num_params) {
          return InstructionError(comp, *i, "parameter number ", n,
                                  " is out of range: the computation has ", num_params,
                                  " parameters, so they must be numbered 0..", num_params - 1);
        }
        if (params[n] != nullptr) {
          return InstructionError(comp, *i, "parameter number ", n, " is also used by ",
                                  params[n]->name());
        }
        params[n] = i;
      }
      for (int64_t k = 0; k < i->operand_count(); ++k) {
        MLTUNE_VERIFY_RETURN_IF_ERROR(CheckSameComputation(c, *i, i->operand(k), "operand", k));
      }
      for (size_t k = 0; k < i->control_predecessors().size(); ++k) {
        MLTUNE_VERIFY_RETURN_IF_ERROR(CheckSameComputation(
            c, *i, i->control_predecessors()[k], "control predecessor", static_cast<int64_t>(k)));
      }
      for (size_t k = 0; k < i->control_successors().size(); ++k) {
        MLTUNE_VERIFY_RETURN_IF_ERROR(CheckSameComputation(
            c, *i, i->control_successors()[k], "control successor", static_cast<int64_t>(k)));
      }
      for (const Computation* callee : i->called_computations()) {
        if (callee == nullptr) return InstructionError(comp, *i, "calls a null computation");
        if (!comp_index_.count(callee)) {
          return InstructionError(comp, *i, "calls unknown computation ", callee->name(),
                                  " (not in the module)");
        }
      }
    }
    return absl::OkStatus();
  }

  // Iterative DFS over operands and control predecessors; modules reach 10k+ instructions.
  absl::Status CheckAcyclic(int32_t c) {
    const std::vector<Instruction*>& instrs = instrs_[c];
    enum : uint8_t { kNew, kOnStack, kDone };
    std::vector<uint8_t> state(instrs.size(), kNew);
    std::vector<std::pair<int32_t, size_t>> stack;
    for (int32_t start = 0; start < static_cast<int32_t>(instrs.size()); ++start) {
      if (state[start] != kNew) continue;
      state[start] = kOnStack;
      stack.push_back({start, 0});
      while (!stack.empty()) {
        auto& [idx, next] = stack.back();
        const Instruction* instr = instrs[idx];
        const size_t n_ops = instr->operands().size();
        const size_t n_total = n_ops + instr->control_predecessors().size();
        if (next >= n_total) {
          state[idx] = kDone;
          stack.pop_back();
          continue;
        }
        const Instruction* dep =
            next < n_ops ? instr->operands()[next] : instr->control_predecessors()[next - n_ops];
        ++next;
        const int32_t dep_idx = instr_index_.at(dep).local;
        if (state[dep_idx] == kOnStack) {
          return InstructionError(*comps_[c], *instr, "is part of a cycle: it depends on ",
                                  dep->name(), " which depends back on it");
        }
        if (state[dep_idx] == kNew) {
          state[dep_idx] = kOnStack;
          stack.push_back({dep_idx, 0});
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status CheckCallGraphAcyclic() {
    struct Edge {
      int32_t callee;
      const Instruction* caller;
    };
    std::vector<std::vector<Edge>> edges(comps_.size());
    for (int32_t c = 0; c < static_cast<int32_t>(comps_.size()); ++c) {
      for (const Instruction* i : instrs_[c]) {
        for (const Computation* callee : i->called_computations()) {
          edges[c].push_back({comp_index_.at(callee), i});
        }
      }
    }
    enum : uint8_t { kNew, kOnStack, kDone };
    std::vector<uint8_t> state(comps_.size(), kNew);
    std::vector<std::pair<int32_t, size_t>> stack;
    for (int32_t start = 0; start < static_cast<int32_t>(comps_.size()); ++start) {
      if (state[start] != kNew) continue;
      state[start] = kOnStack;
      stack.push_back({start, 0});
      while (!stack.empty()) {
        auto& [c, next] = stack.back();
        if (next >= edges[c].size()) {
          state[c] = kDone;
          stack.pop_back();
          continue;
        }
        const Edge& e = edges[c][next++];
        if (state[e.callee] == kOnStack) {
          return InstructionError(*comps_[c], *e.caller, "calls computation ",
                                  comps_[e.callee]->name(),
                                  " recursively (the call graph has a cycle)");
        }
        if (state[e.callee] == kNew) {
          state[e.callee] = kOnStack;
          stack.push_back({e.callee, 0});
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status CheckLayoutEqual(const Computation& c, const Instruction& i, const Shape& expected,
                                std::string_view what_sv) {
    if (!i.shape().Equal(expected, /*compare_layout=*/true)) {
      return InstructionError(c, i, "layout of ", Str(i.shape(), true), " does not match ",
                              std::string(what_sv), " ", Str(expected, true));
    }
    return absl::OkStatus();
  }

  // Ops that forward buffers unchanged cannot change layouts (as XLA's layout-sensitive checks).
  absl::Status CheckLayouts(const Computation& c, const Instruction& i) {
    switch (i.opcode()) {
      case Opcode::kGetTupleElement:
        return CheckLayoutEqual(c, i, i.operand(0)->shape().tuple_shapes(i.tuple_index),
                                "the operand's tuple element");
      case Opcode::kTuple:
        for (int64_t k = 0; k < i.operand_count(); ++k) {
          const Shape& got = i.shape().tuple_shapes(k);
          if (!got.Equal(i.operand(k)->shape(), /*compare_layout=*/true)) {
            return InstructionError(c, i, "layout of tuple element ", k, " ", Str(got, true),
                                    " does not match operand ", Str(i.operand(k)->shape(), true));
          }
        }
        return absl::OkStatus();
      case Opcode::kWhile:
        MLTUNE_VERIFY_RETURN_IF_ERROR(
            CheckLayoutEqual(c, i, i.operand(0)->shape(), "the init operand"));
        MLTUNE_VERIFY_RETURN_IF_ERROR(
            CheckLayoutEqual(c, i, i.while_body()->root()->shape(), "the body result"));
        MLTUNE_VERIFY_RETURN_IF_ERROR(
            CheckLayoutEqual(c, i, i.while_body()->parameter(0)->shape(), "the body parameter"));
        return CheckLayoutEqual(c, i, i.while_condition()->parameter(0)->shape(),
                                "the condition parameter");
      case Opcode::kCall:
      case Opcode::kConditional:
        for (const Computation* callee : i.called_computations()) {
          MLTUNE_VERIFY_RETURN_IF_ERROR(CheckLayoutEqual(
              c, i, callee->root()->shape(), absl::StrCat("the result of ", callee->name())));
        }
        return absl::OkStatus();
      case Opcode::kOptimizationBarrier:
      case Opcode::kDomain:
        return CheckLayoutEqual(c, i, i.operand(0)->shape(), "the operand");
      default:
        return absl::OkStatus();
    }
  }

  absl::Status CheckShape(const Computation& c, const Instruction& i) {
    if (std::optional<std::string> p = ShapeProblem(i.shape())) {
      return InstructionError(c, i, "invalid shape: ", *p);
    }
    absl::StatusOr<std::optional<Shape>> inferred = InferShape(i);
    if (!inferred.ok()) {
      // InferShape names the instruction itself; keep the message without that prefix.
      std::string msg(inferred.status().message());
      const std::string prefix = absl::StrCat(i.name(), ": ");
      if (msg.compare(0, prefix.size(), prefix) == 0) msg.erase(0, prefix.size());
      return InstructionError(c, i, msg);
    }
    if (inferred->has_value() && !(*inferred)->Equal(i.shape(), /*compare_layout=*/false)) {
      return InstructionError(c, i, "declared shape ", Str(i.shape()),
                              " does not match the inferred shape ", Str(**inferred));
    }
    if (options_.check_layouts) return CheckLayouts(c, i);
    return absl::OkStatus();
  }

  absl::Status CheckAliases() {
    const Computation& entry = *module_.entry();
    const int64_t n = entry.parameter_count();
    std::unordered_set<std::string> outputs;
    for (const IoAlias& alias : module_.input_output_alias) {
      if (alias.parameter_number < 0 || alias.parameter_number >= n) {
        return ComputationError(entry, "input_output_alias ", IndexStr(alias.output_index),
                                " refers to parameter ", alias.parameter_number,
                                " but the entry computation has ", n, " parameters");
      }
      const Shape& param = entry.parameter(alias.parameter_number)->shape();
      const Shape* param_sub = Subshape(param, alias.parameter_index);
      if (param_sub == nullptr) {
        return ComputationError(entry, "input_output_alias parameter index ",
                                IndexStr(alias.parameter_index), " is not in parameter ",
                                alias.parameter_number, " of shape ", Str(param));
      }
      const Shape& result = entry.root()->shape();
      const Shape* out_sub = Subshape(result, alias.output_index);
      if (out_sub == nullptr) {
        return ComputationError(entry, "input_output_alias output index ",
                                IndexStr(alias.output_index), " is not in the result shape ",
                                Str(result));
      }
      if (!outputs.insert(IndexStr(alias.output_index)).second) {
        return ComputationError(entry, "input_output_alias output index ",
                                IndexStr(alias.output_index), " is aliased twice");
      }
      if (param_sub->ByteSize() != out_sub->ByteSize()) {
        return ComputationError(entry, "input_output_alias ", IndexStr(alias.output_index), " (",
                                Str(*out_sub), ") and parameter ", alias.parameter_number, " ",
                                IndexStr(alias.parameter_index), " (", Str(*param_sub),
                                ") differ in size");
      }
    }
    return absl::OkStatus();
  }

  const Module& module_;
  const VerifyOptions& options_;
  std::vector<Computation*> comps_;
  std::unordered_map<const Computation*, int32_t> comp_index_;
  std::vector<std::vector<Instruction*>> instrs_;
  std::unordered_map<const Instruction*, InstrInfo> instr_index_;
  std::unordered_map<std::string_view, const Instruction*> instr_names_;
};

#undef MLTUNE_VERIFY_RETURN_IF_ERROR

}  // namespace

absl::Status VerifyModule(const Module& module, const VerifyOptions& options) {
  return Verifier(module, options).Run();
}

}  // namespace mltune::ir
