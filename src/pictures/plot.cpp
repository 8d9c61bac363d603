// Line and bar charts drawn with OpenCV from their layouts (plot.h, plot_layout.cpp).
#include "ltfit/pictures/plot.h"

#include <algorithm>
#include <cmath>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "ltfit/util/atomic_file.h"
#include "ltfit/util/error.h"
#include "pictures/plot_internal.h"

namespace ltfit {

using namespace plot_internal;

namespace {

void put_text(cv::Mat& img, const std::string& text, cv::Point at, double scale,
              const cv::Scalar& color) {
  cv::putText(img, ascii(text), at, kFont, scale, color, 1, cv::LINE_AA);
}

// Text on a white box, readable over bars.
void put_boxed_text(cv::Mat& img, const std::string& text, cv::Point at, double scale,
                    const cv::Scalar& color) {
  int baseline = 0;
  const cv::Size size = cv::getTextSize(ascii(text), kFont, scale, 1, &baseline);
  cv::rectangle(img, {at.x - 1, at.y - size.height - 2}, {at.x + size.width + 1, at.y + 2}, kWhite,
                cv::FILLED);
  put_text(img, text, at, scale, color);
}

void write_png(const std::string& path, const cv::Mat& img) {
  std::vector<uchar> png;
  if (!cv::imencode(".png", img, png)) throw RuntimeError("cannot encode chart '" + path + "'");
  write_file_atomic(path, {reinterpret_cast<const char*>(png.data()), png.size()});
}

// The frame, grid lines at the y ticks, the tick labels, the title and the axis labels.
void draw_axes(cv::Mat& img, const ChartLayout& l, const std::string& title,
               const std::string& x_label, const std::string& y_label) {
  for (const auto& t : l.y_ticks) {
    cv::line(img, {l.plot.x0, t.pixel}, {l.plot.x1, t.pixel}, kGrey, 1);
    const int w = text_width(t.label, kTickScale);
    put_text(img, t.label, {l.plot.x0 - 8 - w, t.pixel + 4}, kTickScale, kBlack);
  }
  for (const auto& t : l.x_ticks) {
    cv::line(img, {t.pixel, l.plot.y1}, {t.pixel, l.plot.y1 + 5}, kBlack, 1);
    const int w = text_width(t.label, kTickScale);
    put_text(img, t.label, {t.pixel - w / 2, l.plot.y1 + 20}, kTickScale, kBlack);
  }
  const int title_x = std::max(l.plot.x0, 5 + text_width(y_label, 0.5) + 15);  // clear of it
  put_text(img, title, {title_x, 25}, 0.6, kBlack);
  const int x_label_w = text_width(x_label, 0.5);
  put_text(img, x_label, {(l.plot.x0 + l.plot.x1 - x_label_w) / 2, img.rows - 14}, 0.5, kBlack);
  put_text(img, y_label, {5, kMarginTop - 10}, 0.5, kBlack);
}

// The parts of the polyline `points` whose arc length falls in dash slot `slot` of `slots`
// (every part when slots == 1), `thickness` pixels wide.
void draw_slots(cv::Mat& img, const std::vector<cv::Point>& points, const cv::Scalar& color,
                int thickness, std::size_t slot, std::size_t slots) {
  double arc = 0.0;
  for (std::size_t i = 1; i < points.size(); ++i) {
    const cv::Point2d a = points[i - 1], b = points[i];
    const double length = cv::norm(b - a);
    for (double pos = 0.0; pos < length;) {
      const double at = arc + pos;
      const double next = std::min(length, (std::floor(at / kDashPixels) + 1) * kDashPixels - arc);
      if (static_cast<std::size_t>(at / kDashPixels) % slots == slot) {
        const cv::Point2d p = a + (b - a) * (pos / length), q = a + (b - a) * (next / length);
        cv::line(img, p, q, color, thickness, cv::LINE_AA);
      }
      pos = std::max(next, pos + 1e-6);
    }
    arc += length;
  }
}

// A series' pixels, split at gaps (non-finite values).
std::vector<std::vector<cv::Point>> polylines(const ChartLayout& l, const std::vector<double>& x,
                                              const std::vector<double>& y) {
  std::vector<std::vector<cv::Point>> parts(1);
  for (std::size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
    if (!std::isfinite(y[i]) || !std::isfinite(x[i])) {
      if (!parts.back().empty()) parts.emplace_back();
      continue;
    }
    parts.back().push_back({l.x_pixel(x[i]), l.y_pixel(y[i])});
  }
  return parts;
}

// Where the first series is at column `px` (linear between its points), if it is there.
std::optional<int> series_row_at(const std::vector<cv::Point>& points, int px) {
  for (std::size_t i = 1; i < points.size(); ++i) {
    const cv::Point a = points[i - 1], b = points[i];
    if (px < std::min(a.x, b.x) || px > std::max(a.x, b.x)) continue;
    if (a.x == b.x) return a.y;
    return a.y + (b.y - a.y) * (px - a.x) / (b.x - a.x);
  }
  return std::nullopt;
}

void draw_marker_shape(cv::Mat& img, cv::Point at, std::size_t m, const cv::Scalar& color) {
  if (m % 2 == 0) {
    cv::circle(img, at, 5, color, cv::FILLED, cv::LINE_AA);
  } else {
    cv::rectangle(img, {at.x - 4, at.y - 4}, {at.x + 4, at.y + 4}, color, cv::FILLED);
  }
}

// A marker's vertical line: solid for even markers, dashed for odd ones.
void draw_marker_line(cv::Mat& img, int x, int y0, int y1, std::size_t m, const cv::Scalar& color) {
  if (m % 2 == 0) {
    cv::line(img, {x, y0}, {x, y1}, color, 2);
    return;
  }
  for (int y = y0; y < y1; y += 12) cv::line(img, {x, y}, {x, std::min(y1, y + 7)}, color, 2);
}

void draw_legend_box(cv::Mat& img, const PixelBox& box) {
  cv::rectangle(img, {box.x0, box.y0}, {box.x1 - 1, box.y1 - 1}, {170, 170, 170}, 1);
}

cv::Mat draw_line_chart(const std::vector<double>& x, const std::vector<LineSeries>& series,
                        const ChartOptions& o) {
  const ChartLayout l = line_chart_layout(x, series, o);
  cv::Mat img(l.height, l.width, CV_8UC3, kWhite);
  draw_axes(img, l, o.title, o.x_label, o.y_label);
  std::vector<std::vector<std::vector<cv::Point>>> lines;
  for (const auto& s : series) lines.push_back(polylines(l, x, s.y));
  for (std::size_t s = 0; s < series.size(); ++s)  // thin and whole first, then the dashes
    for (const auto& part : lines[s])
      cv::polylines(img, part, false, scalar(color_of(s)), 1, cv::LINE_AA);
  for (std::size_t s = 0; s < series.size(); ++s)
    for (const auto& part : lines[s])
      draw_slots(img, part, scalar(color_of(s)), 3, s, series.size());
  for (const auto& mark : l.marks) {
    if (mark.kind != ChartMark::Kind::kMarker) continue;
    const int px = (mark.extent.x0 + mark.extent.x1) / 2;
    draw_marker_line(img, px, mark.extent.y0, mark.extent.y1, mark.index, scalar(mark.color));
    if (lines.empty()) continue;
    for (const auto& part : lines[0])
      if (const auto row = series_row_at(part, px))
        draw_marker_shape(img, {px, *row}, mark.index, scalar(mark.color));
  }
  cv::rectangle(img, {l.plot.x0, l.plot.y0}, {l.plot.x1, l.plot.y1}, kBlack, 1);
  if (l.legend.empty()) return img;
  draw_legend_box(img, l.legend);
  int y = l.legend.y0 + 4 + kLegendRow / 2;
  const int x0 = l.legend.x0 + 6;
  for (std::size_t s = 0; s < series.size(); ++s, y += kLegendRow) {
    cv::line(img, {x0, y}, {x0 + 22, y}, scalar(color_of(s)), 3, cv::LINE_AA);
    put_text(img, series[s].label, {x0 + kLegendSwatch - 6, y + 5}, kLegendScale, kBlack);
  }
  for (std::size_t m = 0; m < o.markers.size(); ++m, y += kLegendRow) {
    const cv::Scalar color = scalar(color_of(series.size() + m));
    cv::line(img, {x0, y}, {x0 + 22, y}, color, 2);
    draw_marker_shape(img, {x0 + 11, y}, m, color);
    put_text(img, o.markers[m].label, {x0 + kLegendSwatch - 6, y + 5}, kLegendScale, kBlack);
  }
  return img;
}

// ---- bar chart --------------------------------------------------------------------------------

cv::Scalar lighter(const cv::Scalar& color) {
  return {(color[0] + 255) / 2, (color[1] + 255) / 2, (color[2] + 255) / 2};
}

// A bar; hatched: lighter fill with diagonal lines of `color`.
void draw_bar(cv::Mat& img, cv::Rect bar, const cv::Scalar& color, bool hatched) {
  if (!hatched) {
    cv::rectangle(img, bar, color, cv::FILLED);
    return;
  }
  cv::rectangle(img, bar, lighter(color), cv::FILLED);
  cv::Mat roi = img(bar);
  for (int d = -bar.height; d < bar.width; d += 8) {
    cv::line(roi, {d, bar.height}, {d + bar.height, 0}, color, 1, cv::LINE_AA);
  }
  cv::rectangle(img, bar, color, 1);
}

std::vector<std::string> wrap_label(const std::string& label, int max_chars) {
  std::vector<std::string> lines;
  std::string line;
  std::size_t start = 0;
  while (start <= label.size()) {
    std::size_t comma = label.find(", ", start);
    const std::string part =
        label.substr(start, comma == std::string::npos ? comma : comma + 1 - start);
    if (!line.empty() && static_cast<int>(line.size() + 1 + part.size()) > max_chars) {
      lines.push_back(line);
      line.clear();
    }
    line += (line.empty() ? "" : " ") + part;
    if (comma == std::string::npos) break;
    start = comma + 2;
  }
  if (!line.empty()) lines.push_back(line);
  return lines;
}

void draw_bar_legend(cv::Mat& img, const ChartLayout& l, const std::vector<BarSeries>& series,
                     const std::string& hatched) {
  draw_legend_box(img, l.legend);
  int y = l.legend.y0 + 8;
  const int x = l.legend.x0 + 6;
  auto entry = [&](const std::string& text, const cv::Scalar& color, bool hatch) {
    draw_bar(img, {x, y, 14, 12}, color, hatch);
    put_text(img, text, {x + kLegendSwatch - 6, y + 11}, kLegendScale, kBlack);
    y += kLegendRow;
  };
  for (std::size_t s = 0; s < series.size(); ++s)
    entry(series[s].label, scalar(color_of(s)), false);
  const bool any_hatched =
      std::any_of(l.marks.begin(), l.marks.end(), [](const ChartMark& m) { return m.hatched; });
  if (any_hatched) entry(hatched, scalar(color_of(0)), true);
}

// Notes where a bar is missing ("n/a", "crashed"), each in its series' colour.
void draw_bar_notes(cv::Mat& img, const ChartLayout& l, const std::vector<BarSeries>& series) {
  for (std::size_t g = 0; g < l.group_x.size(); ++g) {
    for (std::size_t s = 0; s < series.size(); ++s) {
      const auto& values = series[s].values;
      const bool has_bar = g < values.size() && values[g].has_value() && std::isfinite(*values[g]);
      const std::string note = g < series[s].notes.size() ? series[s].notes[g] : "";
      if (has_bar || note.empty()) continue;
      const int x = l.group_x[g] + l.bar_width * static_cast<int>(s);
      put_boxed_text(img, note, {x, l.plot.y1 - 6 - 14 * static_cast<int>(s)}, kValueScale,
                     scalar(color_of(s)));
    }
  }
}

}  // namespace

void write_line_chart(const std::string& path, const std::vector<double>& x,
                      const std::vector<LineSeries>& series, const ChartOptions& o) {
  write_png(path, draw_line_chart(x, series, o));
}

void write_line_charts(const std::string& path, const std::vector<LineChart>& charts) {
  if (charts.empty()) throw RuntimeError("chart '" + path + "': nothing to draw");
  std::vector<cv::Mat> panels;
  int width = 0;
  for (const auto& c : charts) {
    panels.push_back(draw_line_chart(c.x, c.series, c.options));
    width = std::max(width, panels.back().cols);
  }
  for (auto& p : panels) {
    cv::copyMakeBorder(p, p, 0, 0, 0, width - p.cols, cv::BORDER_CONSTANT, kWhite);
  }
  cv::Mat img;
  cv::vconcat(panels, img);
  write_png(path, img);
}

void write_bar_chart(const std::string& path, const std::vector<std::string>& groups,
                     const std::vector<BarSeries>& series, const BarChartOptions& o) {
  if (groups.empty() || series.empty()) throw RuntimeError("chart '" + path + "': no bars");
  const ChartLayout l = bar_chart_layout(groups, series, o);
  cv::Mat img(l.height, l.width, CV_8UC3, kWhite);
  draw_axes(img, l, o.title, o.x_label, o.y_label);
  for (const auto& bar : l.marks) {
    const PixelBox& b = bar.extent;
    draw_bar(img, {b.x0, b.y0, b.width(), b.height()}, scalar(bar.color), bar.hatched);
    const int w = text_width(bar.value_label, kValueScale);
    cv::putText(img, bar.value_label, {(b.x0 + b.x1 - w) / 2, b.y0 - 4}, kFont, kValueScale, kBlack,
                1, cv::LINE_AA);
  }
  const int group_w = l.plot.width() / static_cast<int>(groups.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const auto lines = wrap_label(groups[g], std::max(6, group_w / 8));
    for (std::size_t i = 0; i < lines.size(); ++i) {
      put_text(img, lines[i], {l.group_x[g], l.plot.y1 + 16 + 15 * static_cast<int>(i)}, kTickScale,
               kBlack);
    }
  }
  draw_bar_notes(img, l, series);
  cv::line(img, {l.plot.x0, l.plot.y0}, {l.plot.x0, l.plot.y1}, kBlack, 1);
  cv::line(img, {l.plot.x0, l.plot.y1}, {l.plot.x1, l.plot.y1}, kBlack, 1);
  draw_bar_legend(img, l, series, o.hatched_label);
  write_png(path, img);
}

}  // namespace ltfit
