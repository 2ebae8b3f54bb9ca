// A training curve (one point per episode) written as CSV and as a self-contained SVG line plot,
// for `mltune train-agent --csv/--svg`. Plain C++: no plotting library.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mltune::client {

struct TrainingCurvePoint {
  int episode = 0;
  int64_t env_steps = 0;
  double seconds = 0;
  double mean_return = 0;
  double loss = 0;
  std::optional<double> eval_improvement;  // set at evaluations only
};

// Header `episode,env_steps,seconds,mean_return,loss,eval_improvement`, then one row per point;
// eval_improvement is empty where there was no evaluation.
std::string TrainingCurveCsv(const std::vector<TrainingCurvePoint>& points);

// An SVG document: axes with ticks and labels, the mean return per episode as a polyline and the
// evaluations as points joined by a dashed line, a legend and `title` (escaped).
std::string TrainingCurveSvg(const std::vector<TrainingCurvePoint>& points,
                             const std::string& title);

}  // namespace mltune::client
