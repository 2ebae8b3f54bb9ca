#include <ostream>

#include "client/cli_commands.h"
#include "client/sim_targets.h"
#include "optimizers/guided/stored_cost_models.h"

namespace mltune::client {

int RunTrainCostModel(const TrainCostModelCommand& cmd, std::ostream& out, std::ostream& err) {
  opt::cost_model_training::TrainingOptions options = cmd;
  options.target = ResolveAlias(cmd.target);  // as collect logs it: tpu-sim means its spec
  absl::StatusOr<opt::cost_model_training::TrainingOutcome> outcome =
      opt::cost_model_training::TrainCostModel(options, out, err);
  if (!outcome.ok()) {
    err << "error: " << outcome.status().message() << "\n";
    return 1;
  }
  return outcome->gate_rejected ? opt::guided::kGateRejectedExitCode : 0;
}

}  // namespace mltune::client
