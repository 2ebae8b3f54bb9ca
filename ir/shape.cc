#include "ir/shape.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace mltune::ir {

Shape::Shape(PrimitiveType type, std::vector<int64_t> dims)
    : type_(type), dims_(std::move(dims)), dynamic_(dims_.size(), false) {
  if (IsArrayType(type_)) layout_ = DefaultLayout(rank());
}

Shape Shape::Tuple(std::vector<Shape> elements) {
  Shape s;
  s.type_ = PrimitiveType::kTuple;
  s.tuple_ = std::move(elements);
  return s;
}

Shape Shape::Token() {
  Shape s;
  s.type_ = PrimitiveType::kToken;
  return s;
}

void Shape::set_dimensions(std::vector<int64_t> dims) {
  dims_ = std::move(dims);
  dynamic_.assign(dims_.size(), false);
  if (layout_.has_value() && static_cast<int64_t>(layout_->minor_to_major.size()) != rank()) {
    layout_ = DefaultLayout(rank());
  }
}

bool Shape::is_static() const {
  if (IsTuple()) {
    for (const Shape& s : tuple_) {
      if (!s.is_static()) return false;
    }
    return true;
  }
  for (bool d : dynamic_) {
    if (d) return false;
  }
  return true;
}

void Shape::SetDefaultLayout() {
  if (IsTuple()) {
    for (Shape& s : tuple_) s.SetDefaultLayout();
  } else if (IsArray()) {
    layout_ = DefaultLayout(rank());
  }
}

void Shape::ClearLayout() {
  layout_.reset();
  for (Shape& s : tuple_) s.ClearLayout();
}

int64_t Shape::ElementCount() const {
  if (!IsArray()) return 0;
  int64_t n = 1;
  for (int64_t d : dims_) {
    if (d < 0) return 0;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) {
      return std::numeric_limits<int64_t>::max();
    }
    n *= d;
  }
  return n;
}

int64_t Shape::ByteSize() const {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  if (IsTuple()) {
    int64_t total = 0;
    for (const Shape& s : tuple_) {
      int64_t b = s.ByteSize();
      if (b > kMax - total) return kMax;
      total += b;
    }
    return total;
  }
  int64_t n = ElementCount();
  int64_t bytes = StorageBytes(type_);
  if (bytes != 0 && n > kMax / bytes) return kMax;
  return n * bytes;
}

std::string LayoutToString(const Layout& layout) {
  std::string out = absl::StrCat("{", absl::StrJoin(layout.minor_to_major, ","));
  bool colon = false;
  auto start_items = [&] {
    if (!colon) out += ":";
    colon = true;
  };
  if (!layout.tiles.empty()) {
    start_items();
    out += "T";
    for (const Tile& t : layout.tiles) {
      out += "(";
      for (size_t i = 0; i < t.dims.size(); ++i) {
        if (i) out += ",";
        out += t.dims[i] == Tile::kCombineDim ? "*" : std::to_string(t.dims[i]);
      }
      out += ")";
    }
  }
  if (layout.element_size_in_bits != 0) {
    start_items();
    absl::StrAppend(&out, "E(", layout.element_size_in_bits, ")");
  }
  if (layout.memory_space != 0) {
    start_items();
    absl::StrAppend(&out, "S(", layout.memory_space, ")");
  }
  if (!layout.extra.empty()) {
    start_items();
    out += layout.extra;
  }
  out += "}";
  return out;
}

Layout DefaultLayout(int64_t rank) {
  Layout l;
  for (int64_t i = rank - 1; i >= 0; --i) l.minor_to_major.push_back(i);
  return l;
}

std::string Shape::ToString(bool print_layout) const {
  if (IsTuple()) {
    std::string out = "(";
    for (size_t i = 0; i < tuple_.size(); ++i) {
      if (i) out += ", ";
      out += tuple_[i].ToString(print_layout);
    }
    return out + ")";
  }
  std::string out = std::string(PrimitiveTypeName(type_)) + "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) out += ",";
    if (dims_[i] == kUnboundedDim) {
      out += "?";
    } else {
      if (dynamic_[i]) out += "<=";
      out += std::to_string(dims_[i]);
    }
  }
  out += "]";
  // XLA prints scalars without their (empty) layout: `f32[]`, not `f32[]{}`.
  const bool empty_scalar_layout = layout_.has_value() && dims_.empty() && *layout_ == Layout{};
  if (print_layout && layout_.has_value() && IsArray() && !empty_scalar_layout) {
    out += LayoutToString(*layout_);
  }
  return out;
}

bool Shape::Equal(const Shape& other, bool compare_layout) const {
  if (type_ != other.type_ || dims_ != other.dims_ || dynamic_ != other.dynamic_) return false;
  if (tuple_.size() != other.tuple_.size()) return false;
  for (size_t i = 0; i < tuple_.size(); ++i) {
    if (!tuple_[i].Equal(other.tuple_[i], compare_layout)) return false;
  }
  if (compare_layout && IsArray()) {
    // A missing layout means the default one.
    Layout a = layout_.value_or(DefaultLayout(rank()));
    Layout b = other.layout_.value_or(DefaultLayout(other.rank()));
    if (!(a == b)) return false;
  }
  return true;
}

std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * dims[i + 1];
  }
  return strides;
}

bool ReshapeMovesOnlyUnitDims(const std::vector<int64_t>& from, const std::vector<int64_t>& to) {
  auto non_unit = [](const std::vector<int64_t>& dims) {
    std::vector<int64_t> kept;
    for (int64_t d : dims) {
      if (d != 1) kept.push_back(d);
    }
    return kept;
  };
  return non_unit(from) == non_unit(to);
}

}  // namespace mltune::ir
