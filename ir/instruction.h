// One HLO instruction: opcode, result shape, operands, called computations and attributes.
// Instructions are owned by their Computation; operand/user edges are kept consistent by the
// mutators below, so passes never edit the vectors directly.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/attributes.h"
#include "ir/boxed.h"
#include "ir/literal.h"
#include "ir/opcode.h"
#include "ir/shape.h"

namespace mltune::ir {

class Computation;

// An attribute kept as text because the IR does not interpret it (replica_groups, channel_id,
// api_version, operand_layout_constraints, ...). Printed back exactly as parsed.
struct RawAttribute {
  std::string name;
  std::string value;
  bool operator==(const RawAttribute&) const = default;
};

// The attributes of an instruction, each meaningful only for the opcodes named. A plain struct
// so cloning an instruction copies them in one assignment.
struct InstructionAttributes {
  // broadcast, transpose, reduce, reverse, concatenate, map, sort, reduce-scatter/all-gather
  // (dimensions={d}), ...
  std::vector<int64_t> dimensions;
  std::optional<ComparisonDirection> comparison_direction;  // compare
  ComparisonType comparison_type = ComparisonType::kDefault;
  std::vector<SliceDim> slice;                    // slice
  std::vector<int64_t> dynamic_slice_sizes;       // dynamic-slice
  Boxed<Window> window;                           // convolution, reduce-window, s&s
  Boxed<ConvolutionDimensionNumbers> conv_dnums;  // convolution
  int64_t feature_group_count = 1;                // convolution
  int64_t batch_group_count = 1;                  // convolution
  Boxed<DotDimensionNumbers> dot_dnums;           // dot
  Boxed<GatherDimensionNumbers> gather_dnums;     // gather
  std::vector<int64_t> gather_slice_sizes;        // gather
  Boxed<ScatterDimensionNumbers> scatter_dnums;   // scatter
  bool indices_are_sorted = false;                // gather, scatter
  bool unique_indices = false;                    // scatter
  int64_t iota_dimension = 0;                     // iota
  int64_t tuple_index = 0;                        // get-tuple-element
  int64_t parameter_number = 0;                   // parameter
  std::vector<PaddingDim> padding;                // pad
  Boxed<Literal> literal;                         // constant (absent when elided)
  bool literal_elided = false;                    // constant({...})
  std::string custom_call_target;                 // custom-call
  bool custom_call_has_side_effect = false;       // custom-call
  bool is_stable = false;                         // sort
  std::string fusion_kind;                        // fusion: kLoop, kInput, ...
  RandomDistribution distribution = RandomDistribution::kUniform;  // rng
  FftType fft_type = FftType::kFft;                                // fft
  std::vector<int64_t> fft_length;                                 // fft
  int64_t exponent_bits = 0, mantissa_bits = 0;                    // reduce-precision
  float epsilon = 0;                                               // batch-norm-*
  int64_t feature_index = 0;                                       // batch-norm-*
  std::optional<TriangularSolveOptions> triangular_solve;          // triangular-solve
  bool cholesky_lower = false;                                     // cholesky
  int64_t topk_k = 0;                                              // topk
  bool topk_largest = true;                                        // topk
  // conditional printed with true_computation/false_computation rather than branch_computations.
  bool conditional_true_false_form = false;
  // custom-call printed with to_apply= rather than called_computations={...}.
  bool custom_call_to_apply_form = false;

  // Uninterpreted attributes and the annotation blocks, stored as their text without the
  // `name=` prefix (metadata is `{op_type="..." ...}`, backend_config keeps its quotes).
  std::vector<RawAttribute> extra_attributes;
  std::string metadata;             // "{op_name=\"...\" ...}" or ""
  std::string sharding;             // "{replicated}" or ""
  std::string frontend_attributes;  // "{...}" or ""
  std::string backend_config;       // as printed, quotes included, or ""
};

class Instruction : public InstructionAttributes {
 public:
  Instruction(Opcode opcode, Shape shape, std::string name = "");
  Instruction(const Instruction&) = delete;
  Instruction& operator=(const Instruction&) = delete;

  Opcode opcode() const { return opcode_; }
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  int64_t unique_id() const { return unique_id_; }
  void set_unique_id(int64_t id) { unique_id_ = id; }
  const Shape& shape() const { return shape_; }
  Shape& mutable_shape() { return shape_; }
  void set_shape(Shape s) { shape_ = std::move(s); }
  Computation* parent() const { return parent_; }
  // Line of the instruction in the text it was parsed from (1-based), or 0 when it was created
  // by a pass; the verifier puts it in its messages so errors point into the user's file.
  int64_t source_line() const { return source_line_; }
  void set_source_line(int64_t line) { source_line_ = line; }

  // --- Graph edges ---
  const std::vector<Instruction*>& operands() const { return operands_; }
  Instruction* operand(int64_t i) const { return operands_[i]; }
  int64_t operand_count() const { return static_cast<int64_t>(operands_.size()); }
  void AppendOperand(Instruction* op);
  // Replaces operand i, updating user lists.
  void ReplaceOperand(int64_t i, Instruction* new_op);
  // Replaces every use of `old_op` among this instruction's operands.
  void ReplaceOperandEverywhere(Instruction* old_op, Instruction* new_op);
  void ClearOperands();
  // Users in first-use order, each listed once.
  const std::vector<Instruction*>& users() const { return users_; }
  int64_t user_count() const { return static_cast<int64_t>(users_.size()); }
  // Makes every user of this instruction (and the parent's root, if this is it) use `other`.
  void ReplaceAllUsesWith(Instruction* other);

  const std::vector<Instruction*>& control_predecessors() const { return control_preds_; }
  const std::vector<Instruction*>& control_successors() const { return control_succs_; }
  void AddControlDependencyTo(Instruction* successor);
  void DropAllControlDependencies();

  // --- Called computations, role fixed by opcode ---
  // reduce, reduce-window, map, scatter, sort, all-reduce, reduce-scatter, call: [to_apply]
  // while: [condition, body]; select-and-scatter: [select, scatter]
  // conditional: branches; fusion: [fused computation]; custom-call: any number.
  const std::vector<Computation*>& called_computations() const { return called_; }
  std::vector<Computation*>& mutable_called_computations() { return called_; }
  Computation* to_apply() const { return called_.empty() ? nullptr : called_[0]; }
  Computation* while_condition() const { return called_[0]; }
  Computation* while_body() const { return called_[1]; }

  const RawAttribute* FindExtraAttribute(std::string_view name) const;

  // True when removing or duplicating this instruction could change observable behaviour.
  bool HasSideEffect() const;

 private:
  friend class Computation;
  void RemoveUser(Instruction* user);
  void AddUser(Instruction* user);

  Opcode opcode_;
  Shape shape_;
  std::string name_;
  int64_t unique_id_ = -1;
  int64_t source_line_ = 0;
  Computation* parent_ = nullptr;
  // Slot in the parent's instruction list: O(1) removal and index-keyed visited sets.
  int64_t index_in_parent_ = -1;
  std::vector<Instruction*> operands_;
  std::vector<Instruction*> users_;
  std::vector<Instruction*> control_preds_;
  std::vector<Instruction*> control_succs_;
  std::vector<Computation*> called_;
};

}  // namespace mltune::ir
