// The reliability diagram (reliability_plot.h): laid out, then drawn with OpenCV.
#include "ltfit/pictures/reliability_plot.h"

#include <algorithm>
#include <cmath>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "ltfit/util/error.h"
#include "pictures/plot_internal.h"

namespace ltfit {

using namespace plot_internal;

namespace {

constexpr int kPlotLeft = 70, kPlotTop = 58, kPlotSide = 600, kPlotHeight = 380;
constexpr int kCountsGap = 12, kCountsHeight = 90, kBottom = 60, kLegendWidth = 190;
constexpr int kHatchStep = 6;  // pixels between a gap's hatching lines
const cv::Scalar kInk{0, 0, 0}, kGridGrey{225, 225, 225}, kPaper{255, 255, 255};
const cv::Scalar kDiagonal{90, 90, 90};

void put_label(cv::Mat& img, const std::string& text, cv::Point at, double scale) {
  cv::putText(img, ascii(text), at, kFont, scale, kInk, 1, cv::LINE_AA);
}

cv::Rect rect_of(const PixelBox& b) { return {b.x0, b.y0, b.width(), b.height()}; }

// The box between rows of values `a` and `b` over columns [x0, x1).
PixelBox rows_box(const ReliabilityLayout& l, int x0, int x1, double a, double b) {
  return {x0, l.y_pixel(std::max(a, b)), x1, l.y_pixel(std::min(a, b))};
}

void draw_reliability_axes(cv::Mat& img, const ReliabilityLayout& l, const ReliabilityText& text) {
  for (int i = 0; i <= 5; ++i) {
    const double v = i / 5.0;
    const std::string label = i == 0 ? "0" : i == 5 ? "1" : "0." + std::to_string(2 * i);
    const int y = l.y_pixel(v), x = l.x_pixel(v);
    cv::line(img, {l.plot.x0, y}, {l.plot.x1, y}, kGridGrey, 1);
    put_label(img, label, {l.plot.x0 - 10 - text_width(label, kTickScale), y + 4}, kTickScale);
    cv::line(img, {x, l.counts.y1}, {x, l.counts.y1 + 5}, kInk, 1);
    put_label(img, label, {x - text_width(label, kTickScale) / 2, l.counts.y1 + 20}, kTickScale);
  }
  const std::string most = std::to_string(l.max_count);
  put_label(img, most, {l.counts.x0 - 10 - text_width(most, kTickScale), l.counts.y0 + 10},
            kTickScale);
  put_label(img, "0", {l.counts.x0 - 10 - text_width("0", kTickScale), l.counts.y1}, kTickScale);
  put_label(img, "count", {5, (l.counts.y0 + l.counts.y1) / 2 + 4}, kTickScale);
  put_label(img, text.title, {10, 25}, 0.55);
  put_label(img, text.y_label, {5, kPlotTop - 14}, 0.45);
  put_label(img, text.x_label,
            {(l.plot.x0 + l.plot.x1 - text_width(text.x_label, 0.5)) / 2, l.height - 14}, 0.5);
}

// A gap between accuracy and confidence: red hatching and a red outline, so that where it lies
// over a bar (an underconfident bin) the bar's colour still shows between the lines, and the
// bar reads at its full height, not as a shorter bar under a tint.
void draw_gap(cv::Mat& img, const cv::Rect& box) {
  cv::Mat area = img(box);  // lines drawn on the view are clipped to it
  for (int x = -area.rows; x < area.cols; x += kHatchStep)
    cv::line(area, {x, area.rows}, {x + area.rows, 0}, scalar(kReliabilityGapColor), 1);
  cv::rectangle(img, box, scalar(kReliabilityGapColor), 1);
}

void draw_reliability_legend(cv::Mat& img, const ReliabilityLayout& l,
                             const std::string& bar_label) {
  const int x = l.legend.x0 + 8;
  int y = l.legend.y0 + 16;
  cv::rectangle(img, cv::Rect(x, y - 10, 22, 12), scalar(kReliabilityBarColor), cv::FILLED);
  put_label(img, bar_label, {x + 30, y}, kLegendScale);
  y += kLegendRow;
  draw_gap(img, cv::Rect(x, y - 10, 22, 12));
  put_label(img, "gap to confidence", {x + 30, y}, kLegendScale);
  y += kLegendRow;
  for (int d = 0; d < 22; d += 6) cv::line(img, {x + d, y - 4}, {x + d + 3, y - 4}, kDiagonal, 1);
  put_label(img, "perfect calibration", {x + 30, y}, kLegendScale);
  cv::rectangle(img, rect_of(l.legend), kGridGrey, 1);
}

void draw_reliability_bins(cv::Mat& img, const ReliabilityLayout& l) {
  for (std::size_t k = 0; k < l.bars.size(); ++k) {
    if (!l.bars[k].empty()) {
      cv::rectangle(img, rect_of(l.bars[k]), scalar(kReliabilityBarColor), cv::FILLED);
    }
    if (!l.gaps[k].empty()) draw_gap(img, rect_of(l.gaps[k]));
    if (!l.count_bars[k].empty()) {
      cv::rectangle(img, rect_of(l.count_bars[k]), scalar(kReliabilityCountColor), cv::FILLED);
    }
    const std::string& label = l.count_labels[k];
    if (!label.empty()) {
      const PixelBox& b = l.count_bars[k];
      const int w = text_width(label, kValueScale);
      const int y = std::max(l.counts.y0 + 10, b.y0 - 3);
      put_label(img, label, {(b.x0 + b.x1 - w) / 2, y}, kValueScale);
    }
  }
  // The diagonal, dashed, over the bars.
  const int steps = 60;
  for (int i = 0; i < steps; i += 2) {
    const double a = static_cast<double>(i) / steps, b = static_cast<double>(i + 1) / steps;
    cv::line(img, {l.x_pixel(a), l.y_pixel(a)}, {l.x_pixel(b), l.y_pixel(b)}, kDiagonal, 1,
             cv::LINE_AA);
  }
  cv::rectangle(img, rect_of(l.plot), kInk, 1);
  cv::rectangle(img, rect_of(l.counts), kInk, 1);
}

}  // namespace

int ReliabilityLayout::x_pixel(double confidence) const {
  return plot.x0 + static_cast<int>(std::lround(std::clamp(confidence, 0.0, 1.0) * plot.width()));
}

int ReliabilityLayout::y_pixel(double accuracy) const {
  return plot.y1 - static_cast<int>(std::lround(std::clamp(accuracy, 0.0, 1.0) * plot.height()));
}

ReliabilityLayout reliability_layout(const std::vector<ReliabilityBin>& bins) {
  ReliabilityLayout l;
  l.plot = {kPlotLeft, kPlotTop, kPlotLeft + kPlotSide, kPlotTop + kPlotHeight};
  l.counts = {l.plot.x0, l.plot.y1 + kCountsGap, l.plot.x1, l.plot.y1 + kCountsGap + kCountsHeight};
  l.legend = {l.plot.x1 + kLegendGap, l.plot.y0, l.plot.x1 + kLegendGap + kLegendWidth,
              l.plot.y0 + 3 * kLegendRow + 10};
  l.width = l.legend.x1 + kMarginRight;
  l.height = l.counts.y1 + kBottom;
  for (const auto& b : bins) l.max_count = std::max(l.max_count, b.count);
  for (const auto& b : bins) {
    const int x0 = l.x_pixel(b.lower) + 1, x1 = l.x_pixel(b.upper) - 1;
    if (b.count <= 0) {
      l.bars.emplace_back();
      l.gaps.emplace_back();
      l.count_bars.emplace_back();
      l.count_labels.emplace_back();
      continue;
    }
    l.bars.push_back(rows_box(l, x0, x1, 0.0, b.accuracy));
    l.gaps.push_back(rows_box(l, x0, x1, b.accuracy, b.confidence));
    const double share = static_cast<double>(b.count) / static_cast<double>(l.max_count);
    const int top = l.counts.y1 - std::max(1, static_cast<int>(std::lround(share * kCountsHeight)));
    l.count_bars.push_back({x0, top, x1, l.counts.y1});
    const std::string label = std::to_string(b.count);
    l.count_labels.push_back(text_width(label, kValueScale) <= x1 - x0 + 2 ? label : "");
  }
  return l;
}

EncodedPng encode_reliability_diagram(const std::vector<ReliabilityBin>& bins,
                                      const ReliabilityText& text) {
  const ReliabilityLayout l = reliability_layout(bins);
  cv::Mat img(l.height, l.width, CV_8UC3, kPaper);
  draw_reliability_axes(img, l, text);
  draw_reliability_bins(img, l);
  draw_reliability_legend(img, l, text.bar_label);
  std::vector<uchar> png;
  if (!cv::imencode(".png", img, png)) throw RuntimeError("cannot encode a reliability diagram");
  return {std::string(png.begin(), png.end()), img.rows, img.cols};
}

}  // namespace ltfit
