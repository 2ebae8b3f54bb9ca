// transpose-folding: XLA's TransposeFolding with its default policies. A transpose feeding a dot
// or convolution is folded into the consumer's dimension numbers, so the consumer reads the
// untransposed operand directly:
//  * dot: an operand transpose that only swaps its two non-batch dimensions (batch dimensions
//    stay in place, one contracting dimension; XLA's IsRowColumnTransposeDotOperand). Then the
//    dot's output order and its summation order are unchanged.
//  * convolution: any transpose of the input or kernel (XLA's AlwaysFoldTranspose), since
//    convolution dimension numbers name every dimension's role.
// Opportunities are collected first and folded afterwards, as XLA does; transposes left without
// users are removed. Folding repeats while it exposes more (XLA's pipelines rerun the pass).
#include <memory>
#include <unordered_set>
#include <utility>
#include <vector>

#include "ir/hlo_builder.h"
#include "ir/module.h"
#include "passes/pass.h"
#include "passes/registry.h"

namespace mltune::passes {
namespace {

using ir::Computation;
using ir::Instruction;
using ir::Opcode;

bool IsNonIdentityTranspose(const Instruction* i) {
  if (i->opcode() != Opcode::kTranspose) return false;
  for (size_t k = 0; k < i->dimensions.size(); ++k) {
    if (i->dimensions[k] != static_cast<int64_t>(k)) return true;
  }
  return false;
}

bool IsRowColumnTransposeDotOperand(const Instruction& dot, int64_t operand) {
  const Instruction& transpose = *dot.operand(operand);
  const ir::DotDimensionNumbers& dn = *dot.dot_dnums;
  const std::vector<int64_t>& batch =
      operand == 0 ? dn.lhs_batch_dimensions : dn.rhs_batch_dimensions;
  const std::vector<int64_t>& contracting =
      operand == 0 ? dn.lhs_contracting_dimensions : dn.rhs_contracting_dimensions;
  if (static_cast<int64_t>(batch.size()) != transpose.shape().rank() - 2 ||
      contracting.size() != 1) {
    return false;
  }
  for (int64_t d : batch) {
    if (transpose.dimensions[d] != d) return false;
  }
  return true;
}

std::vector<int64_t> Permute(const std::vector<int64_t>& dims, const std::vector<int64_t>& perm) {
  std::vector<int64_t> out;
  for (int64_t d : dims) out.push_back(perm[d]);
  return out;
}

bool Eligible(const Instruction* i) {
  return i->shape().IsArray() && i->control_predecessors().empty() &&
         i->control_successors().empty();
}

std::vector<int64_t> FoldableDotOperands(const Instruction* dot) {
  std::vector<int64_t> out;
  if (dot->opcode() != Opcode::kDot || !dot->dot_dnums.has_value() || !Eligible(dot) ||
      dot->operand(0)->shape().rank() < 2 || dot->operand(1)->shape().rank() < 2) {
    return out;
  }
  for (int64_t k = 0; k < 2; ++k) {
    if (IsNonIdentityTranspose(dot->operand(k)) && IsRowColumnTransposeDotOperand(*dot, k)) {
      out.push_back(k);
    }
  }
  return out;
}

std::vector<int64_t> FoldableConvolutionOperands(const Instruction* conv) {
  std::vector<int64_t> out;
  if (conv->opcode() != Opcode::kConvolution || !conv->conv_dnums.has_value() || !Eligible(conv)) {
    return out;
  }
  for (int64_t k = 0; k < 2; ++k) {
    if (conv->operand(k)->opcode() == Opcode::kTranspose) out.push_back(k);
  }
  return out;
}

void FoldIntoDot(Instruction* dot, const std::vector<int64_t>& operands) {
  ir::DotDimensionNumbers dn = *dot->dot_dnums;
  Instruction* lhs = dot->operand(0);
  Instruction* rhs = dot->operand(1);
  for (int64_t k : operands) {
    if (k == 0) {
      dn.lhs_contracting_dimensions = Permute(dn.lhs_contracting_dimensions, lhs->dimensions);
      dn.lhs_batch_dimensions = Permute(dn.lhs_batch_dimensions, lhs->dimensions);
      lhs = lhs->operand(0);
    } else {
      dn.rhs_contracting_dimensions = Permute(dn.rhs_contracting_dimensions, rhs->dimensions);
      dn.rhs_batch_dimensions = Permute(dn.rhs_batch_dimensions, rhs->dimensions);
      rhs = rhs->operand(0);
    }
  }
  Instruction* folded = CloneInstruction(*dot, *dot->parent(), {lhs, rhs});
  folded->dot_dnums = dn;
  dot->ReplaceAllUsesWith(folded);
  RemoveInstructionAndUnusedOperands(dot);
}

void FoldIntoConvolution(Instruction* conv, const std::vector<int64_t>& operands) {
  ir::ConvolutionDimensionNumbers dn = *conv->conv_dnums;
  Instruction* lhs = conv->operand(0);
  Instruction* rhs = conv->operand(1);
  for (int64_t k : operands) {
    if (k == 0) {
      const std::vector<int64_t>& perm = lhs->dimensions;
      dn.input_batch_dimension = perm[dn.input_batch_dimension];
      dn.input_feature_dimension = perm[dn.input_feature_dimension];
      dn.input_spatial_dimensions = Permute(dn.input_spatial_dimensions, perm);
      lhs = lhs->operand(0);
    } else {
      const std::vector<int64_t>& perm = rhs->dimensions;
      dn.kernel_input_feature_dimension = perm[dn.kernel_input_feature_dimension];
      dn.kernel_output_feature_dimension = perm[dn.kernel_output_feature_dimension];
      dn.kernel_spatial_dimensions = Permute(dn.kernel_spatial_dimensions, perm);
      rhs = rhs->operand(0);
    }
  }
  Instruction* folded = CloneInstruction(*conv, *conv->parent(), {lhs, rhs});
  folded->conv_dnums = dn;
  conv->ReplaceAllUsesWith(folded);
  RemoveInstructionAndUnusedOperands(conv);
}

class TransposeFolding : public Pass {
 public:
  std::string_view name() const override { return "transpose-folding"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    // A folded transpose may expose another (transpose of transpose); repeat until none folds.
    for (int round = 0; round < kMaxRounds && FoldOnce(module); ++round) changed = true;
    return changed;
  }

 private:
  static constexpr int kMaxRounds = 16;

  static bool FoldOnce(ir::Module& module) {
    const std::unordered_set<const Computation*> fused = FusionComputations(module);
    std::vector<std::pair<Instruction*, std::vector<int64_t>>> dots, convolutions;
    for (Computation* c : module.computations()) {
      if (fused.count(c)) continue;
      for (Instruction* i : c->MakePostOrder()) {
        if (std::vector<int64_t> k = FoldableDotOperands(i); !k.empty()) dots.push_back({i, k});
        if (std::vector<int64_t> k = FoldableConvolutionOperands(i); !k.empty()) {
          convolutions.push_back({i, k});
        }
      }
    }
    for (auto& [dot, operands] : dots) FoldIntoDot(dot, operands);
    for (auto& [conv, operands] : convolutions) FoldIntoConvolution(conv, operands);
    return !dots.empty() || !convolutions.empty();
  }
};

}  // namespace

void RegisterTransposeFolding(Registry& registry) {
  registry.Register({"transpose-folding",
                     "folds operand transposes into dot and convolution dimension numbers",
                     [] { return std::make_unique<TransposeFolding>(); }});
}

}  // namespace mltune::passes
