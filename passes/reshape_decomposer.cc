// reshape-decomposer: XLA's ReshapeDecomposer, in this IR's layout-free setting. XLA splits a
// reshape that is not a bitcast under the operand's and result's layouts into a bitcast plus a
// copy (a physical transposition). Without layouts, the corresponding notion of a "simple" reshape
// is one that only merges runs of adjacent dimensions (a collapse) or only splits dimensions (an
// expansion): these are free re-indexings of a row-major buffer. Any other reshape is decomposed
// into a collapse to the coarsest shape both sides share (XLA's CommonFactors groups) followed by
// an expansion, e.g. [6,4] -> [4,6] becomes [6,4] -> [24] -> [4,6]. Reshapes preserve row-major
// order, so the pair computes exactly the original reshape.
#include <memory>
#include <vector>

#include "ir/hlo_builder.h"
#include "ir/module.h"
#include "passes/algsimp_internal.h"
#include "passes/pass.h"
#include "passes/registry.h"

namespace mltune::passes {
namespace {

using ir::Computation;
using ir::Instruction;
using ir::Opcode;

// Dimensions of the shape that merges each CommonFactors group of `from` into one dimension.
std::vector<int64_t> Collapsed(const std::vector<int64_t>& from, const std::vector<int64_t>& to,
                               bool* from_is_collapsed, bool* to_is_collapsed) {
  const auto bounds = algsimp::CommonFactors(from, to);
  std::vector<int64_t> dims;
  *from_is_collapsed = *to_is_collapsed = true;
  for (size_t k = 1; k < bounds.size(); ++k) {
    const auto [i0, j0] = bounds[k - 1];
    const auto [i1, j1] = bounds[k];
    int64_t product = 1;
    for (int64_t i = i0; i < i1; ++i) product *= from[i];
    // A group of 1-sized dimensions on one side only merges into its neighbour's group.
    if (i1 - i0 > 1) *from_is_collapsed = false;
    if (j1 - j0 > 1) *to_is_collapsed = false;
    if (i1 == i0 || j1 == j0) continue;
    dims.push_back(product);
  }
  return dims;
}

class ReshapeDecomposer : public Pass {
 public:
  std::string_view name() const override { return "reshape-decomposer"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    bool changed = false;
    for (Computation* c : module.computations()) {
      for (Instruction* reshape : c->MakePostOrder()) {
        if (reshape->opcode() != Opcode::kReshape || !reshape->shape().IsArray() ||
            !reshape->shape().is_static() || !reshape->operand(0)->shape().is_static() ||
            reshape->shape().ElementCount() == 0 || !reshape->control_predecessors().empty() ||
            !reshape->control_successors().empty()) {
          continue;
        }
        const std::vector<int64_t>& from = reshape->operand(0)->shape().dimensions();
        const std::vector<int64_t>& to = reshape->shape().dimensions();
        bool from_groups_single = false, to_groups_single = false;
        const std::vector<int64_t> middle =
            Collapsed(StripOnes(from), StripOnes(to), &from_groups_single, &to_groups_single);
        // A pure collapse (each output group one dimension) or pure expansion stays.
        if (from_groups_single || to_groups_single) continue;
        Instruction* collapse = MakeReshape(*c, reshape->operand(0), middle);
        Instruction* expand = MakeReshape(*c, collapse, to);
        reshape->ReplaceAllUsesWith(expand);
        RemoveInstructionAndUnusedOperands(reshape);
        changed = true;
      }
    }
    return changed;
  }

 private:
  // 1-sized dimensions can be inserted or dropped by either half freely.
  static std::vector<int64_t> StripOnes(const std::vector<int64_t>& dims) {
    std::vector<int64_t> out;
    for (int64_t d : dims) {
      if (d != 1) out.push_back(d);
    }
    return out;
  }
};

}  // namespace

void RegisterReshapeDecomposer(Registry& registry) {
  registry.Register({"reshape-decomposer",
                     "splits a reshape that is neither a pure collapse nor a pure expansion",
                     [] { return std::make_unique<ReshapeDecomposer>(); }});
}

}  // namespace mltune::passes
