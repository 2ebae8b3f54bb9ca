#include "backends/cpu/hlo_rewrites.h"

#include <memory>
#include <vector>

#include "ir/hlo_builder.h"
#include "passes/while_util.h"

namespace mltune::backends::cpu {
namespace {

using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;
using ir::Shape;

bool IsLowPrecision(PrimitiveType t) {
  return t == PrimitiveType::kBF16 || t == PrimitiveType::kF16;
}

// A dot or convolution of bf16/f16 the f32 GEMMs can compute: array operands and result, every
// type bf16, f16 or f32, at least one of them 16-bit.
bool RunsInF32(const Instruction& op) {
  if (op.opcode() != Opcode::kDot && op.opcode() != Opcode::kConvolution) return false;
  if (op.operand_count() != 2 || !op.shape().IsArray()) return false;
  bool low = false;
  for (const Shape* s : {&op.shape(), &op.operand(0)->shape(), &op.operand(1)->shape()}) {
    if (!s->IsArray()) return false;
    const PrimitiveType t = s->element_type();
    if (t != PrimitiveType::kF32 && !IsLowPrecision(t)) return false;
    low |= IsLowPrecision(t);
  }
  return low;
}

// The comparator of a topk's sort: compare(p0, p1) over the values (total order for floats),
// parameters p2, p3 for the indices unused.
ir::Computation* TopKComparator(ir::Module& module, PrimitiveType values, PrimitiveType indices,
                                bool largest) {
  ir::Computation* c = module.AddComputation(
      std::make_unique<ir::Computation>(ir::UniqueComputationName(module, "topk_compare")));
  Instruction* a = passes::MakeParameter(*c, 0, Shape::Scalar(values), "lhs");
  Instruction* b = passes::MakeParameter(*c, 1, Shape::Scalar(values), "rhs");
  passes::MakeParameter(*c, 2, Shape::Scalar(indices), "lhs_index");
  passes::MakeParameter(*c, 3, Shape::Scalar(indices), "rhs_index");
  Instruction* cmp = ir::MakeCompare(
      *c, largest ? ir::ComparisonDirection::kGt : ir::ComparisonDirection::kLt, a, b);
  if (ir::IsFloatingPoint(values)) cmp->comparison_type = ir::ComparisonType::kFloatTotalOrder;
  c->set_root(cmp);
  return c;
}

}  // namespace

int64_t UpcastLowPrecisionMatrixOps(ir::Module& module) {
  int64_t rewritten = 0;
  for (ir::Computation* comp : module.computations()) {
    for (Instruction* op : comp->MakePostOrder()) {
      if (!RunsInF32(*op)) continue;
      std::vector<Instruction*> operands;
      for (Instruction* x : op->operands()) {
        operands.push_back(x->shape().element_type() == PrimitiveType::kF32
                               ? x
                               : ir::MakeConvert(*comp, x, PrimitiveType::kF32));
      }
      Instruction* f32 = ir::CloneInstruction(*op, *comp, operands);
      f32->mutable_shape().set_element_type(PrimitiveType::kF32);
      const PrimitiveType t = op->shape().element_type();
      Instruction* result = t == PrimitiveType::kF32 ? f32 : ir::MakeConvert(*comp, f32, t);
      ir::ReplaceInstruction(op, result);
      ++rewritten;
    }
  }
  return rewritten;
}

int64_t DecomposeTopK(ir::Module& module) {
  int64_t rewritten = 0;
  for (ir::Computation* comp : module.computations()) {
    for (Instruction* topk : comp->MakePostOrder()) {
      if (topk->opcode() != Opcode::kTopK || topk->operand_count() != 1 ||
          !topk->shape().IsTuple() || topk->shape().tuple_size() != 2) {
        continue;
      }
      Instruction* x = topk->operand(0);
      const Shape& indices_shape = topk->shape().tuple_shapes(1);
      if (!x->shape().IsArray() || x->shape().rank() < 1 || !indices_shape.IsArray()) continue;
      const std::vector<int64_t>& dims = x->shape().dimensions();
      const int64_t last = x->shape().rank() - 1;
      const PrimitiveType index_type = indices_shape.element_type();
      Instruction* iota = ir::AddInstr(*comp, Opcode::kIota, Shape(index_type, dims), {});
      iota->iota_dimension = last;
      Instruction* sort = ir::AddInstr(
          *comp, Opcode::kSort,
          Shape::Tuple({Shape(x->shape().element_type(), dims), Shape(index_type, dims)}),
          {x, iota}, "topk_sort");
      sort->dimensions = {last};
      sort->is_stable = true;
      sort->mutable_called_computations().push_back(
          TopKComparator(module, x->shape().element_type(), index_type, topk->topk_largest));
      std::vector<ir::SliceDim> slice;
      for (int64_t d = 0; d <= last; ++d) {
        slice.push_back({0, d == last ? topk->topk_k : dims[static_cast<size_t>(d)], 1});
      }
      Instruction* parts[2];
      for (int64_t i = 0; i < 2; ++i) {
        parts[i] = ir::MakeSlice(*comp, ir::MakeGetTupleElement(*comp, sort, i), slice);
      }
      // Readers of one result read its slice; anything else (a root) reads a tuple of them.
      const std::vector<Instruction*> users = topk->users();
      for (Instruction* u : users) {
        if (u->opcode() == Opcode::kGetTupleElement && u->tuple_index >= 0 && u->tuple_index < 2) {
          ir::ReplaceInstruction(u, parts[u->tuple_index]);
        }
      }
      if (topk->user_count() > 0 || comp->root() == topk) {
        ir::ReplaceInstruction(topk, ir::MakeTuple(*comp, {parts[0], parts[1]}));
      } else {
        (void)comp->RemoveInstruction(topk);
      }
      ++rewritten;
    }
  }
  return rewritten;
}

}  // namespace mltune::backends::cpu
