// The printer's definition-before-use order: XLA's parser rejects a name used before the line
// that defines it, and passes append new instructions and computations at the end of lists.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "ir/ir.h"

namespace mltune::ir {
namespace {

constexpr char kModule[] = R"(HloModule order

add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}

ENTRY main {
  p = f32[8] parameter(0)
  c = f32[8] constant({1, 2, 3, 4, 5, 6, 7, 8})
  multiply.1 = f32[8] multiply(p, c)
  a = f32[8] add(multiply.1, p)
  ROOT t = f32[8] tanh(a)
}
)";

// `text` split at ", ", without empty pieces.
std::vector<std::string> Split(const std::string& text) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find(", ", begin);
    if (end == std::string::npos) end = text.size();
    if (end > begin) parts.push_back(text.substr(begin, end - begin));
    begin = end + 2;
  }
  return parts;
}

// Reads the text line by line, as XLA's parser does: the names each computation defines so far
// and the computations defined so far. Returns the first use (operand, control predecessor,
// called computation) before its definition, or "" when there is none. Enough for the simple
// shapes of this test's modules (no nested tuples).
std::string FirstUseBeforeDefinition(const std::string& text) {
  std::set<std::string> computations;
  std::set<std::string> names;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.ends_with(" {")) {  // a computation's header
      std::string header = line.substr(0, line.size() - 2);
      if (header.starts_with("ENTRY ")) header = header.substr(6);
      computations.insert(header);
      names.clear();
      continue;
    }
    std::string body = line.starts_with("  ") ? line.substr(2) : line;
    if (body.starts_with("ROOT ")) body = body.substr(5);
    const size_t eq = body.find(" = ");
    if (eq == std::string::npos) continue;
    // The shape ends at the first space (after the closing parenthesis of a tuple shape).
    const size_t shape_end = body.find(' ', body[eq + 3] == '(' ? body.find(')', eq) : eq + 3);
    const size_t open = body.find('(', shape_end);
    const size_t close = body.find(')', open);
    const std::string opcode = body.substr(0, open);
    if (!opcode.ends_with("parameter") && !opcode.ends_with("constant")) {
      for (const std::string& operand : Split(body.substr(open + 1, close - open - 1))) {
        if (!names.contains(operand)) return "operand " + operand;
      }
    }
    for (const std::string& attr : Split(body.substr(close + 1))) {
      for (const std::string role : {"to_apply=", "calls=", "condition=", "body="}) {
        if (attr.starts_with(role) && !computations.contains(attr.substr(role.size()))) {
          return "computation " + attr;
        }
      }
      const std::string preds = "control-predecessors={";
      if (attr.starts_with(preds)) {
        for (const std::string& pred :
             Split(attr.substr(preds.size(), attr.size() - preds.size() - 1))) {
          if (!names.contains(pred)) return "control predecessor " + pred;
        }
      }
    }
    names.insert(body.substr(0, eq));
  }
  return "";
}

// The ROOT line is the last of each computation.
bool RootsLast(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  bool after_root = false;
  while (std::getline(lines, line)) {
    if (after_root && line != "}") return false;
    after_root = line.starts_with("  ROOT ");
  }
  return true;
}

std::unique_ptr<Module> Parse(const std::string& text) {
  absl::StatusOr<std::unique_ptr<Module>> m = ParseHloText(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? *std::move(m) : nullptr;
}

Instruction* Append(Computation* c, Opcode op, const Shape& shape, const std::string& name,
                    std::vector<Instruction*> operands) {
  Instruction* i = c->AddInstruction(std::make_unique<Instruction>(op, shape, name));
  for (Instruction* o : operands) i->AppendOperand(o);
  return i;
}

TEST(HloPrintOrderTest, UnmodifiedModuleKeepsItsText) {
  std::unique_ptr<Module> m = Parse(kModule);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(PrintModule(*m, {.print_layouts = false}), kModule);
}

TEST(HloPrintOrderTest, OperandAppendedAfterItsUserIsPrintedFirst) {
  std::unique_ptr<Module> m = Parse(kModule);
  ASSERT_NE(m, nullptr);
  Computation* main = m->entry();
  Instruction* p = main->FindInstruction("p");
  Instruction* a = main->FindInstruction("a");
  // As algsimp would: a new instruction, appended after the root, replaces an operand of `a`.
  Instruction* square = Append(main, Opcode::kMultiply, p->shape(), "multiply.2", {p, p});
  a->ReplaceOperand(0, square);
  ASSERT_EQ(main->instructions().back(), square);

  const std::string text = PrintModule(*m);
  EXPECT_EQ(FirstUseBeforeDefinition(text), "") << text;
  EXPECT_TRUE(RootsLast(text)) << text;
  EXPECT_LT(text.find("multiply.2 = "), text.find("  a = ")) << text;
  // The order is otherwise the stored one: the now-unused multiply.1 stays where it was.
  EXPECT_LT(text.find("multiply.1 = "), text.find("multiply.2 = ")) << text;

  // mltune's parser reads it back to the same module, and printing that is a fixed point.
  std::unique_ptr<Module> again = Parse(text);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(PrintModule(*again), text);
  EXPECT_TRUE(StructurallyEqual(*again, *m));
  EXPECT_EQ(again->entry()->root()->name(), "t");
  EXPECT_EQ(again->entry()->FindInstruction("a")->operand(0)->name(), "multiply.2");
}

TEST(HloPrintOrderTest, NewRootAppendedLastStaysLast) {
  std::unique_ptr<Module> m = Parse(kModule);
  ASSERT_NE(m, nullptr);
  Computation* main = m->entry();
  Instruction* t = main->FindInstruction("t");
  main->set_root(Append(main, Opcode::kNegate, t->shape(), "negate.1", {t}));
  const std::string text = PrintModule(*m);
  EXPECT_EQ(FirstUseBeforeDefinition(text), "") << text;
  EXPECT_TRUE(RootsLast(text)) << text;
  EXPECT_NE(text.find("ROOT negate.1 = "), std::string::npos) << text;
}

TEST(HloPrintOrderTest, RootWithUsersPrecedesThem) {
  std::unique_ptr<Module> m = Parse(kModule);
  ASSERT_NE(m, nullptr);
  // As algsimp leaves `tanh(a)` -> `multiply.1` before DCE: the new root is used by `a`, which
  // is still in the list, so the root cannot be last.
  Computation* main = m->entry();
  main->set_root(main->FindInstruction("multiply.1"));
  const std::string text = PrintModule(*m);
  EXPECT_EQ(FirstUseBeforeDefinition(text), "") << text;
  EXPECT_LT(text.find("ROOT multiply.1 = "), text.find("  a = ")) << text;
  std::unique_ptr<Module> again = Parse(text);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->entry()->root()->name(), "multiply.1");
}

TEST(HloPrintOrderTest, ControlPredecessorAppendedLaterIsPrintedFirst) {
  std::unique_ptr<Module> m = Parse(kModule);
  ASSERT_NE(m, nullptr);
  Computation* main = m->entry();
  Instruction* p = main->FindInstruction("p");
  Instruction* late = Append(main, Opcode::kExp, p->shape(), "exponential.9", {p});
  late->AddControlDependencyTo(main->FindInstruction("multiply.1"));
  const std::string text = PrintModule(*m);
  EXPECT_EQ(FirstUseBeforeDefinition(text), "") << text;
  EXPECT_TRUE(RootsLast(text)) << text;
  EXPECT_LT(text.find("exponential.9 = "), text.find("multiply.1 = ")) << text;
  ASSERT_NE(Parse(text), nullptr);
}

TEST(HloPrintOrderTest, ComputationAppendedAfterItsCallerIsPrintedFirst) {
  std::unique_ptr<Module> m = Parse(kModule);
  ASSERT_NE(m, nullptr);
  // As a pass that outlines a computation would: the callee is added after the entry.
  const Shape f32 = Shape::Scalar(PrimitiveType::kF32);
  Computation* max = m->AddComputation(std::make_unique<Computation>("max"));
  Instruction* x = Append(max, Opcode::kParameter, f32, "mx", {});
  Instruction* y = Append(max, Opcode::kParameter, f32, "my", {});
  y->parameter_number = 1;
  max->set_root(Append(max, Opcode::kMaximum, f32, "m", {x, y}));
  Computation* main = m->entry();
  Instruction* zero = Append(main, Opcode::kConstant, f32, "zero", {});
  zero->literal = Literal::Scalar(PrimitiveType::kF32, 0.0f);
  Instruction* reduce =
      Append(main, Opcode::kReduce, f32, "reduce.1", {main->FindInstruction("a"), zero});
  reduce->dimensions = {0};
  reduce->mutable_called_computations().push_back(max);
  Instruction* tuple = Append(main, Opcode::kTuple, Shape::Tuple({main->root()->shape(), f32}),
                              "tuple.1", {main->root(), reduce});
  main->set_root(tuple);

  const std::string text = PrintModule(*m);
  EXPECT_EQ(FirstUseBeforeDefinition(text), "") << text;
  EXPECT_TRUE(RootsLast(text)) << text;
  EXPECT_LT(text.find("max {"), text.find("ENTRY main {")) << text;
  EXPECT_LT(text.find("add {"), text.find("max {")) << text;  // the stored order otherwise
  std::unique_ptr<Module> again = Parse(text);
  ASSERT_NE(again, nullptr);
  EXPECT_TRUE(VerifyModule(*again).ok()) << VerifyModule(*again);
  EXPECT_EQ(PrintModule(*again), text);
}

}  // namespace
}  // namespace mltune::ir
