// cuDNN's forward convolution for mltune-gpu-runner: the library loaded at run time (only plans
// with convolution launches need it), each "conv" launch of a plan set up once (descriptors, the
// heuristic's algorithm, its workspace) and then run on a stream. Strict f32 (FMA math, no TF32),
// as the reference evaluator computes.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "nlohmann/json.hpp"

namespace mltune::backends::gpu {

class CudnnConvolutions {
 public:
  CudnnConvolutions();
  ~CudnnConvolutions();
  CudnnConvolutions(const CudnnConvolutions&) = delete;
  CudnnConvolutions& operator=(const CudnnConvolutions&) = delete;

  // Sets up a plan's conv launch (gpu_program.cc writes it: nhwc, groups, x, w, y, pad, stride,
  // dilation, algo); `*index` names it for Run. An error message, or "".
  std::string Add(const nlohmann::json& launch, int* index);
  // The largest workspace any added convolution needs.
  size_t workspace_bytes() const;
  // y = conv(x, w) on `stream` (a CUstream), with `workspace` of workspace_bytes().
  std::string Run(int index, void* x, void* w, void* y, void* workspace, void* stream);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace mltune::backends::gpu
