// Simple charts written as PNG: line charts (LR-finder curves, loss and LR curves) and grouped
// bar charts (experiment timings). Drawing uses OpenCV, which is why it lives in the data area.
// Files are written to a temporary name and renamed. Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ltfit {

struct LineSeries {
  std::string label;      // legend text
  std::vector<double> y;  // one value per x; non-finite values leave a gap
};

struct ChartOptions {
  std::string title;               // drawn at the top
  std::string x_label;             // under the x axis
  std::string y_label;             // left of the plot
  bool log_x = false;              // logarithmic x axis (x must be > 0)
  std::optional<double> marker_x;  // a vertical marker (e.g. the suggested LR)
  int width = 800;                 // pixels
  int height = 500;                // pixels
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
  int decimals = 1;                        // digits after the point in the value labels
  int width = 900;                         // pixels
  int height = 500;                        // pixels
};

// Draws one cluster of bars per group (labels under each cluster, ", " wraps) on a y axis from
// 0, with value labels and a legend, and writes a PNG; values must be >= 0. Throws RuntimeError.
void write_bar_chart(const std::string& path, const std::vector<std::string>& groups,
                     const std::vector<BarSeries>& series, const BarChartOptions& options);

}  // namespace ltfit
