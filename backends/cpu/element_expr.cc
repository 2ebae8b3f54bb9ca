#include "backends/cpu/element_expr.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <limits>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/custom_calls.h"
#include "ir/float_types.h"

namespace mltune::backends::cpu {
namespace {

using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;

std::string CompareOp(ir::ComparisonDirection d) {
  switch (d) {
    case ir::ComparisonDirection::kEq:
      return "==";
    case ir::ComparisonDirection::kNe:
      return "!=";
    case ir::ComparisonDirection::kGe:
      return ">=";
    case ir::ComparisonDirection::kGt:
      return ">";
    case ir::ComparisonDirection::kLe:
      return "<=";
    case ir::ComparisonDirection::kLt:
      return "<";
  }
  return "==";
}

std::string ElementwiseExprInType(const Instruction& instr, const std::vector<std::string>& a,
                                  const TextDialect& dialect) {
  const std::string ct = CType(instr.shape().element_type());
  auto call = [&](const std::string& fn) {
    return absl::StrCat(fn, "(", absl::StrJoin(a, ", "), ")");
  };
  auto std_call = [&](const char* fn) { return call(absl::StrCat(dialect.std_ns, fn)); };
  // libm functions, cast back to the element type (they return double for integer arguments).
  static const std::map<Opcode, const char*> kLibm = {
      {Opcode::kExpm1, "expm1"}, {Opcode::kLog, "log"},   {Opcode::kLog1p, "log1p"},
      {Opcode::kSqrt, "sqrt"},   {Opcode::kCbrt, "cbrt"}, {Opcode::kSin, "sin"},
      {Opcode::kCos, "cos"},     {Opcode::kTan, "tan"},   {Opcode::kFloor, "floor"},
      {Opcode::kCeil, "ceil"}};
  if (auto it = kLibm.find(instr.opcode()); it != kLibm.end()) {
    return absl::StrCat("(", ct, ")", std_call(it->second));
  }
  switch (instr.opcode()) {
    case Opcode::kAdd:
      return call("mt_add");
    case Opcode::kSubtract:
      return call("mt_sub");
    case Opcode::kMultiply:
      return call("mt_mul");
    case Opcode::kDivide:
      return call("mt_div");
    case Opcode::kRemainder:
      return call("mt_rem");
    case Opcode::kMaximum:
      return call("mt_max");
    case Opcode::kMinimum:
      return call("mt_min");
    case Opcode::kPower:
      return call("mt_pow");
    case Opcode::kAtan2:
      return std_call("atan2");
    case Opcode::kShiftLeft:
      return call("mt_shl");
    case Opcode::kShiftRightLogical:
      return call("mt_shrl");
    case Opcode::kShiftRightArithmetic:
      return call("mt_shra");
    case Opcode::kAnd:
      return absl::StrCat("(", ct, ")(", a[0], " & ", a[1], ")");
    case Opcode::kOr:
      return absl::StrCat("(", ct, ")(", a[0], " | ", a[1], ")");
    case Opcode::kXor:
      return absl::StrCat("(", ct, ")(", a[0], " ^ ", a[1], ")");
    case Opcode::kCompare:
      if (instr.comparison_type == ir::ComparisonType::kFloatTotalOrder) {
        return absl::StrCat("(mt_total_key(", a[0], ") ", CompareOp(*instr.comparison_direction),
                            " mt_total_key(", a[1], "))");
      }
      return absl::StrCat("(", a[0], " ", CompareOp(*instr.comparison_direction), " ", a[1], ")");
    case Opcode::kSelect:
      return absl::StrCat("(", a[0], " ? ", a[1], " : ", a[2], ")");
    case Opcode::kClamp:
      return absl::StrCat("mt_clamp<", ct, ">(", a[0], ", ", a[1], ", ", a[2], ")");
    case Opcode::kConvert:
      return absl::StrCat("mt_convert<", ct, ">(", a[0], ")");
    case Opcode::kBitcastConvert: {  // same width (CheckInstructionSupported)
      // 16-bit floats are float values here: their bits come from, and go to, the stored form.
      const PrimitiveType from = instr.operand(0)->shape().element_type();
      const PrimitiveType to = instr.shape().element_type();
      const std::string bits = from == PrimitiveType::kBF16 || from == PrimitiveType::kF16
                                   ? StoreAs(from, a[0])
                                   : absl::StrCat("(", CType(from), ")", a[0]);
      if (to == PrimitiveType::kBF16 || to == PrimitiveType::kF16) {
        return LoadAs(to, absl::StrCat(dialect.std_ns, "bit_cast<uint16_t>(", bits, ")"));
      }
      return absl::StrCat(dialect.std_ns, "bit_cast<", ct, ">(", bits, ")");
    }
    case Opcode::kCopy:
      return a[0];
    case Opcode::kAbs:
      return call("mt_abs");
    case Opcode::kNegate:
      return call("mt_neg");
    case Opcode::kSign:
      return call("mt_sign");
    case Opcode::kNot:
      return call("mt_not");
    case Opcode::kPopulationCount:
      return call("mt_popcnt");
    case Opcode::kClz:
      return call("mt_clz");
    case Opcode::kExp:
      return call("mt_exp");
    case Opcode::kErf:
      return call("mt_erf");
    case Opcode::kTanh:
      return call("mt_tanh");
    case Opcode::kLogistic:
      return call("mt_logistic");
    case Opcode::kRsqrt:
      return absl::StrCat("(", ct, ")1 / ", dialect.std_ns, "sqrt(", a[0], ")");
    case Opcode::kIsFinite:
      return absl::StrCat("(bool)", dialect.std_ns, "isfinite(", a[0], ")");
    case Opcode::kRoundNearestAfz:
      return std_call("round");
    case Opcode::kRoundNearestEven:
      return std_call("nearbyint");
    default:
      return absl::StrCat("/* no expression for ", std::string(ir::OpcodeName(instr.opcode())),
                          " */ ", ct, "(0)");
  }
}

}  // namespace

const TextDialect& CppDialect() {
  static const TextDialect* d = new TextDialect{};
  return *d;
}

std::string CType(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kPred:
      return "bool";
    case PrimitiveType::kS8:
      return "int8_t";
    case PrimitiveType::kS16:
      return "int16_t";
    case PrimitiveType::kS32:
      return "int32_t";
    case PrimitiveType::kS64:
      return "int64_t";
    case PrimitiveType::kU8:
      return "uint8_t";
    case PrimitiveType::kU16:
      return "uint16_t";
    case PrimitiveType::kU32:
      return "uint32_t";
    case PrimitiveType::kU64:
      return "uint64_t";
    case PrimitiveType::kF64:
      return "double";
    default:
      return "float";
  }
}
// pred is stored one byte per element, as in Literal; bf16 and f16 as their 16 bits, computed in
// float as XLA's CPU backend does (each op's result rounded back to the type).
std::string StorageType(PrimitiveType t) {
  if (t == PrimitiveType::kPred) return "uint8_t";
  if (t == PrimitiveType::kBF16 || t == PrimitiveType::kF16) return "uint16_t";
  return CType(t);
}
// A stored element `load` of type `t` as its C type, and a value as what is stored.
std::string LoadAs(PrimitiveType t, const std::string& load) {
  if (t == PrimitiveType::kPred) return absl::StrCat("(bool)", load);
  if (t == PrimitiveType::kBF16) return absl::StrCat("mt_bf16_load(", load, ")");
  if (t == PrimitiveType::kF16) return absl::StrCat("mt_f16_load(", load, ")");
  return load;
}
std::string StoreAs(PrimitiveType t, const std::string& v) {
  if (t == PrimitiveType::kPred) return absl::StrCat("(uint8_t)", v);
  if (t == PrimitiveType::kBF16) return absl::StrCat("mt_bf16_store(", v, ")");
  if (t == PrimitiveType::kF16) return absl::StrCat("mt_f16_store(", v, ")");
  return v;
}

std::string LiteralText(const ir::Literal& lit, int64_t i, const TextDialect& dialect) {
  const PrimitiveType t = lit.element_type();
  const std::string ct = CType(t);
  if (t == PrimitiveType::kPred) return lit.GetAsBool(i) ? "true" : "false";
  if (ir::IsFloatingPoint(t)) {
    const double v = lit.GetAsDouble(i);
    if (std::isnan(v)) {
      // By its bits: the sign of a NaN orders it under compare's TOTALORDER (sort, topk).
      if (t == PrimitiveType::kF64) {
        return absl::StrCat(dialect.std_ns, "bit_cast<double>((uint64_t)",
                            std::bit_cast<uint64_t>(v), "ULL)");
      }
      return absl::StrCat(dialect.std_ns, "bit_cast<float>((uint32_t)",
                          std::bit_cast<uint32_t>(static_cast<float>(v)), "U)");
    }
    if (std::isinf(v)) {
      return absl::StrCat(v < 0 ? "-" : "", absl::StrCat(dialect.std_ns, "numeric_limits<"), ct,
                          ">::infinity()");
    }
    // In the value's C type: a bf16 or f16 literal is a float, as the values it meets are (a
    // double there made mt_mul(const float&, double) ambiguous).
    return absl::StrFormat(t == PrimitiveType::kF64 ? "(double)%.17g" : "(float)%.9g", v);
  }
  if (ir::IsSignedIntegral(t)) {
    const int64_t v = lit.GetAsInt64(i);
    if (v == std::numeric_limits<int64_t>::min())
      return absl::StrCat(dialect.std_ns, "numeric_limits<int64_t>::min()");
    return absl::StrCat("(", ct, ")", v, "LL");
  }
  return absl::StrCat("(", ct, ")", lit.GetAsUint64(i), "ULL");
}

std::string Linear(const std::vector<int64_t>& dims, const Idx& idx) {
  std::vector<std::string> terms;
  int64_t stride = 1;
  for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
    const size_t du = static_cast<size_t>(d);
    if (dims[du] != 1 && idx[du] != "0") {
      terms.push_back(stride == 1 ? absl::StrCat("(", idx[du], ")")
                                  : absl::StrCat("(", idx[du], ")*", stride, "LL"));
    }
    stride *= dims[du];
  }
  if (terms.empty()) return "0";
  std::reverse(terms.begin(), terms.end());
  return absl::StrJoin(terms, " + ");
}

std::string ElementEmitter::LinearIndex(const std::vector<int64_t>& dims, const Idx& idx) {
  std::vector<std::pair<std::string, int64_t>> terms;
  int64_t stride = 1;
  for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
    const size_t du = static_cast<size_t>(d);
    if (dims[du] != 1 && idx[du] != "0") {
      index_.Bound(idx[du], 0, dims[du] - 1);
      terms.emplace_back(idx[du], stride);
    }
    stride *= dims[du];
  }
  std::reverse(terms.begin(), terms.end());
  return index_.Sum(terms, 0);
}

int64_t Product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

std::string Clamp(const std::string& v, int64_t lo, int64_t hi, const TextDialect& dialect) {
  return absl::StrCat(dialect.std_ns, "min<int64_t>(", dialect.std_ns, "max<int64_t>(", v, ", ", lo,
                      "), ", hi, ")");
}

std::string ElementwiseExpr(const Instruction& instr, const std::vector<std::string>& a,
                            const TextDialect& dialect) {
  const std::string e = ElementwiseExprInType(instr, a, dialect);
  switch (instr.shape().element_type()) {
    case PrimitiveType::kBF16:
      return absl::StrCat("mt_round_bf16(", e, ")");
    case PrimitiveType::kF16:
      return absl::StrCat("mt_round_f16(", e, ")");
    default:
      return e;
  }
}

std::string ScalarFunction(const ir::Computation& comp, const std::string& name,
                           const TextDialect& dialect) {
  std::vector<std::string> params;
  for (const Instruction* p : comp.parameters()) {
    params.push_back(absl::StrCat(CType(p->shape().element_type()), " p", p->parameter_number));
  }
  std::string text =
      absl::StrCat(dialect.function_qualifier, " ", CType(comp.root()->shape().element_type()), " ",
                   name, "(", absl::StrJoin(params, ", "), ") {\n");
  std::unordered_map<const Instruction*, std::string> var;
  int n = 0;
  for (const Instruction* i : comp.MakePostOrder()) {
    if (i->opcode() == Opcode::kParameter) {
      var[i] = absl::StrCat("p", i->parameter_number);
      continue;
    }
    if (i->opcode() == Opcode::kConstant) {
      var[i] = LiteralText(*i->literal, 0, dialect);
      continue;
    }
    std::vector<std::string> args;
    for (const Instruction* operand : i->operands()) args.push_back(var.at(operand));
    const std::string v = absl::StrCat("r", n++);
    absl::StrAppend(&text, "  const ", CType(i->shape().element_type()), " ", v, " = ",
                    ElementwiseExpr(*i, args, dialect), ";\n");
    var[i] = v;
  }
  absl::StrAppend(&text, "  return ", var.at(comp.root()), ";\n}\n");
  return text;
}

std::string ConstantPool::Name(const Instruction* c) {
  auto it = names_.find(c);
  if (it != names_.end()) return it->second;
  const std::string name = absl::StrCat("cst_", names_.size());
  const ir::Literal& lit = *c->literal;
  names_[c] = name;
  if (in_segment_ && lit.size_bytes() > kInlineConstantBytes) {
    // Stored as the literal stores it (bf16 and f16 as their 16 bits, pred as bytes), which is
    // what StorageType reads.
    const int64_t offset =
        (static_cast<int64_t>(segment_.size()) + kSegmentAlign - 1) / kSegmentAlign * kSegmentAlign;
    segment_.resize(static_cast<size_t>(offset), '\0');
    segment_.append(reinterpret_cast<const char*>(lit.untyped_data()),
                    static_cast<size_t>(lit.size_bytes()));
    absl::StrAppend(&decls_, "#define ", name, " ((const ", StorageType(lit.element_type()),
                    "*)__builtin_assume_aligned(mt_constants + ", offset, ", ", kSegmentAlign,
                    "))\n");
    return name;
  }
  std::string text =
      absl::StrCat(dialect_.constant_qualifier, " ", StorageType(lit.element_type()), " ", name,
                   "[", std::max<int64_t>(1, lit.element_count()), "] = {");
  const PrimitiveType t = lit.element_type();
  for (int64_t i = 0; i < lit.element_count(); ++i) {
    std::string v;
    if (t == PrimitiveType::kBF16 || t == PrimitiveType::kF16) {
      const float f = static_cast<float>(lit.GetAsDouble(i));
      v = absl::StrCat(t == PrimitiveType::kBF16 ? ir::FloatToBF16(f) : ir::FloatToHalf(f));
    } else {
      v = LiteralText(lit, i, dialect_);
    }
    absl::StrAppend(&text, i == 0 ? "" : ",", (i % 8 == 7) ? "\n  " : "", v);
  }
  absl::StrAppend(&text, "};\n");
  decls_ += text;
  return name;
}

void ElementEmitter::Line(const std::string& s) { absl::StrAppend(&code_, indent_, s, "\n"); }

void ElementEmitter::Open(const std::string& s) {
  Line(s);
  indent_ += "  ";
}

void ElementEmitter::Close() {
  indent_.resize(indent_.size() - 2);
  Line("}");
}

std::string ElementEmitter::NewName(const std::string& prefix) {
  return absl::StrCat(prefix, counter_++);
}

std::string ElementEmitter::Var(const std::string& type, const std::string& expr) {
  const std::string v = NewName("v");
  const std::string line = absl::StrCat("const ", type, " ", v, " = ", expr, ";");
  if (hoist_levels_.empty()) {
    Line(line);
    return v;
  }
  const int innermost = static_cast<int>(hoist_levels_.size()) - 1;
  const int level = indent_.size() == hoist_depth_ ? LoopLevel(expr) : innermost;
  if (level >= innermost) {
    Line(line);
    var_level_[v] = innermost;
    return v;
  }
  // Inside loop `level`, just before loop level + 1 (and its pragmas) opens.
  HoistLevel& at = hoist_levels_[static_cast<size_t>(level + 1)];
  const std::string text = absl::StrCat(at.indent, line, "\n");
  const size_t pos = at.pos;
  code_.insert(pos, text);
  for (HoistLevel& l : hoist_levels_) {
    if (l.pos >= pos) l.pos += text.size();
  }
  var_level_[v] = level;
  return v;
}

// The deepest loop of the hoisting nest whose index `expr` reads, directly or through values
// computed from it; -1 when it reads none.
int ElementEmitter::LoopLevel(const std::string& expr) const {
  int level = -1;
  for (size_t i = 0; i < expr.size();) {
    if (std::isalpha(static_cast<unsigned char>(expr[i])) || expr[i] == '_') {
      size_t j = i;
      while (j < expr.size() &&
             (std::isalnum(static_cast<unsigned char>(expr[j])) || expr[j] == '_')) {
        ++j;
      }
      auto it = var_level_.find(expr.substr(i, j - i));
      if (it != var_level_.end()) level = std::max(level, it->second);
      i = j;
    } else {
      ++i;
    }
  }
  return level;
}

std::string ElementEmitter::MemoKey(const Instruction* instr, const Idx& idx) {
  return absl::StrCat(reinterpret_cast<uintptr_t>(instr), ":", absl::StrJoin(idx, ","));
}

std::string ElementEmitter::Value(const Instruction* instr, const Idx& idx) {
  const std::string key = MemoKey(instr, idx);
  for (auto it = memo_.rbegin(); it != memo_.rend(); ++it) {
    auto found = it->find(key);
    if (found != it->end()) return found->second;
  }
  std::string v = Provided(instr, idx);
  if (v.empty()) v = k_.Contains(instr) ? Compute(instr, idx) : External(instr, idx);
  memo_.back()[key] = v;
  return v;
}

std::string ElementEmitter::Compute(const Instruction* instr, const Idx& idx) {
  const PrimitiveType t = instr->shape().element_type();
  const std::string ct = CType(t);
  const std::vector<int64_t>& dims = instr->shape().dimensions();
  const Opcode opcode = instr->opcode();
  if (opcode == Opcode::kCopy) return Value(instr->operand(0), idx);
  if (ir::IsElementwise(opcode)) {
    std::vector<std::string> args;
    for (const Instruction* operand : instr->operands()) args.push_back(Value(operand, idx));
    return Var(ct, ElementwiseExpr(*instr, args, dialect_));
  }
  std::string e;
  switch (opcode) {
    case Opcode::kBroadcast: {
      Idx o;
      for (int64_t d : instr->dimensions) o.push_back(idx[static_cast<size_t>(d)]);
      return Value(instr->operand(0), o);
    }
    case Opcode::kTranspose: {
      Idx o(idx.size());
      for (size_t j = 0; j < idx.size(); ++j) {
        o[static_cast<size_t>(instr->dimensions[j])] = idx[j];
      }
      return Value(instr->operand(0), o);
    }
    case Opcode::kReshape:
    case Opcode::kBitcast: {
      const std::vector<int64_t>& od = instr->operand(0)->shape().dimensions();
      Idx o(od.size(), "0");
      if (ir::ReshapeMovesOnlyUnitDims(dims, od)) {  // map the other dimensions one to one
        size_t j = 0;
        for (size_t i = 0; i < dims.size(); ++i) {
          if (dims[i] == 1) continue;
          while (od[j] == 1) ++j;
          o[j++] = idx[i];
        }
      } else {
        const std::string lin = LinearIndex(dims, idx);
        const std::vector<int64_t> strides = ir::RowMajorStrides(od);
        for (size_t j = 0; j < od.size(); ++j) {
          if (od[j] == 1) continue;
          const std::string q = index_.Div(lin, strides[j]);
          o[j] = j == 0 ? q : index_.Mod(q, od[j]);
        }
      }
      return Value(instr->operand(0), o);
    }
    case Opcode::kSlice: {
      Idx o(idx.size());
      for (size_t d = 0; d < idx.size(); ++d) {
        const ir::SliceDim& s = instr->slice[d];
        o[d] = index_.Sum({{idx[d], s.stride}}, s.start);
      }
      return Value(instr->operand(0), o);
    }
    case Opcode::kReverse: {
      Idx o = idx;
      for (int64_t d : instr->dimensions) {
        const size_t du = static_cast<size_t>(d);
        o[du] = index_.Sum({{idx[du], -1}}, dims[du] - 1);
      }
      return Value(instr->operand(0), o);
    }
    case Opcode::kConcatenate: {
      const size_t d = static_cast<size_t>(instr->dimensions[0]);
      std::vector<int64_t> offsets;
      int64_t off = 0;
      for (const Instruction* operand : instr->operands()) {
        offsets.push_back(off);
        off += operand->shape().dimensions(static_cast<int64_t>(d));
      }
      std::string result;
      for (int64_t j = instr->operand_count() - 1; j >= 0; --j) {
        const size_t ju = static_cast<size_t>(j);
        const int64_t size = instr->operand(j)->shape().dimensions(static_cast<int64_t>(d));
        Idx o = idx;
        o[d] = Clamp(index_.Sum({{idx[d], 1}}, -offsets[ju]), 0, std::max<int64_t>(0, size - 1));
        if (size == 0) continue;
        const std::string v = Value(instr->operand(j), o);
        result = result.empty() ? v
                                : absl::StrCat("((", idx[d], ") < ", offsets[ju + 1], " ? ", v,
                                               " : ", result, ")");
      }
      e = result;
      break;
    }
    case Opcode::kPad: {
      const std::vector<int64_t>& od = instr->operand(0)->shape().dimensions();
      Idx o(idx.size());
      std::vector<std::string> valid;
      for (size_t d = 0; d < idx.size(); ++d) {
        const ir::PaddingDim& p = instr->padding[d];
        if (p.low == 0 && p.high == 0 && p.interior == 0) {
          o[d] = idx[d];
          continue;
        }
        const std::string tpos = IntVar(absl::StrCat("(", idx[d], ") - (", p.low, "LL)"));
        if (p.interior == 0) {
          valid.push_back(absl::StrCat(tpos, " >= 0 && ", tpos, " < ", od[d]));
          o[d] = Clamp(tpos, 0, std::max<int64_t>(0, od[d] - 1));
        } else {
          const int64_t step = p.interior + 1;
          valid.push_back(absl::StrCat(tpos, " >= 0 && ", tpos, " % ", step, " == 0 && ", tpos,
                                       " / ", step, " < ", od[d]));
          o[d] = Clamp(absl::StrCat(tpos, " / ", step), 0, std::max<int64_t>(0, od[d] - 1));
        }
      }
      const std::string padv = Value(instr->operand(1), {});
      if (Product(od) == 0) return padv;
      const std::string v = Value(instr->operand(0), o);
      if (valid.empty()) return v;
      e = absl::StrCat("(", absl::StrJoin(valid, " && "), ") ? ", v, " : ", padv);
      break;
    }
    case Opcode::kIota:
      e = absl::StrCat("(", ct, ")(", idx[static_cast<size_t>(instr->iota_dimension)], ")");
      break;
    case Opcode::kDynamicSlice: {
      const std::vector<int64_t>& od = instr->operand(0)->shape().dimensions();
      Idx o(idx.size());
      for (size_t d = 0; d < idx.size(); ++d) {
        const std::string start =
            ClampedStart(instr->operand(static_cast<int64_t>(d) + 1), od[d] - dims[d]);
        o[d] = index_.Sum({{idx[d], 1}, {start, 1}}, 0);
      }
      return Value(instr->operand(0), o);
    }
    case Opcode::kCustomCall: {
      const internal::KnownCustomCall call = internal::FindKnownCustomCall(*instr);
      const std::string x = Value(instr->operand(0), idx);
      if (call == internal::KnownCustomCall::kIdentity) return x;
      e = internal::KnownCustomCallExpr(call, x, ct, dialect_.std_ns);
      break;
    }
    case Opcode::kGather: {
      // Per output element (XLA's semantics, as ir/evaluator/gather_scatter.cc): the output's
      // batch dimensions pick an index vector, whose entries (clamped so the slice fits) start
      // the slice in the operand; the offset dimensions walk the slice.
      const ir::GatherDimensionNumbers& dn = *instr->gather_dnums;
      const Instruction* indices = instr->operand(1);
      const std::vector<int64_t>& od = instr->operand(0)->shape().dimensions();
      const int64_t index_rank = indices->shape().rank();
      auto contains = [](const std::vector<int64_t>& v, int64_t x) {
        return std::find(v.begin(), v.end(), x) != v.end();
      };
      Idx batch;  // the output's batch dimensions, in order
      for (size_t d = 0; d < idx.size(); ++d) {
        if (!contains(dn.offset_dims, static_cast<int64_t>(d))) batch.push_back(idx[d]);
      }
      auto index_entry = [&](int64_t k) {  // entry k of the index vector at `batch`
        Idx at;
        size_t j = 0;
        for (int64_t d = 0; d < index_rank; ++d) {
          at.push_back(d == dn.index_vector_dim ? absl::StrCat(k) : batch[j++]);
        }
        return Value(indices, at);
      };
      Idx start(od.size(), "0");
      for (size_t k = 0; k < dn.start_index_map.size(); ++k) {
        start[static_cast<size_t>(dn.start_index_map[k])] =
            absl::StrCat("(int64_t)", index_entry(static_cast<int64_t>(k)));
      }
      for (size_t i = 0; i < dn.operand_batching_dims.size(); ++i) {
        const int64_t d = dn.start_indices_batching_dims[i];
        start[static_cast<size_t>(dn.operand_batching_dims[i])] =
            batch[static_cast<size_t>(d < dn.index_vector_dim ? d : d - 1)];
      }
      Idx o(od.size());
      size_t window = 0;
      for (size_t d = 0; d < od.size(); ++d) {
        const int64_t size = instr->gather_slice_sizes[d];
        std::string at = start[d] == "0" ? "0" : IntVar(Clamp(start[d], 0, od[d] - size));
        const bool walked = !contains(dn.collapsed_slice_dims, static_cast<int64_t>(d)) &&
                            !contains(dn.operand_batching_dims, static_cast<int64_t>(d));
        if (walked) {
          const std::string offset = idx[static_cast<size_t>(dn.offset_dims[window++])];
          at = index_.Sum({{offset, 1}, {at, 1}}, 0);
        }
        o[d] = at;
      }
      return Value(instr->operand(0), o);
    }
    case Opcode::kDot: {
      // A dot the GEMMs do not take (f64, integers, bf16): a fold over the contracting
      // dimensions in the result's type, integers wrapping as XLA's do.
      const ir::DotDimensionNumbers& dn = *instr->dot_dnums;
      const Instruction* lhs = instr->operand(0);
      const Instruction* rhs = instr->operand(1);
      const int64_t lr = lhs->shape().rank(), rr = rhs->shape().rank();
      auto is_in = [](const std::vector<int64_t>& v, int64_t d) {
        return std::find(v.begin(), v.end(), d) != v.end();
      };
      Idx li(static_cast<size_t>(lr)), ri(static_cast<size_t>(rr));
      size_t at = 0;  // the output's dimensions: batch, lhs free, rhs free
      for (size_t b = 0; b < dn.lhs_batch_dimensions.size(); ++b, ++at) {
        li[static_cast<size_t>(dn.lhs_batch_dimensions[b])] = idx[at];
        ri[static_cast<size_t>(dn.rhs_batch_dimensions[b])] = idx[at];
      }
      for (int64_t d = 0; d < lr; ++d) {
        if (!is_in(dn.lhs_batch_dimensions, d) && !is_in(dn.lhs_contracting_dimensions, d)) {
          li[static_cast<size_t>(d)] = idx[at++];
        }
      }
      for (int64_t d = 0; d < rr; ++d) {
        if (!is_in(dn.rhs_batch_dimensions, d) && !is_in(dn.rhs_contracting_dimensions, d)) {
          ri[static_cast<size_t>(d)] = idx[at++];
        }
      }
      const std::string acc = NewName("acc");
      Line(absl::StrCat(ct, " ", acc, " = (", ct, ")0;"));
      // Declared in the innermost loop: what reads it stays there (Var's hoisting).
      if (!hoist_levels_.empty()) var_level_[acc] = static_cast<int>(hoist_levels_.size()) - 1;
      int opened = 0;
      for (size_t c = 0; c < dn.lhs_contracting_dimensions.size(); ++c) {
        const int64_t ld = dn.lhs_contracting_dimensions[c], rd = dn.rhs_contracting_dimensions[c];
        const std::string k = NewName("c");
        Open(absl::StrCat("for (int64_t ", k, " = 0; ", k, " < ", lhs->shape().dimensions(ld),
                          "; ++", k, ") {"));
        ++opened;
        li[static_cast<size_t>(ld)] = k;
        ri[static_cast<size_t>(rd)] = k;
      }
      PushScope();
      const std::string a = absl::StrCat("(", ct, ")", Value(lhs, li));
      const std::string b = absl::StrCat("(", ct, ")", Value(rhs, ri));
      Line(absl::StrCat(acc, " = ",
                        ir::IsFloatingPoint(t)
                            ? absl::StrCat(acc, " + ", a, " * ", b)
                            : absl::StrCat("mt_add(", acc, ", mt_mul(", a, ", ", b, "))"),
                        ";"));
      PopScope();
      for (int i = 0; i < opened; ++i) Close();
      const std::string rounded =
          t == PrimitiveType::kBF16  ? absl::StrCat("mt_round_bf16(", acc, ")")
          : t == PrimitiveType::kF16 ? absl::StrCat("mt_round_f16(", acc, ")")
                                     : acc;
      return Var(ct, rounded);
    }
    case Opcode::kDynamicUpdateSlice: {
      const std::vector<int64_t>& ud = instr->operand(1)->shape().dimensions();
      Idx u(idx.size());
      std::vector<std::string> inside;
      for (size_t d = 0; d < idx.size(); ++d) {
        const std::string start =
            ClampedStart(instr->operand(static_cast<int64_t>(d) + 2), dims[d] - ud[d]);
        inside.push_back(absl::StrCat("(", idx[d], ") >= ", start, " && (", idx[d], ") < ", start,
                                      " + ", ud[d]));
        u[d] = Clamp(absl::StrCat("(", idx[d], ") - ", start), 0, std::max<int64_t>(0, ud[d] - 1));
      }
      const std::string base = Value(instr->operand(0), idx);
      if (Product(ud) == 0) return base;
      const std::string upd = Value(instr->operand(1), u);
      e = absl::StrCat("(", absl::StrJoin(inside, " && "), ") ? ", upd, " : ", base);
      break;
    }
    default:
      e = absl::StrCat("/* unsupported ", std::string(ir::OpcodeName(opcode)), " */ 0");
      break;
  }
  return Var(ct, e);
}

Idx ElementEmitter::ScatterTarget(const Instruction* s, const Idx& idx,
                                  std::vector<std::string>* fits) {
  const ir::ScatterDimensionNumbers& dn = *s->scatter_dnums;
  const Instruction* indices = s->operand(1);
  const std::vector<int64_t>& od = s->shape().dimensions();
  const std::vector<int64_t>& ud = s->operand(2)->shape().dimensions();
  auto contains = [](const std::vector<int64_t>& v, int64_t x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  std::vector<int64_t> window_op_dims;
  for (size_t d = 0; d < od.size(); ++d) {
    const int64_t di = static_cast<int64_t>(d);
    if (!contains(dn.inserted_window_dims, di) && !contains(dn.input_batching_dims, di)) {
      window_op_dims.push_back(di);
    }
  }
  std::vector<int64_t> window_size(od.size(), 1);
  for (size_t k = 0; k < window_op_dims.size(); ++k) {
    window_size[static_cast<size_t>(window_op_dims[k])] =
        ud[static_cast<size_t>(dn.update_window_dims[k])];
  }
  Idx batch;
  for (size_t d = 0; d < idx.size(); ++d) {
    if (!contains(dn.update_window_dims, static_cast<int64_t>(d))) batch.push_back(idx[d]);
  }
  const int64_t index_rank = indices->shape().rank();
  Idx start(od.size(), "0");
  for (size_t k = 0; k < dn.scatter_dims_to_operand_dims.size(); ++k) {
    Idx at;
    size_t j = 0;
    for (int64_t d = 0; d < index_rank; ++d) {
      at.push_back(d == dn.index_vector_dim ? absl::StrCat(k) : batch[j++]);
    }
    start[static_cast<size_t>(dn.scatter_dims_to_operand_dims[k])] =
        IntVar(absl::StrCat("(int64_t)", Value(indices, at)));
  }
  for (size_t i = 0; i < dn.input_batching_dims.size(); ++i) {
    const int64_t d = dn.scatter_indices_batching_dims[i];
    start[static_cast<size_t>(dn.input_batching_dims[i])] =
        batch[static_cast<size_t>(d < dn.index_vector_dim ? d : d - 1)];
  }
  Idx target(od.size());
  size_t window = 0;
  for (size_t d = 0; d < od.size(); ++d) {
    if (start[d] != "0") {
      fits->push_back(
          absl::StrCat(start[d], " >= 0 && ", start[d], " <= ", od[d] - window_size[d]));
    }
    std::string at = start[d];
    if (window < window_op_dims.size() && window_op_dims[window] == static_cast<int64_t>(d)) {
      const std::string offset = idx[static_cast<size_t>(dn.update_window_dims[window++])];
      at = at == "0" ? offset : absl::StrCat("(", at, ") + (", offset, ")");
    }
    target[d] = at;
  }
  return target;
}

}  // namespace mltune::backends::cpu
