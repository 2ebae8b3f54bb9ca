// Per-node features: what one op of a kernel computes and how it touches memory. Sizes are
// log2(1 + x), so a model sees orders of magnitude; flags are 0 or 1.
//
//   0-5   result dims, log2(1 + d), right-aligned (slot 5 = the minor-most logical dim; leading
//         dims beyond six are multiplied into slot 0; missing dims are 0)
//   6     rank
//   7     element bytes (bits / 8: s4 is 0.5)
//   8     floating-point element type
//   9     result elements, log
//   10-13 flops, transcendentals, bytes read, bytes written (as its own kernel), log
//   14-17 matmul m, n, k, batch, log (0 for other ops)
//   18    window elements (product of window sizes), log
//   19    largest stride (window stride, or slice stride)
//   20    total padding (window low + high, or pad low + high + interior), log
//   21    largest dilation (window or base)
//   22    reduced elements per output (reduce: product of the reduced operand dims), log
//   23    reduces the operand's minor-most logical dim
//   24    non-default layout (minor_to_major not descending)
//   25    its value leaves the kernel
//   26    reads a value from outside the kernel
//   27    operand count, log
//   28    users inside the kernel, log
//   29    remaps the minor dim (transpose moving it, broadcast along it): strided or repeated
//         access
//   30    elementwise-like (cheap, fusible)
//   31    log2 of the feature groups (convolution; 0 for one group)
//   32-34 what a reduce or reduce-window folds with (its reducer's root): 32 a compare
//         (maximum, minimum: on floats the CPU backend carries NaN flags beside each
//         accumulator), 33 arithmetic (add, multiply, ...), 34 logical or bitwise (and, or, xor)
//   35-39 how the op runs in the kernel's fused loop nest (index_flow.cc): 35 times computed, log;
//         36 times computed per result element, log2((1 + times) / (1 + elements)): below 0 when
//         hoisted out of loops (exp of a broadcast row), above 0 when recomputed (read through
//         several slices); 37 computed in the innermost loop; 38 loads from outside with a
//         non-unit stride along the inner loop (a transposed or strided read); 39 loads from
//         outside that step by one element along it
//   40    the op's elementwise math in that nest: times computed x what one element costs in the
//         backend's code (element_cost.cc), in picoseconds, log. An atan2 (a scalar libm call,
//         25 ns) and an exp (the prelude's vectorized polynomial, 0.45 ns) differ here, not in 11.
#include <algorithm>
#include <cmath>

#include "costmodels/features/internal.h"
#include "costmodels/features/kernel_graph.h"
#include "ir/primitive_type.h"

namespace mltune::costmodels::features {
namespace {

constexpr int kDimSlots = 6;

bool DefaultLayout(const ir::Shape& shape) {
  if (!shape.layout()) return true;
  const std::vector<int64_t>& m2m = shape.layout()->minor_to_major;
  for (size_t i = 0; i < m2m.size(); ++i) {
    if (m2m[i] != static_cast<int64_t>(m2m.size() - 1 - i)) return false;
  }
  return true;
}

// The reducer's kind decides its code: a compare fold does not vectorize as an add does, and on
// floats the CPU backend keeps a NaN flag per accumulator. Appended slots (32-34), so the
// features before them keep their meaning for models trained without them.
void FillReducerKind(const ir::Instruction& instr, float* out) {
  const ir::Computation* reducer = instr.to_apply();
  if (reducer == nullptr || reducer->root() == nullptr) return;
  switch (reducer->root()->opcode()) {
    case ir::Opcode::kMaximum:
    case ir::Opcode::kMinimum:
      out[32] = 1;
      break;
    case ir::Opcode::kAdd:
    case ir::Opcode::kMultiply:
    case ir::Opcode::kSubtract:
    case ir::Opcode::kDivide:
      out[33] = 1;
      break;
    case ir::Opcode::kAnd:
    case ir::Opcode::kOr:
    case ir::Opcode::kXor:
      out[34] = 1;
      break;
    default:  // variadic (tuple) or other reducers: none of the three
      break;
  }
}

bool RemapsMinorDim(const ir::Instruction& instr) {
  const int64_t rank = instr.shape().rank();
  if (rank == 0) return false;
  if (instr.opcode() == ir::Opcode::kTranspose) {
    return !instr.dimensions.empty() && instr.dimensions.back() != rank - 1;
  }
  if (instr.opcode() == ir::Opcode::kBroadcast) {
    // dimensions[i] is the output dim of operand dim i; the minor output dim is broadcast along
    // unless some operand dim maps to it.
    return std::find(instr.dimensions.begin(), instr.dimensions.end(), rank - 1) ==
           instr.dimensions.end();
  }
  return false;
}

void FillFromInstruction(const ir::Instruction& instr, float* out) {
  const ir::Shape* shape = FirstArray(instr.shape());
  if (shape != nullptr) {
    const std::vector<int64_t>& dims = shape->dimensions();
    const int rank = static_cast<int>(dims.size());
    // Leading dims beyond kDimSlots fold into slot 0, so the minor dims keep fixed slots.
    const int first = std::max(0, rank - kDimSlots);
    double leading = 1;
    for (int d = 0; d <= first && d < rank; ++d) leading *= static_cast<double>(dims[d]);
    for (int d = first; d < rank; ++d) {
      const int slot = kDimSlots - (rank - d);
      out[slot] = Log2p(d == first ? leading : static_cast<double>(dims[d]));
    }
    out[6] = static_cast<float>(rank);
    out[7] = static_cast<float>(ir::BitWidth(shape->element_type())) / 8.0f;
    out[8] = ir::IsFloatingPoint(shape->element_type()) ? 1 : 0;
    out[9] = Log2p(static_cast<double>(shape->ElementCount()));
    out[24] = DefaultLayout(*shape) ? 0 : 1;
  }
  if (instr.window) {
    double elements = 1, padding = 0;
    int64_t stride = 1, dilation = 1;
    for (const ir::WindowDim& w : instr.window->dims) {
      elements *= static_cast<double>(w.size);
      stride = std::max(stride, w.stride);
      padding += static_cast<double>(w.padding_low + w.padding_high);
      dilation = std::max({dilation, w.window_dilation, w.base_dilation});
    }
    out[18] = Log2p(elements);
    out[19] = static_cast<float>(stride);
    out[20] = Log2p(padding);
    out[21] = static_cast<float>(dilation);
  }
  for (const ir::SliceDim& s : instr.slice)
    out[19] = std::max(out[19], static_cast<float>(s.stride));
  if (!instr.padding.empty()) {
    double padding = 0;
    for (const ir::PaddingDim& p : instr.padding) {
      padding += static_cast<double>(std::abs(p.low) + std::abs(p.high) + p.interior);
    }
    out[20] = Log2p(padding);
  }
  if (instr.opcode() == ir::Opcode::kReduce && instr.operand_count() > 0) {
    const ir::Shape& in = instr.operand(0)->shape();
    double reduced = 1;
    for (int64_t d : instr.dimensions) {
      if (d >= 0 && d < in.rank()) reduced *= static_cast<double>(in.dimensions(d));
    }
    out[22] = Log2p(reduced);
    out[23] = std::find(instr.dimensions.begin(), instr.dimensions.end(), in.rank() - 1) !=
                      instr.dimensions.end()
                  ? 1
                  : 0;
  }
  if (instr.opcode() == ir::Opcode::kReduce || instr.opcode() == ir::Opcode::kReduceWindow) {
    FillReducerKind(instr, out);
  }
  out[27] = Log2p(static_cast<double>(instr.operand_count()));
  out[29] = RemapsMinorDim(instr) ? 1 : 0;
  if (instr.opcode() == ir::Opcode::kConvolution) {
    out[31] = static_cast<float>(
        std::log2(static_cast<double>(std::max<int64_t>(1, instr.feature_group_count))));
  }
}

}  // namespace

void FillNodeFeatures(const KernelView& view, const IndexFlow& flow, int32_t i, float* out) {
  std::fill(out, out + kNodeFeatures, 0.0f);
  const OpNode& node = view.node(i);
  if (const ir::Instruction* instr = view.instrs[static_cast<size_t>(i)]; instr != nullptr) {
    FillFromInstruction(*instr, out);
  } else {
    // Not in the module (a hand-built graph): the op graph's 2-D view of the result.
    out[kDimSlots - 2] = Log2p(static_cast<double>(node.rows));
    out[kDimSlots - 1] = Log2p(static_cast<double>(node.cols));
    out[6] = 2;
    out[7] = static_cast<float>(node.element_bytes);
    out[9] = Log2p(static_cast<double>(node.rows) * static_cast<double>(node.cols));
    out[27] = Log2p(static_cast<double>(node.inputs.size()));
  }
  out[10] = Log2p(node.cost.flops);
  out[11] = Log2p(node.cost.transcendentals);
  out[12] = Log2p(node.cost.bytes_read);
  out[13] = Log2p(node.cost.bytes_written);
  if (node.matmul) {
    out[14] = Log2p(static_cast<double>(node.mm.m));
    out[15] = Log2p(static_cast<double>(node.mm.n));
    out[16] = Log2p(static_cast<double>(node.mm.k));
    out[17] = Log2p(static_cast<double>(node.mm.batch));
  }
  out[25] = view.is_output[static_cast<size_t>(i)];
  out[26] = view.reads_input[static_cast<size_t>(i)];
  int32_t inside_users = 0;
  for (int32_t u : node.users) inside_users += view.local.count(u) != 0 ? 1 : 0;
  out[28] = Log2p(inside_users);
  out[30] = node.elementwise_like ? 1 : 0;
  const size_t s = static_cast<size_t>(i);
  const double evaluations = flow.evaluations[s];
  out[35] = Log2p(evaluations);
  out[36] = static_cast<float>(std::log2((1.0 + evaluations) / std::exp2(out[9])));
  out[37] = flow.inner[s];
  out[38] = flow.strided_reads[s];
  out[39] = flow.contiguous_reads[s];
  out[40] = Log2p(1000.0 * flow.element_ns[s]);
}

}  // namespace mltune::costmodels::features
