#include "client/training_plot.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace mltune::client {
namespace {

// Shortest round-trippable-enough text for a CSV cell (%.6g would lose steps past 1e6).
std::string Number(double x) { return absl::StrFormat("%.8g", x); }

std::string EscapeXml(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Tick positions covering [lo, hi] at a 1, 2 or 5 x 10^k spacing, about `target` of them; widens
// [lo, hi] to whole ticks.
std::vector<double> Ticks(double& lo, double& hi, int target) {
  if (!(hi > lo)) {
    const double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double raw = (hi - lo) / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  lo = std::floor(lo / step) * step;
  hi = std::ceil(hi / step) * step;
  std::vector<double> ticks;
  for (double t = lo; t <= hi + step * 1e-6; t += step) {
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);  // no "-0"
  }
  return ticks;
}

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
  constexpr double kWidth = 800, kHeight = 480;
  constexpr double kLeft = 80, kRight = 30, kTop = 50, kBottom = 60;
  constexpr double kPlotW = kWidth - kLeft - kRight, kPlotH = kHeight - kTop - kBottom;

  // Both series are relative op-count reductions, so they share the y axis; 0 is always shown.
  double x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 0;
  for (const TrainingCurvePoint& p : points) {
    x_hi = std::max(x_hi, static_cast<double>(p.episode));
    y_lo = std::min(y_lo, p.mean_return);
    y_hi = std::max(y_hi, p.mean_return);
    if (p.eval_improvement) {
      y_lo = std::min(y_lo, *p.eval_improvement);
      y_hi = std::max(y_hi, *p.eval_improvement);
    }
  }
  const std::vector<double> x_ticks = Ticks(x_lo, x_hi, 8);
  const std::vector<double> y_ticks = Ticks(y_lo, y_hi, 6);
  auto px = [&](double x) { return kLeft + (x - x_lo) / (x_hi - x_lo) * kPlotW; };
  auto py = [&](double y) { return kTop + (y_hi - y) / (y_hi - y_lo) * kPlotH; };

  std::string svg = absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
      kWidth, kHeight, kWidth, kHeight);
  absl::StrAppend(&svg, absl::StrFormat("<rect width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n",
                                        kWidth, kHeight));
  absl::StrAppend(&svg, absl::StrFormat("<text x=\"%.1f\" y=\"28\" text-anchor=\"middle\" "
                                        "font-size=\"16\">%s</text>\n",
                                        kWidth / 2, EscapeXml(title)));
  // Grid lines and tick labels.
  for (double t : x_ticks) {
    absl::StrAppend(
        &svg,
        absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>"
                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
                        px(t), kTop, px(t), kTop + kPlotH, px(t), kTop + kPlotH + 18, t));
  }
  for (double t : y_ticks) {
    absl::StrAppend(
        &svg,
        absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e5e5e5\"/>"
                        "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g%%</text>\n",
                        kLeft, py(t), kLeft + kPlotW, py(t), kLeft - 6, py(t) + 4, t * 100));
  }
  // Axes (y = 0 drawn darker when it is inside the range) and their labels.
  absl::StrAppend(&svg, absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                                        "stroke=\"black\"/>\n",
                                        kLeft, kTop + kPlotH, kLeft + kPlotW, kTop + kPlotH));
  absl::StrAppend(&svg, absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                                        "stroke=\"black\"/>\n",
                                        kLeft, kTop, kLeft, kTop + kPlotH));
  if (y_lo < 0 && y_hi > 0) {
    absl::StrAppend(&svg, absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                                          "stroke=\"#888\"/>\n",
                                          kLeft, py(0), kLeft + kPlotW, py(0)));
  }
  absl::StrAppend(&svg, absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">"
                                        "episode</text>\n",
                                        kLeft + kPlotW / 2, kHeight - 15));
  absl::StrAppend(&svg, absl::StrFormat("<text x=\"18\" y=\"%.1f\" text-anchor=\"middle\" "
                                        "transform=\"rotate(-90 18 %.1f)\">op-count reduction "
                                        "from the start</text>\n",
                                        kTop + kPlotH / 2, kTop + kPlotH / 2));

  // The series.
  std::string line, evals, dots;
  for (const TrainingCurvePoint& p : points) {
    absl::StrAppend(&line, absl::StrFormat("%.1f,%.1f ", px(p.episode), py(p.mean_return)));
    if (p.eval_improvement) {
      const double x = px(p.episode), y = py(*p.eval_improvement);
      absl::StrAppend(&evals, absl::StrFormat("%.1f,%.1f ", x, y));
      absl::StrAppend(&dots, absl::StrFormat("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" "
                                             "fill=\"#e6550d\"/>\n",
                                             x, y));
    }
  }
  if (!line.empty()) {
    line.pop_back();
    absl::StrAppend(&svg,
                    "<polyline fill=\"none\" stroke=\"#3182bd\" stroke-width=\"1.5\" "
                    "points=\"",
                    line, "\"/>\n");
  }
  if (!evals.empty()) {
    evals.pop_back();
    absl::StrAppend(&svg,
                    "<polyline fill=\"none\" stroke=\"#e6550d\" stroke-dasharray=\"4 3\" "
                    "points=\"",
                    evals, "\"/>\n", dots);
  }
  // Legend, top left inside the plot.
  const double lx = kLeft + 12, ly = kTop + 14;
  absl::StrAppend(
      &svg,
      absl::StrFormat("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#3182bd\" "
                      "stroke-width=\"2\"/><text x=\"%.1f\" y=\"%.1f\">mean return (training)"
                      "</text>\n",
                      lx, ly, lx + 24, ly, lx + 30, ly + 4));
  absl::StrAppend(&svg, absl::StrFormat("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#e6550d\"/>"
                                        "<text x=\"%.1f\" y=\"%.1f\">evaluation (greedy rollouts)"
                                        "</text>\n",
                                        lx + 12, ly + 18, lx + 30, ly + 22));
  absl::StrAppend(&svg, "</svg>\n");
  return svg;
}

}  // namespace mltune::client
