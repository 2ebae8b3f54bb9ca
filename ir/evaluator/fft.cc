// fft (FFT, IFFT, RFFT, IRFFT over the last 1-3 dimensions) as a plain O(n^2) discrete Fourier
// transform per dimension, in complex<double>, rounded once to the result type.
#include <cmath>
#include <complex>
#include <numbers>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ir/evaluator/eval_internal.h"
#include "ir/evaluator/index_util.h"

namespace mltune::ir::eval {
namespace {

using Complex = std::complex<double>;

// In-place DFT of every 1-D line along `dim` of `data` (row-major `dims`).
void TransformDim(std::vector<Complex>& data, const std::vector<int64_t>& dims, int64_t dim,
                  bool inverse) {
  const int64_t n = dims[dim];
  if (n == 0) return;
  const int64_t stride = RowMajorStrides(dims)[dim];
  std::vector<int64_t> outer = dims;
  outer[dim] = 1;
  std::vector<Complex> line(n), result(n);
  const double sign = inverse ? 1.0 : -1.0;
  ForEachStrided(outer, RowMajorStrides(dims), 0, [&](int64_t, int64_t base) {
    for (int64_t i = 0; i < n; ++i) line[i] = data[base + i * stride];
    for (int64_t k = 0; k < n; ++k) {
      Complex s = 0;
      for (int64_t j = 0; j < n; ++j) {
        const double angle = sign * 2.0 * std::numbers::pi * static_cast<double>((j * k) % n) /
                             static_cast<double>(n);
        s += line[j] * Complex(std::cos(angle), std::sin(angle));
      }
      result[k] = inverse ? s / static_cast<double>(n) : s;
    }
    for (int64_t i = 0; i < n; ++i) data[base + i * stride] = result[i];
  });
}

}  // namespace

absl::StatusOr<Literal> HandleFft(Evaluator& ev, const Instruction& instr, Operands& ops) {
  const Literal& in = ops[0];
  const int64_t rank = in.shape().rank();
  const int64_t fft_rank = static_cast<int64_t>(instr.fft_length.size());
  if (ops.size() != 1 || fft_rank < 1 || fft_rank > 3 || fft_rank > rank) {
    return Invalid(instr, "bad fft operand or fft_length");
  }
  absl::StatusOr<Literal> out = ev.NewLiteral(instr.shape());
  if (!out.ok()) return out.status();
  const auto& out_dims = instr.shape().dimensions();
  if (static_cast<int64_t>(out_dims.size()) != rank) return Invalid(instr, "rank mismatch");
  const FftType type = instr.fft_type;
  // The full complex signal the transforms run on (for IRFFT: the Hermitian-extended spectrum
  // of the last dimension).
  std::vector<int64_t> dims = in.shape().dimensions();
  for (int64_t k = 0; k < fft_rank; ++k) {
    const int64_t d = rank - fft_rank + k;
    const int64_t expect = (type == FftType::kIrfft && k == fft_rank - 1)
                               ? instr.fft_length[k] / 2 + 1
                               : instr.fft_length[k];
    if (type != FftType::kRfft && in.shape().dimensions(d) != expect) {
      return Invalid(instr, "fft_length does not match the operand");
    }
    if (type == FftType::kRfft && in.shape().dimensions(d) != instr.fft_length[k]) {
      return Invalid(instr, "fft_length does not match the operand");
    }
    dims[d] = instr.fft_length[k];
  }
  std::vector<int64_t> expect_out = dims;
  if (type == FftType::kRfft) expect_out[rank - 1] = dims[rank - 1] / 2 + 1;
  if (out_dims != expect_out) return Invalid(instr, "result shape does not match fft_length");
  std::vector<Complex> data(Product(dims));
  const std::vector<int64_t> in_strides = RowMajorStrides(in.shape().dimensions());
  const int64_t last = rank - 1;
  ForEachIndex(dims, [&](const std::vector<int64_t>& index) {
    int64_t src = 0;
    bool conj = false;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t i = index[d];
      if (type == FftType::kIrfft && d == last && i >= in.shape().dimensions(last)) {
        i = dims[last] - i;  // X[n - k] = conj(X[k]) along the real dimension
        conj = true;
      }
      src += i * in_strides[d];
    }
    int64_t dst = 0;
    const std::vector<int64_t> strides = RowMajorStrides(dims);
    for (int64_t d = 0; d < rank; ++d) dst += index[d] * strides[d];
    const Complex v = in.GetAsComplex(src);
    data[dst] = conj ? std::conj(v) : v;
  });
  const bool inverse = type == FftType::kIfft || type == FftType::kIrfft;
  for (int64_t k = 0; k < fft_rank; ++k) TransformDim(data, dims, rank - fft_rank + k, inverse);
  // Write out: RFFT keeps the first n/2+1 outputs of the last dimension; IRFFT the real part.
  const std::vector<int64_t> strides = RowMajorStrides(dims);
  int64_t linear = 0;
  ForEachIndex(out_dims, [&](const std::vector<int64_t>& index) {
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d) src += index[d] * strides[d];
    out->SetFromComplex(linear++, data[src]);
  });
  return out;
}

}  // namespace mltune::ir::eval
