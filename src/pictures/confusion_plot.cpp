// The confusion matrix heat map (confusion_plot.h).
#include "ltfit/pictures/confusion_plot.h"

#include <algorithm>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "ltfit/util/error.h"
#include "pictures/plot_internal.h"

namespace ltfit {

namespace {

using plot_internal::ascii;
using plot_internal::kBlack;
using plot_internal::kFont;
using plot_internal::kWhite;
using plot_internal::text_width;

constexpr int kMaxMatrixPixels = 800;       // the cells' side in total, at most
constexpr int kMinCell = 1, kMaxCell = 72;  // pixels per cell side
constexpr int kMinCellForCounts = 28, kMinCellForNames = 10;
constexpr int kMaxNameChars = 20;
constexpr int kPad = 10;

// A class name as drawn: ASCII, long ones cut.
std::string label_text(const std::string& name) {
  std::string out = ascii(name);
  if (out.size() > kMaxNameChars) out = out.substr(0, kMaxNameChars - 2) + "..";
  return out;
}

// White to dark blue (matplotlib's "Blues" ends), in BGR, for a share in [0,1].
cv::Scalar shade(double share) {
  const double t = std::clamp(share, 0.0, 1.0);
  return {255 - t * (255 - 107), 255 - t * (255 - 48), 255 - t * (255 - 8)};
}

// `text` drawn left to right, centred in a strip `strip_height` high, turned to read bottom to
// top.
cv::Mat vertical_text(const std::string& text, double scale, int strip_height) {
  int baseline = 0;
  const cv::Size size = cv::getTextSize(text, kFont, scale, 1, &baseline);
  cv::Mat strip(strip_height, std::max(1, size.width + 4), CV_8UC3, kWhite);
  cv::putText(strip, text, {2, (strip_height + size.height) / 2}, kFont, scale, kBlack, 1,
              cv::LINE_AA);
  cv::Mat turned;
  cv::rotate(strip, turned, cv::ROTATE_90_COUNTERCLOCKWISE);
  return turned;
}

}  // namespace

EncodedPng encode_confusion_matrix(const std::vector<std::vector<std::int64_t>>& counts,
                                   const std::vector<std::string>& classes,
                                   const std::string& title) {
  const int n = static_cast<int>(counts.size());
  LTFIT_CHECK(n > 0 && classes.size() == counts.size(), "one class name per confusion row");
  for (const auto& row : counts) LTFIT_CHECK(row.size() == counts.size(), "square confusion");
  const int cell = std::clamp(kMaxMatrixPixels / n, kMinCell, kMaxCell);
  const bool names = cell >= kMinCellForNames;
  const double name_scale = std::clamp(cell / 40.0, 0.3, 0.5);
  std::vector<std::string> labels;
  int label_width = 0;
  for (const auto& c : classes) {
    labels.push_back(names ? label_text(c) : std::string());
    label_width = std::max(label_width, text_width(labels.back(), name_scale));
  }
  const int left = kPad + 20 + label_width + kPad;  // "actual" and the row names
  const int top = kPad + 24 + 8;                    // the title
  const int side = n * cell;
  const std::string heading = ascii(title);
  const int width = std::max(left + side + kPad, kPad + text_width(heading, 0.5) + kPad);
  // Under the matrix: the column names, then "predicted", on the side of the labels it names
  // (as "actual" stands beside the row names).
  const int names_bottom = top + side + kPad + label_width;
  cv::Mat img(names_bottom + kPad + 16 + kPad, width, CV_8UC3, kWhite);
  cv::putText(img, heading, {kPad, kPad + 14}, kFont, 0.5, kBlack, 1, cv::LINE_AA);
  const int predicted_x = std::max(left, left + (side - text_width("predicted", 0.45)) / 2);
  cv::putText(img, "predicted", {predicted_x, names_bottom + kPad + 12}, kFont, 0.45, kBlack, 1,
              cv::LINE_AA);
  const cv::Mat actual = vertical_text("actual", 0.45, 18);
  actual.copyTo(img(cv::Rect(kPad, top, actual.cols, std::min(actual.rows, img.rows - top))));
  for (int r = 0; r < n; ++r) {
    std::int64_t row_total = 0;
    for (const auto v : counts[r]) row_total += v;
    for (int c = 0; c < n; ++c) {
      const std::int64_t v = counts[r][c];
      const double share = row_total > 0 ? static_cast<double>(v) / row_total : 0.0;
      const cv::Rect box(left + c * cell, top + r * cell, cell, cell);
      cv::rectangle(img, box, shade(share), cv::FILLED);
      if (cell >= kMinCellForCounts) {
        const std::string text = std::to_string(v);
        const double scale = std::min(0.5, 0.8 * cell / std::max(1, text_width(text, 1.0)));
        cv::putText(img, text, {box.x + (cell - text_width(text, scale)) / 2, box.y + cell / 2 + 5},
                    kFont, scale, share > 0.5 ? kWhite : kBlack, 1, cv::LINE_AA);
      }
    }
    cv::putText(img, labels[r],
                {left - kPad - text_width(labels[r], name_scale), top + r * cell + cell / 2 + 4},
                kFont, name_scale, kBlack, 1, cv::LINE_AA);
    if (names) {
      const cv::Mat name = vertical_text(labels[r], name_scale, cell);
      name.copyTo(img(cv::Rect(left + r * cell, top + side + kPad, name.cols, name.rows)));
    }
  }
  cv::rectangle(img, cv::Rect(left, top, side, side), cv::Scalar(120, 120, 120), 1);
  std::vector<uchar> png;
  if (!cv::imencode(".png", img, png))
    throw RuntimeError("cannot encode a confusion matrix as PNG");
  return {std::string(png.begin(), png.end()), img.rows, img.cols};
}

}  // namespace ltfit
