#include "ltfit/data/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "ltfit/util/error.h"

namespace ltfit {

namespace {

constexpr int kMarginLeft = 80, kMarginRight = 20, kMarginTop = 40, kMarginBottom = 60;
const cv::Scalar kColors[] = {{180, 119, 31}, {14, 127, 255}, {44, 160, 44}, {40, 39, 214}};

struct Range {
  double lo = INFINITY, hi = -INFINITY;
  void add(double v) {
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  double span() const { return hi > lo ? hi - lo : 1.0; }
};

std::string tick_text(double v, bool log_x) {
  char text[32];
  std::snprintf(text, sizeof text, log_x ? "1e%.0f" : "%.3g", v);
  return text;
}

}  // namespace

void write_line_chart(const std::string& path, const std::vector<double>& x,
                      const std::vector<LineSeries>& series, const ChartOptions& o) {
  cv::Mat img(o.height, o.width, CV_8UC3, cv::Scalar(255, 255, 255));
  auto fx = [&](double v) { return o.log_x ? std::log10(std::max(v, 1e-300)) : v; };
  Range rx, ry;
  for (double v : x) rx.add(fx(v));
  for (const auto& s : series)
    for (double v : s.y) ry.add(v);
  const int pw = o.width - kMarginLeft - kMarginRight, ph = o.height - kMarginTop - kMarginBottom;
  auto px = [&](double v) {
    return kMarginLeft + static_cast<int>((fx(v) - rx.lo) / rx.span() * pw);
  };
  auto py = [&](double v) {
    return kMarginTop + ph - static_cast<int>((v - ry.lo) / ry.span() * ph);
  };
  cv::rectangle(img, {kMarginLeft, kMarginTop}, {kMarginLeft + pw, kMarginTop + ph}, {0, 0, 0});
  const auto font = cv::FONT_HERSHEY_SIMPLEX;
  for (int t = 0; t <= 4; ++t) {  // ticks: 5 on each axis
    const double xv = rx.lo + rx.span() * t / 4, yv = ry.lo + ry.span() * t / 4;
    const int xt = kMarginLeft + pw * t / 4, yt = kMarginTop + ph - ph * t / 4;
    cv::putText(img, tick_text(xv, o.log_x), {xt - 15, kMarginTop + ph + 18}, font, 0.4, {0, 0, 0});
    cv::putText(img, tick_text(yv, false), {5, yt + 4}, font, 0.4, {0, 0, 0});
  }
  for (std::size_t s = 0; s < series.size(); ++s) {
    const cv::Scalar color = kColors[s % 4];
    for (std::size_t i = 1; i < std::min(x.size(), series[s].y.size()); ++i) {
      if (!std::isfinite(series[s].y[i]) || !std::isfinite(series[s].y[i - 1])) continue;
      cv::line(img, {px(x[i - 1]), py(series[s].y[i - 1])}, {px(x[i]), py(series[s].y[i])}, color,
               2, cv::LINE_AA);
    }
    cv::putText(img, series[s].label,
                {kMarginLeft + 10, kMarginTop + 18 + 18 * static_cast<int>(s)}, font, 0.5, color, 1,
                cv::LINE_AA);
  }
  if (o.marker_x) {
    cv::line(img, {px(*o.marker_x), kMarginTop}, {px(*o.marker_x), kMarginTop + ph}, {0, 0, 200},
             1);
  }
  cv::putText(img, o.title, {kMarginLeft, 25}, font, 0.6, {0, 0, 0}, 1, cv::LINE_AA);
  cv::putText(img, o.x_label, {kMarginLeft + pw / 2 - 40, o.height - 15}, font, 0.5, {0, 0, 0});
  cv::putText(img, o.y_label, {5, kMarginTop - 10}, font, 0.5, {0, 0, 0});
  const std::string tmp = path + ".tmp.png";
  if (!cv::imwrite(tmp, img) || std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw RuntimeError("cannot write chart '" + path + "'");
  }
}

}  // namespace ltfit
