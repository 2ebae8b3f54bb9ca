#include "ir/evaluator/fill_elided.h"

#include <random>
#include <string_view>

#include "absl/strings/str_cat.h"

namespace mltune::ir {
namespace {

// FNV-1a: a stable hash of the name (std::hash may differ between standard libraries).
uint64_t NameHash(std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ULL;
  return h;
}

// Significand bits with the implicit one, so drawn values are exact in the type.
int Precision(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kBF16:
      return 8;
    case PrimitiveType::kF16:
      return 11;
    case PrimitiveType::kF64:
      return 53;
    case PrimitiveType::kF32:
      return 24;
    default:
      return 4;  // f8 types
  }
}

}  // namespace

absl::StatusOr<int64_t> FillElidedConstants(Module& module, uint64_t seed) {
  int64_t filled = 0;
  for (Computation* comp : module.computations()) {
    for (Instruction* c : comp->instructions()) {
      if (c->opcode() != Opcode::kConstant || c->literal.has_value()) continue;
      const Shape& shape = c->shape();
      if (!shape.IsArray()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "constant '", c->name(), "' is elided and not an array: it cannot be filled"));
      }
      absl::StatusOr<Literal> value = Literal::Create(shape);
      if (!value.ok()) return value.status();
      std::mt19937_64 gen(seed ^ NameHash(c->name()));
      const PrimitiveType t = shape.element_type();
      for (int64_t i = 0; i < value->element_count(); ++i) {
        if (t == PrimitiveType::kPred) {
          value->SetFromInt64(i, static_cast<int64_t>(gen() >> 63));
        } else if (IsIntegral(t)) {
          value->SetFromInt64(i, static_cast<int64_t>(gen() >> 61));
        } else if (IsComplex(t)) {
          return absl::InvalidArgumentError(
              absl::StrCat("constant '", c->name(), "' is an elided complex array: not filled"));
        } else {
          const int p = Precision(t);
          value->SetFromDouble(i, static_cast<double>(gen() >> (64 - p)) *
                                          (2.0 / static_cast<double>(uint64_t{1} << p)) -
                                      1.0);
        }
      }
      c->literal = *std::move(value);
      c->literal_elided = false;
      ++filled;
    }
  }
  return filled;
}

}  // namespace mltune::ir
