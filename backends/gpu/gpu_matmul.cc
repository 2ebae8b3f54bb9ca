#include <algorithm>
#include <functional>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/gemm_shape.h"
#include "backends/gpu/gpu_emitter.h"

namespace mltune::backends::gpu::internal {
namespace {

// Whether a dimension order is [batch, feature, spatial...] (NCHW, OIHW), [batch, spatial...,
// feature] (NHWC, OHWI) or neither.
enum class ConvOrder { kOther, kFeatureMajor, kFeatureMinor };
ConvOrder OrderOf(int64_t batch, int64_t feature, const std::vector<int64_t>& spatial) {
  std::vector<int64_t> major = {batch, feature}, minor = {batch};
  major.insert(major.end(), spatial.begin(), spatial.end());
  minor.insert(minor.end(), spatial.begin(), spatial.end());
  minor.push_back(feature);
  auto identity = [](const std::vector<int64_t>& order) {
    for (size_t i = 0; i < order.size(); ++i) {
      if (order[i] != static_cast<int64_t>(i)) return false;
    }
    return true;
  };
  if (identity(major)) return ConvOrder::kFeatureMajor;
  if (identity(minor)) return ConvOrder::kFeatureMinor;
  return ConvOrder::kOther;
}

// Whether a library call can read operand `x` of the kernel's root in place: an f32 kernel input.
bool ReadableInPlace(const Kernel& k, const Instruction* x) {
  if (k.Contains(x) || x->shape().element_type() != PrimitiveType::kF32) return false;
  return std::find(k.inputs.begin(), k.inputs.end(), cpu::BaseValue(x)) != k.inputs.end();
}

ir::WindowDim WindowOf(const Instruction& conv, size_t d) {
  if (conv.window.has_value() && d < conv.window->dims.size()) return conv.window->dims[d];
  return ir::WindowDim{};
}

}  // namespace

std::optional<CudnnLayout> CudnnLayoutOf(const Kernel& k) {
  const Instruction& c = *k.root;
  if (k.kind != KernelKind::kConvolution || c.opcode() != Opcode::kConvolution ||
      !c.conv_dnums.has_value() || c.batch_group_count > 1) {
    return std::nullopt;
  }
  const ir::ConvolutionDimensionNumbers& dn = *c.conv_dnums;
  const size_t ns = dn.input_spatial_dimensions.size();
  if (ns < 1 || ns > 3) return std::nullopt;
  for (const Instruction* i :
       std::initializer_list<const Instruction*>{c.operand(0), c.operand(1), &c}) {
    if (Product(i->shape().dimensions()) == 0) return std::nullopt;
  }
  CudnnLayout l;
  for (size_t d = 0; d < ns; ++d) {
    const ir::WindowDim w = WindowOf(c, d);
    if (w.window_reversal || w.base_dilation > 1 || w.padding_low < 0 || w.padding_high < 0 ||
        w.stride < 1 || w.window_dilation < 1) {
      return std::nullopt;
    }
    l.explicit_pad |= w.padding_low != w.padding_high;
  }
  const ConvOrder xo =
      OrderOf(dn.input_batch_dimension, dn.input_feature_dimension, dn.input_spatial_dimensions);
  const ConvOrder wo = OrderOf(dn.kernel_output_feature_dimension,
                               dn.kernel_input_feature_dimension, dn.kernel_spatial_dimensions);
  const ConvOrder yo =
      OrderOf(dn.output_batch_dimension, dn.output_feature_dimension, dn.output_spatial_dimensions);
  const bool x_ok = !l.explicit_pad && xo != ConvOrder::kOther && ReadableInPlace(k, c.operand(0));
  const bool w_ok = wo != ConvOrder::kOther && ReadableInPlace(k, c.operand(1));
  // x's layout where it is read in place; else OIHW weights read in place pick NCHW.
  l.nhwc = x_ok ? xo == ConvOrder::kFeatureMinor : !(w_ok && wo == ConvOrder::kFeatureMajor);
  const ConvOrder want = l.nhwc ? ConvOrder::kFeatureMinor : ConvOrder::kFeatureMajor;
  l.x_direct = x_ok;
  l.w_direct = w_ok && wo == want;
  l.y_direct = std::find(k.outputs.begin(), k.outputs.end(), &c) != k.outputs.end() &&
               c.shape().element_type() == PrimitiveType::kF32 && yo == want;
  if (!l.x_direct) {
    const std::vector<int64_t>& xd = c.operand(0)->shape().dimensions();
    int64_t elements = Product(xd);
    for (size_t d = 0; d < ns; ++d) {
      const ir::WindowDim w = WindowOf(c, d);
      const int64_t size = xd[static_cast<size_t>(dn.input_spatial_dimensions[d])];
      elements = elements / size * (size + w.padding_low + w.padding_high);
    }
    l.pack_bytes += 4 * elements;
  }
  if (!l.w_direct) l.pack_bytes += 4 * Product(c.operand(1)->shape().dimensions());
  return l;
}

// What the cuBLASLt path of an ungrouped convolution packs: x as im2col unless it is an NHWC
// kernel input under a 1x1 window at stride 1 (ConvolutionMap's a_in_order), the weights unless
// an HWIO kernel input (b_in_order).
int64_t LibraryGemmPackBytes(const Kernel& k) {
  const Instruction& c = *k.root;
  const ir::ConvolutionDimensionNumbers& dn = *c.conv_dnums;
  const cpu::GemmShape s = cpu::GemmShapeOf(c);
  bool pointwise = true;
  for (size_t d = 0; d < dn.kernel_spatial_dimensions.size(); ++d) {
    const ir::WindowDim w = WindowOf(c, d);
    pointwise &=
        c.operand(1)->shape().dimensions()[static_cast<size_t>(dn.kernel_spatial_dimensions[d])] ==
            1 &&
        w.stride == 1 && w.padding_low == 0 && w.padding_high == 0 && w.base_dilation <= 1 &&
        w.window_dilation <= 1;
  }
  const bool nhwc = OrderOf(dn.input_batch_dimension, dn.input_feature_dimension,
                            dn.input_spatial_dimensions) == ConvOrder::kFeatureMinor;
  std::vector<int64_t> hwio = dn.kernel_spatial_dimensions;
  hwio.push_back(dn.kernel_input_feature_dimension);
  hwio.push_back(dn.kernel_output_feature_dimension);
  bool w_in_order = true;
  for (size_t i = 0; i < hwio.size(); ++i) w_in_order &= hwio[i] == static_cast<int64_t>(i);
  int64_t bytes = 0;
  if (!(pointwise && nhwc && ReadableInPlace(k, c.operand(0)))) bytes += 4 * s.batch * s.m * s.k;
  if (!(nhwc && w_in_order && ReadableInPlace(k, c.operand(1)))) bytes += 4 * s.batch * s.k * s.n;
  return bytes;
}

absl::Status GpuEmitter::EmitMatmul() {
  const Instruction* mm = k_.root;
  const PrimitiveType t = mm->shape().element_type();
  if (t != PrimitiveType::kF32 && t != PrimitiveType::kBF16 && t != PrimitiveType::kF16) {
    return absl::UnimplementedError(absl::StrCat(
        "kernel '", k_.name, "': a ", std::string(ir::PrimitiveTypeName(t)), " ",
        std::string(ir::OpcodeName(mm->opcode())), " (f32, bf16 and f16 are generated)"));
  }
  if (Param("impl") >= kCudnnImpl) return EmitCudnnConvolution();
  absl::StatusOr<GemmMap> map = mm->opcode() == Opcode::kDot ? DotMap() : ConvolutionMap();
  if (!map.ok()) return map.status();
  if (Param("impl") > 0) return EmitLibraryGemm(*map);
  return EmitGemm(*map);
}

absl::StatusOr<GpuEmitter::GemmMap> GpuEmitter::DotMap() {
  const Instruction* mm = k_.root;
  const ir::DotDimensionNumbers& dn = *mm->dot_dnums;
  const std::vector<int64_t>& ld = mm->operand(0)->shape().dimensions();
  const std::vector<int64_t>& rd = mm->operand(1)->shape().dimensions();
  auto free_dims = [](size_t rank, const std::vector<int64_t>& batch,
                      const std::vector<int64_t>& contracting) {
    std::vector<int64_t> out;
    for (size_t d = 0; d < rank; ++d) {
      const int64_t di = static_cast<int64_t>(d);
      if (std::find(batch.begin(), batch.end(), di) == batch.end() &&
          std::find(contracting.begin(), contracting.end(), di) == contracting.end()) {
        out.push_back(di);
      }
    }
    return out;
  };
  auto sizes = [](const std::vector<int64_t>& dims, const std::vector<int64_t>& of) {
    std::vector<int64_t> out;
    for (int64_t d : of) out.push_back(dims[static_cast<size_t>(d)]);
    return out;
  };
  // Operand element (batch, free, contracting) as an index: each part placed where the dot's
  // dimension numbers put it.
  auto place = [](size_t rank, const std::vector<int64_t>& where_b, const Idx& b,
                  const std::vector<int64_t>& where_f, const Idx& f,
                  const std::vector<int64_t>& where_c, const Idx& c) {
    Idx idx(rank, "0");
    for (size_t i = 0; i < where_b.size(); ++i) idx[static_cast<size_t>(where_b[i])] = b[i];
    for (size_t i = 0; i < where_f.size(); ++i) idx[static_cast<size_t>(where_f[i])] = f[i];
    for (size_t i = 0; i < where_c.size(); ++i) idx[static_cast<size_t>(where_c[i])] = c[i];
    return idx;
  };
  const std::vector<int64_t> lfree =
      free_dims(ld.size(), dn.lhs_batch_dimensions, dn.lhs_contracting_dimensions);
  const std::vector<int64_t> rfree =
      free_dims(rd.size(), dn.rhs_batch_dimensions, dn.rhs_contracting_dimensions);
  const std::vector<int64_t> bsz = sizes(ld, dn.lhs_batch_dimensions);
  const std::vector<int64_t> msz = sizes(ld, lfree), nsz = sizes(rd, rfree);
  const std::vector<int64_t> ksz = sizes(ld, dn.lhs_contracting_dimensions);
  GemmMap map;
  map.batch = Product(bsz);
  map.m = Product(msz);
  map.n = Product(nsz);
  map.k = Product(ksz);
  map.a = [=](const std::string& g, const std::string& row, const std::string& kk,
              std::string* guard) {
    guard->clear();
    return place(ld.size(), dn.lhs_batch_dimensions, Decompose(g, bsz), lfree, Decompose(row, msz),
                 dn.lhs_contracting_dimensions, Decompose(kk, ksz));
  };
  map.b = [=](const std::string& g, const std::string& kk, const std::string& col) {
    return place(rd.size(), dn.rhs_batch_dimensions, Decompose(g, bsz), rfree, Decompose(col, nsz),
                 dn.rhs_contracting_dimensions, Decompose(kk, ksz));
  };
  auto in_order = [](const std::vector<int64_t>& b, const std::vector<int64_t>& f,
                     const std::vector<int64_t>& s) {
    std::vector<int64_t> order = b;
    order.insert(order.end(), f.begin(), f.end());
    order.insert(order.end(), s.begin(), s.end());
    for (size_t i = 0; i < order.size(); ++i) {
      if (order[i] != static_cast<int64_t>(i)) return false;
    }
    return true;
  };
  map.a_in_order = in_order(dn.lhs_batch_dimensions, lfree, dn.lhs_contracting_dimensions);
  map.b_in_order = in_order(dn.rhs_batch_dimensions, dn.rhs_contracting_dimensions, rfree);
  // The product's dimensions: batch, lhs free, rhs free.
  map.out = [=](const std::string& g, const std::string& row, const std::string& col) {
    Idx idx = Decompose(g, bsz);
    for (const std::string& s : Decompose(row, msz)) idx.push_back(s);
    for (const std::string& s : Decompose(col, nsz)) idx.push_back(s);
    return idx;
  };
  return map;
}

// A convolution as an implicit GEMM (no im2col buffer): per group, rows are (image, output
// position), the contraction (input feature, window position), columns the group's output
// features; the lhs element of a window position outside the input (padding, base dilation's
// holes) is 0.
absl::StatusOr<GpuEmitter::GemmMap> GpuEmitter::ConvolutionMap() {
  const Instruction* mm = k_.root;
  const ir::ConvolutionDimensionNumbers& dn = *mm->conv_dnums;
  const std::vector<int64_t>& ld = mm->operand(0)->shape().dimensions();
  const std::vector<int64_t>& rd = mm->operand(1)->shape().dimensions();
  const std::vector<int64_t>& od = mm->shape().dimensions();
  const size_t ns = dn.input_spatial_dimensions.size();
  std::vector<ir::WindowDim> win(ns);
  if (mm->window.has_value()) {
    for (size_t d = 0; d < ns && d < mm->window->dims.size(); ++d) win[d] = mm->window->dims[d];
  }
  for (const ir::WindowDim& w : win) {
    if (w.window_reversal) {
      return absl::UnimplementedError(
          absl::StrCat("kernel '", k_.name, "': a convolution with window reversal"));
    }
  }
  const int64_t fgroups = std::max<int64_t>(1, mm->feature_group_count);
  const int64_t bgroups = std::max<int64_t>(1, mm->batch_group_count);
  const int64_t groups = fgroups * bgroups;
  const int64_t nb = ld[static_cast<size_t>(dn.input_batch_dimension)] / bgroups;
  const int64_t cg = ld[static_cast<size_t>(dn.input_feature_dimension)] / fgroups;
  const int64_t og = od[static_cast<size_t>(dn.output_feature_dimension)] / groups;
  // The contraction runs over (input feature, window position), the feature minor where it is
  // the input's minor dimension (NHWC): consecutive contraction elements are then adjacent in
  // memory, and HWIO weights are already the GEMM's rhs.
  const bool feature_minor = dn.input_feature_dimension == static_cast<int64_t>(ld.size()) - 1;
  std::vector<int64_t> rows = {nb}, window, xs;
  for (size_t d = 0; d < ns; ++d) {
    rows.push_back(od[static_cast<size_t>(dn.output_spatial_dimensions[d])]);
    window.push_back(rd[static_cast<size_t>(dn.kernel_spatial_dimensions[d])]);
    xs.push_back(ld[static_cast<size_t>(dn.input_spatial_dimensions[d])]);
  }
  std::vector<int64_t> contraction = {cg};
  contraction.insert(feature_minor ? contraction.begin() : contraction.end(), window.begin(),
                     window.end());
  // (input feature, window position...) of a contraction index.
  auto split = [=](const std::string& kk) {
    Idx c = Decompose(kk, contraction);
    if (feature_minor) std::rotate(c.begin(), c.end() - 1, c.end());
    return c;
  };
  GemmMap map;
  map.batch = groups;
  map.m = Product(rows);
  map.k = Product(contraction);
  map.n = og;
  auto dims_in_order = [&](std::vector<int64_t> order) {
    for (size_t i = 0; i < order.size(); ++i) {
      if (order[i] != static_cast<int64_t>(i)) return false;
    }
    return true;
  };
  std::vector<int64_t> in_order = {dn.input_batch_dimension}, w_order, out_order;
  in_order.insert(in_order.end(), dn.input_spatial_dimensions.begin(),
                  dn.input_spatial_dimensions.end());
  in_order.push_back(dn.input_feature_dimension);
  w_order = dn.kernel_spatial_dimensions;
  w_order.push_back(dn.kernel_input_feature_dimension);
  w_order.push_back(dn.kernel_output_feature_dimension);
  out_order = {dn.output_batch_dimension};
  out_order.insert(out_order.end(), dn.output_spatial_dimensions.begin(),
                   dn.output_spatial_dimensions.end());
  out_order.push_back(dn.output_feature_dimension);
  bool pointwise = true;  // a 1x1 window at stride 1 with no padding or dilation
  for (size_t d = 0; d < ns; ++d) {
    const ir::WindowDim& w = win[d];
    pointwise &= window[d] == 1 && w.stride == 1 && w.padding_low == 0 && w.padding_high == 0 &&
                 w.base_dilation <= 1 && w.window_dilation <= 1;
  }
  map.a_in_order = groups == 1 && pointwise && dims_in_order(in_order);
  map.b_in_order = groups == 1 && feature_minor && dims_in_order(w_order);
  map.out_in_order = groups == 1 && dims_in_order(out_order);
  const int64_t m = map.m, n = map.n;
  map.product_offset = [=](const Idx& oi) {
    Idx r = {oi[static_cast<size_t>(dn.output_batch_dimension)]};
    for (int64_t d : dn.output_spatial_dimensions) r.push_back(oi[static_cast<size_t>(d)]);
    const std::string f = oi[static_cast<size_t>(dn.output_feature_dimension)];
    const std::string row = Linear(rows, r);
    if (groups == 1) return absl::StrCat("(", row, ")*", n, "LL + ", f);
    return absl::StrCat("((", f, ")/", og, "LL*", m, "LL + ", row, ")*", n, "LL + (", f, ")%", og,
                        "LL");
  };
  map.a = [=, this](const std::string& g, const std::string& row, const std::string& kk,
                    std::string* guard) {
    const Idx r = Decompose(row, rows), c = split(kk);
    Idx xi(ld.size(), "0");
    xi[static_cast<size_t>(dn.input_batch_dimension)] =
        bgroups == 1 ? r[0] : absl::StrCat("(", g, ")*", nb, " + ", r[0]);
    xi[static_cast<size_t>(dn.input_feature_dimension)] =
        fgroups == 1 ? c[0] : absl::StrCat("(", g, ")*", cg, " + ", c[0]);
    std::vector<std::string> valid;
    for (size_t d = 0; d < ns; ++d) {
      const ir::WindowDim& w = win[d];
      const std::string raw =
          IntVar(absl::StrCat("(", r[1 + d], ")*", w.stride, " - ", w.padding_low, " + (", c[1 + d],
                              ")*", w.window_dilation));
      std::string pos = raw;
      if (w.base_dilation > 1) {
        valid.push_back(absl::StrCat(raw, " >= 0 && ", raw, " % ", w.base_dilation, " == 0"));
        pos = IntVar(absl::StrCat(raw, " / ", w.base_dilation));
      }
      valid.push_back(absl::StrCat(pos, " >= 0 && ", pos, " < ", xs[d]));
      xi[static_cast<size_t>(dn.input_spatial_dimensions[d])] = pos;
    }
    *guard = absl::StrJoin(valid, " && ");
    return xi;
  };
  map.b = [=](const std::string& g, const std::string& kk, const std::string& col) {
    const Idx c = split(kk);
    Idx wi(rd.size(), "0");
    wi[static_cast<size_t>(dn.kernel_input_feature_dimension)] = c[0];
    wi[static_cast<size_t>(dn.kernel_output_feature_dimension)] =
        groups == 1 ? col : absl::StrCat("(", g, ")*", og, " + ", col);
    for (size_t d = 0; d < ns; ++d) {
      wi[static_cast<size_t>(dn.kernel_spatial_dimensions[d])] = c[1 + d];
    }
    return wi;
  };
  map.out = [=](const std::string& g, const std::string& row, const std::string& col) {
    const Idx r = Decompose(row, rows);
    Idx oi(od.size(), "0");
    oi[static_cast<size_t>(dn.output_batch_dimension)] = r[0];
    oi[static_cast<size_t>(dn.output_feature_dimension)] =
        groups == 1 ? col : absl::StrCat("(", g, ")*", og, " + ", col);
    for (size_t d = 0; d < ns; ++d) {
      oi[static_cast<size_t>(dn.output_spatial_dimensions[d])] = r[1 + d];
    }
    return oi;
  };
  return map;
}

absl::Status GpuEmitter::EmitGemm(const GemmMap& map) {
  const Instruction* mm = k_.root;
  const PrimitiveType t = mm->shape().element_type();
  const int64_t tm = Param("tile_m"), tn = Param("tile_n"), tk = Param("tile_k");
  const int64_t rm = Param("thread_m"), rn = Param("thread_n");
  const int64_t threads = (tm / rm) * (tn / rn);
  if (tm % rm != 0 || tn % rn != 0 || threads > 1024 || threads < kWarp) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel '", k_.name, "': tile ", tm, "x", tn, " with thread tile ", rm, "x",
                     rn, " needs ", threads, " threads (", kWarp, " to 1024, whole thread tiles)"));
  }
  const int64_t batch = map.batch, m = map.m, n = map.n, kdim = map.k;
  if ((m + tm - 1) / tm > 65535 || batch > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("kernel '", k_.name, "': ", batch,
                                                   " products of ", m, " rows by tile_m ", tm,
                                                   " exceed the grid's 65,535 blocks in y or z"));
  }
  const Instruction* lhs = mm->operand(0);
  const Instruction* rhs = mm->operand(1);
  std::vector<const Instruction*> others;
  bool mm_output = false;
  for (const Instruction* o : k_.outputs) {
    if (o == mm) mm_output = true;
    if (o != mm) others.push_back(o);
  }

  // The GEMM with its epilogue in registers; where the epilogue reads the product at another
  // element, the product goes to a buffer (the matrix op's own output, or the workspace) and a
  // second launch runs the epilogue.
  for (bool split : {false, true}) {
    program_->launches.clear();
    functions_.clear();
    product_elsewhere_ = false;
    std::vector<GpuArg> args = AllBuffers();
    std::string product_buffer;
    if (split) {
      if (mm_output) {
        const size_t j = static_cast<size_t>(std::find(k_.outputs.begin(), k_.outputs.end(), mm) -
                                             k_.outputs.begin());
        product_buffer = absl::StrCat("out", j);
      } else {
        args.push_back({GpuArg::Kind::kWorkspace, 0});
        product_buffer = "ws0";
        program_->workspaces = {Product(mm->shape().dimensions()) * 4};
      }
    }
    OpenFunction(split ? absl::StrCat(fn_, "_gemm") : fn_, static_cast<int32_t>(threads),
                 {(n + tn - 1) / tn, (m + tm - 1) / tm, batch}, args);
    Line(absl::StrCat("__shared__ float As[", tk, "][", tm + 1, "];"));
    Line(absl::StrCat("__shared__ float Bs[", tk, "][", tn + 1, "];"));
    Line(absl::StrCat("const int64_t g = blockIdx.z, m0 = (int64_t)blockIdx.y * ", tm,
                      ", n0 = (int64_t)blockIdx.x * ", tn, ";"));
    Line(absl::StrCat("const int tx = threadIdx.x % ", tn / rn, ", ty = threadIdx.x / ", tn / rn,
                      ";"));
    Line(absl::StrCat("float acc[", rm, "][", rn, "];"));
    Line("#pragma unroll");
    Open(absl::StrCat("for (int i = 0; i < ", rm, "; ++i) {"));
    Line("#pragma unroll");
    Line(absl::StrCat("for (int j = 0; j < ", rn, "; ++j) acc[i][j] = 0.f;"));
    Close();
    Open(absl::StrCat("for (int64_t k0 = 0; k0 < ", kdim, "LL; k0 += ", tk, ") {"));
    // The tiles: consecutive threads read consecutive contraction elements of the lhs and
    // consecutive columns of the rhs.
    Open(absl::StrCat("for (int e = threadIdx.x; e < ", tm * tk, "; e += ", threads, ") {"));
    Line(absl::StrCat("const int r = e / ", tk, ", c = e % ", tk, ";"));
    Line("float v = 0.f;");
    Open(absl::StrCat("if (m0 + r < ", m, "LL && k0 + c < ", kdim, "LL) {"));
    PushScope();
    Line("const int64_t gm = m0 + r, gk = k0 + c;");
    std::string guard;
    const Idx ai = map.a("g", "gm", "gk", &guard);
    if (!guard.empty()) Open(absl::StrCat("if (", guard, ") {"));
    PushScope();
    Line(absl::StrCat("v = ", Value(lhs, ai), ";"));
    PopScope();
    if (!guard.empty()) Close();
    PopScope();
    Close();
    Line("As[c][r] = v;");
    Close();
    Open(absl::StrCat("for (int e = threadIdx.x; e < ", tk * tn, "; e += ", threads, ") {"));
    Line(absl::StrCat("const int r = e / ", tn, ", c = e % ", tn, ";"));
    Line("float v = 0.f;");
    Open(absl::StrCat("if (k0 + r < ", kdim, "LL && n0 + c < ", n, "LL) {"));
    PushScope();
    Line("const int64_t gk = k0 + r, gn = n0 + c;");
    Line(absl::StrCat("v = ", Value(rhs, map.b("g", "gk", "gn")), ";"));
    PopScope();
    Close();
    Line("Bs[r][c] = v;");
    Close();
    Line("__syncthreads();");
    Line("#pragma unroll");
    Open(absl::StrCat("for (int p = 0; p < ", tk, "; ++p) {"));
    Line(absl::StrCat("float a[", rm, "], w[", rn, "];"));
    Line("#pragma unroll");
    Line(absl::StrCat("for (int i = 0; i < ", rm, "; ++i) a[i] = As[p][ty * ", rm, " + i];"));
    Line("#pragma unroll");
    Line(absl::StrCat("for (int j = 0; j < ", rn, "; ++j) w[j] = Bs[p][tx * ", rn, " + j];"));
    Line("#pragma unroll");
    Open(absl::StrCat("for (int i = 0; i < ", rm, "; ++i) {"));
    Line("#pragma unroll");
    Line(absl::StrCat("for (int j = 0; j < ", rn,
                      "; ++j) acc[i][j] = fmaf(a[i], w[j], acc[i][j]);"));
    Close();
    Close();
    Line("__syncthreads();");
    Close();
    // The epilogue: each thread's elements of the product.
    Line("#pragma unroll");
    Open(absl::StrCat("for (int i = 0; i < ", rm, "; ++i) {"));
    Line("#pragma unroll");
    Open(absl::StrCat("for (int j = 0; j < ", rn, "; ++j) {"));
    Line(absl::StrCat("const int64_t gm = m0 + ty * ", rm, " + i, gn = n0 + tx * ", rn, " + j;"));
    Open(absl::StrCat("if (gm < ", m, "LL && gn < ", n, "LL) {"));
    PushScope();
    const Idx out_idx = map.out("g", "gm", "gn");
    if (split) {
      Line(absl::StrCat(product_buffer, "[", Linear(mm->shape().dimensions(), out_idx),
                        "] = ", mm_output ? StoreAs(t, "acc[i][j]") : "acc[i][j]", ";"));
    } else {
      product_ = "acc[i][j]";
      product_idx_ = out_idx;
      for (const Instruction* o : k_.outputs) {
        if (o->shape().dimensions() != mm->shape().dimensions()) product_elsewhere_ = true;
        if (product_elsewhere_) break;
        const std::string v = Value(o, out_idx);
        Line(absl::StrCat(out_ptr_.at(o), "[", Linear(o->shape().dimensions(), out_idx),
                          "] = ", StoreAs(o->shape().element_type(), v), ";"));
      }
      product_.clear();
    }
    PopScope();
    Close();
    Close();
    Close();
    CloseFunction();
    if (!split) {
      if (!product_elsewhere_) return absl::OkStatus();
      continue;
    }
    if (others.empty()) return absl::OkStatus();
    // The epilogue: the other outputs, reading the product from its buffer (stored as the
    // matrix op's element type when it is an output, as f32 in the workspace otherwise).
    const int64_t block = 256;
    int64_t total = 0;
    for (const Instruction* o : others) total = std::max(total, Product(o->shape().dimensions()));
    OpenFunction(absl::StrCat(fn_, "_epilogue"), block, {(total + block - 1) / block}, args);
    product_ = "product";
    product_buffer_ = product_buffer;
    product_type_ = mm_output ? t : PrimitiveType::kF32;
    StoreOthersGridStride(others);
    product_.clear();
    product_buffer_.clear();
    CloseFunction();
  }
  return absl::OkStatus();
}

absl::Status GpuEmitter::EmitLibraryGemm(const GemmMap& map) {
  const Instruction* mm = k_.root;
  const PrimitiveType t = mm->shape().element_type();
  const int64_t batch = map.batch, m = map.m, n = map.n, kdim = map.k;
  // `x` read in place: an f32 kernel input already in the GEMM's order.
  auto direct = [&](const Instruction* x, bool in_order) -> std::optional<GpuArg> {
    if (!in_order || k_.Contains(x) || x->shape().element_type() != PrimitiveType::kF32) {
      return std::nullopt;
    }
    const Instruction* base = cpu::BaseValue(x);
    auto it = std::find(k_.inputs.begin(), k_.inputs.end(), base);
    if (it == k_.inputs.end()) return std::nullopt;
    return GpuArg{GpuArg::Kind::kInput, it - k_.inputs.begin()};
  };
  const Instruction* lhs = mm->operand(0);
  const Instruction* rhs = mm->operand(1);
  std::optional<GpuArg> a = direct(lhs, map.a_in_order);
  std::optional<GpuArg> b = direct(rhs, map.b_in_order);
  // A pack: operand element (g, r, c) of a [batch][rows][cols] row-major f32 buffer.
  auto pack = [&](const std::string& entry, const GpuArg& ws, int64_t rows, int64_t cols,
                  bool is_lhs) {
    const int64_t total = batch * rows * cols, block = 256;
    std::vector<GpuArg> args = AllBuffers();
    args.push_back(ws);
    OpenFunction(entry, static_cast<int32_t>(block),
                 {std::min<int64_t>((total + block - 1) / block, 65535)}, args);
    const std::string lin = NewName("p");
    Open(absl::StrCat("for (int64_t ", lin, " = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; ",
                      lin, " < ", total, "LL; ", lin, " += (int64_t)gridDim.x * blockDim.x) {"));
    PushScope();
    const std::string g = IntVar(absl::StrCat(lin, " / ", rows * cols, "LL"));
    const std::string r = IntVar(absl::StrCat("(", lin, " / ", cols, "LL) % ", rows, "LL"));
    const std::string c = IntVar(absl::StrCat(lin, " % ", cols, "LL"));
    std::string guard;
    const Idx idx = is_lhs ? map.a(g, r, c, &guard) : map.b(g, r, c);
    Line("float v = 0.f;");
    if (!guard.empty()) Open(absl::StrCat("if (", guard, ") {"));
    PushScope();
    Line(absl::StrCat("v = ", Value(is_lhs ? lhs : rhs, idx), ";"));
    PopScope();
    if (!guard.empty()) Close();
    Line(absl::StrCat("ws", ws.index, "[", lin, "] = v;"));
    PopScope();
    Close();
    CloseFunction();
  };
  if (!a.has_value()) {
    a = Workspace(batch * m * kdim * 4);
    pack(absl::StrCat(fn_, "_pack_a"), *a, m, kdim, true);
  }
  if (!b.has_value()) {
    b = Workspace(batch * kdim * n * 4);
    pack(absl::StrCat(fn_, "_pack_b"), *b, kdim, n, false);
  }
  // The product: the dot's own output where it is one, in f32; otherwise a workspace.
  const auto out = std::find(k_.outputs.begin(), k_.outputs.end(), mm);
  const bool in_output = out != k_.outputs.end() && t == PrimitiveType::kF32 && map.out_in_order;
  const GpuArg c = in_output ? GpuArg{GpuArg::Kind::kOutput, out - k_.outputs.begin()}
                             : Workspace(batch * m * n * 4);
  GpuLaunch gemm;
  gemm.kind = GpuLaunch::Kind::kGemm;
  gemm.entry = "cublasLtMatmul";
  gemm.args = {*a, *b, c};
  gemm.batch = batch;
  gemm.m = m;
  gemm.n = n;
  gemm.k = kdim;
  gemm.algo = Param("impl");
  program_->launches.push_back(gemm);
  std::vector<const Instruction*> rest;
  for (const Instruction* o : k_.outputs) {
    if (!(in_output && o == mm)) rest.push_back(o);
  }
  EmitProductEpilogue(rest, c, map.product_offset);
  return absl::OkStatus();
}

void GpuEmitter::EmitProductEpilogue(const std::vector<const Instruction*>& rest,
                                     const GpuArg& product,
                                     const std::function<std::string(const Idx&)>& offset) {
  if (rest.empty()) return;
  std::vector<GpuArg> args = AllBuffers();
  if (product.kind == GpuArg::Kind::kWorkspace) args.push_back(product);
  int64_t total = 0;
  for (const Instruction* o : rest) total = std::max(total, Product(o->shape().dimensions()));
  const int64_t block = 256;
  OpenFunction(absl::StrCat(fn_, "_epilogue"), block,
               {std::min<int64_t>((total + block - 1) / block, 65535)}, args);
  product_ = "product";
  product_buffer_ = product.kind == GpuArg::Kind::kWorkspace ? absl::StrCat("ws", product.index)
                                                             : absl::StrCat("out", product.index);
  product_type_ = PrimitiveType::kF32;
  product_offset_ = offset;
  StoreOthersGridStride(rest);
  product_.clear();
  product_buffer_.clear();
  product_offset_ = nullptr;
  CloseFunction();
}

void GpuEmitter::EmitPack(const std::string& entry, const GpuArg& ws,
                          const std::vector<int64_t>& dims, const Instruction* from,
                          const std::function<Idx(const Idx&, std::string*)>& index) {
  const int64_t total = Product(dims), block = 256;
  std::vector<GpuArg> args = AllBuffers();
  args.push_back(ws);
  OpenFunction(entry, static_cast<int32_t>(block),
               {std::min<int64_t>((total + block - 1) / block, 65535)}, args);
  const std::string lin = NewName("p");
  Open(absl::StrCat("for (int64_t ", lin, " = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; ",
                    lin, " < ", total, "LL; ", lin, " += (int64_t)gridDim.x * blockDim.x) {"));
  PushScope();
  std::string guard;
  const Idx idx = index(Decompose(lin, dims), &guard);
  Line("float v = 0.f;");
  if (!guard.empty()) Open(absl::StrCat("if (", guard, ") {"));
  PushScope();
  Line(absl::StrCat("v = ", Value(from, idx), ";"));
  PopScope();
  if (!guard.empty()) Close();
  Line(absl::StrCat("ws", ws.index, "[", lin, "] = v;"));
  PopScope();
  Close();
  CloseFunction();
}

absl::Status GpuEmitter::EmitCudnnConvolution() {
  const std::optional<CudnnLayout> layout = CudnnLayoutOf(k_);
  if (!layout.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel '", k_.name, "': cuDNN does not take this convolution"));
  }
  const Instruction* conv = k_.root;
  const ir::ConvolutionDimensionNumbers& dn = *conv->conv_dnums;
  const std::vector<int64_t>& xd = conv->operand(0)->shape().dimensions();
  const std::vector<int64_t>& wd = conv->operand(1)->shape().dimensions();
  const std::vector<int64_t>& yd = conv->shape().dimensions();
  const size_t ns = dn.input_spatial_dimensions.size();
  const bool nhwc = layout->nhwc;
  GpuConvShape shape;
  shape.nhwc = nhwc;
  shape.groups = std::max<int64_t>(1, conv->feature_group_count);
  // Sizes in cuDNN's order ([N, C, spatial...]) and the same with the feature minor (storage).
  shape.x = {xd[static_cast<size_t>(dn.input_batch_dimension)],
             xd[static_cast<size_t>(dn.input_feature_dimension)]};
  shape.w = {wd[static_cast<size_t>(dn.kernel_output_feature_dimension)],
             wd[static_cast<size_t>(dn.kernel_input_feature_dimension)]};
  shape.y = {yd[static_cast<size_t>(dn.output_batch_dimension)],
             yd[static_cast<size_t>(dn.output_feature_dimension)]};
  std::vector<int64_t> lo;
  for (size_t d = 0; d < ns; ++d) {
    const ir::WindowDim w = WindowOf(*conv, d);
    const int64_t size = xd[static_cast<size_t>(dn.input_spatial_dimensions[d])];
    shape.x.push_back(layout->explicit_pad ? size + w.padding_low + w.padding_high : size);
    shape.w.push_back(wd[static_cast<size_t>(dn.kernel_spatial_dimensions[d])]);
    shape.y.push_back(yd[static_cast<size_t>(dn.output_spatial_dimensions[d])]);
    shape.pad.push_back(layout->explicit_pad ? 0 : w.padding_low);
    shape.stride.push_back(w.stride);
    shape.dilation.push_back(w.window_dilation);
    lo.push_back(w.padding_low);
  }
  auto storage = [nhwc](const std::vector<int64_t>& dims) {
    std::vector<int64_t> s = dims;
    if (nhwc) std::rotate(s.begin() + 1, s.begin() + 2, s.end());
    return s;
  };
  // A storage position as [N, C, spatial...].
  auto logical = [nhwc](const Idx& at) {
    Idx l = at;
    if (nhwc) std::rotate(l.begin() + 1, l.end() - 1, l.end());
    return l;
  };
  std::optional<GpuArg> x, w;
  if (layout->x_direct || layout->w_direct) {
    for (size_t i = 0; i < k_.inputs.size(); ++i) {
      if (k_.inputs[i] == cpu::BaseValue(conv->operand(0)) && layout->x_direct) {
        x = GpuArg{GpuArg::Kind::kInput, static_cast<int64_t>(i)};
      }
      if (k_.inputs[i] == cpu::BaseValue(conv->operand(1)) && layout->w_direct) {
        w = GpuArg{GpuArg::Kind::kInput, static_cast<int64_t>(i)};
      }
    }
  }
  if (!x.has_value()) {
    const std::vector<int64_t> dims = storage(shape.x);
    x = Workspace(4 * Product(dims));
    EmitPack(absl::StrCat(fn_, "_pack_x"), *x, dims, conv->operand(0),
             [&](const Idx& at, std::string* guard) {
               const Idx l = logical(at);
               Idx xi(xd.size(), "0");
               xi[static_cast<size_t>(dn.input_batch_dimension)] = l[0];
               xi[static_cast<size_t>(dn.input_feature_dimension)] = l[1];
               std::vector<std::string> valid;
               for (size_t d = 0; d < ns; ++d) {
                 std::string pos = l[2 + d];
                 if (layout->explicit_pad && lo[d] != 0) {
                   pos = IntVar(absl::StrCat(pos, " - ", lo[d]));
                 }
                 if (layout->explicit_pad) {
                   valid.push_back(
                       absl::StrCat(pos, " >= 0 && ", pos, " < ",
                                    xd[static_cast<size_t>(dn.input_spatial_dimensions[d])]));
                 }
                 xi[static_cast<size_t>(dn.input_spatial_dimensions[d])] = pos;
               }
               *guard = absl::StrJoin(valid, " && ");
               return xi;
             });
  }
  if (!w.has_value()) {
    const std::vector<int64_t> dims = storage(shape.w);
    w = Workspace(4 * Product(dims));
    EmitPack(absl::StrCat(fn_, "_pack_w"), *w, dims, conv->operand(1),
             [&](const Idx& at, std::string* guard) {
               guard->clear();
               const Idx l = logical(at);
               Idx wi(wd.size(), "0");
               wi[static_cast<size_t>(dn.kernel_output_feature_dimension)] = l[0];
               wi[static_cast<size_t>(dn.kernel_input_feature_dimension)] = l[1];
               for (size_t d = 0; d < ns; ++d) {
                 wi[static_cast<size_t>(dn.kernel_spatial_dimensions[d])] = l[2 + d];
               }
               return wi;
             });
  }
  const auto out = std::find(k_.outputs.begin(), k_.outputs.end(), conv);
  const std::vector<int64_t> y_storage = storage(shape.y);
  const GpuArg y = layout->y_direct ? GpuArg{GpuArg::Kind::kOutput, out - k_.outputs.begin()}
                                    : Workspace(4 * Product(y_storage));
  GpuLaunch launch;
  launch.kind = GpuLaunch::Kind::kConv;
  launch.entry = "cudnnConvolutionForward";
  launch.args = {*x, *w, y};
  launch.algo = Param("impl") - kCudnnImpl + 1;
  launch.conv = shape;
  // cuDNN takes two or three spatial dimensions: a 1-D convolution gets a unit one.
  if (ns == 1) {
    for (std::vector<int64_t>* v : {&launch.conv.x, &launch.conv.w, &launch.conv.y}) {
      v->push_back(1);
    }
    launch.conv.pad.push_back(0);
    launch.conv.stride.push_back(1);
    launch.conv.dilation.push_back(1);
  }
  program_->launches.push_back(launch);
  std::vector<const Instruction*> rest;
  for (const Instruction* o : k_.outputs) {
    if (!(layout->y_direct && o == conv)) rest.push_back(o);
  }
  EmitProductEpilogue(rest, y, [=](const Idx& oi) {
    Idx at = {oi[static_cast<size_t>(dn.output_batch_dimension)],
              oi[static_cast<size_t>(dn.output_feature_dimension)]};
    for (int64_t d : dn.output_spatial_dimensions) at.push_back(oi[static_cast<size_t>(d)]);
    if (nhwc) std::rotate(at.begin() + 1, at.begin() + 2, at.end());
    return Linear(y_storage, at);
  });
  return absl::OkStatus();
}

}  // namespace mltune::backends::gpu::internal
