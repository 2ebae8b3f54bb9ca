// The operator suite the backends' op benchmarks share (PerfDojo-like): elementwise ops, softmax,
// layer and batch norm, GELU, reductions, transposes, square matmuls, matrix-vector products and
// ResNet-50's convolutions, each as HLO text with the same op as a spec for the PyTorch peers
// (bench/peers/torch_ops.py, bench/peers/gpu_peers.py).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace mltune::bench {

struct OpCase {
  std::string name;
  std::string shape;  // for the table
  std::string hlo;
  nlohmann::json torch;  // the same op for the PyTorch peers (its "name" is `name`)
  double flops = 0;      // matmul and conv rows: 2 * multiply-adds
  int64_t matmul_n = 0;
  // Matmul and conv rows: the GEMM they amount to (for conv, im2col's: M = output channels,
  // N = output pixels, K = input channels x kernel area), timed on oneDNN alone.
  int64_t gemm_m = 0, gemm_n = 0, gemm_k = 0;
};

// Every op of the suite, in table order.
std::vector<OpCase> AllOps();

}  // namespace mltune::bench
