// Synthetic training programs for the learned cost model (issue 9): random compositions of the
// blocks ML programs are made of (dense layers, convolutions, pooling, normalisation, softmax,
// attention, row dots, Gram matrices, matrix-vector and x^T y contractions, elementwise chains in
// f32 and in s32, reductions, transposes, slices and concatenations) with random shapes, printed as
// HLO text. The corpus holds few compilable programs and few of its kernels are matmuls or
// convolutions; these widen what `mltune collect` measures, so the model sees shapes and op mixes
// that held-out programs bring. Plain text generation: no backend, no LibTorch.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace mltune::costmodels::synthetic {

// Module names of synthetic programs start with this; train-cost-model keeps such programs in
// training and evaluates on the others.
inline constexpr std::string_view kModulePrefix = "synthetic_";

struct SyntheticOptions {
  int64_t max_elements = int64_t{1} << 20;  // largest array any block makes
  int64_t max_flops = int64_t{1} << 28;     // largest matmul or convolution, 2 * m * n * k
  int min_blocks = 1;
  int max_blocks = 4;
  // Which blocks programs are made of (SyntheticBlockNames); empty: all of them, matmuls and
  // convolutions weighted up. Naming a few aims a batch of programs at kernel classes the
  // measurement log holds too few of (row dots against oneDNN, reductions' lane choices).
  std::vector<std::string> blocks;
};

// The block names SyntheticOptions::blocks takes, in the order the generator lists them.
const std::vector<std::string>& SyntheticBlockNames();
// InvalidArgument naming the first unknown block and the known ones, or bad sizes / counts.
absl::Status ValidateSyntheticOptions(const SyntheticOptions& options);

// A random program for `seed` (deterministic: the same seed, the same text) named
// kModulePrefix + seed (options as ValidateSyntheticOptions accepts). Every program parses,
// verifies and uses ops the CPU backend lowers: f32 math, and s32 / pred index and mask arithmetic
// converted back to f32.
std::string SyntheticProgram(uint64_t seed, const SyntheticOptions& options = {});

}  // namespace mltune::costmodels::synthetic
