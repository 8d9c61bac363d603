// Images a sample source holds decoded (decode.h): checked and copied out as decode_bgr gives a
// decoded file. Thread-safe: the source's block is only read.
#include <opencv2/imgproc.hpp>

#include <string>

#include "data/decode.h"

namespace ltfit {

std::string held_image_problem(const SampleImage& image, const ImageLimits& limits) {
  if (image.width <= 0 || image.height <= 0 || image.offset > image.block->size() ||
      image.bytes() > image.block->size() - image.offset) {
    return "held image of " + std::to_string(image.width) + "×" + std::to_string(image.height) +
           " pixels does not fit its source's " + std::to_string(image.block->size()) + " bytes";
  }
  const auto pixels = static_cast<std::uint64_t>(image.width) * image.height;
  if (limits.max_pixels != 0 && pixels > limits.max_pixels) {
    return "image is " + std::to_string(image.width) + "×" + std::to_string(image.height) + " = " +
           std::to_string(pixels) + " pixels, over data.max_pixels (" +
           std::to_string(limits.max_pixels) + "); raise data.max_pixels to allow it";
  }
  return "";
}

DecodedImage decode_held_image(const SampleImage& image, const DecodeLimits& limits,
                               std::string* error) {
  DecodedImage result;
  if (std::string problem = held_image_problem(image, limits.image); !problem.empty()) {
    *error = std::move(problem);
    return result;
  }
  DecodeBudget& budget = limits.budget ? *limits.budget : default_decode_budget();
  result.lease = budget.acquire(image.bytes());
  // cv::Mat over the block without owning it (const only by convention: cvtColor reads it).
  const cv::Mat rgb(image.height, image.width, CV_8UC3,
                    const_cast<std::uint8_t*>(image.data()));  // NOLINT(*-const-cast)
  cv::cvtColor(rgb, result.image, cv::COLOR_RGB2BGR);
  result.whole = result.image.size();
  result.region = cv::Rect(0, 0, image.width, image.height);
  result.scale = {8, false, static_cast<std::uint64_t>(image.width),
                  static_cast<std::uint64_t>(image.height)};
  return result;
}

}  // namespace ltfit
