// TensorProto <-> Literal and ONNX element types <-> PrimitiveType (internal to
// mltune_frontend_onnx).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "ir/literal.h"
#include "onnx/onnx_pb.h"

namespace mltune::ir::onnx {

// The IR type of an ONNX TensorProto::DataType; Unimplemented for string and complex types.
absl::StatusOr<PrimitiveType> ElementTypeFromOnnx(int32_t data_type);
int32_t ElementTypeToOnnx(PrimitiveType type);
// "FLOAT", "INT64", ...
std::string OnnxTypeName(int32_t data_type);

// The tensor's value. Reads raw_data (little-endian) or the typed fields; refuses external data
// and sizes that do not match the dims.
absl::StatusOr<Literal> LiteralFromTensor(const ::onnx::TensorProto& tensor);

}  // namespace mltune::ir::onnx
