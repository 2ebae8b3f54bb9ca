#include "ir/hlo_printer.h"

#include <string_view>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/print_order.h"

namespace mltune::ir {
namespace {

bool OpIn(Opcode op, std::initializer_list<Opcode> ops) {
  for (Opcode o : ops) {
    if (o == op) return true;
  }
  return false;
}

std::string IntList(const std::vector<int64_t>& v) {
  return absl::StrCat("{", absl::StrJoin(v, ","), "}");
}

std::string NameList(const std::vector<Computation*>& comps) {
  return absl::StrCat(
      "{",
      absl::StrJoin(comps, ", ",
                    [](std::string* out, const Computation* c) { out->append(c->name()); }),
      "}");
}

std::string Bool(bool b) { return b ? "true" : "false"; }

// The structured attributes, in canonical order, then the raw ones and the annotations.
std::vector<std::string> Attributes(const Instruction& in, const PrintOptions& options) {
  std::vector<std::string> a;
  const Opcode op = in.opcode();
  auto add = [&a](std::string_view name, std::string_view value) {
    std::string s(name);
    s += "=";
    s += value;
    a.push_back(std::move(s));
  };

  if (OpIn(op, {Opcode::kBroadcast, Opcode::kTranspose, Opcode::kReduce, Opcode::kReverse,
                Opcode::kConcatenate, Opcode::kMap, Opcode::kSort, Opcode::kGetDimensionSize,
                Opcode::kSetDimensionSize})) {
    add("dimensions", IntList(in.dimensions));
  } else if (OpIn(op, {Opcode::kAllGather, Opcode::kAllGatherStart, Opcode::kReduceScatter,
                       Opcode::kAllToAll}) &&
             !in.dimensions.empty()) {
    add("dimensions", IntList(in.dimensions));
  }
  if (op == Opcode::kCompare) {
    if (in.comparison_direction.has_value()) {
      add("direction", ComparisonDirectionName(*in.comparison_direction));
    }
    if (in.comparison_type != ComparisonType::kDefault) {
      add("type", ComparisonTypeName(in.comparison_type));
    }
  }
  if (op == Opcode::kSlice) {
    add("slice", absl::StrCat("{",
                              absl::StrJoin(in.slice, ", ",
                                            [](std::string* out, const SliceDim& d) {
                                              absl::StrAppend(out, "[", d.start, ":", d.limit);
                                              if (d.stride != 1) {
                                                absl::StrAppend(out, ":", d.stride);
                                              }
                                              out->append("]");
                                            }),
                              "}"));
  }
  if (op == Opcode::kDynamicSlice) add("dynamic_slice_sizes", IntList(in.dynamic_slice_sizes));
  if (OpIn(op, {Opcode::kConvolution, Opcode::kReduceWindow, Opcode::kSelectAndScatter}) &&
      in.window.has_value()) {
    add("window", absl::StrCat("{", WindowToString(*in.window), "}"));
  }
  if (op == Opcode::kConvolution) {
    if (in.conv_dnums.has_value()) {
      add("dim_labels", ConvolutionDimensionNumbersToString(*in.conv_dnums));
    }
    if (in.feature_group_count != 1) {
      add("feature_group_count", absl::StrCat(in.feature_group_count));
    }
    if (in.batch_group_count != 1) add("batch_group_count", absl::StrCat(in.batch_group_count));
  }
  if (op == Opcode::kDot && in.dot_dnums.has_value()) {
    const DotDimensionNumbers& d = *in.dot_dnums;
    if (!d.lhs_batch_dimensions.empty()) add("lhs_batch_dims", IntList(d.lhs_batch_dimensions));
    if (!d.lhs_contracting_dimensions.empty()) {
      add("lhs_contracting_dims", IntList(d.lhs_contracting_dimensions));
    }
    if (!d.rhs_batch_dimensions.empty()) add("rhs_batch_dims", IntList(d.rhs_batch_dimensions));
    if (!d.rhs_contracting_dimensions.empty()) {
      add("rhs_contracting_dims", IntList(d.rhs_contracting_dimensions));
    }
  }
  if (op == Opcode::kGather) {
    if (in.gather_dnums.has_value()) {
      const GatherDimensionNumbers& d = *in.gather_dnums;
      add("offset_dims", IntList(d.offset_dims));
      add("collapsed_slice_dims", IntList(d.collapsed_slice_dims));
      add("start_index_map", IntList(d.start_index_map));
      if (!d.operand_batching_dims.empty()) {
        add("operand_batching_dims", IntList(d.operand_batching_dims));
      }
      if (!d.start_indices_batching_dims.empty()) {
        add("start_indices_batching_dims", IntList(d.start_indices_batching_dims));
      }
      add("index_vector_dim", absl::StrCat(d.index_vector_dim));
    }
    add("slice_sizes", IntList(in.gather_slice_sizes));
    if (in.indices_are_sorted) add("indices_are_sorted", "true");
  }
  if (op == Opcode::kScatter) {
    if (in.scatter_dnums.has_value()) {
      const ScatterDimensionNumbers& d = *in.scatter_dnums;
      add("update_window_dims", IntList(d.update_window_dims));
      add("inserted_window_dims", IntList(d.inserted_window_dims));
      add("scatter_dims_to_operand_dims", IntList(d.scatter_dims_to_operand_dims));
      if (!d.input_batching_dims.empty()) {
        add("input_batching_dims", IntList(d.input_batching_dims));
      }
      if (!d.scatter_indices_batching_dims.empty()) {
        add("scatter_indices_batching_dims", IntList(d.scatter_indices_batching_dims));
      }
      add("index_vector_dim", absl::StrCat(d.index_vector_dim));
    }
    if (in.indices_are_sorted) add("indices_are_sorted", "true");
    if (in.unique_indices) add("unique_indices", "true");
  }
  if (op == Opcode::kIota) add("iota_dimension", absl::StrCat(in.iota_dimension));
  if (op == Opcode::kGetTupleElement) add("index", absl::StrCat(in.tuple_index));
  if (op == Opcode::kPad) add("padding", PaddingToString(in.padding));
  if (op == Opcode::kCustomCall) {
    add("custom_call_target", absl::StrCat("\"", absl::CEscape(in.custom_call_target), "\""));
    if (in.custom_call_has_side_effect) add("custom_call_has_side_effect", "true");
  }
  if (op == Opcode::kSort && in.is_stable) add("is_stable", "true");
  if (op == Opcode::kFusion && !in.fusion_kind.empty()) add("kind", in.fusion_kind);
  if (op == Opcode::kRng) add("distribution", RandomDistributionName(in.distribution));
  if (op == Opcode::kFft) {
    add("fft_type", FftTypeName(in.fft_type));
    add("fft_length", IntList(in.fft_length));
  }
  if (op == Opcode::kReducePrecision) {
    add("exponent_bits", absl::StrCat(in.exponent_bits));
    add("mantissa_bits", absl::StrCat(in.mantissa_bits));
  }
  if (OpIn(op, {Opcode::kBatchNormGrad, Opcode::kBatchNormInference, Opcode::kBatchNormTraining})) {
    add("epsilon", FormatFloat(in.epsilon, PrimitiveType::kF32));
    add("feature_index", absl::StrCat(in.feature_index));
  }
  if (op == Opcode::kTriangularSolve && in.triangular_solve.has_value()) {
    const TriangularSolveOptions& t = *in.triangular_solve;
    if (t.left_side) add("left_side", "true");
    if (t.lower) add("lower", "true");
    if (t.unit_diagonal) add("unit_diagonal", "true");
    add("transpose_a", TriangularTransposeName(t.transpose_a));
  }
  if (op == Opcode::kCholesky && in.cholesky_lower) add("lower", "true");
  if (op == Opcode::kTopK) {
    add("k", absl::StrCat(in.topk_k));
    add("largest", Bool(in.topk_largest));
  }

  // Called computations, under the role names the parser reads back.
  const std::vector<Computation*>& called = in.called_computations();
  if (!called.empty()) {
    switch (op) {
      case Opcode::kWhile:
        add("condition", called[0]->name());
        if (called.size() > 1) add("body", called[1]->name());
        break;
      case Opcode::kSelectAndScatter:
        add("select", called[0]->name());
        if (called.size() > 1) add("scatter", called[1]->name());
        break;
      case Opcode::kConditional:
        if (in.conditional_true_false_form && called.size() == 2) {
          add("true_computation", called[0]->name());
          add("false_computation", called[1]->name());
        } else {
          add("branch_computations", NameList(called));
        }
        break;
      case Opcode::kFusion:
      case Opcode::kAsyncStart:
      case Opcode::kAsyncUpdate:
      case Opcode::kAsyncDone:
        add("calls", called[0]->name());
        break;
      case Opcode::kCustomCall:
        if (in.custom_call_to_apply_form && called.size() == 1) {
          add("to_apply", called[0]->name());
        } else {
          add("called_computations", NameList(called));
        }
        break;
      default:
        if (called.size() == 1) {
          add("to_apply", called[0]->name());
        } else {
          add("called_computations", NameList(called));
        }
        break;
    }
  }

  for (const RawAttribute& raw : in.extra_attributes) add(raw.name, raw.value);
  if (!in.sharding.empty()) add("sharding", in.sharding);
  if (!in.frontend_attributes.empty()) add("frontend_attributes", in.frontend_attributes);
  if (!in.control_predecessors().empty()) {
    add("control-predecessors",
        absl::StrCat(
            "{",
            absl::StrJoin(in.control_predecessors(), ", ",
                          [](std::string* out, const Instruction* p) { out->append(p->name()); }),
            "}"));
  }
  if (options.print_metadata && !in.metadata.empty()) add("metadata", in.metadata);
  if (!in.backend_config.empty()) add("backend_config", in.backend_config);
  return a;
}

}  // namespace

std::string PrintInstruction(const Instruction& instr, const PrintOptions& options) {
  std::string out = instr.name();
  out += " = ";
  out += instr.shape().ToString(options.print_layouts);
  out += " ";
  out += OpcodeName(instr.opcode());
  out += "(";
  if (instr.opcode() == Opcode::kParameter) {
    absl::StrAppend(&out, instr.parameter_number);
  } else if (instr.opcode() == Opcode::kConstant) {
    out += instr.literal.has_value() ? instr.literal->ToString() : "{...}";
  } else {
    bool first = true;
    for (const Instruction* op : instr.operands()) {
      if (!first) out += ", ";
      first = false;
      if (options.print_operand_shapes) {
        out += op->shape().ToString(options.print_layouts);
        out += " ";
      }
      out += op->name();
    }
  }
  out += ")";
  for (const std::string& attr : Attributes(instr, options)) {
    out += ", ";
    out += attr;
  }
  return out;
}

std::string PrintComputation(const Computation& computation, const PrintOptions& options) {
  std::string out = computation.is_entry() ? "ENTRY " : "";
  out += computation.name();
  out += " {\n";
  for (const Instruction* instr : DefinitionOrder(computation)) {
    out += instr == computation.root() ? "  ROOT " : "  ";
    out += PrintInstruction(*instr, options);
    out += "\n";
  }
  out += "}\n";
  return out;
}

std::string PrintModule(const Module& module, const PrintOptions& options) {
  std::string out = "HloModule ";
  out += module.name();
  if (module.is_scheduled) out += ", is_scheduled=true";
  if (!module.input_output_alias.empty()) {
    out += ", input_output_alias={ ";
    bool first = true;
    for (const IoAlias& alias : module.input_output_alias) {
      if (!first) out += ", ";
      first = false;
      absl::StrAppend(&out, IntList(alias.output_index), ": (", alias.parameter_number, ", ",
                      IntList(alias.parameter_index));
      if (!alias.kind.empty()) absl::StrAppend(&out, ", ", alias.kind);
      out += ")";
    }
    out += " }";
  }
  if (!module.entry_computation_layout.empty()) {
    out += ", entry_computation_layout=";
    out += module.entry_computation_layout;
  }
  for (const RawAttribute& raw : module.extra_attributes) {
    absl::StrAppend(&out, ", ", raw.name, "=", raw.value);
  }
  out += "\n";
  for (const Computation* c : CalleesFirstOrder(module)) {
    out += "\n";
    out += PrintComputation(*c, options);
  }
  return out;
}

}  // namespace mltune::ir
