// Line and bar charts drawn with OpenCV (plot.h).
#include "ltfit/data/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "ltfit/util/atomic_file.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

constexpr int kMarginLeft = 80, kMarginRight = 20, kMarginTop = 40, kMarginBottom = 60;
const cv::Scalar kColors[] = {{180, 119, 31},  {14, 127, 255}, {44, 160, 44},   {40, 39, 214},
                              {189, 103, 148}, {75, 86, 140},  {194, 119, 227}, {34, 189, 188}};
constexpr int kColorCount = 8;
const cv::Scalar kBlack{0, 0, 0}, kGrey{200, 200, 200};
const auto kFont = cv::FONT_HERSHEY_SIMPLEX;

struct Range {
  double lo = INFINITY, hi = -INFINITY;
  void add(double v) {
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  double span() const { return hi > lo ? hi - lo : 1.0; }
};

std::string number_text(double v, const char* format) {
  char text[32];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

// Hershey fonts draw ASCII only: each other UTF-8 character ("—", "×") becomes '-'.
std::string ascii(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out += text[i];
    } else if ((c & 0xC0) == 0xC0) {
      out += '-';
    }  // continuation bytes are dropped
  }
  return out;
}

void put_text(cv::Mat& img, const std::string& text, cv::Point at, double scale,
              const cv::Scalar& color) {
  cv::putText(img, ascii(text), at, kFont, scale, color, 1, cv::LINE_AA);
}

// Text on a white box, readable over bars.
void put_boxed_text(cv::Mat& img, const std::string& text, cv::Point at, double scale,
                    const cv::Scalar& color) {
  int baseline = 0;
  const cv::Size size = cv::getTextSize(ascii(text), kFont, scale, 1, &baseline);
  cv::rectangle(img, {at.x - 1, at.y - size.height - 2}, {at.x + size.width + 1, at.y + 2},
                {255, 255, 255}, cv::FILLED);
  put_text(img, text, at, scale, color);
}

void write_png(const std::string& path, const cv::Mat& img) {
  std::vector<uchar> png;
  if (!cv::imencode(".png", img, png)) throw RuntimeError("cannot encode chart '" + path + "'");
  write_file_atomic(path, {reinterpret_cast<const char*>(png.data()), png.size()});
}

void draw_titles(cv::Mat& img, const std::string& title, const std::string& x_label,
                 const std::string& y_label, int x_label_x) {
  put_text(img, title, {kMarginLeft, 25}, 0.6, kBlack);
  put_text(img, x_label, {x_label_x, img.rows - 12}, 0.5, kBlack);
  put_text(img, y_label, {5, kMarginTop - 8}, 0.5, kBlack);
}

cv::Mat draw_line_chart(const std::vector<double>& x, const std::vector<LineSeries>& series,
                        const ChartOptions& o) {
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
  cv::rectangle(img, {kMarginLeft, kMarginTop}, {kMarginLeft + pw, kMarginTop + ph}, kBlack);
  for (int t = 0; t <= 4; ++t) {  // ticks: 5 on each axis
    const double xv = rx.lo + rx.span() * t / 4, yv = ry.lo + ry.span() * t / 4;
    const int xt = kMarginLeft + pw * t / 4, yt = kMarginTop + ph - ph * t / 4;
    cv::putText(img, number_text(xv, o.log_x ? "1e%.0f" : "%.3g"), {xt - 15, kMarginTop + ph + 18},
                kFont, 0.4, kBlack);
    cv::putText(img, number_text(yv, "%.3g"), {5, yt + 4}, kFont, 0.4, kBlack);
  }
  for (std::size_t s = 0; s < series.size(); ++s) {
    const cv::Scalar color = kColors[s % kColorCount];
    for (std::size_t i = 1; i < std::min(x.size(), series[s].y.size()); ++i) {
      if (!std::isfinite(series[s].y[i]) || !std::isfinite(series[s].y[i - 1])) continue;
      cv::line(img, {px(x[i - 1]), py(series[s].y[i - 1])}, {px(x[i]), py(series[s].y[i])}, color,
               2, cv::LINE_AA);
    }
    put_text(img, series[s].label, {kMarginLeft + 10, kMarginTop + 18 + 18 * static_cast<int>(s)},
             0.5, color);
  }
  if (o.marker_x) {
    cv::line(img, {px(*o.marker_x), kMarginTop}, {px(*o.marker_x), kMarginTop + ph}, {0, 0, 200},
             1);
  }
  draw_titles(img, o.title, o.x_label, o.y_label, kMarginLeft + pw / 2 - 40);
  return img;
}

// ---- bar chart --------------------------------------------------------------------------------

cv::Scalar lighter(const cv::Scalar& color) {
  return {(color[0] + 255) / 2, (color[1] + 255) / 2, (color[2] + 255) / 2};
}

// A bar from (x0, y0) to (x1, base); hatched: lighter fill with diagonal lines of `color`.
void draw_bar(cv::Mat& img, cv::Rect bar, const cv::Scalar& color, bool hatched) {
  if (bar.height <= 0) bar.height = 1;
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

void draw_bar_legend(cv::Mat& img, const std::vector<BarSeries>& series, const std::string& hatched,
                     bool any_hatched) {
  int y = kMarginTop + 8;
  const int x = img.cols - kMarginRight - 190;
  auto entry = [&](const std::string& text, const cv::Scalar& color, bool hatch) {
    draw_bar(img, {x, y, 14, 12}, color, hatch);
    put_text(img, text, {x + 20, y + 11}, 0.45, kBlack);
    y += 18;
  };
  for (std::size_t s = 0; s < series.size(); ++s)
    entry(series[s].label, kColors[s % kColorCount], false);
  if (any_hatched) entry(hatched, kColors[0], true);
}

// The y axis top: a round number above the largest value.
double axis_top(const std::vector<BarSeries>& series) {
  double top = 0;
  for (const auto& s : series)
    for (const auto& v : s.values)
      if (v && std::isfinite(*v)) top = std::max(top, *v);
  return top > 0 ? top * 1.15 : 1.0;
}

template <typename T>
T at_or(const std::vector<T>& values, std::size_t i, T fallback) {
  return i < values.size() ? values[i] : fallback;
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
    cv::copyMakeBorder(p, p, 0, 0, 0, width - p.cols, cv::BORDER_CONSTANT, {255, 255, 255});
  }
  cv::Mat img;
  cv::vconcat(panels, img);
  write_png(path, img);
}

void write_bar_chart(const std::string& path, const std::vector<std::string>& groups,
                     const std::vector<BarSeries>& series, const BarChartOptions& o) {
  if (groups.empty() || series.empty()) throw RuntimeError("chart '" + path + "': no bars");
  const int bottom = kMarginBottom + 30;  // room for wrapped group labels
  cv::Mat img(o.height, o.width, CV_8UC3, cv::Scalar(255, 255, 255));
  const int pw = o.width - kMarginLeft - kMarginRight - 200;  // legend on the right
  const int ph = o.height - kMarginTop - bottom, base = kMarginTop + ph;
  const double top = axis_top(series);
  for (int t = 0; t <= 4; ++t) {  // grid and y ticks
    const int yt = base - ph * t / 4;
    cv::line(img, {kMarginLeft, yt}, {kMarginLeft + pw, yt}, kGrey, 1);
    cv::putText(img, number_text(top * t / 4, "%.3g"), {5, yt + 4}, kFont, 0.4, kBlack);
  }
  cv::line(img, {kMarginLeft, kMarginTop}, {kMarginLeft, base}, kBlack, 1);
  const int group_w = pw / static_cast<int>(groups.size());
  const int bar_w = std::max(2, group_w * 3 / 4 / static_cast<int>(series.size()));
  bool any_hatched = false;
  struct Note {
    std::string text;
    cv::Point at;
    std::size_t series;
  };
  std::vector<Note> notes;  // drawn last, over the bars
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const int x0 = kMarginLeft + group_w * static_cast<int>(g) + group_w / 8;
    for (std::size_t s = 0; s < series.size(); ++s) {
      const int x = x0 + bar_w * static_cast<int>(s);
      const auto value = at_or(series[s].values, g, std::optional<double>());
      if (!value || !std::isfinite(*value)) {
        const std::string note = at_or(series[s].notes, g, std::string());
        if (!note.empty()) notes.push_back({note, {x, base - 6 - 14 * static_cast<int>(s)}, s});
        continue;
      }
      const int h = static_cast<int>(std::lround(std::max(0.0, *value) / top * ph));
      const bool hatched = at_or(series[s].hatched, g, false);
      any_hatched = any_hatched || hatched;
      draw_bar(img, {x, base - h, bar_w - 2, h}, kColors[s % kColorCount], hatched);
      const std::string text =
          number_text(*value, ("%." + std::to_string(o.decimals) + "f").c_str());
      cv::putText(img, text, {x, base - h - 4}, kFont, 0.35, kBlack, 1, cv::LINE_AA);
    }
    const auto lines = wrap_label(groups[g], std::max(6, group_w / 8));
    for (std::size_t l = 0; l < lines.size(); ++l) {
      put_text(img, lines[l], {x0, base + 16 + 15 * static_cast<int>(l)}, 0.4, kBlack);
    }
  }
  for (const auto& n : notes)
    put_boxed_text(img, n.text, n.at, 0.35, kColors[n.series % kColorCount]);
  cv::line(img, {kMarginLeft, base}, {kMarginLeft + pw, base}, kBlack, 1);
  draw_bar_legend(img, series, o.hatched_label, any_hatched);
  draw_titles(img, o.title, o.x_label, o.y_label, kMarginLeft + pw / 2 - 40);
  write_png(path, img);
}

}  // namespace ltfit
