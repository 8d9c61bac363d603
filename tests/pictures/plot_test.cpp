// Charts: the bar chart is written at the asked size, is not blank, and its bars are as tall
// as their values say; stacked line charts stack; unwritable paths are RuntimeErrors. Layouts:
// ticks are nice and distinct, every series, marker and bar is drawn inside the plot area and
// seen in the PNG (even a line under an identical one, even a bar for a tiny value), legends
// stay off the data.
#include <catch2/catch.hpp>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cmath>
#include <filesystem>
#include <set>

#include "ltfit/pictures/plot.h"
#include "ltfit/util/error.h"
#include "support/chart_pixels.h"
#include "support/test_support.h"

namespace {

// Heights (pixels) of the runs of adjacent columns holding pixels of `bgr`, left to right,
// ignoring runs no taller than `min_height` (legend swatches, at most 2 x 12 px).
std::vector<int> bar_heights(const cv::Mat& img, const cv::Vec3b& bgr, int min_height) {
  std::vector<int> heights;
  int run_height = 0;
  for (int x = 0; x <= img.cols; ++x) {
    int count = 0;
    for (int y = 0; x < img.cols && y < img.rows; ++y) count += img.at<cv::Vec3b>(y, x) == bgr;
    if (count > 0) {
      run_height = std::max(run_height, count);
    } else if (run_height > 0) {
      if (run_height > min_height) heights.push_back(run_height);
      run_height = 0;
    }
  }
  return heights;
}

using ltfit::testing::count_color;
using ltfit::testing::tick_labels;
using Labels = std::vector<std::string>;

}  // namespace

TEST_CASE("bar charts: size, content, and bar heights follow the values", "[experiment]") {
  ltfit::testing::TempDir dir;
  const std::string path = (dir.path() / "bars.png").string();
  ltfit::BarSeries series{"minutes", {1.0, 3.0, 2.0}, {}, {}};
  ltfit::BarSeries other{
      "other", {std::nullopt, 0.5, std::nullopt}, {true, true, false}, {"crashed", "", "—"}};
  ltfit::BarChartOptions options;
  options.title = std::string("bars");  // (assigning a literal trips GCC 12's -Wstringop-overflow)
  options.width = 700;
  options.height = 400;
  ltfit::write_bar_chart(path, {"a, b", "c", "d"}, {series, other}, options);
  REQUIRE_FALSE(std::filesystem::exists(path + ".tmp.png"));
  const cv::Mat img = cv::imread(path, cv::IMREAD_COLOR);
  REQUIRE_FALSE(img.empty());
  CHECK(img.cols == 700);
  CHECK(img.rows == 400);
  cv::Mat grey;
  cv::cvtColor(img, grey, cv::COLOR_BGR2GRAY);
  CHECK(cv::countNonZero(grey < 250) > 2000);  // not blank

  const auto heights = bar_heights(img, cv::Vec3b(180, 119, 31), /*min_height=*/30);
  REQUIRE(heights.size() == 3);
  CHECK(heights[0] < heights[2]);
  CHECK(heights[2] < heights[1]);
  CHECK(heights[1] == Approx(3.0 * heights[0]).margin(3));
  CHECK(heights[2] == Approx(2.0 * heights[0]).margin(3));

  CHECK_THROWS_AS(ltfit::write_bar_chart(path, {}, {series}, options), ltfit::RuntimeError);
  CHECK_THROWS_AS(ltfit::write_bar_chart((dir.path() / "no" / "such" / "dir.png").string(), {"a"},
                                         {series}, options),
                  ltfit::RuntimeError);
}

TEST_CASE("stacked line charts are one image of all panels", "[experiment]") {
  ltfit::testing::TempDir dir;
  const std::string path = (dir.path() / "lines.png").string();
  ltfit::LineChart a{{0, 1, 2}, {{"loss", {1.0, 0.5, NAN}}}, {}};
  a.options.width = 500;
  a.options.height = 300;
  ltfit::LineChart b = a;
  b.options.height = 200;
  ltfit::write_line_charts(path, {a, b});
  const cv::Mat img = cv::imread(path, cv::IMREAD_COLOR);
  REQUIRE_FALSE(img.empty());
  CHECK(img.cols == 500);
  CHECK(img.rows == 500);
}

TEST_CASE(
    "line charts: whole-number step ticks, a legend beside the data, identical lines all seen",
    "[plot]") {
  ltfit::testing::TempDir dir;
  std::vector<double> x, y;
  for (int i = 0; i < 18; ++i) x.push_back(i), y.push_back(1.0 + 0.1 * std::sin(i));
  std::vector<double> shorter = y;
  shorter.resize(8);
  shorter.resize(18, NAN);  // a shorter run: a gap to the end
  const std::vector<ltfit::LineSeries> series = {
      {"run a", y}, {"run b, identical", y}, {"run c, identical too", y}, {"run d", shorter}};
  ltfit::ChartOptions options;
  options.integer_x = true;
  options.width = 900;
  options.height = 400;
  const ltfit::ChartLayout layout = ltfit::line_chart_layout(x, series, options);
  CHECK(tick_labels(layout.x_ticks) == Labels{"0", "5", "10", "15", "20"});
  CHECK(tick_labels(layout.y_ticks) == Labels{"0.9", "0.95", "1", "1.05", "1.1"});
  CHECK_FALSE(layout.legend.empty());
  CHECK_FALSE(layout.legend.overlaps(layout.plot));
  CHECK(layout.legend.x1 <= layout.width);
  for (const auto& t : layout.x_ticks)
    CHECK((t.pixel >= layout.plot.x0 && t.pixel <= layout.plot.x1));
  REQUIRE(layout.marks.size() == 4);

  const std::string path = (dir.path() / "lines.png").string();
  ltfit::write_line_chart(path, x, series, options);
  const cv::Mat img = cv::imread(path, cv::IMREAD_COLOR);
  REQUIRE(img.cols == layout.width);
  for (const auto& mark : layout.marks) {
    INFO(mark.label);
    CHECK(mark.kind == ltfit::ChartMark::Kind::kLine);
    CHECK(layout.plot.contains(mark.extent));
    CHECK(mark.extent.width() > 10);
    CHECK(count_color(img, mark.color, mark.extent) > 40);    // seen, though drawn over each other
    CHECK(count_color(img, mark.color, layout.legend) > 10);  // and named in the legend
  }
  std::set<ltfit::Bgr> colors;
  for (const auto& mark : layout.marks) colors.insert(mark.color);
  CHECK(colors.size() == 4);
}

TEST_CASE("line charts: log x ticks at decades, markers in their own colours and named", "[plot]") {
  ltfit::testing::TempDir dir;
  std::vector<double> x, y;
  for (int i = 0; i <= 80; ++i) {
    x.push_back(1e-6 * std::pow(10.0, i / 20.0));  // 1e-6 .. 1e-2
    y.push_back(2.0 - std::exp(-std::pow(i - 50, 2) / 200.0));
  }
  ltfit::ChartOptions options;
  options.log_x = true;
  options.markers = {
      {"valley: 0.000316", 3.16e-4}, {"steepest: 0.000316", 3.16e-4}, {"outside: 5", 5.0}};
  const ltfit::ChartLayout layout = ltfit::line_chart_layout(x, {{"smoothed loss", y}}, options);
  CHECK(tick_labels(layout.x_ticks) == Labels{"1e-6", "1e-5", "1e-4", "0.001", "0.01"});
  CHECK_FALSE(layout.legend.overlaps(layout.plot));
  REQUIRE(layout.marks.size() == 3);  // the line and the two markers in range
  const std::string path = (dir.path() / "lr.png").string();
  ltfit::write_line_chart(path, x, {{"smoothed loss", y}}, options);
  const cv::Mat img = cv::imread(path, cv::IMREAD_COLOR);
  for (std::size_t m = 1; m < 3; ++m) {
    const auto& mark = layout.marks[m];
    INFO(mark.label);
    CHECK(mark.kind == ltfit::ChartMark::Kind::kMarker);
    CHECK(mark.color != layout.marks[0].color);
    CHECK(layout.plot.contains(mark.extent));
    CHECK(std::abs((mark.extent.x0 + mark.extent.x1) / 2 - layout.x_pixel(3.16e-4)) <= 1);
    CHECK(count_color(img, mark.color, mark.extent) > 50);  // both seen, though at one x
    CHECK(count_color(img, mark.color, layout.legend) > 10);
  }
  CHECK(layout.marks[1].color != layout.marks[2].color);
}

TEST_CASE("bar charts: a tiny value is still a visible bar, labelled above 0, ticks are nice",
          "[plot]") {
  ltfit::testing::TempDir dir;
  ltfit::BarSeries ours{"ours", {0.001, 0.04, 19.9}, {false, true, false}, {}};
  ltfit::BarSeries theirs{"theirs", {11.3, std::nullopt, 12.8}, {}, {"", "crashed", ""}};
  ltfit::BarChartOptions options;
  const std::vector<std::string> groups = {"a", "b", "c"};
  const ltfit::ChartLayout layout = ltfit::bar_chart_layout(groups, {ours, theirs}, options);
  CHECK(tick_labels(layout.y_ticks) == Labels{"0", "5", "10", "15", "20", "25"});
  CHECK_FALSE(layout.legend.overlaps(layout.plot));
  REQUIRE(layout.marks.size() == 5);
  const std::string path = (dir.path() / "bars.png").string();
  ltfit::write_bar_chart(path, groups, {ours, theirs}, options);
  const cv::Mat img = cv::imread(path, cv::IMREAD_COLOR);
  REQUIRE(img.cols == layout.width);
  for (const auto& bar : layout.marks) {
    INFO(bar.label << " in group " << bar.group << ": " << bar.value_label);
    CHECK(bar.extent.height() >= 4);
    CHECK(bar.extent.width() >= 10);
    CHECK(layout.plot.contains(bar.extent));
    CHECK(bar.value_label.find_first_not_of("0.") != std::string::npos);  // never "0.0"
    // The bar's own pixels (a hatched bar: its outline) are in the image.
    CHECK(count_color(img, bar.color, bar.extent) >= bar.extent.width());
  }
  CHECK(layout.marks[0].value_label == "0.001");  // marks go group by group
  CHECK(layout.marks[1].value_label == "11.3");
  CHECK(layout.marks[2].value_label == "0.04");
  CHECK(layout.marks[2].hatched);
  CHECK(layout.marks[3].value_label == "19.9");

  options.value_text = [](double v) { return std::to_string(std::lround(v * 60)) + " s"; };
  CHECK(ltfit::bar_chart_layout(groups, {ours, theirs}, options).marks[3].value_label == "1194 s");
}
