// Line plots as self-contained SVG documents, for the CLI's pictures: a search's best score
// against steps (`mltune result --plot`) and an agent's training curve (`train-agent --svg`).
// Plain C++, no plotting library: axes with 1-2-5 ticks, a legend, series drawn as lines, steps,
// points joined by dashes, or horizontal reference lines.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace mltune::plot {

struct Series {
  enum class Style {
    kLine,            // a polyline through (x, y)
    kSteps,           // a best-so-far staircase: each y holds until the next x
    kDashedPoints,    // dots joined by a dashed line (sparse evaluations)
    kHorizontalLine,  // a dashed reference line at y[0] across the whole x range
  };
  Series() = default;
  Series(std::string label, Style style, std::string color = "")
      : label(std::move(label)), style(style), color(std::move(color)) {}

  std::string label;  // in the legend
  Style style = Style::kLine;
  std::string color;  // an SVG color; "" picks the next of the palette
  std::vector<double> x, y;
};

struct Figure {
  std::string title;
  std::string x_label, y_label;
  bool y_percent = false;    // y values are fractions, labelled as percentages
  bool y_from_zero = false;  // the y axis includes 0
  double width = 800, height = 480;
  std::vector<Series> series;
};

// The figure as an SVG document. Non-finite points are skipped; an empty figure still has axes.
std::string Svg(const Figure& figure);

// Several figures stacked top to bottom in one SVG document.
std::string SvgStack(const std::vector<Figure>& figures);

}  // namespace mltune::plot
