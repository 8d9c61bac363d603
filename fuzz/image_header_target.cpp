// Fuzz target: the image header check (src/data/image_header*.cpp) that runs before any decoder
// allocates, then, for small images it accepts, OpenCV's decoder.
//
// read_image_header never throws: it returns a header or an error message. Every header is
// checked against the default limits (data.max_pixels, data.formats) and against limits that
// admit every decodable format. The check exists so that no decoder allocates more than the
// header promised: when it accepts a file of at most kDecodePixels pixels, the file is decoded
// (cv::imdecode) and an image larger than the header said is a finding, as is a decoder
// allocation past libFuzzer's -rss_limit_mb/-malloc_limit_mb (a decompression bomb the check
// let through). LTFIT_FUZZ_NO_DECODE=1 checks headers only.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>

#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>

#include "fuzz_checks.h"
#include "ltfit/data/image_header.h"
#include "targets.h"

namespace ltfit::fuzz {

namespace {

constexpr std::uint64_t kDecodePixels = 1 << 16;

const ImageLimits& all_formats() {
  static const ImageLimits limits = [] {
    ImageLimits l;
    l.formats = {ImageFormat::kJpeg, ImageFormat::kPng,       ImageFormat::kWebp,
                 ImageFormat::kBmp,  ImageFormat::kTiff,      ImageFormat::kPnm,
                 ImageFormat::kPfm,  ImageFormat::kSunRaster, ImageFormat::kHdr,
                 ImageFormat::kExr,  ImageFormat::kJpeg2000};
    return l;
  }();
  return limits;
}

void decode_and_compare(std::string_view bytes, const ImageHeader& header) {
  static const bool decode = std::getenv("LTFIT_FUZZ_NO_DECODE") == nullptr;
  if (!decode || header.pixels() > kDecodePixels) return;
  try {
    const cv::Mat buffer(1, static_cast<int>(bytes.size()), CV_8U, const_cast<char*>(bytes.data()));
    const cv::Mat image =
        cv::imdecode(buffer, cv::IMREAD_UNCHANGED | cv::IMREAD_IGNORE_ORIENTATION);
    if (image.empty()) return;
    const std::uint64_t decoded = std::uint64_t(image.cols) * std::uint64_t(image.rows);
    if (decoded > header.pixels()) {
      std::fprintf(stderr, "header: %s %llux%llu; decoded: %dx%d\n",
                   image_format_name(header.format).c_str(),
                   static_cast<unsigned long long>(header.width),
                   static_cast<unsigned long long>(header.height), image.cols, image.rows);
      invariant_failed("the decoder made a larger image than the header check saw");
    }
  } catch (const cv::Exception&) {  // OpenCV refusing the file is fine
  }
}

}  // namespace

Outcome run_image_header(std::string_view input) {
  std::string error;
  const std::optional<ImageHeader> header = read_image_header(
      std::span(reinterpret_cast<const std::uint8_t*>(input.data()), input.size()), &error);
  if (!header) {
    if (error.empty()) invariant_failed("no header and no error message");
    note_refusal(error.c_str());
    return Outcome::kRefused;
  }
  if (!error.empty()) invariant_failed("a header and an error message");
  check_image_limits(*header, ImageLimits{});
  if (check_image_limits(*header, all_formats()).empty()) decode_and_compare(input, *header);
  return Outcome::kAccepted;
}

}  // namespace ltfit::fuzz
