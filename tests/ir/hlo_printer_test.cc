// Canonical HLO printer: exact text for small modules, attribute order, and the print options.
#include "ir/hlo_printer.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "ir/hlo_parser.h"
#include "ir/ir.h"

namespace mltune::ir {
namespace {

Instruction* Add(Computation* c, Opcode op, Shape shape, std::string name,
                 std::vector<Instruction*> operands = {}) {
  Instruction* i = c->AddInstruction(std::make_unique<Instruction>(op, std::move(shape), name));
  for (Instruction* o : operands) i->AppendOperand(o);
  return i;
}

// A reduction module built through the IR API, not the parser.
std::unique_ptr<Module> HandBuilt() {
  auto m = std::make_unique<Module>("hand");
  Computation* add = m->AddComputation(std::make_unique<Computation>("add"));
  const Shape f32 = Shape::Scalar(PrimitiveType::kF32);
  Instruction* x = Add(add, Opcode::kParameter, f32, "x");
  Instruction* y = Add(add, Opcode::kParameter, f32, "y");
  y->parameter_number = 1;
  add->set_root(Add(add, Opcode::kAdd, f32, "s", {x, y}));

  Computation* main = m->AddComputation(std::make_unique<Computation>("main"));
  Instruction* p = Add(main, Opcode::kParameter, Shape(PrimitiveType::kF32, {2, 3}), "p");
  p->metadata = "{op_name=\"p\"}";
  Instruction* c = Add(main, Opcode::kConstant, f32, "c");
  c->literal = Literal::Scalar(PrimitiveType::kF32, 0.5f);
  Instruction* r = Add(main, Opcode::kReduce, Shape(PrimitiveType::kF32, {2}), "r", {p, c});
  r->dimensions = {1};
  r->mutable_called_computations().push_back(add);
  r->metadata = "{op_type=\"reduce\" source_line=7}";
  Instruction* t =
      Add(main, Opcode::kTuple, Shape::Tuple({Shape(PrimitiveType::kF32, {2}), f32}), "t", {r, c});
  main->set_root(t);
  m->set_entry(main);
  return m;
}

TEST(HloPrinterTest, HandBuiltModule) {
  std::unique_ptr<Module> m = HandBuilt();
  EXPECT_EQ(PrintModule(*m),
            "HloModule hand\n"
            "\n"
            "add {\n"
            "  x = f32[] parameter(0)\n"
            "  y = f32[] parameter(1)\n"
            "  ROOT s = f32[] add(x, y)\n"
            "}\n"
            "\n"
            "ENTRY main {\n"
            "  p = f32[2,3]{1,0} parameter(0), metadata={op_name=\"p\"}\n"
            "  c = f32[] constant(0.5)\n"
            "  r = f32[2]{0} reduce(p, c), dimensions={1}, to_apply=add, "
            "metadata={op_type=\"reduce\" source_line=7}\n"
            "  ROOT t = (f32[2]{0}, f32[]) tuple(r, c)\n"
            "}\n");
  // The canonical text parses back to a module that prints identically.
  absl::StatusOr<std::unique_ptr<Module>> again = ParseHloText(PrintModule(*m));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(PrintModule(**again), PrintModule(*m));
  EXPECT_TRUE(StructurallyEqual(*m, **again));
}

TEST(HloPrinterTest, OperandShapesOption) {
  std::unique_ptr<Module> m = HandBuilt();
  PrintOptions options;
  options.print_operand_shapes = true;
  const Instruction* r = m->entry()->FindInstruction("r");
  EXPECT_EQ(PrintInstruction(*r, options),
            "r = f32[2]{0} reduce(f32[2,3]{1,0} p, f32[] c), dimensions={1}, to_apply=add, "
            "metadata={op_type=\"reduce\" source_line=7}");
  options.print_layouts = false;
  EXPECT_EQ(PrintInstruction(*r, options),
            "r = f32[2] reduce(f32[2,3] p, f32[] c), dimensions={1}, to_apply=add, "
            "metadata={op_type=\"reduce\" source_line=7}");
  // Operand shapes are informational: the text still parses to the same module.
  options.print_layouts = true;
  absl::StatusOr<std::unique_ptr<Module>> again = ParseHloText(PrintModule(*m, options));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(PrintModule(**again), PrintModule(*m));
}

TEST(HloPrinterTest, MetadataToggle) {
  std::unique_ptr<Module> m = HandBuilt();
  PrintOptions options;
  options.print_metadata = false;
  const std::string text = PrintModule(*m, options);
  EXPECT_EQ(text.find("metadata"), std::string::npos);
  EXPECT_NE(text.find("  r = f32[2]{0} reduce(p, c), dimensions={1}, to_apply=add\n"),
            std::string::npos)
      << text;
  EXPECT_NE(PrintModule(*m).find("metadata={op_type=\"reduce\" source_line=7}"), std::string::npos);
}

TEST(HloPrinterTest, AttributeOrderIsCanonical) {
  // Written in a scrambled order, with sigils and operand shapes; printed in the fixed order:
  // structured, raw extras (as written), sharding, frontend_attributes, control-predecessors,
  // metadata, backend_config.
  absl::StatusOr<std::unique_ptr<Module>> m = ParseHloText(R"(HloModule o
ENTRY %e {
  %a = f32[2,3]{1,0} parameter(0)
  %b = f32[3,4]{1,0} parameter(1)
  %n = f32[2,3]{1,0} negate(f32[2,3]{1,0} %a)
  ROOT %d = f32[2,4]{1,0} dot(f32[2,3]{1,0} %a, f32[3,4]{1,0} %b), backend_config="cfg", metadata={op_name="dot"}, control-predecessors={%n}, frontend_attributes={fa="1"}, sharding={replicated}, zeta=1, rhs_contracting_dims={0}, alpha={2}, lhs_contracting_dims={1}
}
)");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(PrintInstruction(*(*m)->entry()->root()),
            "d = f32[2,4]{1,0} dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}, "
            "zeta=1, alpha={2}, sharding={replicated}, frontend_attributes={fa=\"1\"}, "
            "control-predecessors={n}, metadata={op_name=\"dot\"}, backend_config=\"cfg\"");
}

TEST(HloPrinterTest, StructuredAttributeForms) {
  absl::StatusOr<std::unique_ptr<Module>> m = ParseHloText(R"(HloModule f
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[4,4]{1,0} parameter(0)
  z = f32[] constant(0)
  big = f32[2,2]{1,0} constant({...})
  lit = s32[2,2]{1,0} constant({ { 1, 2 }, { 3, 4 } })
  sl = f32[2,2]{1,0} slice(p), slice={[0:4:2], [1:3:1]}
  pd = f32[6,9]{1,0} pad(p, z), padding=1_1x0_1_1
  rw = f32[2,4]{1,0} reduce-window(p, z), window={size=2x1 stride=2x1 pad=0_0x0_0 lhs_dilate=1x1}, to_apply=add
  cv = f32[4,4]{1,0} convolution(p, p), window={size=1 pad=0_0}, dim_labels=bf_io->bf, feature_group_count=2
  cc = f32[4,4]{1,0} custom-call(p), custom_call_target="a\"b", api_version=API_VERSION_ORIGINAL
  ds = f32[1,4]{1,0} dynamic-slice(p, z, z), dynamic_slice_sizes={1,4}
  ROOT t = (f32[2,2]{1,0}, f32[6,9]{1,0}) tuple(sl, pd)
}
)");
  ASSERT_TRUE(m.ok()) << m.status();
  const Computation* e = (*m)->entry();
  auto line = [&](std::string_view name) { return PrintInstruction(*e->FindInstruction(name)); };
  EXPECT_EQ(line("big"), "big = f32[2,2]{1,0} constant({...})");
  EXPECT_EQ(line("lit"), "lit = s32[2,2]{1,0} constant({ {1, 2}, {3, 4} })");
  EXPECT_EQ(line("sl"), "sl = f32[2,2]{1,0} slice(p), slice={[0:4:2], [1:3]}");
  EXPECT_EQ(line("pd"), "pd = f32[6,9]{1,0} pad(p, z), padding=1_1_0x0_1_1");
  EXPECT_EQ(line("rw"),
            "rw = f32[2,4]{1,0} reduce-window(p, z), window={size=2x1 stride=2x1}, to_apply=add");
  EXPECT_EQ(line("cv"),
            "cv = f32[4,4]{1,0} convolution(p, p), window={size=1}, dim_labels=bf_io->bf, "
            "feature_group_count=2");
  EXPECT_EQ(line("cc"),
            "cc = f32[4,4]{1,0} custom-call(p), custom_call_target=\"a\\\"b\", "
            "api_version=API_VERSION_ORIGINAL");
  EXPECT_EQ(line("ds"), "ds = f32[1,4]{1,0} dynamic-slice(p, z, z), dynamic_slice_sizes={1,4}");
}

TEST(HloPrinterTest, ComputationsAndModuleHeader) {
  absl::StatusOr<std::unique_ptr<Module>> m = ParseHloText(
      "HloModule h, input_output_alias={ {0}: (0, {}, must-alias) }, is_scheduled=true, "
      "num_partitions=2\n"
      "%c (a: pred[]) -> pred[] {\n  ROOT %a = pred[] parameter(0)\n}\n"
      "ENTRY %e (p: pred[]) -> pred[] {\n  %p = pred[] parameter(0)\n"
      "  ROOT %w = pred[] while(pred[] %p), body=%c, condition=%c\n}\n");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(PrintModule(**m),
            "HloModule h, is_scheduled=true, input_output_alias={ {0}: (0, {}, must-alias) }, "
            "num_partitions=2\n"
            "\n"
            "c {\n"
            "  ROOT a = pred[] parameter(0)\n"
            "}\n"
            "\n"
            "ENTRY e {\n"
            "  p = pred[] parameter(0)\n"
            "  ROOT w = pred[] while(p), condition=c, body=c\n"
            "}\n");
  EXPECT_EQ(PrintComputation(*(*m)->computations()[0]),
            "c {\n  ROOT a = pred[] parameter(0)\n}\n");
}

}  // namespace
}  // namespace mltune::ir
