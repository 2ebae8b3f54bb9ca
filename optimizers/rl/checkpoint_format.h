// The byte layout every optimizers/rl checkpoint shares (internal to this folder): a magic line,
// the size of a JSON header, the header, then the torch archive of the weights.
#pragma once

#include <torch/torch.h>

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace mltune::opt::rl::internal {

std::string JoinCheckpoint(std::string_view magic, std::string_view header,
                           std::string_view weights);

struct CheckpointParts {
  std::string_view header;   // JSON
  std::string_view weights;  // torch archive
};
// InvalidArgument "not an mltune <kind> checkpoint (bad magic)" or "<kind> checkpoint: truncated
// header" for bytes of another layout.
absl::StatusOr<CheckpointParts> SplitCheckpoint(std::string_view bytes, std::string_view magic,
                                                std::string_view kind);

// A module's parameters and buffers as a torch archive, and back (throws what torch throws).
std::string ModuleBytes(const torch::nn::Module& module);
void LoadModuleBytes(torch::nn::Module& module, const std::string& bytes);

}  // namespace mltune::opt::rl::internal
