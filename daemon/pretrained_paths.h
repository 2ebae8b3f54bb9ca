// Where the pretrained checkpoints live, apart from the store that installs them
// (daemon/pretrained_models.h): the CLI finds a checkpoint file without linking the daemon
// library (gRPC, storage).
#pragma once

#include <string>

namespace mltune::daemon {

// Stands for '/' of a model name in its file name; no model name has it.
inline constexpr char kPretrainedSeparator[] = "--";

// A folder's checkpoint file for model `name`: "pass-order/rl-ppo" <-> "pass-order--rl-ppo.ckpt",
// with its training metadata beside it in "pass-order--rl-ppo.json".
std::string PretrainedFileStem(const std::string& model_name);

// The folder mltuned reads when --pretrained-dir is not given: share/mltune/pretrained beside the
// installed binary, else the source tree's models/pretrained; "" when neither exists.
std::string DefaultPretrainedDir();

}  // namespace mltune::daemon
