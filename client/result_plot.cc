#include "client/result_plot.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "plot/line_plot.h"

namespace mltune::client {

absl::StatusOr<std::string> ResultPlotSvg(const JobInfo& job) {
  std::vector<plot::Figure> panels;
  for (const TaskResult& r : job.results) {
    auto it = r.artifacts.find("best_so_far");
    if (it == r.artifacts.end()) continue;
    const nlohmann::json trace = nlohmann::json::parse(it->second, nullptr, false);
    if (!trace.is_object() || !trace.contains("step") || !trace.contains("best")) {
      return absl::DataLossError(
          absl::StrCat("job ", job.job_id, ": task ", r.task, "'s best_so_far is not a trace"));
    }
    plot::Figure figure;
    figure.title = absl::StrCat(r.task, " on ", r.target, ": ", r.strategy, ", job ", job.job_id);
    figure.x_label = "search step";
    figure.y_label = r.provenance.worker.substr(r.provenance.worker.find('/') + 1);
    plot::Series best("best so far", plot::Series::Style::kSteps);
    best.x = trace["step"].get<std::vector<double>>();
    best.y = trace["best"].get<std::vector<double>>();
    plot::Series baseline("compiler's default", plot::Series::Style::kHorizontalLine, "#e6550d");
    baseline.y = {r.baseline_score};
    plot::Series original("as given", plot::Series::Style::kHorizontalLine, "#969696");
    original.y = {r.original_score};
    figure.series = {std::move(best), std::move(baseline), std::move(original)};
    panels.push_back(std::move(figure));
  }
  if (panels.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "job ", job.job_id,
        " has no best-so-far trace (its results were cached before mltuned recorded one); "
        "submit the graph again with --skip-cache"));
  }
  return plot::SvgStack(panels);
}

}  // namespace mltune::client
