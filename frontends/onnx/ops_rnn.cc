// Recurrent ops: RNN, GRU and LSTM. The sequence length is static, so the time loop is unrolled:
// the input projection X·W^T is one dot over all steps, then each step does H·R^T and the gates.
#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontends/onnx/converter.h"

namespace mltune::ir::onnx {
namespace {

enum class Cell { kRnn, kGru, kLstm };

// Operands of one shape (cannot fail).
Instruction* Bin(Emitter& b, Opcode op, Instruction* x, Instruction* y) {
  return b.Must(b.Add(op, {x, y}), x);
}

struct Activation {
  std::string name;  // lower case
  float alpha = 0;
  float beta = 0;
};

// Whether the activation reads alpha and beta, and their defaults (those of the ONNX ops).
struct ActivationInfo {
  const char* name;
  bool alpha, beta;
  float alpha_default, beta_default;
};
constexpr ActivationInfo kActivations[] = {
    {"relu", false, false, 0, 0},         {"tanh", false, false, 0, 0},
    {"sigmoid", false, false, 0, 0},      {"affine", true, true, 1, 0},
    {"leakyrelu", true, false, 0.01f, 0}, {"thresholdedrelu", true, false, 1, 0},
    {"scaledtanh", true, true, 1, 1},     {"hardsigmoid", true, true, 0.2f, 0.5f},
    {"elu", true, false, 1, 0},           {"softsign", false, false, 0, 0},
    {"softplus", false, false, 0, 0},
};

// The activations of all directions (per_direction of them each). Alphas and betas are consumed
// in order by the activations that take them, as onnxruntime does; missing ones get defaults.
absl::StatusOr<std::vector<Activation>> ParseActivations(NodeContext& n,
                                                         const std::vector<std::string>& defaults,
                                                         int64_t directions) {
  const size_t per_direction = defaults.size();
  std::vector<std::string> names;
  if (const ::onnx::AttributeProto* a = n.FindAttr("activations")) {
    for (const std::string& s : a->strings()) names.push_back(s);
  }
  if (names.empty()) names = defaults;
  // One set for a bidirectional node applies to both directions.
  if (names.size() == per_direction && directions == 2) {
    std::vector<std::string> twice = names;
    twice.insert(twice.end(), names.begin(), names.end());
    names = twice;
  }
  if (names.size() != per_direction * static_cast<size_t>(directions)) {
    return n.Error(absl::StrCat("activations has ", names.size(), " entries, expected ",
                                per_direction * directions));
  }
  MLTUNE_ASSIGN(alphas, n.attr_floats("activation_alpha", std::vector<float>{}));
  MLTUNE_ASSIGN(betas, n.attr_floats("activation_beta", std::vector<float>{}));
  size_t next_alpha = 0, next_beta = 0;
  std::vector<Activation> out;
  for (const std::string& name : names) {
    Activation act;
    act.name = name;
    std::transform(act.name.begin(), act.name.end(), act.name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const ActivationInfo* info = nullptr;
    for (const ActivationInfo& i : kActivations) {
      if (act.name == i.name) info = &i;
    }
    if (info == nullptr) return n.Unsupported(absl::StrCat("activation '", name, "'"));
    if (info->alpha) {
      act.alpha = next_alpha < alphas.size() ? alphas[next_alpha++] : info->alpha_default;
    }
    if (info->beta) {
      act.beta = next_beta < betas.size() ? betas[next_beta++] : info->beta_default;
    }
    out.push_back(act);
  }
  return out;
}

Instruction* Apply(Emitter& b, const Activation& a, Instruction* x) {
  auto c = [&](double v) { return b.Full(x, v); };
  auto mul = [&](Instruction* u, Instruction* v) { return Bin(b, Opcode::kMultiply, u, v); };
  auto sel = [&](Instruction* p, Instruction* u, Instruction* v) {
    return b.Must(b.Add(Opcode::kSelect, {p, u, v}), u);
  };
  auto cmp = [&](ComparisonDirection d, Instruction* u, Instruction* v) {
    return b.Must(b.Compare(d, u, v), u);
  };
  const std::string& f = a.name;
  if (f == "relu") return Bin(b, Opcode::kMaximum, x, c(0));
  if (f == "tanh") return b.Unary(Opcode::kTanh, x);
  if (f == "sigmoid") return b.Unary(Opcode::kLogistic, x);
  if (f == "affine") return Bin(b, Opcode::kAdd, mul(x, c(a.alpha)), c(a.beta));
  if (f == "leakyrelu") {
    return sel(cmp(ComparisonDirection::kGe, x, c(0)), x, mul(x, c(a.alpha)));
  }
  if (f == "thresholdedrelu") return sel(cmp(ComparisonDirection::kGt, x, c(a.alpha)), x, c(0));
  if (f == "scaledtanh") return mul(c(a.alpha), b.Unary(Opcode::kTanh, mul(x, c(a.beta))));
  if (f == "hardsigmoid") {
    Instruction* y = Bin(b, Opcode::kAdd, mul(x, c(a.alpha)), c(a.beta));
    return Bin(b, Opcode::kMinimum, Bin(b, Opcode::kMaximum, y, c(0)), c(1));
  }
  if (f == "elu") {
    return sel(cmp(ComparisonDirection::kGe, x, c(0)), x,
               mul(c(a.alpha), b.Unary(Opcode::kExpm1, x)));
  }
  if (f == "softsign") {
    return Bin(b, Opcode::kDivide, x, Bin(b, Opcode::kAdd, c(1), b.Unary(Opcode::kAbs, x)));
  }
  // softplus (ParseActivations admits no other name)
  return b.Unary(Opcode::kLog1p, b.Unary(Opcode::kExp, x));
}

// Row d of a [directions, ...] tensor, without its leading dimension.
Instruction* Direction(Emitter& b, Instruction* x, int64_t d) {
  std::vector<int64_t> dims = x->shape().dimensions();
  dims.erase(dims.begin());
  return b.Reshape(b.SliceDim(x, 0, d, d + 1), dims);
}

// Columns [start, start + width) of a [batch, n] matrix.
Instruction* Cols(Emitter& b, Instruction* x, int64_t start, int64_t width) {
  return b.SliceDim(x, 1, start, start + width);
}

// x [m, k] · w^T for w [n, k]: [m, n].
absl::StatusOr<Instruction*> DotT(Emitter& b, Instruction* x, Instruction* w) {
  DotDimensionNumbers dn;
  dn.lhs_contracting_dimensions = {1};
  dn.rhs_contracting_dimensions = {1};
  return b.Dot(x, w, dn);
}

absl::Status CheckDims(NodeContext& n, Instruction* x, const char* what,
                       const std::vector<int64_t>& want) {
  if (x->shape().dimensions() == want) return absl::OkStatus();
  return n.Error(absl::StrCat(what, " has shape ", x->shape().ToString(false), ", expected [",
                              absl::StrJoin(want, ","), "]"));
}

Outputs Recurrent(NodeContext& n, Cell cell) {
  MLTUNE_ASSIGN(x_in, n.required_input(0));
  MLTUNE_ASSIGN(w, n.required_input(1));
  MLTUNE_ASSIGN(r, n.required_input(2));
  Emitter& b = n.b();
  const int64_t max_outputs = cell == Cell::kLstm ? 3 : 2;
  if (n.output_count() > max_outputs) {
    return n.Error(absl::StrCat("has ", n.output_count(), " outputs, at most ", max_outputs));
  }
  const int64_t gates = cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 3 : 4;
  MLTUNE_ASSIGN(layout, n.opset() >= 14 ? n.attr_int("layout", 0) : absl::StatusOr<int64_t>(0));
  if (layout != 0 && layout != 1) {
    return n.Error(absl::StrCat("layout must be 0 or 1, got ", layout));
  }
  MLTUNE_ASSIGN(direction, n.attr_string("direction", "forward"));
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") {
    return n.Error(
        absl::StrCat("direction must be forward, reverse or bidirectional, got '", direction, "'"));
  }
  const int64_t dirs = direction == "bidirectional" ? 2 : 1;
  if (x_in->shape().rank() != 3 || w->shape().rank() != 3 || r->shape().rank() != 3) {
    return n.Error(absl::StrCat("X, W and R must have rank 3, got ", x_in->shape().ToString(false),
                                ", ", w->shape().ToString(false), ", ",
                                r->shape().ToString(false)));
  }
  const PrimitiveType type = x_in->shape().element_type();
  if (!IsFloatingPoint(type)) {
    return n.Unsupported(absl::StrCat("element type ", std::string(PrimitiveTypeName(type))));
  }
  // Time-major from here on: [seq, batch, input].
  Instruction* x = layout == 0 ? x_in : b.Transpose(x_in, {1, 0, 2});
  const int64_t seq = x->shape().dimensions(0), batch = x->shape().dimensions(1);
  const int64_t input = x->shape().dimensions(2), hidden = r->shape().dimensions(2);
  if (n.has_attr("hidden_size")) {
    MLTUNE_ASSIGN(hs, n.attr_int("hidden_size"));
    if (hs != hidden) {
      return n.Error(
          absl::StrCat("hidden_size is ", hs, " but R has shape ", r->shape().ToString(false)));
    }
  }
  const int64_t gh = gates * hidden;
  if (absl::Status s = CheckDims(n, w, "W", {dirs, gh, input}); !s.ok()) return s;
  if (absl::Status s = CheckDims(n, r, "R", {dirs, gh, hidden}); !s.ok()) return s;
  for (Instruction* v : {w, r}) {
    if (v->shape().element_type() != type) return n.Error("X, W and R must have one type");
  }

  Instruction* bias = n.input(3);
  if (bias != nullptr) {
    if (absl::Status s = CheckDims(n, bias, "B", {dirs, 2 * gh}); !s.ok()) return s;
    bias = b.Convert(bias, type);
  }
  // Batch rows still running at step t: t < sequence_lens[row].
  Instruction* lens = n.input(4);
  if (lens != nullptr) {
    if (absl::Status s = CheckDims(n, lens, "sequence_lens", {batch}); !s.ok()) return s;
    lens = b.Convert(lens, PrimitiveType::kS64);
  }
  // Initial states as [directions, batch, hidden].
  auto initial_state = [&](int64_t i, const char* what) -> absl::StatusOr<Instruction*> {
    Instruction* s = n.input(i);
    if (s == nullptr) return b.Full(type, {dirs, batch, hidden}, 0);
    std::vector<int64_t> want = layout == 0 ? std::vector<int64_t>{dirs, batch, hidden}
                                            : std::vector<int64_t>{batch, dirs, hidden};
    if (absl::Status st = CheckDims(n, s, what, want); !st.ok()) return st;
    s = b.Convert(s, type);
    return layout == 0 ? s : b.Transpose(s, {1, 0, 2});
  };
  MLTUNE_ASSIGN(h0, initial_state(5, "initial_h"));
  Instruction* c0 = nullptr;
  Instruction* peep = nullptr;
  if (cell == Cell::kLstm) {
    MLTUNE_ASSIGN(c, initial_state(6, "initial_c"));
    c0 = c;
    peep = n.input(7);
    if (peep != nullptr) {
      if (absl::Status s = CheckDims(n, peep, "P", {dirs, 3 * hidden}); !s.ok()) return s;
      peep = b.Convert(peep, type);
    }
  }

  std::vector<std::string> default_acts;
  if (cell == Cell::kRnn) default_acts = {"Tanh"};
  if (cell == Cell::kGru) default_acts = {"Sigmoid", "Tanh"};
  if (cell == Cell::kLstm) default_acts = {"Sigmoid", "Tanh", "Tanh"};
  MLTUNE_ASSIGN(acts, ParseActivations(n, default_acts, dirs));
  std::optional<float> clip;
  if (n.has_attr("clip")) {
    MLTUNE_ASSIGN(cv, n.attr_float("clip"));
    clip = cv;
  }
  MLTUNE_ASSIGN(linear_before_reset, cell == Cell::kGru ? n.attr_int("linear_before_reset", 0)
                                                        : absl::StatusOr<int64_t>(0));
  MLTUNE_ASSIGN(input_forget,
                cell == Cell::kLstm ? n.attr_int("input_forget", 0) : absl::StatusOr<int64_t>(0));

  // Clip (on the input of activations), then the activation.
  auto activate = [&](const Activation& a, Instruction* v) {
    if (clip.has_value()) {
      v = Bin(b, Opcode::kMinimum, Bin(b, Opcode::kMaximum, v, b.Full(v, -*clip)),
              b.Full(v, *clip));
    }
    return Apply(b, a, v);
  };
  auto add = [&](Instruction* u, Instruction* v) { return Bin(b, Opcode::kAdd, u, v); };
  auto mul = [&](Instruction* u, Instruction* v) { return Bin(b, Opcode::kMultiply, u, v); };
  // A [hidden] vector broadcast over the batch.
  auto rows = [&](Instruction* v) { return b.Broadcast(v, {batch, hidden}, {1}); };

  const size_t acts_per_dir = default_acts.size();
  std::vector<Instruction*> y_dirs, h_dirs, c_dirs;
  for (int64_t d = 0; d < dirs; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    const Activation* act = &acts[d * acts_per_dir];
    Instruction* wd = Direction(b, w, d);
    Instruction* rd = Direction(b, r, d);
    // The input projection of every step at once: [seq, batch, gates * hidden].
    MLTUNE_ASSIGN(xw2, DotT(b, b.Reshape(x, {seq * batch, input}), wd));
    Instruction* xw = b.Reshape(xw2, {seq, batch, gh});
    Instruction* rbh = nullptr;  // GRU's Rbh when it goes inside the reset gate's product
    if (bias != nullptr) {
      Instruction* bd = Direction(b, bias, d);
      Instruction* wb = b.SliceDim(bd, 0, 0, gh);
      Instruction* rb = b.SliceDim(bd, 0, gh, 2 * gh);
      Instruction* folded = add(wb, rb);
      if (cell == Cell::kGru && linear_before_reset != 0) {
        rbh = b.SliceDim(rb, 0, 2 * hidden, gh);
        MLTUNE_ASSIGN(
            rb_zr, b.Concatenate({b.SliceDim(rb, 0, 0, 2 * hidden), b.Full(type, {hidden}, 0)}, 0));
        folded = add(wb, rb_zr);
      }
      xw = add(xw, b.Broadcast(folded, {seq, batch, gh}, {2}));
    }
    Instruction* h = Direction(b, h0, d);
    Instruction* c = c0 != nullptr ? Direction(b, c0, d) : nullptr;
    Instruction *pi = nullptr, *po = nullptr, *pf = nullptr;
    if (peep != nullptr) {
      Instruction* pd = Direction(b, peep, d);
      pi = rows(b.SliceDim(pd, 0, 0, hidden));
      po = rows(b.SliceDim(pd, 0, hidden, 2 * hidden));
      pf = rows(b.SliceDim(pd, 0, 2 * hidden, 3 * hidden));
    }
    Instruction* r_zr = cell == Cell::kGru ? b.SliceDim(rd, 0, 0, 2 * hidden) : nullptr;
    Instruction* r_h = cell == Cell::kGru ? b.SliceDim(rd, 0, 2 * hidden, gh) : nullptr;
    Instruction* zeros = b.Full(type, {batch, hidden}, 0);
    std::vector<Instruction*> ys(seq);
    for (int64_t step = 0; step < seq; ++step) {
      const int64_t t = reverse ? seq - 1 - step : step;
      Instruction* xt = b.Reshape(b.SliceDim(xw, 0, t, t + 1), {batch, gh});
      Instruction* h_new = nullptr;
      Instruction* c_new = nullptr;
      if (cell == Cell::kRnn) {
        MLTUNE_ASSIGN(hr, DotT(b, h, rd));
        h_new = activate(act[0], add(xt, hr));
      } else if (cell == Cell::kGru) {
        MLTUNE_ASSIGN(hzr, DotT(b, h, r_zr));
        Instruction* z = activate(act[0], add(Cols(b, xt, 0, hidden), Cols(b, hzr, 0, hidden)));
        Instruction* rg =
            activate(act[0], add(Cols(b, xt, hidden, hidden), Cols(b, hzr, hidden, hidden)));
        Instruction* pre = nullptr;
        if (linear_before_reset != 0) {
          MLTUNE_ASSIGN(hh, DotT(b, h, r_h));
          if (rbh != nullptr) hh = add(hh, rows(rbh));
          pre = add(Cols(b, xt, 2 * hidden, hidden), mul(rg, hh));
        } else {
          MLTUNE_ASSIGN(hh, DotT(b, mul(rg, h), r_h));
          pre = add(Cols(b, xt, 2 * hidden, hidden), hh);
        }
        Instruction* cand = activate(act[1], pre);
        h_new = add(mul(Bin(b, Opcode::kSubtract, b.Full(z, 1), z), cand), mul(z, h));
      } else {
        MLTUNE_ASSIGN(hr, DotT(b, h, rd));
        Instruction* g = add(xt, hr);
        Instruction* gi = Cols(b, g, 0, hidden);
        Instruction* go = Cols(b, g, hidden, hidden);
        Instruction* gf = Cols(b, g, 2 * hidden, hidden);
        Instruction* gc = Cols(b, g, 3 * hidden, hidden);
        if (pi != nullptr) {
          gi = add(gi, mul(pi, c));
          gf = add(gf, mul(pf, c));
        }
        Instruction* i = activate(act[0], gi);
        // input_forget couples the gates: f = 1 - i.
        Instruction* f =
            input_forget != 0 ? Bin(b, Opcode::kSubtract, b.Full(i, 1), i) : activate(act[0], gf);
        Instruction* cand = activate(act[1], gc);
        c_new = add(mul(f, c), mul(i, cand));
        if (po != nullptr) go = add(go, mul(po, c_new));
        Instruction* o = activate(act[0], go);
        h_new = mul(o, Apply(b, act[2], c_new));
      }
      if (lens != nullptr) {
        // Past a row's length its state stays and its output is 0.
        MLTUNE_ASSIGN(running, b.Compare(ComparisonDirection::kGt, lens,
                                         b.Scalar(PrimitiveType::kS64, static_cast<double>(t))));
        Instruction* mask = b.Broadcast(running, {batch, hidden}, {0});
        MLTUNE_ASSIGN(y, b.Select(mask, h_new, zeros));
        MLTUNE_ASSIGN(hs, b.Select(mask, h_new, h));
        ys[t] = y;
        h = hs;
        if (c_new != nullptr) {
          MLTUNE_ASSIGN(cs, b.Select(mask, c_new, c));
          c = cs;
        }
      } else {
        ys[t] = h_new;
        h = h_new;
        c = c_new;
      }
    }
    if (n.wants_output(0)) {
      for (Instruction*& y : ys) y = b.Reshape(y, {1, 1, batch, hidden});
      if (ys.empty()) {
        y_dirs.push_back(b.Full(type, {0, 1, batch, hidden}, 0));
      } else {
        MLTUNE_ASSIGN(yd, b.Concatenate(ys, 0));
        y_dirs.push_back(yd);
      }
    }
    h_dirs.push_back(b.Reshape(h, {1, batch, hidden}));
    if (c != nullptr) c_dirs.push_back(b.Reshape(c, {1, batch, hidden}));
  }

  std::vector<Instruction*> outs(n.output_count(), nullptr);
  if (n.wants_output(0)) {
    MLTUNE_ASSIGN(y, b.Concatenate(y_dirs, 1));  // [seq, dirs, batch, hidden]
    outs[0] = layout == 0 ? y : b.Transpose(y, {2, 0, 1, 3});
  }
  auto final_state = [&](std::vector<Instruction*>& parts) -> absl::StatusOr<Instruction*> {
    MLTUNE_ASSIGN(s, b.Concatenate(parts, 0));  // [dirs, batch, hidden]
    return layout == 0 ? s : b.Transpose(s, {1, 0, 2});
  };
  if (n.wants_output(1)) {
    MLTUNE_ASSIGN(yh, final_state(h_dirs));
    outs[1] = yh;
  }
  if (n.wants_output(2)) {
    MLTUNE_ASSIGN(yc, final_state(c_dirs));
    outs[2] = yc;
  }
  return outs;
}

}  // namespace

void RegisterRnnOps(OpRegistry& r) {
  r.Register("RNN", [](NodeContext& n) { return Recurrent(n, Cell::kRnn); });
  r.Register("GRU", [](NodeContext& n) { return Recurrent(n, Cell::kGru); });
  r.Register("LSTM", [](NodeContext& n) { return Recurrent(n, Cell::kLstm); });
}

}  // namespace mltune::ir::onnx
