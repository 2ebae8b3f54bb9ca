#include <fstream>
#include <ostream>
#include <utility>

#include "client/cli_commands.h"
#include "client/sim_targets.h"
#include "optimizers/guided/stored_cost_models.h"
#include "plot/line_plot.h"

namespace mltune::client {
namespace {

// The final training's loss per epoch: the total and, where trained, its MSE and rank terms.
std::string CurveSvg(const std::vector<opt::cost_model_training::EpochLoss>& curve,
                     const std::string& title) {
  plot::Figure figure;
  figure.title = title;
  figure.x_label = "epoch";
  figure.y_label = "mean loss per batch";
  figure.y_from_zero = true;
  plot::Series total("total", plot::Series::Style::kLine);
  plot::Series mse("MSE term (log seconds)", plot::Series::Style::kLine);
  plot::Series rank("rank term (per pair)", plot::Series::Style::kLine);
  bool any_mse = false, any_rank = false;
  for (const opt::cost_model_training::EpochLoss& e : curve) {
    total.x.push_back(e.epoch);
    total.y.push_back(e.loss);
    mse.x.push_back(e.epoch);
    mse.y.push_back(e.mse);
    rank.x.push_back(e.epoch);
    rank.y.push_back(e.rank);
    any_mse = any_mse || e.mse != 0;
    any_rank = any_rank || e.rank != 0;
  }
  figure.series.push_back(std::move(total));
  if (any_mse) figure.series.push_back(std::move(mse));
  if (any_rank) figure.series.push_back(std::move(rank));
  return plot::Svg(figure);
}

}  // namespace

int RunTrainCostModel(const TrainCostModelCommand& cmd, std::ostream& out, std::ostream& err) {
  opt::cost_model_training::TrainingOptions options = cmd;
  options.target = ResolveAlias(cmd.target);  // as collect logs it: tpu-sim means its spec
  absl::StatusOr<opt::cost_model_training::TrainingOutcome> outcome =
      opt::cost_model_training::TrainCostModel(options, out, err);
  if (!outcome.ok()) {
    err << "error: " << outcome.status().message() << "\n";
    return 1;
  }
  if (!cmd.svg.empty()) {
    if (outcome->curve.empty()) {
      err << "error: --svg: no final training ran (the gate rejected the model, or --no-store "
             "without --test-db)\n";
      return 1;
    }
    std::ofstream file(cmd.svg);
    file << CurveSvg(outcome->curve, outcome->model + " training");
    file.close();
    if (!file) {
      err << "error: cannot write --svg " << cmd.svg << "\n";
      return 1;
    }
    out << "training curve written to " << cmd.svg << "\n";
  }
  return outcome->gate_rejected ? opt::guided::kGateRejectedExitCode : 0;
}

}  // namespace mltune::client
