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
#include "ltfit/data/image_io.h"
#include "ltfit/data/sample.h"

namespace ltfit {

class DecodedImageCache;  // ltfit/data/decode_cache.h

// data.augment.crop random_resized: what a RandomResizedCrop box is drawn from.
struct ResizedCropDraw {
  std::uint64_t seed = 0;  // torch.manual_seed's (below 2^63)
  std::array<double, 2> scale = {0.08, 1.0};
  std::array<double, 2> ratio = {0.75, 4.0 / 3.0};
};

// A box of whole pixels: x, y its top-left corner.
struct PixelBox {
  int x = 0, y = 0, width = 0, height = 0;
};

// torchvision's RandomResizedCrop.get_params(img, scale, ratio) for an image of width × height
// after torch.manual_seed(draw.seed): up to 10 tries of an area fraction (uniform in scale) and a
// log-uniform aspect ratio, the same float32 draws from LibTorch's CPU generator, Python's
// rounding, then the central fallback. The box lies inside the image. width, height >= 1.
PixelBox random_resized_box(const ResizedCropDraw& draw, int width, int height);

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
  // The window the output is drawn from (data.resize_method) and the fill outside the image
  // (data.pad_mode: also the warps' border).
  Framing framing;
  // data.augment.crop random_resized: the window is random_resized_box(*resized_crop, ...), not
  // the framing's at the crop position. With no rotation, zoom or warp drawn, it is resized as
  // torchvision resizes it (Pillow's antialiased bilinear, from the full-size decode).
  std::optional<ResizedCropDraw> resized_crop;
};

// `params` with only its crop position kept: no flip, rotation, zoom, warp or lighting (the
// loader's part when data.augment.on is device).
AugmentParams crop_only(const AugmentParams& params);

// Draws one sample's parameters per fastai's get_transforms() and `config`, framed by `framing`
// (data.resize_method, data.pad_mode).
AugmentParams draw_augment(const AugmentConfig& config, std::uint64_t seed,
                           const Framing& framing = {});

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
