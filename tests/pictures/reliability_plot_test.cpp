// The reliability diagram (pictures/reliability_plot.h): bars as tall as each bin's accuracy, the
// gap to its mean confidence shaded between them, counts in a panel of their own, and a decodable
// PNG of the size it states that shows them.
#include "ltfit/pictures/reliability_plot.h"

#include <catch2/catch.hpp>

#include <opencv2/imgcodecs.hpp>

#include "support/chart_pixels.h"

namespace {

std::vector<ltfit::ReliabilityBin> fifteen_bins() {
  std::vector<ltfit::ReliabilityBin> bins;
  for (int k = 0; k < 15; ++k) bins.push_back({k / 15.0, (k + 1) / 15.0});
  bins[13] = {13 / 15.0, 14 / 15.0, 40, 0.90, 0.60};  // overconfident: gap above the bar
  bins[9] = {9 / 15.0, 10 / 15.0, 5, 0.62, 0.80};     // underconfident: gap over the bar's top
  bins[14] = {14 / 15.0, 1.0, 12345, 0.99, 0.99};     // calibrated: no gap
  return bins;
}

}  // namespace

TEST_CASE("a reliability diagram lays out accuracy bars, gaps and counts", "[reliability_plot]") {
  const auto bins = fifteen_bins();
  const ltfit::ReliabilityLayout l = ltfit::reliability_layout(bins);
  REQUIRE(l.bars.size() == 15);
  CHECK(l.max_count == 12345);
  CHECK(l.bars[0].empty());
  CHECK(l.gaps[0].empty());
  CHECK(l.count_bars[0].empty());
  // Bin 13: a bar from 0 up to 0.6, the gap from 0.6 up to 0.9, inside the bin's columns.
  CHECK(l.bars[13].y1 == l.y_pixel(0.0));
  CHECK(l.bars[13].y0 == l.y_pixel(0.6));
  CHECK(l.gaps[13].y1 == l.y_pixel(0.6));
  CHECK(l.gaps[13].y0 == l.y_pixel(0.9));
  CHECK(l.bars[13].x0 > l.x_pixel(13 / 15.0));
  CHECK(l.bars[13].x1 < l.x_pixel(14 / 15.0));
  // Bin 9: the bar reaches 0.8 and the gap covers 0.62 .. 0.8 of it.
  CHECK(l.bars[9].y0 == l.y_pixel(0.8));
  CHECK(l.gaps[9].y0 == l.y_pixel(0.8));
  CHECK(l.gaps[9].y1 == l.y_pixel(0.62));
  CHECK(l.gaps[14].empty());
  // Counts: the largest fills the panel, the others in proportion; a label that fits.
  CHECK(l.count_bars[14].height() == l.counts.height());
  CHECK(l.count_bars[13].height() == 1);  // 40 of 12345, at least a pixel
  CHECK(l.count_labels[13] == "40");
  CHECK(l.plot.contains(l.bars[13]));
  CHECK(l.counts.contains(l.count_bars[14]));
  CHECK_FALSE(l.plot.overlaps(l.legend));
  CHECK_FALSE(l.plot.overlaps(l.counts));
}

TEST_CASE("a reliability diagram is a PNG that shows its bars and gaps", "[reliability_plot]") {
  const auto bins = fifteen_bins();
  ltfit::ReliabilityText text;
  text.title = "reliability: plain, 12390 images, ECE 0.0123";
  const ltfit::EncodedPng png = ltfit::encode_reliability_diagram(bins, text);
  const std::vector<uchar> bytes(png.bytes.begin(), png.bytes.end());
  const cv::Mat img = cv::imdecode(bytes, cv::IMREAD_COLOR);
  REQUIRE_FALSE(img.empty());
  CHECK((img.rows == png.height && img.cols == png.width));
  const ltfit::ReliabilityLayout l = ltfit::reliability_layout(bins);
  CHECK((img.rows == l.height && img.cols == l.width));
  // Bin 13's bar below the gap is the bar colour (the diagonal crosses it: most, not all);
  // the gap above it is not, and is outlined in red.
  const ltfit::PixelBox bar = l.bars[13];
  const int bar_pixels = ltfit::testing::count_color(img, ltfit::kReliabilityBarColor, bar);
  CHECK(bar_pixels > bar.width() * bar.height() * 8 / 10);
  const ltfit::PixelBox gap = l.gaps[13];
  const ltfit::PixelBox inside{gap.x0 + 2, gap.y0 + 2, gap.x1 - 2, gap.y1 - 2};
  CHECK(ltfit::testing::count_color(img, ltfit::kReliabilityBarColor, inside) == 0);
  CHECK(ltfit::testing::count_color(img, ltfit::kReliabilityGapColor, gap) > gap.width());
  // Bin 9 (underconfident): where the gap lies over the bar, the bar's colour still fills most
  // of it between the hatching, so the bar reads at its full height (accuracy 0.8).
  const ltfit::PixelBox over = l.gaps[9];
  const ltfit::PixelBox within{over.x0 + 2, over.y0 + 2, over.x1 - 2, over.y1 - 2};
  CHECK(ltfit::testing::count_color(img, ltfit::kReliabilityBarColor, within) >
        within.width() * within.height() / 2);
  // An empty bin draws nothing in its column.
  const ltfit::PixelBox column{l.x_pixel(1 / 15.0) + 2, l.plot.y0 + 1, l.x_pixel(2 / 15.0) - 2,
                               l.plot.y1 - 1};
  CHECK(ltfit::testing::count_color(img, ltfit::kReliabilityBarColor, column) == 0);
}
