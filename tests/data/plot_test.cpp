// Charts: the bar chart is written at the asked size, is not blank, and its bars are as tall
// as their values say; stacked line charts stack; unwritable paths are RuntimeErrors.
#include <catch2/catch.hpp>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <filesystem>

#include "ltfit/data/plot.h"
#include "ltfit/util/error.h"
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

}  // namespace

TEST_CASE("bar charts: size, content, and bar heights follow the values", "[experiment]") {
  ltfit::testing::TempDir dir;
  const std::string path = (dir.path() / "bars.png").string();
  ltfit::BarSeries series{"minutes", {1.0, 3.0, 2.0}, {}, {}};
  ltfit::BarSeries other{
      "other", {std::nullopt, 0.5, std::nullopt}, {true, true, false}, {"crashed", "", "—"}};
  ltfit::BarChartOptions options;
  options.title = "t";
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
