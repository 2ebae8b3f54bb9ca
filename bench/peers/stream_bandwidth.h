// STREAM-like memory bandwidth of the calling thread (bench/cpu_roofline): what a memory-bound
// kernel can reach at each level of the hierarchy, measured in the same run as the kernels.
#pragma once

#include <cstdint>

namespace mltune::bench {

enum class StreamKind {
  kRead,   // sum of an array: bytes = size
  kCopy,   // b = a: bytes = 2 size (STREAM's count; the write-allocate read is not counted)
  kTriad,  // a = b + s c: bytes = 3 size
};

// Best GB/s (1e9 bytes) over repeats of `kind` on arrays of `bytes` each, on the calling thread,
// for about `min_seconds`: noise from the shared machine only slows a repeat, so the best repeat
// is the estimate of the bound. Arrays that fit a cache level measure that level, since every
// repeat walks the same arrays.
double StreamBandwidthGBs(StreamKind kind, int64_t bytes, double min_seconds);

}  // namespace mltune::bench
