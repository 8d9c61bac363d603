// Pillow's 8-bit resampler (libImaging/Resample.c), recomputed for a window of the output.
#include "data/pil_resample.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "ltfit/util/error.h"

namespace ltfit {
namespace {

// Fixed-point fraction bits of Pillow's 8-bit weights: 32 - 8 (pixel) - 2 (headroom).
constexpr int kFractionBits = 22;

double triangle(double x) {  // Pillow's BILINEAR, support 1
  x = std::abs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

double keys_cubic(double x) {  // Pillow's BICUBIC (Keys, a = -0.5), support 2
  constexpr double a = -0.5;
  x = std::abs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}

// The taps of outputs [first_output, first_output + outputs) of resizing `in_size` samples to
// `out_size`: for output i, input samples first[i] .. first[i] + count[i] - 1 with weights
// weights[i * width ...] in fixed point.
struct Taps {
  int width = 0;
  std::vector<int> first, count;
  std::vector<std::int32_t> weights;
};

Taps pil_taps(int in_size, int out_size, int first_output, int outputs, ResampleFilter filter) {
  const bool cubic = filter == ResampleFilter::kBicubic;
  // Pillow takes the source extent as a float (the resize box), then computes in double.
  const double scale = static_cast<double>(static_cast<float>(in_size)) / out_size;
  const double filter_scale = std::max(scale, 1.0);  // widen the kernel only when shrinking
  const double support = (cubic ? 2.0 : 1.0) * filter_scale;
  const double inverse_scale = 1.0 / filter_scale;
  Taps taps;
  taps.width = static_cast<int>(std::ceil(support)) * 2 + 1;
  taps.first.resize(static_cast<std::size_t>(outputs));
  taps.count.resize(static_cast<std::size_t>(outputs));
  taps.weights.assign(static_cast<std::size_t>(outputs) * static_cast<std::size_t>(taps.width), 0);
  std::vector<double> k(static_cast<std::size_t>(taps.width));
  for (int i = 0; i < outputs; ++i) {
    const double center = (first_output + i + 0.5) * scale;
    // (int) truncates toward zero, as in Pillow, before the clamp.
    const int lo = std::max(static_cast<int>(center - support + 0.5), 0);
    const int hi = std::min(static_cast<int>(center + support + 0.5), in_size);
    const int n = hi - lo;
    double total = 0.0;
    for (int x = 0; x < n; ++x) {
      const double t = (static_cast<double>(x + lo) - center + 0.5) * inverse_scale;
      k[static_cast<std::size_t>(x)] = cubic ? keys_cubic(t) : triangle(t);
      total += k[static_cast<std::size_t>(x)];
    }
    std::int32_t* w = taps.weights.data() + static_cast<std::size_t>(i) * taps.width;
    for (int x = 0; x < n; ++x) {
      double v = k[static_cast<std::size_t>(x)];
      if (total != 0.0) v /= total;
      const double fixed = v * (1 << kFractionBits);
      w[x] = static_cast<std::int32_t>(v < 0.0 ? fixed - 0.5 : fixed + 0.5);
    }
    taps.first[static_cast<std::size_t>(i)] = lo;
    taps.count[static_cast<std::size_t>(i)] = n;
  }
  return taps;
}

std::uint8_t clip8(std::int64_t sum) {
  return static_cast<std::uint8_t>(std::clamp<std::int64_t>(sum >> kFractionBits, 0, 255));
}

constexpr std::int64_t kHalf = std::int64_t{1} << (kFractionBits - 1);

// Rows [row0, row1) of `in` filtered along x by `taps` (3 channels).
cv::Mat horizontal_pass(const cv::Mat& in, int row0, int row1, const Taps& taps) {
  const int outputs = static_cast<int>(taps.first.size());
  cv::Mat out(row1 - row0, outputs, CV_8UC3);
  for (int y = row0; y < row1; ++y) {
    const std::uint8_t* src = in.ptr<std::uint8_t>(y);
    std::uint8_t* dst = out.ptr<std::uint8_t>(y - row0);
    for (int i = 0; i < outputs; ++i) {
      const std::int32_t* w = taps.weights.data() + static_cast<std::size_t>(i) * taps.width;
      const std::uint8_t* p = src + 3 * taps.first[static_cast<std::size_t>(i)];
      std::int64_t s0 = kHalf, s1 = kHalf, s2 = kHalf;
      for (int x = 0; x < taps.count[static_cast<std::size_t>(i)]; ++x, p += 3) {
        s0 += p[0] * std::int64_t{w[x]};
        s1 += p[1] * std::int64_t{w[x]};
        s2 += p[2] * std::int64_t{w[x]};
      }
      dst[3 * i] = clip8(s0);
      dst[3 * i + 1] = clip8(s1);
      dst[3 * i + 2] = clip8(s2);
    }
  }
  return out;
}

// `in` (whose row 0 is input row `row0`) filtered along y by `taps`.
cv::Mat vertical_pass(const cv::Mat& in, int row0, const Taps& taps) {
  const int outputs = static_cast<int>(taps.first.size());
  const int width = in.cols * 3;
  cv::Mat out(outputs, in.cols, CV_8UC3);
  std::vector<std::int64_t> sums(static_cast<std::size_t>(width));
  for (int i = 0; i < outputs; ++i) {
    std::fill(sums.begin(), sums.end(), kHalf);
    const std::int32_t* w = taps.weights.data() + static_cast<std::size_t>(i) * taps.width;
    const int first = taps.first[static_cast<std::size_t>(i)] - row0;
    for (int y = 0; y < taps.count[static_cast<std::size_t>(i)]; ++y) {
      const std::uint8_t* src = in.ptr<std::uint8_t>(first + y);
      const std::int64_t weight = w[y];
      for (int c = 0; c < width; ++c) sums[static_cast<std::size_t>(c)] += src[c] * weight;
    }
    std::uint8_t* dst = out.ptr<std::uint8_t>(i);
    for (int c = 0; c < width; ++c) dst[c] = clip8(sums[static_cast<std::size_t>(c)]);
  }
  return out;
}

}  // namespace

cv::Size torchvision_resize_size(cv::Size size, int resize) {
  const std::int64_t shorter = std::min(size.width, size.height);
  const std::int64_t longer = std::max(size.width, size.height);
  const double scaled = static_cast<double>(resize * longer) / static_cast<double>(shorter);
  if (!(scaled < (1 << 24))) return {};
  const int new_longer = static_cast<int>(scaled);
  return size.width <= size.height ? cv::Size(resize, new_longer) : cv::Size(new_longer, resize);
}

cv::Rect torchvision_center_crop(cv::Size size, int crop) {
  const auto offset = [crop](int side) {
    return static_cast<int>(std::nearbyint((side - crop) / 2.0));  // ties to even by default
  };
  return {offset(size.width), offset(size.height), crop, crop};
}

cv::Mat pil_resize_window(const cv::Mat& image, cv::Size size, cv::Rect window,
                          ResampleFilter filter) {
  LTFIT_CHECK(image.type() == CV_8UC3 && !image.empty(), "pil_resize_window needs CV_8UC3");
  LTFIT_CHECK(window.x >= 0 && window.y >= 0 && window.width > 0 && window.height > 0 &&
                  window.x + window.width <= size.width && window.y + window.height <= size.height,
              "pil_resize_window: window outside the output");
  // Pillow resamples an axis only when its size changes, horizontally first; an axis that
  // keeps its size is only cropped.
  const bool horizontal = size.width != image.cols;
  const bool vertical = size.height != image.rows;
  // Pillow 13 runs the vertical pass first when the height loses more than twice as many
  // pixels as the width (its rule, on the whole input and output sizes): the 8-bit rounding
  // between the passes makes the order visible.
  const int lost_rows = image.rows - size.height, lost_cols = image.cols - size.width;
  if (horizontal && vertical && lost_rows > 0 && lost_rows > lost_cols * 2) {
    Taps cols = pil_taps(image.cols, size.width, window.x, window.width, filter);
    const int col0 = cols.first.front(), col1 = cols.first.back() + cols.count.back();
    for (int& first : cols.first) first -= col0;
    const cv::Mat down =
        vertical_pass(image(cv::Range::all(), cv::Range(col0, col1)), 0,
                      pil_taps(image.rows, size.height, window.y, window.height, filter));
    return horizontal_pass(down, 0, down.rows, cols);
  }
  Taps rows;
  int row0 = window.y, row1 = window.y + window.height;
  if (vertical) {
    rows = pil_taps(image.rows, size.height, window.y, window.height, filter);
    row0 = rows.first.front();
    row1 = rows.first.back() + rows.count.back();
  }
  cv::Mat across;
  if (horizontal) {
    across = horizontal_pass(image, row0, row1,
                             pil_taps(image.cols, size.width, window.x, window.width, filter));
  } else {
    across = image(cv::Range(row0, row1), cv::Range(window.x, window.x + window.width));
  }
  if (!vertical) return across.clone();
  return vertical_pass(across, row0, rows);
}

}  // namespace ltfit
