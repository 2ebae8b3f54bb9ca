#include "backends/gpu/cudnn_conv.h"

#include <cudnn.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "backends/gpu/dl_library.h"

namespace mltune::backends::gpu {
namespace {

// The entry points used, resolved from libcudnn (cuDNN 9's libcudnn.so.9 exports them all and
// loads its sub-libraries itself).
struct Api {
  decltype(&cudnnCreate) create;
  decltype(&cudnnGetErrorString) error;
  decltype(&cudnnSetStream) set_stream;
  decltype(&cudnnCreateTensorDescriptor) create_tensor;
  decltype(&cudnnSetTensorNdDescriptor) set_tensor;
  decltype(&cudnnCreateFilterDescriptor) create_filter;
  decltype(&cudnnSetFilterNdDescriptor) set_filter;
  decltype(&cudnnCreateConvolutionDescriptor) create_conv;
  decltype(&cudnnSetConvolutionNdDescriptor) set_conv;
  decltype(&cudnnSetConvolutionGroupCount) set_groups;
  decltype(&cudnnSetConvolutionMathType) set_math;
  decltype(&cudnnGetConvolutionNdForwardOutputDim) output_dim;
  decltype(&cudnnGetConvolutionForwardAlgorithm_v7) heuristic;
  decltype(&cudnnGetConvolutionForwardWorkspaceSize) workspace;
  decltype(&cudnnConvolutionForward) forward;
};

std::string Load(Api* api) {
  DlLibrary lib;
  if (!lib.Open({"libcudnn.so.9", "libcudnn.so"})) {
    return "no cuDNN (tried " + lib.tried() + "): " + lib.error();
  }
  auto get = [&](auto* fn, const char* name) { lib.Get(fn, name); };
  get(&api->create, "cudnnCreate");
  get(&api->error, "cudnnGetErrorString");
  get(&api->set_stream, "cudnnSetStream");
  get(&api->create_tensor, "cudnnCreateTensorDescriptor");
  get(&api->set_tensor, "cudnnSetTensorNdDescriptor");
  get(&api->create_filter, "cudnnCreateFilterDescriptor");
  get(&api->set_filter, "cudnnSetFilterNdDescriptor");
  get(&api->create_conv, "cudnnCreateConvolutionDescriptor");
  get(&api->set_conv, "cudnnSetConvolutionNdDescriptor");
  get(&api->set_groups, "cudnnSetConvolutionGroupCount");
  get(&api->set_math, "cudnnSetConvolutionMathType");
  get(&api->output_dim, "cudnnGetConvolutionNdForwardOutputDim");
  get(&api->heuristic, "cudnnGetConvolutionForwardAlgorithm_v7");
  get(&api->workspace, "cudnnGetConvolutionForwardWorkspaceSize");
  get(&api->forward, "cudnnConvolutionForward");
  return lib.missing().empty() ? "" : "cuDNN lacks " + lib.missing();
}

// A workspace larger than this is not taken: the algorithm is skipped, as XLA's autotuner skips
// candidates past its scratch limit.
constexpr size_t kMaxWorkspaceBytes = size_t{1} << 30;

// Packed strides of [N, C, spatial...] sizes stored NCHW, or NHWC (the feature minor).
std::vector<int> Strides(const std::vector<int>& dims, bool nhwc) {
  const size_t rank = dims.size();
  std::vector<int> order;  // storage order, outermost first
  order.push_back(0);
  if (!nhwc) order.push_back(1);
  for (size_t d = 2; d < rank; ++d) order.push_back(static_cast<int>(d));
  if (nhwc) order.push_back(1);
  std::vector<int> strides(rank);
  int stride = 1;
  for (size_t i = rank; i-- > 0;) {
    strides[static_cast<size_t>(order[i])] = stride;
    stride *= dims[static_cast<size_t>(order[i])];
  }
  return strides;
}

std::string Join(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) s.push_back('x');
    s.append(std::to_string(v[i]));
  }
  return s;
}

}  // namespace

// The handle and descriptors live as long as the runner child, whose exit frees them.
struct CudnnConvolutions::State {
  Api api{};
  cudnnHandle_t handle = nullptr;
  struct Conv {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    cudnnConvolutionFwdAlgo_t algo;
    size_t workspace = 0;
  };
  std::vector<Conv> convs;
  size_t workspace = 0;

  std::string Check(cudnnStatus_t s, const std::string& what) const {
    if (s == CUDNN_STATUS_SUCCESS) return "";
    return what + ": " + api.error(s);
  }
};

CudnnConvolutions::CudnnConvolutions() : state_(std::make_unique<State>()) {}
CudnnConvolutions::~CudnnConvolutions() = default;

size_t CudnnConvolutions::workspace_bytes() const { return state_->workspace; }

std::string CudnnConvolutions::Add(const nlohmann::json& l, int* index) {
  State& s = *state_;
  if (s.handle == nullptr) {
    if (std::string e = Load(&s.api); !e.empty()) return e;
    if (std::string e = s.Check(s.api.create(&s.handle), "cudnnCreate"); !e.empty()) return e;
  }
  auto ints = [&](const char* key) {
    std::vector<int> v;
    for (const nlohmann::json& x : l.at(key)) v.push_back(static_cast<int>(x.get<int64_t>()));
    return v;
  };
  const bool nhwc = l.at("nhwc").get<bool>();
  const int groups = static_cast<int>(l.at("groups").get<int64_t>());
  const int64_t algo = l.at("algo").get<int64_t>();
  const std::vector<int> x = ints("x"), w = ints("w"), y = ints("y");
  const std::vector<int> pad = ints("pad"), stride = ints("stride"), dilation = ints("dilation");
  const size_t rank = x.size();
  if (rank < 4 || rank > 5 || w.size() != rank || y.size() != rank || pad.size() != rank - 2 ||
      stride.size() != rank - 2 || dilation.size() != rank - 2) {
    return "a conv launch takes x, w, y of rank 4 or 5 and pad, stride, dilation of rank - 2";
  }
  State::Conv c{};
  std::string e = s.Check(s.api.create_tensor(&c.x), "cudnnCreateTensorDescriptor");
  auto step = [&](cudnnStatus_t status, const char* what) {
    if (e.empty()) e = s.Check(status, what);
  };
  const int r = static_cast<int>(rank);
  step(s.api.set_tensor(c.x, CUDNN_DATA_FLOAT, r, x.data(), Strides(x, nhwc).data()), "x");
  step(s.api.create_tensor(&c.y), "cudnnCreateTensorDescriptor");
  step(s.api.set_tensor(c.y, CUDNN_DATA_FLOAT, r, y.data(), Strides(y, nhwc).data()), "y");
  step(s.api.create_filter(&c.w), "cudnnCreateFilterDescriptor");
  step(s.api.set_filter(c.w, CUDNN_DATA_FLOAT, nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW, r,
                        w.data()),
       "w");
  step(s.api.create_conv(&c.conv), "cudnnCreateConvolutionDescriptor");
  // XLA's convolution is a cross-correlation, accumulated in f32.
  step(s.api.set_conv(c.conv, r - 2, pad.data(), stride.data(), dilation.data(),
                      CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
       "cudnnSetConvolutionNdDescriptor");
  step(s.api.set_groups(c.conv, groups), "cudnnSetConvolutionGroupCount");
  step(s.api.set_math(c.conv, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");
  if (!e.empty()) return "cuDNN convolution x " + Join(x) + ", w " + Join(w) + ": " + e;
  std::vector<int> out(rank);
  step(s.api.output_dim(c.conv, c.x, c.w, r, out.data()), "cudnnGetConvolutionNdForwardOutputDim");
  if (!e.empty()) return e;
  if (out != y) {
    return "cuDNN computes a " + Join(out) + " output for x " + Join(x) + ", w " + Join(w) +
           "; the plan says " + Join(y);
  }
  // The heuristic's algorithms, best first; those that do not apply, need tensor cores (TF32)
  // or too large a workspace are passed over.
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int returned = 0;
  step(s.api.heuristic(s.handle, c.x, c.w, c.conv, c.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned,
                       perf),
       "cudnnGetConvolutionForwardAlgorithm_v7");
  if (!e.empty()) return e;
  int64_t usable = 0;
  for (int i = 0; i < returned; ++i) {
    const cudnnConvolutionFwdAlgoPerf_t& p = perf[i];
    if (p.status != CUDNN_STATUS_SUCCESS || p.mathType == CUDNN_TENSOR_OP_MATH ||
        p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) {
      continue;
    }
    size_t bytes = 0;
    if (s.api.workspace(s.handle, c.x, c.w, c.conv, c.y, p.algo, &bytes) != CUDNN_STATUS_SUCCESS ||
        bytes > kMaxWorkspaceBytes) {
      continue;
    }
    if (++usable == algo) {
      c.algo = p.algo;
      c.workspace = bytes;
      break;
    }
  }
  if (algo < 1 || usable < algo) {
    return "cuDNN proposes " + std::to_string(usable) + " f32 algorithms for x " + Join(x) +
           ", w " + Join(w) + "; algorithm " + std::to_string(algo) + " was asked for";
  }
  s.workspace = std::max(s.workspace, c.workspace);
  *index = static_cast<int>(s.convs.size());
  s.convs.push_back(c);
  return "";
}

std::string CudnnConvolutions::Run(int index, void* x, void* w, void* y, void* workspace,
                                   void* stream) {
  State& s = *state_;
  const State::Conv& c = s.convs.at(static_cast<size_t>(index));
  if (std::string e =
          s.Check(s.api.set_stream(s.handle, static_cast<cudaStream_t>(stream)), "cudnnSetStream");
      !e.empty()) {
    return e;
  }
  const float one = 1.f, zero = 0.f;
  return s.Check(s.api.forward(s.handle, &one, c.x, x, c.w, w, c.conv, c.algo, workspace,
                               c.workspace, &zero, c.y, y),
                 "cudnnConvolutionForward");
}

}  // namespace mltune::backends::gpu
