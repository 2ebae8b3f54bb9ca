// Shapes as XLA prints them: `f32[2,<=8,?]{2,1,0:T(8,128)}`, `(s32[], pred[])`, `token[]`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/primitive_type.h"

namespace mltune::ir {

// One tile of a tiled layout, e.g. T(8,128). kCombineDim stands for XLA's `*`.
struct Tile {
  static constexpr int64_t kCombineDim = -1;
  std::vector<int64_t> dims;
  bool operator==(const Tile&) const = default;
};

// Physical layout: minor_to_major order plus the optional TPU-style tiling and memory annotations.
// Fields this IR does not interpret (newer `D(...)`, `L(...)` forms) are kept verbatim in `extra`.
struct Layout {
  std::vector<int64_t> minor_to_major;
  std::vector<Tile> tiles;
  int64_t element_size_in_bits = 0;  // E(n); 0 = unset
  int64_t memory_space = 0;          // S(n); 0 = default
  std::string extra;                 // uninterpreted trailing items, printed back as-is
  bool operator==(const Layout&) const = default;
};

// Dimension size marker for an unbounded dynamic dimension, printed `?`.
inline constexpr int64_t kUnboundedDim = -1;

class Shape {
 public:
  Shape() = default;
  // An array shape with the default (descending) layout.
  Shape(PrimitiveType type, std::vector<int64_t> dims);
  static Shape Tuple(std::vector<Shape> elements);
  static Shape Token();
  static Shape Scalar(PrimitiveType type) { return Shape(type, {}); }

  PrimitiveType element_type() const { return type_; }
  void set_element_type(PrimitiveType t) { type_ = t; }
  bool IsTuple() const { return type_ == PrimitiveType::kTuple; }
  bool IsToken() const { return type_ == PrimitiveType::kToken; }
  bool IsArray() const { return IsArrayType(type_); }
  bool IsScalar() const { return IsArray() && dims_.empty(); }

  // Array dimensions. For a dynamic dimension this is its bound (or kUnboundedDim).
  const std::vector<int64_t>& dimensions() const { return dims_; }
  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  int64_t dimensions(int64_t i) const { return dims_[i]; }
  void set_dimensions(std::vector<int64_t> dims);
  const std::vector<bool>& dynamic_dimensions() const { return dynamic_; }
  bool is_dynamic_dimension(int64_t i) const { return dynamic_[i]; }
  void set_dynamic_dimension(int64_t i, bool dynamic) { dynamic_[i] = dynamic; }
  bool is_static() const;

  const std::optional<Layout>& layout() const { return layout_; }
  std::optional<Layout>& mutable_layout() { return layout_; }
  void set_layout(std::optional<Layout> layout) { layout_ = std::move(layout); }
  // Sets layout {rank-1,...,0} on this shape and every tuple element.
  void SetDefaultLayout();
  void ClearLayout();

  const std::vector<Shape>& tuple_shapes() const { return tuple_; }
  std::vector<Shape>& mutable_tuple_shapes() { return tuple_; }
  const Shape& tuple_shapes(int64_t i) const { return tuple_[i]; }
  int64_t tuple_size() const { return static_cast<int64_t>(tuple_.size()); }

  // Number of elements of an array shape; 0 for tuples and tokens. Saturates at INT64_MAX.
  int64_t ElementCount() const;
  // Bytes of an array's buffer at StorageBytes per element; sum over elements for tuples.
  // Saturates at INT64_MAX.
  int64_t ByteSize() const;

  // Text exactly as XLA prints it, with the layout when `print_layout` and one is present.
  std::string ToString(bool print_layout = true) const;

  // Same element type, dimensions and dynamic flags; layouts and tuple nesting compared too
  // when `compare_layout`.
  bool Equal(const Shape& other, bool compare_layout) const;
  bool operator==(const Shape& other) const { return Equal(other, true); }
  bool SameDimensions(const Shape& other) const { return dims_ == other.dims_; }
  bool Compatible(const Shape& other) const { return Equal(other, false); }

 private:
  PrimitiveType type_ = PrimitiveType::kInvalid;
  std::vector<int64_t> dims_;
  std::vector<bool> dynamic_;
  std::optional<Layout> layout_;
  std::vector<Shape> tuple_;
};

std::string LayoutToString(const Layout& layout);
// Descending layout {rank-1, ..., 0}.
Layout DefaultLayout(int64_t rank);

// Row-major strides (in elements) of `dims`, ignoring layout: the evaluator works on logical order.
std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims);

// Whether a reshape from `from` to `to` only drops or adds dimensions of extent 1, so the other
// dimensions map one to one in order (no linear index needed).
bool ReshapeMovesOnlyUnitDims(const std::vector<int64_t>& from, const std::vector<int64_t>& to);

}  // namespace mltune::ir
