// Decoding image files into RGB tensors ready for batching. Only src/data uses OpenCV.
//
// decode_* never throw for a bad image: they return std::nullopt and fill `error` with the
// reason, so the loader can skip, count and name it. A failure of the system's is no bad image:
// an open or read failing with EMFILE, ENFILE, ENOMEM, EIO (...) is retried and then throws a
// RuntimeError (exit 5) naming the file and the cause, and std::bad_alloc passes through.
// Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <torch/types.h>

#include "ltfit/config/config_enums.h"
#include "ltfit/data/decode_budget.h"
#include "ltfit/data/image_header.h"
#include "ltfit/data/sample.h"

namespace ltfit {

class DecodedImageCache;  // ltfit/data/decode_cache.h

// How an image becomes a square (data.resize_method, data.pad_mode: fastai's Resize).
struct Framing {
  ResizeMethod method = ResizeMethod::kCrop;
  PadMode pad = PadMode::kReflection;
};

// The OpenCV border mode of `mode`: reflection REFLECT_101, zeros CONSTANT (0), border REPLICATE.
int opencv_border(PadMode mode);

// Geometry of one sample's square: the window `framing` names, scaled and placed.
struct CropFlip {
  double scale = 1.0;     // window side as a fraction of its full side, (0, 1] (crop, pad)
  double offset_x = 0.5;  // window position along x in [0,1] of the free range (crop, pad)
  double offset_y = 0.5;  // same along y
  bool flip = false;      // mirror horizontally
  Framing framing;        // crop: the shorter side's square; squish: the image; pad: the longer's
};

// Decodes `input` (a file, or pixels a sample holds) to RGB, takes the window described by
// `crop` (at scale 1 and offsets 0.5: the centred square of the shorter side for crop, the whole
// image for squish, the centred square of the longer side for pad, the outside filled by its pad
// mode), resizes it to size×size with area/bilinear filtering. Returns uint8 [size,size,3] RGB,
// or nullopt with `error` set. The
// file must pass `limits` (data.max_pixels, data.formats) before it is decoded; the decode holds
// its estimated memory from `budget` (nullptr: the process-wide default_decode_budget()); with
// `cache` (data.cache: ram), the decoded image is looked up there first and kept there
// (decode_cache.h).
std::optional<torch::Tensor> load_square_image(const ImageInput& input, int size,
                                               const CropFlip& crop, std::string* error,
                                               const ImageLimits& limits = {},
                                               DecodeBudget* budget = nullptr,
                                               DecodedImageCache* cache = nullptr);

// The filter of torchvision's eval Resize (the registry's "bilinear" or "bicubic"), applied as
// Pillow applies it to 8-bit images: antialiased, in fixed point, horizontal pass first.
enum class ResampleFilter { kBilinear, kBicubic };

// "bilinear" or "bicubic"; std::invalid_argument for any other name.
ResampleFilter resample_filter_named(const std::string& name);

// torchvision's eval transform of its ImageNet weights, on a PIL image: Resize(resize) (the
// shorter side to `resize` px, the longer to int(resize * long / short)) with `filter`, then
// CenterCrop(crop) (offsets int(round((side - crop) / 2.0)), Python's round: half to even).
struct EvalTransform {
  int resize = 256;
  int crop = 224;  // at most resize
  ResampleFilter filter = ResampleFilter::kBilinear;
};

// Decodes `input` at full size (no reduced JPEG decode) and applies `transform`: uint8
// [crop,crop,3] RGB, byte for byte what torchvision's transform gives on the same decoded pixels
// (only the crop window is computed). Unlike torchvision's ImageFolder, EXIF orientation is
// applied first. nullopt with `error` set for a bad file or transform; never throws for one.
std::optional<torch::Tensor> load_eval_image(const ImageInput& input,
                                             const EvalTransform& transform, std::string* error,
                                             const ImageLimits& limits = {},
                                             DecodeBudget* budget = nullptr);

}  // namespace ltfit
