// plot::Svg and SvgStack: well-formed documents, every series drawn in its style, the axes
// covering the data, escaped text, and no points for non-finite values.
#include "plot/line_plot.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace mltune::plot {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

Figure BestSoFar() {
  Figure f;
  f.title = "tile on cpu <beam> & co";
  f.x_label = "search step";
  f.y_label = "measured seconds";
  Series best("best so far", Series::Style::kSteps);
  best.x = {1, 5, 20, 300};
  best.y = {0.62, 0.59, 0.56, 0.56};
  Series baseline("compiler's default", Series::Style::kHorizontalLine, "#e6550d");
  baseline.y = {0.62};
  f.series = {best, baseline};
  return f;
}

TEST(LinePlotTest, ADocumentWithEachSeriesInItsStyleAndEscapedText) {
  const std::string svg = Svg(BestSoFar());
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_THAT(svg, HasSubstr("</svg>\n"));
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '<'), std::count(svg.begin(), svg.end(), '>'));
  EXPECT_THAT(svg, HasSubstr("tile on cpu &lt;beam&gt; &amp; co"));
  EXPECT_THAT(svg, Not(HasSubstr("<beam>")));
  // Steps: each new best after a horizontal run, so 4 points become 7 vertices.
  const size_t start = svg.find("<polyline");
  ASSERT_NE(start, std::string::npos);
  const size_t points = svg.find("points=\"", start) + 8;
  const std::string vertices = svg.substr(points, svg.find('"', points) - points);
  EXPECT_EQ(Count(vertices, ","), 7u) << vertices;
  // The reference line is dashed, in its color, with a legend entry for both series.
  EXPECT_THAT(svg, HasSubstr("stroke=\"#e6550d\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\""));
  EXPECT_THAT(svg, HasSubstr(">best so far</text>"));
  EXPECT_THAT(svg, HasSubstr(">compiler's default</text>"));
}

TEST(LinePlotTest, TheAxesCoverTheDataAndPercentLabels) {
  Figure f;
  f.y_percent = true;
  f.y_from_zero = true;
  Series s("return", Series::Style::kLine);
  s.x = {0, 50, 100};
  s.y = {0.1, 0.35, 0.4};
  f.series = {s};
  const std::string svg = Svg(f);
  EXPECT_THAT(svg, HasSubstr(">0%</text>"));
  EXPECT_THAT(svg, HasSubstr(">40%</text>"));
  EXPECT_THAT(svg, HasSubstr(">100</text>"));  // an x tick at the last episode
}

TEST(LinePlotTest, NonFinitePointsAreSkippedAndAnEmptyFigureStillDraws) {
  Figure f;
  Series s("with gaps", Series::Style::kDashedPoints);
  s.x = {1, 2, 3};
  s.y = {1.0, NAN, INFINITY};
  f.series = {s};
  const std::string svg = Svg(f);
  EXPECT_EQ(Count(svg, "<circle"), 1u);
  EXPECT_THAT(svg, Not(HasSubstr("nan")));
  EXPECT_THAT(svg, Not(HasSubstr("inf")));
  const std::string empty = Svg(Figure{});
  EXPECT_THAT(empty, HasSubstr("</svg>"));
}

TEST(LinePlotTest, AStackPutsEachFigureBelowTheLast) {
  const std::string svg = SvgStack({BestSoFar(), BestSoFar()});
  EXPECT_THAT(svg, HasSubstr("height=\"960\""));
  EXPECT_THAT(svg, HasSubstr("<g transform=\"translate(0 480)\">"));
  EXPECT_EQ(Count(svg, "<svg"), 1u);
}

}  // namespace
}  // namespace mltune::plot
