// What the pictures' sources share: the palette, the font, text widths and the margins. Internal.
#pragma once

#include <string>

#include <opencv2/imgproc.hpp>

#include "ltfit/pictures/plot.h"

namespace ltfit::plot_internal {

constexpr int kMarginRight = 15, kMarginTop = 40, kMarginBottom = 60;
constexpr int kLegendGap = 15;         // between the plot area and the legend
constexpr int kLegendSwatch = 34;      // a legend entry's sample line or box, and its padding
constexpr int kLegendRow = 20;         // pixels per legend entry
constexpr double kLegendScale = 0.45;  // legend font scale
constexpr double kTickScale = 0.4;     // tick label font scale
constexpr double kValueScale = 0.35;   // bar value label font scale
constexpr int kLineInset = 6;          // line charts: data kept this far inside the frame
constexpr int kMinBarPixels = 4;       // a bar above the axis is at least this tall
constexpr int kDashPixels = 12;        // a line's dash slot length (along the line)
const auto kFont = cv::FONT_HERSHEY_SIMPLEX;
const cv::Scalar kBlack{0, 0, 0}, kGrey{225, 225, 225}, kWhite{255, 255, 255};

// tab10, in OpenCV's BGR order: series s is kColors[s % kColorCount]; markers follow the series.
inline constexpr Bgr kColors[] = {{180, 119, 31},  {14, 127, 255}, {44, 160, 44},   {40, 39, 214},
                                  {189, 103, 148}, {75, 86, 140},  {194, 119, 227}, {34, 189, 188}};
constexpr int kColorCount = 8;

inline Bgr color_of(std::size_t i) { return kColors[i % kColorCount]; }
inline cv::Scalar scalar(const Bgr& c) { return {double(c[0]), double(c[1]), double(c[2])}; }

// Hershey fonts draw ASCII only: each other UTF-8 character ("—", "×") becomes '-'.
std::string ascii(const std::string& text);

// Width in pixels of `text` drawn at `scale`.
int text_width(const std::string& text, double scale);

// The width a legend of `labels` takes (swatch, text, padding).
int legend_width(const std::vector<std::string>& labels);

}  // namespace ltfit::plot_internal
