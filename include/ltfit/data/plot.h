// Simple line charts written as PNG (LR-finder curves, loss and LR curves). Drawing uses
// OpenCV, which is why it lives in the data area. Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ltfit {

struct LineSeries {
  std::string label;      // legend text
  std::vector<double> y;  // one value per x
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

}  // namespace ltfit
