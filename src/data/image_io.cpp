// Decoding one image file into a square RGB uint8 tensor with OpenCV.
//
// Decoding (truncation checks, reduced-scale JPEG decode when the crop still has at least `size`
// pixels, EXIF orientation) lives in decode.h, shared with the training augmentation. Grey,
// 16-bit and RGBA files come out as 8-bit RGB. Never throws for a bad file: its failure becomes
// nullopt plus a reason (the system's failures throw: image_io.h). Thread-safe.
#include "ltfit/data/image_io.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include <torch/torch.h>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "data/decode.h"
#include "data/pil_resample.h"

namespace ltfit {
namespace {

constexpr int kMaxDecodedOutputSize = 1 << 14;

double clamped_fraction(double value) {
  return std::isfinite(value) ? std::clamp(value, 0.0, 1.0) : 0.5;
}

// The window of an image of `image` size described by `crop`: a square of the shorter side
// (crop) or the longer (pad: it extends past the image, its offsets may be negative), or the
// whole image (squish).
cv::Rect crop_rect(cv::Size image, const CropFlip& crop) {
  if (crop.framing.method == ResizeMethod::kSquish) return {0, 0, image.width, image.height};
  const bool pad = crop.framing.method == ResizeMethod::kPad;
  const int full = pad ? std::max(image.height, image.width) : std::min(image.height, image.width);
  const double scale = std::clamp(crop.scale, 0.0, 1.0);
  const int side = std::clamp(static_cast<int>(std::lround(scale * full)), 1, full);
  // pad: fastai's int(pct * (side - window)), toward zero; crop: rounded, as ltfit always has.
  const auto place = [pad](double fraction, int free) {
    const double at = clamped_fraction(fraction) * free;
    return static_cast<int>(pad ? std::trunc(at) : std::round(at));
  };
  return {place(crop.offset_x, image.width - side), place(crop.offset_y, image.height - side), side,
          side};
}

// A square BGR image converted to RGB straight into a new [size,size,3] uint8 tensor.
torch::Tensor rgb_tensor(const cv::Mat& bgr) {
  const int size = bgr.rows;
  torch::Tensor out = torch::empty({size, size, 3}, torch::kUInt8);
  cv::Mat rgb(size, size, CV_8UC3, out.data_ptr<std::uint8_t>());
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  if (rgb.data != out.data_ptr<std::uint8_t>()) {  // OpenCV reallocated: copy it over
    std::memcpy(out.data_ptr<std::uint8_t>(), rgb.data, static_cast<size_t>(size) * size * 3);
  }
  return out;
}

// `region` resized to `size` (width × height) with area filtering when it shrinks both ways.
cv::Mat resized_to(const cv::Mat& region, cv::Size size) {
  cv::Mat resized;
  const bool shrinks = region.cols > size.width && region.rows > size.height;
  const int interpolation = shrinks ? cv::INTER_AREA : cv::INTER_LINEAR;
  cv::resize(region, resized, size, 0, 0, interpolation);
  return resized;
}

// The part of the window `wanted` inside the image (`inside`), resized by size / wanted's side
// and bordered by `mode` to size × size: the window resized, its outside filled as fastai's pad
// fills it, without ever holding the padded window at full size.
cv::Mat padded_to(const cv::Mat& inside, cv::Rect wanted, cv::Rect inside_rect, int size,
                  PadMode mode) {
  const double s = static_cast<double>(size) / wanted.width;
  const auto edge = [s, size](double at) {
    return static_cast<int>(std::clamp(std::lround(at * s), 0L, static_cast<long>(size)));
  };
  const int left = edge(inside_rect.x - wanted.x), top = edge(inside_rect.y - wanted.y);
  const int width = std::max(1, edge(inside_rect.br().x - wanted.x) - left);
  const int height = std::max(1, edge(inside_rect.br().y - wanted.y) - top);
  const int x = std::min(left, size - width), y = std::min(top, size - height);
  cv::Mat out;
  cv::copyMakeBorder(resized_to(inside, {width, height}), out, y, size - height - y, x,
                     size - width - x, opencv_border(mode), cv::Scalar::all(0));
  return out;
}

// Frames (crop, squish or pad), resizes, flips and converts BGR→RGB. [size,size,3] uint8.
torch::Tensor to_square_rgb(const DecodedImage& decoded, int size, const CropFlip& crop) {
  const cv::Rect wanted = crop_rect(decoded.whole, crop);
  const cv::Rect inside = wanted & cv::Rect({0, 0}, decoded.whole);
  const cv::Mat region = decoded.image(inside - decoded.region.tl());
  cv::Mat resized = inside == wanted ? resized_to(region, {size, size})
                                     : padded_to(region, wanted, inside, size, crop.framing.pad);
  if (crop.flip) {
    cv::Mat mirrored;
    cv::flip(resized, mirrored, 1);
    resized = mirrored;
  }
  return rgb_tensor(resized);
}

}  // namespace

std::optional<torch::Tensor> load_square_image(const ImageInput& input, int size,
                                               const CropFlip& crop, std::string* error,
                                               const ImageLimits& limits, DecodeBudget* budget,
                                               DecodedImageCache* cache) {
  return run_never_throwing("decode", error, [&](std::string& reason) {
    std::optional<torch::Tensor> result;
    if (size <= 0 || size > kMaxDecodedOutputSize) {
      reason = "invalid output size " + std::to_string(size);
    } else if (!(crop.scale > 0.0)) {
      reason = "invalid crop scale " + std::to_string(crop.scale);
    } else {
      // A reduced decode must keep at least `size` pixels across the crop, which alone is
      // decoded.
      const DecodeRequest request{size / std::min(crop.scale, 1.0), [&crop](cv::Size whole) {
                                    return crop_rect(whole, crop) & cv::Rect({0, 0}, whole);
                                  }};
      const DecodedImage decoded =
          decode_bgr_cached(input, request, {limits, budget}, cache, &reason);
      if (!decoded.image.empty()) result = to_square_rgb(decoded, size, crop);
    }
    return result;
  });
}

int opencv_border(PadMode mode) {
  switch (mode) {
    case PadMode::kZeros:
      return cv::BORDER_CONSTANT;
    case PadMode::kBorder:
      return cv::BORDER_REPLICATE;
    case PadMode::kReflection:
      break;
  }
  return cv::BORDER_REFLECT_101;
}

ResampleFilter resample_filter_named(const std::string& name) {
  if (name == "bilinear") return ResampleFilter::kBilinear;
  if (name == "bicubic") return ResampleFilter::kBicubic;
  throw std::invalid_argument("unknown resample filter '" + name +
                              "' (expected bilinear or bicubic)");
}

std::optional<torch::Tensor> load_eval_image(const ImageInput& input,
                                             const EvalTransform& transform, std::string* error,
                                             const ImageLimits& limits, DecodeBudget* budget) {
  return run_never_throwing("decode", error, [&](std::string& reason) {
    std::optional<torch::Tensor> result;
    if (transform.crop <= 0 || transform.resize < transform.crop ||
        transform.resize > kMaxDecodedOutputSize) {
      reason = "invalid eval transform: resize " + std::to_string(transform.resize) + ", crop " +
               std::to_string(transform.crop);
      return result;
    }
    const DecodedImage decoded = decode_bgr(input, /*min_short_side=*/0, {limits, budget}, &reason);
    if (decoded.image.empty()) return result;
    const cv::Size resized = torchvision_resize_size(decoded.image.size(), transform.resize);
    if (resized.empty()) {
      reason = "image is " + std::to_string(decoded.image.cols) + "×" +
               std::to_string(decoded.image.rows) + ", too elongated to resize to " +
               std::to_string(transform.resize) + " px on its shorter side";
      return result;
    }
    const cv::Rect window = torchvision_center_crop(resized, transform.crop);
    result = rgb_tensor(pil_resize_window(decoded.image, resized, window, transform.filter));
    return result;
  });
}

}  // namespace ltfit
