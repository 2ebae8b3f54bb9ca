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
#include "backends/gpu/gpu_emitter.h"

namespace mltune::backends::gpu {
namespace internal {
namespace {

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

}  // namespace

const cpu::TextDialect& CudaDialect() {
  static const cpu::TextDialect* d = new cpu::TextDialect{
      .std_ns = "mt_std::",
      .function_qualifier = "__device__ __forceinline__",
      .constant_qualifier = "static __device__ const",
  };
  return *d;
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

}  // namespace internal

using cpu::Kernel;
using cpu::KernelKind;
using cpu::KernelParam;
using cpu::Product;
using internal::CudnnLayout;
using internal::CudaDialect;
using internal::CudnnLayoutOf;
using internal::GpuEmitter;
using internal::kCudnnAlgorithms;
using internal::kCudnnImpl;
using internal::LibraryGemmPackBytes;
using internal::ReducedCount;
using internal::ReducesMinorDimension;
using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;

namespace {

std::vector<int64_t> Choices(std::initializer_list<int64_t> values) { return values; }

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
