// Internal to mltune_gpu_backend: the emitter that writes a kernel's CUDA C++ (gpu_codegen.cc:
// launch helpers, loops, reductions, rows, windows, scatters; gpu_matmul.cc: dots and
// convolutions, generated or on cuBLASLt and cuDNN), and what GpuKernelParams asks of the
// convolution paths.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "backends/cpu/element_expr.h"
#include "backends/cpu/lowering.h"
#include "backends/gpu/gpu_codegen.h"

namespace mltune::backends::gpu::internal {

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

inline constexpr int kWarp = 32;
// `impl` values from this one up: cuDNN's heuristic's first, second, ... algorithm.
inline constexpr int64_t kCudnnImpl = 5;
inline constexpr int64_t kCudnnAlgorithms = 4;

// The CUDA dialect of the element expressions (cpu::TextDialect).
const cpu::TextDialect& CudaDialect();

// `expr` (a linear index below the product of `dims`) split over row-major `dims`, as index
// expressions: the outermost dimension needs no modulus.
Idx Decompose(const std::string& expr, const std::vector<int64_t>& dims);

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
std::optional<CudnnLayout> CudnnLayoutOf(const Kernel& k);

// What the cuBLASLt path of an ungrouped convolution packs: x as im2col unless it is an NHWC
// kernel input under a 1x1 window at stride 1 (ConvolutionMap's a_in_order), the weights unless
// an HWIO kernel input (b_in_order).
int64_t LibraryGemmPackBytes(const Kernel& k);

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

}  // namespace mltune::backends::gpu::internal
