// Control flow: If as a conditional (inlined when its condition is known at import), Loop and
// Scan as while loops whose state carries the loop counter, the carried values, the scan
// outputs' buffers and the outer values the body reads.
#include <set>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/converter.h"
#include "ir/hlo_builder.h"

namespace mltune::ir::onnx {
namespace {

using ::onnx::GraphProto;

// Names a graph reads that it does not define (inputs, initializers, node outputs), including
// those its own subgraphs read from it or beyond: the outer values it captures.
void CollectFreeVariables(const GraphProto& g, std::set<std::string>& free) {
  std::set<std::string> defined;
  for (const auto& in : g.input()) defined.insert(in.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  std::set<std::string> used;
  for (const auto& node : g.node()) {
    for (const std::string& in : node.input()) {
      if (!in.empty() && defined.count(in) == 0) used.insert(in);
    }
    for (const auto& attr : node.attribute()) {
      std::vector<const GraphProto*> subs;
      if (attr.has_g()) subs.push_back(&attr.g());
      for (const auto& sg : attr.graphs()) subs.push_back(&sg);
      for (const GraphProto* sg : subs) {
        std::set<std::string> inner;
        CollectFreeVariables(*sg, inner);
        for (const std::string& v : inner) {
          if (defined.count(v) == 0) used.insert(v);
        }
      }
    }
    for (const std::string& out : node.output()) defined.insert(out);
  }
  for (const auto& out : g.output()) {
    if (defined.count(out.name()) == 0) used.insert(out.name());
  }
  free.insert(used.begin(), used.end());
}

// The outer values `graphs` capture, in a fixed order, with their instructions.
absl::StatusOr<std::vector<std::pair<std::string, Instruction*>>> Captures(
    NodeContext& n, const std::vector<const GraphProto*>& graphs) {
  std::set<std::string> free;
  for (const GraphProto* g : graphs) CollectFreeVariables(*g, free);
  std::vector<std::pair<std::string, Instruction*>> out;
  for (const std::string& name : free) {
    auto it = n.scope().find(name);
    if (it == n.scope().end()) {
      return n.Error(absl::StrCat("a subgraph reads '", name, "', which is not defined"));
    }
    out.emplace_back(name, it->second);
  }
  return out;
}

// A new computation of one tuple parameter of `shape`, with its emitter.
struct SubComputation {
  Computation* computation;
  Instruction* param;
};
SubComputation NewComputation(Emitter& outer, const std::string& name, const Shape& shape) {
  Module& m = outer.module();
  Computation* c =
      m.AddComputation(std::make_unique<Computation>(ir::UniqueComputationName(m, name)));
  auto p =
      std::make_unique<Instruction>(Opcode::kParameter, shape, m.UniqueInstructionName("state"));
  p->parameter_number = 0;
  Instruction* param = c->AddInstruction(std::move(p));
  return {c, param};
}

bool IsConstantTrue(NodeContext& n, Instruction* x) {
  if (x == nullptr) return true;
  absl::StatusOr<Literal> v = n.importer().Fold(x, "the condition");
  if (!v.ok() || v->element_count() != 1) return false;
  return v->GetAsBool(0);
}

Outputs If(NodeContext& n) {
  MLTUNE_ASSIGN(cond, n.required_input(0));
  const GraphProto* then_g = n.attr_graph("then_branch");
  const GraphProto* else_g = n.attr_graph("else_branch");
  if (then_g == nullptr || else_g == nullptr)
    return n.Error("then_branch and else_branch are required");
  if (cond->shape().ElementCount() != 1) return n.Error("the condition must hold one value");
  Emitter& b = n.b();
  // Known at import (a constant or an expression of constants): inline the branch taken.
  absl::StatusOr<Literal> known = n.importer().Fold(cond, "the condition");
  if (known.ok()) {
    return n.importer().ConvertGraph(known->GetAsBool(0) ? *then_g : *else_g, b, n.scope());
  }
  MLTUNE_ASSIGN(captures, Captures(n, {then_g, else_g}));
  std::vector<Instruction*> captured;
  std::vector<Shape> shapes;
  for (const auto& [name, instr] : captures) {
    captured.push_back(instr);
    shapes.push_back(instr->shape());
  }
  const Shape operand_shape = Shape::Tuple(shapes);
  std::vector<Computation*> branches;
  std::optional<Shape> result_shape;
  for (const GraphProto* g : {then_g, else_g}) {
    SubComputation sub = NewComputation(b, g == then_g ? "onnx_then" : "onnx_else", operand_shape);
    Emitter inner(b.module(), *sub.computation);
    Scope scope;
    for (size_t i = 0; i < captures.size(); ++i) {
      scope[captures[i].first] = inner.GetTupleElement(sub.param, static_cast<int64_t>(i));
    }
    MLTUNE_ASSIGN(outs, n.importer().ConvertGraph(*g, inner, std::move(scope)));
    Instruction* root = inner.Tuple(outs);
    sub.computation->set_root(root);
    if (result_shape.has_value() && !result_shape->Compatible(root->shape())) {
      return n.Unsupported(
          absl::StrCat("the branches' outputs differ in shape: ", result_shape->ToString(false),
                       " and ", root->shape().ToString(false)));
    }
    result_shape = root->shape();
    branches.push_back(sub.computation);
  }
  Instruction* operand = b.Tuple(captured);
  Instruction* pred = b.Reshape(b.Convert(cond, PrimitiveType::kPred), {});
  MLTUNE_ASSIGN(conditional, b.Add(
                                 Opcode::kConditional, {pred, operand, operand},
                                 [&](Instruction& i) {
                                   i.mutable_called_computations() = branches;
                                   i.conditional_true_false_form = true;
                                 },
                                 *result_shape));
  std::vector<Instruction*> outs;
  for (int64_t i = 0; i < result_shape->tuple_size(); ++i) {
    outs.push_back(b.GetTupleElement(conditional, i));
  }
  return outs;
}

// A while loop over `state` (element 0: the s64 counter). `make_body` converts one iteration
// from the state's elements and returns the next state's elements after the counter;
// `keep_going` decides from the state whether to run another.
struct WhileParts {
  std::function<absl::StatusOr<std::vector<Instruction*>>(Emitter&, std::vector<Instruction*>)>
      make_body;
  std::function<absl::StatusOr<Instruction*>(Emitter&, std::vector<Instruction*>)> keep_going;
};

absl::StatusOr<std::vector<Instruction*>> EmitWhile(NodeContext& n,
                                                    const std::vector<Instruction*>& init,
                                                    const WhileParts& parts) {
  Emitter& b = n.b();
  std::vector<Shape> shapes;
  for (Instruction* x : init) shapes.push_back(x->shape());
  const Shape state_shape = Shape::Tuple(shapes);
  auto elements = [&](Emitter& e, Instruction* param) {
    std::vector<Instruction*> xs;
    for (size_t i = 0; i < init.size(); ++i) xs.push_back(e.GetTupleElement(param, i));
    return xs;
  };
  SubComputation cond = NewComputation(b, "onnx_loop_cond", state_shape);
  Emitter ce(b.module(), *cond.computation);
  MLTUNE_ASSIGN(go, parts.keep_going(ce, elements(ce, cond.param)));
  cond.computation->set_root(go);
  SubComputation body = NewComputation(b, "onnx_loop_body", state_shape);
  Emitter be(b.module(), *body.computation);
  std::vector<Instruction*> in = elements(be, body.param);
  MLTUNE_ASSIGN(next, parts.make_body(be, in));
  MLTUNE_ASSIGN(counter, be.Binary(Opcode::kAdd, in[0], be.Scalar(PrimitiveType::kS64, 1)));
  next.insert(next.begin(), counter);
  for (size_t i = 0; i < next.size(); ++i) {
    if (!next[i]->shape().Compatible(shapes[i])) {
      return n.Unsupported(absl::StrCat("a loop-carried value changes shape from ",
                                        shapes[i].ToString(false), " to ",
                                        next[i]->shape().ToString(false)));
    }
  }
  body.computation->set_root(be.Tuple(next));
  MLTUNE_ASSIGN(loop, b.Add(
                          Opcode::kWhile, {b.Tuple(init)},
                          [&](Instruction& i) {
                            i.mutable_called_computations() = {cond.computation, body.computation};
                          },
                          state_shape));
  std::vector<Instruction*> out;
  for (size_t i = 0; i < init.size(); ++i) out.push_back(b.GetTupleElement(loop, i));
  return out;
}

// x with a leading dimension of 1, written into `buffer` at row `index` of `axis`.
absl::StatusOr<Instruction*> WriteRow(Emitter& e, Instruction* buffer, Instruction* x,
                                      Instruction* index, int64_t axis) {
  std::vector<int64_t> axes = {axis};
  Instruction* row = e.InsertUnitDims(x, axes);
  std::vector<Instruction*> operands = {buffer, row};
  for (int64_t d = 0; d < buffer->shape().rank(); ++d) {
    operands.push_back(d == axis ? index : e.Scalar(PrimitiveType::kS64, 0));
  }
  return e.Add(Opcode::kDynamicUpdateSlice, operands);
}

// Row `index` of `axis` of x, without that dimension.
absl::StatusOr<Instruction*> ReadRow(Emitter& e, Instruction* x, Instruction* index, int64_t axis) {
  std::vector<Instruction*> operands = {x};
  std::vector<int64_t> sizes = x->shape().dimensions();
  sizes[axis] = 1;
  for (int64_t d = 0; d < x->shape().rank(); ++d) {
    operands.push_back(d == axis ? index : e.Scalar(PrimitiveType::kS64, 0));
  }
  MLTUNE_ASSIGN(slice, e.Add(Opcode::kDynamicSlice, operands,
                             [&](Instruction& i) { i.dynamic_slice_sizes = sizes; }));
  std::vector<int64_t> dims = x->shape().dimensions();
  dims.erase(dims.begin() + axis);
  return e.Reshape(slice, dims);
}

Outputs Loop(NodeContext& n) {
  const GraphProto* body_g = n.attr_graph("body");
  if (body_g == nullptr) return n.Error("attribute 'body' is required");
  Emitter& b = n.b();
  const int64_t carried = n.input_count() - 2;
  if (carried < 0) return n.Error("needs the inputs M and cond (either may be empty)");
  if (body_g->input_size() != carried + 2) {
    return n.Error(
        absl::StrCat("the body takes ", body_g->input_size(), " inputs, expected ", carried + 2));
  }
  const int64_t scans = body_g->output_size() - 1 - carried;
  if (scans < 0) return n.Error("the body has fewer outputs than loop-carried values");
  Instruction* max_trips = n.input(0);
  Instruction* cond = n.input(1);
  // Scan outputs are stacked per iteration, so their length must be the static trip count: M
  // known at import, and a loop that cannot stop earlier.
  int64_t trips = -1;
  if (max_trips != nullptr) {
    absl::StatusOr<Literal> m = n.importer().Fold(max_trips, "input 0 ('M')");
    if (m.ok()) trips = m->GetAsInt64(0);
  }
  if (scans > 0 && trips < 0) {
    return n.Unsupported("scan outputs need the trip count M known at import");
  }
  if (scans > 0 && !IsConstantTrue(n, cond)) {
    return n.Unsupported("scan outputs need a loop that runs all M iterations (cond known true)");
  }
  MLTUNE_ASSIGN(captures, Captures(n, {body_g}));
  // State: counter, M, cond, carried values, scan buffers, captured values.
  std::vector<Instruction*> init = {b.Scalar(PrimitiveType::kS64, 0)};
  init.push_back(max_trips != nullptr
                     ? b.Reshape(b.Convert(max_trips, PrimitiveType::kS64), {})
                     : b.Scalar(PrimitiveType::kS64, static_cast<double>(INT64_MAX)));
  init.push_back(cond != nullptr ? b.Reshape(b.Convert(cond, PrimitiveType::kPred), {})
                                 : b.Scalar(PrimitiveType::kPred, 1));
  for (int64_t i = 0; i < carried; ++i) {
    MLTUNE_ASSIGN(v, n.required_input(2 + i));
    init.push_back(v);
  }
  // The scan outputs' shapes come from one conversion of the body outside the loop, discarded.
  std::vector<Shape> scan_shapes;
  bool cond_passes_through = true;
  if (scans > 0) {
    SubComputation probe = NewComputation(b, "onnx_loop_probe", Shape::Tuple({}));
    Emitter pe(b.module(), *probe.computation);
    // Only shapes matter here: every value the body reads is zeros of its shape.
    auto zeros = [&](Instruction* x) {
      return pe.Full(x->shape().element_type(), x->shape().dimensions(), 0);
    };
    Scope scope;
    for (const auto& [name, instr] : captures) scope[name] = zeros(instr);
    scope[body_g->input(0).name()] = pe.Scalar(PrimitiveType::kS64, 0);
    scope[body_g->input(1).name()] = pe.Scalar(PrimitiveType::kPred, 1);
    for (int64_t i = 0; i < carried; ++i) scope[body_g->input(2 + i).name()] = zeros(init[3 + i]);
    MLTUNE_ASSIGN(outs, n.importer().ConvertGraph(*body_g, pe, std::move(scope)));
    for (int64_t i = 0; i < scans; ++i) scan_shapes.push_back(outs[1 + carried + i]->shape());
    probe.computation->set_root(pe.Tuple({}));
    (void)b.module().RemoveComputation(probe.computation);
  }
  for (const Shape& s : scan_shapes) {
    std::vector<int64_t> dims = s.dimensions();
    dims.insert(dims.begin(), trips);
    init.push_back(b.Full(s.element_type(), dims, 0));
  }
  for (const auto& [name, instr] : captures) init.push_back(instr);
  const int64_t first_scan = 3 + carried, first_capture = first_scan + scans;

  WhileParts parts;
  parts.keep_going = [&](Emitter& e, std::vector<Instruction*> s) -> absl::StatusOr<Instruction*> {
    MLTUNE_ASSIGN(more, e.Compare(ComparisonDirection::kLt, s[0], s[1]));
    return e.Add(Opcode::kAnd, {more, s[2]});
  };
  parts.make_body = [&](Emitter& e,
                        std::vector<Instruction*> s) -> absl::StatusOr<std::vector<Instruction*>> {
    Scope scope;
    for (size_t i = 0; i < captures.size(); ++i) scope[captures[i].first] = s[first_capture + i];
    scope[body_g->input(0).name()] = s[0];
    scope[body_g->input(1).name()] = s[2];
    for (int64_t i = 0; i < carried; ++i) scope[body_g->input(2 + i).name()] = s[3 + i];
    MLTUNE_ASSIGN(outs, n.importer().ConvertGraph(*body_g, e, std::move(scope)));
    Instruction* cond_out = e.Reshape(e.Convert(outs[0], PrimitiveType::kPred), {});
    if (scans > 0 && cond_out != s[2]) {
      absl::StatusOr<Literal> known = n.importer().Fold(cond_out, "the body's condition");
      cond_passes_through = known.ok() && known->GetAsBool(0);
    }
    std::vector<Instruction*> next = {s[1], cond_out};
    for (int64_t i = 0; i < carried; ++i) next.push_back(outs[1 + i]);
    for (int64_t i = 0; i < scans; ++i) {
      MLTUNE_ASSIGN(w, WriteRow(e, s[first_scan + i], outs[1 + carried + i], s[0], 0));
      next.push_back(w);
    }
    for (size_t i = 0; i < captures.size(); ++i) next.push_back(s[first_capture + i]);
    return next;
  };
  MLTUNE_ASSIGN(final_state, EmitWhile(n, init, parts));
  if (!cond_passes_through) {
    return n.Unsupported("scan outputs of a loop whose body may stop it early");
  }
  std::vector<Instruction*> outs;
  for (int64_t i = 0; i < carried + scans; ++i) outs.push_back(final_state[3 + i]);
  return outs;
}

Outputs Scan(NodeContext& n) {
  if (n.opset() < 9) return n.Unsupported("Scan before opset 9 (batched, with sequence_lens)");
  const GraphProto* body_g = n.attr_graph("body");
  if (body_g == nullptr) return n.Error("attribute 'body' is required");
  MLTUNE_ASSIGN(num_scan_inputs, n.attr_int("num_scan_inputs"));
  const int64_t states = n.input_count() - num_scan_inputs;
  const int64_t scan_outs = body_g->output_size() - states;
  if (states < 0 || scan_outs < 0 || body_g->input_size() != n.input_count()) {
    return n.Error("the body's inputs and outputs do not match the node's");
  }
  auto list = [&](const char* name, int64_t count) -> absl::StatusOr<std::vector<int64_t>> {
    return n.attr_ints(name, std::vector<int64_t>(count, 0));
  };
  MLTUNE_ASSIGN(in_axes, list("scan_input_axes", num_scan_inputs));
  MLTUNE_ASSIGN(in_dirs, list("scan_input_directions", num_scan_inputs));
  MLTUNE_ASSIGN(out_axes, list("scan_output_axes", scan_outs));
  MLTUNE_ASSIGN(out_dirs, list("scan_output_directions", scan_outs));
  Emitter& b = n.b();
  int64_t length = -1;
  std::vector<Instruction*> scan_inputs;
  for (int64_t i = 0; i < num_scan_inputs; ++i) {
    MLTUNE_ASSIGN(x, n.required_input(states + i));
    MLTUNE_ASSIGN(axis, n.NormalizeAxis(in_axes[i], x->shape().rank()));
    in_axes[i] = axis;
    const int64_t len = x->shape().dimensions(axis);
    if (length >= 0 && len != length) return n.Error("the scan inputs differ in length");
    length = len;
    scan_inputs.push_back(x);
  }
  if (length < 0) return n.Error("needs at least one scan input");
  MLTUNE_ASSIGN(captures, Captures(n, {body_g}));
  // State: counter, states, scan output buffers, scan inputs, captured values.
  std::vector<Instruction*> init = {b.Scalar(PrimitiveType::kS64, 0)};
  for (int64_t i = 0; i < states; ++i) {
    MLTUNE_ASSIGN(v, n.required_input(i));
    init.push_back(v);
  }
  // Each scan output's per-iteration shape, from one conversion of the body on zeros.
  std::vector<Shape> out_shapes;
  {
    SubComputation probe = NewComputation(b, "onnx_scan_probe", Shape::Tuple({}));
    Emitter pe(b.module(), *probe.computation);
    Scope scope;
    for (const auto& [name, instr] : captures) {
      scope[name] = pe.Full(instr->shape().element_type(), instr->shape().dimensions(), 0);
    }
    for (int64_t i = 0; i < states; ++i) {
      scope[body_g->input(i).name()] =
          pe.Full(init[1 + i]->shape().element_type(), init[1 + i]->shape().dimensions(), 0);
    }
    for (int64_t i = 0; i < num_scan_inputs; ++i) {
      std::vector<int64_t> dims = scan_inputs[i]->shape().dimensions();
      dims.erase(dims.begin() + in_axes[i]);
      scope[body_g->input(states + i).name()] =
          pe.Full(scan_inputs[i]->shape().element_type(), dims, 0);
    }
    MLTUNE_ASSIGN(outs, n.importer().ConvertGraph(*body_g, pe, std::move(scope)));
    for (int64_t i = 0; i < scan_outs; ++i) out_shapes.push_back(outs[states + i]->shape());
    probe.computation->set_root(pe.Tuple({}));
    (void)b.module().RemoveComputation(probe.computation);
  }
  for (int64_t i = 0; i < scan_outs; ++i) {
    std::vector<int64_t> dims = out_shapes[i].dimensions();
    MLTUNE_ASSIGN(axis, n.NormalizeAxis(out_axes[i], out_shapes[i].rank() + 1));
    out_axes[i] = axis;
    dims.insert(dims.begin() + axis, length);
    init.push_back(b.Full(out_shapes[i].element_type(), dims, 0));
  }
  for (Instruction* x : scan_inputs) init.push_back(x);
  for (const auto& [name, instr] : captures) init.push_back(instr);
  const int64_t first_out = 1 + states, first_in = first_out + scan_outs,
                first_capture = first_in + num_scan_inputs;

  WhileParts parts;
  parts.keep_going = [&](Emitter& e, std::vector<Instruction*> s) -> absl::StatusOr<Instruction*> {
    return e.Compare(ComparisonDirection::kLt, s[0],
                     e.Scalar(PrimitiveType::kS64, static_cast<double>(length)));
  };
  parts.make_body = [&](Emitter& e,
                        std::vector<Instruction*> s) -> absl::StatusOr<std::vector<Instruction*>> {
    // Reverse directions read and write row length - 1 - i.
    MLTUNE_ASSIGN(reversed,
                  e.Binary(Opcode::kSubtract,
                           e.Scalar(PrimitiveType::kS64, static_cast<double>(length - 1)), s[0]));
    Scope scope;
    for (size_t i = 0; i < captures.size(); ++i) scope[captures[i].first] = s[first_capture + i];
    for (int64_t i = 0; i < states; ++i) scope[body_g->input(i).name()] = s[1 + i];
    for (int64_t i = 0; i < num_scan_inputs; ++i) {
      MLTUNE_ASSIGN(row, ReadRow(e, s[first_in + i], in_dirs[i] ? reversed : s[0], in_axes[i]));
      scope[body_g->input(states + i).name()] = row;
    }
    MLTUNE_ASSIGN(outs, n.importer().ConvertGraph(*body_g, e, std::move(scope)));
    std::vector<Instruction*> next;
    for (int64_t i = 0; i < states; ++i) next.push_back(outs[i]);
    for (int64_t i = 0; i < scan_outs; ++i) {
      MLTUNE_ASSIGN(w, WriteRow(e, s[first_out + i], outs[states + i],
                                out_dirs[i] ? reversed : s[0], out_axes[i]));
      next.push_back(w);
    }
    for (int64_t i = 0; i < num_scan_inputs; ++i) next.push_back(s[first_in + i]);
    for (size_t i = 0; i < captures.size(); ++i) next.push_back(s[first_capture + i]);
    return next;
  };
  MLTUNE_ASSIGN(final_state, EmitWhile(n, init, parts));
  std::vector<Instruction*> outs;
  for (int64_t i = 0; i < states + scan_outs; ++i) outs.push_back(final_state[1 + i]);
  return outs;
}

}  // namespace

void RegisterControlOps(OpRegistry& r) {
  r.Register("If", If, {0});
  r.Register("Loop", Loop, {0, 1});
  r.Register("Scan", Scan);
}

}  // namespace mltune::ir::onnx
