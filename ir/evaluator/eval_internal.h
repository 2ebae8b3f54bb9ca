// Internal to the evaluator: the Evaluator that walks computations, the operand view handed to
// each op handler, and the handlers implemented in the other files of this folder.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "ir/evaluator/evaluator.h"
#include "ir/instruction.h"
#include "ir/literal.h"

namespace mltune::ir::eval {

// One evaluated value of a computation frame: owned by the frame, or borrowed from the caller.
struct Value {
  Literal owned;
  const Literal* ptr = nullptr;
  bool is_owned = false;
};

// The operands of the instruction being evaluated.
class Operands {
 public:
  int64_t size() const { return static_cast<int64_t>(values_.size()); }
  const Literal& operator[](int64_t i) const { return *values_[i]->ptr; }
  // Operand i by value: moved out when this instruction is its last reader, else copied.
  Literal Take(int64_t i);
  // True when Take(i) moves rather than copies.
  bool CanTake(int64_t i) const { return movable_[i] != 0; }
  // Element `index` of tuple operand i by value, moved out when no one else can read it.
  Literal TakeTupleElement(int64_t i, int64_t index);

 private:
  friend class Evaluator;
  std::vector<Value*> values_;
  std::vector<uint8_t> movable_;           // this instruction is the operand's last reader
  std::vector<uint8_t> elements_movable_;  // readers are GTEs of distinct indices
};

class Evaluator {
 public:
  explicit Evaluator(const EvalOptions& options);
  ~Evaluator();

  // Runs `computation` on arguments it owns (it may move from them).
  absl::StatusOr<Literal> Run(const Computation& computation, std::vector<Literal> args);
  // Runs `computation` on borrowed arguments.
  absl::StatusOr<Literal> Run(const Computation& computation,
                              const std::vector<const Literal*>& args);

  // A zero-filled literal of `shape`, refused with ResourceExhausted past max_array_bytes.
  absl::StatusOr<Literal> NewLiteral(const Shape& shape) const;
  const EvalOptions& options() const { return options_; }
  // Deterministic random bits for rng ops, from EvalOptions::rng_seed.
  uint64_t NextRandom() { return rng_(); }
  // rng-get-and-update-state: the current 128-bit generator state as {low, high} words, then
  // advances it by `delta`. The state starts at a value derived from EvalOptions::rng_seed, so
  // each evaluation is deterministic and every execution (a loop iteration, say) sees a new one.
  std::array<uint64_t, 2> GetAndUpdateRngState(int64_t delta);
  // Counts one while-loop iteration; fails past EvalOptions::max_loop_iterations.
  absl::Status CountLoopIteration(const Instruction& loop);

 private:
  struct Plan;
  const Plan& GetPlan(const Computation& computation);
  absl::StatusOr<Literal> RunFrame(const Computation& computation, std::vector<Literal>* owned,
                                   const std::vector<const Literal*>* borrowed);
  absl::StatusOr<Literal> Dispatch(const Instruction& instr, Operands& ops);
  // Dispatch, plus EvalOptions::rounding_noise_ulps on the result of an op that rounds.
  absl::StatusOr<Literal> DispatchWithNoise(const Instruction& instr, Operands& ops);
  // A uniform draw in [-1, 1] of the rounding-noise stream (negated under noise_negated).
  double NextNoise();

  EvalOptions options_;
  std::mt19937_64 rng_;
  std::mt19937_64 noise_rng_;  // apart from rng_, so noise leaves rng ops' streams unchanged
  std::array<uint64_t, 2> rng_state_;  // {low, high} of the 128-bit rng-get-and-update-state
  int64_t loop_iterations_ = 0;
  std::unordered_map<const Computation*, std::unique_ptr<Plan>> plans_;
};

using Handler = absl::StatusOr<Literal> (*)(Evaluator& ev, const Instruction& instr, Operands& ops);

// Why the evaluator cannot run `instr`, or nullopt when it can (opcode, target, shapes).
std::optional<std::string> UnsupportedReason(const Instruction& instr);

// --- elementwise.cc ---
absl::StatusOr<Literal> HandleElementwise(Evaluator& ev, const Instruction& instr, Operands& ops);
// `operand` converted element-wise to `type` with XLA's convert semantics.
absl::StatusOr<Literal> ConvertLiteral(Evaluator& ev, const Literal& operand, PrimitiveType type);

// --- shape_ops.cc ---
absl::StatusOr<Literal> HandleBroadcast(Evaluator& ev, const Instruction& instr, Operands& ops);
absl::StatusOr<Literal> HandleReshape(Evaluator& ev, const Instruction& instr, Operands& ops);
absl::StatusOr<Literal> HandleTranspose(Evaluator& ev, const Instruction& instr, Operands& ops);
absl::StatusOr<Literal> HandleSlice(Evaluator& ev, const Instruction& instr, Operands& ops);
absl::StatusOr<Literal> HandleDynamicSlice(Evaluator& ev, const Instruction& instr, Operands& ops);
absl::StatusOr<Literal> HandleDynamicUpdateSlice(Evaluator& ev, const Instruction& instr,
                                                 Operands& ops);
absl::StatusOr<Literal> HandleConcatenate(Evaluator& ev, const Instruction& instr, Operands& ops);
absl::StatusOr<Literal> HandlePad(Evaluator& ev, const Instruction& instr, Operands& ops);
absl::StatusOr<Literal> HandleReverse(Evaluator& ev, const Instruction& instr, Operands& ops);
absl::StatusOr<Literal> HandleIota(Evaluator& ev, const Instruction& instr, Operands& ops);
absl::StatusOr<Literal> HandleGetDimensionSize(Evaluator& ev, const Instruction& instr,
                                               Operands& ops);

// --- gather_scatter.cc ---
absl::StatusOr<Literal> HandleGather(Evaluator& ev, const Instruction& instr, Operands& ops);
absl::StatusOr<Literal> HandleScatter(Evaluator& ev, const Instruction& instr, Operands& ops);

// --- reduce_ops.cc ---
absl::StatusOr<Literal> HandleReduce(Evaluator& ev, const Instruction& instr, Operands& ops);
absl::StatusOr<Literal> HandleReduceWindow(Evaluator& ev, const Instruction& instr, Operands& ops);
absl::StatusOr<Literal> HandleSelectAndScatter(Evaluator& ev, const Instruction& instr,
                                               Operands& ops);
absl::StatusOr<Literal> HandleMap(Evaluator& ev, const Instruction& instr, Operands& ops);

// --- batch_norm.cc ---
absl::StatusOr<Literal> HandleBatchNormTraining(Evaluator& ev, const Instruction& instr,
                                                Operands& ops);
absl::StatusOr<Literal> HandleBatchNormInference(Evaluator& ev, const Instruction& instr,
                                                 Operands& ops);
absl::StatusOr<Literal> HandleBatchNormGrad(Evaluator& ev, const Instruction& instr, Operands& ops);

// --- dot_conv.cc ---
absl::StatusOr<Literal> HandleDot(Evaluator& ev, const Instruction& instr, Operands& ops);
absl::StatusOr<Literal> HandleConvolution(Evaluator& ev, const Instruction& instr, Operands& ops);

// --- sort.cc ---
absl::StatusOr<Literal> HandleSort(Evaluator& ev, const Instruction& instr, Operands& ops);
absl::StatusOr<Literal> HandleTopK(Evaluator& ev, const Instruction& instr, Operands& ops);

// --- linalg.cc (HLO ops) ---
absl::StatusOr<Literal> HandleCholesky(Evaluator& ev, const Instruction& instr, Operands& ops);
absl::StatusOr<Literal> HandleTriangularSolve(Evaluator& ev, const Instruction& instr,
                                              Operands& ops);

// --- rng.cc ---
absl::StatusOr<Literal> HandleRng(Evaluator& ev, const Instruction& instr, Operands& ops);
absl::StatusOr<Literal> HandleRngBitGenerator(Evaluator& ev, const Instruction& instr,
                                              Operands& ops);
absl::StatusOr<Literal> HandleRngGetAndUpdateState(Evaluator& ev, const Instruction& instr,
                                                   Operands& ops);
// The `delta=` of rng-get-and-update-state, or why it cannot be run (missing, not an integer, or a
// result shape other than u64[2]).
absl::StatusOr<int64_t> RngStateDelta(const Instruction& instr);
// The initial 128-bit state of rng-get-and-update-state for `seed`, as {low, high}.
std::array<uint64_t, 2> InitialRngState(uint64_t seed);

// --- fft.cc ---
absl::StatusOr<Literal> HandleFft(Evaluator& ev, const Instruction& instr, Operands& ops);

// --- custom_calls.cc: target name -> implementation ---
using CustomCallFn = Handler;
// The implementation of a custom-call target, or nullptr when the evaluator has none.
CustomCallFn FindCustomCall(std::string_view target);
std::vector<std::string> CustomCallTargets();
absl::StatusOr<Literal> HandleCustomCall(Evaluator& ev, const Instruction& instr, Operands& ops);
// Threefry-2x32, 20 rounds: the block function behind cuda_threefry2x32.
std::array<uint32_t, 2> Threefry2x32(uint32_t key0, uint32_t key1, uint32_t x0, uint32_t x1);

// --- linalg_custom_calls.cc: jaxlib's GPU LAPACK-style targets ---
absl::StatusOr<Literal> CusolverPotrf(Evaluator& ev, const Instruction& instr, Operands& ops);
absl::StatusOr<Literal> CusolverGetrf(Evaluator& ev, const Instruction& instr, Operands& ops);
absl::StatusOr<Literal> CublasGetrfBatched(Evaluator& ev, const Instruction& instr, Operands& ops);
absl::StatusOr<Literal> CusolverGeqrf(Evaluator& ev, const Instruction& instr, Operands& ops);
absl::StatusOr<Literal> CusolverOrgqr(Evaluator& ev, const Instruction& instr, Operands& ops);
absl::StatusOr<Literal> CublasTrsmBatched(Evaluator& ev, const Instruction& instr, Operands& ops);
absl::StatusOr<Literal> LuPivotsToPermutation(Evaluator& ev, const Instruction& instr,
                                              Operands& ops);

// --- scalar_fn.cc: recognising the tiny computations reducers and comparators are ---
// A two-parameter scalar computation that is one binary op on its parameters, or returns one.
struct SimpleBinary {
  enum Kind { kOp, kFirst, kSecond };
  Kind kind = kOp;
  Opcode op = Opcode::kAdd;
  bool swapped = false;  // root is op(param1, param0)
};
std::optional<SimpleBinary> MatchSimpleBinary(const Computation& computation);
// A comparator whose root is compare(param(a), param(b)) of two parameters of the same type.
struct SimpleCompare {
  int64_t lhs_param = 0;
  int64_t rhs_param = 1;
  ComparisonDirection direction = ComparisonDirection::kLt;
  bool total_order = false;
};
std::optional<SimpleCompare> MatchSimpleCompare(const Computation& computation);

// Interprets a scalar computation repeatedly on element bytes: reducers, comparators and
// combiners that are not a single op.
class ScalarCall {
 public:
  // `arg_types` are the parameter types; `result_types` the scalar results (a tuple when more
  // than one).
  static absl::StatusOr<ScalarCall> Make(Evaluator& ev, const Computation& computation,
                                         const std::vector<PrimitiveType>& arg_types,
                                         const std::vector<PrimitiveType>& result_types);
  // Copies one element's bytes into argument k.
  void SetArg(int64_t k, const uint8_t* element);
  absl::Status Call();
  // The bytes of scalar result k of the last Call.
  const uint8_t* Result(int64_t k) const;

 private:
  Evaluator* ev_ = nullptr;
  const Computation* computation_ = nullptr;
  std::vector<Literal> args_;
  std::vector<const Literal*> arg_ptrs_;
  std::vector<PrimitiveType> result_types_;
  Literal result_;
};

// Error helpers.
absl::Status Invalid(const Instruction& instr, absl::string_view what);

}  // namespace mltune::ir::eval
