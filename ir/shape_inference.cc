#include "ir/shape_inference.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/computation.h"

namespace mltune::ir {
namespace {

#define MLTUNE_SI_RETURN_IF_ERROR(expr)         \
  do {                                          \
    if (absl::Status _st = (expr); !_st.ok()) { \
      return _st;                               \
    }                                           \
  } while (0)

using Result = absl::StatusOr<std::optional<Shape>>;

std::string Str(const Shape& s) { return s.ToString(/*print_layout=*/false); }
std::string TypeStr(PrimitiveType t) { return std::string(PrimitiveTypeName(t)); }
std::string OpStr(Opcode op) { return std::string(OpcodeName(op)); }
std::string Dims(const std::vector<int64_t>& v) {
  return absl::StrCat("{", absl::StrJoin(v, ","), "}");
}

// An array shape without a layout: inferred shapes never carry one.
Shape MakeArray(PrimitiveType type, std::vector<int64_t> dims,
                const std::vector<bool>& dynamic = {}) {
  Shape s(type, std::move(dims));
  s.ClearLayout();
  for (size_t i = 0; i < dynamic.size() && i < s.dimensions().size(); ++i) {
    if (dynamic[i]) s.set_dynamic_dimension(static_cast<int64_t>(i), true);
  }
  return s;
}

Shape NoLayout(Shape s) {
  s.ClearLayout();
  return s;
}

Shape MakeTuple(std::vector<Shape> elements) {
  for (Shape& e : elements) e.ClearLayout();
  return Shape::Tuple(std::move(elements));
}

bool SameTypeIgnoringFp(PrimitiveType a, PrimitiveType b) {
  return a == b || (IsFloatingPoint(a) && IsFloatingPoint(b));
}

// XLA's ShapeUtil::Compatible: element types and dimensions (recursively for tuples); layouts
// and dynamic flags ignored. With `ignore_fp`, floating-point types of different width match.
bool Compat(const Shape& a, const Shape& b, bool ignore_fp = false) {
  if (a.IsTuple() || b.IsTuple()) {
    if (!a.IsTuple() || !b.IsTuple() || a.tuple_size() != b.tuple_size()) return false;
    for (int64_t i = 0; i < a.tuple_size(); ++i) {
      if (!Compat(a.tuple_shapes(i), b.tuple_shapes(i), ignore_fp)) return false;
    }
    return true;
  }
  const bool type_ok = ignore_fp ? SameTypeIgnoringFp(a.element_type(), b.element_type())
                                 : a.element_type() == b.element_type();
  return type_ok && a.dimensions() == b.dimensions();
}

bool IsScalarOf(const Shape& s, PrimitiveType t) { return s.IsScalar() && s.element_type() == t; }

bool AllUnique(const std::vector<int64_t>& v) {
  std::vector<int64_t> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  return std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
}
bool StrictlyIncreasing(const std::vector<int64_t>& v) {
  for (size_t i = 1; i < v.size(); ++i) {
    if (v[i - 1] >= v[i]) return false;
  }
  return true;
}
bool InRange(const std::vector<int64_t>& v, int64_t limit) {
  return std::all_of(v.begin(), v.end(), [&](int64_t d) { return d >= 0 && d < limit; });
}
bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}
bool Disjoint(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  return std::none_of(a.begin(), a.end(), [&](int64_t x) { return Contains(b, x); });
}

std::optional<int64_t> CheckedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}
std::optional<int64_t> CheckedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Size of `bound` elements after inserting `dilation - 1` holes between neighbours.
std::optional<int64_t> DilatedBound(int64_t bound, int64_t dilation) {
  if (bound == 0) return 0;
  std::optional<int64_t> m = CheckedMul(bound - 1, dilation);
  if (!m) return std::nullopt;
  return CheckedAdd(*m, 1);
}

// Parameters and result of a called computation (XLA's ProgramShape).
struct Signature {
  std::vector<const Shape*> params;
  const Shape* result = nullptr;
  std::string ToString() const {
    std::string out = "(";
    for (size_t i = 0; i < params.size(); ++i) {
      if (i) out += ", ";
      out += Str(*params[i]);
    }
    return absl::StrCat(out, ") -> ", Str(*result));
  }
};

// Group size from replica_groups={{0,1},{2,3}} or the iota form [2,4]<=[8]; nullopt when empty
// ({} means every replica, a count this IR does not know) or unparseable.
std::optional<int64_t> ReplicaGroupSize(const Instruction& instr) {
  const RawAttribute* attr = instr.FindExtraAttribute("replica_groups");
  if (attr == nullptr) return std::nullopt;
  const std::string& v = attr->value;
  auto parse_ints = [](std::string_view s) -> std::optional<std::vector<int64_t>> {
    std::vector<int64_t> out;
    int64_t cur = 0;
    bool have = false;
    for (char c : s) {
      if (c >= '0' && c <= '9') {
        if (cur > (std::numeric_limits<int64_t>::max() - 9) / 10) return std::nullopt;
        cur = cur * 10 + (c - '0');
        have = true;
      } else if (c == ',') {
        if (!have) return std::nullopt;
        out.push_back(cur);
        cur = 0;
        have = false;
      } else if (c != ' ') {
        return std::nullopt;
      }
    }
    if (have) out.push_back(cur);
    return out;
  };
  if (!v.empty() && v[0] == '[') {
    size_t close = v.find(']');
    if (close == std::string::npos) return std::nullopt;
    auto dims = parse_ints(std::string_view(v).substr(1, close - 1));
    if (!dims || dims->empty()) return std::nullopt;
    return dims->back();
  }
  if (v.size() < 2 || v[0] != '{') return std::nullopt;
  std::optional<int64_t> size;
  size_t pos = 1;
  while (true) {
    size_t open = v.find('{', pos);
    if (open == std::string::npos) break;
    size_t close = v.find('}', open);
    if (close == std::string::npos) return std::nullopt;
    auto ids = parse_ints(std::string_view(v).substr(open + 1, close - open - 1));
    if (!ids) return std::nullopt;
    const int64_t n = static_cast<int64_t>(ids->size());
    if (size.has_value() && *size != n) return std::nullopt;  // uneven groups: not derivable
    size = n;
    pos = close + 1;
  }
  if (size.has_value() && *size == 0) return std::nullopt;
  return size;
}

class Inferrer {
 public:
  explicit Inferrer(const Instruction& instr) : in_(instr) {}

  Result Infer();

 private:
  template <typename... Args>
  absl::Status Error(const Args&... args) const {
    return absl::InvalidArgumentError(absl::StrCat(in_.name(), ": ", args...));
  }

  const Shape& Op(int64_t i) const { return in_.operand(i)->shape(); }
  int64_t NumOps() const { return in_.operand_count(); }

  absl::Status ExpectOperands(int64_t n) const {
    if (NumOps() != n) {
      return Error(OpStr(in_.opcode()), " expects ", n, " operand", n == 1 ? "" : "s", " but has ",
                   NumOps());
    }
    return absl::OkStatus();
  }
  absl::Status ExpectAtLeastOperands(int64_t n) const {
    if (NumOps() < n) {
      return Error(OpStr(in_.opcode()), " expects at least ", n, " operand", n == 1 ? "" : "s",
                   " but has ", NumOps());
    }
    return absl::OkStatus();
  }
  absl::Status ExpectArray(int64_t i, const std::string& what = "") const {
    if (!Op(i).IsArray()) {
      return Error(what.empty() ? absl::StrCat("operand ", i) : std::string(what),
                   " must be an array but has shape ", Str(Op(i)));
    }
    return absl::OkStatus();
  }
  absl::Status ExpectAllArrays() const {
    for (int64_t i = 0; i < NumOps(); ++i) MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(i));
    return absl::OkStatus();
  }
  absl::Status ExpectDeclaredArray() const {
    if (!in_.shape().IsArray()) {
      return Error(OpStr(in_.opcode()), " result must be an array but is declared ",
                   Str(in_.shape()));
    }
    return absl::OkStatus();
  }
  absl::Status ExpectCalled(int64_t n) const {
    const auto& called = in_.called_computations();
    if (static_cast<int64_t>(called.size()) != n) {
      return Error(OpStr(in_.opcode()), " expects ", n, " called computation", n == 1 ? "" : "s",
                   " but has ", called.size());
    }
    return absl::OkStatus();
  }
  absl::StatusOr<Signature> GetSignature(const Computation* c, const std::string& role) const {
    if (c == nullptr) return Error(role, " computation is missing");
    if (c->root() == nullptr) return Error(role, " computation ", c->name(), " has no root");
    Signature sig;
    sig.result = &c->root()->shape();
    for (int64_t i = 0; i < c->parameter_count(); ++i) {
      const Instruction* p = c->parameter(i);
      if (p == nullptr) {
        return Error(role, " computation ", c->name(), " has no parameter ", i);
      }
      sig.params.push_back(&p->shape());
    }
    return sig;
  }

  // XLA's VerifyReducerShape: (T0..Tn-1, T0..Tn-1) -> (T0..Tn-1), or -> T0 for one input.
  absl::Status CheckReducer(const Signature& sig, const std::string& role,
                            const std::vector<const Shape*>& inits,
                            const std::vector<PrimitiveType>& input_types) const;

  Result Unary();
  Result Binary();
  Result Convert();
  Result BitcastConvert();
  Result Select();
  Result Clamp();
  Result Broadcast();
  Result Reshape();
  Result DynamicReshape();
  Result Transpose();
  Result Slice();
  Result DynamicSlice();
  Result DynamicUpdateSlice();
  Result Concatenate();
  Result Pad();
  Result Reverse();
  Result Iota();
  Result Reduce();
  Result ReduceWindow();
  Result SelectAndScatter();
  Result Dot();
  Result Convolution();
  Result Gather();
  Result Scatter();
  Result Sort();
  Result Map();
  Result Tuple();
  Result GetTupleElement();
  Result While();
  Result Conditional();
  Result Call();
  Result TriangularSolve();
  Result Cholesky();
  Result BatchNorm();
  Result Fft();
  Result Rng();
  Result Constant();
  Result TopK();
  Result Collective();
  Result Bitcast();

  absl::StatusOr<Shape> WindowOutput(const Shape& base, const Window& window,
                                     PrimitiveType type) const;
  absl::StatusOr<int64_t> SingleDimension(const std::string& what, int64_t rank) const;
  absl::StatusOr<PrimitiveType> PreferredType(PrimitiveType lhs, PrimitiveType rhs) const;

  const Instruction& in_;
};

absl::Status Inferrer::CheckReducer(const Signature& sig, const std::string& role,
                                    const std::vector<const Shape*>& inits,
                                    const std::vector<PrimitiveType>& input_types) const {
  const int64_t n = static_cast<int64_t>(input_types.size());
  if (static_cast<int64_t>(sig.params.size()) != 2 * n) {
    return Error(role, " computation must take ", 2 * n, " parameters but takes ",
                 sig.params.size(), " (signature ", sig.ToString(), ")");
  }
  std::vector<const Shape*> acc;
  if (sig.result->IsArray()) {
    if (n != 1) {
      return Error(role, " computation must return a tuple of ", n, " scalars but returns ",
                   Str(*sig.result));
    }
    acc.push_back(sig.result);
  } else if (sig.result->IsTuple()) {
    if (sig.result->tuple_size() != n) {
      return Error(role, " computation must return a tuple of ", n, " scalars but returns ",
                   Str(*sig.result));
    }
    for (const Shape& s : sig.result->tuple_shapes()) acc.push_back(&s);
  } else {
    return Error(role, " computation must return scalars but returns ", Str(*sig.result));
  }
  for (const Shape* s : acc) {
    if (!s->IsScalar()) {
      return Error(role, " computation must return scalars but returns ", Str(*sig.result));
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    if (!Compat(*acc[i], *sig.params[i])) {
      return Error(role, " computation parameter ", i, " has shape ", Str(*sig.params[i]),
                   " but its result ", i, " is ", Str(*acc[i]));
    }
    if (!Compat(*acc[i], *inits[i], /*ignore_fp=*/true)) {
      return Error(role, " computation result ", i, " is ", Str(*acc[i]), " but init value ", i,
                   " has shape ", Str(*inits[i]));
    }
    const Shape elem = MakeArray(input_types[i], {});
    if (!Compat(elem, *sig.params[n + i], /*ignore_fp=*/true)) {
      return Error(role, " computation parameter ", n + i, " has shape ", Str(*sig.params[n + i]),
                   " but the input element type is ", TypeStr(input_types[i]));
    }
    if (!Compat(*acc[i], *sig.params[n + i], /*ignore_fp=*/true)) {
      return Error(role, " computation parameter ", n + i, " has shape ", Str(*sig.params[n + i]),
                   " but its result ", i, " is ", Str(*acc[i]));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Inferrer::SingleDimension(const std::string& what, int64_t rank) const {
  if (in_.dimensions.size() != 1) {
    return Error(what, " needs exactly one dimension in dimensions=, got ", Dims(in_.dimensions));
  }
  const int64_t d = in_.dimensions[0];
  if (d < 0 || d >= rank) {
    return Error(what, " dimension ", d, " is out of range for rank ", rank);
  }
  return d;
}

// Dot and convolution take the declared element type as XLA's preferred_element_type; integer
// inputs may only widen.
absl::StatusOr<PrimitiveType> Inferrer::PreferredType(PrimitiveType lhs, PrimitiveType rhs) const {
  if (!SameTypeIgnoringFp(lhs, rhs) && !(IsIntegral(lhs) && IsIntegral(rhs))) {
    return Error("operand element types ", TypeStr(lhs), " and ", TypeStr(rhs), " differ");
  }
  const PrimitiveType declared = in_.shape().element_type();
  if (!in_.shape().IsArray()) {
    return Error(OpStr(in_.opcode()), " result must be an array but is declared ",
                 Str(in_.shape()));
  }
  const PrimitiveType from = BitWidth(lhs) >= BitWidth(rhs) ? lhs : rhs;
  if (declared != from && !IsFloatingPoint(from) && BitWidth(declared) < BitWidth(from)) {
    return Error("result element type ", TypeStr(declared), " is narrower than operand type ",
                 TypeStr(from));
  }
  return declared;
}

absl::StatusOr<Shape> Inferrer::WindowOutput(const Shape& base, const Window& window,
                                             PrimitiveType type) const {
  if (static_cast<int64_t>(window.dims.size()) != base.rank()) {
    return Error("window has ", window.dims.size(), " dimensions but the input has rank ",
                 base.rank());
  }
  std::vector<int64_t> dims(window.dims.size());
  std::vector<bool> dynamic(window.dims.size());
  for (size_t i = 0; i < window.dims.size(); ++i) {
    const WindowDim& w = window.dims[i];
    if (w.size <= 0) return Error("window dimension ", i, " has non-positive size ", w.size);
    if (w.stride <= 0) return Error("window dimension ", i, " has non-positive stride ", w.stride);
    if (w.base_dilation < 1 || w.window_dilation < 1) {
      return Error("window dimension ", i, " has a dilation factor below 1");
    }
    const int64_t b = base.dimensions(static_cast<int64_t>(i));
    std::optional<int64_t> dilated_base = DilatedBound(b, w.base_dilation);
    std::optional<int64_t> padded;
    if (dilated_base) padded = CheckedAdd(*dilated_base, w.padding_low);
    if (padded) padded = CheckedAdd(*padded, w.padding_high);
    std::optional<int64_t> dilated_window = DilatedBound(w.size, w.window_dilation);
    if (!padded || !dilated_window) return Error("window dimension ", i, " overflows");
    dims[i] = *dilated_window > *padded ? 0 : (*padded - *dilated_window) / w.stride + 1;
    dynamic[i] = base.is_dynamic_dimension(static_cast<int64_t>(i));
  }
  return MakeArray(type, std::move(dims), dynamic);
}

Result Inferrer::Unary() {
  const Opcode op = in_.opcode();
  if (op == Opcode::kConvert) return Convert();
  if (op == Opcode::kBitcastConvert) return BitcastConvert();
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(1));
  if (op == Opcode::kCopy) return NoLayout(Op(0));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(0));
  const Shape& s = Op(0);
  const PrimitiveType t = s.element_type();
  const bool fp = IsFloatingPoint(t), cx = IsComplex(t), integral = IsIntegral(t);
  const bool is_signed = IsSignedIntegral(t) || fp;
  auto bad = [&](const std::string& expected) {
    return Error(OpStr(op), " expects ", expected, " operand but has ", Str(s));
  };
  switch (op) {
    case Opcode::kFloor:
    case Opcode::kCeil:
    case Opcode::kRoundNearestAfz:
    case Opcode::kRoundNearestEven:
      if (!fp) return bad("a floating-point");
      return NoLayout(s);
    case Opcode::kCos:
    case Opcode::kSin:
    case Opcode::kTan:
    case Opcode::kExp:
    case Opcode::kExpm1:
    case Opcode::kLog:
    case Opcode::kLog1p:
    case Opcode::kLogistic:
    case Opcode::kRsqrt:
    case Opcode::kSqrt:
    case Opcode::kCbrt:
    case Opcode::kTanh:
    case Opcode::kErf:
      if (!fp && !cx) return bad("a floating-point or complex");
      return NoLayout(s);
    case Opcode::kReal:
    case Opcode::kImag:
    case Opcode::kAbs: {
      if (cx) {
        Shape r = NoLayout(s);
        r.set_element_type(t == PrimitiveType::kC64 ? PrimitiveType::kF32 : PrimitiveType::kF64);
        return r;
      }
      const bool ok = op == Opcode::kAbs ? is_signed : fp;
      if (!ok)
        return bad(op == Opcode::kAbs ? "a signed or complex" : "a floating-point or complex");
      return NoLayout(s);
    }
    case Opcode::kClz:
    case Opcode::kPopulationCount:
      if (!integral) return bad("an integer");
      return NoLayout(s);
    case Opcode::kNegate:
      if (!integral && !fp && !cx) return bad("a numeric");
      return NoLayout(s);
    case Opcode::kSign:
      if (!is_signed && !cx) return bad("a signed or complex");
      return NoLayout(s);
    case Opcode::kNot:
      if (t != PrimitiveType::kPred && !integral) return bad("a pred or integer");
      return NoLayout(s);
    case Opcode::kIsFinite: {
      if (!fp) return bad("a floating-point");
      Shape r = NoLayout(s);
      r.set_element_type(PrimitiveType::kPred);
      return r;
    }
    case Opcode::kReducePrecision:
      if (!fp) return bad("a floating-point");
      if (in_.exponent_bits < 1) {
        return Error("reduce-precision needs exponent_bits >= 1, got ", in_.exponent_bits);
      }
      if (in_.mantissa_bits < 0) {
        return Error("reduce-precision needs mantissa_bits >= 0, got ", in_.mantissa_bits);
      }
      return NoLayout(s);
    default:
      return Error("no unary shape rule for ", OpStr(op));
  }
}

Result Inferrer::Convert() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(1));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(0));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectDeclaredArray());
  const PrimitiveType from = Op(0).element_type(), to = in_.shape().element_type();
  if (IsComplex(from) && !IsComplex(to)) {
    return Error("convert from complex ", TypeStr(from), " to real ", TypeStr(to),
                 " is not allowed (use real/imag)");
  }
  Shape r = NoLayout(Op(0));
  r.set_element_type(to);
  return r;
}

Result Inferrer::BitcastConvert() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(1));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(0));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectDeclaredArray());
  const Shape& s = Op(0);
  const PrimitiveType from = s.element_type(), to = in_.shape().element_type();
  if (IsComplex(from) != IsComplex(to)) {
    return Error("bitcast-convert between complex and real types ", TypeStr(from), " => ",
                 TypeStr(to));
  }
  const int in_bits = BitWidth(from), out_bits = BitWidth(to);
  if (in_bits <= 0 || out_bits <= 0 || std::max(in_bits, out_bits) % std::min(in_bits, out_bits)) {
    return Error("bitcast-convert between types of indivisible bit widths ", TypeStr(from), " => ",
                 TypeStr(to));
  }
  std::vector<int64_t> dims = s.dimensions();
  std::vector<bool> dynamic = s.dynamic_dimensions();
  if (in_bits > out_bits) {
    // Each wide element becomes a new minor dimension of narrow ones.
    dims.push_back(in_bits / out_bits);
    dynamic.push_back(false);
  } else if (in_bits < out_bits) {
    const int64_t ratio = out_bits / in_bits;
    if (dims.empty() || dims.back() != ratio) {
      return Error("bitcast-convert from ", Str(s), " to ", TypeStr(to),
                   " needs a minor dimension of size ", ratio);
    }
    dims.pop_back();
    dynamic.pop_back();
  }
  return MakeArray(to, std::move(dims), dynamic);
}

Result Inferrer::Binary() {
  const Opcode op = in_.opcode();
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(2));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(0, "lhs"));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(1, "rhs"));
  const Shape& lhs = Op(0);
  const Shape& rhs = Op(1);
  if (op == Opcode::kStochasticConvert) {
    MLTUNE_SI_RETURN_IF_ERROR(ExpectDeclaredArray());
    if (!IsFloatingPoint(lhs.element_type())) {
      return Error("stochastic-convert operand must be floating-point, got ", Str(lhs));
    }
    if (!IsUnsignedIntegral(rhs.element_type()) ||
        BitWidth(rhs.element_type()) != BitWidth(lhs.element_type())) {
      return Error("stochastic-convert random bits must be unsigned of the operand's width, got ",
                   Str(rhs));
    }
    if (lhs.dimensions() != rhs.dimensions()) {
      return Error("operand shapes ", Str(lhs), " and ", Str(rhs), " differ");
    }
    Shape r = NoLayout(lhs);
    r.set_element_type(in_.shape().element_type());
    return r;
  }
  if (lhs.dimensions() != rhs.dimensions() || lhs.element_type() != rhs.element_type()) {
    return Error("operand shapes ", Str(lhs), " and ", Str(rhs), " differ");
  }
  const PrimitiveType t = lhs.element_type();
  Shape r = NoLayout(lhs);
  for (int64_t i = 0; i < rhs.rank(); ++i) {
    if (rhs.is_dynamic_dimension(i)) r.set_dynamic_dimension(i, true);
  }
  switch (op) {
    case Opcode::kAdd:
    case Opcode::kMultiply:
    case Opcode::kMaximum:
    case Opcode::kMinimum:
      return r;
    case Opcode::kSubtract:
    case Opcode::kDivide:
    case Opcode::kRemainder:
    case Opcode::kPower:
      if (t == PrimitiveType::kPred) return Error(OpStr(op), " is not defined on pred");
      return r;
    case Opcode::kAtan2:
      if (!IsFloatingPoint(t) && !IsComplex(t)) {
        return Error("atan2 expects floating-point or complex operands, got ", Str(lhs));
      }
      return r;
    case Opcode::kShiftLeft:
    case Opcode::kShiftRightArithmetic:
    case Opcode::kShiftRightLogical:
      if (!IsIntegral(t)) return Error(OpStr(op), " expects integer operands, got ", Str(lhs));
      return r;
    case Opcode::kAnd:
    case Opcode::kOr:
    case Opcode::kXor:
      if (t != PrimitiveType::kPred && !IsIntegral(t)) {
        return Error(OpStr(op), " expects pred or integer operands, got ", Str(lhs));
      }
      return r;
    case Opcode::kComplex:
      if (t != PrimitiveType::kF32 && t != PrimitiveType::kF64) {
        return Error("complex expects f32 or f64 operands, got ", Str(lhs));
      }
      r.set_element_type(t == PrimitiveType::kF32 ? PrimitiveType::kC64 : PrimitiveType::kC128);
      return r;
    case Opcode::kCompare: {
      if (!in_.comparison_direction.has_value()) return Error("compare has no direction=");
      const ComparisonType ct = in_.comparison_type;
      const bool ok =
          ct == ComparisonType::kDefault ||
          ((ct == ComparisonType::kFloat || ct == ComparisonType::kFloatTotalOrder) &&
           (IsFloatingPoint(t) || IsComplex(t))) ||
          (ct == ComparisonType::kSigned && IsSignedIntegral(t)) ||
          (ct == ComparisonType::kUnsigned && (IsUnsignedIntegral(t) || t == PrimitiveType::kPred));
      if (!ok) {
        return Error("comparison type ", std::string(ComparisonTypeName(ct)), " does not apply to ",
                     TypeStr(t));
      }
      r.set_element_type(PrimitiveType::kPred);
      return r;
    }
    default:
      return Error("no binary shape rule for ", OpStr(op));
  }
}

Result Inferrer::Select() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(3));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectAllArrays());
  const Shape& pred = Op(0);
  const Shape& on_true = Op(1);
  const Shape& on_false = Op(2);
  if (pred.element_type() != PrimitiveType::kPred) {
    return Error("select predicate must be pred, got ", Str(pred));
  }
  if (!Compat(on_true, on_false)) {
    return Error("select branches have different shapes ", Str(on_true), " and ", Str(on_false));
  }
  if (!pred.IsScalar() && pred.dimensions() != on_true.dimensions()) {
    return Error("select predicate shape ", Str(pred), " does not match branch shape ",
                 Str(on_true));
  }
  Shape r = NoLayout(on_true);
  for (int64_t i = 0; i < r.rank(); ++i) {
    if (on_false.is_dynamic_dimension(i) || (!pred.IsScalar() && pred.is_dynamic_dimension(i))) {
      r.set_dynamic_dimension(i, true);
    }
  }
  return r;
}

Result Inferrer::Clamp() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(3));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectAllArrays());
  const Shape& operand = Op(1);
  for (int64_t i : {0, 2}) {
    const Shape& bound = Op(i);
    if (bound.element_type() != operand.element_type() ||
        (!bound.IsScalar() && bound.dimensions() != operand.dimensions())) {
      return Error("clamp ", i == 0 ? "min " : "max ", Str(bound),
                   " must be a scalar or match the operand ", Str(operand));
    }
  }
  return NoLayout(operand);
}

Result Inferrer::Broadcast() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(1));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(0));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectDeclaredArray());
  const Shape& operand = Op(0);
  const Shape& out = in_.shape();
  const std::vector<int64_t>& dims = in_.dimensions;
  if (static_cast<int64_t>(dims.size()) != operand.rank()) {
    return Error("broadcast dimensions ", Dims(dims),
                 " must have one entry per operand dimension (", "operand ", Str(operand), ")");
  }
  if (!AllUnique(dims)) return Error("broadcast dimensions ", Dims(dims), " repeat a dimension");
  Shape r = MakeArray(operand.element_type(), out.dimensions(), out.dynamic_dimensions());
  for (int64_t i = 0; i < operand.rank(); ++i) {
    const int64_t d = dims[i];
    if (d < 0 || d >= out.rank()) {
      return Error("broadcast dimension ", d, " is out of range for result rank ", out.rank());
    }
    if (out.dimensions(d) != operand.dimensions(i)) {
      return Error("broadcast maps operand dimension ", i, " of size ", operand.dimensions(i),
                   " to result dimension ", d, " of size ", out.dimensions(d));
    }
    r.set_dynamic_dimension(d, operand.is_dynamic_dimension(i));
  }
  return r;
}

Result Inferrer::Reshape() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(1));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(0));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectDeclaredArray());
  const Shape& out = in_.shape();
  if (Op(0).ElementCount() != out.ElementCount()) {
    return Error("reshape from ", Str(Op(0)), " to ", Str(out), " changes the element count (",
                 Op(0).ElementCount(), " vs ", out.ElementCount(), ")");
  }
  // Which output dimension a dynamic input dimension lands on is not derivable in general; the
  // declared dynamic flags are taken as given.
  return MakeArray(Op(0).element_type(), out.dimensions(), out.dynamic_dimensions());
}

Result Inferrer::DynamicReshape() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectAtLeastOperands(1));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectDeclaredArray());
  const Shape& out = in_.shape();
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(1 + out.rank()));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(0));
  for (int64_t i = 1; i < NumOps(); ++i) {
    if (!IsScalarOf(Op(i), PrimitiveType::kS32)) {
      return Error("dynamic-reshape size operand ", i, " must be s32[], got ", Str(Op(i)));
    }
  }
  if (Op(0).ElementCount() != out.ElementCount()) {
    return Error("dynamic-reshape from ", Str(Op(0)), " to ", Str(out),
                 " changes the element count bound");
  }
  return MakeArray(Op(0).element_type(), out.dimensions(), out.dynamic_dimensions());
}

Result Inferrer::Transpose() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(1));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(0));
  const Shape& s = Op(0);
  const std::vector<int64_t>& perm = in_.dimensions;
  if (static_cast<int64_t>(perm.size()) != s.rank() || !InRange(perm, s.rank()) ||
      !AllUnique(perm)) {
    return Error("transpose dimensions ", Dims(perm), " are not a permutation of the ", s.rank(),
                 " dimensions of ", Str(s));
  }
  std::vector<int64_t> dims(perm.size());
  std::vector<bool> dynamic(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    dims[i] = s.dimensions(perm[i]);
    dynamic[i] = s.is_dynamic_dimension(perm[i]);
  }
  return MakeArray(s.element_type(), std::move(dims), dynamic);
}

Result Inferrer::Slice() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(1));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(0));
  const Shape& s = Op(0);
  if (static_cast<int64_t>(in_.slice.size()) != s.rank()) {
    return Error("slice has ", in_.slice.size(), " dimensions but the operand ", Str(s),
                 " has rank ", s.rank());
  }
  std::vector<int64_t> dims(in_.slice.size());
  std::vector<bool> dynamic(in_.slice.size());
  for (size_t i = 0; i < in_.slice.size(); ++i) {
    const SliceDim& d = in_.slice[i];
    const int64_t size = s.dimensions(static_cast<int64_t>(i));
    if (d.start < 0 || d.start > d.limit || d.limit > size) {
      return Error("slice dimension ", i, " [", d.start, ":", d.limit,
                   "] is out of bounds for size ", size);
    }
    if (d.stride <= 0) return Error("slice dimension ", i, " has non-positive stride ", d.stride);
    const int64_t span = d.limit - d.start;
    dims[i] = span / d.stride + (span % d.stride != 0 ? 1 : 0);
    dynamic[i] = dims[i] != 1 && s.is_dynamic_dimension(static_cast<int64_t>(i));
  }
  return MakeArray(s.element_type(), std::move(dims), dynamic);
}

Result Inferrer::DynamicSlice() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectAtLeastOperands(1));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(0));
  const Shape& s = Op(0);
  const int64_t n_idx = NumOps() - 1;
  if (n_idx == 1 && Op(1).IsArray() && Op(1).rank() == 1) {
    // Legacy form: one rank-1 index vector.
    if (!IsIntegral(Op(1).element_type()) || Op(1).dimensions(0) != s.rank()) {
      return Error("dynamic-slice index vector ", Str(Op(1)), " must be integral with ", s.rank(),
                   " elements");
    }
  } else {
    if (n_idx != s.rank()) {
      return Error("dynamic-slice of rank-", s.rank(), " operand needs ", s.rank(),
                   " index operands but has ", n_idx);
    }
    for (int64_t i = 1; i <= n_idx; ++i) {
      if (!Op(i).IsScalar() || !IsIntegral(Op(i).element_type())) {
        return Error("dynamic-slice index operand ", i, " must be an integer scalar, got ",
                     Str(Op(i)));
      }
      if (Op(i).element_type() != Op(1).element_type()) {
        return Error("dynamic-slice index operands have different types ", Str(Op(1)), " and ",
                     Str(Op(i)));
      }
    }
  }
  const std::vector<int64_t>& sizes = in_.dynamic_slice_sizes;
  if (static_cast<int64_t>(sizes.size()) != s.rank()) {
    return Error("dynamic_slice_sizes ", Dims(sizes), " must have ", s.rank(), " entries");
  }
  for (int64_t i = 0; i < s.rank(); ++i) {
    if (sizes[i] < 0 || sizes[i] > s.dimensions(i)) {
      return Error("dynamic-slice size ", sizes[i], " of dimension ", i,
                   " is out of range for operand ", Str(s));
    }
  }
  return MakeArray(s.element_type(), sizes);
}

Result Inferrer::DynamicUpdateSlice() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectAtLeastOperands(2));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(0));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(1));
  const Shape& s = Op(0);
  const Shape& update = Op(1);
  const int64_t n_idx = NumOps() - 2;
  if (n_idx == 1 && Op(2).IsArray() && Op(2).rank() == 1) {
    if (!IsIntegral(Op(2).element_type()) || Op(2).dimensions(0) != s.rank()) {
      return Error("dynamic-update-slice index vector ", Str(Op(2)), " must be integral with ",
                   s.rank(), " elements");
    }
  } else {
    if (n_idx != s.rank()) {
      return Error("dynamic-update-slice of rank-", s.rank(), " operand needs ", s.rank(),
                   " index operands but has ", n_idx);
    }
    for (int64_t i = 2; i < NumOps(); ++i) {
      if (!Op(i).IsScalar() || !IsIntegral(Op(i).element_type())) {
        return Error("dynamic-update-slice index operand ", i, " must be an integer scalar, got ",
                     Str(Op(i)));
      }
      if (Op(i).element_type() != Op(2).element_type()) {
        return Error("dynamic-update-slice index operands have different types ", Str(Op(2)),
                     " and ", Str(Op(i)));
      }
    }
  }
  if (update.rank() != s.rank() || update.element_type() != s.element_type()) {
    return Error("dynamic-update-slice update ", Str(update), " does not match operand ", Str(s));
  }
  Shape r = NoLayout(s);
  for (int64_t i = 0; i < s.rank(); ++i) {
    if (update.dimensions(i) > s.dimensions(i)) {
      return Error("dynamic-update-slice update ", Str(update), " is larger than operand ", Str(s),
                   " in dimension ", i);
    }
    if (update.is_dynamic_dimension(i) && update.dimensions(i) == s.dimensions(i)) {
      r.set_dynamic_dimension(i, true);
    }
  }
  return r;
}

Result Inferrer::Concatenate() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectAtLeastOperands(1));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectAllArrays());
  const Shape& first = Op(0);
  absl::StatusOr<int64_t> dim = SingleDimension("concatenate", first.rank());
  if (!dim.ok()) return dim.status();
  std::vector<int64_t> dims = first.dimensions();
  std::vector<bool> dynamic = first.dynamic_dimensions();
  for (int64_t i = 1; i < NumOps(); ++i) {
    const Shape& s = Op(i);
    if (s.rank() != first.rank() || s.element_type() != first.element_type()) {
      return Error("concatenate operand ", i, " ", Str(s), " does not match operand 0 ",
                   Str(first));
    }
    for (int64_t d = 0; d < s.rank(); ++d) {
      if (d == *dim) continue;
      if (s.dimensions(d) != first.dimensions(d)) {
        return Error("concatenate operand ", i, " ", Str(s), " differs from operand 0 ", Str(first),
                     " in dimension ", d);
      }
    }
    std::optional<int64_t> sum = CheckedAdd(dims[*dim], s.dimensions(*dim));
    if (!sum) return Error("concatenate result size overflows");
    dims[*dim] = *sum;
    for (int64_t d = 0; d < s.rank(); ++d) {
      if (s.is_dynamic_dimension(d)) dynamic[d] = true;
    }
  }
  return MakeArray(first.element_type(), std::move(dims), dynamic);
}

Result Inferrer::Pad() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(2));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectAllArrays());
  const Shape& s = Op(0);
  const Shape& value = Op(1);
  if (!value.IsScalar() || value.element_type() != s.element_type()) {
    return Error("pad value ", Str(value), " must be a scalar of the operand type ",
                 TypeStr(s.element_type()));
  }
  if (static_cast<int64_t>(in_.padding.size()) != s.rank()) {
    return Error("padding has ", in_.padding.size(), " dimensions but operand ", Str(s),
                 " has rank ", s.rank());
  }
  std::vector<int64_t> dims(s.rank());
  for (int64_t i = 0; i < s.rank(); ++i) {
    const PaddingDim& p = in_.padding[i];
    if (p.interior < 0) return Error("pad dimension ", i, " has negative interior padding");
    const int64_t d = s.dimensions(i);
    std::optional<int64_t> v = CheckedMul(std::max<int64_t>(d - 1, 0), p.interior);
    if (v) v = CheckedAdd(*v, d);
    if (v) v = CheckedAdd(*v, p.low);
    if (v) v = CheckedAdd(*v, p.high);
    if (!v) return Error("pad dimension ", i, " overflows");
    if (*v < 0) return Error("pad dimension ", i, " has negative result size ", *v);
    dims[i] = *v;
  }
  return MakeArray(s.element_type(), std::move(dims), s.dynamic_dimensions());
}

Result Inferrer::Reverse() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(1));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(0));
  if (!InRange(in_.dimensions, Op(0).rank()) || !AllUnique(in_.dimensions)) {
    return Error("reverse dimensions ", Dims(in_.dimensions), " are invalid for ", Str(Op(0)));
  }
  return NoLayout(Op(0));
}

Result Inferrer::Iota() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(0));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectDeclaredArray());
  const Shape& out = in_.shape();
  if (out.rank() == 0) return Error("iota needs a result of rank >= 1");
  if (in_.iota_dimension < 0 || in_.iota_dimension >= out.rank()) {
    return Error("iota_dimension ", in_.iota_dimension, " is out of range for ", Str(out));
  }
  return NoLayout(out);
}

Result Inferrer::Reduce() {
  if (NumOps() < 2 || NumOps() % 2 != 0) {
    return Error("reduce expects an even number (>= 2) of operands but has ", NumOps());
  }
  MLTUNE_SI_RETURN_IF_ERROR(ExpectAllArrays());
  MLTUNE_SI_RETURN_IF_ERROR(ExpectCalled(1));
  absl::StatusOr<Signature> sig = GetSignature(in_.to_apply(), "to_apply");
  if (!sig.ok()) return sig.status();
  const int64_t n = NumOps() / 2;
  const Shape& arg = Op(0);
  std::vector<const Shape*> inits;
  std::vector<PrimitiveType> types;
  for (int64_t i = 0; i < n; ++i) {
    if (Op(i).dimensions() != arg.dimensions()) {
      return Error("reduce inputs have different dimensions: ", Str(arg), " and ", Str(Op(i)));
    }
    if (!Op(n + i).IsScalar()) {
      return Error("reduce init value ", i, " must be a scalar, got ", Str(Op(n + i)));
    }
    inits.push_back(&Op(n + i));
    types.push_back(Op(i).element_type());
  }
  if (!InRange(in_.dimensions, arg.rank()) || !AllUnique(in_.dimensions)) {
    return Error("reduce dimensions ", Dims(in_.dimensions), " are invalid for ", Str(arg));
  }
  MLTUNE_SI_RETURN_IF_ERROR(CheckReducer(*sig, "to_apply", inits, types));
  std::vector<int64_t> dims;
  std::vector<bool> dynamic;
  for (int64_t d = 0; d < arg.rank(); ++d) {
    if (Contains(in_.dimensions, d)) continue;
    dims.push_back(arg.dimensions(d));
    dynamic.push_back(arg.is_dynamic_dimension(d));
  }
  if (sig->result->IsArray()) return MakeArray(sig->result->element_type(), dims, dynamic);
  std::vector<Shape> elems;
  for (const Shape& e : sig->result->tuple_shapes()) {
    elems.push_back(MakeArray(e.element_type(), dims, dynamic));
  }
  return MakeTuple(std::move(elems));
}

Result Inferrer::ReduceWindow() {
  if (NumOps() < 2 || NumOps() % 2 != 0) {
    return Error("reduce-window expects an even number (>= 2) of operands but has ", NumOps());
  }
  MLTUNE_SI_RETURN_IF_ERROR(ExpectAllArrays());
  MLTUNE_SI_RETURN_IF_ERROR(ExpectCalled(1));
  absl::StatusOr<Signature> sig = GetSignature(in_.to_apply(), "to_apply");
  if (!sig.ok()) return sig.status();
  const int64_t n = NumOps() / 2;
  std::vector<const Shape*> inits;
  std::vector<PrimitiveType> types;
  for (int64_t i = 0; i < n; ++i) {
    if (Op(i).dimensions() != Op(0).dimensions()) {
      return Error("reduce-window inputs have different dimensions: ", Str(Op(0)), " and ",
                   Str(Op(i)));
    }
    if (!Op(n + i).IsScalar()) {
      return Error("reduce-window init value ", i, " must be a scalar, got ", Str(Op(n + i)));
    }
    inits.push_back(&Op(n + i));
    types.push_back(Op(i).element_type());
  }
  MLTUNE_SI_RETURN_IF_ERROR(CheckReducer(*sig, "to_apply", inits, types));
  const Window window = in_.window.value_or(Window{});
  std::vector<Shape> outs;
  for (int64_t i = 0; i < n; ++i) {
    absl::StatusOr<Shape> out = WindowOutput(Op(i), window, Op(n + i).element_type());
    if (!out.ok()) return out.status();
    outs.push_back(*std::move(out));
  }
  if (n == 1) return outs[0];
  return MakeTuple(std::move(outs));
}

Result Inferrer::SelectAndScatter() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(3));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectAllArrays());
  MLTUNE_SI_RETURN_IF_ERROR(ExpectCalled(2));
  const Shape& operand = Op(0);
  const Shape& source = Op(1);
  const Shape& init = Op(2);
  absl::StatusOr<Signature> select = GetSignature(in_.called_computations()[0], "select");
  if (!select.ok()) return select.status();
  absl::StatusOr<Signature> scatter = GetSignature(in_.called_computations()[1], "scatter");
  if (!scatter.ok()) return scatter.status();
  if (select->params.size() != 2 || !IsScalarOf(*select->result, PrimitiveType::kPred)) {
    return Error("select computation must be (T, T) -> pred[] but is ", select->ToString());
  }
  const Shape elem = MakeArray(operand.element_type(), {});
  for (int i = 0; i < 2; ++i) {
    if (!Compat(elem, *select->params[i], /*ignore_fp=*/true)) {
      return Error("select computation parameter ", i, " has shape ", Str(*select->params[i]),
                   " but the operand element type is ", TypeStr(operand.element_type()));
    }
  }
  if (!init.IsScalar()) return Error("select-and-scatter init value must be a scalar");
  MLTUNE_SI_RETURN_IF_ERROR(CheckReducer(*scatter, "scatter", {&init}, {source.element_type()}));
  absl::StatusOr<Shape> windowed =
      WindowOutput(operand, in_.window.value_or(Window{}), operand.element_type());
  if (!windowed.ok()) return windowed.status();
  if (!Compat(source, *windowed, /*ignore_fp=*/true)) {
    return Error("select-and-scatter source ", Str(source),
                 " does not match the windowed operand shape ", Str(*windowed));
  }
  return NoLayout(operand);
}

Result Inferrer::Dot() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(2));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(0, "lhs"));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(1, "rhs"));
  const Shape& lhs = Op(0);
  const Shape& rhs = Op(1);
  const DotDimensionNumbers dn = in_.dot_dnums.value_or(DotDimensionNumbers{});
  auto check_side = [&](const char* side, const Shape& s, const std::vector<int64_t>& batch,
                        const std::vector<int64_t>& contracting) -> absl::Status {
    if (!InRange(batch, s.rank()) || !InRange(contracting, s.rank())) {
      return Error(side, " batch/contracting dimensions ", Dims(batch), "/", Dims(contracting),
                   " are out of range for ", Str(s));
    }
    std::vector<int64_t> all = batch;
    all.insert(all.end(), contracting.begin(), contracting.end());
    if (!AllUnique(all)) {
      return Error(side, " batch/contracting dimensions ", Dims(batch), "/", Dims(contracting),
                   " repeat a dimension");
    }
    return absl::OkStatus();
  };
  MLTUNE_SI_RETURN_IF_ERROR(
      check_side("lhs", lhs, dn.lhs_batch_dimensions, dn.lhs_contracting_dimensions));
  MLTUNE_SI_RETURN_IF_ERROR(
      check_side("rhs", rhs, dn.rhs_batch_dimensions, dn.rhs_contracting_dimensions));
  if (dn.lhs_contracting_dimensions.size() != dn.rhs_contracting_dimensions.size()) {
    return Error("lhs has ", dn.lhs_contracting_dimensions.size(),
                 " contracting dimensions but rhs has ", dn.rhs_contracting_dimensions.size());
  }
  if (dn.lhs_batch_dimensions.size() != dn.rhs_batch_dimensions.size()) {
    return Error("lhs has ", dn.lhs_batch_dimensions.size(), " batch dimensions but rhs has ",
                 dn.rhs_batch_dimensions.size());
  }
  for (size_t i = 0; i < dn.lhs_contracting_dimensions.size(); ++i) {
    const int64_t l = dn.lhs_contracting_dimensions[i], r = dn.rhs_contracting_dimensions[i];
    if (lhs.dimensions(l) != rhs.dimensions(r)) {
      return Error("lhs contracting dimension ", l, " has size ", lhs.dimensions(l),
                   " but rhs contracting dimension ", r, " has size ", rhs.dimensions(r));
    }
  }
  for (size_t i = 0; i < dn.lhs_batch_dimensions.size(); ++i) {
    const int64_t l = dn.lhs_batch_dimensions[i], r = dn.rhs_batch_dimensions[i];
    if (lhs.dimensions(l) != rhs.dimensions(r)) {
      return Error("lhs batch dimension ", l, " has size ", lhs.dimensions(l),
                   " but rhs batch dimension ", r, " has size ", rhs.dimensions(r));
    }
  }
  absl::StatusOr<PrimitiveType> type = PreferredType(lhs.element_type(), rhs.element_type());
  if (!type.ok()) return type.status();
  std::vector<int64_t> dims;
  std::vector<bool> dynamic;
  for (int64_t d : dn.lhs_batch_dimensions) {
    dims.push_back(lhs.dimensions(d));
    dynamic.push_back(lhs.is_dynamic_dimension(d));
  }
  for (int64_t d = 0; d < lhs.rank(); ++d) {
    if (Contains(dn.lhs_batch_dimensions, d) || Contains(dn.lhs_contracting_dimensions, d))
      continue;
    dims.push_back(lhs.dimensions(d));
    dynamic.push_back(lhs.is_dynamic_dimension(d));
  }
  for (int64_t d = 0; d < rhs.rank(); ++d) {
    if (Contains(dn.rhs_batch_dimensions, d) || Contains(dn.rhs_contracting_dimensions, d))
      continue;
    dims.push_back(rhs.dimensions(d));
    dynamic.push_back(rhs.is_dynamic_dimension(d));
  }
  return MakeArray(*type, std::move(dims), dynamic);
}

Result Inferrer::Convolution() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(2));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(0, "lhs"));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(1, "rhs"));
  const Shape& lhs = Op(0);
  const Shape& rhs = Op(1);
  if (!in_.conv_dnums.has_value()) return Error("convolution has no dim_labels");
  const ConvolutionDimensionNumbers& dn = *in_.conv_dnums;
  const int64_t fgc = in_.feature_group_count, bgc = in_.batch_group_count;
  if (fgc <= 0) return Error("feature_group_count must be positive, got ", fgc);
  if (bgc <= 0) return Error("batch_group_count must be positive, got ", bgc);
  if (fgc > 1 && bgc > 1) {
    return Error("feature_group_count ", fgc, " and batch_group_count ", bgc,
                 " cannot both exceed 1");
  }
  const int64_t nsp = static_cast<int64_t>(dn.input_spatial_dimensions.size());
  if (static_cast<int64_t>(dn.kernel_spatial_dimensions.size()) != nsp ||
      static_cast<int64_t>(dn.output_spatial_dimensions.size()) != nsp) {
    return Error("dim_labels ", ConvolutionDimensionNumbersToString(dn),
                 " have different spatial dimension counts");
  }
  const Window window = in_.window.value_or(Window{});
  if (static_cast<int64_t>(window.dims.size()) != nsp) {
    return Error("window has ", window.dims.size(), " dimensions but the convolution has ", nsp,
                 " spatial dimensions");
  }
  const int64_t rank = nsp + 2;
  if (lhs.rank() != rank) return Error("lhs ", Str(lhs), " must have rank ", rank);
  if (rhs.rank() != rank) return Error("rhs ", Str(rhs), " must have rank ", rank);
  auto is_perm = [&](int64_t a, int64_t b, const std::vector<int64_t>& spatial) {
    std::vector<int64_t> all = {a, b};
    all.insert(all.end(), spatial.begin(), spatial.end());
    return InRange(all, rank) && AllUnique(all);
  };
  if (!is_perm(dn.input_batch_dimension, dn.input_feature_dimension, dn.input_spatial_dimensions) ||
      !is_perm(dn.kernel_input_feature_dimension, dn.kernel_output_feature_dimension,
               dn.kernel_spatial_dimensions) ||
      !is_perm(dn.output_batch_dimension, dn.output_feature_dimension,
               dn.output_spatial_dimensions)) {
    return Error("dim_labels ", ConvolutionDimensionNumbersToString(dn),
                 " must name each dimension exactly once");
  }
  const int64_t input_features = lhs.dimensions(dn.input_feature_dimension);
  const int64_t input_batch = lhs.dimensions(dn.input_batch_dimension);
  const int64_t kernel_in = rhs.dimensions(dn.kernel_input_feature_dimension);
  const int64_t kernel_out = rhs.dimensions(dn.kernel_output_feature_dimension);
  if (kernel_out % bgc != 0) {
    return Error("kernel output feature count ", kernel_out,
                 " is not a multiple of batch_group_count ", bgc);
  }
  if (input_features % fgc != 0 || input_features / fgc != kernel_in) {
    return Error("input feature count ", input_features, " / feature_group_count ", fgc,
                 " must equal the kernel input feature count ", kernel_in);
  }
  if (kernel_out % fgc != 0) {
    return Error("kernel output feature count ", kernel_out,
                 " is not a multiple of feature_group_count ", fgc);
  }
  if (input_batch % bgc != 0) {
    return Error("input batch ", input_batch, " is not a multiple of batch_group_count ", bgc);
  }
  std::vector<int64_t> in_spatial(nsp);
  for (int64_t i = 0; i < nsp; ++i) {
    const int64_t k = rhs.dimensions(dn.kernel_spatial_dimensions[i]);
    if (window.dims[i].size != k) {
      return Error("window size ", window.dims[i].size, " in spatial dimension ", i,
                   " does not match kernel size ", k);
    }
    in_spatial[i] = lhs.dimensions(dn.input_spatial_dimensions[i]);
  }
  absl::StatusOr<Shape> spatial =
      WindowOutput(MakeArray(lhs.element_type(), in_spatial), window, lhs.element_type());
  if (!spatial.ok()) return spatial.status();
  absl::StatusOr<PrimitiveType> type = PreferredType(lhs.element_type(), rhs.element_type());
  if (!type.ok()) return type.status();
  std::vector<int64_t> dims(rank);
  std::vector<bool> dynamic(rank, false);
  dims[dn.output_batch_dimension] = input_batch / bgc;
  dims[dn.output_feature_dimension] = kernel_out;
  dynamic[dn.output_batch_dimension] = lhs.is_dynamic_dimension(dn.input_batch_dimension);
  for (int64_t i = 0; i < nsp; ++i) {
    const int64_t o = dn.output_spatial_dimensions[i];
    dims[o] = spatial->dimensions(i);
    dynamic[o] = lhs.is_dynamic_dimension(dn.input_spatial_dimensions[i]) ||
                 rhs.is_dynamic_dimension(dn.kernel_spatial_dimensions[i]);
  }
  return MakeArray(*type, std::move(dims), dynamic);
}

Result Inferrer::Gather() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(2));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectAllArrays());
  const Shape& operand = Op(0);
  const Shape& indices = Op(1);
  if (!in_.gather_dnums.has_value()) return Error("gather has no dimension numbers");
  const GatherDimensionNumbers& dn = *in_.gather_dnums;
  const std::vector<int64_t>& slice_sizes = in_.gather_slice_sizes;
  if (!IsIntegral(indices.element_type())) {
    return Error("gather indices must be integral, got ", Str(indices));
  }
  if (dn.index_vector_dim < 0 || dn.index_vector_dim > indices.rank()) {
    return Error("index_vector_dim ", dn.index_vector_dim, " is out of range for indices ",
                 Str(indices));
  }
  std::vector<int64_t> expanded = indices.dimensions();
  std::vector<bool> expanded_dynamic = indices.dynamic_dimensions();
  if (dn.index_vector_dim == indices.rank()) {
    expanded.push_back(1);
    expanded_dynamic.push_back(false);
  }
  const int64_t batch_rank = static_cast<int64_t>(expanded.size()) - 1;
  const int64_t out_rank = static_cast<int64_t>(dn.offset_dims.size()) + batch_rank;
  if (!StrictlyIncreasing(dn.offset_dims) || !InRange(dn.offset_dims, out_rank)) {
    return Error("offset_dims ", Dims(dn.offset_dims),
                 " must be increasing and within the result rank ", out_rank);
  }
  if (static_cast<int64_t>(dn.start_index_map.size()) != expanded[dn.index_vector_dim]) {
    return Error("start_index_map ", Dims(dn.start_index_map), " has ", dn.start_index_map.size(),
                 " entries but the index vector has ", expanded[dn.index_vector_dim]);
  }
  if (!InRange(dn.start_index_map, operand.rank()) || !AllUnique(dn.start_index_map)) {
    return Error("start_index_map ", Dims(dn.start_index_map), " is invalid for operand ",
                 Str(operand));
  }
  if (!StrictlyIncreasing(dn.collapsed_slice_dims) ||
      !InRange(dn.collapsed_slice_dims, operand.rank())) {
    return Error("collapsed_slice_dims ", Dims(dn.collapsed_slice_dims),
                 " must be increasing and within the operand rank ", operand.rank());
  }
  if (!StrictlyIncreasing(dn.operand_batching_dims) ||
      !InRange(dn.operand_batching_dims, operand.rank()) ||
      !Disjoint(dn.operand_batching_dims, dn.collapsed_slice_dims) ||
      !Disjoint(dn.operand_batching_dims, dn.start_index_map)) {
    return Error("operand_batching_dims ", Dims(dn.operand_batching_dims),
                 " must be increasing, in range and disjoint from collapsed_slice_dims and "
                 "start_index_map");
  }
  if (!InRange(dn.start_indices_batching_dims, indices.rank()) ||
      !AllUnique(dn.start_indices_batching_dims) ||
      Contains(dn.start_indices_batching_dims, dn.index_vector_dim)) {
    return Error("start_indices_batching_dims ", Dims(dn.start_indices_batching_dims),
                 " are invalid for indices ", Str(indices));
  }
  if (dn.operand_batching_dims.size() != dn.start_indices_batching_dims.size()) {
    return Error("operand_batching_dims and start_indices_batching_dims differ in length");
  }
  for (size_t i = 0; i < dn.operand_batching_dims.size(); ++i) {
    if (operand.dimensions(dn.operand_batching_dims[i]) !=
        indices.dimensions(dn.start_indices_batching_dims[i])) {
      return Error("operand batching dimension ", dn.operand_batching_dims[i],
                   " and indices batching dimension ", dn.start_indices_batching_dims[i],
                   " differ in size");
    }
  }
  if (static_cast<int64_t>(slice_sizes.size()) != operand.rank()) {
    return Error("slice_sizes ", Dims(slice_sizes), " must have one entry per operand dimension (",
                 Str(operand), ")");
  }
  if (static_cast<int64_t>(dn.offset_dims.size() + dn.collapsed_slice_dims.size() +
                           dn.operand_batching_dims.size()) != operand.rank()) {
    return Error(
        "offset_dims, collapsed_slice_dims and operand_batching_dims must together cover "
        "the ",
        operand.rank(), " operand dimensions");
  }
  for (int64_t i = 0; i < operand.rank(); ++i) {
    if (slice_sizes[i] < 0 || slice_sizes[i] > operand.dimensions(i)) {
      return Error("slice size ", slice_sizes[i], " of dimension ", i,
                   " is out of range for operand ", Str(operand));
    }
  }
  for (int64_t d : dn.collapsed_slice_dims) {
    if (slice_sizes[d] > 1) return Error("collapsed dimension ", d, " has slice size > 1");
  }
  for (int64_t d : dn.operand_batching_dims) {
    if (slice_sizes[d] > 1) return Error("operand batching dimension ", d, " has slice size > 1");
  }
  std::vector<int64_t> dims;
  std::vector<bool> dynamic;
  int64_t operand_dim = 0, batch_dim = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    if (Contains(dn.offset_dims, i)) {
      while (Contains(dn.collapsed_slice_dims, operand_dim) ||
             Contains(dn.operand_batching_dims, operand_dim)) {
        ++operand_dim;
      }
      dims.push_back(slice_sizes[operand_dim]);
      dynamic.push_back(slice_sizes[operand_dim] == operand.dimensions(operand_dim) &&
                        operand.is_dynamic_dimension(operand_dim));
      ++operand_dim;
    } else {
      if (batch_dim == dn.index_vector_dim) ++batch_dim;
      dims.push_back(expanded[batch_dim]);
      dynamic.push_back(expanded_dynamic[batch_dim]);
      ++batch_dim;
    }
  }
  return MakeArray(operand.element_type(), std::move(dims), dynamic);
}

Result Inferrer::Scatter() {
  if (NumOps() < 3 || NumOps() % 2 != 1) {
    return Error("scatter expects 2N+1 operands (N >= 1) but has ", NumOps());
  }
  MLTUNE_SI_RETURN_IF_ERROR(ExpectAllArrays());
  MLTUNE_SI_RETURN_IF_ERROR(ExpectCalled(1));
  if (!in_.scatter_dnums.has_value()) return Error("scatter has no dimension numbers");
  const ScatterDimensionNumbers& dn = *in_.scatter_dnums;
  const int64_t n = NumOps() / 2;
  const Shape& indices = Op(n);
  if (!IsIntegral(indices.element_type())) {
    return Error("scatter indices must be integral, got ", Str(indices));
  }
  if (dn.index_vector_dim < 0 || dn.index_vector_dim > indices.rank()) {
    return Error("index_vector_dim ", dn.index_vector_dim, " is out of range for indices ",
                 Str(indices));
  }
  std::vector<int64_t> expanded = indices.dimensions();
  if (dn.index_vector_dim == indices.rank()) expanded.push_back(1);
  const Shape& operand0 = Op(0);
  const Shape& updates0 = Op(n + 1);
  const int64_t rank = operand0.rank();
  if (!StrictlyIncreasing(dn.update_window_dims) ||
      !InRange(dn.update_window_dims, updates0.rank())) {
    return Error("update_window_dims ", Dims(dn.update_window_dims),
                 " must be increasing and within the updates rank ", updates0.rank());
  }
  if (!StrictlyIncreasing(dn.inserted_window_dims) || !InRange(dn.inserted_window_dims, rank)) {
    return Error("inserted_window_dims ", Dims(dn.inserted_window_dims),
                 " must be increasing and within the operand rank ", rank);
  }
  if (!StrictlyIncreasing(dn.input_batching_dims) || !InRange(dn.input_batching_dims, rank) ||
      !Disjoint(dn.input_batching_dims, dn.inserted_window_dims) ||
      !Disjoint(dn.input_batching_dims, dn.scatter_dims_to_operand_dims)) {
    return Error("input_batching_dims ", Dims(dn.input_batching_dims),
                 " must be increasing, in range and disjoint from inserted_window_dims and "
                 "scatter_dims_to_operand_dims");
  }
  if (!InRange(dn.scatter_indices_batching_dims, indices.rank()) ||
      !AllUnique(dn.scatter_indices_batching_dims) ||
      Contains(dn.scatter_indices_batching_dims, dn.index_vector_dim) ||
      dn.scatter_indices_batching_dims.size() != dn.input_batching_dims.size()) {
    return Error("scatter_indices_batching_dims ", Dims(dn.scatter_indices_batching_dims),
                 " are invalid for indices ", Str(indices));
  }
  if (static_cast<int64_t>(dn.update_window_dims.size() + dn.inserted_window_dims.size() +
                           dn.input_batching_dims.size()) != rank) {
    return Error(
        "update_window_dims, inserted_window_dims and input_batching_dims must together "
        "cover the ",
        rank, " operand dimensions");
  }
  if (static_cast<int64_t>(dn.scatter_dims_to_operand_dims.size()) !=
      expanded[dn.index_vector_dim]) {
    return Error("scatter_dims_to_operand_dims ", Dims(dn.scatter_dims_to_operand_dims), " has ",
                 dn.scatter_dims_to_operand_dims.size(), " entries but the index vector has ",
                 expanded[dn.index_vector_dim]);
  }
  if (!InRange(dn.scatter_dims_to_operand_dims, rank) ||
      !AllUnique(dn.scatter_dims_to_operand_dims)) {
    return Error("scatter_dims_to_operand_dims ", Dims(dn.scatter_dims_to_operand_dims),
                 " are invalid for operand ", Str(operand0));
  }
  for (size_t i = 0; i < dn.input_batching_dims.size(); ++i) {
    if (operand0.dimensions(dn.input_batching_dims[i]) !=
        indices.dimensions(dn.scatter_indices_batching_dims[i])) {
      return Error("input batching dimension ", dn.input_batching_dims[i],
                   " and indices batching dimension ", dn.scatter_indices_batching_dims[i],
                   " differ in size");
    }
  }
  std::vector<const Shape*> inits;
  std::vector<PrimitiveType> update_types;
  std::vector<Shape> init_shapes;
  init_shapes.reserve(n);
  for (int64_t k = 0; k < n; ++k) {
    const Shape& operand = Op(k);
    const Shape& updates = Op(n + 1 + k);
    if (operand.dimensions() != operand0.dimensions()) {
      return Error("scatter operands have different dimensions: ", Str(operand0), " and ",
                   Str(operand));
    }
    if (updates.dimensions() != updates0.dimensions()) {
      return Error("scatter updates have different dimensions: ", Str(updates0), " and ",
                   Str(updates));
    }
    const int64_t expected_rank = static_cast<int64_t>(expanded.size()) - 1 +
                                  static_cast<int64_t>(dn.update_window_dims.size());
    if (updates.rank() != expected_rank) {
      return Error("scatter updates ", Str(updates), " must have rank ", expected_rank);
    }
    std::vector<int64_t> window_bounds;
    for (int64_t d = 0; d < rank; ++d) {
      if (Contains(dn.inserted_window_dims, d) || Contains(dn.input_batching_dims, d)) continue;
      window_bounds.push_back(operand.dimensions(d));
    }
    for (size_t i = 0; i < dn.update_window_dims.size(); ++i) {
      const int64_t ud = dn.update_window_dims[i];
      if (updates.dimensions(ud) > window_bounds[i]) {
        return Error("scatter updates window dimension ", ud, " has size ", updates.dimensions(ud),
                     " which exceeds the operand bound ", window_bounds[i]);
      }
    }
    int64_t seen = 0;
    for (int64_t d = 0; d < updates.rank(); ++d) {
      if (Contains(dn.update_window_dims, d)) continue;
      if (seen == dn.index_vector_dim) ++seen;
      if (updates.dimensions(d) != expanded[seen]) {
        return Error("scatter updates dimension ", d, " has size ", updates.dimensions(d),
                     " but the matching indices dimension has size ", expanded[seen]);
      }
      ++seen;
    }
    init_shapes.push_back(MakeArray(operand.element_type(), {}));
    update_types.push_back(updates.element_type());
  }
  for (const Shape& s : init_shapes) inits.push_back(&s);
  absl::StatusOr<Signature> sig = GetSignature(in_.to_apply(), "to_apply");
  if (!sig.ok()) return sig.status();
  MLTUNE_SI_RETURN_IF_ERROR(CheckReducer(*sig, "to_apply", inits, update_types));
  if (n == 1) return NoLayout(operand0);
  std::vector<Shape> outs;
  for (int64_t k = 0; k < n; ++k) outs.push_back(Op(k));
  return MakeTuple(std::move(outs));
}

Result Inferrer::Sort() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectAtLeastOperands(1));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectAllArrays());
  const int64_t n = NumOps();
  for (int64_t i = 1; i < n; ++i) {
    if (Op(i).dimensions() != Op(0).dimensions()) {
      return Error("sort operands have different dimensions: ", Str(Op(0)), " and ", Str(Op(i)));
    }
  }
  MLTUNE_SI_RETURN_IF_ERROR(ExpectCalled(1));
  absl::StatusOr<int64_t> dim = SingleDimension("sort", Op(0).rank());
  if (!dim.ok()) return dim.status();
  absl::StatusOr<Signature> sig = GetSignature(in_.to_apply(), "comparator");
  if (!sig.ok()) return sig.status();
  if (static_cast<int64_t>(sig->params.size()) != 2 * n) {
    return Error("comparator must take ", 2 * n, " parameters but takes ", sig->params.size());
  }
  for (int64_t p = 0; p < 2 * n; ++p) {
    const Shape expected = MakeArray(Op(p / 2).element_type(), {});
    if (!Compat(expected, *sig->params[p], /*ignore_fp=*/true)) {
      return Error("comparator parameter ", p, " has shape ", Str(*sig->params[p]),
                   " but expected ", Str(expected));
    }
  }
  if (!IsScalarOf(*sig->result, PrimitiveType::kPred)) {
    return Error("comparator must return pred[] but returns ", Str(*sig->result));
  }
  if (n == 1) return NoLayout(Op(0));
  std::vector<Shape> outs;
  for (int64_t i = 0; i < n; ++i) outs.push_back(Op(i));
  return MakeTuple(std::move(outs));
}

Result Inferrer::Map() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectAtLeastOperands(1));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectAllArrays());
  MLTUNE_SI_RETURN_IF_ERROR(ExpectCalled(1));
  const Shape& first = Op(0);
  for (int64_t i = 1; i < NumOps(); ++i) {
    if (Op(i).dimensions() != first.dimensions()) {
      return Error("map operands have different dimensions: ", Str(first), " and ", Str(Op(i)));
    }
  }
  if (!in_.dimensions.empty()) {
    for (size_t i = 0; i < in_.dimensions.size(); ++i) {
      if (in_.dimensions[i] != static_cast<int64_t>(i) ||
          static_cast<int64_t>(in_.dimensions.size()) != first.rank()) {
        return Error("map dimensions ", Dims(in_.dimensions), " must be 0..", first.rank() - 1);
      }
    }
  }
  absl::StatusOr<Signature> sig = GetSignature(in_.to_apply(), "to_apply");
  if (!sig.ok()) return sig.status();
  if (static_cast<int64_t>(sig->params.size()) != NumOps()) {
    return Error("to_apply takes ", sig->params.size(), " parameters but map has ", NumOps(),
                 " operands");
  }
  if (!sig->result->IsScalar()) {
    return Error("to_apply must return a scalar but returns ", Str(*sig->result));
  }
  for (int64_t i = 0; i < NumOps(); ++i) {
    if (!sig->params[i]->IsScalar() ||
        !SameTypeIgnoringFp(sig->params[i]->element_type(), Op(i).element_type())) {
      return Error("to_apply parameter ", i, " has shape ", Str(*sig->params[i]), " but operand ",
                   i, " has element type ", TypeStr(Op(i).element_type()));
    }
  }
  return MakeArray(sig->result->element_type(), first.dimensions(), first.dynamic_dimensions());
}

Result Inferrer::Tuple() {
  std::vector<Shape> elems;
  elems.reserve(NumOps());
  for (int64_t i = 0; i < NumOps(); ++i) elems.push_back(Op(i));
  return MakeTuple(std::move(elems));
}

Result Inferrer::GetTupleElement() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(1));
  const Shape& s = Op(0);
  if (!s.IsTuple()) return Error("get-tuple-element operand ", Str(s), " is not a tuple");
  if (in_.tuple_index < 0 || in_.tuple_index >= s.tuple_size()) {
    return Error("tuple index ", in_.tuple_index, " is out of range for ", Str(s));
  }
  return NoLayout(s.tuple_shapes(in_.tuple_index));
}

Result Inferrer::While() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(1));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectCalled(2));
  absl::StatusOr<Signature> cond = GetSignature(in_.while_condition(), "condition");
  if (!cond.ok()) return cond.status();
  absl::StatusOr<Signature> body = GetSignature(in_.while_body(), "body");
  if (!body.ok()) return body.status();
  const Shape& init = Op(0);
  if (cond->params.size() != 1) {
    return Error("condition must take 1 parameter but takes ", cond->params.size());
  }
  if (body->params.size() != 1) {
    return Error("body must take 1 parameter but takes ", body->params.size());
  }
  if (!IsScalarOf(*cond->result, PrimitiveType::kPred)) {
    return Error("condition must return pred[] but returns ", Str(*cond->result));
  }
  if (!Compat(*cond->params[0], init)) {
    return Error("condition parameter ", Str(*cond->params[0]), " does not match init ", Str(init));
  }
  if (!Compat(*body->params[0], init)) {
    return Error("body parameter ", Str(*body->params[0]), " does not match init ", Str(init));
  }
  if (!Compat(*body->result, init)) {
    return Error("body result ", Str(*body->result), " does not match init ", Str(init));
  }
  return NoLayout(init);
}

Result Inferrer::Conditional() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectAtLeastOperands(2));
  const auto& branches = in_.called_computations();
  const Shape& index = Op(0);
  if (!IsScalarOf(index, PrimitiveType::kPred) && !IsScalarOf(index, PrimitiveType::kS32)) {
    return Error("branch index must be pred[] or s32[], got ", Str(index));
  }
  if (index.element_type() == PrimitiveType::kPred && branches.size() != 2) {
    return Error("conditional with a pred index needs 2 branches but has ", branches.size());
  }
  if (branches.empty()) return Error("conditional has no branch computations");
  if (static_cast<int64_t>(branches.size()) != NumOps() - 1) {
    return Error("conditional has ", branches.size(), " branches but ", NumOps() - 1,
                 " branch operands");
  }
  std::optional<Shape> result;
  for (size_t j = 0; j < branches.size(); ++j) {
    absl::StatusOr<Signature> sig = GetSignature(branches[j], absl::StrCat("branch ", j));
    if (!sig.ok()) return sig.status();
    if (sig->params.size() != 1) {
      return Error("branch ", j, " computation ", branches[j]->name(),
                   " must take 1 parameter but takes ", sig->params.size());
    }
    if (!Compat(*sig->params[0], Op(j + 1))) {
      return Error("branch ", j, " computation ", branches[j]->name(), " takes ",
                   Str(*sig->params[0]), " but operand ", j + 1, " is ", Str(Op(j + 1)));
    }
    if (!result.has_value()) {
      result = NoLayout(*sig->result);
    } else if (!Compat(*result, *sig->result)) {
      return Error("branch ", j, " computation ", branches[j]->name(), " returns ",
                   Str(*sig->result), " but branch 0 returns ", Str(*result));
    } else if (result->IsArray()) {
      for (int64_t d = 0; d < result->rank(); ++d) {
        if (sig->result->is_dynamic_dimension(d)) result->set_dynamic_dimension(d, true);
      }
    }
  }
  return result;
}

Result Inferrer::Call() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectCalled(1));
  const char* role = in_.opcode() == Opcode::kFusion ? "fused" : "to_apply";
  absl::StatusOr<Signature> sig = GetSignature(in_.to_apply(), role);
  if (!sig.ok()) return sig.status();
  if (static_cast<int64_t>(sig->params.size()) != NumOps()) {
    return Error(role, " computation ", in_.to_apply()->name(), " takes ", sig->params.size(),
                 " parameters but ", OpStr(in_.opcode()), " has ", NumOps(), " operands");
  }
  for (int64_t i = 0; i < NumOps(); ++i) {
    if (!Compat(*sig->params[i], Op(i))) {
      return Error(role, " computation ", in_.to_apply()->name(), " parameter ", i, " is ",
                   Str(*sig->params[i]), " but operand ", i, " is ", Str(Op(i)));
    }
  }
  return NoLayout(*sig->result);
}

Result Inferrer::TriangularSolve() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(2));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectAllArrays());
  const Shape& a = Op(0);
  const Shape& b = Op(1);
  const TriangularSolveOptions opts = in_.triangular_solve.value_or(TriangularSolveOptions{});
  const PrimitiveType t = a.element_type();
  if ((!IsFloatingPoint(t) && !IsComplex(t)) || t != b.element_type()) {
    return Error("triangular-solve needs identical floating-point or complex types, got ", Str(a),
                 " and ", Str(b));
  }
  if (a.rank() < 2 || b.rank() != a.rank()) {
    return Error("triangular-solve needs operands of equal rank >= 2, got ", Str(a), " and ",
                 Str(b));
  }
  const int64_t r = a.rank();
  if (a.dimensions(r - 2) != a.dimensions(r - 1)) {
    return Error("triangular-solve matrix ", Str(a), " is not square");
  }
  const int64_t shared = b.dimensions(r - (opts.left_side ? 2 : 1));
  if (a.dimensions(r - 1) != shared) {
    return Error("triangular-solve shapes ", Str(a), " and ", Str(b),
                 " do not share the solved dimension");
  }
  for (int64_t d = 0; d < r - 2; ++d) {
    if (a.dimensions(d) != b.dimensions(d)) {
      return Error("triangular-solve batch dimensions of ", Str(a), " and ", Str(b), " differ");
    }
  }
  return NoLayout(b);
}

Result Inferrer::Cholesky() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(1));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(0));
  const Shape& a = Op(0);
  if (!IsFloatingPoint(a.element_type()) && !IsComplex(a.element_type())) {
    return Error("cholesky needs a floating-point or complex operand, got ", Str(a));
  }
  if (a.rank() < 2 || a.dimensions(a.rank() - 2) != a.dimensions(a.rank() - 1)) {
    return Error("cholesky needs square matrices of rank >= 2, got ", Str(a));
  }
  return NoLayout(a);
}

Result Inferrer::BatchNorm() {
  const Opcode op = in_.opcode();
  const int64_t expected = op == Opcode::kBatchNormTraining ? 3 : 5;
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(expected));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectAllArrays());
  const Shape& operand = Op(0);
  if (!IsFloatingPoint(operand.element_type())) {
    return Error(OpStr(op), " operand must be floating-point, got ", Str(operand));
  }
  if (in_.feature_index < 0 || in_.feature_index >= operand.rank()) {
    return Error("feature_index ", in_.feature_index, " is out of range for ", Str(operand));
  }
  const int64_t features = operand.dimensions(in_.feature_index);
  // Operand indices holding per-feature vectors; batch-norm-grad's last operand is grad_output.
  const int64_t last_vector = op == Opcode::kBatchNormGrad ? expected - 2 : expected - 1;
  for (int64_t i = 1; i <= last_vector; ++i) {
    const Shape& v = Op(i);
    if (v.rank() != 1 || v.dimensions(0) != features ||
        !SameTypeIgnoringFp(v.element_type(), operand.element_type())) {
      return Error(OpStr(op), " operand ", i, " ", Str(v), " must be a vector of ", features, " ",
                   TypeStr(operand.element_type()), " features");
    }
  }
  if (op == Opcode::kBatchNormGrad) {
    const Shape& grad = Op(4);
    if (grad.dimensions() != operand.dimensions() ||
        !SameTypeIgnoringFp(grad.element_type(), operand.element_type())) {
      return Error("batch-norm-grad grad_output ", Str(grad), " does not match operand ",
                   Str(operand));
    }
  }
  if (op == Opcode::kBatchNormInference) return NoLayout(operand);
  const Shape feature_shape = MakeArray(operand.element_type(), {features});
  return MakeTuple({operand, feature_shape, feature_shape});
}

Result Inferrer::Fft() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(1));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(0));
  const Shape& s = Op(0);
  const std::vector<int64_t>& len = in_.fft_length;
  const int64_t n = static_cast<int64_t>(len.size());
  if (n < 1 || n > 3) return Error("fft_length must have 1 to 3 entries, got ", Dims(len));
  if (s.rank() < n) return Error("fft of rank ", n, " needs an operand of rank >= ", n);
  const PrimitiveType t = s.element_type();
  const int64_t r = s.rank();
  Shape out = NoLayout(s);
  switch (in_.fft_type) {
    case FftType::kFft:
    case FftType::kIfft:
      if (!IsComplex(t)) return Error("FFT/IFFT needs a complex operand, got ", Str(s));
      return out;
    case FftType::kRfft: {
      if (t != PrimitiveType::kF32 && t != PrimitiveType::kF64) {
        return Error("RFFT needs an f32 or f64 operand, got ", Str(s));
      }
      for (int64_t i = 0; i < n; ++i) {
        if (s.dimensions(r - n + i) != len[i]) {
          return Error("RFFT operand dimension ", r - n + i, " is ", s.dimensions(r - n + i),
                       " but fft_length says ", len[i]);
        }
      }
      std::vector<int64_t> dims = s.dimensions();
      if (len[n - 1] != 0) dims[r - 1] = len[n - 1] / 2 + 1;
      return MakeArray(t == PrimitiveType::kF32 ? PrimitiveType::kC64 : PrimitiveType::kC128,
                       std::move(dims), s.dynamic_dimensions());
    }
    case FftType::kIrfft: {
      if (!IsComplex(t)) return Error("IRFFT needs a complex operand, got ", Str(s));
      for (int64_t i = 0; i < n - 1; ++i) {
        if (s.dimensions(r - n + i) != len[i]) {
          return Error("IRFFT operand dimension ", r - n + i, " is ", s.dimensions(r - n + i),
                       " but fft_length says ", len[i]);
        }
      }
      const int64_t last = s.dimensions(r - 1);
      if ((last != 0 || len[n - 1] != 0) && last != len[n - 1] / 2 + 1) {
        return Error("IRFFT operand minor dimension is ", last, " but should be ",
                     len[n - 1] / 2 + 1);
      }
      std::vector<int64_t> dims = s.dimensions();
      dims[r - 1] = len[n - 1];
      return MakeArray(t == PrimitiveType::kC64 ? PrimitiveType::kF32 : PrimitiveType::kF64,
                       std::move(dims), s.dynamic_dimensions());
    }
  }
  return Error("unknown fft_type");
}

Result Inferrer::Rng() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(2));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectAllArrays());
  MLTUNE_SI_RETURN_IF_ERROR(ExpectDeclaredArray());
  const Shape& a = Op(0);
  const Shape& b = Op(1);
  if (!a.IsScalar() || !b.IsScalar() || a.element_type() != b.element_type()) {
    return Error("rng parameters must be scalars of one type, got ", Str(a), " and ", Str(b));
  }
  const PrimitiveType t = a.element_type();
  if (in_.distribution == RandomDistribution::kNormal && !IsFloatingPoint(t)) {
    return Error("rng normal distribution needs floating-point parameters, got ", Str(a));
  }
  if (in_.distribution == RandomDistribution::kUniform && !IsFloatingPoint(t) && !IsIntegral(t) &&
      t != PrimitiveType::kPred) {
    return Error("rng uniform distribution needs numeric parameters, got ", Str(a));
  }
  return MakeArray(t, in_.shape().dimensions(), in_.shape().dynamic_dimensions());
}

Result Inferrer::Constant() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(0));
  if (in_.literal.has_value() && !in_.literal_elided) {
    const Shape& lit = in_.literal->shape();
    if (!lit.Equal(in_.shape(), /*compare_layout=*/false)) {
      return Error("literal of shape ", Str(lit), " does not match the declared shape ",
                   Str(in_.shape()));
    }
  }
  return std::optional<Shape>();
}

Result Inferrer::TopK() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(1));
  MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(0));
  const Shape& s = Op(0);
  if (s.rank() < 1) return Error("topk needs an operand of rank >= 1");
  const int64_t last = s.dimensions(s.rank() - 1);
  if (in_.topk_k < 0 || in_.topk_k > last) {
    return Error("topk k=", in_.topk_k, " is out of range for ", Str(s));
  }
  std::vector<int64_t> dims = s.dimensions();
  dims.back() = in_.topk_k;
  return MakeTuple({MakeArray(s.element_type(), dims), MakeArray(PrimitiveType::kS32, dims)});
}

Result Inferrer::Collective() {
  const Opcode op = in_.opcode();
  const std::optional<int64_t> group = ReplicaGroupSize(in_);
  auto single_or_tuple = [&](std::vector<Shape> shapes) -> std::optional<Shape> {
    if (shapes.size() == 1) return NoLayout(shapes[0]);
    return MakeTuple(std::move(shapes));
  };
  switch (op) {
    case Opcode::kAllReduce: {
      MLTUNE_SI_RETURN_IF_ERROR(ExpectAtLeastOperands(1));
      MLTUNE_SI_RETURN_IF_ERROR(ExpectAllArrays());
      MLTUNE_SI_RETURN_IF_ERROR(ExpectCalled(1));
      absl::StatusOr<Signature> sig = GetSignature(in_.to_apply(), "to_apply");
      if (!sig.ok()) return sig.status();
      if (sig->params.size() != 2 || !sig->result->IsScalar()) {
        return Error("all-reduce to_apply must be (T, T) -> T on scalars but is ", sig->ToString());
      }
      std::vector<Shape> shapes;
      for (int64_t i = 0; i < NumOps(); ++i) {
        if (!SameTypeIgnoringFp(Op(i).element_type(), sig->result->element_type())) {
          return Error("all-reduce operand ", i, " ", Str(Op(i)),
                       " does not match the reduction type ", TypeStr(sig->result->element_type()));
        }
        shapes.push_back(Op(i));
      }
      return single_or_tuple(std::move(shapes));
    }
    case Opcode::kAllGather:
    case Opcode::kReduceScatter: {
      MLTUNE_SI_RETURN_IF_ERROR(ExpectAtLeastOperands(1));
      MLTUNE_SI_RETURN_IF_ERROR(ExpectAllArrays());
      const bool gather = op == Opcode::kAllGather;
      if (!gather) MLTUNE_SI_RETURN_IF_ERROR(ExpectCalled(1));
      const Shape& declared = in_.shape();
      if (declared.IsTuple() != (NumOps() > 1) ||
          (declared.IsTuple() && declared.tuple_size() != NumOps())) {
        return Error(OpStr(op), " with ", NumOps(), " operands cannot produce ", Str(declared));
      }
      std::vector<Shape> shapes;
      for (int64_t i = 0; i < NumOps(); ++i) {
        const Shape& s = Op(i);
        absl::StatusOr<int64_t> dim = SingleDimension(OpStr(op), s.rank());
        if (!dim.ok()) return dim.status();
        const Shape& decl = declared.IsTuple() ? declared.tuple_shapes(i) : declared;
        Shape out = NoLayout(s);
        std::vector<int64_t> dims = s.dimensions();
        const int64_t size = s.dimensions(*dim);
        if (group.has_value()) {
          if (gather) {
            std::optional<int64_t> grown = CheckedMul(size, *group);
            if (!grown) return Error(OpStr(op), " result size overflows");
            dims[*dim] = *grown;
          } else {
            if (size % *group != 0) {
              return Error("reduce-scatter dimension ", *dim, " of size ", size,
                           " is not divisible by the group size ", *group);
            }
            dims[*dim] = size / *group;
          }
        } else {
          // Group size unknown ({} = all replicas): the scaled dimension comes from the
          // declaration, which must still be a whole multiple.
          if (!decl.IsArray() || decl.rank() != s.rank()) {
            return Error(OpStr(op), " result ", Str(decl), " does not match operand ", Str(s));
          }
          const int64_t d = decl.dimensions(*dim);
          const int64_t big = gather ? d : size, small = gather ? size : d;
          if (small == 0 ? big != 0 : big % small != 0) {
            return Error(OpStr(op), " dimension ", *dim, ": ", big, " is not a multiple of ",
                         small);
          }
          dims[*dim] = d;
        }
        out.set_dimensions(dims);
        for (int64_t d = 0; d < s.rank(); ++d) {
          if (s.is_dynamic_dimension(d)) out.set_dynamic_dimension(d, true);
        }
        out.ClearLayout();
        shapes.push_back(std::move(out));
      }
      return single_or_tuple(std::move(shapes));
    }
    case Opcode::kAllToAll: {
      MLTUNE_SI_RETURN_IF_ERROR(ExpectAtLeastOperands(1));
      MLTUNE_SI_RETURN_IF_ERROR(ExpectAllArrays());
      if (!in_.dimensions.empty()) {
        MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(1));
        absl::StatusOr<int64_t> dim = SingleDimension("all-to-all", Op(0).rank());
        if (!dim.ok()) return dim.status();
        if (group.has_value() && Op(0).dimensions(*dim) % *group != 0) {
          return Error("all-to-all split dimension ", *dim, " of size ", Op(0).dimensions(*dim),
                       " is not divisible by the group size ", *group);
        }
        return NoLayout(Op(0));
      }
      std::vector<Shape> shapes;
      for (int64_t i = 0; i < NumOps(); ++i) {
        if (!Compat(Op(i), Op(0))) {
          return Error("all-to-all operands have different shapes: ", Str(Op(0)), " and ",
                       Str(Op(i)));
        }
        shapes.push_back(Op(i));
      }
      return MakeTuple(std::move(shapes));
    }
    case Opcode::kCollectivePermute: {
      if (NumOps() == 4) return NoLayout(Op(1));
      MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(1));
      MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(0));
      return NoLayout(Op(0));
    }
    case Opcode::kCollectiveBroadcast: {
      MLTUNE_SI_RETURN_IF_ERROR(ExpectAtLeastOperands(1));
      MLTUNE_SI_RETURN_IF_ERROR(ExpectAllArrays());
      std::vector<Shape> shapes;
      for (int64_t i = 0; i < NumOps(); ++i) shapes.push_back(Op(i));
      return single_or_tuple(std::move(shapes));
    }
    default:
      return std::optional<Shape>();
  }
}

Result Inferrer::Bitcast() {
  MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(1));
  const Shape& s = Op(0);
  const Shape& out = in_.shape();
  if (s.IsArray() && out.IsArray() && s.is_static() && out.is_static() &&
      s.ByteSize() != out.ByteSize()) {
    return Error("bitcast from ", Str(s), " (", s.ByteSize(), " bytes) to ", Str(out), " (",
                 out.ByteSize(), " bytes) changes the byte size");
  }
  return std::optional<Shape>();
}

Result Inferrer::Infer() {
  for (const Instruction* op : in_.operands()) {
    if (op == nullptr) return Error("has a null operand");
  }
  const Opcode op = in_.opcode();
  if (IsElementwiseUnary(op)) return Unary();
  if (IsElementwiseBinary(op)) return Binary();
  switch (op) {
    case Opcode::kSelect:
      return Select();
    case Opcode::kClamp:
      return Clamp();
    case Opcode::kBroadcast:
      return Broadcast();
    case Opcode::kReshape:
      return Reshape();
    case Opcode::kDynamicReshape:
      return DynamicReshape();
    case Opcode::kTranspose:
      return Transpose();
    case Opcode::kSlice:
      return Slice();
    case Opcode::kDynamicSlice:
      return DynamicSlice();
    case Opcode::kDynamicUpdateSlice:
      return DynamicUpdateSlice();
    case Opcode::kConcatenate:
      return Concatenate();
    case Opcode::kPad:
      return Pad();
    case Opcode::kReverse:
      return Reverse();
    case Opcode::kIota:
      return Iota();
    case Opcode::kReduce:
      return Reduce();
    case Opcode::kReduceWindow:
      return ReduceWindow();
    case Opcode::kSelectAndScatter:
      return SelectAndScatter();
    case Opcode::kDot:
      return Dot();
    case Opcode::kConvolution:
      return Convolution();
    case Opcode::kGather:
      return Gather();
    case Opcode::kScatter:
      return Scatter();
    case Opcode::kSort:
      return Sort();
    case Opcode::kMap:
      return Map();
    case Opcode::kTuple:
      return Tuple();
    case Opcode::kGetTupleElement:
      return GetTupleElement();
    case Opcode::kWhile:
      return While();
    case Opcode::kConditional:
      return Conditional();
    case Opcode::kCall:
    case Opcode::kFusion:
      return Call();
    case Opcode::kTriangularSolve:
      return TriangularSolve();
    case Opcode::kCholesky:
      return Cholesky();
    case Opcode::kBatchNormTraining:
    case Opcode::kBatchNormInference:
    case Opcode::kBatchNormGrad:
      return BatchNorm();
    case Opcode::kFft:
      return Fft();
    case Opcode::kRng:
      return Rng();
    case Opcode::kConstant:
      return Constant();
    case Opcode::kTopK:
      return TopK();
    case Opcode::kBitcast:
      return Bitcast();
    case Opcode::kAllReduce:
    case Opcode::kAllGather:
    case Opcode::kReduceScatter:
    case Opcode::kAllToAll:
    case Opcode::kCollectivePermute:
    case Opcode::kCollectiveBroadcast:
      return Collective();
    case Opcode::kGetDimensionSize: {
      MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(1));
      MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(0));
      absl::StatusOr<int64_t> dim = SingleDimension("get-dimension-size", Op(0).rank());
      if (!dim.ok()) return dim.status();
      return MakeArray(PrimitiveType::kS32, {});
    }
    case Opcode::kSetDimensionSize: {
      MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(2));
      MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(0));
      absl::StatusOr<int64_t> dim = SingleDimension("set-dimension-size", Op(0).rank());
      if (!dim.ok()) return dim.status();
      if (!IsScalarOf(Op(1), PrimitiveType::kS32)) {
        return Error("set-dimension-size size must be s32[], got ", Str(Op(1)));
      }
      Shape r = NoLayout(Op(0));
      r.set_dynamic_dimension(*dim, true);
      return r;
    }
    case Opcode::kAfterAll:
      for (int64_t i = 0; i < NumOps(); ++i) {
        if (!Op(i).IsToken()) {
          return Error("after-all operand ", i, " must be a token, got ", Str(Op(i)));
        }
      }
      return Shape::Token();
    case Opcode::kAddDependency:
      MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(2));
      if (!Op(1).IsToken()) {
        return Error("add-dependency operand 1 must be a token, got ", Str(Op(1)));
      }
      return NoLayout(Op(0));
    case Opcode::kOptimizationBarrier:
    case Opcode::kDomain:
      MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(1));
      return NoLayout(Op(0));
    case Opcode::kParameter:
      MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(0));
      if (in_.parameter_number < 0) {
        return Error("parameter number ", in_.parameter_number, " is negative");
      }
      return std::optional<Shape>();
    case Opcode::kPartitionId:
    case Opcode::kReplicaId:
      MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(0));
      if (!IsScalarOf(in_.shape(), PrimitiveType::kU32)) {
        return Error(OpStr(op), " must produce u32[], declared ", Str(in_.shape()));
      }
      return std::optional<Shape>();
    case Opcode::kInfeed:
    case Opcode::kRecv:
      MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(1));
      if (!Op(0).IsToken()) {
        return Error(OpStr(op), " operand must be a token, got ", Str(Op(0)));
      }
      return std::optional<Shape>();
    case Opcode::kOutfeed:
    case Opcode::kSend:
      MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(2));
      if (!Op(1).IsToken()) {
        return Error(OpStr(op), " operand 1 must be a token, got ", Str(Op(1)));
      }
      return std::optional<Shape>();
    case Opcode::kRngGetAndUpdateState:
      MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(0));
      return std::optional<Shape>();
    case Opcode::kRngBitGenerator:
      MLTUNE_SI_RETURN_IF_ERROR(ExpectOperands(1));
      MLTUNE_SI_RETURN_IF_ERROR(ExpectArray(0));
      if (in_.shape().IsTuple() &&
          (in_.shape().tuple_size() != 2 || !Compat(in_.shape().tuple_shapes(0), Op(0)))) {
        return Error("rng-bit-generator result ", Str(in_.shape()),
                     " must be (state, values) with state ", Str(Op(0)));
      }
      return std::optional<Shape>();
    default:
      // Declared, not derived: custom-call, async and *-start/*-done pairs, send-done, ...
      return std::optional<Shape>();
  }
}

#undef MLTUNE_SI_RETURN_IF_ERROR

}  // namespace

absl::StatusOr<std::optional<Shape>> InferShape(const Instruction& instr) {
  return Inferrer(instr).Infer();
}

}  // namespace mltune::ir
