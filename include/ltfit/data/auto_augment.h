// RandAugment and TrivialAugmentWide as torchvision 0.29 computes them on uint8 tensors
// (transforms/autoaugment.py with its defaults: 31 magnitude bins, nearest interpolation, no
// fill, so uncovered pixels are 0), on the final-size training image after fastai's transforms.
//
// The draws (which ops, which magnitudes, which signs) come from a torch CPU generator seeded per
// image, in torchvision's order, so given the seed they are the very numbers torchvision draws
// after torch.manual_seed; each op is the same sequence of ATen operations as torchvision's
// functional tensor code, so the pixels are equal too (tests/data/auto_augment_oracle.py checks
// all 14 ops at several magnitudes and both policies against torchvision itself). The ATen calls
// run serially in the calling thread (the loader's workers are the parallelism), which also makes
// their float reductions (contrast's mean) independent of the thread count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Generator.h>
#include <torch/types.h>

#include "ltfit/config/config.h"

namespace ltfit {

// torchvision's ops, in the order of its augmentation spaces (the order the op index draws).
enum class AugmentOp {
  kIdentity,
  kShearX,
  kShearY,
  kTranslateX,
  kTranslateY,
  kRotate,
  kBrightness,
  kColor,
  kContrast,
  kSharpness,
  kPosterize,
  kSolarize,
  kAutoContrast,
  kEqualize,
};
inline constexpr int kAugmentOpCount = 14;
inline constexpr int kAugmentMagnitudeBins = 31;  // torchvision's num_magnitude_bins default

// torchvision's name of `op` ("ShearX", ...).
const std::string& augment_op_name(AugmentOp op);

// Whether the policies draw a sign for `op`'s magnitude (the geometric and the blending ops).
bool augment_op_signed(AugmentOp op);

// One op with its signed magnitude, as torchvision's _apply_op takes them.
struct AugmentOpDraw {
  AugmentOp op = AugmentOp::kIdentity;
  double magnitude = 0.0;

  bool operator==(const AugmentOpDraw&) const = default;
};

// Bin `bin` (0..30) of `op`'s magnitudes under `policy` (rand_augment or trivial_augment) for an
// image of height x width, unsigned, exactly as torchvision's float32 table holds it; 0 for the
// ops without magnitudes.
double augment_magnitude(AugmentPolicy policy, AugmentOp op, int bin, std::int64_t height,
                         std::int64_t width);

// The ops `policy` applies to one height x width image, drawn from `generator` in
// torchvision's order (RandAugment: config.num_ops times op index, then a sign for signed ops;
// TrivialAugmentWide: op index, magnitude bin, sign). Empty for AugmentPolicy::kNone.
std::vector<AugmentOpDraw> draw_augment_policy(AugmentPolicy policy,
                                               const RandAugmentConfig& config, std::int64_t height,
                                               std::int64_t width, at::Generator& generator);

// torchvision's _apply_op(img, op, magnitude, NEAREST, fill=None) on a uint8 [C,H,W] image
// (C 1 or 3); returns uint8 [C,H,W] (the image itself where the op leaves it, as torchvision
// does; no op writes to its input). Throws std::invalid_argument on another shape or dtype.
torch::Tensor apply_augment_op(const torch::Tensor& image, const AugmentOpDraw& draw);

// data.augment.policy on one uint8 [H,W,C] image (the loader's layout), with the draws of a torch
// CPU generator seeded with `seed` (below 2^63, as torch.manual_seed takes it). Returns a new
// contiguous uint8 [H,W,C] tensor; the image itself for AugmentPolicy::kNone.
torch::Tensor apply_augment_policy(const torch::Tensor& hwc_image, AugmentPolicy policy,
                                   const RandAugmentConfig& config, std::uint64_t seed);

}  // namespace ltfit
