#include "absl/strings/str_cat.h"
#include "optimizers/guided/rankers.h"

namespace mltune::opt::guided {

std::string CostModelName(std::string_view task, std::string_view target) {
  return absl::StrCat("cost-model/", std::string(task), "-", std::string(target));
}

}  // namespace mltune::opt::guided
