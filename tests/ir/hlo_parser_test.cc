// HLO text parser: the three printing styles, annotations, literals, shapes, structured
// attributes, and the whole corpus round-tripping through the canonical printer.
#include "ir/hlo_parser.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "ir/evaluator/evaluator.h"
#include "ir/fingerprint.h"
#include "ir/hlo_printer.h"
#include "ir/ir.h"
#include "tests/support/corpus.h"

namespace mltune::ir {
namespace {

std::unique_ptr<Module> MustParse(std::string_view text) {
  absl::StatusOr<std::unique_ptr<Module>> m = ParseHloText(text);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return nullptr;
  return *std::move(m);
}

Instruction* Find(const Module& m, std::string_view name) {
  for (Computation* c : m.computations()) {
    if (Instruction* i = c->FindInstruction(name)) return i;
  }
  return nullptr;
}

// Parses `text`, prints it, and checks that printing the reparse gives the same text.
std::string RoundTrip(std::string_view text) {
  std::unique_ptr<Module> m = MustParse(text);
  if (m == nullptr) return "";
  const std::string printed = PrintModule(*m);
  absl::StatusOr<std::unique_ptr<Module>> again = ParseHloText(printed);
  EXPECT_TRUE(again.ok()) << again.status() << "\n" << printed;
  if (!again.ok()) return printed;
  EXPECT_EQ(PrintModule(**again), printed);
  return printed;
}

constexpr char kSigilsWithShapes[] = R"(HloModule styles

%add (p0: f32[], p1: f32[]) -> f32[] {
  %p0 = f32[] parameter(0)
  %p1 = f32[] parameter(1)
  ROOT %add.3 = f32[] add(f32[] %p0, f32[] %p1)
}

ENTRY %main (a: f32[4], b: (f32[4], s32[])) -> (f32[], f32[4]) {
  %a = f32[4]{0} parameter(0)
  %b = (f32[4]{0}, s32[]) parameter(1)
  %gte = f32[4]{0} get-tuple-element((f32[4]{0}, s32[]) %b), index=0
  %zero = f32[] constant(0)
  %r = f32[] reduce(f32[4]{0} %a, f32[] %zero), dimensions={0}, to_apply=%add
  ROOT %t = (f32[], f32[4]{0}) tuple(f32[] %r, f32[4]{0} %gte)
}
)";

constexpr char kSigilsNoShapes[] = R"(HloModule styles

%add (p0: f32[], p1: f32[]) -> f32[] {
  %p0 = f32[] parameter(0)
  %p1 = f32[] parameter(1)
  ROOT %add.3 = f32[] add(%p0, %p1)
}

ENTRY %main (a: f32[4], b: (f32[4], s32[])) -> (f32[], f32[4]) {
  %a = f32[4]{0} parameter(0)
  %b = (f32[4]{0}, s32[]) parameter(1)
  %gte = f32[4]{0} get-tuple-element(%b), index=0
  %zero = f32[] constant(0)
  %r = f32[] reduce(%a, %zero), dimensions={0}, to_apply=%add
  ROOT %t = (f32[], f32[4]{0}) tuple(%r, %gte)
}
)";

constexpr char kNoSigils[] = R"(HloModule styles

add {
  p0 = f32[] parameter(0)
  p1 = f32[] parameter(1)
  ROOT add.3 = f32[] add(p0, p1)
}

ENTRY main {
  a = f32[4]{0} parameter(0)
  b = (f32[4]{0}, s32[]) parameter(1)
  gte = f32[4]{0} get-tuple-element(b), index=0
  zero = f32[] constant(0)
  r = f32[] reduce(a, zero), dimensions={0}, to_apply=add
  ROOT t = (f32[], f32[4]{0}) tuple(r, gte)
}
)";

TEST(HloParserTest, AllThreeStylesGiveTheSameModule) {
  std::unique_ptr<Module> a = MustParse(kSigilsWithShapes);
  std::unique_ptr<Module> b = MustParse(kSigilsNoShapes);
  std::unique_ptr<Module> c = MustParse(kNoSigils);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(PrintModule(*a), PrintModule(*b));
  EXPECT_EQ(PrintModule(*a), PrintModule(*c));

  EXPECT_EQ(a->name(), "styles");
  ASSERT_EQ(a->computation_count(), 2);
  EXPECT_EQ(a->entry()->name(), "main");
  EXPECT_EQ(a->computations()[0]->name(), "add");
  Instruction* root = a->entry()->root();
  ASSERT_NE(root, nullptr);
  EXPECT_EQ(root->name(), "t");
  EXPECT_EQ(root->opcode(), Opcode::kTuple);
  ASSERT_EQ(root->operand_count(), 2);
  EXPECT_EQ(root->operand(0)->name(), "r");
  EXPECT_EQ(root->operand(1)->name(), "gte");
  Instruction* reduce = Find(*a, "r");
  ASSERT_NE(reduce, nullptr);
  EXPECT_EQ(reduce->dimensions, std::vector<int64_t>{0});
  ASSERT_EQ(reduce->called_computations().size(), 1u);
  EXPECT_EQ(reduce->to_apply(), a->computations()[0]);
  EXPECT_EQ(Find(*a, "gte")->tuple_index, 0);
  EXPECT_EQ(a->entry()->parameter_count(), 2);
  EXPECT_EQ(a->entry()->parameter(1)->name(), "b");
  EXPECT_EQ(a->entry()->parameter(1)->shape().ToString(), "(f32[4]{0}, s32[])");
  EXPECT_EQ(a->computations()[0]->root()->name(), "add.3");
}

TEST(HloParserTest, InstructionsGetUniqueIds) {
  std::unique_ptr<Module> m = MustParse(kNoSigils);
  ASSERT_NE(m, nullptr);
  std::set<int64_t> ids;
  for (Computation* c : m->computations()) {
    for (Instruction* i : c->instructions()) {
      EXPECT_GE(i->unique_id(), 0);
      ids.insert(i->unique_id());
    }
  }
  EXPECT_EQ(static_cast<int64_t>(ids.size()), m->instruction_count());
}

TEST(HloParserTest, CommentsAnywhereInLists) {
  std::unique_ptr<Module> m = MustParse(R"(HloModule c
ENTRY e {
  p = (f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[]) parameter(0)
  g0 = f32[] get-tuple-element(p), /* a comment */ index=0
  g5 = f32[] get-tuple-element((f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[]) p), index=5
  ROOT t = (f32[], f32[], f32[], f32[], f32[], /*index=5*/f32[]) tuple(g0, g0, g0, g0, g0, /*index=5*/g5)
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->entry()->parameter(0)->shape().tuple_size(), 6);
  EXPECT_EQ(Find(*m, "g5")->tuple_index, 5);
  EXPECT_EQ(m->entry()->root()->operand(5)->name(), "g5");
}

TEST(HloParserTest, AnnotationsAreKeptVerbatim) {
  std::unique_ptr<Module> m = MustParse(R"(HloModule a
ENTRY e {
  p = f32[2,4]{1,0} parameter(0), sharding={devices=[1,2]0,1}, frontend_attributes={neff_input_names="input0"}, metadata={op_type="xla__device_data" op_name="p/x" source_file="a \"b\".py" source_line=44}
  q = f32[2,4]{1,0} parameter(1), sharding={replicated}
  c = (f32[2,4]{1,0}, f32[2,4]{1,0}) custom-call(p, q), custom_call_target="cusolver_geqrf", api_version=API_VERSION_STATUS_RETURNING, backend_config="\000\001\"x\"\027"
  ROOT t = (f32[2,4]{1,0}, f32[2,4]{1,0}) tuple(p, q), sharding={{replicated}, {maximal device=0}}, backend_config={"operation_queue_id":"0","wait_on_operation_queues":[]}
}
)");
  ASSERT_NE(m, nullptr);
  Instruction* p = Find(*m, "p");
  EXPECT_EQ(p->sharding, "{devices=[1,2]0,1}");
  EXPECT_EQ(p->frontend_attributes, "{neff_input_names=\"input0\"}");
  EXPECT_EQ(p->metadata,
            "{op_type=\"xla__device_data\" op_name=\"p/x\" source_file=\"a \\\"b\\\".py\" "
            "source_line=44}");
  EXPECT_EQ(Find(*m, "q")->sharding, "{replicated}");
  Instruction* c = Find(*m, "c");
  EXPECT_EQ(c->custom_call_target, "cusolver_geqrf");
  EXPECT_EQ(c->backend_config, "\"\\000\\001\\\"x\\\"\\027\"");
  ASSERT_EQ(c->extra_attributes.size(), 1u);
  EXPECT_EQ(c->extra_attributes[0].name, "api_version");
  EXPECT_EQ(c->extra_attributes[0].value, "API_VERSION_STATUS_RETURNING");
  Instruction* t = m->entry()->root();
  EXPECT_EQ(t->sharding, "{{replicated}, {maximal device=0}}");
  EXPECT_EQ(t->backend_config, "{\"operation_queue_id\":\"0\",\"wait_on_operation_queues\":[]}");
  const std::string printed = RoundTrip(PrintModule(*m));
  EXPECT_NE(printed.find("backend_config=\"\\000\\001\\\"x\\\"\\027\""), std::string::npos);
}

TEST(HloParserTest, UnknownAttributesArePreservedInOrder) {
  const std::string text = R"(HloModule u
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[8]{0} parameter(0)
  ar = f32[8]{0} all-reduce(p), channel_id=3, replica_groups=[2,4]<=[8], use_global_device_ids=true, to_apply=add, neff_weird={a=[1,2], b=(3)}
  ROOT d = f32[8]{0} custom-call(ar), custom_call_target="foo", output_to_operand_aliasing={{}: (0, {})}, operand_precision={default,high}
}
)";
  std::unique_ptr<Module> m = MustParse(text);
  ASSERT_NE(m, nullptr);
  Instruction* ar = Find(*m, "ar");
  ASSERT_EQ(ar->extra_attributes.size(), 4u);
  EXPECT_EQ(ar->extra_attributes[0], (RawAttribute{"channel_id", "3"}));
  EXPECT_EQ(ar->extra_attributes[1], (RawAttribute{"replica_groups", "[2,4]<=[8]"}));
  EXPECT_EQ(ar->extra_attributes[2], (RawAttribute{"use_global_device_ids", "true"}));
  EXPECT_EQ(ar->extra_attributes[3], (RawAttribute{"neff_weird", "{a=[1,2], b=(3)}"}));
  EXPECT_EQ(ar->to_apply()->name(), "add");
  Instruction* d = m->entry()->root();
  ASSERT_NE(d->FindExtraAttribute("output_to_operand_aliasing"), nullptr);
  EXPECT_EQ(d->FindExtraAttribute("output_to_operand_aliasing")->value, "{{}: (0, {})}");
  EXPECT_EQ(d->FindExtraAttribute("operand_precision")->value, "{default,high}");
  const std::string printed = RoundTrip(text);
  EXPECT_NE(printed.find("to_apply=add, channel_id=3, replica_groups=[2,4]<=[8], "
                         "use_global_device_ids=true, neff_weird={a=[1,2], b=(3)}"),
            std::string::npos)
      << printed;
}

TEST(HloParserTest, ElidedConstantsHaveNoLiteral) {
  std::unique_ptr<Module> m = MustParse(R"(HloModule k
ENTRY e {
  ROOT c = f32[3,3,3,32]{3,2,1,0} constant({...})
}
)");
  ASSERT_NE(m, nullptr);
  Instruction* c = m->entry()->root();
  EXPECT_TRUE(c->literal_elided);
  EXPECT_FALSE(c->literal.has_value());
  EXPECT_NE(PrintModule(*m).find("constant({...})"), std::string::npos);
}

Literal ConstantOf(std::string_view shape, std::string_view value) {
  const std::string text = absl::StrCat("HloModule k\nENTRY e {\n  ROOT c = ", std::string(shape),
                                        " constant(", std::string(value), ")\n}\n");
  std::unique_ptr<Module> m = MustParse(text);
  if (m == nullptr || !m->entry()->root()->literal.has_value()) {
    ADD_FAILURE() << "no literal in " << text;
    return Literal();
  }
  RoundTrip(text);
  return *m->entry()->root()->literal;
}

TEST(HloParserTest, LiteralForms) {
  Literal nested = ConstantOf("s32[2,3]{1,0}", "{ {1, 2, 3}, {4, 5, -6} }");
  EXPECT_EQ(nested.element_count(), 6);
  EXPECT_EQ(nested.GetAsInt64(0), 1);
  EXPECT_EQ(nested.GetAsInt64(5), -6);
  EXPECT_EQ(nested.ToString(), "{ {1, 2, 3}, {4, 5, -6} }");

  EXPECT_EQ(ConstantOf("f32[]", "1.5").GetAsDouble(0), 1.5);
  EXPECT_EQ(ConstantOf("f32[]", "-2e-05").Get<float>(0), -2e-05f);
  EXPECT_EQ(ConstantOf("f64[]", "0.1").Get<double>(0), 0.1);

  Literal special = ConstantOf("f32[6]", "{nan, -nan, inf, -inf, nan(0x1), 1e-45}");
  EXPECT_TRUE(std::isnan(special.Get<float>(0)));
  EXPECT_FALSE(std::signbit(special.Get<float>(0)));
  EXPECT_TRUE(std::isnan(special.Get<float>(1)));
  EXPECT_TRUE(std::signbit(special.Get<float>(1)));
  EXPECT_EQ(special.Get<float>(2), std::numeric_limits<float>::infinity());
  EXPECT_EQ(special.Get<float>(3), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(special.Get<uint32_t>(4), 0x7f800001u);  // payload kept bit-exact
  EXPECT_GT(special.Get<float>(5), 0.0f);            // subnormal, not flushed

  Literal pred = ConstantOf("pred[3]", "{true, false, true}");
  EXPECT_TRUE(pred.GetAsBool(0));
  EXPECT_FALSE(pred.GetAsBool(1));
  EXPECT_EQ(pred.ToString(), "{true, false, true}");

  Literal complex = ConstantOf("c64[2]", "{(1, 2), (-0.5, inf)}");
  EXPECT_EQ(complex.GetAsComplex(0), std::complex<double>(1, 2));
  EXPECT_EQ(complex.GetAsComplex(1).real(), -0.5);
  EXPECT_TRUE(std::isinf(complex.GetAsComplex(1).imag()));

  Literal tuple = ConstantOf("(s32[], f32[2], pred[])", "(7, {1, 2}, true)");
  ASSERT_EQ(tuple.elements().size(), 3u);
  EXPECT_EQ(tuple.elements()[0].GetAsInt64(0), 7);
  EXPECT_EQ(tuple.elements()[1].GetAsDouble(1), 2.0);
  EXPECT_TRUE(tuple.elements()[2].GetAsBool(0));

  EXPECT_EQ(ConstantOf("u64[]", "18446744073709551615").GetAsUint64(0),
            std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(ConstantOf("s64[]", "-9223372036854775808").GetAsInt64(0),
            std::numeric_limits<int64_t>::min());
  EXPECT_EQ(ConstantOf("s8[2]", "{-128, 127}").GetAsInt64(0), -128);
  EXPECT_EQ(ConstantOf("bf16[2]", "{1.5, -3}").GetAsDouble(1), -3.0);
  EXPECT_EQ(ConstantOf("s64[0]{0}", "{}").element_count(), 0);
  EXPECT_EQ(ConstantOf("f32[2,0]", "{ {}, {} }").element_count(), 0);

  // A large nested literal: every value lands at its row-major index.
  std::string big = "{ ";
  for (int i = 0; i < 64; ++i) {
    if (i) big += ", ";
    big += "{";
    for (int j = 0; j < 64; ++j) absl::StrAppend(&big, j ? ", " : "", i * 64 + j);
    big += "}";
  }
  big += " }";
  Literal large = ConstantOf("s32[64,64]", big);
  ASSERT_EQ(large.element_count(), 64 * 64);
  for (int64_t k = 0; k < 64 * 64; k += 97) EXPECT_EQ(large.GetAsInt64(k), k);
}

TEST(HloParserTest, DynamicShapesAndTiledLayouts) {
  absl::StatusOr<Shape> s = ParseShape("f32[<=8,?,3]{2,1,0:T(8,128)(2,1)E(4)S(1)}");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->element_type(), PrimitiveType::kF32);
  EXPECT_EQ(s->dimensions(), (std::vector<int64_t>{8, kUnboundedDim, 3}));
  EXPECT_EQ(s->dynamic_dimensions(), (std::vector<bool>{true, true, false}));
  ASSERT_TRUE(s->layout().has_value());
  EXPECT_EQ(s->layout()->minor_to_major, (std::vector<int64_t>{2, 1, 0}));
  ASSERT_EQ(s->layout()->tiles.size(), 2u);
  EXPECT_EQ(s->layout()->tiles[0].dims, (std::vector<int64_t>{8, 128}));
  EXPECT_EQ(s->layout()->tiles[1].dims, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(s->layout()->element_size_in_bits, 4);
  EXPECT_EQ(s->layout()->memory_space, 1);
  EXPECT_EQ(s->ToString(), "f32[<=8,?,3]{2,1,0:T(8,128)(2,1)E(4)S(1)}");

  absl::StatusOr<Shape> odd = ParseShape("bf16[4,256]{1,0:D(D,C)T(8,128)(2,1)*(s32)}");
  ASSERT_TRUE(odd.ok()) << odd.status();
  EXPECT_EQ(odd->layout()->tiles.size(), 2u);
  EXPECT_EQ(odd->layout()->extra, "D(D,C)*(s32)");

  absl::StatusOr<Shape> scalar = ParseShape("s32[]");
  ASSERT_TRUE(scalar.ok());
  EXPECT_TRUE(scalar->IsScalar());
  absl::StatusOr<Shape> star = ParseShape("u8[1024]{0:T(2,*)}");
  ASSERT_TRUE(star.ok()) << star.status();
  EXPECT_EQ(star->layout()->tiles[0].dims, (std::vector<int64_t>{2, Tile::kCombineDim}));

  absl::StatusOr<Shape> nested = ParseShape("((f32[2]{0}, token[]), (), s4[3], f8e4m3fn[2])");
  ASSERT_TRUE(nested.ok()) << nested.status();
  EXPECT_EQ(nested->tuple_size(), 4);
  EXPECT_TRUE(nested->tuple_shapes(0).tuple_shapes(1).IsToken());
  EXPECT_EQ(nested->tuple_shapes(1).tuple_size(), 0);
  EXPECT_EQ(nested->tuple_shapes(2).element_type(), PrimitiveType::kS4);
  EXPECT_EQ(nested->tuple_shapes(3).element_type(), PrimitiveType::kF8E4M3FN);

  // Every primitive type name parses.
  for (const char* t : {"pred",       "s4",         "s8",  "s16",    "s32",      "s64",
                        "u4",         "u8",         "u16", "u32",    "u64",      "f16",
                        "bf16",       "f32",        "f64", "f8e5m2", "f8e4m3fn", "f8e4m3b11fnuz",
                        "f8e5m2fnuz", "f8e4m3fnuz", "c64", "c128"}) {
    absl::StatusOr<Shape> p = ParseShape(absl::StrCat(t, "[2]"));
    ASSERT_TRUE(p.ok()) << t << ": " << p.status();
    EXPECT_EQ(PrimitiveTypeName(p->element_type()), t);
  }

  // A missing layout means the default one.
  absl::StatusOr<Shape> plain = ParseShape("f32[2,3]");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->ToString(), "f32[2,3]{1,0}");

  // Dynamic shapes in a module round-trip.
  RoundTrip(R"(HloModule d
ENTRY e {
  p = f32[<=16,?]{1,0} parameter(0)
  ROOT n = f32[<=16,?]{1,0:T(8,128)S(2)} negate(p)
}
)");
}

TEST(HloParserTest, EntryLessModuleTakesLastComputation) {
  std::unique_ptr<Module> m = MustParse(R"(HloModule n
first {
  ROOT a = f32[] parameter(0)
}
second {
  x = f32[] parameter(0)
  ROOT c = f32[] call(x), to_apply=first
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->entry()->name(), "second");
  EXPECT_FALSE(m->computations()[0]->is_entry());
  EXPECT_NE(PrintModule(*m).find("ENTRY second {"), std::string::npos);
}

TEST(HloParserTest, RootDefaultsToLastInstruction) {
  std::unique_ptr<Module> m = MustParse(R"(HloModule n
ENTRY e {
  x = f32[] parameter(0)
  y = f32[] negate(x)
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->entry()->root()->name(), "y");
}

TEST(HloParserTest, ModuleHeaderAttributes) {
  const std::string text =
      "HloModule SyncTensorsGraph.357, is_scheduled=true, entry_computation_layout="
      "{(f32[2]{0}, f32[2]{0})->(f32[2]{0}, f32[2]{0})}, input_output_alias={ {0}: (1, {}, "
      "must-alias), {1}: (0, {2, 3}, may-alias), {2}: (0, {}) }, replica_count=2, "
      "frontend_attributes={x=\"y\"}\n"
      "ENTRY e {\n  a = f32[2]{0} parameter(0)\n  b = f32[2]{0} parameter(1)\n"
      "  ROOT t = (f32[2]{0}, f32[2]{0}) tuple(a, b)\n}\n";
  std::unique_ptr<Module> m = MustParse(text);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->name(), "SyncTensorsGraph.357");
  EXPECT_TRUE(m->is_scheduled);
  EXPECT_EQ(m->entry_computation_layout, "{(f32[2]{0}, f32[2]{0})->(f32[2]{0}, f32[2]{0})}");
  ASSERT_EQ(m->input_output_alias.size(), 3u);
  EXPECT_EQ(m->input_output_alias[0], (IoAlias{{0}, 1, {}, "must-alias"}));
  EXPECT_EQ(m->input_output_alias[1], (IoAlias{{1}, 0, {2, 3}, "may-alias"}));
  EXPECT_EQ(m->input_output_alias[2], (IoAlias{{2}, 0, {}, ""}));
  ASSERT_EQ(m->extra_attributes.size(), 2u);
  EXPECT_EQ(m->extra_attributes[0], (RawAttribute{"replica_count", "2"}));
  EXPECT_EQ(m->extra_attributes[1], (RawAttribute{"frontend_attributes", "{x=\"y\"}"}));
  const std::string printed = RoundTrip(text);
  EXPECT_EQ(printed.substr(0, printed.find('\n')),
            "HloModule SyncTensorsGraph.357, is_scheduled=true, input_output_alias={ {0}: (1, {}, "
            "must-alias), {1}: (0, {2,3}, may-alias), {2}: (0, {}) }, entry_computation_layout="
            "{(f32[2]{0}, f32[2]{0})->(f32[2]{0}, f32[2]{0})}, replica_count=2, "
            "frontend_attributes={x=\"y\"}");
}

constexpr char kStructured[] = R"(HloModule s

add {
  ax = f32[] parameter(0)
  ay = f32[] parameter(1)
  ROOT as = f32[] add(ax, ay)
}

ge {
  gx = f32[] parameter(0)
  gy = f32[] parameter(1)
  ROOT c = pred[] compare(gx, gy), direction=GE
}

cond {
  t = (s32[], f32[4]{0}) parameter(0)
  i = s32[] get-tuple-element(t), index=0
  n = s32[] constant(10)
  ROOT lt = pred[] compare(i, n), direction=LT, type=SIGNED
}

body {
  ROOT bt = (s32[], f32[4]{0}) parameter(0)
}

fused {
  a = f32[4]{0} parameter(0)
  ROOT e = f32[4]{0} exponential(a)
}

ENTRY main {
  lhs = f32[8,16,32]{2,1,0} parameter(0)
  rhs = f32[8,32,4]{2,1,0} parameter(1)
  dot = f32[8,16,4]{2,1,0} dot(lhs, rhs), lhs_batch_dims={0}, lhs_contracting_dims={2}, rhs_batch_dims={0}, rhs_contracting_dims={1}, operand_precision={highest,highest}
  img = f32[1,28,28,3]{3,2,1,0} parameter(2)
  ker = f32[3,3,3,16]{3,2,1,0} parameter(3)
  conv = f32[1,14,14,16]{3,2,1,0} convolution(img, ker), window={size=3x3 stride=2x2 pad=1_1x0_1 lhs_dilate=1x1 rhs_dilate=2x1 rhs_reversal=0x1}, dim_labels=b01f_01io->b01f, feature_group_count=1, batch_group_count=1
  table = f32[100,5]{1,0} parameter(4)
  idx = s32[7,1]{1,0} parameter(5)
  gather = f32[7,5]{1,0} gather(table, idx), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,5}, indices_are_sorted=true
  upd = f32[7,5]{1,0} parameter(6)
  scatter = f32[100,5]{1,0} scatter(table, idx, upd), update_window_dims={1}, inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, unique_indices=true, to_apply=add
  slice = f32[50,2]{1,0} slice(table), slice={[0:100:2], [1:3]}
  zero = f32[] constant(0)
  pad = f32[103,14]{1,0} pad(table, zero), padding=1_2x-1_1_3
  rw = f32[50,5]{1,0} reduce-window(table, zero), window={size=2x1 stride=2x1}, to_apply=add
  sas = f32[100,5]{1,0} select-and-scatter(table, rw, zero), window={size=2x1 stride=2x1}, select=ge, scatter=add
  cmp = pred[100,5]{1,0} compare(table, table), direction=LT, type=TOTALORDER
  init = (s32[], f32[4]{0}) parameter(7)
  loop = (s32[], f32[4]{0}) while(init), condition=cond, body=body
  v = f32[4]{0} get-tuple-element(loop), index=1
  fusion = f32[4]{0} fusion(v), kind=kLoop, calls=fused
  b = pred[] parameter(8)
  cond1 = f32[4]{0} conditional(b, v, v), true_computation=fused, false_computation=fused
  k = s32[] parameter(9)
  cond2 = f32[4]{0} conditional(k, v, v, v), branch_computations={fused, fused, fused}
  iota = s32[5,4]{1,0} iota(), iota_dimension=1
  ds = f32[2,5]{1,0} dynamic-slice(table, k, k), dynamic_slice_sizes={2,5}
  sort = f32[4]{0} sort(v), dimensions={0}, is_stable=true, to_apply=ge
  rng = f32[4]{0} rng(zero, zero), distribution=rng_normal
  fft = c64[8]{0} parameter(10)
  fftr = c64[8]{0} fft(fft), fft_type=IFFT, fft_length={8}
  rp = f32[4]{0} reduce-precision(v), exponent_bits=5, mantissa_bits=10
  bn = (f32[4096,4]{1,0}, f32[4]{0}, f32[4]{0}) batch-norm-training(table, v, v), epsilon=1e-05, feature_index=1
  sq = f32[3,3]{1,0} parameter(11)
  ts = f32[3,3]{1,0} triangular-solve(sq, sq), left_side=true, lower=true, unit_diagonal=true, transpose_a=ADJOINT
  chol = f32[3,3]{1,0} cholesky(sq), lower=true
  top = (f32[2]{0}, s32[2]{0}) topk(v), k=2, largest=false
  cc = f32[4]{0} custom-call(v), custom_call_target="my\tcall", custom_call_has_side_effect=true, called_computations={fused}
  cc2 = f32[4]{0} custom-call(v), custom_call_target="x", to_apply=fused
  tr = f32[5,100]{1,0} transpose(table), dimensions={1,0}
  ROOT out = f32[4]{0} add(fusion, cc), control-predecessors={tr, chol}
}
)";

TEST(HloParserTest, StructuredAttributes) {
  std::unique_ptr<Module> m = MustParse(kStructured);
  ASSERT_NE(m, nullptr);
  Instruction* dot = Find(*m, "dot");
  ASSERT_TRUE(dot->dot_dnums.has_value());
  EXPECT_EQ(dot->dot_dnums->lhs_batch_dimensions, std::vector<int64_t>{0});
  EXPECT_EQ(dot->dot_dnums->lhs_contracting_dimensions, std::vector<int64_t>{2});
  EXPECT_EQ(dot->dot_dnums->rhs_batch_dimensions, std::vector<int64_t>{0});
  EXPECT_EQ(dot->dot_dnums->rhs_contracting_dimensions, std::vector<int64_t>{1});
  ASSERT_EQ(dot->extra_attributes.size(), 1u);
  EXPECT_EQ(dot->extra_attributes[0].name, "operand_precision");

  Instruction* conv = Find(*m, "conv");
  ASSERT_TRUE(conv->conv_dnums.has_value());
  EXPECT_EQ(conv->conv_dnums->input_batch_dimension, 0);
  EXPECT_EQ(conv->conv_dnums->input_feature_dimension, 3);
  EXPECT_EQ(conv->conv_dnums->input_spatial_dimensions, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(conv->conv_dnums->kernel_input_feature_dimension, 2);
  EXPECT_EQ(conv->conv_dnums->kernel_output_feature_dimension, 3);
  EXPECT_EQ(conv->conv_dnums->kernel_spatial_dimensions, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(conv->conv_dnums->output_feature_dimension, 3);
  ASSERT_TRUE(conv->window.has_value());
  ASSERT_EQ(conv->window->dims.size(), 2u);
  EXPECT_EQ(conv->window->dims[0], (WindowDim{3, 2, 1, 1, 2, 1, false}));
  EXPECT_EQ(conv->window->dims[1], (WindowDim{3, 2, 0, 1, 1, 1, true}));

  Instruction* gather = Find(*m, "gather");
  ASSERT_TRUE(gather->gather_dnums.has_value());
  EXPECT_EQ(gather->gather_dnums->offset_dims, std::vector<int64_t>{1});
  EXPECT_EQ(gather->gather_dnums->collapsed_slice_dims, std::vector<int64_t>{0});
  EXPECT_EQ(gather->gather_dnums->start_index_map, std::vector<int64_t>{0});
  EXPECT_EQ(gather->gather_dnums->index_vector_dim, 1);
  EXPECT_EQ(gather->gather_slice_sizes, (std::vector<int64_t>{1, 5}));
  EXPECT_TRUE(gather->indices_are_sorted);

  Instruction* scatter = Find(*m, "scatter");
  ASSERT_TRUE(scatter->scatter_dnums.has_value());
  EXPECT_EQ(scatter->scatter_dnums->update_window_dims, std::vector<int64_t>{1});
  EXPECT_EQ(scatter->scatter_dnums->inserted_window_dims, std::vector<int64_t>{0});
  EXPECT_EQ(scatter->scatter_dnums->scatter_dims_to_operand_dims, std::vector<int64_t>{0});
  EXPECT_EQ(scatter->scatter_dnums->index_vector_dim, 1);
  EXPECT_TRUE(scatter->unique_indices);
  EXPECT_FALSE(scatter->indices_are_sorted);
  EXPECT_EQ(scatter->to_apply()->name(), "add");

  Instruction* slice = Find(*m, "slice");
  EXPECT_EQ(slice->slice, (std::vector<SliceDim>{{0, 100, 2}, {1, 3, 1}}));
  Instruction* pad = Find(*m, "pad");
  EXPECT_EQ(pad->padding, (std::vector<PaddingDim>{{1, 2, 0}, {-1, 1, 3}}));
  Instruction* sas = Find(*m, "sas");
  ASSERT_EQ(sas->called_computations().size(), 2u);
  EXPECT_EQ(sas->called_computations()[0]->name(), "ge");
  EXPECT_EQ(sas->called_computations()[1]->name(), "add");
  EXPECT_EQ(Find(*m, "cmp")->comparison_direction, ComparisonDirection::kLt);
  EXPECT_EQ(Find(*m, "cmp")->comparison_type, ComparisonType::kFloatTotalOrder);
  EXPECT_EQ(Find(*m, "lt")->comparison_type, ComparisonType::kSigned);
  EXPECT_EQ(Find(*m, "c")->comparison_type, ComparisonType::kDefault);

  Instruction* loop = Find(*m, "loop");
  EXPECT_EQ(loop->while_condition()->name(), "cond");
  EXPECT_EQ(loop->while_body()->name(), "body");
  Instruction* fusion = Find(*m, "fusion");
  EXPECT_EQ(fusion->fusion_kind, "kLoop");
  EXPECT_EQ(fusion->called_computations()[0]->name(), "fused");
  EXPECT_TRUE(Find(*m, "cond1")->conditional_true_false_form);
  EXPECT_EQ(Find(*m, "cond1")->called_computations().size(), 2u);
  EXPECT_FALSE(Find(*m, "cond2")->conditional_true_false_form);
  EXPECT_EQ(Find(*m, "cond2")->called_computations().size(), 3u);
  EXPECT_EQ(Find(*m, "iota")->iota_dimension, 1);
  EXPECT_EQ(Find(*m, "ds")->dynamic_slice_sizes, (std::vector<int64_t>{2, 5}));
  EXPECT_TRUE(Find(*m, "sort")->is_stable);
  EXPECT_EQ(Find(*m, "sort")->dimensions, std::vector<int64_t>{0});
  EXPECT_EQ(Find(*m, "rng")->distribution, RandomDistribution::kNormal);
  EXPECT_EQ(Find(*m, "fftr")->fft_type, FftType::kIfft);
  EXPECT_EQ(Find(*m, "fftr")->fft_length, std::vector<int64_t>{8});
  EXPECT_EQ(Find(*m, "rp")->exponent_bits, 5);
  EXPECT_EQ(Find(*m, "rp")->mantissa_bits, 10);
  EXPECT_FLOAT_EQ(Find(*m, "bn")->epsilon, 1e-05f);
  EXPECT_EQ(Find(*m, "bn")->feature_index, 1);
  ASSERT_TRUE(Find(*m, "ts")->triangular_solve.has_value());
  EXPECT_EQ(*Find(*m, "ts")->triangular_solve,
            (TriangularSolveOptions{true, true, true, TriangularTranspose::kAdjoint}));
  EXPECT_TRUE(Find(*m, "chol")->cholesky_lower);
  EXPECT_EQ(Find(*m, "top")->topk_k, 2);
  EXPECT_FALSE(Find(*m, "top")->topk_largest);
  Instruction* cc = Find(*m, "cc");
  EXPECT_EQ(cc->custom_call_target, "my\tcall");
  EXPECT_TRUE(cc->custom_call_has_side_effect);
  EXPECT_TRUE(cc->HasSideEffect());
  EXPECT_FALSE(cc->custom_call_to_apply_form);
  EXPECT_EQ(cc->called_computations().size(), 1u);
  EXPECT_TRUE(Find(*m, "cc2")->custom_call_to_apply_form);
  EXPECT_EQ(Find(*m, "tr")->dimensions, (std::vector<int64_t>{1, 0}));
  Instruction* out = m->entry()->root();
  ASSERT_EQ(out->control_predecessors().size(), 2u);
  EXPECT_EQ(out->control_predecessors()[0]->name(), "tr");
  EXPECT_EQ(out->control_predecessors()[1]->name(), "chol");
  EXPECT_EQ(Find(*m, "tr")->control_successors()[0], out);

  const std::string printed = RoundTrip(kStructured);
  for (const char* expected : {
           "window={size=3x3 stride=2x2 pad=1_1x0_1 rhs_dilate=2x1 rhs_reversal=0x1}, "
           "dim_labels=b01f_01io->b01f",
           "slice={[0:100:2], [1:3]}",
           "padding=1_2_0x-1_1_3",
           "true_computation=fused, false_computation=fused",
           "branch_computations={fused, fused, fused}",
           "custom_call_target=\"my\\tcall\", custom_call_has_side_effect=true, "
           "called_computations={fused}",
           "control-predecessors={tr, chol}",
           "select=ge, scatter=add",
           "direction=LT, type=TOTALORDER",
       }) {
    EXPECT_NE(printed.find(expected), std::string::npos) << expected << "\n" << printed;
  }
}

TEST(HloParserTest, OperandsMayBeDefinedAfterUse) {
  std::unique_ptr<Module> m = MustParse(R"(HloModule o
ENTRY e {
  ROOT r = f32[2]{0} add(n, p)
  n = f32[2]{0} negate(p)
  p = f32[2]{0} parameter(0)
}
)");
  ASSERT_NE(m, nullptr);
  Instruction* r = m->entry()->root();
  EXPECT_EQ(r->operand(0)->name(), "n");
  EXPECT_EQ(r->operand(1)->name(), "p");
  EXPECT_EQ(Find(*m, "p")->user_count(), 2);
  // Printed in the order written.
  EXPECT_EQ(m->entry()->instructions()[0]->name(), "r");
}

TEST(HloParserTest, CalledComputationsMayBeDefinedLater) {
  std::unique_ptr<Module> m = MustParse(R"(HloModule o
ENTRY e {
  p = f32[] parameter(0)
  ROOT c = f32[] call(p), to_apply=later
}
later {
  ROOT x = f32[] parameter(0)
}
)");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->entry()->name(), "e");
  EXPECT_EQ(m->entry()->root()->to_apply()->name(), "later");
}

TEST(HloParserTest, FileReaderHandlesPlainAndGzip) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / absl::StrCat("mltune_parser_test_", ::getpid());
  std::filesystem::create_directories(dir);
  const std::string plain = (dir / "m.hlo").string();
  {
    FILE* f = std::fopen(plain.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fputs(kNoSigils, f);
    std::fclose(f);
  }
  const std::string gz = (dir / "m.hlo.gz").string();
  {
    gzFile f = gzopen(gz.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    gzwrite(f, kSigilsWithShapes, static_cast<unsigned>(std::strlen(kSigilsWithShapes)));
    gzclose(f);
  }
  absl::StatusOr<std::unique_ptr<Module>> a = ParseHloFile(plain);
  absl::StatusOr<std::unique_ptr<Module>> b = ParseHloFile(gz);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(PrintModule(**a), PrintModule(**b));

  absl::StatusOr<std::unique_ptr<Module>> missing = ParseHloFile((dir / "nope.hlo").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(missing.status().message(), absl::StrCat("cannot open ", (dir / "nope.hlo").string(),
                                                     ": No such file or directory"));

  // Errors name the file.
  const std::string broken = (dir / "broken.hlo").string();
  {
    FILE* f = std::fopen(broken.c_str(), "wb");
    std::fputs("HloModule x\nENTRY e {\n  p = f32[] parmeter(0)\n}\n", f);
    std::fclose(f);
  }
  absl::StatusOr<std::unique_ptr<Module>> bad = ParseHloFile(broken);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), absl::StrCat(broken, ":3:13: unknown opcode 'parmeter'"));
  std::filesystem::remove_all(dir);
}

TEST(HloParserTest, CorpusRoundTrips) {
  const std::vector<std::string> files = mltune::testing::CorpusFiles();
  if (files.empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  int checked = 0;
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    absl::StatusOr<std::unique_ptr<Module>> m = ParseHloFile(path);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_GT((*m)->instruction_count(), 0);
    const std::string printed = PrintModule(**m);
    ParseOptions options;
    options.filename = path + " (printed)";
    absl::StatusOr<std::unique_ptr<Module>> again = ParseHloText(printed, options);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(PrintModule(**again), printed);
    std::string why;
    EXPECT_TRUE(StructurallyEqual(**m, **again, &why)) << why;
    EXPECT_EQ((*again)->instruction_count(), (*m)->instruction_count());
    EXPECT_EQ((*again)->computation_count(), (*m)->computation_count());
    EXPECT_EQ((*again)->entry()->name(), (*m)->entry()->name());
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(files.size()));
}

TEST(HloParserTest, CorpusPreservesAnnotations) {
  const std::vector<std::string> files = mltune::testing::CorpusFiles();
  if (files.empty()) GTEST_SKIP() << mltune::testing::kNoCorpusMessage;
  // Every metadata={...}, sharding={...} and backend_config=... in the text survives the parse.
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    const std::string text = mltune::testing::ReadFile(path);
    absl::StatusOr<std::unique_ptr<Module>> m = ParseHloText(text);
    ASSERT_TRUE(m.ok()) << m.status();
    int64_t metadata = 0, sharding = 0, backend = 0;
    for (Computation* c : (*m)->computations()) {
      for (Instruction* i : c->instructions()) {
        metadata += !i->metadata.empty();
        sharding += !i->sharding.empty();
        backend += !i->backend_config.empty();
      }
    }
    auto count = [&](std::string_view needle) {
      int64_t n = 0;
      for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
      return n;
    };
    EXPECT_EQ(metadata, count(", metadata="));
    EXPECT_EQ(sharding, count(", sharding="));
    EXPECT_EQ(backend, count(", backend_config="));
  }
}

// Newer XLA writes `%t#i` for element i of a tuple-shaped operand. The parser makes one
// get-tuple-element per (operand, index), and the module means what the explicit form means.
TEST(HloParserTest, TupleElementShorthandBecomesGetTupleElement) {
  constexpr char kShorthand[] = R"(HloModule s
pair {
  a = f32[3] parameter(0)
  n = f32[3] negate(a)
  ROOT t = (f32[3], f32[3]) tuple(a, n)
}
ENTRY e {
  x = f32[3] parameter(0)
  p = (f32[3], f32[3]) call(x), to_apply=pair
  s = f32[3] add(p#1, p#0)
  ROOT m = f32[3] multiply(s, p#1)
})";
  constexpr char kExplicit[] = R"(HloModule s
pair {
  a = f32[3] parameter(0)
  n = f32[3] negate(a)
  ROOT t = (f32[3], f32[3]) tuple(a, n)
}
ENTRY e {
  x = f32[3] parameter(0)
  p = (f32[3], f32[3]) call(x), to_apply=pair
  g1 = f32[3] get-tuple-element(p), index=1
  g0 = f32[3] get-tuple-element(p), index=0
  s = f32[3] add(g1, g0)
  ROOT m = f32[3] multiply(s, g1)
})";
  std::unique_ptr<Module> m = MustParse(kShorthand);
  ASSERT_NE(m, nullptr);
  int64_t elements = 0;
  for (const Instruction* i : m->entry()->instructions()) {
    if (i->opcode() != Opcode::kGetTupleElement) continue;
    ++elements;
    EXPECT_EQ(i->operand(0)->name(), "p");
    EXPECT_EQ(i->name(), absl::StrCat("p.element", i->tuple_index));
  }
  EXPECT_EQ(elements, 2);  // p#1 is used twice, made once
  EXPECT_TRUE(VerifyModule(*m).ok());
  RoundTrip(PrintModule(*m));
  std::unique_ptr<Module> e = MustParse(kExplicit);
  ASSERT_NE(e, nullptr);
  absl::StatusOr<std::vector<Literal>> args = MakeRandomArguments(*m, 1);
  ASSERT_TRUE(args.ok()) << args.status();
  absl::StatusOr<Literal> got = Evaluate(*m, *args), want = Evaluate(*e, *args);
  ASSERT_TRUE(got.ok() && want.ok());
  EXPECT_EQ(LiteralDigest(*got), LiteralDigest(*want));
}

}  // namespace
}  // namespace mltune::ir
