// bitcast_dtypes_expander: XLA's BitcastDtypesExpander. A bitcast-convert between types of
// different widths becomes a call to a computation (one per pair of shapes) built from same-width
// bitcasts, shifts and masks:
//   wide -> narrow: broadcast each element along a new minor dimension of size R, then element
//                   k = (x >> (k * narrow_bits)) & mask, converted to the narrow unsigned type;
//   narrow -> wide: convert each narrow element to the wide unsigned type, shift element k left
//                   by k * narrow_bits and or-reduce the minor dimension.
// Element k of the minor dimension holds the k-th least significant bits, as the little-endian
// byte order bitcast-convert is defined by. Only byte-multiple widths are expanded.
#include <cctype>
#include <map>
#include <memory>
#include <string>
#include <utility>
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
using ir::Opcode;
using ir::PrimitiveType;
using ir::Shape;

PrimitiveType UnsignedOfWidth(int bits) {
  switch (bits) {
    case 8:
      return PrimitiveType::kU8;
    case 16:
      return PrimitiveType::kU16;
    case 32:
      return PrimitiveType::kU32;
    default:
      return PrimitiveType::kU64;
  }
}

bool IsByteMultiple(PrimitiveType t) {
  const int bits = ir::BitWidth(t);
  return t != PrimitiveType::kPred && !ir::IsComplex(t) &&
         (bits == 8 || bits == 16 || bits == 32 || bits == 64);
}

Instruction* Parameter(Computation& c, int64_t number, const Shape& shape,
                       const std::string& name) {
  auto p = std::make_unique<Instruction>(Opcode::kParameter, shape,
                                         c.parent()->UniqueInstructionName(name));
  p->parameter_number = number;
  return c.AddInstruction(std::move(p));
}

Instruction* BitcastTo(Computation& c, Instruction* x, PrimitiveType type) {
  if (x->shape().element_type() == type) return x;
  return AddInstr(c, Opcode::kBitcastConvert, Shape(type, x->shape().dimensions()), {x});
}

Instruction* Filled(Computation& c, PrimitiveType type, uint64_t value,
                    const std::vector<int64_t>& dims) {
  ir::Literal l = *ir::Literal::Create(Shape::Scalar(type));
  l.SetFromUint64(0, value);
  return MakeBroadcast(c, MakeConstant(c, std::move(l)), dims, {});
}

class BitcastDtypesExpander : public Pass {
 public:
  std::string_view name() const override { return "bitcast_dtypes_expander"; }

  absl::StatusOr<bool> Run(ir::Module& module) override {
    cache_.clear();
    or_computations_.clear();
    bool changed = false;
    for (Computation* c : module.computations()) {
      for (Instruction* i : c->MakePostOrder()) {
        if (i->opcode() != Opcode::kBitcastConvert || !i->shape().IsArray() ||
            !i->shape().is_static() || !i->control_predecessors().empty() ||
            !i->control_successors().empty()) {
          continue;
        }
        const PrimitiveType from = i->operand(0)->shape().element_type();
        const PrimitiveType to = i->shape().element_type();
        if (ir::BitWidth(from) == ir::BitWidth(to) || !IsByteMultiple(from) ||
            !IsByteMultiple(to)) {
          continue;
        }
        Computation* body = Expansion(module, i->operand(0)->shape(), i->shape());
        Instruction* call = AddInstr(*c, Opcode::kCall, i->shape(), {i->operand(0)});
        call->mutable_called_computations().push_back(body);
        i->ReplaceAllUsesWith(call);
        RemoveInstructionAndUnusedOperands(i);
        changed = true;
      }
    }
    return changed;
  }

 private:
  Computation* Expansion(ir::Module& module, const Shape& from_shape, const Shape& to_shape) {
    const std::string key =
        absl::StrCat(from_shape.ToString(false), "->", to_shape.ToString(false));
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    // XLA's name, with the shape text reduced to characters HLO names may hold.
    std::string name = absl::StrCat("xla.bitcast_convert_", from_shape.ToString(false), "_2_",
                                    to_shape.ToString(false));
    for (char& ch : name) {
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_' && ch != '-') {
        ch = '_';
      }
    }
    Computation* c =
        module.AddComputation(std::make_unique<Computation>(UniqueComputationName(module, name)));
    const int in_bits = ir::BitWidth(from_shape.element_type());
    const int out_bits = ir::BitWidth(to_shape.element_type());
    const PrimitiveType in_u = UnsignedOfWidth(in_bits), out_u = UnsignedOfWidth(out_bits);
    Instruction* x =
        Parameter(*c, 0, Shape(from_shape.element_type(), from_shape.dimensions()), "a");
    const int64_t rank = from_shape.rank();
    Instruction* result;
    if (in_bits > out_bits) {
      std::vector<int64_t> wide = from_shape.dimensions();
      wide.push_back(in_bits / out_bits);
      std::vector<int64_t> mapping;
      for (int64_t d = 0; d < rank; ++d) mapping.push_back(d);
      Instruction* spread = MakeBroadcast(*c, x, wide, mapping);
      Instruction* bits = BitcastTo(*c, spread, in_u);
      Instruction* iota = AddInstr(*c, Opcode::kIota, Shape(in_u, wide), {});
      iota->iota_dimension = rank;
      Instruction* amount =
          MakeBinary(*c, Opcode::kMultiply, Filled(*c, in_u, out_bits, wide), iota);
      Instruction* shifted = MakeBinary(*c, Opcode::kShiftRightLogical, bits, amount);
      const uint64_t mask = (uint64_t{1} << out_bits) - 1;
      Instruction* masked = MakeBinary(*c, Opcode::kAnd, shifted, Filled(*c, in_u, mask, wide));
      result = BitcastTo(*c, MakeConvert(*c, masked, out_u), to_shape.element_type());
    } else {
      const std::vector<int64_t>& dims = from_shape.dimensions();
      Instruction* wide = MakeConvert(*c, BitcastTo(*c, x, in_u), out_u);
      Instruction* iota = AddInstr(*c, Opcode::kIota, Shape(out_u, dims), {});
      iota->iota_dimension = rank - 1;
      Instruction* amount =
          MakeBinary(*c, Opcode::kMultiply, Filled(*c, out_u, in_bits, dims), iota);
      Instruction* shifted = MakeBinary(*c, Opcode::kShiftLeft, wide, amount);
      Instruction* zero = MakeScalarConstant(*c, out_u, 0);
      Instruction* reduce =
          AddInstr(*c, Opcode::kReduce, Shape(out_u, to_shape.dimensions()), {shifted, zero});
      reduce->dimensions = {rank - 1};
      reduce->mutable_called_computations().push_back(OrComputation(module, out_u));
      result = BitcastTo(*c, reduce, to_shape.element_type());
    }
    c->set_root(result);
    cache_[key] = c;
    return c;
  }

  Computation* OrComputation(ir::Module& module, PrimitiveType type) {
    auto it = or_computations_.find(type);
    if (it != or_computations_.end()) return it->second;
    Computation* c = module.AddComputation(std::make_unique<Computation>(UniqueComputationName(
        module, absl::StrCat("or_", std::string(ir::PrimitiveTypeName(type))))));
    Instruction* a = Parameter(*c, 0, Shape::Scalar(type), "lhs");
    Instruction* b = Parameter(*c, 1, Shape::Scalar(type), "rhs");
    c->set_root(MakeBinary(*c, Opcode::kOr, a, b));
    or_computations_[type] = c;
    return c;
  }

  std::map<std::string, Computation*> cache_;
  std::map<PrimitiveType, Computation*> or_computations_;
};

}  // namespace

void RegisterBitcastDtypesExpander(Registry& registry) {
  registry.Register({"bitcast_dtypes_expander",
                     "expands bitcast-converts between types of different widths",
                     [] { return std::make_unique<BitcastDtypesExpander>(); }});
}

}  // namespace mltune::passes
