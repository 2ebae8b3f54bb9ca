// A real ONNX model of any size for tests of large uploads, written straight to a file: Y = X * W
// with X f32[1, rows] an input and W f32[rows, cols] an initializer (its weights: 4 * rows * cols
// bytes), the protobuf encoded by hand so the weights never sit in memory.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mltune::testing {

// Writes the model to `path`; returns its size in bytes, or -1 when it cannot be written. The
// weights are a fixed pattern (a `seed` changes them, and so the file's hash).
int64_t WriteMatMulOnnx(const std::string& path, int64_t rows, int64_t cols, uint32_t seed = 0);

// Lowercase hex SHA-256 of `bytes`: what a client declares when it uploads them.
std::string Sha256Hex(std::string_view bytes);

}  // namespace mltune::testing
