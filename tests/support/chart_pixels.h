// Test helpers for charts (pictures/plot.h): a layout's tick labels, and how many pixels of a
// colour a decoded PNG has inside a box.
#pragma once

#include <opencv2/core.hpp>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "ltfit/pictures/plot.h"

namespace ltfit::testing {

// Pixels of `img` inside `box` (shifted down by `dy` rows) within 8 per channel of `bgr`.
inline int count_color(const cv::Mat& img, const Bgr& bgr, const PixelBox& box, int dy = 0) {
  int count = 0;
  for (int y = std::max(0, box.y0 + dy); y < std::min(img.rows, box.y1 + dy); ++y)
    for (int x = std::max(0, box.x0); x < std::min(img.cols, box.x1); ++x) {
      const auto p = img.at<cv::Vec3b>(y, x);
      bool near = true;
      for (int c = 0; c < 3; ++c) near = near && std::abs(int(p[c]) - int(bgr[c])) <= 8;
      count += near;
    }
  return count;
}

inline std::vector<std::string> tick_labels(const std::vector<ChartTick>& ticks) {
  std::vector<std::string> labels;
  for (const auto& t : ticks) labels.push_back(t.label);
  return labels;
}

}  // namespace ltfit::testing
