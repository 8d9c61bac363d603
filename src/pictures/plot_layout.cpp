// Where a chart draws what (plot.h's line_chart_layout and bar_chart_layout), and the text
// helpers plot.cpp shares (plot_internal.h). Pure functions; thread-safe.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "ltfit/pictures/chart_ticks.h"
#include "pictures/plot_internal.h"

namespace ltfit {

using namespace plot_internal;

namespace plot_internal {

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

int text_width(const std::string& text, double scale) {
  int baseline = 0;
  return cv::getTextSize(ascii(text), kFont, scale, 1, &baseline).width;
}

int legend_width(const std::vector<std::string>& labels) {
  if (labels.empty()) return 0;
  int widest = 0;
  for (const auto& l : labels) widest = std::max(widest, text_width(l, kLegendScale));
  return kLegendSwatch + widest + 12;
}

}  // namespace plot_internal

int ChartLayout::x_pixel(double x) const {
  const double v = log_x ? std::log10(std::max(x, 1e-300)) : x;
  const int inner = std::max(1, plot.width() - 2 * inset);
  const double span = x_hi > x_lo ? x_hi - x_lo : 1.0;
  return plot.x0 + inset + static_cast<int>(std::lround((v - x_lo) / span * inner));
}

int ChartLayout::y_pixel(double y) const {
  const int inner = std::max(1, plot.height() - 2 * inset);
  const double span = y_hi > y_lo ? y_hi - y_lo : 1.0;
  return plot.y1 - inset - static_cast<int>(std::lround((y - y_lo) / span * inner));
}

namespace {

struct Range {
  double lo = INFINITY, hi = -INFINITY;
  void add(double v) {
    if (std::isfinite(v)) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
};

// The y labels' column: as wide as the widest tick label.
int left_margin(const std::vector<AxisTick>& ticks) {
  int widest = 0;
  for (const auto& t : ticks) widest = std::max(widest, text_width(t.label, kTickScale));
  return std::max(50, widest + 18);
}

std::vector<ChartTick> place(const std::vector<AxisTick>& ticks, const ChartLayout& layout,
                             bool x_axis) {
  std::vector<ChartTick> placed;
  for (const auto& t : ticks)
    placed.push_back(
        {t.value, t.label, x_axis ? layout.x_pixel(t.value) : layout.y_pixel(t.value)});
  return placed;
}

// The x axis of a line chart: decades on a log axis, else nice (or whole) numbers.
std::vector<AxisTick> x_axis(const std::vector<double>& x, const ChartOptions& o,
                             ChartLayout& layout) {
  Range rx;
  for (double v : x) rx.add(o.log_x ? (v > 0 ? v : NAN) : v);
  if (rx.empty()) rx.lo = o.log_x ? 1.0 : 0.0, rx.hi = o.log_x ? 10.0 : 1.0;
  if (o.log_x) {
    layout.x_lo = std::log10(rx.lo), layout.x_hi = std::log10(rx.hi);
    return log_ticks(rx.lo, rx.hi);
  }
  const LinearAxis axis = nice_linear_axis(rx.lo, rx.hi, 6, o.integer_x);
  layout.x_lo = axis.lo, layout.x_hi = axis.hi;
  return axis.ticks;
}

PixelBox polyline_extent(const std::vector<double>& x, const std::vector<double>& y,
                         const ChartLayout& layout) {
  PixelBox box{INT32_MAX, INT32_MAX, INT32_MIN, INT32_MIN};
  for (std::size_t i = 0; i < std::min(x.size(), y.size()); ++i) {
    if (!std::isfinite(y[i]) || !std::isfinite(x[i])) continue;
    const int px = layout.x_pixel(x[i]), py = layout.y_pixel(y[i]);
    box = {std::min(box.x0, px - 1), std::min(box.y0, py - 1), std::max(box.x1, px + 2),
           std::max(box.y1, py + 2)};
  }
  return box.x0 == INT32_MAX ? PixelBox{} : box;
}

}  // namespace

ChartLayout line_chart_layout(const std::vector<double>& x, const std::vector<LineSeries>& series,
                              const ChartOptions& o) {
  ChartLayout layout;
  layout.width = o.width, layout.height = o.height, layout.log_x = o.log_x;
  layout.inset = kLineInset;
  Range ry;
  for (const auto& s : series)
    for (double v : s.y) ry.add(v);
  if (ry.empty()) ry.lo = 0.0, ry.hi = 1.0;
  const LinearAxis y_axis = nice_linear_axis(ry.lo, ry.hi, 6);
  layout.y_lo = y_axis.lo, layout.y_hi = y_axis.hi;
  const std::vector<AxisTick> x_ticks = x_axis(x, o, layout);

  std::vector<std::string> names;
  for (const auto& s : series) names.push_back(s.label);
  for (const auto& m : o.markers) names.push_back(m.label);
  const int legend_w = legend_width(names);
  const int left = left_margin(y_axis.ticks);
  const int plot_x1 = o.width - kMarginRight - (legend_w > 0 ? legend_w + kLegendGap : 0);
  layout.plot = {left, kMarginTop, std::max(left + 10, plot_x1), o.height - kMarginBottom};
  if (legend_w > 0) {
    layout.legend = {layout.plot.x1 + kLegendGap, kMarginTop,
                     layout.plot.x1 + kLegendGap + legend_w,
                     kMarginTop + 8 + kLegendRow * static_cast<int>(names.size())};
  }
  layout.x_ticks = place(x_ticks, layout, true);
  layout.y_ticks = place(y_axis.ticks, layout, false);
  for (std::size_t s = 0; s < series.size(); ++s) {
    layout.marks.push_back({ChartMark::Kind::kLine, series[s].label, s, 0,
                            polyline_extent(x, series[s].y, layout), color_of(s), "", false});
  }
  for (std::size_t m = 0; m < o.markers.size(); ++m) {
    const double v = o.log_x ? std::log10(std::max(o.markers[m].x, 1e-300)) : o.markers[m].x;
    if (!(v >= layout.x_lo && v <= layout.x_hi)) continue;  // in the legend only
    const int px = layout.x_pixel(o.markers[m].x);
    layout.marks.push_back({ChartMark::Kind::kMarker,
                            o.markers[m].label,
                            m,
                            0,
                            {px - 1, layout.plot.y0 + 1, px + 2, layout.plot.y1},
                            color_of(series.size() + m),
                            "",
                            false});
  }
  return layout;
}

// ---- bar chart --------------------------------------------------------------------------------

namespace {

template <typename T>
T at_or(const std::vector<T>& values, std::size_t i, T fallback) {
  return i < values.size() ? values[i] : fallback;
}

// `decimals` digits, or two significant ones for a value above 0 that would read as 0.
std::string default_value_text(double v, int decimals) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", decimals, v);
  if (v > 0 && std::strtod(text, nullptr) == 0.0) std::snprintf(text, sizeof text, "%.2g", v);
  return text;
}

std::optional<double> bar_value(const BarSeries& s, std::size_t g) {
  const auto v = at_or(s.values, g, std::optional<double>());
  return v && std::isfinite(*v) ? v : std::nullopt;
}

}  // namespace

ChartLayout bar_chart_layout(const std::vector<std::string>& groups,
                             const std::vector<BarSeries>& series, const BarChartOptions& o) {
  ChartLayout layout;
  double top = 0.0;
  int label_w = 0;
  bool any_hatched = false;
  const auto text_of = [&](double v) {
    return o.value_text ? o.value_text(v) : default_value_text(v, o.decimals);
  };
  for (const auto& s : series)
    for (std::size_t g = 0; g < groups.size(); ++g)
      if (const auto v = bar_value(s, g)) {
        top = std::max(top, *v);
        label_w = std::max(label_w, text_width(text_of(*v), kValueScale));
        any_hatched = any_hatched || at_or(s.hatched, g, false);
      }
  const LinearAxis y_axis = nice_linear_axis(0.0, top > 0 ? top * 1.1 : 1.0, 6);
  layout.y_lo = 0.0, layout.y_hi = y_axis.hi;
  std::vector<std::string> names;
  for (const auto& s : series) names.push_back(s.label);
  if (any_hatched) names.push_back(o.hatched_label);
  const int legend_w = legend_width(names), left = left_margin(y_axis.ticks);
  const int count = static_cast<int>(std::max<std::size_t>(1, series.size()));
  const int groups_n = static_cast<int>(std::max<std::size_t>(1, groups.size()));
  const int slot_min = std::max(14, label_w + 6);  // each bar slot fits its value label
  const int needed =
      left + groups_n * (slot_min * count * 4 / 3 + 1) + kLegendGap + legend_w + kMarginRight;
  layout.width = std::max(o.width, needed), layout.height = o.height;
  const int bottom = kMarginBottom + 30;  // room for wrapped group labels
  layout.plot = {left, kMarginTop, layout.width - kMarginRight - legend_w - kLegendGap,
                 o.height - bottom};
  layout.legend = {layout.plot.x1 + kLegendGap, kMarginTop, layout.plot.x1 + kLegendGap + legend_w,
                   kMarginTop + 8 + kLegendRow * static_cast<int>(names.size())};
  layout.y_ticks = place(y_axis.ticks, layout, false);
  const int group_w = layout.plot.width() / groups_n;
  layout.bar_width = std::max(2, group_w * 3 / 4 / count);
  for (std::size_t g = 0; g < groups.size(); ++g) {
    const int x0 = layout.plot.x0 + group_w * static_cast<int>(g) + group_w / 8;
    layout.group_x.push_back(x0);
    for (std::size_t s = 0; s < series.size(); ++s) {
      const auto v = bar_value(series[s], g);
      if (!v) continue;
      const int x = x0 + layout.bar_width * static_cast<int>(s);
      const int h = std::max(kMinBarPixels, layout.plot.y1 - layout.y_pixel(std::max(0.0, *v)));
      layout.marks.push_back({ChartMark::Kind::kBar,
                              series[s].label,
                              s,
                              g,
                              {x, layout.plot.y1 - h, x + layout.bar_width - 2, layout.plot.y1},
                              color_of(s),
                              text_of(*v),
                              at_or(series[s].hatched, g, false)});
    }
  }
  return layout;
}

}  // namespace ltfit
