// Fuzz target: the libjpeg-turbo decoder the loader uses (src/data/jpeg_decode.cpp): DCT-scaled
// and region decodes, the EXIF orientation parser, the progressive scan limit.
//
// The input's first 4 bytes choose the scale (M/8) and the region (its corner and side as
// fractions of the image); the rest is the file. As in decode_bgr, only a file the header check
// accepts as a JPEG of at most kDecodePixels pixels reaches the decoder. Findings, besides crashes
// and sanitizer reports: a failure without a reason; an image of another size than its region or
// a region outside the whole; a whole image larger than the header check saw (scaled); and, for
// files libjpeg decodes without a warning, a region whose pixels differ from the whole decode's.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "data/jpeg_decode.h"
#include "fuzz_checks.h"
#include "ltfit/data/image_header.h"
#include "targets.h"

namespace ltfit::fuzz {

namespace {

constexpr std::uint64_t kDecodePixels = 1 << 18;
constexpr std::size_t kControlBytes = 4;

// The region the control bytes name, within an image of `size`.
cv::Rect control_region(std::string_view control, cv::Size size) {
  const auto fraction = [&](std::size_t i) {
    return static_cast<std::uint8_t>(control[i]) / 256.0;
  };
  const int x = static_cast<int>(fraction(1) * size.width);
  const int y = static_cast<int>(fraction(2) * size.height);
  const int side = 1 + static_cast<int>(fraction(3) * std::max(size.width, size.height));
  return cv::Rect(x, y, side, side) & cv::Rect(0, 0, size.width, size.height);
}

void check_shape(const JpegDecoded& d, const ImageHeader& header, int eighths) {
  if (d.image.type() != CV_8UC3) invariant_failed("the decoded image is not 8-bit BGR");
  if (d.image.size() != d.region.size()) invariant_failed("the image is not its region's size");
  if ((d.region & cv::Rect(0, 0, d.whole.width, d.whole.height)) != d.region) {
    invariant_failed("the region lies outside the whole image");
  }
  const std::uint64_t w = jpeg_scaled_side(header.width, eighths);
  const std::uint64_t h = jpeg_scaled_side(header.height, eighths);
  if (static_cast<std::uint64_t>(d.whole.area()) > w * h) {
    invariant_failed("the decoder made a larger image than the header check saw");
  }
}

}  // namespace

Outcome run_jpeg(std::string_view input) {
  if (input.size() < kControlBytes) return Outcome::kRefused;
  const std::string_view control = input.substr(0, kControlBytes);
  const std::string_view file = input.substr(kControlBytes);
  const int eighths = 1 + (static_cast<std::uint8_t>(control[0]) & 7);
  const std::vector<std::uint8_t> bytes(file.begin(), file.end());
  std::string error;
  const std::optional<ImageHeader> header = read_image_header(std::span(bytes), &error);
  if (!header || header->format != ImageFormat::kJpeg || header->pixels() > kDecodePixels) {
    return Outcome::kRefused;
  }
  const JpegDecoded part =
      decode_jpeg(bytes, {eighths, [&](cv::Size size) { return control_region(control, size); }});
  if (part.image.empty()) {
    if (!part.unsupported && part.error.empty()) invariant_failed("no image and no reason");
    note_refusal(part.error.c_str());
    return Outcome::kRefused;
  }
  check_shape(part, *header, eighths);
  const JpegDecoded whole = decode_jpeg(bytes, {eighths, {}});
  if (whole.image.empty() || whole.warnings > 0 || part.warnings > 0) return Outcome::kAccepted;
  check_shape(whole, *header, eighths);
  if (whole.whole != part.whole) invariant_failed("a region decode saw another whole size");
  if (cv::norm(part.image, whole.image(part.region), cv::NORM_INF) != 0) {
    invariant_failed("a region decode's pixels differ from the whole decode's");
  }
  return Outcome::kAccepted;
}

}  // namespace ltfit::fuzz
