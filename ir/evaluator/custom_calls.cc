// The custom-call registry (target name -> implementation) and the small targets: JAX's
// cuda_threefry2x32 and AWS Neuron's transfer/gelu. The LAPACK-style targets live in
// linalg_custom_calls.cc. Unknown targets are rejected by CheckEvaluable before anything runs.
#include <array>
#include <cmath>
#include <cstring>
#include <map>

#include "absl/strings/str_cat.h"
#include "ir/evaluator/backend_config.h"
#include "ir/evaluator/element_types.h"
#include "ir/evaluator/eval_internal.h"

namespace mltune::ir::eval {
namespace {

uint32_t RotateLeft(uint32_t v, int r) { return (v << r) | (v >> (32 - r)); }

}  // namespace

// Threefry-2x32 with 20 rounds (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"),
// exactly as jax.random's threefry2x32 and XLA compute it.
std::array<uint32_t, 2> Threefry2x32(uint32_t key0, uint32_t key1, uint32_t x0, uint32_t x1) {
  static constexpr int kRotations[2][4] = {{13, 15, 26, 6}, {17, 29, 16, 24}};
  const uint32_t ks[3] = {key0, key1, key0 ^ key1 ^ 0x1BD11BDAu};
  uint32_t x[2] = {x0 + ks[0], x1 + ks[1]};
  for (int block = 0; block < 5; ++block) {
    for (int r : kRotations[block % 2]) {
      x[0] += x[1];
      x[1] = RotateLeft(x[1], r);
      x[1] ^= x[0];
    }
    // Key injection after every four rounds.
    x[0] += ks[(block + 1) % 3];
    x[1] += ks[(block + 2) % 3] + static_cast<uint32_t>(block + 1);
  }
  return {x[0], x[1]};
}

namespace {

// jaxlib's ThreeFry2x32Descriptor { int64 n; }: operands key0, key1, x0, x1 and the two results
// are u32 arrays of n elements each.
absl::StatusOr<Literal> CudaThreefry2x32(Evaluator& ev, const Instruction& instr, Operands& ops) {
  const Shape& shape = instr.shape();
  if (ops.size() != 4 || !shape.IsTuple() || shape.tuple_size() != 2) {
    return Invalid(instr, "cuda_threefry2x32 takes 4 operands and returns a pair");
  }
  const int64_t n = shape.tuple_shapes(0).ElementCount();
  for (int64_t k = 0; k < 4; ++k) {
    if (ops[k].element_type() != PrimitiveType::kU32 || ops[k].element_count() != n) {
      return Invalid(instr, "cuda_threefry2x32 operands must be u32 arrays of one size");
    }
  }
  for (const Shape& s : shape.tuple_shapes()) {
    if (s.element_type() != PrimitiveType::kU32 || s.ElementCount() != n) {
      return Invalid(instr, "cuda_threefry2x32 results must be u32 arrays of the operand size");
    }
  }
  absl::StatusOr<std::string> config = DecodeBackendConfig(instr.backend_config);
  if (!config.ok()) return Invalid(instr, config.status().message());
  if (!config->empty()) {
    DescriptorReader reader(*config);
    absl::StatusOr<int64_t> count = reader.I64();
    if (!count.ok()) return Invalid(instr, count.status().message());
    if (*count != n) {
      return Invalid(instr, absl::StrCat("descriptor says ", *count, " elements, shapes ", n));
    }
  }
  absl::StatusOr<Literal> out = ev.NewLiteral(shape);
  if (!out.ok()) return out.status();
  Literal& y0 = out->mutable_elements()[0];
  Literal& y1 = out->mutable_elements()[1];
  for (int64_t i = 0; i < n; ++i) {
    const std::array<uint32_t, 2> r =
        Threefry2x32(ops[0].Get<uint32_t>(i), ops[1].Get<uint32_t>(i), ops[2].Get<uint32_t>(i),
                     ops[3].Get<uint32_t>(i));
    y0.Set<uint32_t>(i, r[0]);
    y1.Set<uint32_t>(i, r[1]);
  }
  return out;
}

// A transfer between Neuron cores: the value is unchanged.
absl::StatusOr<Literal> AwsNeuronTransferWithStaticRing(Evaluator&, const Instruction& instr,
                                                        Operands& ops) {
  if (ops.size() != 1 || !ops[0].shape().Compatible(instr.shape())) {
    return Invalid(instr, "AwsNeuronTransferWithStaticRing returns its operand's shape");
  }
  return ops.Take(0);
}

// GELU as torch.nn.functional.gelu with approximate="none" (the erf form), which is what
// torch-neuronx lowers to AwsNeuronGelu (the tanh form has its own target). Computed in double
// and rounded once to the element type.
absl::StatusOr<Literal> AwsNeuronGelu(Evaluator& ev, const Instruction& instr, Operands& ops) {
  if (ops.size() != 1 || !ops[0].shape().Compatible(instr.shape()) ||
      !IsFloatingPoint(instr.shape().element_type())) {
    return Invalid(instr, "AwsNeuronGelu maps a float array to the same shape");
  }
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  for (int64_t i = 0; i < out->element_count(); ++i) {
    const double x = ops[0].GetAsDouble(i);
    out->SetFromDouble(i, 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))));
  }
  return out;
}

const std::map<std::string, CustomCallFn, std::less<>>& Registry() {
  static const auto* registry = new std::map<std::string, CustomCallFn, std::less<>>{
      {"cuda_threefry2x32", &CudaThreefry2x32},
      {"AwsNeuronTransferWithStaticRing", &AwsNeuronTransferWithStaticRing},
      {"AwsNeuronGelu", &AwsNeuronGelu},
      {"cusolver_potrf", &CusolverPotrf},
      {"cusolver_getrf", &CusolverGetrf},
      {"cublas_getrf_batched", &CublasGetrfBatched},
      {"cusolver_geqrf", &CusolverGeqrf},
      {"cusolver_orgqr", &CusolverOrgqr},
      {"cublas_trsm_batched", &CublasTrsmBatched},
      {"cuda_lu_pivots_to_permutation", &LuPivotsToPermutation},
  };
  return *registry;
}

}  // namespace

CustomCallFn FindCustomCall(std::string_view target) {
  auto it = Registry().find(target);
  return it == Registry().end() ? nullptr : it->second;
}

std::vector<std::string> CustomCallTargets() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : Registry()) names.push_back(name);
  return names;
}

absl::StatusOr<Literal> HandleCustomCall(Evaluator& ev, const Instruction& instr, Operands& ops) {
  CustomCallFn fn = FindCustomCall(instr.custom_call_target);
  if (fn == nullptr) {
    return absl::UnimplementedError(absl::StrCat("custom-call target \"", instr.custom_call_target,
                                                 "\" has no evaluator implementation"));
  }
  return fn(ev, instr, ops);
}

}  // namespace mltune::ir::eval
