// fastai v2's batch augmentation (aug_transforms: flip, warp, rotate, zoom, brightness,
// contrast) on a whole batch, on whatever device the batch is on.
//
// As fastai v2 composes them (setup_aug_tfms): one affine matrix per image, flip @ rotate @
// zoom, corrected for the aspect ratio (_prepare_mat), turned into a sampling grid by
// affine_grid (align_corners), the grid bent by the perspective warp (find_coeffs, solved per
// image, then apply_perspective), one grid_sample (bilinear, reflection padding), after an area
// downsampling of the input when it is more than twice the output and the zoom does not need it
// (fastai's _grid_sample); then lighting in logit space, sigmoid((logit(x) + logit(brightness))
// * contrast). The randomness is separate (draw_batch_augment, ltfit's own seeded draws with
// fastai's distributions and probabilities), so the operator can be checked against fastai's
// functions given the same values (tests/data/batch_augment_oracle.py).
#pragma once

#include <cstdint>

#include <torch/types.h>

#include "ltfit/config/config.h"

namespace ltfit {

// One batch's draws, each a float32 [N] tensor on the CPU; the neutral value of each (the
// transform not applied to that image) in brackets.
struct BatchAugmentDraw {
  torch::Tensor flip;      // 1 mirrors the image left-right (0)
  torch::Tensor rotate;    // degrees (0)
  torch::Tensor zoom;      // scale >= 1 (1)
  torch::Tensor zoom_col;  // the zoom's centre across, in [0, 1] (any)
  torch::Tensor zoom_row;  // and down
  torch::Tensor warp_x;    // perspective warp magnitudes, each in ±max_warp (0)
  torch::Tensor warp_y;
  torch::Tensor brightness;  // fastai's `change` in (0, 1) (0.5)
  torch::Tensor contrast;    // fastai's contrast scale (1)
};

// Draws for `n` images from `seed`, as aug_transforms draws them: flip with p 0.5 (config.flip);
// warp x and warp y each with p_affine, uniform in ±max_warp; rotation with p_affine, uniform in
// ±max_rotate; zoom with p_affine, uniform in [1, max_zoom], centre uniform; brightness with
// p_lighting, uniform in 0.5 ± max_lighting / 2; contrast with p_lighting, exp of uniform in
// ±log(1 - max_lighting). Image i's values depend only on (seed, i).
BatchAugmentDraw draw_batch_augment(const AugmentConfig& config, std::int64_t n,
                                    std::uint64_t seed);

// `images` (float [N, C, H, W] in [0, 1], any device) augmented by `draw` to [N, C, size, size],
// on the same device. Throws std::invalid_argument when the shapes do not match.
torch::Tensor augment_batch(const torch::Tensor& images, const BatchAugmentDraw& draw, int size);

}  // namespace ltfit
