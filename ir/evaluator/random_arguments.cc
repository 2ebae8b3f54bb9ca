// MakeRandomArguments: seeded, platform-independent random inputs for a module's entry.
// Values come from raw std::mt19937_64 words (std::*_distribution output differs between
// standard libraries).
#include <random>

#include "absl/strings/str_cat.h"
#include "ir/evaluator/evaluator.h"

namespace mltune::ir {
namespace {

// Significand bits (with the implicit one) of each float type, so generated values are exact.
int Precision(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kF16:
      return 11;
    case PrimitiveType::kBF16:
      return 8;
    case PrimitiveType::kF32:
    case PrimitiveType::kC64:
      return 24;
    case PrimitiveType::kF64:
    case PrimitiveType::kC128:
      return 53;
    case PrimitiveType::kF8E5M2:
    case PrimitiveType::kF8E5M2FNUZ:
      return 3;
    default:
      return 4;  // f8 e4m3 variants
  }
}

// A value in [-1, 1) on a grid of 2^(1-p), exactly representable with p significand bits.
double UnitInterval(uint64_t bits, int p) {
  return static_cast<double>(bits >> (64 - p)) * (2.0 / static_cast<double>(uint64_t{1} << p)) -
         1.0;
}

absl::Status Fill(const Shape& shape, std::mt19937_64& gen, Literal& out) {
  if (shape.IsTuple()) {
    for (int64_t i = 0; i < shape.tuple_size(); ++i) {
      if (absl::Status s = Fill(shape.tuple_shapes(i), gen, out.mutable_elements()[i]); !s.ok()) {
        return s;
      }
    }
    return absl::OkStatus();
  }
  if (!shape.IsArray()) return absl::OkStatus();  // tokens carry no data
  const PrimitiveType t = shape.element_type();
  const int64_t n = out.element_count();
  // Common types get typed loops: the corpus has arrays of tens of millions of elements.
  switch (t) {
    case PrimitiveType::kF32:
      for (int64_t i = 0; i < n; ++i) {
        out.Set<float>(i, static_cast<float>(UnitInterval(gen(), 24)));
      }
      return absl::OkStatus();
    case PrimitiveType::kF64:
      for (int64_t i = 0; i < n; ++i) out.Set<double>(i, UnitInterval(gen(), 53));
      return absl::OkStatus();
    case PrimitiveType::kS32:
      for (int64_t i = 0; i < n; ++i) out.Set<int32_t>(i, static_cast<int32_t>(gen() >> 61));
      return absl::OkStatus();
    case PrimitiveType::kU32:
      for (int64_t i = 0; i < n; ++i) out.Set<uint32_t>(i, static_cast<uint32_t>(gen() >> 61));
      return absl::OkStatus();
    default:
      break;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (t == PrimitiveType::kPred) {
      out.SetFromInt64(i, static_cast<int64_t>(gen() >> 63));
    } else if (IsIntegral(t)) {
      out.SetFromInt64(i, static_cast<int64_t>(gen() >> 61));  // [0, 8)
    } else if (IsComplex(t)) {
      const double re = UnitInterval(gen(), Precision(t));
      const double im = UnitInterval(gen(), Precision(t));
      out.SetFromComplex(i, {re, im});
    } else {
      out.SetFromDouble(i, UnitInterval(gen(), Precision(t)));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<Literal>> MakeRandomArguments(const Module& module, uint64_t seed) {
  if (module.entry() == nullptr) return absl::InvalidArgumentError("module has no entry");
  std::mt19937_64 gen(seed);
  std::vector<Literal> args;
  const Computation& entry = *module.entry();
  for (int64_t i = 0; i < entry.parameter_count(); ++i) {
    const Instruction* param = entry.parameter(i);
    if (param == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("entry has no parameter ", i));
    }
    absl::StatusOr<Literal> l = Literal::Create(param->shape());
    if (!l.ok()) return l.status();
    if (absl::Status s = Fill(param->shape(), gen, *l); !s.ok()) return s;
    args.push_back(*std::move(l));
  }
  return args;
}

}  // namespace mltune::ir
