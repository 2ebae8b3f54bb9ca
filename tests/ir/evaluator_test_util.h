// Helpers for the evaluator tests: build a module from HLO text, evaluate it, and read results.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"
#include "ir/evaluator/evaluator.h"
#include "ir/hlo_parser.h"

namespace mltune::ir::eval_test {

// A module with `computations` (helper computations, text) and an entry whose body is `entry`.
inline std::string ModuleText(std::string_view entry, std::string_view computations = "") {
  return absl::StrCat("HloModule test\n\n", std::string(computations), "\n\nENTRY main {\n",
                      std::string(entry), "\n}\n");
}

// Parses and evaluates `text` on `args`.
inline absl::StatusOr<Literal> EvalText(std::string_view text, std::vector<Literal> args = {},
                                        const EvalOptions& options = {}) {
  absl::StatusOr<std::unique_ptr<Module>> module = ParseHloText(text);
  if (!module.ok()) {
    return absl::Status(module.status().code(),
                        absl::StrCat("parse: ", std::string(module.status().message())));
  }
  return Evaluate(**module, args, options);
}

// The result of an entry body as XLA literal text, or "error: <message>".
inline std::string Eval(std::string_view entry, std::string_view computations = "",
                        std::vector<Literal> args = {}) {
  absl::StatusOr<Literal> r = EvalText(ModuleText(entry, computations), std::move(args));
  if (!r.ok()) return absl::StrCat("error: ", std::string(r.status().message()));
  return r->ToString();
}

// Every element of `l` as double (real parts for complex).
inline std::vector<double> Values(const Literal& l) {
  std::vector<double> v;
  for (int64_t i = 0; i < l.element_count(); ++i) v.push_back(l.GetAsDouble(i));
  return v;
}

// An array literal of `shape` text (e.g. "f32[2,2]") with `values` in row-major order.
inline Literal MakeLiteral(std::string_view shape, const std::vector<double>& values) {
  absl::StatusOr<Shape> s = ParseShape(shape);
  EXPECT_TRUE(s.ok()) << s.status();
  Literal l = *Literal::Create(*s);
  EXPECT_EQ(l.element_count(), static_cast<int64_t>(values.size()));
  for (size_t i = 0; i < values.size(); ++i) l.SetFromDouble(static_cast<int64_t>(i), values[i]);
  return l;
}

// Common scalar reducers, named <op>_<type>.
inline constexpr char kReducers[] = R"(
add_f32 {
  add_f32.a = f32[] parameter(0)
  add_f32.b = f32[] parameter(1)
  ROOT add_f32.r = f32[] add(add_f32.a, add_f32.b)
}
add_s32 {
  add_s32.a = s32[] parameter(0)
  add_s32.b = s32[] parameter(1)
  ROOT add_s32.r = s32[] add(add_s32.a, add_s32.b)
}
add_f16 {
  add_f16.a = f16[] parameter(0)
  add_f16.b = f16[] parameter(1)
  ROOT add_f16.r = f16[] add(add_f16.a, add_f16.b)
}
max_f32 {
  max_f32.a = f32[] parameter(0)
  max_f32.b = f32[] parameter(1)
  ROOT max_f32.r = f32[] maximum(max_f32.a, max_f32.b)
}
ge_f32 {
  ge_f32.a = f32[] parameter(0)
  ge_f32.b = f32[] parameter(1)
  ROOT ge_f32.r = pred[] compare(ge_f32.a, ge_f32.b), direction=GE
}
lt_f32 {
  lt_f32.a = f32[] parameter(0)
  lt_f32.b = f32[] parameter(1)
  ROOT lt_f32.r = pred[] compare(lt_f32.a, lt_f32.b), direction=LT
}
assign_f32 {
  assign_f32.a = f32[] parameter(0)
  ROOT assign_f32.b = f32[] parameter(1)
}
)";

}  // namespace mltune::ir::eval_test
