// Signal processing: the window generators and DFT. Windows are constants of a size known at
// import; a DFT of a static length is a dot with constant cosine and sine matrices.
#include <cmath>
#include <numbers>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/converter.h"
#include "frontends/onnx/tensor.h"

namespace mltune::ir::onnx {
namespace {

// w[k] = sum_j c_j cos(2 pi j k / N), N = size (periodic) or size - 1 (symmetric).
OpConverter Window(std::vector<double> cosine_terms) {
  return [cosine_terms](NodeContext& n) -> Outputs {
    MLTUNE_ASSIGN(size_v, n.constant_ints(0));
    if (size_v.size() != 1 || size_v[0] < 0) return n.Error("size must be one non-negative value");
    MLTUNE_ASSIGN(periodic, n.attr_int("periodic", 1));
    MLTUNE_ASSIGN(dtype, n.attr_int("output_datatype", 1));
    absl::StatusOr<PrimitiveType> type = ElementTypeFromOnnx(static_cast<int32_t>(dtype));
    if (!type.ok()) return n.Unsupported(std::string(type.status().message()));
    const int64_t size = size_v[0];
    const double len = periodic ? size : size - 1;
    MLTUNE_ASSIGN(w, n.NewLiteral(Shape(*type, {size})));
    for (int64_t k = 0; k < size; ++k) {
      double v = 0;
      for (size_t j = 0; j < cosine_terms.size(); ++j) {
        v += cosine_terms[j] * std::cos(2 * std::numbers::pi * j * k / len);
      }
      w.SetFromDouble(k, v);
    }
    return One(n.b().Constant(std::move(w)));
  };
}

// ONNX DFT: the signal on `axis`, the last dimension holding [real] or [real, imaginary].
Outputs Dft(NodeContext& n) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  MLTUNE_ASSIGN(inverse, n.attr_int("inverse", 0));
  MLTUNE_ASSIGN(onesided, n.attr_int("onesided", 0));
  const int64_t rank = x->shape().rank();
  int64_t axis_attr = 1;
  if (n.has_input(2)) {
    MLTUNE_ASSIGN(a, n.constant_ints(2));
    axis_attr = a.at(0);
  } else {
    MLTUNE_ASSIGN(a, n.attr_int("axis", 1));
    axis_attr = a;
  }
  MLTUNE_ASSIGN(axis, n.NormalizeAxis(axis_attr, rank - 1));
  const int64_t components = x->shape().dimensions(rank - 1);
  if (components != 1 && components != 2) {
    return n.Error("the last dimension must be 1 (real) or 2 (complex)");
  }
  if (onesided && inverse) return n.Unsupported("an inverse one-sided DFT");
  Emitter& b = n.b();
  const int64_t in_len = x->shape().dimensions(axis);
  int64_t length = in_len;
  if (n.has_input(1)) {
    MLTUNE_ASSIGN(l, n.constant_ints(1));
    if (l.size() != 1 || l[0] <= 0) return n.Error("dft_length must be one positive value");
    length = l[0];
  }
  const int64_t out_len = onesided ? length / 2 + 1 : length;
  const PrimitiveType t = x->shape().element_type();
  // The signal is zero-padded or truncated to `length`: rows past in_len are left out.
  const int64_t used = std::min(in_len, length);
  MLTUNE_ASSIGN(cos_m, n.NewLiteral(Shape(t, {used, out_len})));
  MLTUNE_ASSIGN(sin_m, n.NewLiteral(Shape(t, {used, out_len})));
  const double sign = inverse ? 1 : -1;
  const double norm = inverse ? 1.0 / length : 1.0;
  for (int64_t j = 0; j < used; ++j) {
    for (int64_t k = 0; k < out_len; ++k) {
      const double theta = 2 * std::numbers::pi * static_cast<double>((j * k) % length) / length;
      cos_m.SetFromDouble(j * out_len + k, norm * std::cos(theta));
      sin_m.SetFromDouble(j * out_len + k, norm * sign * std::sin(theta));
    }
  }
  Instruction* cm = b.Constant(std::move(cos_m));
  Instruction* sm = b.Constant(std::move(sin_m));
  Instruction* xs = used < in_len ? b.SliceDim(x, axis, 0, used) : x;
  // x = a + ib, w = cos + i sin(sign): y = (a cos - b sin) + i (a sin + b cos).
  std::vector<int64_t> signal_dims = xs->shape().dimensions();
  signal_dims.pop_back();
  Instruction* re = b.Reshape(b.SliceDim(xs, rank - 1, 0, 1), signal_dims);
  DotDimensionNumbers dn;
  dn.lhs_contracting_dimensions = {axis};
  dn.rhs_contracting_dimensions = {0};
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < rank - 1; ++i)
    perm.push_back(i < axis ? i : i == axis ? rank - 2 : i - 1);
  auto apply = [&](Instruction* v, Instruction* m) -> absl::StatusOr<Instruction*> {
    MLTUNE_ASSIGN(d, b.Dot(v, m, dn));
    return b.Transpose(d, perm);
  };
  MLTUNE_ASSIGN(out_re, apply(re, cm));
  MLTUNE_ASSIGN(out_im, apply(re, sm));
  if (components == 2) {
    Instruction* im = b.Reshape(b.SliceDim(xs, rank - 1, 1, 2), signal_dims);
    MLTUNE_ASSIGN(im_sin, apply(im, sm));
    MLTUNE_ASSIGN(im_cos, apply(im, cm));
    MLTUNE_ASSIGN(r2, b.Binary(Opcode::kSubtract, out_re, im_sin));
    MLTUNE_ASSIGN(i2, b.Binary(Opcode::kAdd, out_im, im_cos));
    out_re = r2;
    out_im = i2;
  }
  std::vector<int64_t> last = out_re->shape().dimensions();
  last.push_back(1);
  return One(b.Concatenate({b.Reshape(out_re, last), b.Reshape(out_im, last)}, rank - 1));
}

}  // namespace

void RegisterSignalOps(OpRegistry& r) {
  r.Register("HannWindow", Window({0.5, -0.5}), {0});
  r.Register("HammingWindow", Window({25.0 / 46, -21.0 / 46}), {0});
  r.Register("BlackmanWindow", Window({0.42, -0.5, 0.08}), {0});
  r.Register("DFT", Dft, {1, 2});
}

}  // namespace mltune::ir::onnx
