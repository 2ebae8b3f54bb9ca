#include "plot/line_plot.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace mltune::plot {
namespace {

constexpr const char* kPalette[] = {"#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363"};
constexpr double kLeft = 90, kRight = 30, kTop = 50, kBottom = 60;

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

std::string Line(double x1, double y1, double x2, double y2, std::string_view stroke,
                 std::string_view extra = "") {
  return absl::StrFormat(
      "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"%s/>\n", x1, y1, x2, y2,
      std::string(stroke), std::string(extra));
}

// The figure's elements, in a coordinate system whose origin is its top left corner.
std::string Body(const Figure& f) {
  const double plot_w = f.width - kLeft - kRight, plot_h = f.height - kTop - kBottom;
  double x_lo = 0, x_hi = 0, y_lo = 0, y_hi = 0;
  bool any_x = false, any_y = false;
  for (const Series& s : f.series) {
    for (size_t i = 0; i < s.y.size(); ++i) {
      if (!std::isfinite(s.y[i])) continue;
      if (!any_y || s.y[i] < y_lo) y_lo = s.y[i];
      if (!any_y || s.y[i] > y_hi) y_hi = s.y[i];
      any_y = true;
      if (s.style == Series::Style::kHorizontalLine || i >= s.x.size() || !std::isfinite(s.x[i])) {
        continue;
      }
      if (!any_x || s.x[i] < x_lo) x_lo = s.x[i];
      if (!any_x || s.x[i] > x_hi) x_hi = s.x[i];
      any_x = true;
    }
  }
  if (f.y_from_zero) {
    y_lo = std::min(y_lo, 0.0);
    y_hi = std::max(y_hi, 0.0);
  }
  if (!any_x) x_hi = 1;
  const std::vector<double> x_ticks = Ticks(x_lo, x_hi, 8);
  const std::vector<double> y_ticks = Ticks(y_lo, y_hi, 6);
  auto px = [&](double x) { return kLeft + (x - x_lo) / (x_hi - x_lo) * plot_w; };
  auto py = [&](double y) { return kTop + (y_hi - y) / (y_hi - y_lo) * plot_h; };

  std::string svg = absl::StrFormat(
      "<rect width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n"
      "<text x=\"%.1f\" y=\"28\" text-anchor=\"middle\" font-size=\"16\">%s</text>\n",
      f.width, f.height, f.width / 2, EscapeXml(f.title));
  for (double t : x_ticks) {
    absl::StrAppend(
        &svg, Line(px(t), kTop, px(t), kTop + plot_h, "#e5e5e5"),
        absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n", px(t),
                        kTop + plot_h + 18, t));
  }
  for (double t : y_ticks) {
    const std::string label =
        f.y_percent ? absl::StrFormat("%g%%", t * 100) : absl::StrFormat("%g", t);
    absl::StrAppend(&svg, Line(kLeft, py(t), kLeft + plot_w, py(t), "#e5e5e5"),
                    absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                                    kLeft - 6, py(t) + 4, label));
  }
  absl::StrAppend(&svg, Line(kLeft, kTop + plot_h, kLeft + plot_w, kTop + plot_h, "black"),
                  Line(kLeft, kTop, kLeft, kTop + plot_h, "black"));
  if (y_lo < 0 && y_hi > 0)
    absl::StrAppend(&svg, Line(kLeft, py(0), kLeft + plot_w, py(0), "#888"));
  absl::StrAppend(&svg,
                  absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                                  kLeft + plot_w / 2, f.height - 15, EscapeXml(f.x_label)),
                  absl::StrFormat("<text x=\"18\" y=\"%.1f\" text-anchor=\"middle\" "
                                  "transform=\"rotate(-90 18 %.1f)\">%s</text>\n",
                                  kTop + plot_h / 2, kTop + plot_h / 2, EscapeXml(f.y_label)));

  size_t next_color = 0;
  double legend_y = kTop + 14;
  for (const Series& s : f.series) {
    const std::string color =
        s.color.empty() ? kPalette[next_color++ % std::size(kPalette)] : s.color;
    std::string points, dots;
    double last_y = NAN;
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      const double x = px(s.x[i]), y = py(s.y[i]);
      if (s.style == Series::Style::kSteps && std::isfinite(last_y)) {
        absl::StrAppend(&points, absl::StrFormat("%.1f,%.1f ", x, last_y));
      }
      absl::StrAppend(&points, absl::StrFormat("%.1f,%.1f ", x, y));
      if (s.style == Series::Style::kDashedPoints) {
        absl::StrAppend(&dots, absl::StrFormat("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" "
                                               "fill=\"%s\"/>\n",
                                               x, y, color));
      }
      last_y = y;
    }
    std::string key;  // the legend's sample of the style
    if (s.style == Series::Style::kHorizontalLine) {
      if (s.y.empty() || !std::isfinite(s.y[0])) continue;
      absl::StrAppend(&svg, Line(kLeft, py(s.y[0]), kLeft + plot_w, py(s.y[0]), color,
                                 " stroke-width=\"1.5\" stroke-dasharray=\"6 4\""));
      key = " stroke-dasharray=\"6 4\"";
    } else if (!points.empty()) {
      points.pop_back();
      const std::string dash =
          s.style == Series::Style::kDashedPoints ? " stroke-dasharray=\"4 3\"" : "";
      absl::StrAppend(
          &svg,
          absl::StrFormat("<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s "
                          "points=\"%s\"/>\n",
                          color, dash, points),
          dots);
      key = dash;
    }
    absl::StrAppend(
        &svg, Line(kLeft + 12, legend_y, kLeft + 36, legend_y, color, " stroke-width=\"2\"" + key),
        absl::StrFormat("<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", kLeft + 42, legend_y + 4,
                        EscapeXml(s.label)));
    legend_y += 18;
  }
  return svg;
}

std::string Header(double width, double height) {
  return absl::StrFormat(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
      "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"12\">\n",
      width, height, width, height);
}

}  // namespace

std::string Svg(const Figure& figure) {
  return absl::StrCat(Header(figure.width, figure.height), Body(figure), "</svg>\n");
}

std::string SvgStack(const std::vector<Figure>& figures) {
  double width = 0, height = 0;
  for (const Figure& f : figures) {
    width = std::max(width, f.width);
    height += f.height;
  }
  std::string svg = Header(width, height);
  double y = 0;
  for (const Figure& f : figures) {
    absl::StrAppend(&svg, absl::StrFormat("<g transform=\"translate(0 %.0f)\">\n", y), Body(f),
                    "</g>\n");
    y += f.height;
  }
  absl::StrAppend(&svg, "</svg>\n");
  return svg;
}

}  // namespace mltune::plot
