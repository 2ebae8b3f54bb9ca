// dot (general dimension numbers) and convolution (full dimension numbers, window with
// stride/padding/base and window dilation/reversal, feature and batch groups).
// Operands are converted to the result type, unpacked to the compute type once, and every output
// element sums its products in the order XLA's evaluator does (contracting index order for dot;
// window position, then input feature, for convolution), accumulating in the compute type (float
// for f32/f16/bf16, double for f64, wrapping integers).
#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/evaluator/element_types.h"
#include "ir/evaluator/eval_internal.h"
#include "ir/evaluator/index_util.h"

namespace mltune::ir::eval {
namespace {

bool Contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The operand in the result's element type (XLA's preferred_element_type semantics).
absl::StatusOr<Literal> AsType(Evaluator& ev, Operands& ops, int64_t i, PrimitiveType type) {
  if (ops[i].element_type() == type) return ops.Take(i);
  return ConvertLiteral(ev, ops[i], type);
}

// Buffers of compute values; pred gets bytes since std::vector<bool> has no data().
template <typename C>
using Slot = std::conditional_t<kIsBool<C>, uint8_t, C>;

template <typename Tr>
std::vector<Slot<typename Tr::C>> Unpack(const Literal& l) {
  std::vector<Slot<typename Tr::C>> v(l.element_count());
  for (int64_t i = 0; i < l.element_count(); ++i) v[i] = Tr::Load(l.untyped_data(), i);
  return v;
}

// Elements of `l` in the order of walking `dims` with `strides` (see ForEachStrided).
template <typename Tr>
std::vector<Slot<typename Tr::C>> Gather(const Literal& l, const std::vector<int64_t>& dims,
                                         const std::vector<int64_t>& strides) {
  std::vector<Slot<typename Tr::C>> v(Product(dims));
  ForEachStrided(dims, strides, 0,
                 [&](int64_t o, int64_t s) { v[o] = Tr::Load(l.untyped_data(), s); });
  return v;
}

absl::Status CheckDims(const Instruction& instr, const std::vector<int64_t>& dims, int64_t rank) {
  std::vector<bool> seen(rank, false);
  for (int64_t d : dims) {
    if (d < 0 || d >= rank || seen[d]) return Invalid(instr, "bad dimension numbers");
    seen[d] = true;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Literal> HandleDot(Evaluator& ev, const Instruction& instr, Operands& ops) {
  if (ops.size() != 2 || !instr.shape().IsArray()) return Invalid(instr, "bad dot");
  // No dimension numbers at all: an outer product.
  const DotDimensionNumbers dn = instr.dot_dnums.value_or(DotDimensionNumbers{});
  const PrimitiveType type = instr.shape().element_type();
  absl::StatusOr<Literal> lhs = AsType(ev, ops, 0, type);
  if (!lhs.ok()) return lhs.status();
  absl::StatusOr<Literal> rhs = AsType(ev, ops, 1, type);
  if (!rhs.ok()) return rhs.status();
  const auto& ld = lhs->shape().dimensions();
  const auto& rd = rhs->shape().dimensions();
  const int64_t lr = static_cast<int64_t>(ld.size()), rr = static_cast<int64_t>(rd.size());
  if (dn.lhs_batch_dimensions.size() != dn.rhs_batch_dimensions.size() ||
      dn.lhs_contracting_dimensions.size() != dn.rhs_contracting_dimensions.size()) {
    return Invalid(instr, "batch or contracting dimension counts differ");
  }
  std::vector<int64_t> lhs_all = dn.lhs_batch_dimensions, rhs_all = dn.rhs_batch_dimensions;
  lhs_all.insert(lhs_all.end(), dn.lhs_contracting_dimensions.begin(),
                 dn.lhs_contracting_dimensions.end());
  rhs_all.insert(rhs_all.end(), dn.rhs_contracting_dimensions.begin(),
                 dn.rhs_contracting_dimensions.end());
  if (absl::Status s = CheckDims(instr, lhs_all, lr); !s.ok()) return s;
  if (absl::Status s = CheckDims(instr, rhs_all, rr); !s.ok()) return s;
  for (size_t k = 0; k < lhs_all.size(); ++k) {
    if (ld[lhs_all[k]] != rd[rhs_all[k]]) return Invalid(instr, "paired dimension sizes differ");
  }
  std::vector<int64_t> lhs_free, rhs_free;
  for (int64_t d = 0; d < lr; ++d) {
    if (!Contains(lhs_all, d)) lhs_free.push_back(d);
  }
  for (int64_t d = 0; d < rr; ++d) {
    if (!Contains(rhs_all, d)) rhs_free.push_back(d);
  }
  const std::vector<int64_t> ls = RowMajorStrides(ld), rs = RowMajorStrides(rd);
  // A[b][m][k] and B[b][k][n] as dense arrays, walking the operands by their strides.
  std::vector<int64_t> a_dims, a_strides, b_dims, b_strides, out_dims;
  int64_t batch = 1, m = 1, k = 1, n = 1;
  for (int64_t d : dn.lhs_batch_dimensions) {
    a_dims.push_back(ld[d]);
    a_strides.push_back(ls[d]);
    out_dims.push_back(ld[d]);
    batch *= ld[d];
  }
  for (int64_t d : lhs_free) {
    a_dims.push_back(ld[d]);
    a_strides.push_back(ls[d]);
    out_dims.push_back(ld[d]);
    m *= ld[d];
  }
  for (int64_t d : dn.lhs_contracting_dimensions) {
    a_dims.push_back(ld[d]);
    a_strides.push_back(ls[d]);
    k *= ld[d];
  }
  for (int64_t d : dn.rhs_batch_dimensions) {
    b_dims.push_back(rd[d]);
    b_strides.push_back(rs[d]);
  }
  for (int64_t d : dn.rhs_contracting_dimensions) {
    b_dims.push_back(rd[d]);
    b_strides.push_back(rs[d]);
  }
  for (int64_t d : rhs_free) {
    b_dims.push_back(rd[d]);
    b_strides.push_back(rs[d]);
    out_dims.push_back(rd[d]);
    n *= rd[d];
  }
  if (out_dims != instr.shape().dimensions()) return Invalid(instr, "wrong result dimensions");
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  absl::Status s = DispatchType(type, [&](auto tr) -> absl::Status {
    using Tr = decltype(tr);
    using C = typename Tr::C;
    using S = Slot<C>;
    const std::vector<S> a = Gather<Tr>(*lhs, a_dims, a_strides);
    const std::vector<S> b = Gather<Tr>(*rhs, b_dims, b_strides);
    std::vector<S> acc(n);
    uint8_t* o = out->untyped_data();
    for (int64_t bi = 0; bi < batch; ++bi) {
      for (int64_t mi = 0; mi < m; ++mi) {
        std::fill(acc.begin(), acc.end(), S{});
        const S* arow = a.data() + (bi * m + mi) * k;
        for (int64_t ki = 0; ki < k; ++ki) {
          const C x = arow[ki];
          const S* brow = b.data() + (bi * k + ki) * n;
          for (int64_t ni = 0; ni < n; ++ni) acc[ni] = MulAdd<C>(acc[ni], x, brow[ni]);
        }
        for (int64_t ni = 0; ni < n; ++ni) Tr::Store(o, (bi * m + mi) * n + ni, acc[ni]);
      }
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<Literal> HandleConvolution(Evaluator& ev, const Instruction& instr, Operands& ops) {
  if (ops.size() != 2 || !instr.conv_dnums.has_value() || !instr.window.has_value() ||
      !instr.shape().IsArray()) {
    return Invalid(instr, "bad convolution");
  }
  const ConvolutionDimensionNumbers& dn = *instr.conv_dnums;
  const PrimitiveType type = instr.shape().element_type();
  absl::StatusOr<Literal> lhs = AsType(ev, ops, 0, type);
  if (!lhs.ok()) return lhs.status();
  absl::StatusOr<Literal> rhs = AsType(ev, ops, 1, type);
  if (!rhs.ok()) return rhs.status();
  const auto& ld = lhs->shape().dimensions();
  const auto& kd = rhs->shape().dimensions();
  const auto& od = instr.shape().dimensions();
  const size_t spatial = dn.input_spatial_dimensions.size();
  const int64_t rank = static_cast<int64_t>(ld.size());
  if (dn.kernel_spatial_dimensions.size() != spatial ||
      dn.output_spatial_dimensions.size() != spatial || instr.window->dims.size() != spatial ||
      static_cast<int64_t>(kd.size()) != rank || static_cast<int64_t>(od.size()) != rank ||
      static_cast<int64_t>(spatial) + 2 != rank) {
    return Invalid(instr, "convolution ranks do not match");
  }
  auto dims_of = [](int64_t a, int64_t b, const std::vector<int64_t>& s) {
    std::vector<int64_t> v = {a, b};
    v.insert(v.end(), s.begin(), s.end());
    return v;
  };
  if (absl::Status s = CheckDims(instr,
                                 dims_of(dn.input_batch_dimension, dn.input_feature_dimension,
                                         dn.input_spatial_dimensions),
                                 rank);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          CheckDims(instr,
                    dims_of(dn.kernel_input_feature_dimension, dn.kernel_output_feature_dimension,
                            dn.kernel_spatial_dimensions),
                    rank);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckDims(instr,
                                 dims_of(dn.output_batch_dimension, dn.output_feature_dimension,
                                         dn.output_spatial_dimensions),
                                 rank);
      !s.ok()) {
    return s;
  }
  const int64_t fg = instr.feature_group_count, bg = instr.batch_group_count;
  const int64_t in_batch = ld[dn.input_batch_dimension];
  const int64_t in_feat = ld[dn.input_feature_dimension];
  const int64_t k_in = kd[dn.kernel_input_feature_dimension];
  const int64_t k_out = kd[dn.kernel_output_feature_dimension];
  const int64_t out_batch = od[dn.output_batch_dimension];
  if (fg < 1 || bg < 1 || (fg > 1 && bg > 1) || k_in * fg != in_feat || k_out % fg != 0 ||
      k_out % bg != 0 || out_batch * bg != in_batch || od[dn.output_feature_dimension] != k_out) {
    return Invalid(instr, "feature/batch sizes and group counts do not match");
  }
  std::vector<int64_t> window_sizes, in_sizes, out_sizes;
  for (size_t s = 0; s < spatial; ++s) {
    const WindowDim& w = instr.window->dims[s];
    if (w.size != kd[dn.kernel_spatial_dimensions[s]] || w.stride < 1 || w.base_dilation < 1 ||
        w.window_dilation < 1) {
      return Invalid(instr, "window does not match the kernel");
    }
    window_sizes.push_back(w.size);
    in_sizes.push_back(ld[dn.input_spatial_dimensions[s]]);
    out_sizes.push_back(od[dn.output_spatial_dimensions[s]]);
  }
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  const std::vector<int64_t> ls = RowMajorStrides(ld), ks = RowMajorStrides(kd),
                             os = RowMajorStrides(od);
  const int64_t groups = std::max(fg, bg);
  const int64_t block = k_out / groups;
  absl::Status status = DispatchType(type, [&](auto tr) -> absl::Status {
    using Tr = decltype(tr);
    using C = typename Tr::C;
    using S = Slot<C>;
    const std::vector<S> in = Unpack<Tr>(*lhs);
    // Kernel repacked as [window position][input feature][output feature].
    std::vector<int64_t> kdims = window_sizes, kstrides;
    for (size_t s = 0; s < spatial; ++s) kstrides.push_back(ks[dn.kernel_spatial_dimensions[s]]);
    kdims.push_back(k_in);
    kstrides.push_back(ks[dn.kernel_input_feature_dimension]);
    kdims.push_back(k_out);
    kstrides.push_back(ks[dn.kernel_output_feature_dimension]);
    const std::vector<S> kernel = Gather<Tr>(*rhs, kdims, kstrides);
    const std::vector<int64_t> wstrides = RowMajorStrides(window_sizes);
    std::vector<S> acc(k_out);
    uint8_t* o = out->untyped_data();
    for (int64_t b = 0; b < out_batch; ++b) {
      ForEachIndex(out_sizes, [&](const std::vector<int64_t>& opos) {
        std::fill(acc.begin(), acc.end(), S{});
        ForEachIndex(window_sizes, [&](const std::vector<int64_t>& w) {
          int64_t in_offset = 0, klin = 0;
          for (size_t s = 0; s < spatial; ++s) {
            const WindowDim& wd = instr.window->dims[s];
            const int64_t pos = opos[s] * wd.stride + w[s] * wd.window_dilation - wd.padding_low;
            if (pos < 0 || pos % wd.base_dilation != 0) return;
            const int64_t i = pos / wd.base_dilation;
            if (i >= in_sizes[s]) return;
            in_offset += i * ls[dn.input_spatial_dimensions[s]];
            klin += (wd.window_reversal ? wd.size - 1 - w[s] : w[s]) * wstrides[s];
          }
          for (int64_t g = 0; g < groups; ++g) {
            const int64_t lb = bg > 1 ? g * out_batch + b : b;
            const int64_t fbase = fg > 1 ? g * k_in : 0;
            const int64_t base = in_offset + lb * ls[dn.input_batch_dimension];
            S* acc_block = acc.data() + g * block;
            for (int64_t i = 0; i < k_in; ++i) {
              const C x = in[base + (fbase + i) * ls[dn.input_feature_dimension]];
              const S* krow = kernel.data() + (klin * k_in + i) * k_out + g * block;
              for (int64_t oi = 0; oi < block; ++oi) {
                acc_block[oi] = MulAdd<C>(acc_block[oi], x, krow[oi]);
              }
            }
          }
        });
        int64_t out_offset = b * os[dn.output_batch_dimension];
        for (size_t s = 0; s < spatial; ++s) {
          out_offset += opos[s] * os[dn.output_spatial_dimensions[s]];
        }
        for (int64_t oi = 0; oi < k_out; ++oi) {
          Tr::Store(o, out_offset + oi * os[dn.output_feature_dimension], acc[oi]);
        }
      });
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return out;
}

}  // namespace mltune::ir::eval
