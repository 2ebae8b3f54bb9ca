// A concrete value of an HLO shape: a dense row-major array buffer, or a tuple of literals.
// Elements are stored in their own type (f16 as its 16 bits, s4 one per byte), so values are
// bit-exact and bitcast-convert is a byte copy.
#pragma once

#include <complex>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/shape.h"

namespace mltune::ir {

class Literal {
 public:
  // Largest buffer one literal may hold; bigger shapes are refused rather than allocated.
  static constexpr int64_t kDefaultMaxBytes = int64_t{4} << 30;

  Literal() = default;
  // Zero-filled literal of `shape` (tuples get zero-filled elements). Refuses shapes whose
  // buffers would exceed `max_bytes` in total, and dynamic or token shapes with no fixed size.
  static absl::StatusOr<Literal> Create(const Shape& shape, int64_t max_bytes = kDefaultMaxBytes);
  static Literal MakeTuple(std::vector<Literal> elements);
  template <typename T>
  static Literal Scalar(PrimitiveType type, T value);

  const Shape& shape() const { return shape_; }
  PrimitiveType element_type() const { return shape_.element_type(); }
  int64_t element_count() const { return element_count_; }

  // Raw buffer of an array literal.
  uint8_t* untyped_data() { return data_.data(); }
  const uint8_t* untyped_data() const { return data_.data(); }
  int64_t size_bytes() const { return static_cast<int64_t>(data_.size()); }

  // Typed access by row-major linear index; T must match the storage type (float for f32,
  // uint16_t for f16/bf16, uint8_t for pred and f8, int8_t for s4, ...).
  template <typename T>
  T Get(int64_t i) const {
    T v;
    std::memcpy(&v, data_.data() + i * sizeof(T), sizeof(T));
    return v;
  }
  template <typename T>
  void Set(int64_t i, T v) {
    std::memcpy(data_.data() + i * sizeof(T), &v, sizeof(T));
  }

  // Type-generic access. Integers convert exactly through int64/uint64; floats through double;
  // setters round and wrap as a convert to the element type would.
  double GetAsDouble(int64_t i) const;
  int64_t GetAsInt64(int64_t i) const;
  uint64_t GetAsUint64(int64_t i) const;
  std::complex<double> GetAsComplex(int64_t i) const;
  bool GetAsBool(int64_t i) const;
  void SetFromDouble(int64_t i, double v);
  void SetFromInt64(int64_t i, int64_t v);
  void SetFromUint64(int64_t i, uint64_t v);
  void SetFromComplex(int64_t i, std::complex<double> v);

  // Tuple elements.
  const std::vector<Literal>& elements() const { return elements_; }
  std::vector<Literal>& mutable_elements() { return elements_; }

  // Value text as XLA prints inside `constant(...)`: `1.5`, `{1, 2}`, `{ {1, 2}, {3, 4} }`,
  // `(1, 2)` for complex, tuples as `( ... )`. Floats print shortest round-trip.
  std::string ToString() const;

  // Bit-exact equality of shape (ignoring layout) and contents.
  bool BitwiseEqual(const Literal& other) const;

 private:
  Shape shape_;
  int64_t element_count_ = 0;
  std::vector<uint8_t> data_;
  std::vector<Literal> elements_;
};

template <typename T>
Literal Literal::Scalar(PrimitiveType type, T value) {
  Literal l = *Create(Shape::Scalar(type));
  if constexpr (std::is_floating_point_v<T>) {
    l.SetFromDouble(0, static_cast<double>(value));
  } else if constexpr (std::is_same_v<T, bool>) {
    l.SetFromInt64(0, value ? 1 : 0);
  } else if constexpr (std::is_unsigned_v<T>) {
    l.SetFromUint64(0, static_cast<uint64_t>(value));
  } else {
    l.SetFromInt64(0, static_cast<int64_t>(value));
  }
  return l;
}

// Shortest text that parses back to the same float/double, XLA-style (`nan`, `-inf`, `1e-05`).
std::string FormatFloat(double v, PrimitiveType type);

}  // namespace mltune::ir
