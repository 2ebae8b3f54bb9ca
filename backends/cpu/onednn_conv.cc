#include "backends/cpu/onednn_conv.h"

#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

#include "ir/shape.h"

#ifdef MLTUNE_HAVE_DNNL_HEADER
#include <oneapi/dnnl/dnnl.h>
#endif

namespace mltune::backends::cpu {

OneDnnConvShape OneDnnConvShapeOf(const ir::Instruction& conv) {
  const ir::ConvolutionDimensionNumbers& dn = *conv.conv_dnums;
  const std::vector<int64_t>& ld = conv.operand(0)->shape().dimensions();
  const std::vector<int64_t>& rd = conv.operand(1)->shape().dimensions();
  const std::vector<int64_t>& od = conv.shape().dimensions();
  const std::vector<int64_t> ls = ir::RowMajorStrides(ld), rs = ir::RowMajorStrides(rd),
                             os = ir::RowMajorStrides(od);
  auto at = [](const std::vector<int64_t>& v, int64_t d) { return v[static_cast<size_t>(d)]; };
  OneDnnConvShape s;
  s.spatial = static_cast<int>(dn.input_spatial_dimensions.size());
  s.groups = conv.feature_group_count;
  s.src_dims = {at(ld, dn.input_batch_dimension), at(ld, dn.input_feature_dimension)};
  s.src_strides = {at(ls, dn.input_batch_dimension), at(ls, dn.input_feature_dimension)};
  // Any dimension order is a strided descriptor; grouped weights split O into G x O/G.
  const int64_t of = dn.kernel_output_feature_dimension, inf = dn.kernel_input_feature_dimension;
  if (s.groups > 1) {
    s.weight_dims = {s.groups, at(rd, of) / s.groups, at(rd, inf)};
    s.weight_strides = {at(rs, of) * (at(rd, of) / s.groups), at(rs, of), at(rs, inf)};
  } else {
    s.weight_dims = {at(rd, of), at(rd, inf)};
    s.weight_strides = {at(rs, of), at(rs, inf)};
  }
  s.dst_dims = {at(od, dn.output_batch_dimension), at(od, dn.output_feature_dimension)};
  s.dst_strides = {at(os, dn.output_batch_dimension), at(os, dn.output_feature_dimension)};
  for (int d = 0; d < s.spatial; ++d) {
    const size_t i = static_cast<size_t>(d);
    s.src_dims.push_back(at(ld, dn.input_spatial_dimensions[i]));
    s.src_strides.push_back(at(ls, dn.input_spatial_dimensions[i]));
    s.weight_dims.push_back(at(rd, dn.kernel_spatial_dimensions[i]));
    s.weight_strides.push_back(at(rs, dn.kernel_spatial_dimensions[i]));
    s.dst_dims.push_back(at(od, dn.output_spatial_dimensions[i]));
    s.dst_strides.push_back(at(os, dn.output_spatial_dimensions[i]));
    ir::WindowDim w;
    if (conv.window.has_value() && i < conv.window->dims.size()) w = conv.window->dims[i];
    s.window_strides.push_back(w.stride);
    s.dilations.push_back(w.window_dilation - 1);
    s.pad_low.push_back(w.padding_low);
    s.pad_high.push_back(w.padding_high);
  }
  return s;
}

#ifdef MLTUNE_HAVE_DNNL_HEADER
namespace {

bool Descriptor(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                dnnl_memory_desc_t* md) {
  dnnl_dims_t d, s;
  if (dims.size() > DNNL_MAX_NDIMS || dims.size() != strides.size()) return false;
  for (size_t i = 0; i < dims.size(); ++i) d[i] = dims[i], s[i] = strides[i];
  return dnnl_memory_desc_init_by_strides(md, static_cast<int>(dims.size()), d, dnnl_f32, s) ==
         dnnl_success;
}

// Asks oneDNN which implementation it would dispatch; creating the descriptor compiles nothing
// (the JIT runs at primitive creation), so this costs microseconds.
bool QueryNative(const OneDnnConvShape& shape) {
  static dnnl_engine_t engine = [] {
    dnnl_engine_t e = nullptr;
    if (dnnl_engine_create(&e, dnnl_cpu, 0) != dnnl_success) e = nullptr;
    return e;
  }();
  if (engine == nullptr) return false;
  dnnl_memory_desc_t src, weights, dst;
  if (!Descriptor(shape.src_dims, shape.src_strides, &src) ||
      !Descriptor(shape.weight_dims, shape.weight_strides, &weights) ||
      !Descriptor(shape.dst_dims, shape.dst_strides, &dst)) {
    return false;
  }
  dnnl_dims_t ws, dl, pl, pr;
  for (int d = 0; d < shape.spatial; ++d) {
    const size_t i = static_cast<size_t>(d);
    ws[i] = shape.window_strides[i], dl[i] = shape.dilations[i];
    pl[i] = shape.pad_low[i], pr[i] = shape.pad_high[i];
  }
  dnnl_convolution_desc_t desc;
  if (dnnl_dilated_convolution_forward_desc_init(&desc, dnnl_forward_inference,
                                                 dnnl_convolution_direct, &src, &weights, nullptr,
                                                 &dst, ws, dl, pl, pr) != dnnl_success) {
    return false;
  }
  dnnl_primitive_desc_t pd = nullptr;
  if (dnnl_primitive_desc_create(&pd, &desc, nullptr, engine, nullptr) != dnnl_success) {
    return false;
  }
  const char* impl = "";
  const bool known =
      dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success;
  const bool native = known && impl != nullptr && std::strncmp(impl, "ref", 3) != 0;
  dnnl_primitive_desc_destroy(pd);
  return native;
}

}  // namespace
#endif

bool OneDnnRunsPlainLayoutsNatively(const OneDnnConvShape& shape) {
#ifdef MLTUNE_HAVE_DNNL_HEADER
  using Key = std::tuple<int, int64_t, std::vector<std::vector<int64_t>>>;
  static std::mutex mu;
  static std::map<Key, bool> cache;
  const Key key{
      shape.spatial,
      shape.groups,
      {shape.src_dims, shape.src_strides, shape.weight_dims, shape.weight_strides, shape.dst_dims,
       shape.dst_strides, shape.window_strides, shape.dilations, shape.pad_low, shape.pad_high}};
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it == cache.end()) it = cache.emplace(key, QueryNative(shape)).first;
  return it->second;
#else
  (void)shape;
  return false;
#endif
}

}  // namespace mltune::backends::cpu
