// Module verifier on modules built through the IR API: structure, call graph, shapes.
#include "ir/verifier.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/computation.h"
#include "ir/instruction.h"
#include "ir/module.h"

namespace mltune::ir {
namespace {

Shape F32(std::vector<int64_t> dims) { return Shape(PrimitiveType::kF32, std::move(dims)); }
Shape S32(std::vector<int64_t> dims) { return Shape(PrimitiveType::kS32, std::move(dims)); }
Shape Pred() { return Shape(PrimitiveType::kPred, {}); }

class VerifierTest : public ::testing::Test {
 protected:
  VerifierTest() : module_(std::make_unique<Module>("m")) {}

  Computation* NewComputation(const std::string& name) {
    return module_->AddComputation(std::make_unique<Computation>(name));
  }
  static Instruction* Add(Computation* c, Opcode op, Shape shape,
                          std::vector<Instruction*> operands, const std::string& name) {
    Instruction* i = c->AddInstruction(std::make_unique<Instruction>(op, std::move(shape), name));
    for (Instruction* o : operands) i->AppendOperand(o);
    return i;
  }
  static Instruction* Param(Computation* c, int64_t n, Shape shape, const std::string& name) {
    auto p = std::make_unique<Instruction>(Opcode::kParameter, std::move(shape), name);
    p->parameter_number = n;
    return c->AddInstruction(std::move(p));
  }
  // (T, T) -> T adder named `name`.
  Computation* Adder(const std::string& name, PrimitiveType t = PrimitiveType::kF32) {
    Computation* c = NewComputation(name);
    Instruction* a = Param(c, 0, Shape(t, {}), name + ".a");
    Instruction* b = Param(c, 1, Shape(t, {}), name + ".b");
    c->set_root(Add(c, Opcode::kAdd, Shape(t, {}), {a, b}, name + ".sum"));
    return c;
  }
  // Entry with two f32[2,3] parameters; returns the entry.
  Computation* Entry() {
    Computation* e = NewComputation("main");
    p0_ = Param(e, 0, F32({2, 3}), "p0");
    p1_ = Param(e, 1, F32({2, 3}), "p1");
    module_->set_entry(e);
    return e;
  }

  absl::Status Verify(bool check_layouts = false) {
    VerifyOptions options;
    options.check_layouts = check_layouts;
    return VerifyModule(*module_, options);
  }

  std::unique_ptr<Module> module_;
  Instruction* p0_ = nullptr;
  Instruction* p1_ = nullptr;
};

// Fails with an error that starts with the computation and instruction names and contains
// `substring`.
#define EXPECT_VERIFY_ERROR(status, computation, instruction, substring)                           \
  do {                                                                                             \
    const absl::Status st_ = (status);                                                             \
    EXPECT_EQ(st_.code(), absl::StatusCode::kInvalidArgument) << st_;                              \
    const std::string msg_(st_.message());                                                         \
    EXPECT_EQ(                                                                                     \
        msg_.rfind(absl::StrCat("computation ", computation, ", instruction ", instruction, ": "), \
                   0),                                                                             \
        0u)                                                                                        \
        << msg_;                                                                                   \
    EXPECT_NE(msg_.find(substring), std::string::npos) << msg_ << "\nexpected: " << (substring);   \
  } while (0)

TEST_F(VerifierTest, ValidModulePasses) {
  Computation* adder = Adder("adder");
  Computation* e = Entry();
  Instruction* sum = Add(e, Opcode::kAdd, F32({2, 3}), {p0_, p1_}, "add.1");
  Instruction* zero = Add(e, Opcode::kConstant, F32({}), {}, "zero");
  Instruction* red = Add(e, Opcode::kReduce, F32({2}), {sum, zero}, "reduce.1");
  red->dimensions = {1};
  red->mutable_called_computations().push_back(adder);
  e->set_root(Add(e, Opcode::kTuple, Shape::Tuple({F32({2, 3}), F32({2})}), {sum, red}, "t"));
  EXPECT_TRUE(Verify().ok()) << Verify();
  EXPECT_TRUE(Verify(/*check_layouts=*/true).ok()) << Verify(true);
}

TEST_F(VerifierTest, ModuleWithoutEntry) {
  NewComputation("c");
  absl::Status st = Verify();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(st.message()).find("no entry computation"), std::string::npos) << st;
}

TEST_F(VerifierTest, MissingRoot) {
  Entry();
  absl::Status st = Verify();
  EXPECT_EQ(std::string(st.message()), "computation main: has no root instruction") << st;
}

TEST_F(VerifierTest, RootFromAnotherComputation) {
  Computation* other = NewComputation("other");
  Instruction* x = Param(other, 0, F32({}), "x");
  other->set_root(x);
  Computation* e = Entry();
  e->set_root(x);
  absl::Status st = Verify();
  EXPECT_NE(std::string(st.message()).find("root x is not in this computation"), std::string::npos)
      << st;
}

TEST_F(VerifierTest, DuplicateInstructionNames) {
  Computation* adder = Adder("adder");
  Computation* e = Entry();
  // Same name as the adder's root, in another computation: names are module-wide.
  Instruction* a = Add(e, Opcode::kAdd, F32({2, 3}), {p0_, p1_}, "adder.sum");
  e->set_root(a);
  (void)adder;
  EXPECT_VERIFY_ERROR(Verify(), "main", "adder.sum", "not unique");
}

TEST_F(VerifierTest, DuplicateComputationNames) {
  Computation* e = Entry();
  e->set_root(p0_);
  Computation* dup = NewComputation("main");
  dup->set_root(Param(dup, 0, F32({}), "q"));
  absl::Status st = Verify();
  EXPECT_NE(std::string(st.message()).find("computation main: computation name is not unique"),
            std::string::npos)
      << st;
}

TEST_F(VerifierTest, ParameterGap) {
  Computation* e = Entry();
  Instruction* p3 = Param(e, 3, F32({2, 3}), "p3");
  e->set_root(p3);
  EXPECT_VERIFY_ERROR(Verify(), "main", "p3", "parameter number 3 is out of range");
}

TEST_F(VerifierTest, DuplicateParameterNumber) {
  Computation* e = Entry();
  Instruction* again = Param(e, 1, F32({2, 3}), "again");
  Param(e, 3, F32({2, 3}), "p3");  // keeps the count at 4 so only the duplicate is wrong
  e->set_root(again);
  EXPECT_VERIFY_ERROR(Verify(), "main", "again", "parameter number 1 is also used by p1");
}

TEST_F(VerifierTest, OperandFromAnotherComputation) {
  Computation* other = NewComputation("other");
  Instruction* x = Param(other, 0, F32({2, 3}), "x");
  other->set_root(x);
  Computation* e = Entry();
  e->set_root(Add(e, Opcode::kAdd, F32({2, 3}), {p0_, x}, "add.7"));
  EXPECT_VERIFY_ERROR(Verify(), "main", "add.7", "operand 1 (x) belongs to computation other");
}

TEST_F(VerifierTest, OperandCycle) {
  Computation* e = Entry();
  Instruction* a = Add(e, Opcode::kAdd, F32({2, 3}), {p0_}, "a");
  Instruction* b = Add(e, Opcode::kNegate, F32({2, 3}), {a}, "b");
  a->AppendOperand(b);  // a = add(p0, b), b = negate(a)
  e->set_root(b);
  EXPECT_VERIFY_ERROR(Verify(), "main", "b", "is part of a cycle: it depends on a");
}

TEST_F(VerifierTest, SelfLoop) {
  Computation* e = Entry();
  Instruction* a = Add(e, Opcode::kAdd, F32({2, 3}), {p0_}, "a");
  a->AppendOperand(a);
  e->set_root(a);
  EXPECT_VERIFY_ERROR(Verify(), "main", "a", "cycle");
}

TEST_F(VerifierTest, ControlDependencyCycle) {
  Computation* e = Entry();
  Instruction* n = Add(e, Opcode::kNegate, F32({2, 3}), {p0_}, "n");
  Instruction* m = Add(e, Opcode::kNegate, F32({2, 3}), {n}, "m");
  m->AddControlDependencyTo(n);  // n must run after m, but m uses n
  e->set_root(m);
  absl::Status st = Verify();
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(st.message()).find("cycle"), std::string::npos) << st;
  EXPECT_EQ(std::string(st.message()).rfind("computation main, instruction ", 0), 0u) << st;
}

TEST_F(VerifierTest, UnknownCalledComputation) {
  auto stray = std::make_unique<Computation>("stray");
  Instruction* sp =
      stray->AddInstruction(std::make_unique<Instruction>(Opcode::kParameter, F32({2, 3}), "sp"));
  stray->set_root(sp);
  Computation* e = Entry();
  Instruction* call = Add(e, Opcode::kCall, F32({2, 3}), {p0_}, "call.1");
  call->mutable_called_computations().push_back(stray.get());
  e->set_root(call);
  EXPECT_VERIFY_ERROR(Verify(), "main", "call.1", "calls unknown computation stray");
}

TEST_F(VerifierTest, RecursiveCallGraph) {
  Computation* f = NewComputation("f");
  Instruction* x = Param(f, 0, F32({2, 3}), "x");
  Instruction* inner = Add(f, Opcode::kCall, F32({2, 3}), {x}, "inner_call");
  inner->mutable_called_computations().push_back(f);
  f->set_root(inner);
  Computation* e = Entry();
  Instruction* call = Add(e, Opcode::kCall, F32({2, 3}), {p0_}, "outer_call");
  call->mutable_called_computations().push_back(f);
  e->set_root(call);
  EXPECT_VERIFY_ERROR(Verify(), "f", "inner_call", "recursively");
}

TEST_F(VerifierTest, WrongOperandShape) {
  Computation* e = Entry();
  Instruction* t = Add(e, Opcode::kTranspose, F32({3, 2}), {p1_}, "tr");
  t->dimensions = {1, 0};
  e->set_root(Add(e, Opcode::kAdd, F32({2, 3}), {p0_, t}, "add.3"));
  EXPECT_VERIFY_ERROR(Verify(), "main", "add.3", "operand shapes f32[2,3] and f32[3,2] differ");
}

TEST_F(VerifierTest, WrongOperandCount) {
  Computation* e = Entry();
  e->set_root(Add(e, Opcode::kAdd, F32({2, 3}), {p0_}, "add.4"));
  EXPECT_VERIFY_ERROR(Verify(), "main", "add.4", "expects 2 operands but has 1");
}

TEST_F(VerifierTest, DeclaredShapeDiffersFromInferred) {
  Computation* e = Entry();
  e->set_root(Add(e, Opcode::kAdd, F32({3, 2}), {p0_, p1_}, "add.5"));
  EXPECT_VERIFY_ERROR(Verify(), "main", "add.5",
                      "declared shape f32[3,2] does not match the inferred shape f32[2,3]");
  Shape dynamic = F32({2, 3});
  dynamic.set_dynamic_dimension(0, true);
  e->root()->set_shape(dynamic);
  EXPECT_VERIFY_ERROR(Verify(), "main", "add.5", "declared shape f32[<=2,3]");
  e->root()->set_shape(S32({2, 3}));
  EXPECT_VERIFY_ERROR(Verify(), "main", "add.5", "declared shape s32[2,3]");
}

TEST_F(VerifierTest, BadBroadcastDimensions) {
  Computation* e = Entry();
  Instruction* v = Param(e, 2, F32({3}), "v");
  Instruction* b = Add(e, Opcode::kBroadcast, F32({2, 3}), {v}, "broadcast.2");
  b->dimensions = {0};
  e->set_root(b);
  EXPECT_VERIFY_ERROR(Verify(), "main", "broadcast.2",
                      "maps operand dimension 0 of size 3 to result dimension 0 of size 2");
  b->dimensions = {1};
  EXPECT_TRUE(Verify().ok()) << Verify();
}

TEST_F(VerifierTest, DotWithMismatchedContractingDimensions) {
  Computation* e = Entry();
  Instruction* d = Add(e, Opcode::kDot, F32({2, 2}), {p0_, p1_}, "dot.5");
  DotDimensionNumbers dn;
  dn.lhs_contracting_dimensions = {1};
  dn.rhs_contracting_dimensions = {0};
  d->dot_dnums = dn;
  e->set_root(d);
  EXPECT_VERIFY_ERROR(Verify(), "main", "dot.5",
                      "lhs contracting dimension 1 has size 3 but rhs contracting dimension 0 has "
                      "size 2");
  dn.rhs_contracting_dimensions = {1};
  d->dot_dnums = dn;
  EXPECT_TRUE(Verify().ok()) << Verify();
}

TEST_F(VerifierTest, ConvolutionWithWrongFeatureCount) {
  Computation* e = Entry();
  Instruction* img = Param(e, 2, F32({1, 8, 8, 4}), "img");
  Instruction* kernel = Param(e, 3, F32({3, 3, 3, 16}), "kernel");
  Instruction* conv = Add(e, Opcode::kConvolution, F32({1, 6, 6, 16}), {img, kernel}, "conv.9");
  conv->conv_dnums = *ParseConvolutionDimLabels("b01f_01io->b01f");
  conv->window = Window{{{3, 1, 0, 0, 1, 1, false}, {3, 1, 0, 0, 1, 1, false}}};
  e->set_root(conv);
  EXPECT_VERIFY_ERROR(Verify(), "main", "conv.9", "kernel input feature count 3");
  kernel->set_shape(F32({3, 3, 4, 16}));
  EXPECT_TRUE(Verify().ok()) << Verify();
}

TEST_F(VerifierTest, CalledComputationWithWrongSignature) {
  Computation* bad = NewComputation("bad_reducer");
  Instruction* a = Param(bad, 0, F32({}), "ra");
  Instruction* b = Param(bad, 1, F32({}), "rb");
  Instruction* c = Param(bad, 2, F32({}), "rc");
  Instruction* s = Add(bad, Opcode::kAdd, F32({}), {a, b}, "rs");
  bad->set_root(Add(bad, Opcode::kAdd, F32({}), {s, c}, "rs2"));
  Computation* e = Entry();
  Instruction* zero = Add(e, Opcode::kConstant, F32({}), {}, "zero");
  Instruction* r = Add(e, Opcode::kReduce, F32({2}), {p0_, zero}, "reduce.4");
  r->dimensions = {1};
  r->mutable_called_computations().push_back(bad);
  e->set_root(r);
  EXPECT_VERIFY_ERROR(Verify(), "main", "reduce.4",
                      "to_apply computation must take 2 parameters but takes 3");

  Computation* callee = NewComputation("callee");
  callee->set_root(Param(callee, 0, S32({2, 3}), "cp"));
  Instruction* call = Add(e, Opcode::kCall, F32({2, 3}), {p0_}, "call.2");
  call->mutable_called_computations().push_back(callee);
  r->mutable_called_computations()[0] = Adder("good_reducer");
  e->set_root(Add(e, Opcode::kTuple, Shape::Tuple({F32({2}), F32({2, 3})}), {r, call}, "t"));
  EXPECT_VERIFY_ERROR(Verify(), "main", "call.2", "parameter 0 is s32[2,3] but operand 0 is");
}

TEST_F(VerifierTest, WhileBodyShapeMismatch) {
  const Shape state = Shape::Tuple({S32({}), F32({2, 3})});
  Computation* cond = NewComputation("cond");
  Instruction* cp = Param(cond, 0, state, "cond.p");
  Instruction* ci = Add(cond, Opcode::kGetTupleElement, S32({}), {cp}, "cond.i");
  Instruction* limit = Add(cond, Opcode::kConstant, S32({}), {}, "cond.limit");
  Instruction* lt = Add(cond, Opcode::kCompare, Pred(), {ci, limit}, "cond.lt");
  lt->comparison_direction = ComparisonDirection::kLt;
  cond->set_root(lt);

  Computation* body = NewComputation("body");
  Instruction* bp = Param(body, 0, state, "body.p");
  Instruction* bi = Add(body, Opcode::kGetTupleElement, S32({}), {bp}, "body.i");
  Instruction* bx = Add(body, Opcode::kGetTupleElement, F32({2, 3}), {bp}, "body.x");
  bx->tuple_index = 1;
  Instruction* one = Add(body, Opcode::kConstant, S32({}), {}, "body.one");
  Instruction* next = Add(body, Opcode::kAdd, S32({}), {bi, one}, "body.next");
  Instruction* neg = Add(body, Opcode::kNegate, F32({2, 3}), {bx}, "body.neg");
  Instruction* out = Add(body, Opcode::kTuple, state, {next, neg}, "body.out");
  body->set_root(out);

  Computation* e = Entry();
  Instruction* zero = Add(e, Opcode::kConstant, S32({}), {}, "zero");
  Instruction* init = Add(e, Opcode::kTuple, state, {zero, p0_}, "init");
  Instruction* w = Add(e, Opcode::kWhile, state, {init}, "while.1");
  w->mutable_called_computations() = {cond, body};
  e->set_root(w);
  EXPECT_TRUE(Verify().ok()) << Verify();

  // The body now returns the state with the counter dropped.
  Instruction* bad_out =
      Add(body, Opcode::kTuple, Shape::Tuple({F32({2, 3})}), {neg}, "body.bad_out");
  body->set_root(bad_out);
  EXPECT_VERIFY_ERROR(Verify(), "main", "while.1", "body result (f32[2,3]) does not match init");
}

TEST_F(VerifierTest, InvalidShapes) {
  Computation* e = Entry();
  Shape bad_layout = F32({2, 3});
  bad_layout.set_layout(Layout{{0, 0}, {}, 0, 0, ""});
  p0_->set_shape(bad_layout);
  e->set_root(p0_);
  EXPECT_VERIFY_ERROR(Verify(), "main", "p0", "is not a permutation of 0..1");
  Shape short_layout = F32({2, 3});
  short_layout.set_layout(Layout{{0}, {}, 0, 0, ""});
  p0_->set_shape(short_layout);
  EXPECT_VERIFY_ERROR(Verify(), "main", "p0", "is not a permutation");
  p0_->set_shape(F32({2, -3}));
  EXPECT_VERIFY_ERROR(Verify(), "main", "p0", "negative dimension");
}

TEST_F(VerifierTest, InputOutputAlias) {
  Computation* e = Entry();
  e->set_root(Add(e, Opcode::kTuple, Shape::Tuple({F32({2, 3}), F32({2, 3})}), {p0_, p1_}, "t"));
  module_->input_output_alias = {IoAlias{{1}, 1, {}, "must-alias"}};
  EXPECT_TRUE(Verify().ok()) << Verify();
  module_->input_output_alias = {IoAlias{{1}, 2, {}, "must-alias"}};
  absl::Status st = Verify();
  EXPECT_NE(std::string(st.message()).find("refers to parameter 2 but the entry computation has 2"),
            std::string::npos)
      << st;
  module_->input_output_alias = {IoAlias{{2}, 0, {}, ""}};
  EXPECT_NE(std::string(Verify().message()).find("output index {2}"), std::string::npos);
  module_->input_output_alias = {IoAlias{{0}, 0, {0}, ""}};
  EXPECT_NE(std::string(Verify().message()).find("parameter index {0}"), std::string::npos);
}

TEST_F(VerifierTest, LayoutsCheckedOnlyWhenAsked) {
  Computation* e = Entry();
  Instruction* t = Add(e, Opcode::kTuple, Shape::Tuple({F32({2, 3})}), {p0_}, "t");
  Shape transposed = F32({2, 3});
  transposed.set_layout(Layout{{0, 1}, {}, 0, 0, ""});
  Instruction* g = Add(e, Opcode::kGetTupleElement, transposed, {t}, "gte");
  e->set_root(g);
  EXPECT_TRUE(Verify().ok()) << Verify();
  EXPECT_VERIFY_ERROR(Verify(/*check_layouts=*/true), "main", "gte", "layout");
}

// 100k-instruction chains: no recursion (no stack overflow) and linear time.
TEST_F(VerifierTest, LongChainsVerifyIteratively) {
  Computation* e = Entry();
  Instruction* cur = p0_;
  constexpr int kLength = 100000;
  for (int i = 0; i < kLength; ++i) {
    cur = Add(e, Opcode::kNegate, F32({2, 3}), {cur}, absl::StrCat("n", i));
  }
  e->set_root(cur);
  const auto start = std::chrono::steady_clock::now();
  absl::Status st = Verify();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(st.ok()) << st;
  EXPECT_LT(ms, 5000.0);
  std::printf("verified %d-instruction chain in %.1f ms\n", kLength + 2, ms);
  // Close the chain into one long cycle.
  e->instructions()[2]->ReplaceOperand(0, cur);
  EXPECT_VERIFY_ERROR(Verify(), "main", "n1", "cycle");
}

}  // namespace
}  // namespace mltune::ir
