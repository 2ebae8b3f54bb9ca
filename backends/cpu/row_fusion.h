// Row fusion (persistent reductions, as TorchInductor's and XLA GPU's softmax fusion): a reduce
// over its operand's minor dimension, and the kernels that consume it row by row (elementwise ops,
// broadcasts of per-row values back along the row, further minor-dimension reduces), become one
// kernel that walks the rows once: for each row, each reduce in turn, then the outputs, with the
// values several steps read kept in a row-sized cache. Softmax and layer norm then read their
// input from memory once instead of once per kernel. Internal to the lowering.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/module.h"

namespace mltune::backends::cpu {

// Rows longer than this are not fused: the row cache lives on the stack, and a row must stay in
// the near caches between the passes over it.
inline constexpr int64_t kMaxRowLength = 16384;

// When `reduce` reduces exactly its operand's minor dimension, of at most kMaxRowLength elements,
// with at least one dimension kept: true, with the kept (outer) dimensions.
bool RowReduce(const ir::Instruction& reduce, std::vector<int64_t>* outer);

// Groups the kernels of a fusion plan (`members`: each kernel's ops, topological; `kernel_of`:
// the kernel of each op, bitcasts excluded) into row kernels. Returns the group of each kernel, a
// group id being its smallest kernel id; kernels alone keep their own id. `results` are the
// entry's result values.
std::vector<int32_t> GroupRowKernels(
    const std::vector<std::vector<const ir::Instruction*>>& members,
    const std::unordered_map<const ir::Instruction*, int32_t>& kernel_of,
    const std::unordered_set<const ir::Instruction*>& results);

}  // namespace mltune::backends::cpu
