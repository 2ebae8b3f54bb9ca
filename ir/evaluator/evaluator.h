// Reference evaluator: runs a module on concrete inputs. Written to be obviously right rather
// than fast; it is the oracle that proves passes preserve semantics.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/literal.h"
#include "ir/module.h"

namespace mltune::ir {

struct EvalOptions {
  // Refuse any intermediate array larger than this, rather than allocating it.
  int64_t max_array_bytes = int64_t{1} << 30;
  // Refuse after this many while-loop iterations in total (guards against non-terminating loops).
  int64_t max_loop_iterations = 1'000'000;
  // Seed of the `rng` op's deterministic stream (uniform and normal distributions).
  uint64_t rng_seed = 0;
  // Monte Carlo arithmetic, to see how much each output depends on rounding: when > 0, the result
  // of every op that rounds (arithmetic elementwise ops; the sums of dot, convolution and
  // add-reductions) gets a random error of up to this many units in the last place of its type,
  // a sum of K terms up to sqrt(K) times as many of the terms' total magnitude. Evaluations that
  // differ only in `noise_seed` differ where an output is ill-conditioned. `noise_negated` draws
  // the same errors with the opposite sign (antithetic pairs). 0: exact reference semantics.
  double rounding_noise_ulps = 0;
  uint64_t noise_seed = 0;
  bool noise_negated = false;
};

// Evaluates the entry computation on `arguments` (one per entry parameter, shapes must match).
absl::StatusOr<Literal> Evaluate(const Module& module, const std::vector<Literal>& arguments,
                                 const EvalOptions& options = {});

// A LAPACK-style custom-call (cusolver_potrf, cusolver_getrf, cublas_getrf_batched,
// cusolver_geqrf, cusolver_orgqr, cublas_trsm_batched) as the evaluator reads it: jaxlib's
// descriptor (the backend_config) decoded and checked against the operands, so that a backend
// computes the same call (ir/linalg has the algorithms).
struct LinalgCall {
  int64_t batch = 0, m = 0, n = 0;
  int64_t k = 0;               // min(m, n) (getrf, geqrf); reflectors (orgqr); a's order (trsm)
  bool lower = true;           // potrf, trsm: the triangle read
  bool left_side = true;       // trsm: op(a) x = b, else x op(a) = b
  bool transpose = false;      // trsm: op(a) = a^T
  bool unit_diagonal = false;  // trsm
};
absl::StatusOr<LinalgCall> DecodeLinalgCall(const Instruction& instr);

// Seeded random arguments for the entry parameters: floats uniform in [-1, 1), integers in a
// small range, preds fair coins. The same seed gives the same arguments.
absl::StatusOr<std::vector<Literal>> MakeRandomArguments(const Module& module, uint64_t seed);

// OK when the evaluator supports every instruction the module can reach; otherwise an
// Unimplemented error naming the first one it cannot run and why.
absl::Status CheckEvaluable(const Module& module);

}  // namespace mltune::ir
