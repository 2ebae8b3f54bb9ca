#include "frontends/onnx/tensor.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace mltune::ir::onnx {
namespace {

using ::onnx::TensorProto;

// Elements of a shape, or an error when it overflows or has a negative dimension.
absl::StatusOr<int64_t> ElementCount(const TensorProto& t) {
  int64_t n = 1;
  for (int64_t d : t.dims()) {
    if (d < 0 || (d != 0 && n > INT64_MAX / d)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", t.name(), "': dimension ", d, " is out of range"));
    }
    n *= d;
  }
  return n;
}

template <typename Field>
absl::Status CheckCount(const TensorProto& t, const Field& field, int64_t n, const char* what) {
  if (static_cast<int64_t>(field.size()) != n) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", t.name(), "': ", what, " holds ",
                                                   field.size(), " values, its dims need ", n));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<PrimitiveType> ElementTypeFromOnnx(int32_t data_type) {
  switch (data_type) {
    case TensorProto::FLOAT:
      return PrimitiveType::kF32;
    case TensorProto::UINT8:
      return PrimitiveType::kU8;
    case TensorProto::INT8:
      return PrimitiveType::kS8;
    case TensorProto::UINT16:
      return PrimitiveType::kU16;
    case TensorProto::INT16:
      return PrimitiveType::kS16;
    case TensorProto::INT32:
      return PrimitiveType::kS32;
    case TensorProto::INT64:
      return PrimitiveType::kS64;
    case TensorProto::BOOL:
      return PrimitiveType::kPred;
    case TensorProto::FLOAT16:
      return PrimitiveType::kF16;
    case TensorProto::DOUBLE:
      return PrimitiveType::kF64;
    case TensorProto::UINT32:
      return PrimitiveType::kU32;
    case TensorProto::UINT64:
      return PrimitiveType::kU64;
    case TensorProto::BFLOAT16:
      return PrimitiveType::kBF16;
    default:
      return absl::UnimplementedError(
          absl::StrCat("element type ", OnnxTypeName(data_type), " is not supported"));
  }
}

int32_t ElementTypeToOnnx(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::kF32:
      return TensorProto::FLOAT;
    case PrimitiveType::kU8:
      return TensorProto::UINT8;
    case PrimitiveType::kS8:
      return TensorProto::INT8;
    case PrimitiveType::kU16:
      return TensorProto::UINT16;
    case PrimitiveType::kS16:
      return TensorProto::INT16;
    case PrimitiveType::kS32:
      return TensorProto::INT32;
    case PrimitiveType::kS64:
      return TensorProto::INT64;
    case PrimitiveType::kPred:
      return TensorProto::BOOL;
    case PrimitiveType::kF16:
      return TensorProto::FLOAT16;
    case PrimitiveType::kF64:
      return TensorProto::DOUBLE;
    case PrimitiveType::kU32:
      return TensorProto::UINT32;
    case PrimitiveType::kU64:
      return TensorProto::UINT64;
    case PrimitiveType::kBF16:
      return TensorProto::BFLOAT16;
    default:
      return TensorProto::UNDEFINED;
  }
}

std::string OnnxTypeName(int32_t data_type) {
  if (TensorProto::DataType_IsValid(data_type)) {
    return TensorProto::DataType_Name(static_cast<TensorProto::DataType>(data_type));
  }
  return absl::StrCat("<unknown type ", data_type, ">");
}

absl::StatusOr<Literal> LiteralFromTensor(const TensorProto& t) {
  if (t.data_location() == TensorProto::EXTERNAL || t.external_data_size() > 0) {
    return absl::UnimplementedError(
        absl::StrCat("tensor '", t.name(),
                     "': external data is not supported; save the model "
                     "with its weights inside (onnx.save(model, save_as_external_data=False))"));
  }
  if (t.has_segment()) {
    return absl::UnimplementedError(absl::StrCat("tensor '", t.name(), "': segments"));
  }
  absl::StatusOr<PrimitiveType> type = ElementTypeFromOnnx(t.data_type());
  if (!type.ok()) {
    return absl::Status(type.status().code(),
                        absl::StrCat("tensor '", t.name(), "': ", type.status().message()));
  }
  absl::StatusOr<int64_t> n = ElementCount(t);
  if (!n.ok()) return n.status();
  // The values present bound the size: check them before allocating, so a tensor that
  // declares huge dims without the data cannot make the importer allocate.
  const int64_t present =
      t.has_raw_data() ? static_cast<int64_t>(t.raw_data().size()) / StorageBytes(*type)
                       : std::max({t.float_data_size(), t.double_data_size(), t.int32_data_size(),
                                   t.int64_data_size(), t.uint64_data_size()});
  if (present != *n) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", t.name(), "' holds ", present, " values, its dims need ", *n));
  }
  std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
  absl::StatusOr<Literal> lit = Literal::Create(Shape(*type, dims));
  if (!lit.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor '", t.name(), "': ", lit.status().message()));
  }
  if (t.has_raw_data()) {
    if (static_cast<int64_t>(t.raw_data().size()) != lit->size_bytes()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", t.name(), "': raw_data has ", t.raw_data().size(),
                       " bytes, its dims and type need ", lit->size_bytes()));
    }
    // The IR stores pred as one byte and every other type in its own width, little-endian.
    if (lit->size_bytes() > 0)
      std::memcpy(lit->untyped_data(), t.raw_data().data(), lit->size_bytes());
    return lit;
  }
  switch (t.data_type()) {
    case TensorProto::FLOAT:
      if (absl::Status s = CheckCount(t, t.float_data(), *n, "float_data"); !s.ok()) return s;
      for (int64_t i = 0; i < *n; ++i) lit->Set<float>(i, t.float_data(i));
      break;
    case TensorProto::DOUBLE:
      if (absl::Status s = CheckCount(t, t.double_data(), *n, "double_data"); !s.ok()) return s;
      for (int64_t i = 0; i < *n; ++i) lit->Set<double>(i, t.double_data(i));
      break;
    case TensorProto::INT64:
      if (absl::Status s = CheckCount(t, t.int64_data(), *n, "int64_data"); !s.ok()) return s;
      for (int64_t i = 0; i < *n; ++i) lit->Set<int64_t>(i, t.int64_data(i));
      break;
    case TensorProto::UINT32:
    case TensorProto::UINT64:
      if (absl::Status s = CheckCount(t, t.uint64_data(), *n, "uint64_data"); !s.ok()) return s;
      for (int64_t i = 0; i < *n; ++i) lit->SetFromUint64(i, t.uint64_data(i));
      break;
    case TensorProto::FLOAT16:
    case TensorProto::BFLOAT16:
      // Stored as their 16 bits in int32_data.
      if (absl::Status s = CheckCount(t, t.int32_data(), *n, "int32_data"); !s.ok()) return s;
      for (int64_t i = 0; i < *n; ++i) {
        lit->Set<uint16_t>(i, static_cast<uint16_t>(t.int32_data(i)));
      }
      break;
    default:  // INT32, INT16, INT8, UINT16, UINT8, BOOL: int32_data.
      if (absl::Status s = CheckCount(t, t.int32_data(), *n, "int32_data"); !s.ok()) return s;
      for (int64_t i = 0; i < *n; ++i) lit->SetFromInt64(i, t.int32_data(i));
      break;
  }
  return lit;
}

}  // namespace mltune::ir::onnx
