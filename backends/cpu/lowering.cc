#include "backends/cpu/lowering.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "backends/cpu/custom_calls.h"
#include "backends/cpu/gemm_shape.h"
#include "backends/cpu/onednn.h"
#include "backends/cpu/onednn_conv.h"
#include "backends/cpu/row_fusion.h"
#include "ir/evaluator/rng_bits.h"

namespace mltune::backends::cpu {
namespace {

using ir::Instruction;
using ir::Opcode;
using ir::PrimitiveType;

// A dot or convolution whose result and operands are f32: what the GEMMs take.
bool IsF32MatrixOp(const Instruction& instr) {
  return instr.shape().element_type() == PrimitiveType::kF32 &&
         instr.operand(0)->shape().element_type() == PrimitiveType::kF32 &&
         instr.operand(1)->shape().element_type() == PrimitiveType::kF32;
}

bool SupportedType(PrimitiveType t) {
  switch (t) {
    case PrimitiveType::kPred:
    case PrimitiveType::kS8:
    case PrimitiveType::kS16:
    case PrimitiveType::kS32:
    case PrimitiveType::kS64:
    case PrimitiveType::kU8:
    case PrimitiveType::kU16:
    case PrimitiveType::kU32:
    case PrimitiveType::kU64:
    case PrimitiveType::kF32:
    case PrimitiveType::kF64:
    case PrimitiveType::kBF16:
    case PrimitiveType::kF16:
      return true;
    default:
      return false;
  }
}

absl::Status Unsupported(const Instruction& instr, std::string_view why) {
  return absl::UnimplementedError(absl::StrCat(
      "cpu backend: ", std::string(ir::OpcodeName(instr.opcode())), " '", instr.name(), "'",
      instr.source_line() > 0 ? absl::StrCat(" (line ", instr.source_line(), ")") : "", ": ",
      std::string(why)));
}

// Opcodes a loop kernel computes per element.
bool IsLoopOp(Opcode op) {
  if (ir::IsElementwise(op)) {
    switch (op) {
      case Opcode::kComplex:
      case Opcode::kReal:
      case Opcode::kImag:
      case Opcode::kReducePrecision:
      case Opcode::kStochasticConvert:
        return false;
      default:
        return true;
    }
  }
  switch (op) {
    case Opcode::kBroadcast:
    case Opcode::kReshape:
    case Opcode::kBitcast:
    case Opcode::kTranspose:
    case Opcode::kSlice:
    case Opcode::kConcatenate:
    case Opcode::kPad:
    case Opcode::kIota:
    case Opcode::kReverse:
    case Opcode::kCopy:
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice:
    case Opcode::kGather:
      return true;
    default:
      return false;
  }
}

// A reducer the generated code can inline: scalar parameters, constants and loop ops only.
absl::Status CheckScalarComputation(const Instruction& user, const ir::Computation& comp) {
  for (const Instruction* i : comp.instructions()) {
    if (i->opcode() == Opcode::kParameter || i->opcode() == Opcode::kConstant) continue;
    if (!ir::IsElementwise(i->opcode()) || !IsLoopOp(i->opcode()) || !i->shape().IsScalar()) {
      return Unsupported(user, absl::StrCat("its computation '", comp.name(), "' uses ",
                                            std::string(ir::OpcodeName(i->opcode())),
                                            " (only scalar elementwise ops are inlined)"));
    }
  }
  if (comp.root()->shape().IsTuple()) return Unsupported(user, "variadic reducers are not lowered");
  return absl::OkStatus();
}

absl::Status CheckComputation(const ir::Computation& comp, bool entry);

std::string TypeError(PrimitiveType t) {
  return absl::StrCat("element type ", std::string(ir::PrimitiveTypeName(t)),
                      " is not generated (pred, s8-s64, u8-u64, bf16, f16, f32, f64 are)");
}

// A tuple-shaped value other than a tuple instruction gets one buffer per leaf: a flat tuple of
// static arrays of generated types, used only through its leaves' get-tuple-elements.
absl::Status CheckTupleValue(const Instruction& instr) {
  const int64_t n = instr.shape().tuple_size();
  for (int64_t i = 0; i < n; ++i) {
    const ir::Shape& s = instr.shape().tuple_shapes(i);
    if (!s.IsArray()) return Unsupported(instr, "nested tuples are not lowered");
    if (!SupportedType(s.element_type())) return Unsupported(instr, TypeError(s.element_type()));
    if (!s.is_static()) return Unsupported(instr, "dynamic shapes are not lowered");
  }
  bool normal = instr.parent() == nullptr || instr.parent()->root() != &instr;
  for (const Instruction* u : instr.users()) normal &= u->opcode() == Opcode::kGetTupleElement;
  for (int64_t i = 0; i < n; ++i) normal &= LeafValue(&instr, i) != nullptr;
  if (!normal) {
    return Unsupported(instr,
                       "a tuple-shaped value must be used through its leaves' get-tuple-elements "
                       "(RunCpuPasses puts modules in this form: NormalizeTupleUses)");
  }
  return absl::OkStatus();
}

absl::Status CheckWhile(const Instruction& instr) {
  const ir::Computation* cond = instr.while_condition();
  const ir::Computation* body = instr.while_body();
  if (cond == nullptr || body == nullptr) return Unsupported(instr, "while without computations");
  if (!cond->root()->shape().IsArray() ||
      cond->root()->shape().element_type() != PrimitiveType::kPred ||
      !cond->root()->shape().IsScalar()) {
    return Unsupported(instr, "the condition must return pred[]");
  }
  if (absl::Status s = CheckComputation(*cond, false); !s.ok()) return s;
  return CheckComputation(*body, false);
}

absl::Status CheckConditional(const Instruction& instr) {
  const ir::Shape& index = instr.operand(0)->shape();
  if (!index.IsScalar() || (index.element_type() != PrimitiveType::kPred &&
                            index.element_type() != PrimitiveType::kS32)) {
    return Unsupported(instr, "the branch index must be pred[] or s32[]");
  }
  const std::vector<ir::Computation*>& branches = instr.called_computations();
  if (branches.empty() || static_cast<int64_t>(branches.size()) + 1 != instr.operand_count()) {
    return Unsupported(instr, "one operand per branch is expected");
  }
  for (const ir::Computation* b : branches) {
    if (absl::Status s = CheckComputation(*b, false); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// A comparator the generated sort can inline (CheckScalarComputation) returning pred[].
absl::Status CheckSort(const Instruction& instr) {
  const ir::Computation* cmp = instr.to_apply();
  if (cmp == nullptr || instr.dimensions.size() != 1) {
    return Unsupported(instr, "sort needs a comparator and one dimension");
  }
  const std::vector<int64_t>& dims = instr.operand(0)->shape().dimensions();
  for (const Instruction* o : instr.operands()) {
    if (o->shape().dimensions() != dims) return Unsupported(instr, "sort operands differ in shape");
  }
  if (absl::Status s = CheckScalarComputation(instr, *cmp); !s.ok()) return s;
  if (!cmp->root()->shape().IsScalar() ||
      cmp->root()->shape().element_type() != PrimitiveType::kPred) {
    return Unsupported(instr, "the comparator must return pred[]");
  }
  return absl::OkStatus();
}

absl::Status CheckInstruction(const Instruction& instr, bool entry) {
  const Opcode op = instr.opcode();
  if (ir::IsCollective(op)) {
    return Unsupported(instr,
                       "collectives exchange data between devices; a single-device worker (and "
                       "the reference evaluator) runs one");
  }
  if (op == Opcode::kTuple || op == Opcode::kGetTupleElement) return absl::OkStatus();
  if (instr.shape().IsTuple()) {
    switch (op) {
      case Opcode::kParameter:
        if (entry) return Unsupported(instr, "entry parameters must be arrays");
        break;
      case Opcode::kWhile:
      case Opcode::kConditional:
      case Opcode::kSort:
      case Opcode::kRngBitGenerator:
        break;
      case Opcode::kReduce:
        return Unsupported(instr,
                           "variadic reduce (several operands, as an argmax's values and "
                           "indices) is not lowered");
      case Opcode::kTopK:
        return Unsupported(instr,
                           "topk runs as a sort of (values, indices), which RunCpuPasses makes of "
                           "it (DecomposeTopK)");
      case Opcode::kCustomCall:
        if (internal::FindLibraryCall(instr) == internal::LibraryCall::kNone) {
          return Unsupported(instr, absl::StrCat("custom-call target \"", instr.custom_call_target,
                                                 "\" is not lowered"));
        }
        break;
      default:
        return Unsupported(instr, "tuple-shaped results are not lowered");
    }
    if (absl::Status s = CheckTupleValue(instr); !s.ok()) return s;
  } else if (!instr.shape().IsArray()) {
    return Unsupported(instr, "only array and tuple values are lowered");
  } else {
    if (!SupportedType(instr.shape().element_type())) {
      return Unsupported(instr, TypeError(instr.shape().element_type()));
    }
    if (!instr.shape().is_static()) return Unsupported(instr, "dynamic shapes are not lowered");
  }
  for (const Instruction* operand : instr.operands()) {
    if (operand->shape().IsArray() && !SupportedType(operand->shape().element_type())) {
      return Unsupported(instr, "an operand's element type is not generated");
    }
  }
  switch (op) {
    case Opcode::kParameter:
      return absl::OkStatus();
    case Opcode::kConstant:
      if (instr.literal_elided || !instr.literal.has_value()) {
        return Unsupported(instr,
                           "the constant's value is elided (fill such constants with seeded "
                           "values: mltune run --fill-elided SEED, or MLTUNE_FILL_ELIDED=SEED)");
      }
      return absl::OkStatus();
    case Opcode::kBitcast:
      if (instr.shape().element_type() != instr.operand(0)->shape().element_type()) {
        return Unsupported(instr, "bitcasts that change the element type are not lowered");
      }
      return absl::OkStatus();
    case Opcode::kTriangularSolve: {
      const ir::Shape& a = instr.operand(0)->shape();
      const ir::Shape& b = instr.operand(1)->shape();
      const int64_t rank = a.rank();
      if (!instr.triangular_solve.has_value() || rank < 2 || b.rank() != rank ||
          !b.Compatible(instr.shape()) || a.element_type() != b.element_type() ||
          (a.element_type() != PrimitiveType::kF32 && a.element_type() != PrimitiveType::kF64) ||
          a.dimensions(rank - 1) != a.dimensions(rank - 2) ||
          b.dimensions(instr.triangular_solve->left_side ? rank - 2 : rank - 1) !=
              a.dimensions(rank - 1)) {
        return Unsupported(instr, "only f32 and f64 solves of matching batches are lowered");
      }
      return absl::OkStatus();
    }
    case Opcode::kWhile:
      return CheckWhile(instr);
    case Opcode::kConditional:
      return CheckConditional(instr);
    case Opcode::kSort:
      return CheckSort(instr);
    case Opcode::kRngBitGenerator:
      return ir::CheckRngBitGenerator(instr).status();
    case Opcode::kReduce:
      if (instr.operand_count() != 2) return Unsupported(instr, "variadic reduce is not lowered");
      return CheckScalarComputation(instr, *instr.to_apply());
    case Opcode::kReduceWindow:
      if (instr.operand_count() != 2) {
        return Unsupported(instr, "variadic reduce-window is not lowered");
      }
      return CheckScalarComputation(instr, *instr.to_apply());
    case Opcode::kDot:
      if (!IsF32MatrixOp(instr)) {
        // Other types fold element by element in a loop kernel (ElementEmitter::Compute).
        for (const Instruction* x :
             std::vector<const Instruction*>{&instr, instr.operand(0), instr.operand(1)}) {
          if (x->shape().element_type() == PrimitiveType::kPred) {
            return Unsupported(instr, "pred dots are not lowered");
          }
        }
      }
      return absl::OkStatus();
    case Opcode::kConvolution:
      if (instr.shape().element_type() != PrimitiveType::kF32 ||
          instr.operand(0)->shape().element_type() != PrimitiveType::kF32 ||
          instr.operand(1)->shape().element_type() != PrimitiveType::kF32) {
        return Unsupported(instr,
                           "only f32 convolutions are generated (bf16 and f16 ones run in f32 "
                           "once RunCpuPasses upcasts them: UpcastLowPrecisionMatrixOps)");
      }
      if (op == Opcode::kConvolution) {
        const ir::ConvolutionDimensionNumbers& dn = *instr.conv_dnums;
        const int64_t fg = instr.feature_group_count, bg = instr.batch_group_count;
        if (fg < 1 || bg < 1 || (fg > 1 && bg > 1)) {
          return Unsupported(instr, "feature and batch groups together are not lowered");
        }
        if (instr.shape().dimensions(dn.output_feature_dimension) % (fg * bg) != 0 ||
            instr.operand(0)->shape().dimensions(dn.input_batch_dimension) % bg != 0) {
          return Unsupported(instr, "features or batch not divisible by the group count");
        }
      }
      return absl::OkStatus();
    case Opcode::kBitcastConvert: {
      // Same-width reinterpretation only (a wider or narrower type changes the shape's rank).
      const PrimitiveType from = instr.operand(0)->shape().element_type();
      const PrimitiveType to = instr.shape().element_type();
      if (from == PrimitiveType::kPred || to == PrimitiveType::kPred ||
          ir::BitWidth(from) != ir::BitWidth(to)) {
        return Unsupported(instr, "bitcast-convert between types of different widths");
      }
      return absl::OkStatus();
    }
    case Opcode::kCustomCall:
      if (internal::FindKnownCustomCall(instr) == internal::KnownCustomCall::kNone &&
          internal::FindLibraryCall(instr) == internal::LibraryCall::kNone) {
        return Unsupported(instr, absl::StrCat("custom-call target \"", instr.custom_call_target,
                                               "\" is not lowered"));
      }
      return absl::OkStatus();
    case Opcode::kSelectAndScatter: {
      const std::vector<ir::Computation*>& called = instr.called_computations();
      if (instr.operand_count() != 3 || called.size() != 2 || !instr.window.has_value() ||
          instr.window->dims.size() != instr.operand(0)->shape().dimensions().size() ||
          instr.operand(1)->shape().dimensions().size() != instr.window->dims.size()) {
        return Unsupported(instr, "select-and-scatter needs a window of the operand's rank");
      }
      for (const ir::WindowDim& w : instr.window->dims) {
        if (w.stride < 1 || w.window_dilation < 1 || w.base_dilation < 1) {
          return Unsupported(instr, "bad window");
        }
      }
      if (absl::Status s = CheckScalarComputation(instr, *called[0]); !s.ok()) return s;
      return CheckScalarComputation(instr, *called[1]);
    }
    case Opcode::kScatter:
      if (instr.operand_count() != 3 || !instr.scatter_dnums.has_value() ||
          instr.to_apply() == nullptr) {
        return Unsupported(instr, "only a scatter of one operand is lowered");
      }
      return CheckScalarComputation(instr, *instr.to_apply());
    case Opcode::kGather:
      if (!instr.gather_dnums.has_value() ||
          static_cast<int64_t>(instr.gather_slice_sizes.size()) !=
              instr.operand(0)->shape().rank()) {
        return Unsupported(instr, "gather without dimension numbers or slice sizes");
      }
      return absl::OkStatus();
    default:
      if (IsLoopOp(op)) return absl::OkStatus();
      return Unsupported(instr, "no CPU lowering for this op");
  }
}

absl::Status CheckComputation(const ir::Computation& comp, bool entry) {
  for (const Instruction* p : comp.parameters()) {
    if (entry && !p->shape().IsArray()) return Unsupported(*p, "entry parameters must be arrays");
  }
  for (const Instruction* instr : comp.MakePostOrder()) {
    if (absl::Status s = CheckInstruction(*instr, entry); !s.ok()) return s;
  }
  return absl::OkStatus();
}

KernelKind KindOf(const Instruction& heavy) {
  switch (heavy.opcode()) {
    case Opcode::kReduce:
      return KernelKind::kReduce;
    case Opcode::kReduceWindow:
      return KernelKind::kReduceWindow;
    case Opcode::kDot:
      // The GEMMs are f32; a dot of another type (f64, integers, bf16) is a loop kernel, each
      // output element a fold over the contraction.
      return IsF32MatrixOp(heavy) ? KernelKind::kDot : KernelKind::kLoop;
    case Opcode::kConvolution:
      return KernelKind::kConvolution;
    case Opcode::kScatter:
    case Opcode::kSelectAndScatter:
      return KernelKind::kScatter;
    case Opcode::kWhile:
      return KernelKind::kWhile;
    case Opcode::kConditional:
      return KernelKind::kConditional;
    case Opcode::kSort:
      return KernelKind::kSort;
    case Opcode::kTriangularSolve:
    case Opcode::kRngBitGenerator:
      return KernelKind::kLibrary;
    case Opcode::kCustomCall:
      return internal::FindLibraryCall(heavy) != internal::LibraryCall::kNone ? KernelKind::kLibrary
                                                                              : KernelKind::kLoop;
    default:
      return KernelKind::kLoop;
  }
}

// Whether oneDNN's convolution primitive computes `conv` exactly as HLO does: 1-3 spatial
// dimensions, no base (lhs) dilation or window reversal, no negative padding (oneDNN has none of
// these), and no empty array.
bool OneDnnConvolutionFits(const Instruction& conv) {
  const ir::ConvolutionDimensionNumbers& dn = *conv.conv_dnums;
  const size_t ns = dn.input_spatial_dimensions.size();
  if (ns < 1 || ns > 3 || conv.batch_group_count != 1) return false;
  if (conv.shape().element_type() != PrimitiveType::kF32) return false;
  for (const ir::Shape* s : {&conv.shape(), &conv.operand(0)->shape(), &conv.operand(1)->shape()}) {
    if (s->ElementCount() == 0) return false;
  }
  return PlainConvolutionWindow(conv);
}

// Whether reduce-window `r` can run as rows (the innermost output dimension as the vector loop,
// the window loops outside it): any window, but no base dilation on that dimension.
bool RowsReduceWindow(const Instruction& r) {
  const std::vector<int64_t>& od = r.shape().dimensions();
  // Rows accumulate into the output, which holds pred and 16-bit floats in their stored form.
  const PrimitiveType t = r.shape().element_type();
  if (od.empty() || t == PrimitiveType::kPred || t == PrimitiveType::kBF16 ||
      t == PrimitiveType::kF16) {
    return false;
  }
  if (!r.window.has_value() || r.window->dims.size() < od.size()) return true;
  return r.window->dims[od.size() - 1].base_dilation <= 1;
}

// Whether every element of `x`, read inside `kernel` at a flat position through the minor index,
// is its element there: the operand and its fused producers are elementwise over x's dimensions
// or broadcasts of scalars (a broadcast along some dimensions, a transpose or a slice index by
// dimension).
bool FlatIndexable(const Kernel& kernel, const Instruction* x, const std::vector<int64_t>& dims) {
  if (!kernel.Contains(x)) return x->shape().dimensions() == dims;
  if (x->opcode() == Opcode::kBroadcast) return x->operand(0)->shape().dimensions().empty();
  if (x->opcode() == Opcode::kConstant) return x->shape().dimensions().empty();
  if (!ir::IsElementwise(x->opcode()) || x->shape().dimensions() != dims) return false;
  for (const Instruction* o : x->operands()) {
    if (!FlatIndexable(kernel, o, dims)) return false;
  }
  return true;
}

}  // namespace

int64_t FlatReducedRun(const Kernel& kernel, const Instruction& r, int64_t* length) {
  const std::vector<int64_t>& xd = r.operand(0)->shape().dimensions();
  std::vector<bool> reduced(xd.size(), false);
  for (int64_t d : r.dimensions) reduced[static_cast<size_t>(d)] = true;
  int64_t run = 0;
  while (run < static_cast<int64_t>(xd.size()) && reduced[xd.size() - 1 - run]) ++run;
  *length = 1;
  if (run >= 2 && FlatIndexable(kernel, r.operand(0), xd)) {
    for (int64_t i = 0; i < run; ++i) *length *= xd[xd.size() - 1 - i];
    return run;
  }
  *length =
      r.dimensions.empty()
          ? 1
          : xd[static_cast<size_t>(*std::max_element(r.dimensions.begin(), r.dimensions.end()))];
  return 1;
}

namespace {

// Partial accumulator counts for a reduction whose innermost reduced dimension has n elements:
// two AVX-512 vectors hide the add latency on long rows; short rows would leave them idle. Counts
// above n are not offered: the generated code folds such a row with one accumulator (codegen's
// LanesFor), so they would only repeat lanes=1 under another name.
std::vector<int64_t> Lanes(int64_t n) {
  std::vector<int64_t> lanes =
      n >= 128 ? std::vector<int64_t>{32, 16, 64, 8, 1} : std::vector<int64_t>{8, 1, 16, 32};
  std::erase_if(lanes, [n](int64_t l) { return l > 1 && l > n; });
  return lanes;
}

// A kernel's parameters by kind; ParamsOf drops those that change nothing.
std::vector<KernelParam> KindParams(const Kernel& kernel) {
  const Instruction& root = *kernel.root;
  switch (kernel.kind) {
    case KernelKind::kScatter:  // sequential: updates to one element apply in order
    case KernelKind::kWhile:
    case KernelKind::kConditional:
    case KernelKind::kSort:
    case KernelKind::kLibrary:
      return {};
    case KernelKind::kLoop:
      // block: 2-D tile of the two minor dimensions (transposes); simd: vectorize the inner loop.
      return {{"block", {0, 16, 32, 64}},
              {"unroll", {1, 2, 4, 8}},
              {"simd", {1, 0}},
              {"parallel", {0, 1}}};
    case KernelKind::kReduce: {
      // order 0: reduced dimensions innermost with `lanes` partial accumulators; order 1: walk
      // the operand in memory order, accumulating into the output, which vectorizes across the
      // output only where the operand's minor dimension is kept (a column reduction; there it is
      // the default). Where the minor dimension is reduced, order 1 folds each element into one
      // output after another through memory, a serial chain: measured on 40 such kernels it was
      // never faster beyond the timer's noise and over 1.5x slower on 25 (jit__reduce_max.11:
      // 30 ms against 3.3 ms), so it is not offered there.
      const std::vector<int64_t>& xd = root.operand(0)->shape().dimensions();
      const bool minor_kept =
          !xd.empty() && std::find(root.dimensions.begin(), root.dimensions.end(),
                                   static_cast<int64_t>(xd.size()) - 1) == root.dimensions.end();
      // `lanes` splits the innermost reduced dimension, or the flat run (order 0).
      int64_t innermost_reduced = 1;
      FlatReducedRun(kernel, root, &innermost_reduced);
      std::vector<KernelParam> params = {{"lanes", Lanes(innermost_reduced)}, {"parallel", {0, 1}}};
      if (minor_kept) params.insert(params.begin(), {"order", {1, 0}});
      return params;
    }
    case KernelKind::kReduceWindow: {
      // order 0: one output element at a time, its window innermost; order 1: rows (see
      // RowsReduceWindow), the default when windows are one element wide on the minor dimension
      // (column windows, the tree reduction's splits of non-minor dimensions), where order 0
      // would read with a stride, or at most kInnerWindowMax wide (pooling in NCHW: ResNet's
      // 3x3/s2 max pool on 64x112x112 1.21 -> 0.17 ms), where order 0's window loops per output
      // element do not vectorize.
      std::vector<int64_t> orders = {0};
      if (RowsReduceWindow(root)) {
        const size_t last = root.shape().dimensions().size() - 1;
        const bool narrow = !root.window.has_value() || root.window->dims.size() <= last ||
                            root.window->dims[last].size <= kInnerWindowMax;
        orders.insert(narrow ? orders.begin() : orders.end(), 1);
      }
      return {{"order", orders}, {"simd", {1, 0}}, {"parallel", {0, 1}}};
    }
    case KernelKind::kRow:
      // lanes: partial accumulators per reduce; cache: keep values several passes read in a
      // row buffer (0: recompute them).
      return {{"lanes", Lanes(root.operand(0)->shape().dimensions().back())},
              {"cache", {1, 0}},
              {"parallel", {0, 1}}};
    case KernelKind::kDot:
    case KernelKind::kConvolution: {
      // impl 0: the generated GEMM; 1: oneDNN's sgemm (when the build found it); for the
      // convolutions oneDNN's primitive handles, 2: its convolution primitive on the buffers as
      // they are (strided memory descriptors), 3: the same with oneDNN's preferred (blocked)
      // layouts and reorders around it, as PyTorch does; for depthwise convolutions, 4; for batched
      // dots, 5; for grouped convolutions, 6. Which of 2
      // and 3 wins depends on the shape (measured: blocked layouts win on 3x3 layers, reorders lose
      // on 1x1 ones). Then the generated GEMM's register tile and cache blocks, those that can
      // change its code for this shape (GemmParamsFor).
      std::vector<int64_t> impls = {0};
      if (OneDnnAvailable()) {
        impls.push_back(1);
        if (kernel.kind == KernelKind::kConvolution && OneDnnConvolutionFits(root)) {
          // Plain layouts only where oneDNN has a kernel for them: elsewhere it runs its
          // reference loops, 100-300x slower, a choice that only costs the tuner measurements.
          const bool plain = OneDnnRunsPlainLayoutsNatively(OneDnnConvShapeOf(root));
          if (plain) impls.push_back(2);
          impls.push_back(3);
          // The default is oneDNN's primitive (kDefaultConvolutionImpl's measurements): plain
          // layouts on pointwise (1x1) layers, where reorders cost more than they save, blocked
          // layouts elsewhere.
          bool pointwise = true;
          if (root.window.has_value()) {
            for (const ir::WindowDim& w : root.window->dims) pointwise &= w.size == 1;
          }
          const int64_t preferred = plain && pointwise ? 2 : 3;
          std::rotate(impls.begin(), std::find(impls.begin(), impls.end(), preferred),
                      std::find(impls.begin(), impls.end(), preferred) + 1);
        } else if (PreferOneDnnGemm(GemmShapeOf(root))) {
          std::swap(impls[0], impls[1]);  // dnnl_sgemm first: the default
        }
        // 5: oneDNN's matmul primitive, one call for the whole batch of products (attention's),
        // with frozen weights of one product prepacked; a choice for the tuner, not the
        // default: alone it beat per-product dnnl_sgemm calls 1.05-1.55x on attention shapes
        // and 1.13x on BERT's 768->3072 layers, but lost on others, and inside the fit models
        // the switched kernels ran slower in 4 of 5 (ViT 25.8 against 22.9 ms), on the held-out
        // ones in 2 of 3 (MoE 59.1 against 50.1 ms; Swin's faster, 7.5 against 8.3 ms):
        // bench/results_gemm_defaults_matmul.md, docs/cpu_backend.md.
        const GemmShape shape = GemmShapeOf(root);
        if (kernel.kind == KernelKind::kDot && !shape.matrix_vector()) {
          impls.push_back(kMatmulPrimitiveImpl);
        }
      }
      // 4: the generated depthwise kernel, the default wherever it applies: fitted on
      // MobileNetV2's depthwise layers and checked on the held-out models' (ConvNeXt's 7x7,
      // EfficientNet's, Mamba's 1-D), bench/results_gemm_defaults_depthwise.md.
      if (kernel.kind == KernelKind::kConvolution && DepthwiseConvolutionFits(root)) {
        impls.insert(impls.begin(), kDepthwiseImpl);
      }
      // 6: the generated grouped kernel, for groups of 4k output channels; the default on groups
      // of 8 and 16 (PreferGroupedKernel), fitted on a ResNeXt-50's grouped layers and checked on
      // the held-out RegNet's (bench/results_gemm_defaults_grouped.md).
      if (kernel.kind == KernelKind::kConvolution && GroupedConvolutionFits(root)) {
        if (PreferGroupedKernel(root)) {
          impls.insert(impls.begin(), kGroupedImpl);
        } else {
          impls.push_back(kGroupedImpl);
        }
      }
      std::vector<KernelParam> params = {{"impl", impls}};
      for (KernelParam& p : GemmParamsFor(GemmShapeOf(root))) params.push_back(std::move(p));
      params.push_back({"parallel", {0, 1}});
      return params;
    }
  }
  return {};
}

// Bytes of the array values in `values`.
int64_t ArrayBytes(const std::vector<const Instruction*>& values) {
  int64_t bytes = 0;
  for (const Instruction* v : values) {
    if (v->shape().IsArray()) bytes += v->shape().ByteSize();
  }
  return bytes;
}

// Bytes `kernel` reads through transposes that move their operand's minor dimension (the
// innermost one longer than 1): its output's inner loop then strides across the operand's rows.
int64_t StridedTransposeBytes(const Kernel& kernel) {
  int64_t bytes = 0;
  for (const Instruction* m : kernel.members) {
    if (m->opcode() != Opcode::kTranspose || !m->shape().IsArray()) continue;
    const std::vector<int64_t>& out = m->shape().dimensions();
    const std::vector<int64_t>& in = m->operand(0)->shape().dimensions();
    int64_t inner = static_cast<int64_t>(out.size()) - 1;
    while (inner >= 0 && out[static_cast<size_t>(inner)] == 1) --inner;
    if (inner < 0) continue;
    // Output dimension j reads operand dimension dimensions[j].
    const int64_t source = m->dimensions[static_cast<size_t>(inner)];
    const bool strided =
        std::any_of(in.begin() + source + 1, in.end(), [](int64_t d) { return d != 1; });
    if (strided) bytes += m->operand(0)->shape().ByteSize();
  }
  return bytes;
}

// KindParams less the parameters that cannot change the generated code or cannot pay: `parallel`
// splits the kernel's outer output loop, and a loop, reduction or window kernel with one output
// element has none. Such a choice would cost the tuner measurements that only sample the timer's
// noise, and would teach the cost model that threads are free (they cost about 1.4 us
// elsewhere). Nor is it offered on non-GEMM kernels below kParallelMinBytes of work: a loop's
// work is what it writes, a reduction's, window's or row kernel's what it reads.
std::vector<KernelParam> ParamsOf(const Kernel& kernel) {
  std::vector<KernelParam> params = KindParams(kernel);
  auto one_element = [](const Instruction* i) {
    return i->shape().IsArray() && i->shape().ElementCount() <= 1;
  };
  // A loop kernel loops over each output's shape; the others over their root's.
  const bool no_loop =
      kernel.kind == KernelKind::kLoop
          ? std::all_of(kernel.outputs.begin(), kernel.outputs.end(), one_element)
          : (kernel.kind == KernelKind::kReduce || kernel.kind == KernelKind::kReduceWindow) &&
                one_element(kernel.root);
  const bool gemm = kernel.kind == KernelKind::kDot || kernel.kind == KernelKind::kConvolution;
  const int64_t work_bytes =
      ArrayBytes(kernel.kind == KernelKind::kLoop ? kernel.outputs : kernel.inputs);
  if (no_loop || (!gemm && work_bytes < kParallelMinBytes)) {
    std::erase_if(params, [](const KernelParam& p) { return p.name == "parallel"; });
  } else if (gemm && work_bytes >= kParallelDefaultGemmBytes) {
    for (KernelParam& p : params) {
      if (p.name == "parallel") p.choices = {1, 0};
    }
  }
  if (kernel.kind == KernelKind::kLoop) {
    // `block` tiles the two innermost dimensions longer than 1, and codegen blocks only where
    // the innermost one is longer than the tile: larger tiles, or any on a nest with one such
    // dimension, would measure block=0's walk again under another name.
    // `unroll` is offered only where some nest's inner loop is longer than kShortInnerLoop.
    int64_t widest_minor = 0, longest_inner = 0;
    for (const Instruction* o : kernel.outputs) {
      if (!o->shape().IsArray()) continue;
      std::vector<int64_t> loops;
      for (int64_t d : o->shape().dimensions()) {
        if (d != 1) loops.push_back(d);
      }
      if (loops.size() >= 2) widest_minor = std::max(widest_minor, loops.back());
      if (!loops.empty()) longest_inner = std::max(longest_inner, loops.back());
    }
    for (KernelParam& p : params) {
      if (p.name == "block") {
        std::erase_if(p.choices, [&](int64_t b) { return b > 0 && b >= widest_minor; });
        // Large strided transposes are tiled by default (kBlockTransposeMinBytes).
        auto b32 = std::find(p.choices.begin(), p.choices.end(), 32);
        if (b32 != p.choices.end() && StridedTransposeBytes(kernel) >= kBlockTransposeMinBytes) {
          std::rotate(p.choices.begin(), b32, b32 + 1);
        }
      } else if (p.name == "unroll" && longest_inner <= kShortInnerLoop) {
        p.choices = {1};
      }
    }
  }
  return params;
}

void CollectLeaves(const Instruction* instr, std::vector<const Instruction*>* out) {
  if (instr->opcode() == Opcode::kTuple) {
    for (const Instruction* op : instr->operands()) CollectLeaves(op, out);
  } else if (instr->opcode() == Opcode::kGetTupleElement &&
             instr->operand(0)->opcode() == Opcode::kTuple) {
    CollectLeaves(instr->operand(0)->operand(instr->tuple_index), out);
  } else if (instr->shape().IsTuple()) {
    for (int64_t i = 0; i < instr->shape().tuple_size(); ++i) {
      out->push_back(LeafValue(instr, i));
    }
  } else {
    out->push_back(BaseValue(instr));
  }
}

// The merged kernels' order: each group (GroupRowKernels) after every group it reads from, ties
// by smallest plan kernel. Returns the new id of each plan kernel.
std::vector<int32_t> TopologicalGroups(
    const std::vector<int32_t>& group, const std::vector<std::vector<const Instruction*>>& members,
    const std::unordered_map<const Instruction*, int32_t>& kernel_of) {
  const size_t n = group.size();
  std::vector<std::unordered_set<int32_t>> succ(n);
  std::vector<int32_t> indegree(n, 0);
  for (size_t k = 0; k < n; ++k) {
    for (const Instruction* m : members[k]) {
      for (const Instruction* o : m->operands()) {
        auto it = kernel_of.find(BaseValue(o));
        if (it == kernel_of.end()) continue;
        const int32_t from = group[static_cast<size_t>(it->second)], to = group[k];
        if (from != to && succ[static_cast<size_t>(from)].insert(to).second)
          ++indegree[static_cast<size_t>(to)];
      }
    }
  }
  std::vector<int32_t> ready;
  for (size_t k = 0; k < n; ++k) {
    if (group[k] == static_cast<int32_t>(k) && indegree[k] == 0)
      ready.push_back(static_cast<int32_t>(k));
  }
  std::vector<int32_t> new_id(n, -1);
  int32_t next = 0;
  while (!ready.empty()) {
    auto min = std::min_element(ready.begin(), ready.end());
    const int32_t g = *min;
    ready.erase(min);
    new_id[static_cast<size_t>(g)] = next++;
    for (int32_t s : succ[static_cast<size_t>(g)]) {
      if (--indegree[static_cast<size_t>(s)] == 0) ready.push_back(s);
    }
  }
  std::vector<int32_t> out(n);
  for (size_t k = 0; k < n; ++k) out[k] = new_id[static_cast<size_t>(group[k])];
  return out;
}

}  // namespace

const char* KernelKindName(KernelKind kind) {
  switch (kind) {
    case KernelKind::kLoop:
      return "loop";
    case KernelKind::kReduce:
      return "reduce";
    case KernelKind::kReduceWindow:
      return "reduce-window";
    case KernelKind::kDot:
      return "dot";
    case KernelKind::kConvolution:
      return "convolution";
    case KernelKind::kRow:
      return "row";
    case KernelKind::kScatter:
      return "scatter";
    case KernelKind::kWhile:
      return "while";
    case KernelKind::kConditional:
      return "conditional";
    case KernelKind::kSort:
      return "sort";
    case KernelKind::kLibrary:
      return "library";
  }
  return "?";
}

KernelConfig DefaultConfig(const Kernel& kernel) {
  KernelConfig config;
  for (const KernelParam& p : kernel.params) config.push_back(p.choices.front());
  return config;
}

KernelConfig CanonicalConfig(const Kernel& kernel, KernelConfig config) {
  if (config.size() != kernel.params.size()) return config;
  int64_t impl = 0;
  for (size_t i = 0; i < config.size(); ++i) {
    if (kernel.params[i].name == "impl") impl = config[i];
  }
  if (impl == 0) return config;
  // The library calls ignore `parallel` and the GEMM's blocks; the row kernels only the blocks.
  for (size_t i = 0; i < config.size(); ++i) {
    const std::string& name = kernel.params[i].name;
    if ((name == "parallel" && impl != kDepthwiseImpl && impl != kGroupedImpl) ||
        IsGemmParam(name)) {
      config[i] = kernel.params[i].choices.front();
    }
  }
  return config;
}

const Instruction* BaseValue(const Instruction* instr) {
  while (true) {
    if (instr->opcode() == Opcode::kBitcast) {
      instr = instr->operand(0);
    } else if (instr->opcode() == Opcode::kGetTupleElement &&
               instr->operand(0)->opcode() == Opcode::kTuple) {
      instr = instr->operand(0)->operand(instr->tuple_index);
    } else if (instr->opcode() == Opcode::kGetTupleElement) {
      const Instruction* leaf = LeafValue(instr->operand(0), instr->tuple_index);
      return leaf != nullptr ? leaf : instr;
    } else {
      return instr;
    }
  }
}

absl::Status CheckInstructionSupported(const Instruction& instr) {
  return CheckInstruction(instr, instr.parent() == nullptr || instr.parent()->is_entry());
}

absl::Status CheckSupported(const ir::Module& module) {
  return CheckComputation(*module.entry(), true);
}

namespace {

bool IsCallKind(KernelKind kind) {
  return kind == KernelKind::kWhile || kind == KernelKind::kConditional ||
         kind == KernelKind::kSort || kind == KernelKind::kLibrary;
}

// Maps each leaf of a tuple-shaped member to its kernel: readers of a leaf depend on the kernel
// that writes it.
void MapLeaves(const std::vector<Kernel>& kernels,
               std::unordered_map<const Instruction*, int32_t>* kernel_of) {
  for (size_t k = 0; k < kernels.size(); ++k) {
    for (const Instruction* m : kernels[k].member_set) {
      if (!m->shape().IsTuple() || m->opcode() == Opcode::kTuple) continue;
      for (int64_t i = 0; i < m->shape().tuple_size(); ++i) {
        if (const Instruction* leaf = LeafValue(m, i); leaf != nullptr) {
          (*kernel_of)[leaf] = static_cast<int32_t>(k);
        }
      }
    }
  }
}

absl::StatusOr<LoweredModule> LowerComputation(const ir::Module& module,
                                               const ir::Computation& entry,
                                               const costmodels::FusionPlan* plan) {
  LoweredModule out;
  out.module = &module;
  out.computation = &entry;
  out.graph = costmodels::BuildOpGraph(module, entry);
  out.plan = plan != nullptr ? *plan : costmodels::PlanFusion(out.graph);
  if (absl::Status s = costmodels::ValidateFusion(out.graph, out.plan); !s.ok()) return s;
  for (const Instruction* p : entry.parameters()) CollectLeaves(p, &out.parameters);
  const std::unordered_set<const Instruction*> is_parameter(out.parameters.begin(),
                                                            out.parameters.end());

  std::unordered_map<std::string, const Instruction*> by_name;
  const std::vector<Instruction*> order = entry.MakePostOrder();
  for (const Instruction* instr : order) by_name[instr->name()] = instr;
  CollectLeaves(entry.root(), &out.results);
  std::unordered_set<const Instruction*> is_result(out.results.begin(), out.results.end());

  std::unordered_map<const Instruction*, int32_t> kernel_of;
  out.kernels.resize(static_cast<size_t>(out.plan.size()));
  for (int32_t k = 0; k < out.plan.size(); ++k) {
    Kernel& kernel = out.kernels[static_cast<size_t>(k)];
    kernel.id = k;
    for (int32_t node : out.plan.kernels[static_cast<size_t>(k)]) {
      const Instruction* instr = by_name.at(out.graph.nodes[static_cast<size_t>(node)].name);
      kernel.member_set.insert(instr);
      kernel_of[instr] = k;
    }
  }
  MapLeaves(out.kernels, &kernel_of);
  // Row fusion merges plan kernels; the merged kernels are renumbered in a topological order.
  std::vector<bool> is_row;
  {
    std::vector<std::vector<const Instruction*>> members(out.kernels.size());
    for (const Instruction* instr : order) {
      auto it = kernel_of.find(instr);
      if (it != kernel_of.end()) members[static_cast<size_t>(it->second)].push_back(instr);
    }
    const std::vector<int32_t> group = GroupRowKernels(members, kernel_of, is_result);
    std::vector<int32_t> renumber = TopologicalGroups(group, members, kernel_of);
    if (std::find(renumber.begin(), renumber.end(), -1) != renumber.end()) {
      return absl::InternalError("cpu lowering: row fusion made the kernel graph cyclic");
    }
    // An entry of parameters and tuples alone has no kernels.
    const int32_t n =
        renumber.empty() ? 0 : *std::max_element(renumber.begin(), renumber.end()) + 1;
    is_row.assign(static_cast<size_t>(n), false);
    for (size_t k = 0; k < group.size(); ++k) {
      if (group[k] != static_cast<int32_t>(k) ||
          std::count(group.begin(), group.end(), group[k]) > 1) {
        is_row[static_cast<size_t>(renumber[k])] = true;
      }
    }
    std::vector<Kernel> merged(static_cast<size_t>(n));
    costmodels::FusionPlan plan_after;
    plan_after.kernel_of = out.plan.kernel_of;
    plan_after.kernels.resize(static_cast<size_t>(n));
    for (size_t k = 0; k < group.size(); ++k) {
      const int32_t to = renumber[k];
      for (const Instruction* i : out.kernels[k].member_set) {
        merged[static_cast<size_t>(to)].member_set.insert(i);
        kernel_of[i] = to;
      }
      for (int32_t node : out.plan.kernels[k]) {
        plan_after.kernel_of[static_cast<size_t>(node)] = to;
        plan_after.kernels[static_cast<size_t>(to)].push_back(node);
      }
    }
    for (std::vector<int32_t>& nodes : plan_after.kernels) std::sort(nodes.begin(), nodes.end());
    for (int32_t k = 0; k < n; ++k) merged[static_cast<size_t>(k)].id = k;
    out.kernels = std::move(merged);
    out.plan = std::move(plan_after);
    MapLeaves(out.kernels, &kernel_of);
  }
  // A bitcast between two ops of one kernel is inlined as a reshape; elsewhere it is a view of
  // its operand's buffer.
  for (const Instruction* instr : order) {
    if (instr->opcode() != Opcode::kBitcast) continue;
    auto it = kernel_of.find(instr->operand(0));
    if (it == kernel_of.end() || instr->users().empty() || is_result.count(instr) != 0) continue;
    const bool inside =
        std::all_of(instr->users().begin(), instr->users().end(), [&](const Instruction* u) {
          auto ku = kernel_of.find(u);
          return ku != kernel_of.end() && ku->second == it->second;
        });
    if (inside) {
      out.kernels[static_cast<size_t>(it->second)].member_set.insert(instr);
      kernel_of[instr] = it->second;
    }
  }

  for (Kernel& kernel : out.kernels) {
    for (const Instruction* instr : order) {
      if (kernel.Contains(instr)) kernel.members.push_back(instr);
    }
    kernel.root = kernel.members.back();
    for (const Instruction* m : kernel.members) {
      const Opcode op = m->opcode();
      if (op == Opcode::kReduce || op == Opcode::kReduceWindow || op == Opcode::kDot ||
          op == Opcode::kConvolution) {
        kernel.root = m;
      }
    }
    kernel.kind = is_row[static_cast<size_t>(kernel.id)] ? KernelKind::kRow : KindOf(*kernel.root);
    kernel.name = kernel.root->name();
    std::unordered_set<const Instruction*> seen_input;
    if (IsCallKind(kernel.kind)) {
      // One op: its leaves are the outputs, its operands' leaves the inputs.
      CollectLeaves(kernel.root, &kernel.outputs);
      for (const Instruction* operand : kernel.root->operands()) {
        CollectLeaves(operand, &kernel.operand_leaves);
      }
      for (const Instruction* leaf : kernel.operand_leaves) {
        if (leaf->opcode() != Opcode::kConstant && seen_input.insert(leaf).second) {
          kernel.inputs.push_back(leaf);
        }
      }
      if (kernel.kind == KernelKind::kWhile || kernel.kind == KernelKind::kConditional) {
        for (const ir::Computation* c : kernel.root->called_computations()) {
          absl::StatusOr<LoweredModule> called = LowerComputation(module, *c, nullptr);
          if (!called.ok()) return called.status();
          kernel.called.push_back(std::make_shared<const LoweredModule>(*std::move(called)));
        }
      }
    }
    for (const Instruction* m : kernel.members) {
      if (IsCallKind(kernel.kind)) break;
      // Outputs: read by anything outside the kernel (plumbing included) or part of the result.
      bool leaves = is_result.count(m) != 0;
      for (const Instruction* u : m->users()) {
        if (!kernel.Contains(u)) leaves = true;
      }
      if (leaves && m->opcode() != Opcode::kBitcast) kernel.outputs.push_back(m);
      for (const Instruction* operand : m->operands()) {
        if (kernel.Contains(operand)) continue;
        const Instruction* base = BaseValue(operand);
        if (base->opcode() == Opcode::kConstant) continue;  // embedded in the source
        if (seen_input.insert(base).second) kernel.inputs.push_back(base);
      }
    }
    kernel.params = ParamsOf(kernel);  // after the outputs, which decide the loops
    for (const Instruction* o : kernel.outputs) out.producer[o] = kernel.id;
  }
  // A member bitcast whose users are outside cannot happen (see above); a member whose only
  // outside user is a bitcast is an output through BaseValue, which resolves the bitcast.
  for (const Kernel& kernel : out.kernels) {
    for (const Instruction* in : kernel.inputs) {
      if (is_parameter.count(in) == 0 && out.producer.count(in) == 0) {
        return absl::InternalError(absl::StrCat("cpu lowering: kernel '", kernel.name, "' reads '",
                                                in->name(), "', which no kernel materializes"));
      }
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<LoweredModule> Lower(const ir::Module& module, const costmodels::FusionPlan* plan) {
  if (absl::Status s = CheckSupported(module); !s.ok()) return s;
  absl::StatusOr<LoweredModule> lowered = LowerComputation(module, *module.entry(), plan);
  if (!lowered.ok()) return lowered;
  const std::unordered_set<const Instruction*> frozen = FrozenWeights(*module.entry());
  for (Kernel& kernel : lowered->kernels) {
    for (const Instruction* in : kernel.inputs) {
      if (frozen.count(in) != 0) kernel.frozen_inputs.insert(in);
    }
  }
  return lowered;
}

}  // namespace mltune::backends::cpu
