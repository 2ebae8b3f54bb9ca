// Malformed HLO text: every error is an InvalidArgument naming `file:line:col` and what was
// expected; truncated, absurd and hostile inputs fail cleanly instead of crashing or allocating.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/hlo_parser.h"
#include "ir/hlo_printer.h"
#include "tests/support/corpus.h"

namespace mltune::ir {
namespace {

// The error message for `text`, or a test failure when it parses.
std::string ErrorOf(std::string_view text, const ParseOptions& options = {}) {
  absl::StatusOr<std::unique_ptr<Module>> m = ParseHloText(text, options);
  if (m.ok()) {
    ADD_FAILURE() << "parsed, but should not have:\n" << text;
    return "";
  }
  EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument) << m.status();
  return std::string(m.status().message());
}

// Wraps instruction lines into a module: the first line given is line 3.
std::string Module1(std::string_view body) {
  return absl::StrCat("HloModule m\nENTRY e {\n", std::string(body), "\n}\n");
}

TEST(ParserErrorsTest, UnknownOpcode) {
  EXPECT_EQ(ErrorOf(Module1("  p = f32[] parameter(0)\n  ROOT x = f32[] foo(p)")),
            "<input>:4:18: unknown opcode 'foo'");
}

TEST(ParserErrorsTest, FilenameIsUsed) {
  ParseOptions options;
  options.filename = "model.hlo";
  EXPECT_EQ(ErrorOf("HloModul x", options), "model.hlo:1:1: expected 'HloModule', got 'HloModul'");
}

TEST(ParserErrorsTest, WrongAttributeSyntax) {
  EXPECT_EQ(ErrorOf(Module1("  p = f32[2]{0} parameter(0)\n"
                            "  ROOT b = f32[2,2]{1,0} broadcast(p), dimensions=1")),
            "<input>:4:51: expected '{', got '1'");
  EXPECT_EQ(ErrorOf(Module1("  p = f32[2]{0} parameter(0)\n"
                            "  ROOT b = f32[2,2]{1,0} broadcast(p), dimensions={0,}")),
            "<input>:4:54: expected integer, got '}'");
  EXPECT_EQ(ErrorOf(Module1("  p = f32[2]{0} parameter(0)\n"
                            "  ROOT c = pred[2]{0} compare(p, p), direction=SOMETIMES")),
            "<input>:4:48: expected comparison direction, got 'SOMETIMES'");
  EXPECT_EQ(ErrorOf(Module1("  p = f32[2]{0} parameter(0)\n"
                            "  ROOT s = f32[1]{0} slice(p), slice={[0:1}")),
            "<input>:4:43: expected ']', got '}'");
  EXPECT_EQ(ErrorOf(Module1("  p = f32[1,8,8,1]{3,2,1,0} parameter(0)\n"
                            "  ROOT c = f32[1,8,8,1]{3,2,1,0} convolution(p, p), "
                            "dim_labels=b01f_01io->bxf")),
            "<input>:4:64: expected dim_labels like b01f_01io->b01f, got 'b01f_01io->bxf'");
  EXPECT_EQ(ErrorOf(Module1("  p = f32[8]{0} parameter(0)\n"
                            "  ROOT r = f32[4]{0} reduce-window(p, p), window={size=2 bogus=1}")),
            "<input>:4:58: unknown window attribute 'bogus'");
  EXPECT_EQ(
      ErrorOf(Module1("  p = f32[8]{0} parameter(0)\n"
                      "  ROOT r = f32[4]{0} reduce-window(p, p), window={size=2x2 stride=1}")),
      "<input>:4:50: window stride has 1 dimensions, size has 2");
  EXPECT_EQ(ErrorOf(absl::StrCat("HloModule m\nENTRY e {\n  p = f32[8]{0} parameter(0)\n",
                                 "  ROOT n = f32[8]{0} negate(p), metadata={op_name=\"x\"")),
            "<input>:4:54: expected '}', got end of input");
  EXPECT_EQ(ErrorOf(Module1("  p = f32[8]{0} parameter(0)\n"
                            "  ROOT n = f32[8]{0} negate(p), metadata={op_name=\"x)")),
            "<input>:4:51: unterminated string");
  EXPECT_EQ(ErrorOf(Module1("  p = f32[8]{0} parameter(0)\n"
                            "  ROOT n = f32[8]{0} negate(p), foo=(]")),
            "<input>:4:38: expected ')', got ']'");
  EXPECT_EQ(ErrorOf(Module1("  p = f32[8]{0} parameter(0)\n"
                            "  ROOT n = f32[8]{0} negate(p), dimensions={0}, dimensions={0}")),
            "<input>:4:49: duplicate attribute 'dimensions'");
  EXPECT_EQ(ErrorOf(Module1("  p = f32[8]{0} parameter(0)\n  ROOT n = f32[8]{0} negate(p),")),
            "<input>:5:1: expected attribute name, got '}'");
}

TEST(ParserErrorsTest, UndefinedNames) {
  EXPECT_EQ(ErrorOf(Module1("  p = f32[] parameter(0)\n  ROOT a = f32[] add(p, y)")),
            "<input>:4:25: undefined operand 'y' in computation 'e'");
  EXPECT_EQ(
      ErrorOf(Module1("  p = f32[] parameter(0)\n  ROOT c = f32[] call(p), to_apply=nowhere")),
      "<input>:4:36: undefined computation 'nowhere'");
  EXPECT_EQ(ErrorOf(Module1("  p = f32[] parameter(0)\n"
                            "  ROOT a = f32[] negate(p), control-predecessors={q}")),
            "<input>:4:51: undefined control predecessor 'q' in computation 'e'");
  // Operands resolve within their own computation only.
  EXPECT_EQ(ErrorOf("HloModule m\nc {\n  x = f32[] parameter(0)\n  ROOT y = f32[] negate(x)\n}\n"
                    "ENTRY e {\n  ROOT z = f32[] negate(x)\n}\n"),
            "<input>:7:25: undefined operand 'x' in computation 'e'");
}

TEST(ParserErrorsTest, DuplicateNames) {
  EXPECT_EQ(ErrorOf(Module1("  x = f32[] parameter(0)\n  x = f32[] negate(x)")),
            "<input>:4:3: duplicate instruction name 'x' (first defined at 3:3)");
  // Instruction names are unique across the module, not just the computation.
  EXPECT_EQ(ErrorOf("HloModule m\nc {\n  x = f32[] parameter(0)\n}\n"
                    "ENTRY e {\n  x = f32[] parameter(0)\n}\n"),
            "<input>:6:3: duplicate instruction name 'x' (first defined at 3:3)");
  EXPECT_EQ(ErrorOf("HloModule m\nc {\n  x = f32[] parameter(0)\n}\n"
                    "c {\n  y = f32[] parameter(0)\n}\n"),
            "<input>:5:1: duplicate computation name 'c' (first defined at 2:1)");
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY c {\n  x = f32[] parameter(0)\n}\n"
                    "ENTRY d {\n  y = f32[] parameter(0)\n}\n"),
            "<input>:5:7: second ENTRY computation 'd'");
  EXPECT_EQ(ErrorOf(Module1("  ROOT x = f32[] parameter(0)\n  ROOT y = f32[] negate(x)")),
            "<input>:4:3: second ROOT in computation 'e'");
}

TEST(ParserErrorsTest, AbsurdShapes) {
  // A shape is not an allocation: only a caller's explicit limit bounds it (tests/passes/
  // huge_shapes_test.cc has the Llama-2-class graph this must accept).
  EXPECT_TRUE(ParseHloText(Module1("  ROOT p = f32[99999999999] parameter(0)")).ok());
  ParseOptions small;
  small.max_array_bytes = 1000;
  EXPECT_EQ(ErrorOf(Module1("  ROOT p = (f32[200], f32[200]) parameter(0)"), small),
            "<input>:3:12: shape (f32[200], f32[200]) needs 1600 bytes, over the limit of 1000");
  EXPECT_EQ(ErrorOf(Module1("  ROOT p = f32[4294967296,4294967296] parameter(0)")),
            "<input>:3:12: shape f32[4294967296,4294967296] is too large: its byte size "
            "overflows int64");
  EXPECT_EQ(ErrorOf(Module1("  ROOT p = f32[99999999999999999999] parameter(0)")),
            "<input>:3:16: integer out of range: '99999999999999999999'");
  EXPECT_EQ(ErrorOf(Module1("  ROOT p = f32[-1] parameter(0)")),
            "<input>:3:16: negative dimension size -1");
  EXPECT_EQ(ErrorOf(Module1("  ROOT p = f33[1] parameter(0)")),
            "<input>:3:12: expected shape, got 'f33'");
  EXPECT_EQ(ErrorOf(Module1("  ROOT p = f32[2,3]{0,0} parameter(0)")),
            "<input>:3:20: layout {0,0} is not a permutation of the dimensions of f32[2,3]");
  EXPECT_EQ(ErrorOf(Module1("  ROOT p = f32[2,3]{1} parameter(0)")),
            "<input>:3:20: layout {1} is not a permutation of the dimensions of f32[2,3]");
  // Parameter numbers are checked before anything is sized by them.
  EXPECT_EQ(ErrorOf(Module1("  ROOT p = f32[] parameter(1000000000000)")),
            "<input>:3:8: parameter number 1000000000000 out of range: 'e' has 1 parameters");
  EXPECT_EQ(ErrorOf(Module1("  p = f32[] parameter(0)\n  ROOT q = f32[] parameter(0)")),
            "<input>:4:8: duplicate parameter number 0");

  EXPECT_EQ(ParseShape("f32[2]{0} junk").status().message(),
            "<input>:1:11: expected end of input, got 'junk'");
  EXPECT_EQ(ParseShape("token[3]").status().message(),
            "<input>:1:1: token shapes have no dimensions");
}

TEST(ParserErrorsTest, LiteralMismatches) {
  EXPECT_EQ(ErrorOf(Module1("  ROOT c = f32[3]{0} constant({1, 2})")),
            "<input>:3:31: literal has 2 elements in dimension 0, but shape f32[3] needs 3");
  EXPECT_EQ(ErrorOf(Module1("  ROOT c = f32[2]{0} constant({1, 2, 3})")),
            "<input>:3:38: literal has more than 2 elements in dimension 0 of shape f32[2]");
  EXPECT_EQ(ErrorOf(Module1("  ROOT c = f32[2,2]{1,0} constant({1, 2})")),
            "<input>:3:36: expected '{', got '1'");
  EXPECT_EQ(ErrorOf(Module1("  ROOT c = f32[2]{0} constant({ {1, 2} })")),
            "<input>:3:33: expected number, got '{'");
  EXPECT_EQ(ErrorOf(Module1("  ROOT c = s8[] constant(128)")),
            "<input>:3:26: value 128 out of range for s8");
  EXPECT_EQ(ErrorOf(Module1("  ROOT c = u8[] constant(-1)")),
            "<input>:3:26: expected non-negative integer, got '-1'");
  EXPECT_EQ(ErrorOf(Module1("  ROOT c = s64[] constant(9223372036854775808)")),
            "<input>:3:27: integer out of range: '9223372036854775808'");
  EXPECT_EQ(ErrorOf(Module1("  ROOT c = f32[] constant(1e39)")),
            "<input>:3:27: value 1e39 out of range for f32");
  EXPECT_EQ(ErrorOf(Module1("  ROOT c = pred[] constant(maybe)")),
            "<input>:3:28: expected true or false, got 'maybe'");
  EXPECT_EQ(ErrorOf(Module1("  ROOT c = (f32[], s32[]) constant((1))")),
            "<input>:3:38: expected ',', got ')'");
  // A huge declared shape with a tiny literal is refused without allocating the shape.
  EXPECT_EQ(ErrorOf(Module1("  ROOT c = f32[1000000000]{0} constant({1})")),
            "<input>:3:40: literal has 1 elements in dimension 0, but shape f32[1000000000] "
            "needs 1000000000");
}

TEST(ParserErrorsTest, GraphErrors) {
  EXPECT_EQ(ErrorOf(Module1("  a = f32[] negate(b)\n  ROOT b = f32[] negate(a)")),
            "<input>:3:3: cycle through instruction 'a'");
  EXPECT_EQ(ErrorOf("HloModule m\nc {\n  x = f32[] parameter(0)\n  ROOT y = f32[] call(x), "
                    "to_apply=c\n}\n"),
            "<input>:2:1: computation 'c' calls itself");
  EXPECT_EQ(ErrorOf(Module1("  p = f32[] parameter(0)\n  ROOT w = f32[] while(p), condition=e")),
            "<input>:4:8: while 'w' needs condition= and body=");
  EXPECT_EQ(ErrorOf("HloModule m\nENTRY e {\n}\n"),
            "<input>:2:7: computation 'e' has no instructions");
  EXPECT_EQ(ErrorOf("HloModule m\n"), "<input>:2:1: expected computation, got end of input");
}

TEST(ParserErrorsTest, DeepNestingIsAnErrorNotAStackOverflow) {
  const std::string parens(100000, '(');
  EXPECT_EQ(ErrorOf(Module1(absl::StrCat("  ROOT p = ", parens, " parameter(0)"))),
            "<input>:3:269: nesting deeper than 256");
  const std::string braces(100000, '{');
  EXPECT_EQ(ErrorOf(Module1(absl::StrCat("  ROOT p = f32[] parameter(0), foo=", braces))),
            "<input>:3:292: nesting deeper than 256");
  // A literal of very high rank nests one brace per dimension.
  std::string dims = "1";
  for (int i = 0; i < 2000; ++i) dims += ",1";
  EXPECT_EQ(ErrorOf(Module1(absl::StrCat("  ROOT c = f32[", dims, "] constant(", braces, ")"))),
            "<input>:3:4284: nesting deeper than 256");
  EXPECT_EQ(ErrorOf(Module1(absl::StrCat("  ROOT p = f32[2]{0:D", parens, "} parameter(0)"))),
            "<input>:3:278: nesting deeper than 256");
  EXPECT_EQ(ErrorOf(Module1(absl::StrCat("  p = f32[] parameter(0)\n  ROOT n = f32[] negate(",
                                         parens, "f32[] p)"))),
            "<input>:4:282: nesting deeper than 256");
}

TEST(ParserErrorsTest, LexicalErrors) {
  EXPECT_EQ(ErrorOf(Module1("  p = f32[] parameter(0) /* never closed")),
            "<input>:3:26: expected instruction name, got unterminated comment");
  EXPECT_EQ(ErrorOf(Module1("  p = f32[] parameter(0), backend_config=\"abc")),
            "<input>:3:42: unterminated string");
  EXPECT_EQ(ErrorOf(Module1("  p = f32[] custom-call(), custom_call_target=\"\\q\"")),
            "<input>:3:47: invalid string escape: Unknown escape sequence: \\q");
  EXPECT_EQ(ErrorOf(std::string("HloModule m\nENTRY e {\n  \x01 = f32[] parameter(0)\n}\n")),
            "<input>:3:3: expected instruction name, got byte 0x01");
}

// Samples covering most constructs; every prefix must fail cleanly or parse.
const char* const kSamples[] = {
    R"(HloModule s, is_scheduled=true, input_output_alias={ {0}: (0, {}, may-alias) }, entry_computation_layout={(f32[4]{0})->f32[4]{0}}

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b), metadata={op_name="x\"y" source_line=3}
}

ENTRY %main (p: f32[4]) -> f32[4] {
  %p = f32[4]{0:T(4)S(1)} parameter(0), sharding={devices=[2]0,1}
  %c = f32[4]{0} constant({1, -2.5e-3, nan, -inf}), frontend_attributes={k="v"}
  %t = (f32[4]{0}, /*index=1*/c64[]) tuple(%p, %z)
  %z = c64[] constant((1, 2))
  %w = f32[2,2]{1,0} convolution(f32[4]{0} %p, %c), window={size=2 pad=0_1 stride=1}, dim_labels=bf_io->bf, backend_config="\001\002"
  ROOT %r = f32[4]{0} reduce-window(%p, %c), window={size=2x1}, to_apply=%add, control-predecessors={%t}
}
)",
    R"(HloModule g
ENTRY e {
  t = f32[100,5]{1,0} parameter(0)
  i = s32[7,1]{1,0} parameter(1)
  g = f32[7,5]{1,0} gather(t, i), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,5}
  s = f32[50,2]{1,0} slice(t), slice={[0:100:2], [1:3]}
  k = pred[2,2]{1,0} constant({ {true, false}, {false, true} })
  ROOT d = f32[7,7]{1,0} dot(g, g), lhs_contracting_dims={1}, rhs_contracting_dims={1}, replica_groups={{0,1},{2,3}}
}
)",
};

TEST(ParserErrorsTest, TruncatedInputsFailCleanly) {
  std::vector<std::string> samples(std::begin(kSamples), std::end(kSamples));
  // The bundled example is always there, so the test keeps its strength without the corpus.
  samples.push_back(
      mltune::testing::ReadFile(mltune::testing::SourcePath("examples/mlp_train_step.hlo")));
  for (const std::string& path : mltune::testing::CorpusFiles()) {
    const std::string text = mltune::testing::ReadFile(path);
    if (text.size() < 20000) samples.push_back(text);
  }
  const std::regex location(R"(^<input>:\d+:\d+: .+)");
  int64_t cuts = 0;
  for (const std::string& text : samples) {
    ASSERT_TRUE(ParseHloText(text).ok()) << text.substr(0, 200);
    // Every offset for short samples, about 300 evenly spread ones for longer.
    const size_t step = std::max<size_t>(1, text.size() / 300);
    for (size_t cut = 0; cut < text.size(); cut += step) {
      const std::string prefix = text.substr(0, cut);
      absl::StatusOr<std::unique_ptr<Module>> m = ParseHloText(prefix);
      ++cuts;
      const size_t last = prefix.find_last_not_of(" \t\r\n");
      // A prefix that does not end in '}' leaves a computation open: always an error.
      if (last == std::string::npos || prefix[last] != '}') {
        ASSERT_FALSE(m.ok()) << "cut at " << cut << ":\n" << prefix;
      }
      if (!m.ok()) {
        EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
        EXPECT_TRUE(std::regex_match(std::string(m.status().message()), location)) << m.status();
      }
    }
  }
  EXPECT_GT(cuts, 1000);
}

TEST(ParserErrorsTest, CorruptedBytesFailCleanly) {
  // Overwrite single bytes of a sample with characters that matter to the grammar.
  const std::string text = kSamples[0];
  const char replacements[] = {'{', '}', '(', ')',  '[', ']', ',', '=', '"', '%',
                               '-', '9', ' ', '\0', ':', '/', '*', 'x', '_', '<'};
  int64_t failures = 0;
  for (size_t i = 0; i < text.size(); i += 3) {
    for (char r : replacements) {
      std::string corrupted = text;
      corrupted[i] = r;
      absl::StatusOr<std::unique_ptr<Module>> m = ParseHloText(corrupted);
      if (m.ok()) {
        // Whatever still parses must print and reparse to the same text.
        const std::string printed = PrintModule(**m);
        absl::StatusOr<std::unique_ptr<Module>> again = ParseHloText(printed);
        ASSERT_TRUE(again.ok()) << again.status() << "\n" << printed;
        EXPECT_EQ(PrintModule(**again), printed);
      } else {
        ++failures;
        EXPECT_EQ(m.status().code(), absl::StatusCode::kInvalidArgument);
      }
    }
  }
  EXPECT_GT(failures, 0);
}

TEST(ParserErrorsTest, TupleElementShorthand) {
  EXPECT_EQ(ErrorOf(Module1("  p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(p#0)")),
            "<input>:4:26: 'p#0': f32[2] has no tuple element 0");
  EXPECT_EQ(ErrorOf(Module1("  p = (f32[2]) parameter(0)\n  ROOT n = f32[2] negate(p#1)")),
            "<input>:4:26: 'p#1': (f32[2]) has no tuple element 1");
  EXPECT_EQ(ErrorOf(Module1("  p = (f32[2]) parameter(0)\n  ROOT n = f32[2] negate(p#)")),
            "<input>:4:28: expected tuple index after '#', got ')'");
}

}  // namespace
}  // namespace mltune::ir
