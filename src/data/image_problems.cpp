// Image files that cannot serve: see image_problems.h.
#include "ltfit/data/image_problems.h"

#include <algorithm>
#include <cstdint>
#include <exception>
#include <limits>
#include <optional>

#include "data/decode.h"

namespace ltfit {

namespace {

int clamped_side(std::uint64_t side) {
  return static_cast<int>(std::min<std::uint64_t>(side, std::numeric_limits<int>::max()));
}

// Decodes at the smallest scale the format allows: enough to prove every byte decodes.
std::string decode_failure(const ImageInput& input, const ImageLimits& limits) {
  std::string error;
  try {
    const DecodedImage decoded = decode_bgr(input, /*min_short_side=*/1, {limits, nullptr}, &error);
    return decoded.image.empty() ? (error.empty() ? "not a decodable image" : error) : "";
  } catch (const SystemIoError&) {
    throw;
  } catch (const std::exception& e) {  // resource exhaustion (std::bad_alloc, cv::Exception)
    return std::string("decode failed: ") + e.what();
  }
}

ImageCheck shape_check(ImageCheck check, const ImageProblemLimits& limits) {
  const int shorter = std::min(check.width, check.height);
  const int longer = std::max(check.width, check.height);
  const std::string size = std::to_string(check.width) + "x" + std::to_string(check.height);
  if (shorter < limits.min_side) {
    check.problem = ImageProblem::kTooSmall;
    check.detail =
        "image is " + size + ", shorter side under " + std::to_string(limits.min_side) + " px";
  } else if (static_cast<double>(longer) > limits.max_aspect * shorter) {
    check.problem = ImageProblem::kExtremeAspect;
    check.detail = "image is " + size + ", aspect ratio " +
                   std::to_string(static_cast<double>(longer) / shorter).substr(0, 6) + " over " +
                   std::to_string(limits.max_aspect).substr(0, 6);
  }
  return check;
}

}  // namespace

std::string image_problem_name(ImageProblem problem) {
  switch (problem) {
    case ImageProblem::kNone:
      return "none";
    case ImageProblem::kUnreadable:
      return "unreadable";
    case ImageProblem::kOverPixelBudget:
      return "over_pixel_budget";
    case ImageProblem::kTooSmall:
      return "too_small";
    case ImageProblem::kExtremeAspect:
      return "extreme_aspect";
  }
  return "unknown";
}

// An image a sample source holds: its size, then the shape checks (nothing to decode).
ImageCheck check_held_image(const SampleImage& image, const ImageProblemLimits& limits) {
  ImageCheck check;
  check.width = image.width;
  check.height = image.height;
  ImageLimits any_size = limits.image;
  any_size.max_pixels = 0;
  if (std::string reason = held_image_problem(image, any_size); !reason.empty()) {
    check.problem = ImageProblem::kUnreadable;
    check.detail = std::move(reason);
    return check;
  }
  if (std::string refused = held_image_problem(image, limits.image); !refused.empty()) {
    check.problem = ImageProblem::kOverPixelBudget;
    check.detail = std::move(refused);
    return check;
  }
  return shape_check(check, limits);
}

ImageCheck check_image_file(const ImageInput& input, const ImageProblemLimits& limits) {
  if (input.image) return check_held_image(input.image, limits);
  ImageCheck check;
  const auto unreadable = [&](std::string why) {
    check.problem = ImageProblem::kUnreadable;
    check.detail = std::move(why);
    return check;
  };
  ImageLimits any_size = limits.image;
  any_size.max_pixels = 0;  // the budget is checked below, to tell it apart
  try {
    if (std::string reason = probe_image_file(input, any_size); !reason.empty()) {
      return unreadable(std::move(reason));
    }
    std::string error;
    const std::optional<ImageHeader> header = read_file_header(input, &error);
    if (!header) return unreadable(error);
    check.width = clamped_side(header->width);
    check.height = clamped_side(header->height);
    if (std::string refused = check_image_limits(*header, limits.image); !refused.empty()) {
      check.problem = ImageProblem::kOverPixelBudget;  // the only check any_size left out
      check.detail = std::move(refused);
      return check;
    }
  } catch (const SystemIoError&) {
    throw;
  } catch (const std::exception& e) {
    return unreadable(std::string("header check failed: ") + e.what());
  }
  if (std::string failure = decode_failure(input, limits.image); !failure.empty()) {
    return unreadable(std::move(failure));
  }
  return shape_check(check, limits);
}

}  // namespace ltfit
