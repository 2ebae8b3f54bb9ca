#include "ir/literal.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "ir/float_types.h"

namespace mltune::ir {
namespace {

// Saturating float-to-integer conversion with NaN -> 0, as XLA's convert does on CPU.
template <typename I>
I SaturatingCast(double v) {
  if (std::isnan(v)) return 0;
  if (v <= static_cast<double>(std::numeric_limits<I>::min())) {
    return std::numeric_limits<I>::min();
  }
  if (v >= static_cast<double>(std::numeric_limits<I>::max())) {
    return std::numeric_limits<I>::max();
  }
  return static_cast<I>(v);
}

int64_t SignExtend4(uint64_t v) {
  int64_t low = static_cast<int64_t>(v & 0xf);
  return low >= 8 ? low - 16 : low;
}

}  // namespace

absl::StatusOr<Literal> Literal::Create(const Shape& shape, int64_t max_bytes) {
  Literal l;
  l.shape_ = shape;
  if (shape.IsTuple()) {
    int64_t remaining = max_bytes;
    for (const Shape& s : shape.tuple_shapes()) {
      absl::StatusOr<Literal> e = Create(s, remaining);
      if (!e.ok()) return e.status();
      remaining -= e->size_bytes();
      l.elements_.push_back(*std::move(e));
    }
    return l;
  }
  if (shape.IsToken()) return l;
  if (!shape.IsArray()) {
    return absl::InvalidArgumentError(absl::StrCat("no literal for shape ", shape.ToString()));
  }
  if (!shape.is_static()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot make a literal of dynamic shape ", shape.ToString()));
  }
  const int64_t bytes = shape.ByteSize();
  if (bytes > max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("literal of shape ", shape.ToString(),
                                                     " needs ", bytes, " bytes, over the limit of ",
                                                     max_bytes));
  }
  l.element_count_ = shape.ElementCount();
  l.data_.assign(static_cast<size_t>(bytes), 0);
  return l;
}

Literal Literal::MakeTuple(std::vector<Literal> elements) {
  Literal l;
  std::vector<Shape> shapes;
  for (const Literal& e : elements) shapes.push_back(e.shape());
  l.shape_ = Shape::Tuple(std::move(shapes));
  l.elements_ = std::move(elements);
  return l;
}

double Literal::GetAsDouble(int64_t i) const {
  switch (element_type()) {
    case PrimitiveType::kPred:
    case PrimitiveType::kU4:
    case PrimitiveType::kU8:
      return Get<uint8_t>(i);
    case PrimitiveType::kS4:
    case PrimitiveType::kS8:
      return Get<int8_t>(i);
    case PrimitiveType::kS16:
      return Get<int16_t>(i);
    case PrimitiveType::kS32:
      return Get<int32_t>(i);
    case PrimitiveType::kS64:
      return static_cast<double>(Get<int64_t>(i));
    case PrimitiveType::kU16:
      return Get<uint16_t>(i);
    case PrimitiveType::kU32:
      return Get<uint32_t>(i);
    case PrimitiveType::kU64:
      return static_cast<double>(Get<uint64_t>(i));
    case PrimitiveType::kF16:
      return HalfToFloat(Get<uint16_t>(i));
    case PrimitiveType::kBF16:
      return BF16ToFloat(Get<uint16_t>(i));
    case PrimitiveType::kF32:
      return Get<float>(i);
    case PrimitiveType::kF64:
      return Get<double>(i);
    case PrimitiveType::kC64:
    case PrimitiveType::kC128:
      return GetAsComplex(i).real();
    default:
      if (IsF8(element_type())) return F8ToDouble(element_type(), Get<uint8_t>(i));
      return 0;
  }
}

int64_t Literal::GetAsInt64(int64_t i) const {
  switch (element_type()) {
    case PrimitiveType::kPred:
    case PrimitiveType::kU4:
    case PrimitiveType::kU8:
      return Get<uint8_t>(i);
    case PrimitiveType::kS4:
    case PrimitiveType::kS8:
      return Get<int8_t>(i);
    case PrimitiveType::kS16:
      return Get<int16_t>(i);
    case PrimitiveType::kS32:
      return Get<int32_t>(i);
    case PrimitiveType::kS64:
      return Get<int64_t>(i);
    case PrimitiveType::kU16:
      return Get<uint16_t>(i);
    case PrimitiveType::kU32:
      return Get<uint32_t>(i);
    case PrimitiveType::kU64:
      return static_cast<int64_t>(Get<uint64_t>(i));
    default:
      return SaturatingCast<int64_t>(GetAsDouble(i));
  }
}

uint64_t Literal::GetAsUint64(int64_t i) const {
  if (element_type() == PrimitiveType::kU64) return Get<uint64_t>(i);
  if (IsIntegral(element_type()) || element_type() == PrimitiveType::kPred) {
    return static_cast<uint64_t>(GetAsInt64(i));
  }
  return SaturatingCast<uint64_t>(GetAsDouble(i));
}

std::complex<double> Literal::GetAsComplex(int64_t i) const {
  if (element_type() == PrimitiveType::kC64) {
    float parts[2];
    std::memcpy(parts, data_.data() + i * 8, 8);
    return {parts[0], parts[1]};
  }
  if (element_type() == PrimitiveType::kC128) {
    double parts[2];
    std::memcpy(parts, data_.data() + i * 16, 16);
    return {parts[0], parts[1]};
  }
  return {GetAsDouble(i), 0.0};
}

bool Literal::GetAsBool(int64_t i) const {
  if (IsComplex(element_type())) return GetAsComplex(i) != std::complex<double>(0, 0);
  if (IsFloatingPoint(element_type())) return GetAsDouble(i) != 0;
  return GetAsUint64(i) != 0;
}

void Literal::SetFromDouble(int64_t i, double v) {
  switch (element_type()) {
    case PrimitiveType::kPred:
      return Set<uint8_t>(i, v != 0 ? 1 : 0);
    case PrimitiveType::kS4:
      return Set<int8_t>(i, static_cast<int8_t>(std::clamp<int64_t>(SaturatingCast<int64_t>(v), -8, 7)));
    case PrimitiveType::kU4:
      return Set<uint8_t>(i, static_cast<uint8_t>(std::clamp<int64_t>(SaturatingCast<int64_t>(v), 0, 15)));
    case PrimitiveType::kS8:
      return Set<int8_t>(i, SaturatingCast<int8_t>(v));
    case PrimitiveType::kS16:
      return Set<int16_t>(i, SaturatingCast<int16_t>(v));
    case PrimitiveType::kS32:
      return Set<int32_t>(i, SaturatingCast<int32_t>(v));
    case PrimitiveType::kS64:
      return Set<int64_t>(i, SaturatingCast<int64_t>(v));
    case PrimitiveType::kU8:
      return Set<uint8_t>(i, SaturatingCast<uint8_t>(v));
    case PrimitiveType::kU16:
      return Set<uint16_t>(i, SaturatingCast<uint16_t>(v));
    case PrimitiveType::kU32:
      return Set<uint32_t>(i, SaturatingCast<uint32_t>(v));
    case PrimitiveType::kU64:
      return Set<uint64_t>(i, SaturatingCast<uint64_t>(v));
    case PrimitiveType::kF16:
      return Set<uint16_t>(i, FloatToHalf(static_cast<float>(v)));
    case PrimitiveType::kBF16:
      return Set<uint16_t>(i, FloatToBF16(static_cast<float>(v)));
    case PrimitiveType::kF32:
      return Set<float>(i, static_cast<float>(v));
    case PrimitiveType::kF64:
      return Set<double>(i, v);
    case PrimitiveType::kC64:
    case PrimitiveType::kC128:
      return SetFromComplex(i, {v, 0.0});
    default:
      if (IsF8(element_type())) Set<uint8_t>(i, DoubleToF8(element_type(), v));
      return;
  }
}

void Literal::SetFromInt64(int64_t i, int64_t v) {
  switch (element_type()) {
    case PrimitiveType::kPred:
      return Set<uint8_t>(i, v != 0 ? 1 : 0);
    case PrimitiveType::kS4:
      return Set<int8_t>(i, static_cast<int8_t>(SignExtend4(static_cast<uint64_t>(v))));
    case PrimitiveType::kU4:
      return Set<uint8_t>(i, static_cast<uint8_t>(v & 0xf));
    case PrimitiveType::kS8:
      return Set<int8_t>(i, static_cast<int8_t>(v));
    case PrimitiveType::kS16:
      return Set<int16_t>(i, static_cast<int16_t>(v));
    case PrimitiveType::kS32:
      return Set<int32_t>(i, static_cast<int32_t>(v));
    case PrimitiveType::kS64:
      return Set<int64_t>(i, v);
    case PrimitiveType::kU8:
      return Set<uint8_t>(i, static_cast<uint8_t>(v));
    case PrimitiveType::kU16:
      return Set<uint16_t>(i, static_cast<uint16_t>(v));
    case PrimitiveType::kU32:
      return Set<uint32_t>(i, static_cast<uint32_t>(v));
    case PrimitiveType::kU64:
      return Set<uint64_t>(i, static_cast<uint64_t>(v));
    default:
      return SetFromDouble(i, static_cast<double>(v));
  }
}

void Literal::SetFromUint64(int64_t i, uint64_t v) {
  if (IsIntegral(element_type()) || element_type() == PrimitiveType::kPred) {
    return SetFromInt64(i, static_cast<int64_t>(v));
  }
  SetFromDouble(i, static_cast<double>(v));
}

void Literal::SetFromComplex(int64_t i, std::complex<double> v) {
  if (element_type() == PrimitiveType::kC64) {
    float parts[2] = {static_cast<float>(v.real()), static_cast<float>(v.imag())};
    std::memcpy(data_.data() + i * 8, parts, 8);
  } else if (element_type() == PrimitiveType::kC128) {
    double parts[2] = {v.real(), v.imag()};
    std::memcpy(data_.data() + i * 16, parts, 16);
  } else {
    SetFromDouble(i, v.real());
  }
}

std::string FormatFloat(double v, PrimitiveType type) {
  if (std::isnan(v)) return std::signbit(v) ? "-nan" : "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char buf[64];
  std::to_chars_result r;
  if (type == PrimitiveType::kF64) {
    r = std::to_chars(buf, buf + sizeof(buf), v);
  } else {
    // Narrow types are exactly representable as float, so float's shortest form round-trips.
    r = std::to_chars(buf, buf + sizeof(buf), static_cast<float>(v));
  }
  return std::string(buf, r.ptr);
}

namespace {

std::string ElementToString(const Literal& l, int64_t i) {
  const PrimitiveType t = l.element_type();
  if (t == PrimitiveType::kPred) return l.GetAsBool(i) ? "true" : "false";
  if (IsComplex(t)) {
    std::complex<double> c = l.GetAsComplex(i);
    PrimitiveType part = t == PrimitiveType::kC64 ? PrimitiveType::kF32 : PrimitiveType::kF64;
    return absl::StrCat("(", FormatFloat(c.real(), part), ", ", FormatFloat(c.imag(), part), ")");
  }
  if (IsFloatingPoint(t)) {
    const double v = l.GetAsDouble(i);
    if (std::isnan(v)) {
      // XLA prints a NaN whose mantissa is not the plain quiet bit as `nan(0x<mantissa>)`.
      uint64_t bits = 0;
      int mantissa_bits = 0;
      if (t == PrimitiveType::kF32) {
        bits = std::bit_cast<uint32_t>(l.Get<float>(i)), mantissa_bits = 23;
      } else if (t == PrimitiveType::kF64) {
        bits = std::bit_cast<uint64_t>(l.Get<double>(i)), mantissa_bits = 52;
      } else if (t == PrimitiveType::kF16) {
        bits = l.Get<uint16_t>(i), mantissa_bits = 10;
      } else if (t == PrimitiveType::kBF16) {
        bits = l.Get<uint16_t>(i), mantissa_bits = 7;
      }
      if (mantissa_bits != 0) {
        const uint64_t mantissa = bits & ((uint64_t{1} << mantissa_bits) - 1);
        const bool negative = (bits >> (BitWidth(t) - 1)) & 1;
        if (mantissa != uint64_t{1} << (mantissa_bits - 1)) {
          return absl::StrCat(negative ? "-" : "", "nan(0x", absl::Hex(mantissa), ")");
        }
      }
    }
    return FormatFloat(v, t);
  }
  if (t == PrimitiveType::kU64) return std::to_string(l.GetAsUint64(i));
  return std::to_string(l.GetAsInt64(i));
}

void AppendArray(const Literal& l, int64_t dim, int64_t& index, std::string& out) {
  const auto& dims = l.shape().dimensions();
  const int64_t rank = static_cast<int64_t>(dims.size());
  if (dim == rank - 1) {
    out += "{";
    for (int64_t j = 0; j < dims[dim]; ++j) {
      if (j) out += ", ";
      out += ElementToString(l, index++);
    }
    out += "}";
    return;
  }
  out += "{ ";
  for (int64_t j = 0; j < dims[dim]; ++j) {
    if (j) out += ", ";
    AppendArray(l, dim + 1, index, out);
  }
  out += " }";
}

}  // namespace

std::string Literal::ToString() const {
  if (shape_.IsTuple()) {
    std::string out = "(";
    for (size_t i = 0; i < elements_.size(); ++i) {
      if (i) out += ", ";
      out += elements_[i].ToString();
    }
    return out + ")";
  }
  if (shape_.IsToken()) return "token";
  if (shape_.rank() == 0) return ElementToString(*this, 0);
  int64_t index = 0;
  std::string out;
  AppendArray(*this, 0, index, out);
  return out;
}

bool Literal::BitwiseEqual(const Literal& other) const {
  if (!shape_.Compatible(other.shape_)) return false;
  if (shape_.IsTuple()) {
    for (size_t i = 0; i < elements_.size(); ++i) {
      if (!elements_[i].BitwiseEqual(other.elements_[i])) return false;
    }
    return true;
  }
  return data_ == other.data_;
}

}  // namespace mltune::ir
