#include "optimizers/rl/checkpoint_format.h"

#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace mltune::opt::rl::internal {

std::string JoinCheckpoint(std::string_view magic, std::string_view header,
                           std::string_view weights) {
  return absl::StrCat(std::string(magic), header.size(), "\n", std::string(header),
                      std::string(weights));
}

absl::StatusOr<CheckpointParts> SplitCheckpoint(std::string_view bytes, std::string_view magic,
                                                std::string_view kind) {
  if (bytes.substr(0, magic.size()) != magic) {
    return absl::InvalidArgumentError(
        absl::StrCat("not an mltune ", std::string(kind), " checkpoint (bad magic)"));
  }
  bytes.remove_prefix(magic.size());
  const size_t newline = bytes.find('\n');
  size_t header_size = 0;
  if (newline == std::string_view::npos ||
      !absl::SimpleAtoi(std::string(bytes.substr(0, newline)), &header_size) ||
      newline + 1 + header_size > bytes.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(kind), " checkpoint: truncated header"));
  }
  return CheckpointParts{bytes.substr(newline + 1, header_size),
                         bytes.substr(newline + 1 + header_size)};
}

std::string ModuleBytes(const torch::nn::Module& module) {
  torch::serialize::OutputArchive archive;
  module.save(archive);
  std::ostringstream bytes;
  archive.save_to(bytes);
  return bytes.str();
}

void LoadModuleBytes(torch::nn::Module& module, const std::string& bytes) {
  std::istringstream in(bytes);
  torch::serialize::InputArchive archive;
  archive.load_from(in);
  module.load(archive);
}

}  // namespace mltune::opt::rl::internal
