// Fuzzes the CPU code generator with random small modules that mix element types (pred, s32, u8,
// s64, bf16, f16, f32, f64) through converts, elementwise ops, compares, selects, clamps,
// broadcasts of constants and scalars of each type, reductions and dots: every module must
// compile and match the reference evaluator. Each module holds many random expressions, so one
// g++ run checks dozens of them; half the modules go through the CPU pipeline first (its
// simplifier folds broadcast constants into the expressions, as on real models), half are lowered
// as written. MLTUNE_DTYPE_FUZZ_SEEDS=N runs N seeds instead of the default for longer fuzzing.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/cpu_backend.h"
#include "gtest/gtest.h"
#include "ir/hlo_parser.h"

namespace mltune::backends::cpu {
namespace {

enum T { kPred, kS32, kU8, kS64, kBF16, kF16, kF32, kF64, kNumTypes };
constexpr const char* kTypeName[] = {"pred", "s32", "u8", "s64", "bf16", "f16", "f32", "f64"};

bool IsFloat(T t) { return t >= kBF16; }
bool IsSigned(T t) { return t == kS32 || t == kS64; }

// One value of the pool: a [8,8] array. `exact` means the evaluator and the generated code agree
// on it bit for bit: no transcendental function, no float multiply (GCC contracts a * b + c to
// an FMA), no float sum of several terms in it. Ops whose result jumps at a threshold (floor,
// compare, float-to-integer converts, remainder) only take exact operands, so a one-ulp
// difference never becomes an integer or pred difference the comparison cannot allow for.
struct Value {
  std::string name;
  T type;
  bool exact;
};

class ModuleGen {
 public:
  explicit ModuleGen(uint64_t seed) : rng_(seed) {}

  // A module of `ops` random expressions; every value nothing reads is a result.
  std::string Generate(int ops) {
    for (int t = 0; t < kNumTypes; ++t) {
      Param(static_cast<T>(t), "[8,8]");
    }
    for (int i = 0; i < 3; ++i) {
      const T t = RandomType();
      const std::string v = Param(t, "[8]");
      Add(t, absl::StrCat("broadcast(", v, "), dimensions={", Pick(2), "}"), true);
    }
    for (int i = 0; i < ops; ++i) Step();
    std::vector<std::string> leaves, shapes;
    for (const Value& v : pool_) {
      if (used_.count(v.name) == 0) {
        leaves.push_back(v.name);
        shapes.push_back(absl::StrCat(kTypeName[v.type], "[8,8]"));
      }
    }
    std::string text = "HloModule dtype_fuzz\n\n";
    for (const std::string& c : computations_) absl::StrAppend(&text, c, "\n");
    absl::StrAppend(&text, "ENTRY main {\n", body_, "  ROOT out = (", absl::StrJoin(shapes, ", "),
                    ") tuple(", absl::StrJoin(leaves, ", "), ")\n}\n");
    return text;
  }

 private:
  int Pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  T RandomType() { return static_cast<T>(Pick(kNumTypes)); }
  T RandomNumeric() { return static_cast<T>(1 + Pick(kNumTypes - 1)); }
  T RandomFloat() { return static_cast<T>(kBF16 + Pick(4)); }

  std::string Line(T t, const std::string& shape, const std::string& op) {
    const std::string name = absl::StrCat("v", next_++);
    absl::StrAppend(&body_, "  ", name, " = ", kTypeName[t], shape, " ", op, "\n");
    return name;
  }
  std::string Param(T t, const std::string& shape) {
    const std::string name = Line(t, shape, absl::StrCat("parameter(", params_++, ")"));
    if (shape == "[8,8]") pool_.push_back({name, t, true});
    return name;
  }
  Value Add(T t, const std::string& op, bool exact) {
    Value v{Line(t, "[8,8]", op), t, exact};
    pool_.push_back(v);
    return v;
  }

  // A scalar constant of `t` as literal text: small values, signed ones, and (rarely) the
  // special floats.
  std::string ConstantText(T t) {
    if (t == kPred) return Pick(2) ? "true" : "false";
    if (IsFloat(t)) {
      static const char* kFloats[] = {"0", "1",    "-1",  "0.5", "2",    "1.5", "-0.25",
                                      "3", "-2.5", "0.1", "inf", "-inf", "nan"};
      return kFloats[Pick(Pick(8) == 0 ? 13 : 10)];
    }
    static const char* kInts[] = {"0", "1", "2", "3", "7", "5"};
    if (IsSigned(t) && Pick(4) == 0) return "-3";
    return kInts[Pick(6)];
  }

  // A pool value converted to `t` (a random one; an exact one when `exact`).
  Value Get(T t, bool exact = false) {
    std::vector<size_t> candidates;
    for (size_t i = 0; i < pool_.size(); ++i) {
      if (!exact || pool_[i].exact) candidates.push_back(i);
    }
    // Prefer values of the type itself half the time, so chains stay in one type too.
    std::vector<size_t> same;
    for (size_t i : candidates) {
      if (pool_[i].type == t) same.push_back(i);
    }
    const std::vector<size_t>& from = !same.empty() && Pick(2) == 0 ? same : candidates;
    Value v = pool_[from[static_cast<size_t>(Pick(static_cast<int>(from.size())))]];
    used_.insert(v.name);
    if (v.type == t) return v;
    // Float to integer or pred jumps at thresholds: only exact values cross it.
    if (IsFloat(v.type) && !IsFloat(t) && !v.exact) return Get(t, true);
    Value c = Add(t, absl::StrCat("convert(", v.name, ")"), v.exact);
    used_.insert(c.name);
    return c;
  }

  std::string Reducer(const std::string& kind, T t) {
    const std::string name = absl::StrCat(kind, "_", kTypeName[t]);
    if (reducers_.insert(name).second) {
      const char* ty = kTypeName[t];
      // Instruction names are unique in a module: each reducer's carry its own prefix.
      computations_.push_back(absl::StrCat(name, " {\n  ", name, ".a = ", ty, "[] parameter(0)\n  ",
                                           name, ".b = ", ty, "[] parameter(1)\n  ROOT ", name,
                                           ".r = ", ty, "[] ", kind, "(", name, ".a, ", name,
                                           ".b)\n}\n"));
    }
    return name;
  }

  // The identity of `kind` in `t`, as XLA's reductions expect their initial value.
  std::string Identity(const std::string& kind, T t) {
    if (kind == "add" || kind == "or") return t == kPred ? "false" : "0";
    if (kind == "and") return "true";
    if (kind == "multiply") return "1";
    const bool max = kind == "maximum";
    if (IsFloat(t)) return max ? "-inf" : "inf";
    if (t == kU8) return max ? "0" : "255";
    if (t == kS32) return max ? "-2147483648" : "2147483647";
    return max ? "-9223372036854775808" : "9223372036854775807";
  }

  void Step() {
    switch (Pick(12)) {
      case 0:
      case 1:
      case 2:
        return Binary();
      case 3:
      case 4:
        return Unary();
      case 5:
        return Compare();
      case 6:
        return Select();
      case 7:
        return Clamp();
      case 8:
        return Constant();
      case 9:
        return Reduce();
      case 10:
        return Dot();
      default: {  // convert, iota or transpose
        const int k = Pick(3);
        const T t = RandomType();
        if (k == 0) {
          Get(t);
        } else if (k == 1 && t != kPred) {
          Add(t, absl::StrCat("iota(), iota_dimension=", Pick(2)), true);
        } else {
          const Value v = Get(t);
          Add(t, absl::StrCat("transpose(", v.name, "), dimensions={1,0}"), v.exact);
        }
        return;
      }
    }
  }

  void Binary() {
    const T t = RandomType();
    std::vector<std::string> ops;
    if (t == kPred) {
      ops = {"and", "or", "xor"};
    } else if (IsFloat(t)) {
      ops = {"add",     "subtract", "multiply",  "divide", "maximum",
             "minimum", "power",    "remainder", "atan2"};
    } else {
      ops = {"add",
             "subtract",
             "multiply",
             "divide",
             "maximum",
             "minimum",
             "power",
             "remainder",
             "and",
             "or",
             "xor",
             "shift-left",
             "shift-right-logical",
             "shift-right-arithmetic"};
    }
    const std::string op = ops[static_cast<size_t>(Pick(static_cast<int>(ops.size())))];
    // remainder jumps where the quotient crosses an integer.
    const bool jumps = IsFloat(t) && op == "remainder";
    const Value a = Get(t, jumps), b = Get(t, jumps);
    bool exact = a.exact && b.exact;
    if (IsFloat(t) && (op == "multiply" || op == "power" || op == "atan2")) exact = false;
    Add(t, absl::StrCat(op, "(", a.name, ", ", b.name, ")"), exact);
  }

  void Unary() {
    const T t = RandomType();
    if (t == kPred) {
      const Value a = Get(t);
      Add(t, absl::StrCat("not(", a.name, ")"), a.exact);
      return;
    }
    if (!IsFloat(t)) {
      static const char* kOps[] = {"abs", "negate", "sign", "not", "popcnt", "count-leading-zeros"};
      const Value a = Get(t);
      Add(t, absl::StrCat(kOps[Pick(6)], "(", a.name, ")"), a.exact);
      return;
    }
    struct Op {
      const char* name;
      bool exact;  // correctly rounded, or free of rounding
      bool jumps;  // its result jumps at thresholds of its operand
    };
    static const Op kOps[] = {
        {"exponential", false, false},
        {"tanh", false, false},
        {"log", false, false},
        {"sqrt", true, false},
        {"rsqrt", false, false},
        {"logistic", false, false},
        {"floor", true, true},
        {"ceil", true, true},
        {"round-nearest-afz", true, true},
        {"round-nearest-even", true, true},
        {"sign", true, true},
        {"abs", true, false},
        {"negate", true, false},
        {"sine", false, false},
        {"exponential-minus-one", false, false},
        {"is-finite", true, true},
    };
    const Op& op = kOps[Pick(16)];
    const Value a = Get(t, op.jumps);
    if (std::string(op.name) == "is-finite") {
      Add(kPred, absl::StrCat("is-finite(", a.name, ")"), true);
      return;
    }
    Add(t, absl::StrCat(op.name, "(", a.name, ")"), a.exact && op.exact);
  }

  void Compare() {
    const T t = RandomType();
    static const char* kDirs[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
    const Value a = Get(t, true), b = Get(t, true);
    std::string op =
        absl::StrCat("compare(", a.name, ", ", b.name, "), direction=", kDirs[Pick(6)]);
    if (IsFloat(t) && Pick(3) == 0) absl::StrAppend(&op, ", type=TOTALORDER");
    Add(kPred, op, true);
  }

  void Select() {
    const T t = RandomType();
    const Value p = Get(kPred, true), a = Get(t), b = Get(t);
    Add(t, absl::StrCat("select(", p.name, ", ", a.name, ", ", b.name, ")"), a.exact && b.exact);
  }

  void Clamp() {
    const T t = RandomNumeric();
    const Value lo = Get(t), x = Get(t), hi = Get(t);
    Add(t, absl::StrCat("clamp(", lo.name, ", ", x.name, ", ", hi.name, ")"),
        lo.exact && x.exact && hi.exact);
  }

  // A broadcast scalar or vector constant of a random type.
  void Constant() {
    const T t = RandomType();
    if (Pick(3) == 0) {
      std::vector<std::string> elems;
      for (int i = 0; i < 8; ++i) elems.push_back(ConstantText(t));
      const std::string c =
          Line(t, "[8]", absl::StrCat("constant({", absl::StrJoin(elems, ", "), "})"));
      Add(t, absl::StrCat("broadcast(", c, "), dimensions={", Pick(2), "}"), true);
      return;
    }
    const std::string c = Line(t, "[]", absl::StrCat("constant(", ConstantText(t), ")"));
    Add(t, absl::StrCat("broadcast(", c, "), dimensions={}"), true);
  }

  // A reduction over the minor dimension (or both), broadcast back to [8,8].
  void Reduce() {
    const T t = RandomType();
    std::string kind;
    if (t == kPred) {
      kind = Pick(2) ? "and" : "or";
    } else {
      static const char* kKinds[] = {"add", "maximum", "minimum", "multiply"};
      kind = kKinds[Pick(IsFloat(t) ? 3 : 4)];
    }
    const Value x = Get(t);
    const std::string init = Line(t, "[]", absl::StrCat("constant(", Identity(kind, t), ")"));
    const bool all = Pick(3) == 0;
    const std::string r = Line(t, all ? "[]" : "[8]",
                               absl::StrCat("reduce(", x.name, ", ", init, "), dimensions={",
                                            all ? "0,1" : "1", "}, to_apply=", Reducer(kind, t)));
    const bool exact = x.exact && (!IsFloat(t) || kind != "add");
    Add(t, absl::StrCat("broadcast(", r, "), dimensions={", all ? "" : "0", "}"), exact);
  }

  // An [8,8] x [8,8] product of bf16, f16, f32, f64 or s32 operands; 16-bit float operands may
  // give an f32 result (preferred_element_type in JAX).
  void Dot() {
    static const T kTypes[] = {kBF16, kF16, kF32, kF64, kS32};
    const T t = kTypes[Pick(5)];
    const T result = (t == kBF16 || t == kF16) && Pick(2) == 0 ? kF32 : t;
    const Value a = Get(t), b = Get(t);
    Add(result,
        absl::StrCat("dot(", a.name, ", ", b.name,
                     "), lhs_contracting_dims={1}, rhs_contracting_dims={0}"),
        !IsFloat(t) && a.exact && b.exact);
  }

  std::mt19937_64 rng_;
  std::vector<Value> pool_;
  std::set<std::string> used_;
  std::set<std::string> reducers_;
  std::vector<std::string> computations_;
  std::string body_;
  int next_ = 0, params_ = 0;
};

class CpuDtypeFuzzTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { setenv("MLTUNE_KERNEL_CACHE", MLTUNE_TEST_KERNEL_CACHE, 0); }
};

TEST_F(CpuDtypeFuzzTest, RandomMixedTypeModulesCompileAndMatchTheEvaluator) {
  int seeds = 12;
  if (const char* s = std::getenv("MLTUNE_DTYPE_FUZZ_SEEDS")) seeds = std::atoi(s);
  constexpr int kOpsPerModule = 40;
  int checked = 0;
  for (int seed = 1; seed <= seeds; ++seed) {
    const std::string text = ModuleGen(static_cast<uint64_t>(seed)).Generate(kOpsPerModule);
    SCOPED_TRACE(absl::StrCat("seed ", seed, ":\n", text));
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseHloText(text);
    ASSERT_TRUE(module.ok()) << module.status();
    // Odd seeds through the CPU pipeline, as real models run; even seeds lowered as written.
    std::unique_ptr<ir::Module> lowered;
    if (seed % 2 == 1) {
      absl::StatusOr<std::unique_ptr<ir::Module>> optimized = RunCpuPipeline(**module);
      ASSERT_TRUE(optimized.ok()) << optimized.status();
      lowered = *std::move(optimized);
    } else {
      lowered = (*module)->Clone();
    }
    absl::StatusOr<CompiledModule> compiled = CompileModule(*lowered);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    const absl::Status check = CheckAgainstEvaluator(**module, *compiled, 100 + seed);
    EXPECT_TRUE(check.ok()) << check << "\n" << compiled->program.source;
    checked += kOpsPerModule;
  }
  std::printf("dtype fuzz: %d modules, %d random ops\n", seeds, checked);
}

}  // namespace
}  // namespace mltune::backends::cpu
