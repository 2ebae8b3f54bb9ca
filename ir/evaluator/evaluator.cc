// The computation walk, opcode dispatch and control flow (while, conditional, call, fusion),
// plus the public entry points Evaluate and CheckEvaluable.
#include "ir/evaluator/evaluator.h"

#include <algorithm>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "ir/computation.h"
#include "ir/evaluator/eval_internal.h"
#include "ir/evaluator/rng_bits.h"
#include "ir/evaluator/rounding_noise.h"
#include "ir/module.h"

namespace mltune::ir {
namespace eval {
namespace {

std::string Name(Opcode op) { return std::string(OpcodeName(op)); }

// Instructions of `c` reachable from its root through operands and control edges, in post-order.
std::vector<const Instruction*> ReachablePostOrder(const Computation& c) {
  std::unordered_set<const Instruction*> live;
  std::vector<const Instruction*> stack;
  if (c.root() != nullptr) {
    live.insert(c.root());
    stack.push_back(c.root());
  }
  while (!stack.empty()) {
    const Instruction* i = stack.back();
    stack.pop_back();
    for (const Instruction* op : i->operands()) {
      if (live.insert(op).second) stack.push_back(op);
    }
    for (const Instruction* op : i->control_predecessors()) {
      if (live.insert(op).second) stack.push_back(op);
    }
  }
  std::vector<const Instruction*> order;
  for (const Instruction* i : c.MakePostOrder()) {
    if (live.count(i)) order.push_back(i);
  }
  return order;
}

absl::Status Annotate(const absl::Status& status, const Instruction& instr) {
  return absl::Status(status.code(), absl::StrCat(instr.name(), ": ", status.message()));
}

}  // namespace

absl::Status Invalid(const Instruction& instr, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(Name(instr.opcode()), ": ", what));
}

Literal Operands::Take(int64_t i) {
  Value* v = values_[i];
  if (movable_[i]) {
    v->is_owned = false;
    return std::move(v->owned);
  }
  return *v->ptr;
}

Literal Operands::TakeTupleElement(int64_t i, int64_t index) {
  Value* v = values_[i];
  if (elements_movable_[i]) return std::move(v->owned.mutable_elements()[index]);
  return v->ptr->elements()[index];
}

struct Evaluator::Plan {
  std::vector<const Instruction*> order;
  std::vector<std::vector<int>> operand_slots;
  std::vector<int> uses;              // operand slots that read each value
  std::vector<uint8_t> gte_distinct;  // every reader is a GTE, no two of the same index
  int root = -1;
};

Evaluator::Evaluator(const EvalOptions& options)
    : options_(options),
      rng_(options.rng_seed),
      noise_rng_(options.noise_seed),
      rng_state_(InitialRngState(options.rng_seed)) {}
Evaluator::~Evaluator() = default;

const Evaluator::Plan& Evaluator::GetPlan(const Computation& computation) {
  auto it = plans_.find(&computation);
  if (it != plans_.end()) return *it->second;
  auto plan = std::make_unique<Plan>();
  plan->order = ReachablePostOrder(computation);
  std::unordered_map<const Instruction*, int> position;
  for (size_t i = 0; i < plan->order.size(); ++i) position[plan->order[i]] = static_cast<int>(i);
  const size_t n = plan->order.size();
  plan->operand_slots.resize(n);
  plan->uses.assign(n, 0);
  std::vector<std::vector<int64_t>> gte_indices(n);
  std::vector<uint8_t> only_gte(n, 1);
  for (size_t i = 0; i < n; ++i) {
    const Instruction* instr = plan->order[i];
    for (const Instruction* op : instr->operands()) {
      const int s = position.at(op);
      plan->operand_slots[i].push_back(s);
      ++plan->uses[s];
      if (instr->opcode() == Opcode::kGetTupleElement) {
        gte_indices[s].push_back(instr->tuple_index);
      } else {
        only_gte[s] = 0;
      }
    }
  }
  plan->gte_distinct.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    std::vector<int64_t>& g = gte_indices[i];
    std::sort(g.begin(), g.end());
    plan->gte_distinct[i] =
        only_gte[i] && !g.empty() && std::adjacent_find(g.begin(), g.end()) == g.end();
  }
  if (computation.root() != nullptr) plan->root = position.at(computation.root());
  const Plan& ref = *plan;
  plans_[&computation] = std::move(plan);
  return ref;
}

absl::StatusOr<Literal> Evaluator::Run(const Computation& computation, std::vector<Literal> args) {
  return RunFrame(computation, &args, nullptr);
}

absl::StatusOr<Literal> Evaluator::Run(const Computation& computation,
                                       const std::vector<const Literal*>& args) {
  return RunFrame(computation, nullptr, &args);
}

absl::StatusOr<Literal> Evaluator::RunFrame(const Computation& computation,
                                            std::vector<Literal>* owned,
                                            const std::vector<const Literal*>* borrowed) {
  const Plan& plan = GetPlan(computation);
  if (plan.root < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("computation ", computation.name(), " has no root"));
  }
  const int64_t arg_count =
      static_cast<int64_t>(owned != nullptr ? owned->size() : borrowed->size());
  if (arg_count != computation.parameter_count()) {
    return absl::InvalidArgumentError(absl::StrCat("computation ", computation.name(), " takes ",
                                                   computation.parameter_count(),
                                                   " arguments, got ", arg_count));
  }
  std::vector<Value> values(plan.order.size());
  std::vector<int> remaining = plan.uses;
  Operands ops;
  for (size_t pos = 0; pos < plan.order.size(); ++pos) {
    const Instruction& instr = *plan.order[pos];
    Value& v = values[pos];
    if (instr.opcode() == Opcode::kParameter) {
      const int64_t n = instr.parameter_number;
      if (n < 0 || n >= arg_count) return Invalid(instr, "parameter number out of range");
      if (owned != nullptr) {
        v.owned = std::move((*owned)[n]);
        v.ptr = &v.owned;
        v.is_owned = true;
      } else {
        v.ptr = (*borrowed)[n];
      }
      continue;
    }
    if (instr.opcode() == Opcode::kConstant) {
      if (!instr.literal.has_value()) {
        return absl::UnimplementedError(
            absl::StrCat(instr.name(),
                         ": constant has an elided literal (printed as {...}); its value is "
                         "unknown (fill such constants with seeded values: mltune run "
                         "--fill-elided SEED, or MLTUNE_FILL_ELIDED=SEED)"));
      }
      v.ptr = &*instr.literal;  // constants are read in place, never copied
      continue;
    }
    const std::vector<int>& slots = plan.operand_slots[pos];
    ops.values_.clear();
    ops.movable_.clear();
    ops.elements_movable_.clear();
    for (int s : slots) {
      ops.values_.push_back(&values[s]);
      const bool mine = values[s].is_owned && s != plan.root;
      const bool once = std::count(slots.begin(), slots.end(), s) == 1;
      ops.movable_.push_back(mine && once && remaining[s] == 1);
      ops.elements_movable_.push_back(mine && plan.gte_distinct[s]);
    }
    absl::StatusOr<Literal> result =
        options_.rounding_noise_ulps > 0 ? DispatchWithNoise(instr, ops) : Dispatch(instr, ops);
    if (!result.ok()) return Annotate(result.status(), instr);
    v.owned = *std::move(result);
    v.ptr = &v.owned;
    v.is_owned = true;
    for (int s : slots) {
      if (--remaining[s] == 0 && s != plan.root) {
        values[s].owned = Literal();
        values[s].is_owned = false;
        values[s].ptr = nullptr;
      }
    }
  }
  Value& root = values[plan.root];
  if (root.is_owned) return std::move(root.owned);
  return *root.ptr;
}

absl::StatusOr<Literal> Evaluator::NewLiteral(const Shape& shape) const {
  if (shape.IsTuple()) {
    std::vector<Literal> elements;
    for (const Shape& s : shape.tuple_shapes()) {
      absl::StatusOr<Literal> e = NewLiteral(s);
      if (!e.ok()) return e.status();
      elements.push_back(*std::move(e));
    }
    return Literal::MakeTuple(std::move(elements));
  }
  return Literal::Create(shape, options_.max_array_bytes);
}

std::array<uint64_t, 2> Evaluator::GetAndUpdateRngState(int64_t delta) {
  const std::array<uint64_t, 2> current = rng_state_;
  // 128-bit addition of the sign-extended delta: carry (or borrow) into the high word.
  const uint64_t low = current[0] + static_cast<uint64_t>(delta);
  rng_state_[0] = low;
  if (delta >= 0 && low < current[0]) ++rng_state_[1];
  if (delta < 0 && low > current[0]) --rng_state_[1];
  return current;
}

absl::Status Evaluator::CountLoopIteration(const Instruction& loop) {
  if (++loop_iterations_ > options_.max_loop_iterations) {
    return absl::ResourceExhaustedError(
        absl::StrCat("while loop ", loop.name(), " ran past max_loop_iterations (",
                     options_.max_loop_iterations, " iterations in total)"));
  }
  return absl::OkStatus();
}

namespace {

absl::StatusOr<Literal> HandleWhile(Evaluator& ev, const Instruction& instr, Operands& ops) {
  if (instr.called_computations().size() != 2) return Invalid(instr, "needs condition and body");
  Literal state = ops.Take(0);
  while (true) {
    absl::StatusOr<Literal> cond = ev.Run(*instr.while_condition(), {&state});
    if (!cond.ok()) return cond.status();
    if (cond->element_count() != 1) return Invalid(instr, "condition must return pred[]");
    if (!cond->GetAsBool(0)) break;
    if (absl::Status s = ev.CountLoopIteration(instr); !s.ok()) return s;
    std::vector<Literal> args;
    args.push_back(std::move(state));
    absl::StatusOr<Literal> next = ev.Run(*instr.while_body(), std::move(args));
    if (!next.ok()) return next.status();
    state = *std::move(next);
  }
  return state;
}

absl::StatusOr<Literal> HandleConditional(Evaluator& ev, const Instruction& instr, Operands& ops) {
  const auto& branches = instr.called_computations();
  if (branches.empty() || ops.size() != static_cast<int64_t>(branches.size()) + 1) {
    return Invalid(instr, "needs one operand per branch after the selector");
  }
  const Literal& selector = ops[0];
  int64_t branch;
  if (selector.element_type() == PrimitiveType::kPred) {
    branch = selector.GetAsBool(0) ? 0 : 1;  // true_computation first
  } else {
    branch = selector.GetAsInt64(0);
    // XLA: an out-of-range index runs the last branch.
    if (branch < 0 || branch >= static_cast<int64_t>(branches.size())) {
      branch = static_cast<int64_t>(branches.size()) - 1;
    }
  }
  return ev.Run(*branches[branch], {&ops[branch + 1]});
}

absl::StatusOr<Literal> HandleCallLike(Evaluator& ev, const Instruction& instr, Operands& ops) {
  if (instr.to_apply() == nullptr) return Invalid(instr, "has no called computation");
  std::vector<const Literal*> args;
  for (int64_t i = 0; i < ops.size(); ++i) args.push_back(&ops[i]);
  return ev.Run(*instr.to_apply(), args);
}

absl::StatusOr<Literal> HandleTuple(Evaluator&, const Instruction&, Operands& ops) {
  std::vector<Literal> elements;
  elements.reserve(ops.size());
  for (int64_t i = 0; i < ops.size(); ++i) elements.push_back(ops.Take(i));
  return Literal::MakeTuple(std::move(elements));
}

absl::StatusOr<Literal> HandleGetTupleElement(Evaluator&, const Instruction& instr, Operands& ops) {
  const Literal& t = ops[0];
  if (!t.shape().IsTuple() || instr.tuple_index < 0 ||
      instr.tuple_index >= static_cast<int64_t>(t.elements().size())) {
    return Invalid(instr, "tuple index out of range");
  }
  return ops.TakeTupleElement(0, instr.tuple_index);
}

absl::StatusOr<Literal> HandleIdentity(Evaluator&, const Instruction&, Operands& ops) {
  return ops.Take(0);
}

absl::StatusOr<Literal> HandleToken(Evaluator& ev, const Instruction&, Operands&) {
  return ev.NewLiteral(Shape::Token());
}

absl::StatusOr<Literal> HandleZeroId(Evaluator& ev, const Instruction& instr, Operands&) {
  // One device, one replica, one partition: the ids are 0.
  return ev.NewLiteral(instr.shape());
}

}  // namespace

namespace {

// Fewest operands each opcode needs, so handlers can index the ones they rely on.
int64_t MinOperands(Opcode op) {
  if (IsElementwiseBinary(op)) return 2;
  if (op == Opcode::kSelect || op == Opcode::kClamp) return 3;
  switch (op) {
    case Opcode::kTuple:
    case Opcode::kAfterAll:
    case Opcode::kPartitionId:
    case Opcode::kReplicaId:
    case Opcode::kRngGetAndUpdateState:
    case Opcode::kIota:
    case Opcode::kCall:
    case Opcode::kFusion:
    case Opcode::kCustomCall:
    case Opcode::kConcatenate:
      return 0;
    case Opcode::kPad:
    case Opcode::kGather:
    case Opcode::kDynamicUpdateSlice:
    case Opcode::kDot:
    case Opcode::kConvolution:
    case Opcode::kTriangularSolve:
    case Opcode::kRng:
    case Opcode::kReduce:
    case Opcode::kReduceWindow:
      return 2;
    case Opcode::kScatter:
    case Opcode::kSelectAndScatter:
    case Opcode::kBatchNormTraining:
      return 3;
    case Opcode::kBatchNormInference:
    case Opcode::kBatchNormGrad:
      return 5;
    default:
      return 1;
  }
}

}  // namespace

double Evaluator::NextNoise() {
  const double u = std::uniform_real_distribution<double>(-1.0, 1.0)(noise_rng_);
  return options_.noise_negated ? -u : u;
}

absl::StatusOr<Literal> Evaluator::DispatchWithNoise(const Instruction& instr, Operands& ops) {
  const NoiseKind kind = RoundingNoiseKind(instr);
  if (kind == NoiseKind::kNone) return Dispatch(instr, ops);
  std::optional<Literal> magnitude;
  int64_t terms = 1;
  if (kind == NoiseKind::kSum) {
    // The same op on the operands' absolute values sums the terms' magnitudes.
    terms = TermsPerElement(instr, ops);
    std::vector<Value> abs_values(ops.size());
    Operands abs_ops;
    for (int64_t i = 0; i < ops.size(); ++i) {
      abs_values[i].owned = AbsoluteValues(ops[i]);
      abs_values[i].ptr = &abs_values[i].owned;
      abs_values[i].is_owned = true;
      abs_ops.values_.push_back(&abs_values[i]);
      abs_ops.movable_.push_back(1);
      abs_ops.elements_movable_.push_back(0);
    }
    absl::StatusOr<Literal> m = Dispatch(instr, abs_ops);
    if (!m.ok()) return m.status();
    magnitude = *std::move(m);
  }
  absl::StatusOr<Literal> result = Dispatch(instr, ops);
  if (!result.ok()) return result.status();
  AddRoundingNoise(
      options_.rounding_noise_ulps, terms, magnitude ? &*magnitude : nullptr,
      [this] { return NextNoise(); }, *result);
  return result;
}

absl::StatusOr<Literal> Evaluator::Dispatch(const Instruction& instr, Operands& ops) {
  const Opcode op = instr.opcode();
  if (ops.size() < MinOperands(op)) {
    return Invalid(instr, absl::StrCat("needs at least ", MinOperands(op), " operands"));
  }
  if (IsElementwise(op)) return HandleElementwise(*this, instr, ops);
  switch (op) {
    case Opcode::kTuple:
      return HandleTuple(*this, instr, ops);
    case Opcode::kGetTupleElement:
      return HandleGetTupleElement(*this, instr, ops);
    case Opcode::kDomain:
    case Opcode::kOptimizationBarrier:
    case Opcode::kAddDependency:
      return HandleIdentity(*this, instr, ops);
    case Opcode::kAfterAll:
      return HandleToken(*this, instr, ops);
    case Opcode::kPartitionId:
    case Opcode::kReplicaId:
      return HandleZeroId(*this, instr, ops);
    case Opcode::kWhile:
      return HandleWhile(*this, instr, ops);
    case Opcode::kConditional:
      return HandleConditional(*this, instr, ops);
    case Opcode::kCall:
    case Opcode::kFusion:
      return HandleCallLike(*this, instr, ops);
    case Opcode::kMap:
      return HandleMap(*this, instr, ops);
    case Opcode::kBroadcast:
      return HandleBroadcast(*this, instr, ops);
    case Opcode::kReshape:
    case Opcode::kBitcast:
      return HandleReshape(*this, instr, ops);
    case Opcode::kTranspose:
      return HandleTranspose(*this, instr, ops);
    case Opcode::kSlice:
      return HandleSlice(*this, instr, ops);
    case Opcode::kDynamicSlice:
      return HandleDynamicSlice(*this, instr, ops);
    case Opcode::kDynamicUpdateSlice:
      return HandleDynamicUpdateSlice(*this, instr, ops);
    case Opcode::kConcatenate:
      return HandleConcatenate(*this, instr, ops);
    case Opcode::kPad:
      return HandlePad(*this, instr, ops);
    case Opcode::kReverse:
      return HandleReverse(*this, instr, ops);
    case Opcode::kIota:
      return HandleIota(*this, instr, ops);
    case Opcode::kGetDimensionSize:
      return HandleGetDimensionSize(*this, instr, ops);
    case Opcode::kGather:
      return HandleGather(*this, instr, ops);
    case Opcode::kScatter:
      return HandleScatter(*this, instr, ops);
    case Opcode::kReduce:
      return HandleReduce(*this, instr, ops);
    case Opcode::kReduceWindow:
      return HandleReduceWindow(*this, instr, ops);
    case Opcode::kSelectAndScatter:
      return HandleSelectAndScatter(*this, instr, ops);
    case Opcode::kBatchNormTraining:
      return HandleBatchNormTraining(*this, instr, ops);
    case Opcode::kBatchNormInference:
      return HandleBatchNormInference(*this, instr, ops);
    case Opcode::kBatchNormGrad:
      return HandleBatchNormGrad(*this, instr, ops);
    case Opcode::kDot:
      return HandleDot(*this, instr, ops);
    case Opcode::kConvolution:
      return HandleConvolution(*this, instr, ops);
    case Opcode::kSort:
      return HandleSort(*this, instr, ops);
    case Opcode::kTopK:
      return HandleTopK(*this, instr, ops);
    case Opcode::kCholesky:
      return HandleCholesky(*this, instr, ops);
    case Opcode::kTriangularSolve:
      return HandleTriangularSolve(*this, instr, ops);
    case Opcode::kRng:
      return HandleRng(*this, instr, ops);
    case Opcode::kRngBitGenerator:
      return HandleRngBitGenerator(*this, instr, ops);
    case Opcode::kRngGetAndUpdateState:
      return HandleRngGetAndUpdateState(*this, instr, ops);
    case Opcode::kFft:
      return HandleFft(*this, instr, ops);
    case Opcode::kCustomCall:
      return HandleCustomCall(*this, instr, ops);
    default:
      break;
  }
  std::optional<std::string> reason = UnsupportedReason(instr);
  return absl::UnimplementedError(
      reason.has_value() ? *reason : absl::StrCat("the evaluator does not implement ", Name(op)));
}

std::optional<std::string> UnsupportedReason(const Instruction& instr) {
  const Opcode op = instr.opcode();
  if (!instr.shape().is_static()) {
    return absl::StrCat("dynamic shape ", instr.shape().ToString(false),
                        " (the evaluator runs static shapes only)");
  }
  if (IsCollective(op)) {
    return absl::StrCat("collective ", Name(op),
                        " needs several devices; the evaluator runs a single one");
  }
  switch (op) {
    case Opcode::kInfeed:
    case Opcode::kOutfeed:
    case Opcode::kSend:
    case Opcode::kSendDone:
    case Opcode::kRecv:
    case Opcode::kRecvDone:
      return absl::StrCat(Name(op),
                          " transfers data to or from a host or device that the "
                          "evaluator does not have");
    case Opcode::kConstant:
      if (!instr.literal.has_value()) {
        return "constant has an elided literal (printed as {...}); its value is unknown "
               "(fill such constants with seeded values: mltune run --fill-elided SEED, or "
               "MLTUNE_FILL_ELIDED=SEED)";
      }
      return std::nullopt;
    case Opcode::kCustomCall:
      if (FindCustomCall(instr.custom_call_target) == nullptr) {
        return absl::StrCat("custom-call target \"", instr.custom_call_target,
                            "\" has no evaluator implementation");
      }
      return std::nullopt;
    case Opcode::kRngBitGenerator:
      if (absl::StatusOr<RngBitAlgorithm> a = CheckRngBitGenerator(instr); !a.ok()) {
        return std::string(a.status().message());
      }
      return std::nullopt;
    case Opcode::kRngGetAndUpdateState:
      if (absl::StatusOr<int64_t> delta = RngStateDelta(instr); !delta.ok()) {
        return std::string(delta.status().message());
      }
      return std::nullopt;
    case Opcode::kStochasticConvert:
      return "the evaluator does not implement stochastic-convert";
    default:
      break;
  }
  if (IsElementwise(op)) return std::nullopt;
  switch (op) {
    // Everything Dispatch runs.
    case Opcode::kParameter:
    case Opcode::kTuple:
    case Opcode::kGetTupleElement:
    case Opcode::kDomain:
    case Opcode::kOptimizationBarrier:
    case Opcode::kAddDependency:
    case Opcode::kAfterAll:
    case Opcode::kPartitionId:
    case Opcode::kReplicaId:
    case Opcode::kWhile:
    case Opcode::kConditional:
    case Opcode::kCall:
    case Opcode::kFusion:
    case Opcode::kMap:
    case Opcode::kBroadcast:
    case Opcode::kReshape:
    case Opcode::kBitcast:
    case Opcode::kTranspose:
    case Opcode::kSlice:
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice:
    case Opcode::kConcatenate:
    case Opcode::kPad:
    case Opcode::kReverse:
    case Opcode::kIota:
    case Opcode::kGetDimensionSize:
    case Opcode::kGather:
    case Opcode::kScatter:
    case Opcode::kReduce:
    case Opcode::kReduceWindow:
    case Opcode::kSelectAndScatter:
    case Opcode::kBatchNormTraining:
    case Opcode::kBatchNormInference:
    case Opcode::kBatchNormGrad:
    case Opcode::kDot:
    case Opcode::kConvolution:
    case Opcode::kSort:
    case Opcode::kTopK:
    case Opcode::kCholesky:
    case Opcode::kTriangularSolve:
    case Opcode::kRng:
    case Opcode::kFft:
      return std::nullopt;
    default:
      return absl::StrCat("the evaluator does not implement ", Name(op));
  }
}

}  // namespace eval

absl::Status CheckEvaluable(const Module& module) {
  if (module.entry() == nullptr) return absl::InvalidArgumentError("module has no entry");
  std::vector<const Computation*> stack = {module.entry()};
  std::unordered_set<const Computation*> seen = {module.entry()};
  while (!stack.empty()) {
    const Computation* c = stack.back();
    stack.pop_back();
    for (const Instruction* instr : eval::ReachablePostOrder(*c)) {
      if (std::optional<std::string> reason = eval::UnsupportedReason(*instr)) {
        return absl::UnimplementedError(absl::StrCat("cannot evaluate ", instr->name(), " (",
                                                     std::string(OpcodeName(instr->opcode())),
                                                     ") in ", c->name(), ": ", *reason));
      }
      for (const Computation* called : instr->called_computations()) {
        if (called != nullptr && seen.insert(called).second) stack.push_back(called);
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<Literal> Evaluate(const Module& module, const std::vector<Literal>& arguments,
                                 const EvalOptions& options) {
  if (absl::Status s = CheckEvaluable(module); !s.ok()) return s;
  const Computation& entry = *module.entry();
  if (static_cast<int64_t>(arguments.size()) != entry.parameter_count()) {
    return absl::InvalidArgumentError(absl::StrCat("entry computation ", entry.name(), " takes ",
                                                   entry.parameter_count(), " arguments, got ",
                                                   arguments.size()));
  }
  std::vector<const Literal*> args;
  for (int64_t i = 0; i < entry.parameter_count(); ++i) {
    const Instruction* param = entry.parameter(i);
    if (param == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("entry has no parameter ", i));
    }
    if (!arguments[i].shape().Compatible(param->shape())) {
      return absl::InvalidArgumentError(
          absl::StrCat("argument ", i, " has shape ", arguments[i].shape().ToString(false),
                       ", parameter ", param->name(), " wants ", param->shape().ToString(false)));
    }
    args.push_back(&arguments[i]);
  }
  eval::Evaluator evaluator(options);
  return evaluator.Run(entry, args);
}

}  // namespace mltune::ir
