// Resize and Upsample. Every mode ONNX defines is separable, so each resized axis becomes a dot
// with a constant [out, in] weight matrix built here from the spec's 1-D interpolation rule.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "frontends/onnx/converter.h"

namespace mltune::ir::onnx {
namespace {

struct ResizeMode {
  std::string mode = "nearest";                // nearest, linear, cubic
  std::string transform = "half_pixel";        // coordinate_transformation_mode
  std::string nearest = "round_prefer_floor";  // nearest_mode
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0;
};

// The source coordinate of output index `o` on an axis of `in` elements resized by `scale`. As
// the reference, the output width in the formulas is scale * in, unrounded.
double SourceCoordinate(const ResizeMode& m, double o, int64_t in, double scale, double roi_start,
                        double roi_end) {
  const std::string& t = m.transform;
  const double out = scale * in;
  if (t == "align_corners") return out == 1 ? 0 : o * (in - 1) / (out - 1);
  if (t == "asymmetric") return o / scale;
  if (t == "pytorch_half_pixel") return out == 1 ? -0.5 : (o + 0.5) / scale - 0.5;
  if (t == "tf_half_pixel_for_nn") return (o + 0.5) / scale;
  if (t == "tf_crop_and_resize") {
    if (out == 1) return 0.5 * (roi_start + roi_end) * (in - 1);
    return roi_start * (in - 1) + o * (roi_end - roi_start) * (in - 1) / (out - 1);
  }
  if (t == "half_pixel_symmetric") {
    const double adjustment = std::floor(out) / out;
    const double offset = in / 2.0 * (1 - adjustment);
    return offset + (o + 0.5) / scale - 0.5;
  }
  return (o + 0.5) / scale - 0.5;  // half_pixel
}

std::vector<double> Coefficients(const ResizeMode& m, double ratio, bool integral) {
  if (m.mode == "nearest") {
    if (integral) return {0, 1};
    if (m.nearest == "round_prefer_ceil") return {double(ratio < 0.5), double(ratio >= 0.5)};
    if (m.nearest == "floor") return {1, 0};
    if (m.nearest == "ceil") return {0, 1};
    return {double(ratio <= 0.5), double(ratio > 0.5)};
  }
  if (m.mode == "linear") return {1 - ratio, ratio};
  const double a = m.cubic_a, r = ratio, s = 1 - ratio;
  return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
          ((a + 2) * r - (a + 3)) * r * r + 1, ((a + 2) * s - (a + 3)) * s * s + 1,
          ((a * (s + 1) - 5 * a) * (s + 1) + 8 * a) * (s + 1) - 4 * a};
}

// The [out, in] matrix of one axis (row o: the weights of the inputs that make output o), and
// which outputs fall outside the input (tf_crop_and_resize extrapolates there).
void AxisWeights(const ResizeMode& m, int64_t in, int64_t out, double scale, double roi_start,
                 double roi_end, std::vector<double>& w, std::vector<bool>& inside) {
  w.assign(out * in, 0);
  inside.assign(out, true);
  const int n = m.mode == "cubic" ? 4 : 2;
  const int64_t pad = (n + 1) / 2;
  for (int64_t o = 0; o < out; ++o) {
    const double x = SourceCoordinate(m, o, in, scale, roi_start, roi_end);
    if (m.transform == "tf_crop_and_resize" && (x < 0 || x > in - 1)) {
      inside[o] = false;
      continue;
    }
    const double fl = std::floor(x);
    const bool integral = x == fl;
    const double ratio = integral ? 1 : x - fl;
    std::vector<double> c = Coefficients(m, ratio, integral);
    // The n source points closest to x (ties to the lower index), as the reference pads the
    // input by `pad` copies of its edge values.
    std::vector<int64_t> candidates;
    const int64_t lo = std::max<int64_t>(-pad, static_cast<int64_t>(fl) - n - 1);
    const int64_t hi = std::min<int64_t>(in + pad - 1, static_cast<int64_t>(fl) + n + 1);
    for (int64_t i = lo; i <= hi; ++i) candidates.push_back(i);
    std::stable_sort(candidates.begin(), candidates.end(), [&](int64_t a, int64_t b) {
      const double da = std::abs(x - a), db = std::abs(x - b);
      return da != db ? da < db : a < b;
    });
    candidates.resize(std::min<size_t>(n, candidates.size()));
    std::sort(candidates.begin(), candidates.end());
    if (m.exclude_outside) {
      double sum = 0;
      for (size_t k = 0; k < candidates.size(); ++k) {
        if (candidates[k] < 0 || candidates[k] >= in) c[k] = 0;
        sum += c[k];
      }
      if (sum != 0) {
        for (double& v : c) v /= sum;
      }
    }
    for (size_t k = 0; k < candidates.size(); ++k) {
      const int64_t src = std::clamp<int64_t>(candidates[k], 0, in - 1);
      w[o * in + src] += c[k];
    }
  }
}

absl::StatusOr<Instruction*> ResizeAxes(NodeContext& n, Instruction* x, const ResizeMode& m,
                                        const std::vector<double>& scales,
                                        const std::vector<int64_t>& sizes,
                                        const std::vector<double>& roi) {
  Emitter& b = n.b();
  const int64_t rank = x->shape().rank();
  const PrimitiveType type = x->shape().element_type();
  const bool floating = IsFloatingPoint(type);
  const PrimitiveType compute = floating ? type : PrimitiveType::kF64;
  Instruction* y = b.Convert(x, compute);
  std::vector<std::vector<bool>> inside_by_axis(rank);
  bool extrapolates = false;
  for (int64_t a = 0; a < rank; ++a) {
    const int64_t in = x->shape().dimensions(a), out = sizes[a];
    const double roi_start = roi.size() == size_t(2 * rank) ? roi[a] : 0;
    const double roi_end = roi.size() == size_t(2 * rank) ? roi[a + rank] : 1;
    const bool crop = m.transform == "tf_crop_and_resize" && (roi_start != 0 || roi_end != 1);
    if (in == out && scales[a] == 1 && !crop) continue;
    if (in == 0) return n.Error(absl::StrCat("cannot resize axis ", a, " of extent 0"));
    std::vector<double> w;
    std::vector<bool> inside;
    AxisWeights(m, in, out, scales[a], roi_start, roi_end, w, inside);
    MLTUNE_ASSIGN(lw, n.NewLiteral(Shape(compute, {out, in})));
    for (int64_t i = 0; i < out * in; ++i) lw.SetFromDouble(i, w[i]);
    DotDimensionNumbers dn;
    dn.lhs_contracting_dimensions = {a};
    dn.rhs_contracting_dimensions = {1};
    MLTUNE_ASSIGN(dot, b.Dot(y, b.Constant(std::move(lw)), dn));
    // The resized axis comes out last: move it back to `a`.
    std::vector<int64_t> perm;
    for (int64_t i = 0; i < rank; ++i) {
      perm.push_back(i < a ? i : i == a ? rank - 1 : i - 1);
    }
    y = b.Transpose(dot, perm);
    for (bool v : inside) extrapolates |= !v;
    inside_by_axis[a] = std::move(inside);
  }
  if (extrapolates) {
    const std::vector<int64_t>& dims = y->shape().dimensions();
    MLTUNE_ASSIGN(mask, n.NewLiteral(Shape(PrimitiveType::kPred, dims)));
    std::vector<int64_t> index(rank, 0);
    for (int64_t i = 0; i < mask.element_count(); ++i) {
      bool ok = true;
      for (int64_t a = 0; a < rank; ++a) {
        if (!inside_by_axis[a].empty() && !inside_by_axis[a][index[a]]) ok = false;
      }
      mask.Set<uint8_t>(i, ok);
      for (int64_t a = rank - 1; a >= 0; --a) {
        if (++index[a] < dims[a]) break;
        index[a] = 0;
      }
    }
    MLTUNE_ASSIGN(s, b.Select(b.Constant(std::move(mask)), y, b.Full(y, m.extrapolation)));
    y = s;
  }
  if (!floating) {
    y = b.Convert(b.Unary(Opcode::kRoundNearestEven, y), type);
  }
  return y;
}

Outputs ResizeOrUpsample(NodeContext& n, bool upsample) {
  MLTUNE_ASSIGN(x, n.required_input(0));
  const int64_t rank = x->shape().rank();
  ResizeMode m;
  MLTUNE_ASSIGN(mode, n.attr_string("mode", "nearest"));
  m.mode = mode;
  if (m.mode != "nearest" && m.mode != "linear" && m.mode != "cubic" && m.mode != "bilinear") {
    return n.Error(absl::StrCat("mode must be nearest, linear or cubic, got '", m.mode, "'"));
  }
  if (m.mode == "bilinear") m.mode = "linear";
  std::vector<double> scales, roi;
  std::vector<int64_t> sizes;
  if (upsample || n.opset() < 11) {
    // Upsample and Resize-10: asymmetric coordinates, nearest rounds down.
    m.transform = "asymmetric";
    m.nearest = "floor";
    if (upsample && n.opset() < 9) {
      MLTUNE_ASSIGN(s, n.attr_floats("scales"));
      scales.assign(s.begin(), s.end());
    } else {
      MLTUNE_ASSIGN(s, n.constant_doubles(1));
      scales = s;
    }
  } else {
    MLTUNE_ASSIGN(t, n.attr_string("coordinate_transformation_mode", "half_pixel"));
    MLTUNE_ASSIGN(near, n.attr_string("nearest_mode", "round_prefer_floor"));
    MLTUNE_ASSIGN(a, n.attr_float("cubic_coeff_a", -0.75f));
    MLTUNE_ASSIGN(ex, n.attr_int("exclude_outside", 0));
    MLTUNE_ASSIGN(ev, n.attr_float("extrapolation_value", 0.0f));
    if (n.has_attr("keep_aspect_ratio_policy") || n.has_attr("antialias") || n.has_attr("axes")) {
      return n.Unsupported("opset-18 attributes (axes, antialias, keep_aspect_ratio_policy)");
    }
    m.transform = t;
    m.nearest = near;
    m.cubic_a = a;
    m.exclude_outside = ex != 0;
    m.extrapolation = ev;
    if (n.has_input(1) && m.transform == "tf_crop_and_resize") {
      MLTUNE_ASSIGN(r, n.constant_doubles(1));
      roi = r;
    }
    if (n.has_input(2)) {
      MLTUNE_ASSIGN(s, n.constant_doubles(2));
      scales = s;
    }
    if (n.has_input(3)) {
      MLTUNE_ASSIGN(s, n.constant_ints(3));
      sizes = s;
    }
    if (!scales.empty() && !sizes.empty()) return n.Error("give scales or sizes, not both");
  }
  if (sizes.empty()) {
    if (static_cast<int64_t>(scales.size()) != rank) {
      return n.Error(absl::StrCat("scales has ", scales.size(), " entries for rank ", rank));
    }
    for (int64_t a = 0; a < rank; ++a) {
      if (!(scales[a] > 0)) return n.Error("scales must be positive");
      const double size = std::floor(x->shape().dimensions(a) * scales[a]);
      if (!(size < 9.0e18)) return n.Error("scales make an output dimension overflow int64");
      sizes.push_back(static_cast<int64_t>(size));
    }
  } else {
    if (static_cast<int64_t>(sizes.size()) != rank) {
      return n.Error(absl::StrCat("sizes has ", sizes.size(), " entries for rank ", rank));
    }
    scales.clear();
    for (int64_t a = 0; a < rank; ++a) {
      if (sizes[a] < 0) return n.Error("sizes must not be negative");
      const int64_t in = x->shape().dimensions(a);
      scales.push_back(in == 0 ? 1.0 : static_cast<double>(sizes[a]) / in);
    }
  }
  return One(ResizeAxes(n, x, m, scales, sizes, roi));
}

}  // namespace

void RegisterResizeOps(OpRegistry& r) {
  r.Register("Resize", [](NodeContext& n) { return ResizeOrUpsample(n, false); }, {1, 2, 3});
  r.Register("Upsample", [](NodeContext& n) { return ResizeOrUpsample(n, true); }, {1});
}

}  // namespace mltune::ir::onnx
