// The op registry's contents: one Register*Ops per ops_*.cc file.
#include "ir/onnx/converter.h"

namespace mltune::ir::onnx {

void RegisterElementwiseOps(OpRegistry& registry);
void RegisterShapeOps(OpRegistry& registry);
void RegisterNnOps(OpRegistry& registry);
void RegisterReduceOps(OpRegistry& registry);
void RegisterIndexOps(OpRegistry& registry);
void RegisterResizeOps(OpRegistry& registry);

void RegisterAllOps(OpRegistry& registry) {
  RegisterElementwiseOps(registry);
  RegisterShapeOps(registry);
  RegisterNnOps(registry);
  RegisterReduceOps(registry);
  RegisterIndexOps(registry);
  RegisterResizeOps(registry);
}

}  // namespace mltune::ir::onnx
