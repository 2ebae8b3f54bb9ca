#include "client/training_plot.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "plot/line_plot.h"

namespace mltune::client {
namespace {

// Shortest round-trippable-enough text for a CSV cell (%.6g would lose steps past 1e6).
std::string Number(double x) { return absl::StrFormat("%.8g", x); }

}  // namespace

std::string TrainingCurveCsv(const std::vector<TrainingCurvePoint>& points) {
  std::string csv = "episode,env_steps,seconds,mean_return,loss,eval_improvement\n";
  for (const TrainingCurvePoint& p : points) {
    absl::StrAppend(&csv, p.episode, ",", p.env_steps, ",", Number(p.seconds), ",",
                    Number(p.mean_return), ",", Number(p.loss), ",",
                    p.eval_improvement ? Number(*p.eval_improvement) : "", "\n");
  }
  return csv;
}

std::string TrainingCurveSvg(const std::vector<TrainingCurvePoint>& points,
                             const std::string& title) {
  // Both series are relative op-count reductions, so they share the y axis; 0 is always shown.
  plot::Figure figure;
  figure.title = title;
  figure.x_label = "episode";
  figure.y_label = "op-count reduction from the start";
  figure.y_percent = true;
  figure.y_from_zero = true;
  plot::Series training("mean return (training)", plot::Series::Style::kLine);
  plot::Series evaluation("evaluation (greedy rollouts)", plot::Series::Style::kDashedPoints);
  for (const TrainingCurvePoint& p : points) {
    training.x.push_back(p.episode);
    training.y.push_back(p.mean_return);
    if (p.eval_improvement) {
      evaluation.x.push_back(p.episode);
      evaluation.y.push_back(*p.eval_improvement);
    }
  }
  figure.series = {std::move(training), std::move(evaluation)};
  return plot::Svg(figure);
}

}  // namespace mltune::client
