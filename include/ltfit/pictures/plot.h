// Simple charts written as PNG: line charts (LR-finder curves, loss and LR curves) and grouped
// bar charts (experiment timings). Drawing uses OpenCV, which is why it lives in the data area.
//
// Each chart is laid out first (chart_layout: the plot area, the ticks with their labels, every
// drawn line, marker and bar with its pixel extent, the legend's box) and then drawn from that
// layout, so tests can check what a picture shows without reading its pixels. Ticks follow
// chart_ticks.h; legends sit right of the plot area, never over the data; lines differ in
// colour and in a dash slot of their own, so a line drawn over an identical one still shows.
// Files are written to a temporary name and renamed. Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace ltfit {

struct LineSeries {
  std::string label;      // legend text
  std::vector<double> y;  // one value per x; non-finite values leave a gap
};

// A vertical line across the plot (e.g. a suggested LR), with a dot where it meets the first
// series; each marker has its own colour and dash and is named in the legend.
struct ChartMarker {
  std::string label;  // legend text, with its value: "valley: 1.2e-3"
  double x = 0.0;     // where, in x units; outside the x range: in the legend only
};

struct ChartOptions {
  std::string title;                 // drawn at the top
  std::string x_label;               // under the x axis
  std::string y_label;               // left of the plot
  bool log_x = false;                // logarithmic x axis (x must be > 0)
  bool integer_x = false;            // x counts steps or epochs: whole-number ticks
  std::vector<ChartMarker> markers;  // vertical markers
  int width = 800;                   // pixels
  int height = 500;                  // pixels
};

// Draws `series` against `x` and writes a PNG to `path`; throws RuntimeError on failure.
void write_line_chart(const std::string& path, const std::vector<double>& x,
                      const std::vector<LineSeries>& series, const ChartOptions& options);

// One panel of a stacked line chart.
struct LineChart {
  std::vector<double> x;           // shared x values
  std::vector<LineSeries> series;  // one line each
  ChartOptions options;            // its title, labels and size
};

// The charts stacked top to bottom in one PNG (as wide as the widest); throws RuntimeError.
void write_line_charts(const std::string& path, const std::vector<LineChart>& charts);

// One series of a grouped bar chart: at most one bar per group.
struct BarSeries {
  std::string label;                          // legend text
  std::vector<std::optional<double>> values;  // one per group; null: no bar
  std::vector<bool> hatched;  // per group: drawn lighter and hatched (an estimate); may be empty
  std::vector<std::string> notes;  // per group: shown where the bar is missing; may be empty
};

struct BarChartOptions {
  std::string title;                       // drawn at the top
  std::string x_label;                     // under the group labels
  std::string y_label;                     // above the y axis
  std::string hatched_label = "estimate";  // legend entry for hatched bars (shown if any)
  int decimals = 1;  // digits after the point in the value labels (more for a value that
                     // would read 0: a bar above 0 is never labelled "0.0")
  std::function<std::string(double)> value_text;  // a bar's label; null: `decimals` digits
  int width = 900;   // pixels, at least: wider when the bars' value labels need it
  int height = 500;  // pixels
};

// A grouped bar chart's content.
struct BarChart {
  std::vector<std::string> groups;  // one cluster each, labelled underneath
  std::vector<BarSeries> series;    // one bar per group each, one colour each
  BarChartOptions options;          // its title, labels and size
};

// Draws one cluster of bars per group (labels under each cluster, ", " wraps) on a y axis from
// 0, with value labels and a legend, and writes a PNG; values must be >= 0. A bar for a tiny
// value is still a few pixels tall. Throws RuntimeError.
void write_bar_chart(const std::string& path, const std::vector<std::string>& groups,
                     const std::vector<BarSeries>& series, const BarChartOptions& options);

// ---- layout: what a chart draws, where ----------------------------------------------------

// The pixels [x0, x1) x [y0, y1) of a chart's image, y growing downwards.
struct PixelBox {
  int x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  int width() const { return x1 - x0; }
  int height() const { return y1 - y0; }
  bool empty() const { return x1 <= x0 || y1 <= y0; }
  bool contains(const PixelBox& b) const {
    return b.x0 >= x0 && b.x1 <= x1 && b.y0 >= y0 && b.y1 <= y1;
  }
  bool overlaps(const PixelBox& b) const {
    return !empty() && !b.empty() && b.x0 < x1 && x0 < b.x1 && b.y0 < y1 && y0 < b.y1;
  }
};

using Bgr = std::array<std::uint8_t, 3>;  // a colour as the PNG decodes it (OpenCV order)

struct ChartTick {
  double value = 0.0;  // in data units
  std::string label;   // as drawn
  int pixel = 0;       // x of an x tick, y of a y tick
};

// One thing drawn for the data: a series' line, a marker, or a bar.
struct ChartMark {
  enum class Kind { kLine, kMarker, kBar };
  Kind kind = Kind::kLine;
  std::string label;        // its legend text (a bar: its series')
  std::size_t index = 0;    // series or marker index; a bar: its series
  std::size_t group = 0;    // a bar: its group
  PixelBox extent;          // the pixels it covers: a line's bounding box, a bar
  Bgr color{};              // its colour (a hatched bar: its lines and outline)
  std::string value_label;  // a bar: the text above it
  bool hatched = false;     // a bar: an estimate
};

struct ChartLayout {
  int width = 0, height = 0;                      // the image
  PixelBox plot;                                  // the data region, inside the axes
  PixelBox legend;                                // right of `plot`; empty when nothing is named
  std::vector<ChartTick> x_ticks, y_ticks;        // a bar chart has no x ticks (its groups)
  std::vector<ChartMark> marks;                   // in drawing order
  double x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;  // the axes' ranges (log_x: of log10 x)
  bool log_x = false;
  int inset = 0;             // the axes' ends lie this many pixels inside `plot`
  std::vector<int> group_x;  // a bar chart: left edge of each group's first bar
  int bar_width = 0;         // a bar chart: pixels per bar slot

  int x_pixel(double x) const;  // x in data units -> image column
  int y_pixel(double y) const;  // y in data units -> image row
};

ChartLayout line_chart_layout(const std::vector<double>& x, const std::vector<LineSeries>& series,
                              const ChartOptions& options);
ChartLayout bar_chart_layout(const std::vector<std::string>& groups,
                             const std::vector<BarSeries>& series, const BarChartOptions& options);

}  // namespace ltfit
