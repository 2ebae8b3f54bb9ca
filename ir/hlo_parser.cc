#include "ir/hlo_parser.h"

#include <zlib.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/hlo_lexer.h"

namespace mltune::ir {
namespace {

#define MLTUNE_PARSER_CONCAT_INNER(a, b) a##b
#define MLTUNE_PARSER_CONCAT(a, b) MLTUNE_PARSER_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)          \
  do {                                 \
    absl::Status status_ = (expr);     \
    if (!status_.ok()) return status_; \
  } while (false)

#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.status();         \
  lhs = *std::move(tmp)

#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(MLTUNE_PARSER_CONCAT(statusor_, __LINE__), lhs, expr)

// A reference by name to an instruction or computation, resolved once everything is read. Names
// are views into the text, which outlives the parse.
struct NameRef {
  std::string_view name;
  size_t pos = 0;
  // Newer XLA prints `%t#2` for element 2 of a tuple-shaped operand: a get-tuple-element the
  // parser makes (one per operand and index) and names once the whole module is read.
  int64_t tuple_index = -1;
};

struct PendingInstruction {
  std::unique_ptr<Instruction> instr;
  size_t pos = 0;
  size_t root_pos = 0;  // of the ROOT keyword
  bool is_root = false;
  std::vector<NameRef> operands;
  std::vector<NameRef> control_predecessors;
  std::vector<NameRef> calls;
};

// Called-computation attributes as written, before they are put in role order.
struct CallSlots {
  std::optional<NameRef> to_apply, calls, condition, body, select, scatter, true_computation,
      false_computation;
  std::optional<std::vector<NameRef>> branch_computations, called_computations;
};

// Literal elements as read, before the buffer exists: one word per element (two for complex),
// holding integer bits (two's complement) or a double's bits. Kept compact because a literal's
// text can be large.
struct LiteralValues {
  std::vector<uint64_t> words;
  // Exact bits of elements written with a NaN payload, by element index.
  std::vector<std::pair<size_t, uint64_t>> raw_floats;
};

uint64_t DoubleBits(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof(bits));
  return bits;
}

double BitsDouble(uint64_t bits) {
  double d;
  std::memcpy(&d, &bits, sizeof(d));
  return d;
}

bool OpIn(Opcode op, std::initializer_list<Opcode> ops) {
  for (Opcode o : ops) {
    if (o == op) return true;
  }
  return false;
}

bool TakesDimensions(Opcode op) {
  return OpIn(op, {Opcode::kBroadcast, Opcode::kTranspose, Opcode::kReduce, Opcode::kReverse,
                   Opcode::kConcatenate, Opcode::kMap, Opcode::kSort, Opcode::kAllGather,
                   Opcode::kAllGatherStart, Opcode::kReduceScatter, Opcode::kAllToAll,
                   Opcode::kGetDimensionSize, Opcode::kSetDimensionSize});
}

bool IsAsync(Opcode op) {
  return OpIn(op, {Opcode::kAsyncStart, Opcode::kAsyncUpdate, Opcode::kAsyncDone});
}

// Opcodes whose called computations are spelled with dedicated attribute names.
bool HasNamedCallRoles(Opcode op) {
  return OpIn(op,
              {Opcode::kWhile, Opcode::kSelectAndScatter, Opcode::kConditional, Opcode::kFusion}) ||
         IsAsync(op);
}

bool IsBatchNorm(Opcode op) {
  return OpIn(op,
              {Opcode::kBatchNormGrad, Opcode::kBatchNormInference, Opcode::kBatchNormTraining});
}

class Parser {
 public:
  Parser(std::string_view text, const ParseOptions& options)
      : lex_(text, options.filename, options.max_nesting), options_(options) {}

  absl::StatusOr<std::unique_ptr<Module>> ParseModule();
  absl::StatusOr<Shape> ParseStandaloneShape();

 private:
  // --- Shapes ---
  absl::StatusOr<Shape> ParseShape(int depth);
  // Checks the syntax of a shape that is only informational (operand shapes) without building it.
  absl::Status SkipShape(int depth);
  absl::Status ParseLayout(Shape& shape);
  absl::Status CheckShapeSize(const Shape& shape, size_t pos);
  bool AtArrayShape();
  bool AtLayout();

  // --- Module structure ---
  absl::Status ParseModuleHeader();
  absl::Status ParseInputOutputAlias();
  absl::Status ParseComputation();
  absl::Status ParseSignature();
  absl::Status ParseInstruction(std::vector<PendingInstruction>& list,
                                std::unordered_map<std::string_view, size_t>& local_names);
  absl::Status ParseOperands(PendingInstruction& p);
  absl::Status ParseConstant(Instruction& instr);
  absl::Status ParseAttribute(PendingInstruction& p, CallSlots& slots,
                              std::unordered_set<std::string>& seen);
  absl::Status AssignCalls(PendingInstruction& p, CallSlots& slots);
  absl::Status FinishComputation(std::string_view name, size_t name_pos, bool is_entry,
                                 std::vector<PendingInstruction> list,
                                 const std::unordered_map<std::string_view, size_t>& local_names);
  absl::Status CheckAcyclic(Computation* c, const std::vector<size_t>& positions);
  absl::Status FinishModule();

  // --- Attribute values ---
  absl::Status ParseIntList(std::vector<int64_t>& out);
  absl::Status ParseNameList(std::vector<NameRef>& out);
  absl::StatusOr<NameRef> ParseNameRef(std::string_view what);
  absl::Status ParseXSeparated(std::vector<int64_t>& out);
  absl::Status ParseWindow(Window& window);
  absl::Status ParseSlice(std::vector<SliceDim>& out);
  absl::Status ParsePadding(std::vector<PaddingDim>& out);
  absl::StatusOr<ConvolutionDimensionNumbers> ParseDimLabels();
  // A float (`1.5`, `-2e-05`, `nan`, `-inf`, `nan(0x7)`). For a NaN with a payload, `raw_bits`
  // (when given) receives the element's exact bits in `type`.
  absl::StatusOr<double> ParseFloatToken(PrimitiveType type,
                                         std::optional<uint64_t>* raw_bits = nullptr);
  template <typename E>
  absl::StatusOr<E> ParseEnum(std::optional<E> (*parse)(std::string_view), std::string_view what);

  // --- Literals ---
  absl::StatusOr<Literal> ParseLiteral(const Shape& shape, int depth);
  absl::Status ParseArrayLevel(const Shape& shape, int64_t dim, int depth, LiteralValues& values);
  absl::Status ParseElement(PrimitiveType type, LiteralValues& values);

  HloLexer lex_;
  const ParseOptions& options_;
  std::unique_ptr<Module> module_;
  std::unordered_map<std::string_view, size_t> instruction_names_;
  std::unordered_map<std::string_view, std::pair<Computation*, size_t>> computation_names_;
  std::vector<std::pair<Instruction*, std::vector<NameRef>>> pending_calls_;
  // get-tuple-elements made for `%t#i` operands, named once every written name is known.
  std::vector<Instruction*> implicit_elements_;
  Computation* entry_ = nullptr;
};

// ---------------------------------------------------------------------------------------------
// Shapes

bool Parser::AtArrayShape() {
  std::string_view word = lex_.PeekWord();
  return !word.empty() && lex_.RawPeek(word.size()) == '[' && ParsePrimitiveType(word).has_value();
}

bool Parser::AtLayout() {
  // A layout is attached to its shape: `f32[2]{0}`. Requiring the next significant character to
  // be a digit, ':' or '}' keeps `-> f32[] {` (a computation body) from reading as a layout.
  if (lex_.RawPeek(0) != '{') return false;
  const size_t saved = lex_.pos();
  lex_.Advance();
  const char next = lex_.Peek();
  lex_.set_pos(saved);
  return IsAsciiDigit(next) || next == ':' || next == '}';
}

absl::StatusOr<Shape> Parser::ParseShape(int depth) {
  lex_.SkipSpace();
  const size_t start = lex_.pos();
  if (depth > options_.max_nesting) {
    return lex_.ErrorAt(start, absl::StrCat("nesting deeper than ", options_.max_nesting));
  }
  if (lex_.TryConsume('(')) {
    std::vector<Shape> elements;
    if (!lex_.TryConsume(')')) {
      while (true) {
        ASSIGN_OR_RETURN(Shape element, ParseShape(depth + 1));
        elements.push_back(std::move(element));
        if (lex_.TryConsume(',')) continue;
        RETURN_IF_ERROR(lex_.Expect(')'));
        break;
      }
    }
    Shape tuple = Shape::Tuple(std::move(elements));
    RETURN_IF_ERROR(CheckShapeSize(tuple, start));
    return tuple;
  }
  if (!AtArrayShape()) return lex_.Expected("shape");
  std::string_view word = lex_.PeekWord();
  const PrimitiveType type = *ParsePrimitiveType(word);
  lex_.Advance(word.size() + 1);  // type and '['
  std::vector<int64_t> dims;
  std::vector<bool> dynamic;
  if (!lex_.TryConsume(']')) {
    while (true) {
      if (lex_.TryConsume('?')) {
        dims.push_back(kUnboundedDim);
        dynamic.push_back(true);
      } else {
        bool is_dynamic = false;
        if (lex_.Peek() == '<' && lex_.RawPeek(1) == '=') {
          lex_.Advance(2);
          is_dynamic = true;
        }
        lex_.SkipSpace();
        const size_t dim_pos = lex_.pos();
        ASSIGN_OR_RETURN(int64_t d, lex_.ExpectInt64("dimension size"));
        if (d < 0) return lex_.ErrorAt(dim_pos, absl::StrCat("negative dimension size ", d));
        dims.push_back(d);
        dynamic.push_back(is_dynamic);
      }
      if (lex_.TryConsume(',')) continue;
      RETURN_IF_ERROR(lex_.Expect(']'));
      break;
    }
  }
  Shape shape;
  if (type == PrimitiveType::kToken) {
    if (!dims.empty()) return lex_.ErrorAt(start, "token shapes have no dimensions");
    shape = Shape::Token();
  } else if (type == PrimitiveType::kOpaque) {
    if (!dims.empty()) return lex_.ErrorAt(start, "opaque shapes have no dimensions");
    shape = Shape(type, {});
  } else {
    shape = Shape(type, std::move(dims));
    for (size_t i = 0; i < dynamic.size(); ++i) {
      if (dynamic[i]) shape.set_dynamic_dimension(static_cast<int64_t>(i), true);
    }
  }
  if (AtLayout()) RETURN_IF_ERROR(ParseLayout(shape));
  RETURN_IF_ERROR(CheckShapeSize(shape, start));
  return shape;
}

absl::Status Parser::SkipShape(int depth) {
  lex_.SkipSpace();
  if (depth > options_.max_nesting) {
    return lex_.ErrorAt(lex_.pos(), absl::StrCat("nesting deeper than ", options_.max_nesting));
  }
  if (lex_.TryConsume('(')) {
    if (lex_.TryConsume(')')) return absl::OkStatus();
    while (true) {
      RETURN_IF_ERROR(SkipShape(depth + 1));
      if (lex_.TryConsume(',')) continue;
      return lex_.Expect(')');
    }
  }
  if (!AtArrayShape()) return lex_.Expected("shape");
  lex_.Advance(lex_.PeekWord().size() + 1);  // type and '['
  if (!lex_.TryConsume(']')) {
    while (true) {
      if (!lex_.TryConsume('?')) {
        if (lex_.Peek() == '<' && lex_.RawPeek(1) == '=') lex_.Advance(2);
        RETURN_IF_ERROR(lex_.ExpectInt64("dimension size").status());
      }
      if (lex_.TryConsume(',')) continue;
      RETURN_IF_ERROR(lex_.Expect(']'));
      break;
    }
  }
  if (!AtLayout()) return absl::OkStatus();
  // Layout text: balanced up to the matching '}'.
  const std::string_view text = lex_.text();
  size_t p = lex_.pos() + 1;
  int parens = 0;
  while (p < text.size() && text[p] != '}' && text[p] != '{') {
    if (text[p] == '(' && ++parens > options_.max_nesting) {
      return lex_.ErrorAt(p, absl::StrCat("nesting deeper than ", options_.max_nesting));
    }
    if (text[p] == ')') --parens;
    ++p;
  }
  lex_.set_pos(p);
  if (parens != 0) return lex_.Expected("')'");
  return lex_.Expect('}');
}

absl::Status Parser::ParseLayout(Shape& shape) {
  const size_t start = lex_.pos();
  RETURN_IF_ERROR(lex_.Expect('{'));
  Layout layout;
  if (lex_.Peek() != ':' && lex_.Peek() != '}') {
    while (true) {
      ASSIGN_OR_RETURN(int64_t d, lex_.ExpectInt64("layout dimension"));
      layout.minor_to_major.push_back(d);
      if (!lex_.TryConsume(',')) break;
    }
  }
  if (lex_.TryConsume(':')) {
    while (lex_.Peek() != '}') {
      const char c = lex_.Peek();
      if (c == '\0') return lex_.Expected("'}'");
      const size_t item_pos = lex_.pos();
      if ((c == 'T' || c == 'E' || c == 'S') && lex_.RawPeek(1) == '(') {
        lex_.Advance();
        if (c == 'T') {
          if (!layout.tiles.empty()) return lex_.ErrorAt(item_pos, "duplicate layout item T");
          while (lex_.RawPeek(0) == '(') {
            lex_.Advance();
            Tile tile;
            if (!lex_.TryConsume(')')) {
              while (true) {
                if (lex_.TryConsume('*')) {
                  tile.dims.push_back(Tile::kCombineDim);
                } else {
                  lex_.SkipSpace();
                  const size_t dim_pos = lex_.pos();
                  ASSIGN_OR_RETURN(int64_t d, lex_.ExpectInt64("tile dimension"));
                  if (d < 0) return lex_.ErrorAt(dim_pos, "negative tile dimension");
                  tile.dims.push_back(d);
                }
                if (lex_.TryConsume(',')) continue;
                RETURN_IF_ERROR(lex_.Expect(')'));
                break;
              }
            }
            layout.tiles.push_back(std::move(tile));
          }
        } else {
          lex_.Advance();  // '('
          ASSIGN_OR_RETURN(int64_t v, lex_.ExpectInt64(c == 'E' ? "element size" : "memory space"));
          RETURN_IF_ERROR(lex_.Expect(')'));
          if (v < 0) return lex_.ErrorAt(item_pos, "negative layout value");
          int64_t& field = c == 'E' ? layout.element_size_in_bits : layout.memory_space;
          if (field != 0) {
            return lex_.ErrorAt(item_pos,
                                absl::StrCat("duplicate layout item ", std::string(1, c)));
          }
          field = v;
        }
        continue;
      }
      // Any other item (D(...), L(...), #(...), *(...), M(...)): kept as text.
      size_t p = item_pos;
      const std::string_view text = lex_.text();
      while (p < text.size() && text[p] != '(' && text[p] != '}' && text[p] != ',' &&
             text[p] != '{' && !IsAsciiSpace(text[p])) {
        ++p;
      }
      int depth = 0;
      while (p < text.size() && text[p] == '(') {
        do {
          if (text[p] == '(') {
            if (++depth > options_.max_nesting) {
              return lex_.ErrorAt(p, absl::StrCat("nesting deeper than ", options_.max_nesting));
            }
          } else if (text[p] == ')') {
            --depth;
          } else if (text[p] == '{' || text[p] == '}') {
            lex_.set_pos(p);
            return lex_.Expected("')'");
          }
          ++p;
        } while (p < text.size() && depth > 0);
        if (depth > 0) {
          lex_.set_pos(p);
          return lex_.Expected("')'");
        }
      }
      if (p == item_pos) return lex_.Expected("layout item");
      layout.extra.append(text.substr(item_pos, p - item_pos));
      lex_.set_pos(p);
    }
  }
  RETURN_IF_ERROR(lex_.Expect('}'));
  if (!shape.IsArray()) return lex_.ErrorAt(start, "only array shapes have layouts");
  const int64_t rank = shape.rank();
  const bool matches = static_cast<int64_t>(layout.minor_to_major.size()) == rank;
  std::vector<bool> used(matches ? static_cast<size_t>(rank) : 0, false);
  bool permutation = matches;
  for (int64_t d : layout.minor_to_major) {
    if (!matches) break;
    if (d < 0 || d >= rank || used[static_cast<size_t>(d)]) {
      permutation = false;
      break;
    }
    used[static_cast<size_t>(d)] = true;
  }
  if (!permutation) {
    return lex_.ErrorAt(
        start, absl::StrCat("layout ", LayoutToString(layout),
                            " is not a permutation of the dimensions of ", shape.ToString(false)));
  }
  shape.set_layout(std::move(layout));
  return absl::OkStatus();
}

absl::Status Parser::CheckShapeSize(const Shape& shape, size_t pos) {
  const int64_t bytes = shape.ByteSize();
  if (bytes == std::numeric_limits<int64_t>::max()) {
    return lex_.ErrorAt(pos, absl::StrCat("shape ", shape.ToString(false),
                                          " is too large: its byte size overflows int64"));
  }
  if (bytes > options_.max_array_bytes) {
    return lex_.ErrorAt(pos, absl::StrCat("shape ", shape.ToString(false), " needs ", bytes,
                                          " bytes, over the limit of ", options_.max_array_bytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<Shape> Parser::ParseStandaloneShape() {
  ASSIGN_OR_RETURN(Shape shape, ParseShape(0));
  if (!lex_.AtEof()) return lex_.Expected("end of input");
  return shape;
}

// ---------------------------------------------------------------------------------------------
// Module and computations

absl::StatusOr<std::unique_ptr<Module>> Parser::ParseModule() {
  RETURN_IF_ERROR(ParseModuleHeader());
  if (lex_.AtEof()) return lex_.Expected("computation");
  while (!lex_.AtEof()) RETURN_IF_ERROR(ParseComputation());
  RETURN_IF_ERROR(FinishModule());
  for (Instruction* gte : implicit_elements_) {
    gte->set_name(module_->UniqueInstructionName(
        absl::StrCat(gte->operand(0)->name(), ".element", gte->tuple_index)));
  }
  return std::move(module_);
}

absl::Status Parser::ParseModuleHeader() {
  if (!lex_.TryConsumeWord("HloModule")) return lex_.Expected("'HloModule'");
  lex_.SkipSpace();
  if (lex_.RawPeek(0) == '%') lex_.Advance();
  ASSIGN_OR_RETURN(std::string name, lex_.ExpectWord("module name"));
  module_ = std::make_unique<Module>(std::move(name));
  std::unordered_set<std::string> seen;
  while (lex_.TryConsume(',')) {
    lex_.SkipSpace();
    const size_t attr_pos = lex_.pos();
    ASSIGN_OR_RETURN(std::string attr, lex_.ExpectWord("module attribute name"));
    if (!seen.insert(attr).second) {
      return lex_.ErrorAt(attr_pos, absl::StrCat("duplicate attribute '", attr, "'"));
    }
    RETURN_IF_ERROR(lex_.Expect('='));
    if (attr == "is_scheduled") {
      ASSIGN_OR_RETURN(module_->is_scheduled, lex_.ExpectBool("true or false"));
    } else if (attr == "entry_computation_layout") {
      ASSIGN_OR_RETURN(module_->entry_computation_layout, lex_.ExpectRawValue("layout"));
    } else if (attr == "input_output_alias") {
      RETURN_IF_ERROR(ParseInputOutputAlias());
    } else {
      ASSIGN_OR_RETURN(std::string value, lex_.ExpectRawValue("attribute value"));
      module_->extra_attributes.push_back({std::move(attr), std::move(value)});
    }
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseInputOutputAlias() {
  RETURN_IF_ERROR(lex_.Expect('{'));
  if (lex_.TryConsume('}')) return absl::OkStatus();
  while (true) {
    IoAlias alias;
    RETURN_IF_ERROR(ParseIntList(alias.output_index));
    RETURN_IF_ERROR(lex_.Expect(':'));
    RETURN_IF_ERROR(lex_.Expect('('));
    lex_.SkipSpace();
    const size_t number_pos = lex_.pos();
    ASSIGN_OR_RETURN(alias.parameter_number, lex_.ExpectInt64("parameter number"));
    if (alias.parameter_number < 0) {
      return lex_.ErrorAt(number_pos, "negative parameter number");
    }
    RETURN_IF_ERROR(lex_.Expect(','));
    RETURN_IF_ERROR(ParseIntList(alias.parameter_index));
    if (lex_.TryConsume(',')) {
      lex_.SkipSpace();
      if (lex_.PeekWord() != "must-alias" && lex_.PeekWord() != "may-alias") {
        return lex_.Expected("must-alias or may-alias");
      }
      ASSIGN_OR_RETURN(alias.kind, lex_.ExpectWord("alias kind"));
    }
    RETURN_IF_ERROR(lex_.Expect(')'));
    module_->input_output_alias.push_back(std::move(alias));
    if (lex_.TryConsume(',')) continue;
    return lex_.Expect('}');
  }
}

absl::Status Parser::ParseComputation() {
  lex_.SkipSpace();
  bool is_entry = false;
  if (lex_.PeekWord() == "ENTRY") {
    const size_t saved = lex_.pos();
    lex_.Advance(5);
    const char next = lex_.Peek();
    // `ENTRY {` or `ENTRY (` means a computation named ENTRY.
    if (next == '{' || next == '(') {
      lex_.set_pos(saved);
    } else {
      is_entry = true;
    }
  }
  lex_.SkipSpace();
  const size_t name_pos = lex_.pos();
  ASSIGN_OR_RETURN(std::string_view name, lex_.ExpectNameView("computation name"));
  if (lex_.Peek() == '(') RETURN_IF_ERROR(ParseSignature());
  RETURN_IF_ERROR(lex_.Expect('{'));
  std::vector<PendingInstruction> list;
  std::unordered_map<std::string_view, size_t> local_names;
  while (!lex_.TryConsume('}')) RETURN_IF_ERROR(ParseInstruction(list, local_names));
  return FinishComputation(name, name_pos, is_entry, std::move(list), local_names);
}

absl::Status Parser::ParseSignature() {
  RETURN_IF_ERROR(lex_.Expect('('));
  if (!lex_.TryConsume(')')) {
    while (true) {
      RETURN_IF_ERROR(lex_.ExpectName("parameter name").status());
      RETURN_IF_ERROR(lex_.Expect(':'));
      RETURN_IF_ERROR(ParseShape(0).status());
      if (lex_.TryConsume(',')) continue;
      RETURN_IF_ERROR(lex_.Expect(')'));
      break;
    }
  }
  if (lex_.Peek() != '-' || lex_.RawPeek(1) != '>') return lex_.Expected("'->'");
  lex_.Advance(2);
  return ParseShape(0).status();
}

absl::Status Parser::ParseInstruction(std::vector<PendingInstruction>& list,
                                      std::unordered_map<std::string_view, size_t>& local_names) {
  PendingInstruction p;
  if (lex_.PeekWord() == "ROOT") {
    const size_t saved = lex_.pos();
    p.root_pos = saved;
    lex_.Advance(4);
    if (lex_.Peek() == '=') {
      lex_.set_pos(saved);  // an instruction named ROOT
    } else {
      p.is_root = true;
    }
  }
  lex_.SkipSpace();
  p.pos = lex_.pos();
  ASSIGN_OR_RETURN(std::string_view name, lex_.ExpectNameView("instruction name"));
  RETURN_IF_ERROR(lex_.Expect('='));
  ASSIGN_OR_RETURN(Shape shape, ParseShape(0));
  lex_.SkipSpace();
  const size_t opcode_pos = lex_.pos();
  std::string_view opcode_text = lex_.PeekWord();
  if (opcode_text.empty()) return lex_.Expected("opcode");
  std::optional<Opcode> opcode = ParseOpcode(opcode_text);
  if (!opcode.has_value()) {
    return lex_.ErrorAt(opcode_pos,
                        absl::StrCat("unknown opcode '", std::string(opcode_text), "'"));
  }
  lex_.Advance(opcode_text.size());

  auto [it, inserted] = instruction_names_.emplace(name, p.pos);
  if (!inserted) {
    return lex_.ErrorAt(p.pos,
                        absl::StrCat("duplicate instruction name '", std::string(name),
                                     "' (first defined at ", lex_.Location(it->second), ")"));
  }
  local_names.emplace(name, list.size());
  p.instr = std::make_unique<Instruction>(*opcode, std::move(shape), std::string(name));
  p.instr->set_source_line(lex_.LineOf(p.pos));

  RETURN_IF_ERROR(lex_.Expect('('));
  if (*opcode == Opcode::kParameter) {
    lex_.SkipSpace();
    const size_t number_pos = lex_.pos();
    ASSIGN_OR_RETURN(int64_t number, lex_.ExpectInt64("parameter number"));
    if (number < 0) return lex_.ErrorAt(number_pos, "negative parameter number");
    p.instr->parameter_number = number;
    RETURN_IF_ERROR(lex_.Expect(')'));
  } else if (*opcode == Opcode::kConstant) {
    RETURN_IF_ERROR(ParseConstant(*p.instr));
    RETURN_IF_ERROR(lex_.Expect(')'));
  } else {
    RETURN_IF_ERROR(ParseOperands(p));
  }

  CallSlots slots;
  std::unordered_set<std::string> seen;
  while (lex_.TryConsume(',')) RETURN_IF_ERROR(ParseAttribute(p, slots, seen));
  RETURN_IF_ERROR(AssignCalls(p, slots));

  Instruction& instr = *p.instr;
  switch (instr.opcode()) {
    case Opcode::kDot:
      if (!instr.dot_dnums.has_value()) instr.dot_dnums.emplace();
      break;
    case Opcode::kGather:
      if (!instr.gather_dnums.has_value()) instr.gather_dnums.emplace();
      break;
    case Opcode::kScatter:
      if (!instr.scatter_dnums.has_value()) instr.scatter_dnums.emplace();
      break;
    case Opcode::kTriangularSolve:
      if (!instr.triangular_solve.has_value()) instr.triangular_solve.emplace();
      break;
    default:
      break;
  }
  list.push_back(std::move(p));
  return absl::OkStatus();
}

absl::Status Parser::ParseOperands(PendingInstruction& p) {
  if (lex_.TryConsume(')')) return absl::OkStatus();
  while (true) {
    // Operand shapes (`f32[2]{0} %x`, `(f32[], s32[]) %t`) are informational only.
    if (lex_.Peek() == '(' || AtArrayShape()) RETURN_IF_ERROR(SkipShape(0));
    lex_.SkipSpace();
    NameRef ref;
    ref.pos = lex_.pos();
    ASSIGN_OR_RETURN(ref.name, lex_.ExpectNameView("operand name"));
    if (lex_.RawPeek(0) == '#') {
      lex_.Advance(1);
      const size_t index_pos = lex_.pos();
      ASSIGN_OR_RETURN(ref.tuple_index, lex_.ExpectInt64("tuple index after '#'"));
      if (ref.tuple_index < 0) {
        return lex_.ErrorAt(index_pos, absl::StrCat("negative tuple index ", ref.tuple_index));
      }
    }
    p.operands.push_back(std::move(ref));
    if (lex_.TryConsume(',')) continue;
    return lex_.Expect(')');
  }
}

absl::Status Parser::ParseConstant(Instruction& instr) {
  // Elided `{...}`: the value was not printed.
  if (lex_.Peek() == '{') {
    const size_t saved = lex_.pos();
    lex_.Advance();
    lex_.SkipSpace();
    if (lex_.text().substr(lex_.pos(), 3) == "...") {
      lex_.Advance(3);
      if (lex_.TryConsume('}')) {
        instr.literal_elided = true;
        return absl::OkStatus();
      }
    }
    lex_.set_pos(saved);
  }
  // Older printers put the shape in front of the value: `constant(f32[2] {1, 2})`.
  if (AtArrayShape()) RETURN_IF_ERROR(ParseShape(0).status());
  ASSIGN_OR_RETURN(Literal literal, ParseLiteral(instr.shape(), 0));
  instr.literal = std::move(literal);
  return absl::OkStatus();
}

absl::StatusOr<NameRef> Parser::ParseNameRef(std::string_view what) {
  lex_.SkipSpace();
  NameRef ref;
  ref.pos = lex_.pos();
  ASSIGN_OR_RETURN(ref.name, lex_.ExpectNameView(what));
  return ref;
}

template <typename E>
absl::StatusOr<E> Parser::ParseEnum(std::optional<E> (*parse)(std::string_view),
                                    std::string_view what) {
  lex_.SkipSpace();
  std::string_view word = lex_.PeekWord();
  std::optional<E> value = word.empty() ? std::nullopt : parse(word);
  if (!value.has_value()) return lex_.Expected(what);
  lex_.Advance(word.size());
  return *value;
}

absl::Status Parser::ParseAttribute(PendingInstruction& p, CallSlots& slots,
                                    std::unordered_set<std::string>& seen) {
  lex_.SkipSpace();
  const size_t attr_pos = lex_.pos();
  ASSIGN_OR_RETURN(std::string name, lex_.ExpectWord("attribute name"));
  if (!seen.insert(name).second) {
    return lex_.ErrorAt(attr_pos, absl::StrCat("duplicate attribute '", name, "'"));
  }
  RETURN_IF_ERROR(lex_.Expect('='));
  Instruction& in = *p.instr;
  const Opcode op = in.opcode();

  auto single_call = [&](std::optional<NameRef>& slot) -> absl::Status {
    ASSIGN_OR_RETURN(NameRef ref, ParseNameRef("computation name"));
    slot = std::move(ref);
    return absl::OkStatus();
  };
  auto call_list = [&](std::optional<std::vector<NameRef>>& slot) -> absl::Status {
    slot.emplace();
    return ParseNameList(*slot);
  };
  auto dot = [&]() -> DotDimensionNumbers& {
    if (!in.dot_dnums.has_value()) in.dot_dnums.emplace();
    return *in.dot_dnums;
  };
  auto gather = [&]() -> GatherDimensionNumbers& {
    if (!in.gather_dnums.has_value()) in.gather_dnums.emplace();
    return *in.gather_dnums;
  };
  auto scatter = [&]() -> ScatterDimensionNumbers& {
    if (!in.scatter_dnums.has_value()) in.scatter_dnums.emplace();
    return *in.scatter_dnums;
  };
  auto tri = [&]() -> TriangularSolveOptions& {
    if (!in.triangular_solve.has_value()) in.triangular_solve.emplace();
    return *in.triangular_solve;
  };
  auto int_value = [&](int64_t& out, bool non_negative) -> absl::Status {
    lex_.SkipSpace();
    const size_t value_pos = lex_.pos();
    ASSIGN_OR_RETURN(out, lex_.ExpectInt64("integer"));
    if (non_negative && out < 0) {
      return lex_.ErrorAt(value_pos, absl::StrCat("expected a non-negative value for ", name));
    }
    return absl::OkStatus();
  };
  auto bool_value = [&](bool& out) -> absl::Status {
    ASSIGN_OR_RETURN(out, lex_.ExpectBool("true or false"));
    return absl::OkStatus();
  };
  auto raw_value = [&](std::string& out) -> absl::Status {
    ASSIGN_OR_RETURN(out, lex_.ExpectRawValue("attribute value"));
    return absl::OkStatus();
  };

  // Annotations every instruction may carry.
  if (name == "metadata") return raw_value(in.metadata);
  if (name == "sharding") return raw_value(in.sharding);
  if (name == "frontend_attributes") return raw_value(in.frontend_attributes);
  if (name == "backend_config") return raw_value(in.backend_config);
  if (name == "control-predecessors") return ParseNameList(p.control_predecessors);

  // Called computations, by the role names each opcode uses.
  if (op == Opcode::kWhile && name == "condition") return single_call(slots.condition);
  if (op == Opcode::kWhile && name == "body") return single_call(slots.body);
  if (op == Opcode::kSelectAndScatter && name == "select") return single_call(slots.select);
  if (op == Opcode::kSelectAndScatter && name == "scatter") return single_call(slots.scatter);
  if (op == Opcode::kConditional) {
    if (name == "true_computation") return single_call(slots.true_computation);
    if (name == "false_computation") return single_call(slots.false_computation);
    if (name == "branch_computations") return call_list(slots.branch_computations);
  }
  if ((op == Opcode::kFusion || IsAsync(op)) && name == "calls") return single_call(slots.calls);
  if (!HasNamedCallRoles(op)) {
    if (name == "to_apply") return single_call(slots.to_apply);
    if (name == "called_computations") return call_list(slots.called_computations);
  }

  // Structured attributes of specific opcodes.
  if (name == "dimensions" && TakesDimensions(op)) return ParseIntList(in.dimensions);
  if (op == Opcode::kCompare && name == "direction") {
    ASSIGN_OR_RETURN(in.comparison_direction,
                     ParseEnum(&ParseComparisonDirection, "comparison direction"));
    return absl::OkStatus();
  }
  if (op == Opcode::kCompare && name == "type") {
    ASSIGN_OR_RETURN(in.comparison_type, ParseEnum(&ParseComparisonType, "comparison type"));
    return absl::OkStatus();
  }
  if (op == Opcode::kSlice && name == "slice") return ParseSlice(in.slice);
  if (op == Opcode::kDynamicSlice && name == "dynamic_slice_sizes") {
    return ParseIntList(in.dynamic_slice_sizes);
  }
  if (name == "window" &&
      OpIn(op, {Opcode::kConvolution, Opcode::kReduceWindow, Opcode::kSelectAndScatter})) {
    in.window.emplace();
    return ParseWindow(*in.window);
  }
  if (op == Opcode::kConvolution) {
    if (name == "dim_labels") {
      ASSIGN_OR_RETURN(in.conv_dnums, ParseDimLabels());
      return absl::OkStatus();
    }
    if (name == "feature_group_count") return int_value(in.feature_group_count, true);
    if (name == "batch_group_count") return int_value(in.batch_group_count, true);
  }
  if (op == Opcode::kDot) {
    if (name == "lhs_batch_dims") return ParseIntList(dot().lhs_batch_dimensions);
    if (name == "lhs_contracting_dims") return ParseIntList(dot().lhs_contracting_dimensions);
    if (name == "rhs_batch_dims") return ParseIntList(dot().rhs_batch_dimensions);
    if (name == "rhs_contracting_dims") return ParseIntList(dot().rhs_contracting_dimensions);
  }
  if (op == Opcode::kGather) {
    if (name == "offset_dims") return ParseIntList(gather().offset_dims);
    if (name == "collapsed_slice_dims") return ParseIntList(gather().collapsed_slice_dims);
    if (name == "start_index_map") return ParseIntList(gather().start_index_map);
    if (name == "operand_batching_dims") return ParseIntList(gather().operand_batching_dims);
    if (name == "start_indices_batching_dims") {
      return ParseIntList(gather().start_indices_batching_dims);
    }
    if (name == "index_vector_dim") return int_value(gather().index_vector_dim, true);
    if (name == "slice_sizes") return ParseIntList(in.gather_slice_sizes);
  }
  if (op == Opcode::kScatter) {
    if (name == "update_window_dims") return ParseIntList(scatter().update_window_dims);
    if (name == "inserted_window_dims") return ParseIntList(scatter().inserted_window_dims);
    if (name == "scatter_dims_to_operand_dims") {
      return ParseIntList(scatter().scatter_dims_to_operand_dims);
    }
    if (name == "input_batching_dims") return ParseIntList(scatter().input_batching_dims);
    if (name == "scatter_indices_batching_dims") {
      return ParseIntList(scatter().scatter_indices_batching_dims);
    }
    if (name == "index_vector_dim") return int_value(scatter().index_vector_dim, true);
    if (name == "unique_indices") return bool_value(in.unique_indices);
  }
  if ((op == Opcode::kGather || op == Opcode::kScatter) && name == "indices_are_sorted") {
    return bool_value(in.indices_are_sorted);
  }
  if (op == Opcode::kIota && name == "iota_dimension") return int_value(in.iota_dimension, true);
  if (op == Opcode::kGetTupleElement && name == "index") return int_value(in.tuple_index, true);
  if (op == Opcode::kPad && name == "padding") return ParsePadding(in.padding);
  if (op == Opcode::kCustomCall) {
    if (name == "custom_call_target") {
      ASSIGN_OR_RETURN(in.custom_call_target, lex_.ExpectString());
      return absl::OkStatus();
    }
    if (name == "custom_call_has_side_effect") return bool_value(in.custom_call_has_side_effect);
  }
  if (op == Opcode::kSort && name == "is_stable") return bool_value(in.is_stable);
  if (op == Opcode::kFusion && name == "kind") {
    ASSIGN_OR_RETURN(in.fusion_kind, lex_.ExpectWord("fusion kind"));
    return absl::OkStatus();
  }
  if (op == Opcode::kRng && name == "distribution") {
    ASSIGN_OR_RETURN(in.distribution, ParseEnum(&ParseRandomDistribution, "rng distribution"));
    return absl::OkStatus();
  }
  if (op == Opcode::kFft) {
    if (name == "fft_type") {
      ASSIGN_OR_RETURN(in.fft_type, ParseEnum(&ParseFftType, "fft type"));
      return absl::OkStatus();
    }
    if (name == "fft_length") return ParseIntList(in.fft_length);
  }
  if (op == Opcode::kReducePrecision) {
    if (name == "exponent_bits") return int_value(in.exponent_bits, true);
    if (name == "mantissa_bits") return int_value(in.mantissa_bits, true);
  }
  if (IsBatchNorm(op)) {
    if (name == "epsilon") {
      ASSIGN_OR_RETURN(double eps, ParseFloatToken(PrimitiveType::kF32));
      in.epsilon = static_cast<float>(eps);
      return absl::OkStatus();
    }
    if (name == "feature_index") return int_value(in.feature_index, true);
  }
  if (op == Opcode::kTriangularSolve) {
    if (name == "left_side") return bool_value(tri().left_side);
    if (name == "lower") return bool_value(tri().lower);
    if (name == "unit_diagonal") return bool_value(tri().unit_diagonal);
    if (name == "transpose_a") {
      ASSIGN_OR_RETURN(tri().transpose_a,
                       ParseEnum(&ParseTriangularTranspose, "NO_TRANSPOSE, TRANSPOSE or ADJOINT"));
      return absl::OkStatus();
    }
  }
  if (op == Opcode::kCholesky && name == "lower") return bool_value(in.cholesky_lower);
  if (op == Opcode::kTopK) {
    if (name == "k") return int_value(in.topk_k, true);
    if (name == "largest") return bool_value(in.topk_largest);
  }

  RawAttribute raw;
  raw.name = std::move(name);
  RETURN_IF_ERROR(raw_value(raw.value));
  in.extra_attributes.push_back(std::move(raw));
  return absl::OkStatus();
}

absl::Status Parser::AssignCalls(PendingInstruction& p, CallSlots& slots) {
  Instruction& in = *p.instr;
  auto missing = [&](std::string_view what) {
    return lex_.ErrorAt(p.pos, absl::StrCat(std::string(OpcodeName(in.opcode())), " '", in.name(),
                                            "' needs ", std::string(what)));
  };
  switch (in.opcode()) {
    case Opcode::kWhile:
      if (!slots.condition || !slots.body) return missing("condition= and body=");
      p.calls = {*slots.condition, *slots.body};
      return absl::OkStatus();
    case Opcode::kSelectAndScatter:
      if (!slots.select || !slots.scatter) return missing("select= and scatter=");
      p.calls = {*slots.select, *slots.scatter};
      return absl::OkStatus();
    case Opcode::kConditional:
      if (slots.branch_computations) {
        if (slots.true_computation || slots.false_computation) {
          return lex_.ErrorAt(p.pos,
                              "conditional has both branch_computations and "
                              "true_computation/false_computation");
        }
        if (slots.branch_computations->empty()) return missing("at least one branch");
        p.calls = *slots.branch_computations;
      } else {
        if (!slots.true_computation || !slots.false_computation) {
          return missing("branch_computations= or true_computation= and false_computation=");
        }
        p.calls = {*slots.true_computation, *slots.false_computation};
        in.conditional_true_false_form = true;
      }
      return absl::OkStatus();
    case Opcode::kFusion:
      if (!slots.calls) return missing("calls=");
      p.calls = {*slots.calls};
      return absl::OkStatus();
    default:
      break;
  }
  if (IsAsync(in.opcode())) {
    if (slots.calls) p.calls = {*slots.calls};
    return absl::OkStatus();
  }
  if (slots.to_apply && slots.called_computations) {
    return lex_.ErrorAt(p.pos, "both to_apply and called_computations given");
  }
  if (slots.to_apply) {
    p.calls = {*slots.to_apply};
    if (in.opcode() == Opcode::kCustomCall) in.custom_call_to_apply_form = true;
  } else if (slots.called_computations) {
    p.calls = *slots.called_computations;
  }
  return absl::OkStatus();
}

absl::Status Parser::FinishComputation(
    std::string_view name_in_text, size_t name_pos, bool is_entry,
    std::vector<PendingInstruction> list,
    const std::unordered_map<std::string_view, size_t>& local_names) {
  const std::string name(name_in_text);
  if (list.empty()) {
    return lex_.ErrorAt(name_pos, absl::StrCat("computation '", name, "' has no instructions"));
  }
  // Parameter numbers must be exactly 0..n-1, so Computation's table stays dense and small.
  int64_t param_count = 0;
  for (const PendingInstruction& p : list) {
    if (p.instr->opcode() == Opcode::kParameter) ++param_count;
  }
  std::vector<bool> have_param(static_cast<size_t>(param_count), false);
  for (const PendingInstruction& p : list) {
    if (p.instr->opcode() != Opcode::kParameter) continue;
    const int64_t n = p.instr->parameter_number;
    if (n >= param_count) {
      return lex_.ErrorAt(p.pos, absl::StrCat("parameter number ", n, " out of range: '", name,
                                              "' has ", param_count, " parameters"));
    }
    if (have_param[static_cast<size_t>(n)]) {
      return lex_.ErrorAt(p.pos, absl::StrCat("duplicate parameter number ", n));
    }
    have_param[static_cast<size_t>(n)] = true;
  }
  size_t root_index = list.size() - 1;
  bool have_root = false;
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_root) continue;
    if (have_root) {
      return lex_.ErrorAt(list[i].root_pos,
                          absl::StrCat("second ROOT in computation '", name, "'"));
    }
    have_root = true;
    root_index = i;
  }

  auto [it, inserted] = computation_names_.emplace(name_in_text, std::make_pair(nullptr, name_pos));
  if (!inserted) {
    return lex_.ErrorAt(name_pos,
                        absl::StrCat("duplicate computation name '", name, "' (first defined at ",
                                     lex_.Location(it->second.second), ")"));
  }
  Computation* c = module_->AddComputation(std::make_unique<Computation>(name));
  it->second.first = c;
  if (is_entry) {
    if (entry_ != nullptr) {
      return lex_.ErrorAt(name_pos, absl::StrCat("second ENTRY computation '", name, "'"));
    }
    entry_ = c;
  }

  std::vector<Instruction*> added;
  added.reserve(list.size());
  std::vector<size_t> positions;
  positions.reserve(list.size());
  for (PendingInstruction& p : list) {
    added.push_back(c->AddInstruction(std::move(p.instr)));
    positions.push_back(p.pos);
  }
  auto lookup = [&](const NameRef& ref, std::string_view what) -> absl::StatusOr<Instruction*> {
    auto found = local_names.find(ref.name);
    if (found == local_names.end()) {
      return lex_.ErrorAt(ref.pos,
                          absl::StrCat("undefined ", std::string(what), " '", std::string(ref.name),
                                       "' in computation '", name, "'"));
    }
    return added[found->second];
  };
  std::map<std::pair<Instruction*, int64_t>, Instruction*> elements;  // `%t#i` shorthands
  auto element = [&](const NameRef& ref, Instruction* tuple) -> absl::StatusOr<Instruction*> {
    const Shape& shape = tuple->shape();
    if (!shape.IsTuple() || ref.tuple_index >= static_cast<int64_t>(shape.tuple_shapes().size())) {
      return lex_.ErrorAt(ref.pos, absl::StrCat("'", std::string(ref.name), "#", ref.tuple_index,
                                                "': ", shape.ToString(false),
                                                " has no tuple element ", ref.tuple_index));
    }
    Instruction*& gte = elements[{tuple, ref.tuple_index}];
    if (gte == nullptr) {
      auto made = std::make_unique<Instruction>(
          Opcode::kGetTupleElement, shape.tuple_shapes()[static_cast<size_t>(ref.tuple_index)]);
      made->tuple_index = ref.tuple_index;
      made->AppendOperand(tuple);
      gte = c->AddInstruction(std::move(made));
      implicit_elements_.push_back(gte);
    }
    return gte;
  };
  for (size_t i = 0; i < list.size(); ++i) {
    for (const NameRef& ref : list[i].operands) {
      ASSIGN_OR_RETURN(Instruction * op, lookup(ref, "operand"));
      if (ref.tuple_index >= 0) {
        ASSIGN_OR_RETURN(op, element(ref, op));
      }
      added[i]->AppendOperand(op);
    }
    for (const NameRef& ref : list[i].control_predecessors) {
      ASSIGN_OR_RETURN(Instruction * pred, lookup(ref, "control predecessor"));
      pred->AddControlDependencyTo(added[i]);
    }
    if (!list[i].calls.empty()) pending_calls_.push_back({added[i], std::move(list[i].calls)});
  }
  c->set_root(added[root_index]);
  return CheckAcyclic(c, positions);
}

absl::Status Parser::CheckAcyclic(Computation* c, const std::vector<size_t>& positions) {
  // Operands may come in any order, so a cycle is possible; passes assume a DAG.
  const std::vector<Instruction*> instrs = c->instructions();
  std::unordered_map<const Instruction*, size_t> index;
  index.reserve(instrs.size());
  for (size_t i = 0; i < instrs.size(); ++i) index.emplace(instrs[i], i);
  enum : uint8_t { kUnvisited, kOnStack, kDone };
  std::vector<uint8_t> state(instrs.size(), kUnvisited);
  std::vector<std::pair<size_t, size_t>> stack;
  for (size_t start = 0; start < instrs.size(); ++start) {
    if (state[start] != kUnvisited) continue;
    state[start] = kOnStack;
    stack.push_back({start, 0});
    while (!stack.empty()) {
      auto& [i, next] = stack.back();
      const Instruction* instr = instrs[i];
      const size_t n_ops = instr->operands().size();
      const size_t n_total = n_ops + instr->control_predecessors().size();
      if (next == n_total) {
        state[i] = kDone;
        stack.pop_back();
        continue;
      }
      const Instruction* dep =
          next < n_ops ? instr->operands()[next] : instr->control_predecessors()[next - n_ops];
      ++next;
      const size_t d = index.at(dep);
      if (state[d] == kOnStack) {
        return lex_.ErrorAt(positions[d],
                            absl::StrCat("cycle through instruction '", dep->name(), "'"));
      }
      if (state[d] == kUnvisited) {
        state[d] = kOnStack;
        stack.push_back({d, 0});
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Parser::FinishModule() {
  std::unordered_map<const Computation*, size_t> comp_pos;
  for (const auto& [name, entry] : computation_names_) comp_pos.emplace(entry.first, entry.second);
  for (auto& [instr, refs] : pending_calls_) {
    for (const NameRef& ref : refs) {
      auto found = computation_names_.find(ref.name);
      if (found == computation_names_.end()) {
        return lex_.ErrorAt(ref.pos,
                            absl::StrCat("undefined computation '", std::string(ref.name), "'"));
      }
      instr->mutable_called_computations().push_back(found->second.first);
    }
  }
  std::vector<Computation*> comps = module_->computations();
  if (entry_ == nullptr) entry_ = comps.back();
  module_->set_entry(entry_);

  // The call graph must be acyclic too (no recursion in HLO).
  std::unordered_map<const Computation*, uint8_t> state;
  for (Computation* root : comps) {
    if (state[root] != 0) continue;
    std::vector<std::pair<Computation*, std::vector<Computation*>>> stack;
    auto callees = [](Computation* c) {
      std::vector<Computation*> out;
      for (Instruction* i : c->instructions()) {
        for (Computation* callee : i->called_computations()) out.push_back(callee);
      }
      return out;
    };
    state[root] = 1;
    stack.push_back({root, callees(root)});
    while (!stack.empty()) {
      auto& [comp, pending] = stack.back();
      if (pending.empty()) {
        state[comp] = 2;
        stack.pop_back();
        continue;
      }
      Computation* next = pending.back();
      pending.pop_back();
      if (state[next] == 1) {
        return lex_.ErrorAt(comp_pos[next],
                            absl::StrCat("computation '", next->name(), "' calls itself"));
      }
      if (state[next] == 0) {
        state[next] = 1;
        stack.push_back({next, callees(next)});
      }
    }
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------------
// Attribute values

absl::Status Parser::ParseIntList(std::vector<int64_t>& out) {
  out.clear();
  RETURN_IF_ERROR(lex_.Expect('{'));
  if (lex_.TryConsume('}')) return absl::OkStatus();
  while (true) {
    ASSIGN_OR_RETURN(int64_t v, lex_.ExpectInt64("integer"));
    out.push_back(v);
    if (lex_.TryConsume(',')) continue;
    return lex_.Expect('}');
  }
}

absl::Status Parser::ParseNameList(std::vector<NameRef>& out) {
  out.clear();
  RETURN_IF_ERROR(lex_.Expect('{'));
  if (lex_.TryConsume('}')) return absl::OkStatus();
  while (true) {
    ASSIGN_OR_RETURN(NameRef ref, ParseNameRef("name"));
    out.push_back(std::move(ref));
    if (lex_.TryConsume(',')) continue;
    return lex_.Expect('}');
  }
}

absl::Status Parser::ParseXSeparated(std::vector<int64_t>& out) {
  out.clear();
  while (true) {
    ASSIGN_OR_RETURN(int64_t v, lex_.ExpectInt64("integer"));
    out.push_back(v);
    if (lex_.RawPeek(0) != 'x') return absl::OkStatus();
    lex_.Advance();
  }
}

absl::Status Parser::ParseWindow(Window& window) {
  const size_t start = lex_.pos();
  RETURN_IF_ERROR(lex_.Expect('{'));
  std::vector<int64_t> size, stride, lhs_dilate, rhs_dilate, reversal;
  std::vector<std::pair<int64_t, int64_t>> pad;
  std::vector<std::string> seen;
  while (!lex_.TryConsume('}')) {
    lex_.SkipSpace();
    const size_t key_pos = lex_.pos();
    ASSIGN_OR_RETURN(std::string key, lex_.ExpectWord("window attribute"));
    for (const std::string& s : seen) {
      if (s == key) return lex_.ErrorAt(key_pos, absl::StrCat("duplicate window item '", key, "'"));
    }
    seen.push_back(key);
    RETURN_IF_ERROR(lex_.Expect('='));
    if (key == "size") {
      RETURN_IF_ERROR(ParseXSeparated(size));
    } else if (key == "stride") {
      RETURN_IF_ERROR(ParseXSeparated(stride));
    } else if (key == "lhs_dilate") {
      RETURN_IF_ERROR(ParseXSeparated(lhs_dilate));
    } else if (key == "rhs_dilate") {
      RETURN_IF_ERROR(ParseXSeparated(rhs_dilate));
    } else if (key == "rhs_reversal") {
      RETURN_IF_ERROR(ParseXSeparated(reversal));
    } else if (key == "pad") {
      while (true) {
        ASSIGN_OR_RETURN(int64_t low, lex_.ExpectInt64("padding"));
        if (lex_.RawPeek(0) != '_') return lex_.Expected("'_'");
        lex_.Advance();
        ASSIGN_OR_RETURN(int64_t high, lex_.ExpectInt64("padding"));
        pad.push_back({low, high});
        if (lex_.RawPeek(0) != 'x') break;
        lex_.Advance();
      }
    } else {
      return lex_.ErrorAt(key_pos, absl::StrCat("unknown window attribute '", key, "'"));
    }
  }
  const size_t n = size.size();
  auto check = [&](size_t count, std::string_view what) -> absl::Status {
    if (count == 0 || count == n) return absl::OkStatus();
    return lex_.ErrorAt(start, absl::StrCat("window ", std::string(what), " has ", count,
                                            " dimensions, size has ", n));
  };
  RETURN_IF_ERROR(check(stride.size(), "stride"));
  RETURN_IF_ERROR(check(pad.size(), "pad"));
  RETURN_IF_ERROR(check(lhs_dilate.size(), "lhs_dilate"));
  RETURN_IF_ERROR(check(rhs_dilate.size(), "rhs_dilate"));
  RETURN_IF_ERROR(check(reversal.size(), "rhs_reversal"));
  window.dims.assign(n, WindowDim{});
  for (size_t i = 0; i < n; ++i) {
    WindowDim& d = window.dims[i];
    d.size = size[i];
    if (!stride.empty()) d.stride = stride[i];
    if (!pad.empty()) {
      d.padding_low = pad[i].first;
      d.padding_high = pad[i].second;
    }
    if (!lhs_dilate.empty()) d.base_dilation = lhs_dilate[i];
    if (!rhs_dilate.empty()) d.window_dilation = rhs_dilate[i];
    if (!reversal.empty()) d.window_reversal = reversal[i] != 0;
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseSlice(std::vector<SliceDim>& out) {
  out.clear();
  RETURN_IF_ERROR(lex_.Expect('{'));
  if (lex_.TryConsume('}')) return absl::OkStatus();
  while (true) {
    SliceDim d;
    RETURN_IF_ERROR(lex_.Expect('['));
    ASSIGN_OR_RETURN(d.start, lex_.ExpectInt64("slice start"));
    RETURN_IF_ERROR(lex_.Expect(':'));
    ASSIGN_OR_RETURN(d.limit, lex_.ExpectInt64("slice limit"));
    if (lex_.TryConsume(':')) {
      ASSIGN_OR_RETURN(d.stride, lex_.ExpectInt64("slice stride"));
    }
    RETURN_IF_ERROR(lex_.Expect(']'));
    out.push_back(d);
    if (lex_.TryConsume(',')) continue;
    return lex_.Expect('}');
  }
}

absl::Status Parser::ParsePadding(std::vector<PaddingDim>& out) {
  out.clear();
  // A rank-0 pad prints `padding=` with nothing after it.
  const char first = lex_.RawPeek(0);
  if (!IsAsciiDigit(first) && first != '-' && first != ' ') return absl::OkStatus();
  lex_.SkipSpace();
  if (!IsAsciiDigit(lex_.RawPeek(0)) && lex_.RawPeek(0) != '-') return lex_.Expected("padding");
  while (true) {
    PaddingDim d;
    ASSIGN_OR_RETURN(d.low, lex_.ExpectInt64("padding"));
    if (lex_.RawPeek(0) != '_') return lex_.Expected("'_'");
    lex_.Advance();
    ASSIGN_OR_RETURN(d.high, lex_.ExpectInt64("padding"));
    if (lex_.RawPeek(0) == '_') {
      lex_.Advance();
      ASSIGN_OR_RETURN(d.interior, lex_.ExpectInt64("interior padding"));
    }
    out.push_back(d);
    if (lex_.RawPeek(0) != 'x') return absl::OkStatus();
    lex_.Advance();
  }
}

absl::StatusOr<ConvolutionDimensionNumbers> Parser::ParseDimLabels() {
  lex_.SkipSpace();
  const std::string_view text = lex_.text();
  size_t end = lex_.pos();
  while (end < text.size() && (IsAsciiAlpha(text[end]) || IsAsciiDigit(text[end]) ||
                               text[end] == '_' || text[end] == '-' || text[end] == '>')) {
    ++end;
  }
  const std::string_view labels = text.substr(lex_.pos(), end - lex_.pos());
  std::optional<ConvolutionDimensionNumbers> dnums = ParseConvolutionDimLabels(labels);
  if (!dnums.has_value()) {
    if (labels.empty()) return lex_.Expected("dim_labels like b01f_01io->b01f");
    return lex_.ErrorAt(lex_.pos(), absl::StrCat("expected dim_labels like b01f_01io->b01f, got '",
                                                 std::string(labels.substr(0, 40)), "'"));
  }
  lex_.set_pos(end);
  return *dnums;
}

absl::StatusOr<double> Parser::ParseFloatToken(PrimitiveType type,
                                               std::optional<uint64_t>* raw_bits) {
  lex_.SkipSpace();
  const std::string_view text = lex_.text();
  const size_t start = lex_.pos();
  size_t p = start;
  const bool negative = p < text.size() && text[p] == '-';
  if (negative) ++p;
  auto word_at = [&](std::string_view w) {
    return text.substr(p, w.size()) == w &&
           (p + w.size() >= text.size() || !IsNameChar(text[p + w.size()]));
  };
  if (word_at("inf")) {
    lex_.set_pos(p + 3);
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  }
  if (word_at("nan") || (text.substr(p, 4) == "nan(")) {
    p += 3;
    const double nan = negative ? -std::numeric_limits<double>::quiet_NaN()
                                : std::numeric_limits<double>::quiet_NaN();
    if (p < text.size() && text[p] == '(') {
      const size_t payload_pos = p;
      ++p;
      if (text.substr(p, 2) != "0x") {
        lex_.set_pos(p);
        return lex_.Expected("hexadecimal NaN payload");
      }
      p += 2;
      uint64_t payload = 0;
      const size_t digits_start = p;
      while (p < text.size() && std::isxdigit(static_cast<unsigned char>(text[p]))) {
        if (p - digits_start >= 16) return lex_.ErrorAt(payload_pos, "NaN payload out of range");
        const char c = text[p];
        const uint64_t digit = IsAsciiDigit(c) ? c - '0' : (c | 0x20) - 'a' + 10;
        payload = payload << 4 | digit;
        ++p;
      }
      if (p == digits_start || p >= text.size() || text[p] != ')') {
        lex_.set_pos(p);
        return lex_.Expected("')'");
      }
      ++p;
      if (raw_bits != nullptr) {
        int mantissa_bits = 0, exponent_bits = 0;
        switch (type) {
          case PrimitiveType::kF16:
            mantissa_bits = 10, exponent_bits = 5;
            break;
          case PrimitiveType::kBF16:
            mantissa_bits = 7, exponent_bits = 8;
            break;
          case PrimitiveType::kF32:
            mantissa_bits = 23, exponent_bits = 8;
            break;
          case PrimitiveType::kF64:
            mantissa_bits = 52, exponent_bits = 11;
            break;
          default:
            break;
        }
        if (mantissa_bits != 0) {
          const uint64_t mask = (uint64_t{1} << mantissa_bits) - 1;
          uint64_t mantissa = payload & mask;
          if (mantissa == 0) mantissa = uint64_t{1} << (mantissa_bits - 1);
          const uint64_t exponent = ((uint64_t{1} << exponent_bits) - 1) << mantissa_bits;
          const uint64_t sign = negative ? uint64_t{1} << (mantissa_bits + exponent_bits) : 0;
          *raw_bits = sign | exponent | mantissa;
        }
      }
    }
    lex_.set_pos(p);
    return nan;
  }
  size_t end = p;
  while (end < text.size()) {
    const char c = text[end];
    const bool sign_after_exponent =
        (c == '+' || c == '-') && end > p && (text[end - 1] == 'e' || text[end - 1] == 'E');
    if (!IsAsciiDigit(c) && c != '.' && c != 'e' && c != 'E' && !sign_after_exponent) break;
    ++end;
  }
  if (end == p || !(IsAsciiDigit(text[p]) || text[p] == '.')) return lex_.Expected("number");
  const char* first = text.data() + start;
  const char* last = text.data() + end;
  double value = 0;
  std::from_chars_result r{};
  if (type == PrimitiveType::kF64) {
    r = std::from_chars(first, last, value);
  } else {
    // Parse narrow types as float so decimal->float rounds once, as XLA's printer assumed.
    float f = 0;
    r = std::from_chars(first, last, f);
    value = f;
  }
  if (r.ec == std::errc::result_out_of_range) {
    // Underflow becomes a (signed) zero or subnormal; overflow is an error.
    double d = 0;
    auto rd = std::from_chars(first, last, d);
    if (rd.ec == std::errc() && std::isfinite(d) &&
        (type == PrimitiveType::kF64 || std::fabs(d) <= std::numeric_limits<float>::max())) {
      value = type == PrimitiveType::kF64 ? d : static_cast<float>(d);
      r = rd;
    } else if (rd.ec == std::errc::result_out_of_range) {
      const std::string_view digits = text.substr(start, end - start);
      const size_t e = digits.find_first_of("eE");
      if (e == std::string_view::npos || e + 1 >= digits.size() || digits[e + 1] != '-') {
        return lex_.ErrorAt(start, absl::StrCat("value ", std::string(digits), " out of range"));
      }
      value = negative ? -0.0 : 0.0;
      r.ptr = last;
      r.ec = std::errc();
    } else {
      return lex_.ErrorAt(start,
                          absl::StrCat("value ", std::string(text.substr(start, end - start)),
                                       " out of range for ", std::string(PrimitiveTypeName(type))));
    }
  }
  if (r.ec != std::errc() || r.ptr != last) {
    return lex_.ErrorAt(start, absl::StrCat("malformed number '",
                                            std::string(text.substr(start, end - start)), "'"));
  }
  lex_.set_pos(end);
  return value;
}

// ---------------------------------------------------------------------------------------------
// Literals

absl::StatusOr<Literal> Parser::ParseLiteral(const Shape& shape, int depth) {
  lex_.SkipSpace();
  const size_t start = lex_.pos();
  if (depth > options_.max_nesting) {
    return lex_.ErrorAt(start, absl::StrCat("nesting deeper than ", options_.max_nesting));
  }
  if (shape.IsTuple()) {
    RETURN_IF_ERROR(lex_.Expect('('));
    std::vector<Literal> elements;
    for (int64_t i = 0; i < shape.tuple_size(); ++i) {
      if (i > 0) RETURN_IF_ERROR(lex_.Expect(','));
      if (AtArrayShape()) RETURN_IF_ERROR(ParseShape(depth + 1).status());
      ASSIGN_OR_RETURN(Literal element, ParseLiteral(shape.tuple_shapes(i), depth + 1));
      elements.push_back(std::move(element));
    }
    RETURN_IF_ERROR(lex_.Expect(')'));
    return Literal::MakeTuple(std::move(elements));
  }
  if (shape.IsToken()) {
    if (!lex_.TryConsumeWord("token")) return lex_.Expected("'token'");
    return Literal::Create(shape);
  }
  if (!shape.IsArray()) {
    return lex_.ErrorAt(start, absl::StrCat("no literal for shape ", shape.ToString()));
  }
  if (!shape.is_static()) {
    return lex_.ErrorAt(start, absl::StrCat("constant of dynamic shape ", shape.ToString()));
  }
  // Values are read before the buffer is allocated: the nesting checks below make the element
  // count match the shape, so the buffer is never larger than what the text spells out.
  LiteralValues values;
  RETURN_IF_ERROR(ParseArrayLevel(shape, 0, depth, values));
  absl::StatusOr<Literal> created = Literal::Create(shape, options_.max_literal_bytes);
  if (!created.ok()) return lex_.ErrorAt(start, std::string(created.status().message()));
  Literal literal = *std::move(created);
  const PrimitiveType type = shape.element_type();
  const std::vector<uint64_t>& w = values.words;
  const int64_t count = literal.element_count();
  for (int64_t i = 0; i < count; ++i) {
    const size_t k = static_cast<size_t>(i);
    if (type == PrimitiveType::kPred) {
      literal.SetFromInt64(i, w[k] != 0 ? 1 : 0);
    } else if (IsSignedIntegral(type)) {
      literal.SetFromInt64(i, static_cast<int64_t>(w[k]));
    } else if (IsUnsignedIntegral(type)) {
      literal.SetFromUint64(i, w[k]);
    } else if (IsComplex(type)) {
      literal.SetFromComplex(i, {BitsDouble(w[2 * k]), BitsDouble(w[2 * k + 1])});
    } else {
      literal.SetFromDouble(i, BitsDouble(w[k]));
    }
  }
  for (const auto& [i, bits] : values.raw_floats) {
    const int64_t index = static_cast<int64_t>(i);
    if (type == PrimitiveType::kF32) {
      literal.Set<uint32_t>(index, static_cast<uint32_t>(bits));
    } else if (type == PrimitiveType::kF64) {
      literal.Set<uint64_t>(index, bits);
    } else if (type == PrimitiveType::kF16 || type == PrimitiveType::kBF16) {
      literal.Set<uint16_t>(index, static_cast<uint16_t>(bits));
    }
  }
  return literal;
}

absl::Status Parser::ParseArrayLevel(const Shape& shape, int64_t dim, int depth,
                                     LiteralValues& values) {
  if (dim == shape.rank()) return ParseElement(shape.element_type(), values);
  lex_.SkipSpace();
  const size_t start = lex_.pos();
  if (depth + dim >= options_.max_nesting) {
    return lex_.ErrorAt(start, absl::StrCat("nesting deeper than ", options_.max_nesting));
  }
  RETURN_IF_ERROR(lex_.Expect('{'));
  const int64_t expected = shape.dimensions(dim);
  int64_t count = 0;
  if (!lex_.TryConsume('}')) {
    while (true) {
      if (count == expected) {
        lex_.SkipSpace();
        return lex_.ErrorAt(
            lex_.pos(), absl::StrCat("literal has more than ", expected, " elements in dimension ",
                                     dim, " of shape ", shape.ToString(false)));
      }
      RETURN_IF_ERROR(ParseArrayLevel(shape, dim + 1, depth, values));
      ++count;
      if (lex_.TryConsume(',')) continue;
      RETURN_IF_ERROR(lex_.Expect('}'));
      break;
    }
  }
  if (count != expected) {
    return lex_.ErrorAt(
        start, absl::StrCat("literal has ", count, " elements in dimension ", dim, ", but shape ",
                            shape.ToString(false), " needs ", expected));
  }
  return absl::OkStatus();
}

absl::Status Parser::ParseElement(PrimitiveType type, LiteralValues& values) {
  lex_.SkipSpace();
  const size_t start = lex_.pos();
  if (type == PrimitiveType::kPred) {
    if (lex_.TryConsumeWord("true") || lex_.TryConsumeWord("1")) {
      values.words.push_back(1);
    } else if (lex_.TryConsumeWord("false") || lex_.TryConsumeWord("0")) {
      values.words.push_back(0);
    } else {
      return lex_.Expected("true or false");
    }
    return absl::OkStatus();
  }
  if (IsSignedIntegral(type)) {
    ASSIGN_OR_RETURN(int64_t v, lex_.ExpectInt64("integer"));
    const int bits = BitWidth(type);
    const int64_t max =
        bits >= 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
    const int64_t min = bits >= 64 ? std::numeric_limits<int64_t>::min() : -max - 1;
    if (v < min || v > max) {
      return lex_.ErrorAt(start, absl::StrCat("value ", v, " out of range for ",
                                              std::string(PrimitiveTypeName(type))));
    }
    values.words.push_back(static_cast<uint64_t>(v));
    return absl::OkStatus();
  }
  if (IsUnsignedIntegral(type)) {
    ASSIGN_OR_RETURN(uint64_t v, lex_.ExpectUint64("non-negative integer"));
    const int bits = BitWidth(type);
    const uint64_t max =
        bits >= 64 ? std::numeric_limits<uint64_t>::max() : (uint64_t{1} << bits) - 1;
    if (v > max) {
      return lex_.ErrorAt(start, absl::StrCat("value ", v, " out of range for ",
                                              std::string(PrimitiveTypeName(type))));
    }
    values.words.push_back(v);
    return absl::OkStatus();
  }
  if (IsComplex(type)) {
    const PrimitiveType part =
        type == PrimitiveType::kC64 ? PrimitiveType::kF32 : PrimitiveType::kF64;
    RETURN_IF_ERROR(lex_.Expect('('));
    ASSIGN_OR_RETURN(double re, ParseFloatToken(part));
    RETURN_IF_ERROR(lex_.Expect(','));
    ASSIGN_OR_RETURN(double im, ParseFloatToken(part));
    RETURN_IF_ERROR(lex_.Expect(')'));
    values.words.push_back(DoubleBits(re));
    values.words.push_back(DoubleBits(im));
    return absl::OkStatus();
  }
  if (IsFloatingPoint(type)) {
    std::optional<uint64_t> raw;
    ASSIGN_OR_RETURN(double v, ParseFloatToken(type, &raw));
    if (raw.has_value()) values.raw_floats.push_back({values.words.size(), *raw});
    values.words.push_back(DoubleBits(v));
    return absl::OkStatus();
  }
  return lex_.ErrorAt(
      start, absl::StrCat("no literal values of type ", std::string(PrimitiveTypeName(type))));
}

#undef ASSIGN_OR_RETURN
#undef ASSIGN_OR_RETURN_IMPL
#undef RETURN_IF_ERROR
#undef MLTUNE_PARSER_CONCAT
#undef MLTUNE_PARSER_CONCAT_INNER

}  // namespace

absl::StatusOr<std::unique_ptr<Module>> ParseHloText(std::string_view text,
                                                     const ParseOptions& options) {
  Parser parser(text, options);
  return parser.ParseModule();
}

absl::StatusOr<std::unique_ptr<Module>> ParseHloFile(const std::string& path) {
  constexpr int64_t kMaxBytes = int64_t{1} << 30;
  std::string text;
  const bool gzip = path.size() >= 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  if (gzip) {
    errno = 0;
    gzFile f = gzopen(path.c_str(), "rb");
    if (f == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot open ", path, ": ", std::strerror(errno != 0 ? errno : ENOENT)));
    }
    char buf[1 << 16];
    while (true) {
      const int n = gzread(f, buf, sizeof(buf));
      if (n < 0) {
        int err = 0;
        std::string message = gzerror(f, &err);
        gzclose(f);
        return absl::InvalidArgumentError(absl::StrCat("cannot read ", path, ": ", message));
      }
      if (n == 0) break;
      if (static_cast<int64_t>(text.size()) + n > kMaxBytes) {
        gzclose(f);
        return absl::InvalidArgumentError(
            absl::StrCat("cannot read ", path, ": larger than 1 GiB uncompressed"));
      }
      text.append(buf, static_cast<size_t>(n));
    }
    gzclose(f);
  } else {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (f == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot open ", path, ": ", std::strerror(errno)));
    }
    char buf[1 << 16];
    while (true) {
      const size_t n = std::fread(buf, 1, sizeof(buf), f);
      if (n == 0) break;
      if (static_cast<int64_t>(text.size() + n) > kMaxBytes) {
        std::fclose(f);
        return absl::InvalidArgumentError(
            absl::StrCat("cannot read ", path, ": larger than 1 GiB"));
      }
      text.append(buf, n);
    }
    const bool failed = std::ferror(f) != 0;
    const int err = errno;
    std::fclose(f);
    if (failed) {
      return absl::InvalidArgumentError(
          absl::StrCat("cannot read ", path, ": ", std::strerror(err)));
    }
  }
  ParseOptions options;
  options.filename = path;
  return ParseHloText(text, options);
}

absl::StatusOr<Shape> ParseShape(std::string_view text) {
  ParseOptions options;
  Parser parser(text, options);
  return parser.ParseStandaloneShape();
}

}  // namespace mltune::ir
