#include "ltfit/data/auto_augment.h"

#include <array>
#include <cmath>
#include <numbers>
#include <stdexcept>

#include <ATen/CPUGeneratorImpl.h>
#include <c10/util/ParallelGuard.h>
#include <torch/nn/functional/conv.h>
#include <torch/nn/functional/padding.h>
#include <torch/nn/functional/vision.h>

namespace ltfit {
namespace {

namespace F = torch::nn::functional;

// Python's math.radians and math.degrees: one multiplication by the same constant.
double to_radians(double degrees) { return degrees * (std::numbers::pi / 180.0); }
double to_degrees(double radians) { return radians * (180.0 / std::numbers::pi); }

// torchvision's _get_inverse_affine_matrix(center, angle, translate, scale=1, shear), inverted.
std::array<double, 6> inverse_affine_matrix(std::array<double, 2> center, double angle,
                                            std::array<double, 2> translate,
                                            std::array<double, 2> shear) {
  const double rot = to_radians(angle);
  const double sx = to_radians(shear[0]);
  const double sy = to_radians(shear[1]);
  const auto [cx, cy] = center;
  const auto [tx, ty] = translate;
  const double a = std::cos(rot - sy) / std::cos(sy);
  const double b = -std::cos(rot - sy) * std::tan(sx) / std::cos(sy) - std::sin(rot);
  const double c = std::sin(rot - sy) / std::cos(sy);
  const double d = -std::sin(rot - sy) * std::tan(sx) / std::cos(sy) + std::cos(rot);
  std::array<double, 6> m = {d, -b, 0.0, -c, a, 0.0};  // torchvision's `x / scale`, scale 1
  m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty);
  m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty);
  m[2] += cx;
  m[5] += cy;
  return m;
}

// torchvision's _gen_affine_grid(theta, w, h, ow=w, oh=h), float32.
torch::Tensor affine_grid(const std::array<double, 6>& matrix, std::int64_t w, std::int64_t h) {
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat32);
  const torch::Tensor theta =
      torch::tensor(std::vector<double>(matrix.begin(), matrix.end()), torch::kFloat64)
          .to(torch::kFloat32)
          .reshape({1, 2, 3});
  const double half = 0.5;
  torch::Tensor base = torch::empty({1, h, w, 3}, f32);
  base.select(-1, 0).copy_(torch::linspace(-w * 0.5 + half, w * 0.5 + half - 1, w, f32));
  base.select(-1, 1).copy_(
      torch::linspace(-h * 0.5 + half, h * 0.5 + half - 1, h, f32).unsqueeze_(-1));
  base.select(-1, 2).fill_(1);
  const torch::Tensor scale =
      torch::tensor(std::vector<double>{0.5 * static_cast<double>(w), 0.5 * static_cast<double>(h)},
                    torch::kFloat64)
          .to(torch::kFloat32);
  const torch::Tensor rescaled = theta.transpose(1, 2) / scale;
  return base.view({1, h * w, 3}).bmm(rescaled).view({1, h, w, 2});
}

// torchvision's F_t.affine / F_t.rotate (same size) with NEAREST and no fill: grid_sample of the
// float image, zeros outside, rounded back to uint8.
torch::Tensor warp(const torch::Tensor& image, const std::array<double, 6>& matrix) {
  const std::int64_t h = image.size(-2), w = image.size(-1);
  const torch::Tensor grid = affine_grid(matrix, w, h);
  torch::Tensor sampled = F::grid_sample(image.unsqueeze(0).to(torch::kFloat32), grid,
                                         F::GridSampleFuncOptions()
                                             .mode(torch::kNearest)
                                             .padding_mode(torch::kZeros)
                                             .align_corners(false));
  return torch::round(sampled.squeeze(0)).to(torch::kUInt8);
}

// torchvision's _blend(img1, img2, ratio) for uint8 img1.
torch::Tensor blend(const torch::Tensor& img1, const torch::Tensor& img2, double ratio) {
  return (img1 * ratio + img2 * (1.0 - ratio)).clamp(0, 255).to(torch::kUInt8);
}

// torchvision's rgb_to_grayscale (one output channel) for uint8 [3,H,W] or [1,H,W].
torch::Tensor grayscale(const torch::Tensor& image) {
  if (image.size(-3) != 3) return image.clone();
  const std::vector<torch::Tensor> rgb = image.unbind(-3);
  return (rgb[0] * 0.2989 + rgb[1] * 0.587 + rgb[2] * 0.114).to(torch::kUInt8).unsqueeze(-3);
}

torch::Tensor adjust_contrast(const torch::Tensor& image, double factor) {
  const torch::Tensor mean =
      torch::mean(grayscale(image).to(torch::kFloat32), {-3, -2, -1}, /*keepdim=*/true);
  return blend(image, mean, factor);
}

// torchvision's adjust_sharpness: blend with the 3x3 smoothed image (centre weight 5 of 13;
// the border rows and columns stay as they are).
torch::Tensor adjust_sharpness(const torch::Tensor& image, double factor) {
  if (image.size(-1) <= 2 || image.size(-2) <= 2) return image;
  torch::Tensor kernel = torch::ones({3, 3}, torch::kFloat32);
  kernel[1][1] = 5.0;
  kernel /= kernel.sum();
  kernel = kernel.expand({image.size(-3), 1, 3, 3});
  torch::Tensor smoothed = F::conv2d(image.unsqueeze(0).to(torch::kFloat32), kernel,
                                     F::Conv2dFuncOptions().groups(image.size(-3)));
  smoothed = torch::round(smoothed.squeeze(0)).to(torch::kUInt8);
  torch::Tensor degenerate = image.clone();
  using torch::indexing::Ellipsis;
  using torch::indexing::Slice;
  degenerate.index_put_({Ellipsis, Slice(1, -1), Slice(1, -1)}, smoothed);
  return blend(image, degenerate, factor);
}

torch::Tensor posterize(const torch::Tensor& image, std::int64_t bits) {
  // torchvision's `img & -2**(8 - bits)`: the low 8 - bits bits cleared.
  return image.bitwise_and(256 - (std::int64_t{1} << (8 - bits)));
}

torch::Tensor solarize(const torch::Tensor& image, double threshold) {
  return torch::where(image >= threshold, 255 - image, image);
}

torch::Tensor autocontrast(const torch::Tensor& image) {
  torch::Tensor minimum = image.amin({-2, -1}, /*keepdim=*/true).to(torch::kFloat32);
  const torch::Tensor maximum = image.amax({-2, -1}, /*keepdim=*/true).to(torch::kFloat32);
  torch::Tensor scale = (maximum - minimum).reciprocal() * 255;  // Python's 255 / tensor
  const torch::Tensor flat = torch::isfinite(scale).logical_not();
  minimum.index_put_({flat}, 0);
  scale.index_put_({flat}, 1);
  return ((image - minimum) * scale).clamp(0, 255).to(torch::kUInt8);
}

// torchvision's _scale_channel: histogram equalization of one uint8 channel.
torch::Tensor equalize_channel(const torch::Tensor& channel) {
  const torch::Tensor hist = torch::bincount(channel.reshape(-1), {}, 256);
  const torch::Tensor nonzero = hist.index({hist != 0});
  const torch::Tensor step =
      torch::div(nonzero.slice(0, 0, nonzero.size(0) - 1).sum(), 255, "floor");
  if (step.item<std::int64_t>() == 0) return channel;
  torch::Tensor lut =
      torch::div(torch::cumsum(hist, 0) + torch::div(step, 2, "floor"), step, "floor");
  lut = F::pad(lut, F::PadFuncOptions({1, 0})).slice(0, 0, -1).clamp(0, 255);
  return lut.index({channel.to(torch::kInt64)}).to(torch::kUInt8);
}

torch::Tensor equalize(const torch::Tensor& image) {
  std::vector<torch::Tensor> channels;
  for (std::int64_t c = 0; c < image.size(0); ++c) channels.push_back(equalize_channel(image[c]));
  return torch::stack(channels);
}

torch::Tensor shear(const torch::Tensor& image, double magnitude, bool along_x) {
  const double w = static_cast<double>(image.size(-1)), h = static_cast<double>(image.size(-2));
  const double degrees = to_degrees(std::atan(magnitude));
  // center=[0, 0] in pixels is the top-left corner: (0 - w/2, 0 - h/2) from the image centre.
  const std::array<double, 2> center = {1.0 * (0 - w * 0.5), 1.0 * (0 - h * 0.5)};
  const std::array<double, 2> angles =
      along_x ? std::array<double, 2>{degrees, 0.0} : std::array<double, 2>{0.0, degrees};
  return warp(image, inverse_affine_matrix(center, 0.0, {0.0, 0.0}, angles));
}

torch::Tensor translate(const torch::Tensor& image, double magnitude, bool along_x) {
  const double pixels = 1.0 * static_cast<double>(static_cast<std::int64_t>(magnitude));
  const std::array<double, 2> offset =
      along_x ? std::array<double, 2>{pixels, 0.0} : std::array<double, 2>{0.0, pixels};
  return warp(image, inverse_affine_matrix({0.0, 0.0}, 0.0, offset, {0.0, 0.0}));
}

torch::Tensor rotate(const torch::Tensor& image, double degrees) {
  // F.rotate passes -angle: affine and rotate turn opposite ways in torchvision.
  return warp(image, inverse_affine_matrix({0.0, 0.0}, -degrees, {0.0, 0.0}, {0.0, 0.0}));
}

// The float32 magnitude table of torchvision's augmentation space, element `bin`.
double linspace_bin(double start, double end, int bin) {
  return static_cast<double>(
      torch::linspace(start, end, kAugmentMagnitudeBins, torch::kFloat32)[bin].item<float>());
}

double posterize_bits(int bin, double bins_per_bit) {
  const torch::Tensor bits =
      8 - (torch::arange(kAugmentMagnitudeBins) / bins_per_bit).round().to(torch::kInt32);
  return static_cast<double>(bits[bin].item<std::int32_t>());
}

bool has_magnitudes(AugmentOp op) {
  return op != AugmentOp::kIdentity && op != AugmentOp::kAutoContrast && op != AugmentOp::kEqualize;
}

std::int64_t draw_below(std::int64_t high, at::Generator& generator) {
  return torch::randint(high, {1}, generator, torch::kLong).item<std::int64_t>();
}

}  // namespace

bool augment_op_signed(AugmentOp op) {
  switch (op) {
    case AugmentOp::kShearX:
    case AugmentOp::kShearY:
    case AugmentOp::kTranslateX:
    case AugmentOp::kTranslateY:
    case AugmentOp::kRotate:
    case AugmentOp::kBrightness:
    case AugmentOp::kColor:
    case AugmentOp::kContrast:
    case AugmentOp::kSharpness:
      return true;
    default:
      return false;
  }
}

const std::string& augment_op_name(AugmentOp op) {
  static const std::array<std::string, kAugmentOpCount> names = {
      "Identity", "ShearX",   "ShearY",    "TranslateX", "TranslateY", "Rotate",       "Brightness",
      "Color",    "Contrast", "Sharpness", "Posterize",  "Solarize",   "AutoContrast", "Equalize"};
  return names.at(static_cast<std::size_t>(op));
}

double augment_magnitude(AugmentPolicy policy, AugmentOp op, int bin, std::int64_t height,
                         std::int64_t width) {
  if (bin < 0 || bin >= kAugmentMagnitudeBins) {
    throw std::invalid_argument("augment magnitude bin " + std::to_string(bin) + " is outside 0.." +
                                std::to_string(kAugmentMagnitudeBins - 1));
  }
  const bool wide = policy == AugmentPolicy::kTrivialAugment;
  switch (op) {
    case AugmentOp::kShearX:
    case AugmentOp::kShearY:
      return linspace_bin(0.0, wide ? 0.99 : 0.3, bin);
    case AugmentOp::kTranslateX:
      return linspace_bin(0.0, wide ? 32.0 : 150.0 / 331.0 * static_cast<double>(width), bin);
    case AugmentOp::kTranslateY:
      return linspace_bin(0.0, wide ? 32.0 : 150.0 / 331.0 * static_cast<double>(height), bin);
    case AugmentOp::kRotate:
      return linspace_bin(0.0, wide ? 135.0 : 30.0, bin);
    case AugmentOp::kBrightness:
    case AugmentOp::kColor:
    case AugmentOp::kContrast:
    case AugmentOp::kSharpness:
      return linspace_bin(0.0, wide ? 0.99 : 0.9, bin);
    case AugmentOp::kPosterize:
      return posterize_bits(bin, (kAugmentMagnitudeBins - 1) / (wide ? 6.0 : 4.0));
    case AugmentOp::kSolarize:
      return linspace_bin(255.0, 0.0, bin);
    default:
      return 0.0;
  }
}

std::vector<AugmentOpDraw> draw_augment_policy(AugmentPolicy policy,
                                               const RandAugmentConfig& config, std::int64_t height,
                                               std::int64_t width, at::Generator& generator) {
  std::vector<AugmentOpDraw> draws;
  const int count = policy == AugmentPolicy::kRandAugment      ? config.num_ops
                    : policy == AugmentPolicy::kTrivialAugment ? 1
                                                               : 0;
  for (int i = 0; i < count; ++i) {
    AugmentOpDraw draw;
    draw.op = static_cast<AugmentOp>(draw_below(kAugmentOpCount, generator));
    if (has_magnitudes(draw.op)) {
      const int bin = policy == AugmentPolicy::kRandAugment
                          ? config.magnitude
                          : static_cast<int>(draw_below(kAugmentMagnitudeBins, generator));
      draw.magnitude = augment_magnitude(policy, draw.op, bin, height, width);
    }
    if (augment_op_signed(draw.op) && draw_below(2, generator) != 0) draw.magnitude *= -1.0;
    draws.push_back(draw);
  }
  return draws;
}

torch::Tensor apply_augment_op(const torch::Tensor& image, const AugmentOpDraw& draw) {
  if (image.dim() != 3 || image.scalar_type() != torch::kUInt8 ||
      (image.size(0) != 1 && image.size(0) != 3)) {
    throw std::invalid_argument("apply_augment_op takes a uint8 [C,H,W] image with C 1 or 3");
  }
  c10::ParallelGuard serial(true);  // ATen's loops run in this thread, in one fixed order
  const double m = draw.magnitude;
  switch (draw.op) {
    case AugmentOp::kIdentity:
      return image;  // as torchvision's: the same tensor (the ops never write to their input)
    case AugmentOp::kShearX:
    case AugmentOp::kShearY:
      return shear(image, m, draw.op == AugmentOp::kShearX);
    case AugmentOp::kTranslateX:
    case AugmentOp::kTranslateY:
      return translate(image, m, draw.op == AugmentOp::kTranslateX);
    case AugmentOp::kRotate:
      return rotate(image, m);
    case AugmentOp::kBrightness:
      return blend(image, torch::zeros_like(image), 1.0 + m);
    case AugmentOp::kColor:
      return image.size(0) == 1 ? image : blend(image, grayscale(image), 1.0 + m);
    case AugmentOp::kContrast:
      return adjust_contrast(image, 1.0 + m);
    case AugmentOp::kSharpness:
      return adjust_sharpness(image, 1.0 + m);
    case AugmentOp::kPosterize:
      return posterize(image, static_cast<std::int64_t>(m));
    case AugmentOp::kSolarize:
      return solarize(image, m);
    case AugmentOp::kAutoContrast:
      return autocontrast(image);
    case AugmentOp::kEqualize:
      return equalize(image);
  }
  throw std::invalid_argument("unknown augment op");
}

torch::Tensor apply_augment_policy(const torch::Tensor& hwc_image, AugmentPolicy policy,
                                   const RandAugmentConfig& config, std::uint64_t seed) {
  if (policy == AugmentPolicy::kNone) return hwc_image;
  at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  torch::Tensor image = hwc_image.permute({2, 0, 1});
  for (const AugmentOpDraw& draw :
       draw_augment_policy(policy, config, image.size(1), image.size(2), generator)) {
    image = apply_augment_op(image, draw);
  }
  return image.permute({1, 2, 0}).contiguous();
}

}  // namespace ltfit
