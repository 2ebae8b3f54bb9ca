// The op registry's contents: one Register*Ops per ops_*.cc file.
#include "frontends/onnx/converter.h"

namespace mltune::ir::onnx {

void RegisterElementwiseOps(OpRegistry& registry);
void RegisterShapeOps(OpRegistry& registry);
void RegisterMatMulOps(OpRegistry& registry);
void RegisterConvOps(OpRegistry& registry);
void RegisterPoolOps(OpRegistry& registry);
void RegisterNormOps(OpRegistry& registry);
void RegisterLossOps(OpRegistry& registry);
void RegisterReduceOps(OpRegistry& registry);
void RegisterIndexOps(OpRegistry& registry);
void RegisterResizeOps(OpRegistry& registry);
void RegisterControlOps(OpRegistry& registry);
void RegisterQuantOps(OpRegistry& registry);
void RegisterTrainingOps(OpRegistry& registry);
void RegisterSignalOps(OpRegistry& registry);
void RegisterRnnOps(OpRegistry& registry);

void RegisterAllOps(OpRegistry& registry) {
  RegisterElementwiseOps(registry);
  RegisterShapeOps(registry);
  RegisterMatMulOps(registry);
  RegisterConvOps(registry);
  RegisterPoolOps(registry);
  RegisterNormOps(registry);
  RegisterLossOps(registry);
  RegisterReduceOps(registry);
  RegisterIndexOps(registry);
  RegisterResizeOps(registry);
  RegisterControlOps(registry);
  RegisterQuantOps(registry);
  RegisterTrainingOps(registry);
  RegisterSignalOps(registry);
  RegisterRnnOps(registry);
}

}  // namespace mltune::ir::onnx
