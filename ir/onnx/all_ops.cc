// The op registry's contents: one Register*Ops per ops_*.cc file.
#include "ir/onnx/converter.h"

namespace mltune::ir::onnx {

void RegisterElementwiseOps(OpRegistry& registry);
void RegisterShapeOps(OpRegistry& registry);

void RegisterAllOps(OpRegistry& registry) {
  RegisterElementwiseOps(registry);
  RegisterShapeOps(registry);
}

}  // namespace mltune::ir::onnx
