// A reliability diagram (Guo et al. 2017, figure 1) as a PNG: for each confidence bin a bar as
// tall as the accuracy of its predictions, the gap between that accuracy and the bin's mean
// confidence shaded over it (red, translucent, outlined), the diagonal of perfect calibration
// dashed, and under it a panel with the number of predictions in each bin. Drawing uses OpenCV,
// which is why it lives in the data area; the figures come from eval/calibration.h.
//
// Laid out first (reliability_layout: every bar, gap and count bar with its pixels), then drawn
// from that layout, so tests can check what the picture shows without reading its pixels.
// Thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ltfit/pictures/image_grid.h"  // EncodedPng
#include "ltfit/pictures/plot.h"        // PixelBox, Bgr

namespace ltfit {

// One bin of the diagram (eval/calibration.h's CalibrationBin, as data).
struct ReliabilityBin {
  double lower = 0.0, upper = 0.0;  // its confidence range, within [0, 1]
  std::int64_t count = 0;           // predictions in it; 0: nothing drawn
  double confidence = 0.0;          // their mean confidence
  double accuracy = 0.0;            // the share of them that is correct
};

struct ReliabilityText {
  std::string title;                   // on top (e.g. with the ECE)
  std::string x_label = "confidence";  // under the x axis
  std::string y_label = "accuracy";    // above the y axis
  std::string bar_label = "accuracy";  // the bars' legend entry
};

inline constexpr Bgr kReliabilityBarColor{180, 119, 31};  // tab10 blue (BGR)
inline constexpr Bgr kReliabilityGapColor{40, 39, 214};   // tab10 red: the gap's outline
inline constexpr Bgr kReliabilityCountColor{150, 150, 150};

struct ReliabilityLayout {
  int width = 0, height = 0;
  PixelBox plot;                          // accuracy (y, 0..1) against confidence (x, 0..1)
  PixelBox counts;                        // predictions per bin, the same x
  PixelBox legend;                        // right of the plot
  std::vector<PixelBox> bars;             // per bin: 0 up to its accuracy (empty box: no bar)
  std::vector<PixelBox> gaps;             // per bin: between accuracy and mean confidence
  std::vector<PixelBox> count_bars;       // per bin: its count, scaled to the largest
  std::vector<std::string> count_labels;  // per bin: the count as drawn above its count bar
                                          // ("" when empty or too wide for the bar)
  std::int64_t max_count = 0;

  int x_pixel(double confidence) const;  // image column of a confidence in [0, 1]
  int y_pixel(double accuracy) const;    // image row of an accuracy in [0, 1]
};

ReliabilityLayout reliability_layout(const std::vector<ReliabilityBin>& bins);

// The diagram of `bins` as a PNG; RuntimeError when it cannot be encoded.
EncodedPng encode_reliability_diagram(const std::vector<ReliabilityBin>& bins,
                                      const ReliabilityText& text);

}  // namespace ltfit
