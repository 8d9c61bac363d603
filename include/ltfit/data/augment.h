// fastai v1's get_transforms() training augmentation, as a random draw plus a pure operator.
//
// The randomness (draw_augment) is separate from the operator (load_augmented_image): a draw is
// a pure function of (config, seed), so the same seed gives the same image whatever thread runs
// it. All geometric steps (random crop of the shorter-side square, horizontal flip, rotation,
// zoom toward a random point, symmetric perspective warp) compose into ONE 3x3 matrix, applied
// in a single bilinear resampling pass straight to the output size with reflection padding.
// Lighting (brightness in logit space, then contrast, as fastai's LightingTfm) is one 256-entry
// lookup table. Thread-safe: no shared state.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include <torch/types.h>

#include "ltfit/config/config.h"
#include "ltfit/data/decode_budget.h"
#include "ltfit/data/image_header.h"
#include "ltfit/data/sample.h"

namespace ltfit {

class DecodedImageCache;  // ltfit/data/decode_cache.h

// One sample's augmentation. The defaults are the identity on a centre crop.
struct AugmentParams {
  double crop_row_pct = 0.5;  // crop window position along y in [0,1] (0.5 = centre)
  double crop_col_pct = 0.5;  // crop window position along x in [0,1]
  bool flip = false;          // mirror horizontally
  double rotate_degrees = 0;  // rotation, degrees (fastai: uniform ±max_rotate, p_affine)
  double zoom = 1.0;          // zoom factor >= 1 (fastai: uniform [1, max_zoom], p_affine)
  double zoom_row_pct = 0.5;  // zoom centre along y in [0,1]
  double zoom_col_pct = 0.5;  // zoom centre along x in [0,1]
  std::array<double, 4> warp = {0, 0, 0, 0};  // symmetric warp magnitudes, each ±max_warp
  double brightness = 0.5;                    // fastai's `change` in (0,1); 0.5 = unchanged
  double contrast = 1.0;  // fastai's contrast scale (log-uniform in [1-l, 1/(1-l)])
  // The largest zoom the draws can have (the config's max_zoom): the JPEG decode scale is chosen
  // for it, not for this draw's zoom, so an image decodes at the same scale every epoch (and
  // data.cache: ram finds it). Not part of the geometry.
  double decode_zoom = 1.0;
};

// `params` with only its crop position kept: no flip, rotation, zoom, warp or lighting (the
// loader's part when data.augment.on is device).
AugmentParams crop_only(const AugmentParams& params);

// Draws one sample's parameters per fastai's get_transforms() and `config`.
AugmentParams draw_augment(const AugmentConfig& config, std::uint64_t seed);

// Row-major 3x3 matrix mapping an output pixel (x, y, 1) of the size x size result to source
// pixel coordinates in an image of src_width x src_height (homogeneous; divide by the third).
std::array<double, 9> sampling_matrix(const AugmentParams& params, int src_width, int src_height,
                                      int size);

// The lighting lookup table: out = 255 * sigmoid((logit(v/255) + logit(brightness)) * contrast).
std::array<std::uint8_t, 256> lighting_lut(const AugmentParams& params);

// Decodes `input` (a file, reduced-scale JPEG decode when possible, or pixels a sample holds) and
// applies `params` in one pass.
// Returns uint8 [size,size,3] RGB, or nullopt with `error` set; never throws for a bad file (the
// system's failures throw, as image_io.h says). The file must
// pass `limits` (data.max_pixels, data.formats) before it is decoded; the decode holds its
// estimated memory from `budget` (nullptr: the process-wide default_decode_budget()); with `cache`
// (data.cache: ram), the decoded image is looked up there first and kept there (decode_cache.h).
std::optional<torch::Tensor> load_augmented_image(const ImageInput& input, int size,
                                                  const AugmentParams& params, std::string* error,
                                                  const ImageLimits& limits = {},
                                                  DecodeBudget* budget = nullptr,
                                                  DecodedImageCache* cache = nullptr);

}  // namespace ltfit
