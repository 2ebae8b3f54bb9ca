// Internal to backends/cpu: the custom-calls the backend computes itself, as ir/evaluator's
// registry defines them: framework markers (elementwise functions of one operand, loop ops) and
// routines over whole buffers (library kernels).
#pragma once

#include <string>
#include <string_view>

#include "ir/module.h"

namespace mltune::backends::cpu::internal {

enum class KnownCustomCall {
  kNone,
  kIdentity,  // AwsNeuronTransferWithStaticRing: a transfer between Neuron cores
  kGeluErf,   // AwsNeuronGelu: GELU, the erf form
};

// kNone unless `instr` is a custom-call of a known target with one array operand of its shape.
KnownCustomCall FindKnownCustomCall(const ir::Instruction& instr);

// The C++ expression of `call` on the operand's value `x` of C type `ctype`, with the math
// functions of namespace `std_ns` ("std::", or the GPU prelude's).
std::string KnownCustomCallExpr(KnownCustomCall call, const std::string& x, std::string_view ctype,
                                std::string_view std_ns = "std::");

enum class LibraryCall {
  kNone,
  kThreefry2x32,  // JAX's cuda_threefry2x32: (key0, key1, x0, x1) -> (y0, y1), u32 arrays of n
  // JAX's LAPACK-style calls (ir::DecodeLinalgCall), run by the runner's runtime routines.
  kPotrf,  // cusolver_potrf: (a) -> (factor, info, workspace)
  kGetrf,  // cusolver_getrf, cublas_getrf_batched: (a) -> (lu, pivots, info, [workspace])
  kGeqrf,  // cusolver_geqrf: (a) -> (qr, taus, info, workspace)
  kOrgqr,  // cusolver_orgqr: (a, taus) -> (q, info, workspace)
  kTrsm,   // cublas_trsm_batched: (a, b) -> (x, workspace, workspace)
  kLuPivotsToPermutation,  // cuda_lu_pivots_to_permutation: s32 pivots -> s32 permutation
};

// kNone unless `instr` is a custom-call of a known library target with the operands and result
// shapes the target takes.
LibraryCall FindLibraryCall(const ir::Instruction& instr);

}  // namespace mltune::backends::cpu::internal
