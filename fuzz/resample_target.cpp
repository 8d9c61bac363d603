// Fuzz target: Pillow's resampler as `predict --weights` applies it (src/data/pil_resample.cpp):
// torchvision's Resize geometry and CenterCrop window, then only that window resampled, for any
// image size, resize, crop and filter.
//
// Input: bytes 0-1 the width - 1, 2-3 the height - 1 (each mod 160), 4-5 the resize - 1 (mod
// 256), 6-7 the crop - 1 (mod resize), 8 the filter (bit 0: bicubic) and whether the image is
// flat (bit 1); the rest are the pixels, repeated to fill the image (one colour when flat).
// Never refused (within these bounds the longer side always fits; load_eval_image's unit test
// covers the refusal). Findings,
// besides crashes and sanitizer reports: an output that is not crop x crop, a flat image that
// does not stay exactly flat, and a window that differs from the same pixels of the whole resized
// image (computing only the crop must be exact), checked when the whole image is small.
#include <cstdint>
#include <string>
#include <string_view>

#include <opencv2/core.hpp>

#include "data/pil_resample.h"
#include "fuzz_checks.h"
#include "targets.h"

namespace ltfit::fuzz {

namespace {

constexpr int kMaxSide = 160;
constexpr int kMaxResize = 256;
constexpr int kWholeImagePixels = 1 << 16;  // compare with the whole resize up to this size

void require(bool ok, const char* what) {
  if (!ok) invariant_failed(what);
}

int field(std::string_view input, std::size_t at) {
  const auto byte = [&](std::size_t i) {
    return i < input.size() ? static_cast<unsigned char>(input[i]) : 0u;
  };
  return static_cast<int>(byte(at) | (byte(at + 1) << 8));
}

cv::Mat image_from(std::string_view input, int width, int height, bool flat) {
  cv::Mat image(height, width, CV_8UC3);
  const std::string_view pixels = input.size() > 9 ? input.substr(9) : std::string_view("\x7f");
  const std::size_t bytes = flat ? 3 : pixels.size();
  std::uint8_t* out = image.ptr<std::uint8_t>(0);  // a new Mat is continuous
  const std::size_t total = image.total() * 3;
  for (std::size_t i = 0; i < total; ++i) {
    out[i] = static_cast<std::uint8_t>(pixels[(i % bytes) % pixels.size()]);
  }
  return image;
}

}  // namespace

Outcome run_resample(std::string_view input) {
  const int width = field(input, 0) % kMaxSide + 1;
  const int height = field(input, 2) % kMaxSide + 1;
  const int resize = field(input, 4) % kMaxResize + 1;
  const int crop = field(input, 6) % resize + 1;
  const int flags = input.size() > 8 ? static_cast<unsigned char>(input[8]) : 0;
  const ResampleFilter filter = flags & 1 ? ResampleFilter::kBicubic : ResampleFilter::kBilinear;
  const bool flat = (flags & 2) != 0;
  const cv::Mat image = image_from(input, width, height, flat);

  const cv::Size resized = torchvision_resize_size(image.size(), resize);
  if (resized.empty()) return Outcome::kRefused;
  require(std::min(resized.width, resized.height) == resize, "the shorter side is the resize");
  const cv::Rect window = torchvision_center_crop(resized, crop);
  require(window.x >= 0 && window.y >= 0 && window.x + crop <= resized.width &&
              window.y + crop <= resized.height,
          "the centre crop lies inside the resized image");
  const cv::Mat out = pil_resize_window(image, resized, window, filter);
  require(out.rows == crop && out.cols == crop && out.type() == CV_8UC3, "output is crop²");
  if (flat) {
    const cv::Vec3b colour = image.at<cv::Vec3b>(0, 0);
    for (int y = 0; y < out.rows; ++y) {
      for (int x = 0; x < out.cols; ++x) {
        require(out.at<cv::Vec3b>(y, x) == colour, "a flat image stays exactly flat");
      }
    }
  }
  if (resized.area() <= kWholeImagePixels) {
    const cv::Mat whole = pil_resize_window(image, resized, cv::Rect({0, 0}, resized), filter);
    require(cv::norm(whole(window), out, cv::NORM_INF) == 0,
            "a window equals the same pixels of the whole resize");
  }
  return Outcome::kAccepted;
}

}  // namespace ltfit::fuzz
