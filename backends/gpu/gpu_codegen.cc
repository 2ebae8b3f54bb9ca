#include "backends/gpu/gpu_codegen.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cpu/element_expr.h"
#include "backends/cpu/gemm_shape.h"
#include "backends/cpu/row_fusion.h"

namespace mltune::backends::gpu {
namespace {

using cpu::CType;
using cpu::Idx;
using cpu::Kernel;
using cpu::KernelKind;
using cpu::KernelParam;
using cpu::Linear;
using cpu::LiteralText;
using cpu::LoadAs;
using cpu::Product;
using cpu::StorageType;
using cpu::StoreAs;
using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;

constexpr int kWarp = 32;
// `impl` values from this one up: cuDNN's heuristic's first, second, ... algorithm.
constexpr int64_t kCudnnImpl = 5;
constexpr int64_t kCudnnAlgorithms = 4;

const cpu::TextDialect& CudaDialect() {
  static const cpu::TextDialect* d = new cpu::TextDialect{
      .std_ns = "mt_std::",
      .function_qualifier = "__device__ __forceinline__",
      .constant_qualifier = "static __device__ const",
  };
  return *d;
}

// Whether the reduce's operand's minor dimension is one it reduces: its lanes then read
// consecutive elements, so a warp or a block per output is coalesced; otherwise neighbouring
// outputs are neighbouring elements, and a thread per output is.
bool ReducesMinorDimension(const Instruction& reduce) {
  const int64_t rank = reduce.operand(0)->shape().rank();
  return rank > 0 && std::find(reduce.dimensions.begin(), reduce.dimensions.end(), rank - 1) !=
                         reduce.dimensions.end();
}

int64_t ReducedCount(const Instruction& reduce) {
  int64_t n = 1;
  for (int64_t d : reduce.dimensions) n *= reduce.operand(0)->shape().dimensions(d);
  return n;
}

// `expr` (a linear index below the product of `dims`) split over row-major `dims`, as index
// expressions: the outermost dimension needs no modulus.
Idx Decompose(const std::string& expr, const std::vector<int64_t>& dims) {
  Idx idx(dims.size(), "0");
  bool outermost = true;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    const int64_t inner = Product(std::vector<int64_t>(dims.begin() + d + 1, dims.end()));
    const std::string q =
        inner == 1 ? absl::StrCat("(", expr, ")") : absl::StrCat("((", expr, ") / ", inner, "LL)");
    idx[d] = outermost ? q : absl::StrCat("(", q, " % ", dims[d], "LL)");
    outermost = false;
  }
  return idx;
}

// Whether a loop kernel is elementwise over one shape with f32 outputs of a multiple of four
// elements: four consecutive elements per thread then load and store as float4 (its default),
// where a transpose or gather would scatter a thread's reads instead.
bool ElementwiseF32Loop(const Kernel& k) {
  if (k.outputs.empty()) return false;
  const std::vector<int64_t>& dims = k.outputs.front()->shape().dimensions();
  if (Product(dims) == 0 || Product(dims) % 4 != 0) return false;
  for (const Instruction* o : k.outputs) {
    if (o->shape().dimensions() != dims || o->shape().element_type() != PrimitiveType::kF32) {
      return false;
    }
  }
  auto same_or_scalar = [&](const Instruction* i) {
    return !i->shape().IsTuple() &&
           (i->shape().dimensions() == dims || i->shape().dimensions().empty());
  };
  for (const Instruction* m : k.members) {
    const bool elementwise =
        ir::IsElementwise(m->opcode()) || m->opcode() == Opcode::kConstant ||
        (m->opcode() == Opcode::kBroadcast && m->operand(0)->shape().dimensions().empty());
    if (!elementwise || !same_or_scalar(m)) return false;
    for (const Instruction* op : m->operands()) {
      if (!k.Contains(op) && !same_or_scalar(op)) return false;
    }
  }
  return true;
}

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

// How cuDNN's forward convolution takes a convolution kernel: one layout for x, w and y, which
// of them are read or written in place (the others are packed by generated launches; y then
// lands in a workspace the epilogue reads), and whether x's pack applies asymmetric padding
// (cuDNN pads symmetrically). nullopt where cuDNN cannot: batch groups, base dilation, window
// reversal, negative padding, an empty dimension, no or more than three spatial dimensions.
struct CudnnLayout {
  bool nhwc = false;
  bool x_direct = false, w_direct = false, y_direct = false;
  bool explicit_pad = false;
  int64_t pack_bytes = 0;  // what x's and w's packs write
};

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

class GpuEmitter : public cpu::ElementEmitter {
 public:
  GpuEmitter(const Kernel& kernel, const cpu::KernelConfig& config, cpu::ConstantPool* pool,
             std::vector<KernelParam> params)
      : ElementEmitter(kernel, CudaDialect()),
        config_(config),
        pool_(pool),
        params_(std::move(params)) {}

  absl::Status Emit(const std::string& name, GpuKernelProgram* program);

 private:
  int64_t Param(std::string_view name) const {
    for (size_t i = 0; i < params_.size(); ++i) {
      if (params_[i].name == name) return config_[i];
    }
    return 0;
  }

  std::string External(const Instruction* instr, const Idx& idx) override {
    const Instruction* base = cpu::BaseValue(instr);
    const PrimitiveType t = instr->shape().element_type();
    if (base->opcode() == Opcode::kConstant) {
      if (base->literal->element_count() == 1) return LiteralText(*base->literal, 0, dialect_);
      return Var(CType(t), LoadAs(t, absl::StrCat(pool_->Name(base), "[",
                                                  Linear(instr->shape().dimensions(), idx), "]")));
    }
    auto in = in_ptr_.find(base);
    if (in == in_ptr_.end()) {
      missing_ = absl::StrCat("kernel '", k_.name, "' reads '", base->name(), "', not an input");
      return "0";
    }
    return Var(CType(t), LoadAs(t, absl::StrCat(in->second, "[",
                                                Linear(instr->shape().dimensions(), idx), "]")));
  }

  // A GEMM's product in its epilogue: the thread's accumulator where the epilogue reads it at the
  // thread's own element, or the product buffer.
  std::string Provided(const Instruction* instr, const Idx& idx) override {
    if (init_phase_ && instr == k_.root) return Value(instr->operand(0), idx);
    if (instr != k_.root || product_.empty()) return "";
    if (!product_buffer_.empty()) {
      const std::string offset =
          product_offset_ ? product_offset_(idx) : Linear(instr->shape().dimensions(), idx);
      return Var("float", LoadAs(product_type_, absl::StrCat(product_buffer_, "[", offset, "]")));
    }
    if (idx != product_idx_) {
      product_elsewhere_ = true;
      return "0.f";
    }
    return product_;
  }

  // A scalar computation as a device function; returns its name.
  std::string Reducer(const ir::Computation& comp) {
    auto it = reducers_.find(&comp);
    if (it != reducers_.end()) return it->second;
    const std::string name = absl::StrCat("red_", fn_, "_", reducers_.size());
    helpers_ += cpu::ScalarFunction(comp, name, dialect_);
    reducers_[&comp] = name;
    return name;
  }

  // Opens `extern "C" __global__ void entry(...)` over `args` and records its launch.
  void OpenFunction(const std::string& entry, int32_t block, const std::vector<int64_t>& grid,
                    const std::vector<GpuArg>& args);
  void CloseFunction();
  std::string ArgDecl(const GpuArg& a);
  std::vector<GpuArg> AllBuffers() const;
  // Stores `outputs` (one index space per shape) for the linear element `lin` of each.
  void StoreAt(const std::vector<const Instruction*>& outputs, const std::string& lin);
  // The outputs other than `root`, in a grid-stride loop over all the launch's threads.
  void StoreOthersGridStride(const std::vector<const Instruction*>& others);
  // Folds `acc` across a warp with reducer `fn` (every lane gets the result).
  void WarpFold(const std::string& fn, const std::string& acc);
  // Folds `acc` across the block (`block` threads) into a value every thread reads; `init` fills
  // the unused slots.
  std::string BlockFold(const std::string& fn, const std::string& type, const std::string& acc,
                        const std::string& init, int64_t block);

  absl::Status EmitLoop();
  absl::Status EmitReduce();
  absl::Status EmitRow();
  absl::Status EmitReduceWindow();
  absl::Status EmitScatter();
  // Dots and convolutions: one tiled GEMM over a map from its (group, row, contraction, column)
  // to the operands' and the product's elements.
  struct GemmMap {
    int64_t batch = 1, m = 1, n = 1, k = 1;
    // The lhs index of (group, row, contraction); `guard` receives a condition under which the
    // element exists (else it reads as 0), or "".
    std::function<Idx(const std::string&, const std::string&, const std::string&, std::string*)> a;
    std::function<Idx(const std::string&, const std::string&, const std::string&)> b, out;
    // For a library GEMM: whether the lhs (rhs) operand's own row-major order is the GEMM's
    // [batch][m][k] ([batch][k][n]), so that a kernel input can be passed in place; whether the
    // product's [batch][m][n] order is the op's output order; and the product buffer's offset of
    // the op's output element at an index.
    bool a_in_order = false, b_in_order = false, out_in_order = true;
    std::function<std::string(const Idx&)> product_offset;
  };
  absl::Status EmitMatmul();
  absl::StatusOr<GemmMap> DotMap();
  absl::StatusOr<GemmMap> ConvolutionMap();
  absl::Status EmitGemm(const GemmMap& map);
  // The product on cuBLASLt (GpuLaunch::Kind::kGemm), its operands packed to row-major f32 where
  // they are not so already, its epilogue a launch after it.
  absl::Status EmitLibraryGemm(const GemmMap& map);
  // The convolution on cuDNN (GpuLaunch::Kind::kConv, CudnnLayoutOf), x and w packed where they
  // are not read in place, the epilogue a launch after it.
  absl::Status EmitCudnnConvolution();
  // A launch writing `from`'s elements into workspace `ws` as a row-major f32 array of `dims`:
  // `index` maps a position (index strings over `dims`) to `from`'s index and a guard under
  // which the element exists (else 0).
  void EmitPack(const std::string& entry, const GpuArg& ws, const std::vector<int64_t>& dims,
                const Instruction* from, const std::function<Idx(const Idx&, std::string*)>& index);
  // The epilogue launch: `rest` of the outputs, reading the root's value from `product`'s buffer
  // (f32) at `offset`.
  void EmitProductEpilogue(const std::vector<const Instruction*>& rest, const GpuArg& product,
                           const std::function<std::string(const Idx&)>& offset);
  // A new workspace buffer of `bytes`; its GpuArg.
  GpuArg Workspace(int64_t bytes) {
    program_->workspaces.push_back(bytes);
    return {GpuArg::Kind::kWorkspace, static_cast<int64_t>(program_->workspaces.size()) - 1};
  }

  cpu::KernelConfig config_;
  cpu::ConstantPool* pool_;
  std::vector<KernelParam> params_;
  GpuKernelProgram* program_ = nullptr;
  std::string fn_, helpers_, functions_;
  std::unordered_map<const Instruction*, std::string> in_ptr_, out_ptr_;
  std::unordered_map<const ir::Computation*, std::string> reducers_;
  std::string missing_;
  // The GEMM epilogue (Provided): the accumulator and its element, or the product's buffer.
  std::string product_, product_buffer_;
  PrimitiveType product_type_ = PrimitiveType::kF32;       // as the product's buffer stores it
  std::function<std::string(const Idx&)> product_offset_;  // unset: the op's row-major order
  Idx product_idx_;
  bool product_elsewhere_ = false;
  // A scatter's first launch: the scatter's value is its operand's.
  bool init_phase_ = false;
};

std::string GpuEmitter::ArgDecl(const GpuArg& a) {
  switch (a.kind) {
    case GpuArg::Kind::kInput: {
      const Instruction* in = k_.inputs[static_cast<size_t>(a.index)];
      const std::string t = StorageType(in->shape().element_type());
      return absl::StrCat("const ", t, "* __restrict__ in", a.index);
    }
    case GpuArg::Kind::kOutput: {
      const Instruction* o = k_.outputs[static_cast<size_t>(a.index)];
      return absl::StrCat(StorageType(o->shape().element_type()), "* __restrict__ out", a.index);
    }
    case GpuArg::Kind::kWorkspace:
      return absl::StrCat("float* __restrict__ ws", a.index);
  }
  return "";
}

std::vector<GpuArg> GpuEmitter::AllBuffers() const {
  std::vector<GpuArg> args;
  for (size_t i = 0; i < k_.inputs.size(); ++i) {
    args.push_back({GpuArg::Kind::kInput, static_cast<int64_t>(i)});
  }
  for (size_t j = 0; j < k_.outputs.size(); ++j) {
    args.push_back({GpuArg::Kind::kOutput, static_cast<int64_t>(j)});
  }
  return args;
}

void GpuEmitter::OpenFunction(const std::string& entry, int32_t block,
                              const std::vector<int64_t>& grid, const std::vector<GpuArg>& args) {
  GpuLaunch launch;
  launch.entry = entry;
  for (size_t i = 0; i < grid.size() && i < 3; ++i) launch.grid[i] = std::max<int64_t>(1, grid[i]);
  launch.block = block;
  launch.args = args;
  program_->launches.push_back(launch);
  std::vector<std::string> decls;
  for (const GpuArg& a : args) decls.push_back(ArgDecl(a));
  code_.clear();
  memo_.clear();
  memo_.emplace_back();
  Line(absl::StrCat("extern \"C\" __global__ void __launch_bounds__(", block, ") ", entry, "("));
  Line(absl::StrCat("    ", absl::StrJoin(decls, ",\n      "), ") {"));
  indent_ = "  ";
}

void GpuEmitter::CloseFunction() {
  absl::StrAppend(&functions_, code_, "}\n\n");
  code_.clear();
}

void GpuEmitter::StoreAt(const std::vector<const Instruction*>& outputs, const std::string& lin) {
  std::map<std::vector<int64_t>, std::vector<const Instruction*>> groups;
  std::vector<std::vector<int64_t>> order;
  for (const Instruction* o : outputs) {
    auto& g = groups[o->shape().dimensions()];
    if (g.empty()) order.push_back(o->shape().dimensions());
    g.push_back(o);
  }
  for (const std::vector<int64_t>& dims : order) {
    const int64_t n = Product(dims);
    if (n == 0) continue;
    Open(absl::StrCat("if (", lin, " < ", n, "LL) {"));
    PushScope();
    const Idx idx = Decompose(lin, dims);
    for (const Instruction* o : groups[dims]) {
      const std::string v = Value(o, idx);
      Line(absl::StrCat(out_ptr_.at(o), "[", lin, "] = ", StoreAs(o->shape().element_type(), v),
                        ";"));
    }
    PopScope();
    Close();
  }
}

void GpuEmitter::StoreOthersGridStride(const std::vector<const Instruction*>& others) {
  int64_t n = 0;
  for (const Instruction* o : others) n = std::max(n, Product(o->shape().dimensions()));
  if (n == 0) return;
  const std::string g = NewName("g");
  Open(absl::StrCat("for (int64_t ", g, " = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; ", g,
                    " < ", n, "LL; ", g, " += (int64_t)gridDim.x * blockDim.x) {"));
  StoreAt(others, g);
  Close();
}

void GpuEmitter::WarpFold(const std::string& fn, const std::string& acc) {
  Line("#pragma unroll");
  Open(absl::StrCat("for (int m = ", kWarp / 2, "; m > 0; m >>= 1) {"));
  Line(absl::StrCat(acc, " = ", fn, "(", acc, ", mt_shfl_xor(", acc, ", m));"));
  Close();
}

std::string GpuEmitter::BlockFold(const std::string& fn, const std::string& type,
                                  const std::string& acc, const std::string& init, int64_t block) {
  const int64_t warps = block / kWarp;
  WarpFold(fn, acc);
  const std::string sm = NewName("sm");
  Line(absl::StrCat("__shared__ ", type, " ", sm, "[", kWarp + 1, "];"));
  Line(absl::StrCat("if ((threadIdx.x & ", kWarp - 1, ") == 0) ", sm, "[threadIdx.x / ", kWarp,
                    "] = ", acc, ";"));
  Line("__syncthreads();");
  Open(absl::StrCat("if (threadIdx.x < ", kWarp, ") {"));
  const std::string w = NewName("w");
  Line(absl::StrCat(type, " ", w, " = threadIdx.x < ", warps, " ? ", sm, "[threadIdx.x] : ", init,
                    ";"));
  WarpFold(fn, w);
  Line(absl::StrCat("if (threadIdx.x == 0) ", sm, "[", kWarp, "] = ", w, ";"));
  Close();
  Line("__syncthreads();");
  return Var(type, absl::StrCat(sm, "[", kWarp, "]"));
}

absl::Status GpuEmitter::EmitLoop() {
  const int64_t block = Param("block"), items = Param("items"), vector = Param("vector");
  int64_t n = 0;
  bool all_f32 = true;
  for (const Instruction* o : k_.outputs) {
    n = std::max(n, Product(o->shape().dimensions()));
    all_f32 &= o->shape().element_type() == PrimitiveType::kF32 &&
               Product(o->shape().dimensions()) % vector == 0;
  }
  const int64_t per_block = block * items * vector;
  OpenFunction(fn_, static_cast<int32_t>(block), {(n + per_block - 1) / per_block}, AllBuffers());
  if (n > 0) {
    Line("#pragma unroll");
    Open(absl::StrCat("for (int it = 0; it < ", items, "; ++it) {"));
    Line(absl::StrCat("const int64_t base = ((int64_t)blockIdx.x * ", items, " + it) * ",
                      block * vector, "LL + (int64_t)threadIdx.x * ", vector, ";"));
    if (vector > 1 && all_f32) {
      // Each output's `vector` elements computed, then stored as one float2 or float4. Every
      // buffer starts a device allocation (256-byte aligned): said, so that the compiler can
      // load an f32 input's `vector` consecutive elements as one vector too.
      for (size_t i = 0; i < k_.inputs.size(); ++i) {
        if (k_.inputs[i]->shape().element_type() != PrimitiveType::kF32) continue;
        Line(absl::StrCat("in", i, " = (const float*)__builtin_assume_aligned(in", i, ", ",
                          4 * vector, ");"));
      }
      Open(absl::StrCat("if (base + ", vector, " <= ", n, "LL) {"));
      PushScope();
      std::map<const Instruction*, std::vector<std::string>> values;
      for (int64_t v = 0; v < vector; ++v) {
        const std::string lin = IntVar(absl::StrCat("base + ", v));
        for (const Instruction* o : k_.outputs) {
          if (Product(o->shape().dimensions()) < n) continue;
          values[o].push_back(Value(o, Decompose(lin, o->shape().dimensions())));
        }
      }
      for (const auto& [o, vs] : values) {
        Line(absl::StrCat("*(float", vector, "*)(", out_ptr_.at(o), " + base) = make_float", vector,
                          "(", absl::StrJoin(vs, ", "), ");"));
      }
      PopScope();
      Close();
      // The tail and the smaller outputs element by element.
      Open("{");
      Line(absl::StrCat("const bool whole = base + ", vector, " <= ", n, "LL;"));
      for (int64_t v = 0; v < vector; ++v) {
        Open("{");
        PushScope();
        const std::string lin = IntVar(absl::StrCat("base + ", v));
        std::vector<const Instruction*> rest;
        for (const Instruction* o : k_.outputs) {
          if (Product(o->shape().dimensions()) < n) rest.push_back(o);
        }
        if (!rest.empty()) StoreAt(rest, lin);
        Open("if (!whole) {");
        PushScope();
        std::vector<const Instruction*> full;
        for (const Instruction* o : k_.outputs) {
          if (Product(o->shape().dimensions()) == n) full.push_back(o);
        }
        StoreAt(full, lin);
        PopScope();
        Close();
        PopScope();
        Close();
      }
      Close();
    } else {
      for (int64_t v = 0; v < vector; ++v) {
        Open("{");
        PushScope();
        StoreAt(k_.outputs, IntVar(absl::StrCat("base + ", v)));
        PopScope();
        Close();
      }
    }
    Close();
  }
  CloseFunction();
  return absl::OkStatus();
}

absl::Status GpuEmitter::EmitReduce() {
  const Instruction* r = k_.root;
  const Instruction* x = r->operand(0);
  const PrimitiveType t = r->shape().element_type();
  const std::string ct = CType(t);
  const std::vector<int64_t>& xd = x->shape().dimensions();
  const std::vector<int64_t>& od = r->shape().dimensions();
  std::vector<const Instruction*> others;
  for (const Instruction* o : k_.outputs) {
    if (o != r) others.push_back(o);
  }
  std::vector<bool> reduced(xd.size(), false);
  for (int64_t d : r->dimensions) reduced[static_cast<size_t>(d)] = true;
  std::vector<int64_t> red_sizes;
  for (size_t d = 0; d < xd.size(); ++d) {
    if (reduced[d]) red_sizes.push_back(xd[d]);
  }
  const int64_t outputs = Product(od), count = Product(red_sizes);
  const int64_t split = Param("split"), block = Param("block");
  // split 3: a block per kWarp consecutive outputs, its warps' lanes each folding a share of the
  // reduced elements (reads coalesced along the outputs), the shares combined in shared memory.
  const int64_t per_block = split == 0   ? block
                            : split == 1 ? block / kWarp
                            : split == 3 ? kWarp
                                         : 1;
  OpenFunction(fn_, static_cast<int32_t>(block), {(outputs + per_block - 1) / per_block},
               AllBuffers());
  StoreOthersGridStride(others);
  if (outputs > 0) {
    const std::string fn = Reducer(*r->to_apply());
    const std::string init = Value(r->operand(1), {});
    const std::string out = out_ptr_.at(r);
    std::string o, lane = "0", stride = "1";
    if (split == 0) {
      o = IntVar("(int64_t)blockIdx.x * blockDim.x + threadIdx.x");
    } else if (split == 1) {
      o = IntVar(absl::StrCat("(int64_t)blockIdx.x * ", per_block, " + threadIdx.x / ", kWarp));
      lane = IntVar(absl::StrCat("threadIdx.x & ", kWarp - 1));
      stride = absl::StrCat(kWarp);
    } else if (split == 3) {
      o = IntVar(
          absl::StrCat("(int64_t)blockIdx.x * ", kWarp, " + (threadIdx.x & ", kWarp - 1, ")"));
      lane = IntVar(absl::StrCat("threadIdx.x / ", kWarp));
      stride = absl::StrCat(block / kWarp);
    } else {
      o = IntVar("(int64_t)blockIdx.x");
      lane = IntVar("threadIdx.x");
      stride = absl::StrCat(block);
    }
    // A warp's or block's lanes stay together through the folds: the guard covers only the reads
    // and the store.
    const std::string live = IntVar(absl::StrCat(o, " < ", outputs, "LL"));
    const std::string acc = NewName("acc");
    Line(absl::StrCat(ct, " ", acc, " = ", init, ";"));
    Open(absl::StrCat("if (", live, ") {"));
    Open(absl::StrCat("for (int64_t j = ", lane, "; j < ", count, "LL; j += ", stride, ") {"));
    PushScope();
    const Idx oi = Decompose(o, od), ri = Decompose("j", red_sizes);
    Idx idx(xd.size());
    size_t a = 0, b = 0;
    for (size_t d = 0; d < xd.size(); ++d) idx[d] = reduced[d] ? ri[b++] : oi[a++];
    const std::string v = Value(x, idx);
    Line(absl::StrCat(acc, " = ", fn, "(", acc, ", ", v, ");"));
    PopScope();
    Close();
    Close();
    std::string result = acc;
    if (split == 1) WarpFold(fn, acc);
    if (split == 2) result = BlockFold(fn, ct, acc, init, block);
    if (split == 3) {
      const std::string sm = NewName("sm");
      const int64_t lanes = block / kWarp;
      Line(absl::StrCat("__shared__ ", ct, " ", sm, "[", lanes, "][", kWarp + 1, "];"));
      Line(absl::StrCat(sm, "[", lane, "][threadIdx.x & ", kWarp - 1, "] = ", acc, ";"));
      Line("__syncthreads();");
      Open(absl::StrCat("if (", lane, " == 0) {"));
      Open(absl::StrCat("for (int i = 1; i < ", lanes, "; ++i) {"));
      Line(
          absl::StrCat(acc, " = ", fn, "(", acc, ", ", sm, "[i][threadIdx.x & ", kWarp - 1, "]);"));
      Close();
      Close();
    }
    Line(absl::StrCat("if (", live, (split == 0 ? "" : absl::StrCat(" && ", lane, " == 0")), ") ",
                      out, "[", o, "] = ", StoreAs(t, result), ";"));
  }
  CloseFunction();
  return absl::OkStatus();
}

absl::Status GpuEmitter::EmitRow() {
  std::vector<const Instruction*> reduces;
  for (const Instruction* m : k_.members) {
    if (m->opcode() == Opcode::kReduce) reduces.push_back(m);
  }
  std::vector<int64_t> outer;
  if (reduces.empty() || !cpu::RowReduce(*reduces.front(), &outer)) {
    return absl::InternalError(absl::StrCat("row kernel '", k_.name, "' has no row reduce"));
  }
  const int64_t rows = Product(outer), block = Param("block");
  const bool warp = Param("group") == 1;
  const int64_t per_block = warp ? block / kWarp : 1;
  OpenFunction(fn_, static_cast<int32_t>(block), {(rows + per_block - 1) / per_block},
               AllBuffers());
  const std::string row =
      IntVar(warp ? absl::StrCat("(int64_t)blockIdx.x * ", per_block, " + threadIdx.x / ", kWarp)
                  : "(int64_t)blockIdx.x");
  const std::string lane = IntVar(warp ? absl::StrCat("threadIdx.x & ", kWarp - 1) : "threadIdx.x");
  const int64_t group = warp ? kWarp : block;
  // A warp past the last row still folds (its lanes hold the init values), so a block's
  // __syncthreads stay uniform; it only skips the reads and stores.
  const std::string live = IntVar(absl::StrCat(row, " < ", rows, "LL"));
  const Idx oi = Decompose(row, outer);
  for (const Instruction* r : reduces) {
    const PrimitiveType t = r->shape().element_type();
    const std::string ct = CType(t);
    const int64_t n = r->operand(0)->shape().dimensions().back();
    const std::string fn = Reducer(*r->to_apply());
    const std::string init = Value(r->operand(1), {});
    const std::string acc = NewName("acc");
    Line(absl::StrCat(ct, " ", acc, " = ", init, ";"));
    Open(absl::StrCat("if (", live, ") {"));
    Open(absl::StrCat("for (int64_t c = ", lane, "; c < ", n, "LL; c += ", group, ") {"));
    PushScope();
    Idx idx = oi;
    idx.push_back("c");
    const std::string v = Value(r->operand(0), idx);
    Line(absl::StrCat(acc, " = ", fn, "(", acc, ", ", v, ");"));
    PopScope();
    Close();
    Close();
    std::string value = acc;
    if (warp) {
      WarpFold(fn, acc);
    } else {
      value = BlockFold(fn, ct, acc, init, block);
    }
    memo_.back()[MemoKey(r, oi)] = value;
  }
  Open(absl::StrCat("if (", live, ") {"));
  std::map<int64_t, std::vector<const Instruction*>> by_length;
  for (const Instruction* o : k_.outputs) {
    if (o->shape().dimensions().size() == outer.size()) {
      const std::string v = Value(o, oi);
      Line(absl::StrCat("if (", lane, " == 0) ", out_ptr_.at(o), "[", row,
                        "] = ", StoreAs(o->shape().element_type(), v), ";"));
    } else {
      by_length[o->shape().dimensions().back()].push_back(o);
    }
  }
  for (const auto& [n, outs] : by_length) {
    Open(absl::StrCat("for (int64_t c = ", lane, "; c < ", n, "LL; c += ", group, ") {"));
    PushScope();
    Idx idx = oi;
    idx.push_back("c");
    for (const Instruction* o : outs) {
      const std::string v = Value(o, idx);
      Line(absl::StrCat(out_ptr_.at(o), "[", Linear(o->shape().dimensions(), idx),
                        "] = ", StoreAs(o->shape().element_type(), v), ";"));
    }
    PopScope();
    Close();
  }
  Close();
  CloseFunction();
  return absl::OkStatus();
}

absl::Status GpuEmitter::EmitReduceWindow() {
  const Instruction* r = k_.root;
  const Instruction* x = r->operand(0);
  const PrimitiveType t = r->shape().element_type();
  const std::vector<int64_t>& xd = x->shape().dimensions();
  const std::vector<int64_t>& od = r->shape().dimensions();
  std::vector<const Instruction*> others;
  for (const Instruction* o : k_.outputs) {
    if (o != r) others.push_back(o);
  }
  const int64_t block = Param("block"), outputs = Product(od);
  OpenFunction(fn_, static_cast<int32_t>(block), {(outputs + block - 1) / block}, AllBuffers());
  StoreOthersGridStride(others);
  std::vector<ir::WindowDim> win(xd.size());
  if (r->window.has_value()) {
    for (size_t d = 0; d < xd.size() && d < r->window->dims.size(); ++d) {
      win[d] = r->window->dims[d];
    }
  }
  if (outputs > 0) {
    const std::string fn = Reducer(*r->to_apply());
    const std::string o = IntVar("(int64_t)blockIdx.x * blockDim.x + threadIdx.x");
    Open(absl::StrCat("if (", o, " < ", outputs, "LL) {"));
    const Idx oi = Decompose(o, od);
    const std::string acc = NewName("acc");
    Line(absl::StrCat(CType(t), " ", acc, " = ", Value(r->operand(1), {}), ";"));
    Idx xi(xd.size());
    std::vector<std::string> valid;
    int opened = 0;
    for (size_t d = 0; d < xd.size(); ++d) {
      const ir::WindowDim& w = win[d];
      std::string wv = "0";
      if (w.size != 1) {
        wv = NewName("w");
        Open(absl::StrCat("for (int64_t ", wv, " = 0; ", wv, " < ", w.size, "; ++", wv, ") {"));
        ++opened;
      }
      const std::string raw = IntVar(absl::StrCat("(", oi[d], ")*", w.stride, " - ", w.padding_low,
                                                  " + ", wv, "*", w.window_dilation));
      std::string pos = raw;
      if (w.base_dilation > 1) {
        valid.push_back(absl::StrCat(raw, " >= 0 && ", raw, " % ", w.base_dilation, " == 0"));
        pos = IntVar(absl::StrCat(raw, " / ", w.base_dilation));
      }
      if (w.padding_low != 0 || w.padding_high != 0 || w.base_dilation > 1) {
        valid.push_back(absl::StrCat(pos, " >= 0 && ", pos, " < ", xd[d]));
      }
      xi[d] = pos;
    }
    if (!valid.empty()) Open(absl::StrCat("if (", absl::StrJoin(valid, " && "), ") {"));
    PushScope();
    const std::string v = Value(x, xi);
    Line(absl::StrCat(acc, " = ", fn, "(", acc, ", ", v, ");"));
    PopScope();
    if (!valid.empty()) Close();
    for (int i = 0; i < opened; ++i) Close();
    Line(absl::StrCat(out_ptr_.at(r), "[", o, "] = ", StoreAs(t, acc), ";"));
    Close();
  }
  CloseFunction();
  return absl::OkStatus();
}

// XLA's scatter: the output starts as the operand (one launch), then each update element folds
// into its target (a second launch). Where the combiner is an addition of a type the GPU adds
// atomically, a thread per update element; otherwise one thread walks the updates in order,
// which keeps the evaluator's order for any combiner.
absl::Status GpuEmitter::EmitScatter() {
  const Instruction* s = k_.root;
  if (s->opcode() != Opcode::kScatter || s->operand_count() != 3) {
    return absl::UnimplementedError(
        absl::StrCat("kernel '", k_.name, "': ", std::string(ir::OpcodeName(s->opcode())),
                     s->opcode() == Opcode::kScatter ? " of several arrays" : "",
                     " is not generated for the GPU yet"));
  }
  const Instruction* updates = s->operand(2);
  const PrimitiveType t = s->shape().element_type();
  const std::vector<int64_t>& od = s->shape().dimensions();
  const std::vector<int64_t>& ud = updates->shape().dimensions();
  const int64_t block = Param("block");
  std::vector<const Instruction*> copied = {s};
  for (const Instruction* o : k_.outputs) {
    if (o != s) copied.push_back(o);
  }
  int64_t total = 0;
  for (const Instruction* o : copied) total = std::max(total, Product(o->shape().dimensions()));
  // The operand, with `s` read as its operand while the first launch copies it.
  init_phase_ = true;
  OpenFunction(absl::StrCat(fn_, "_init"), static_cast<int32_t>(block),
               {std::max<int64_t>(1, std::min<int64_t>((total + block - 1) / block, 65535))},
               AllBuffers());
  StoreOthersGridStride(copied);
  CloseFunction();
  init_phase_ = false;
  const int64_t count = Product(ud);
  if (count == 0 || Product(od) == 0) return absl::OkStatus();
  const Instruction* root = s->to_apply()->root();
  const bool add = root->opcode() == Opcode::kAdd && root->operand(0) != root->operand(1) &&
                   root->operand(0)->opcode() == Opcode::kParameter &&
                   root->operand(1)->opcode() == Opcode::kParameter;
  const bool atomic =
      add && (t == PrimitiveType::kF32 || t == PrimitiveType::kF64 || t == PrimitiveType::kS32 ||
              t == PrimitiveType::kU32 || t == PrimitiveType::kU64);
  const int32_t threads = atomic ? static_cast<int32_t>(block) : kWarp;
  OpenFunction(absl::StrCat(fn_, "_update"), threads, {atomic ? (count + block - 1) / block : 1},
               AllBuffers());
  const std::string u = NewName("u");
  if (atomic) {
    Line(absl::StrCat("const int64_t ", u, " = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;"));
    Open(absl::StrCat("if (", u, " < ", count, "LL) {"));
  } else {
    Open("if (threadIdx.x == 0) {");
    Open(absl::StrCat("for (int64_t ", u, " = 0; ", u, " < ", count, "LL; ++", u, ") {"));
  }
  PushScope();
  const Idx idx = Decompose(u, ud);
  // An update whose window does not fit the operand is skipped whole, as XLA does.
  std::vector<std::string> fits;
  const Idx target = ScatterTarget(s, idx, &fits);
  const std::string slot = absl::StrCat(out_ptr_.at(s), "[", Linear(od, target), "]");
  const std::string update = Value(updates, idx);
  Open(fits.empty() ? std::string("{") : absl::StrCat("if (", absl::StrJoin(fits, " && "), ") {"));
  if (atomic) {
    Line(absl::StrCat("atomicAdd(&", slot, ", (", StorageType(t), ")", update, ");"));
  } else {
    const std::string fn = Reducer(*s->to_apply());
    Line(absl::StrCat(slot, " = ",
                      StoreAs(t, absl::StrCat(fn, "(", LoadAs(t, slot), ", ", update, ")")), ";"));
  }
  Close();
  PopScope();
  if (!atomic) Close();
  Close();
  CloseFunction();
  return absl::OkStatus();
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

absl::Status GpuEmitter::Emit(const std::string& name, GpuKernelProgram* program) {
  program_ = program;
  fn_ = name;
  if (config_.empty()) {
    for (const KernelParam& p : params_) config_.push_back(p.choices.front());
  }
  if (config_.size() != params_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("kernel '", k_.name, "' takes ", params_.size(),
                                                   " GPU parameters; got ", config_.size()));
  }
  for (size_t i = 0; i < params_.size(); ++i) {
    const std::vector<int64_t>& c = params_[i].choices;
    if (std::find(c.begin(), c.end(), config_[i]) == c.end()) {
      return absl::InvalidArgumentError(absl::StrCat("kernel '", k_.name, "': ", params_[i].name,
                                                     "=", config_[i], " is not a choice"));
    }
  }
  for (size_t i = 0; i < k_.inputs.size(); ++i) in_ptr_[k_.inputs[i]] = absl::StrCat("in", i);
  for (size_t j = 0; j < k_.outputs.size(); ++j) out_ptr_[k_.outputs[j]] = absl::StrCat("out", j);
  absl::Status s;
  switch (k_.kind) {
    case KernelKind::kLoop:
      s = EmitLoop();
      break;
    case KernelKind::kReduce:
      s = EmitReduce();
      break;
    case KernelKind::kRow:
      s = EmitRow();
      break;
    case KernelKind::kReduceWindow:
      s = EmitReduceWindow();
      break;
    case KernelKind::kDot:
    case KernelKind::kConvolution:
      s = EmitMatmul();
      break;
    case KernelKind::kScatter:
      s = EmitScatter();
      break;
    default:
      s = CheckGpuSupported(k_);
      break;
  }
  if (!s.ok()) return s;
  if (!missing_.empty()) return absl::InternalError(missing_);
  program->source = absl::StrCat(GpuPrelude(), "\n", pool_->decls(), helpers_, "\n", functions_);
  return absl::OkStatus();
}

std::vector<int64_t> Choices(std::initializer_list<int64_t> values) { return values; }

}  // namespace

absl::Status CheckGpuSupported(const Kernel& kernel) {
  switch (kernel.kind) {
    case KernelKind::kLoop:
    case KernelKind::kReduce:
    case KernelKind::kRow:
    case KernelKind::kReduceWindow:
      return absl::OkStatus();
    case KernelKind::kDot:
    case KernelKind::kConvolution:
      return absl::OkStatus();
    case KernelKind::kScatter:
      if (kernel.root->opcode() == Opcode::kScatter && kernel.root->operand_count() == 3) {
        return absl::OkStatus();
      }
      break;
    default:
      break;
  }
  return absl::UnimplementedError(absl::StrCat("kernel '", kernel.name, "' (",
                                               cpu::KernelKindName(kernel.kind),
                                               "): this kind is not generated for the GPU yet"));
}

std::vector<KernelParam> GpuKernelParams(const Kernel& kernel) {
  switch (kernel.kind) {
    case KernelKind::kLoop:
      return {{"block", Choices({256, 128, 512, 1024})},
              {"items", Choices({1, 2, 4, 8})},
              {"vector", ElementwiseF32Loop(kernel) ? Choices({4, 1, 2}) : Choices({1, 2, 4})}};
    case KernelKind::kReduce: {
      const Instruction& r = *kernel.root;
      const int64_t count = ReducedCount(r);
      // Minor-dimension reductions: a warp per output, a block where a warp would loop long.
      // Major-dimension ones: a thread per output where the outputs fill the GPU, else warps of
      // consecutive outputs sharing the reduced elements in blocks of 512.
      const int64_t outputs = Product(r.shape().dimensions());
      const int64_t split = ReducesMinorDimension(r)         ? (count > 4096 ? 2 : 1)
                            : outputs >= 65536 || count < 64 ? 0
                                                             : 3;
      std::vector<int64_t> splits = {split};
      for (int64_t s : {0, 1, 2, 3}) {
        if (s != split) splits.push_back(s);
      }
      return {{"split", splits},
              {"block", split == 3 ? Choices({512, 256, 1024, 128}) : Choices({256, 128, 512})}};
    }
    case KernelKind::kRow: {
      int64_t n = 0;
      for (const Instruction* m : kernel.members) {
        if (m->opcode() == Opcode::kReduce)
          n = std::max(n, m->operand(0)->shape().dimensions().back());
      }
      return {{"group", n <= 1024 ? Choices({1, 0}) : Choices({0, 1})},
              {"block", Choices({256, 128, 512, 1024})}};
    }
    case KernelKind::kReduceWindow:
    case KernelKind::kScatter:
      return {{"block", Choices({256, 128, 512})}};
    case KernelKind::kDot:
    case KernelKind::kConvolution: {
      std::vector<KernelParam> params = {{"tile_m", Choices({64, 32, 128})},
                                         {"tile_n", Choices({64, 32, 128})},
                                         {"tile_k", Choices({16, 8, 32})},
                                         {"thread_m", Choices({4, 8, 2})},
                                         {"thread_n", Choices({4, 8, 2})}};
      // cuBLASLt by default where a product is large enough to amortize its call (and any
      // packing), as the CPU backend defaults such products to oneDNN. A grouped convolution
      // (depthwise) stays generated: its per-group products are too small for a library.
      // A grouped convolution cuDNN takes goes to cuDNN; an ungrouped one where cuDNN packs no
      // more bytes than cuBLASLt's im2col, pads symmetrically, and the GEMM has at least as many
      // rows as its contraction is long: on the H200, cuDNN's strict-f32 kernels beat
      // im2col + cuBLASLt 1.3-2x on ResNet-50's 56x56 and 224x224 layers but lost 1.6-3.7x on
      // its 28x28 to 7x7 ones (rows 784 to 49, contraction 1,152 to 4,608), and WaveNet's
      // causally padded 1-D convolutions ran 1.3x slower on it.
      const Instruction& r = *kernel.root;
      const cpu::GemmShape s = cpu::GemmShapeOf(r);
      const bool large = s.batch * s.m * s.n * s.k >= 65536;
      const bool ungrouped = r.feature_group_count <= 1 && r.batch_group_count <= 1;
      const std::optional<CudnnLayout> cudnn = CudnnLayoutOf(kernel);
      int64_t impl = large && (kernel.kind == KernelKind::kDot || ungrouped) ? 1 : 0;
      if (large && cudnn.has_value() &&
          (!ungrouped || (cudnn->pack_bytes <= LibraryGemmPackBytes(kernel) &&
                          !cudnn->explicit_pad && s.m >= s.k))) {
        impl = kCudnnImpl;
      }
      std::vector<int64_t> impls = {impl};
      for (int64_t i = 0; i < kCudnnImpl + (cudnn.has_value() ? kCudnnAlgorithms : 0); ++i) {
        if (i != impl) impls.push_back(i);
      }
      params.insert(params.begin(), {"impl", impls});
      return params;
    }
    default:
      return {};
  }
}

cpu::KernelConfig DefaultGpuConfig(const Kernel& kernel) {
  cpu::KernelConfig config;
  for (const KernelParam& p : GpuKernelParams(kernel)) config.push_back(p.choices.front());
  return config;
}

absl::StatusOr<GpuKernelProgram> GenerateGpuKernel(const cpu::LoweredModule& module, int32_t kernel,
                                                   const cpu::KernelConfig& config) {
  if (kernel < 0 || kernel >= static_cast<int32_t>(module.kernels.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("no kernel ", kernel, " (the module has ", module.kernels.size(), ")"));
  }
  const Kernel& k = module.kernels[static_cast<size_t>(kernel)];
  if (absl::Status s = CheckGpuSupported(k); !s.ok()) return s;
  GpuKernelProgram program;
  program.name = absl::StrCat("gpu_k", kernel);
  for (const Instruction* in : k.inputs) program.inputs.push_back(in->shape());
  for (const Instruction* o : k.outputs) program.outputs.push_back(o->shape());
  cpu::ConstantPool pool(CudaDialect());
  GpuEmitter emitter(k, config, &pool, GpuKernelParams(k));
  if (absl::Status s = emitter.Emit(program.name, &program); !s.ok()) return s;
  return program;
}

}  // namespace mltune::backends::gpu
