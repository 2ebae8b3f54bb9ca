// Internal to the evaluator: multi-index iteration and element moves by byte size.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace mltune::ir::eval {

inline int64_t Product(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// Calls fn(index) for every multi-index of `dims` in row-major order (once for rank 0).
template <typename F>
void ForEachIndex(const std::vector<int64_t>& dims, F&& fn) {
  for (int64_t d : dims) {
    if (d <= 0) return;
  }
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> index(rank, 0);
  while (true) {
    fn(static_cast<const std::vector<int64_t>&>(index));
    int64_t d = rank - 1;
    for (; d >= 0; --d) {
      if (++index[d] < dims[d]) break;
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

// Calls fn(out_linear, offset) for every multi-index of `dims` in row-major order, where
// offset = base + sum(index[d] * strides[d]), maintained incrementally.
template <typename F>
void ForEachStrided(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                    int64_t base, F&& fn) {
  for (int64_t d : dims) {
    if (d <= 0) return;
  }
  const int64_t rank = static_cast<int64_t>(dims.size());
  std::vector<int64_t> index(rank, 0);
  int64_t offset = base;
  int64_t linear = 0;
  if (rank == 0) {
    fn(int64_t{0}, offset);
    return;
  }
  const int64_t inner = dims[rank - 1];
  const int64_t inner_stride = strides[rank - 1];
  while (true) {
    for (int64_t j = 0; j < inner; ++j) fn(linear++, offset + j * inner_stride);
    int64_t d = rank - 2;
    for (; d >= 0; --d) {
      offset += strides[d];
      if (++index[d] < dims[d]) break;
      offset -= strides[d] * dims[d];
      index[d] = 0;
    }
    if (d < 0) return;
  }
}

struct Bytes16 {
  uint64_t lo, hi;
};

// Calls f(E{}) with an unsigned type of `size` bytes (1, 2, 4, 8, or Bytes16 for 16).
template <typename F>
void DispatchBytes(int size, F&& f) {
  switch (size) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    case 8:
      return f(uint64_t{});
    default:
      return f(Bytes16{});
  }
}

// out[i] = in[offset(i)] for every element of `dims` (see ForEachStrided), elements of `size`
// bytes.
inline void StridedGather(const uint8_t* in, uint8_t* out, int size,
                          const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                          int64_t base) {
  DispatchBytes(size, [&](auto tag) {
    using E = decltype(tag);
    ForEachStrided(dims, strides, base, [&](int64_t o, int64_t s) {
      std::memcpy(out + o * sizeof(E), in + s * sizeof(E), sizeof(E));
    });
  });
}

// out[offset(i)] = in[i]: the scatter form of StridedGather.
inline void StridedScatter(const uint8_t* in, uint8_t* out, int size,
                           const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                           int64_t base) {
  DispatchBytes(size, [&](auto tag) {
    using E = decltype(tag);
    ForEachStrided(dims, strides, base, [&](int64_t i, int64_t o) {
      std::memcpy(out + o * sizeof(E), in + i * sizeof(E), sizeof(E));
    });
  });
}

}  // namespace mltune::ir::eval
