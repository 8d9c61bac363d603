// Decoding image files into RGB tensors ready for batching. Only src/data uses OpenCV.
//
// decode_* never throw for a bad image: they return std::nullopt and fill `error` with the
// reason, so the loader can skip, count and name it. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <torch/types.h>

#include "ltfit/data/decode_budget.h"
#include "ltfit/data/image_header.h"

namespace ltfit {

// Geometry of one training sample's augmentation, drawn by the loader from its generator.
struct CropFlip {
  double scale = 1.0;     // crop side as a fraction of the shorter side, (0, 1]
  double offset_x = 0.5;  // crop centre position along x in [0,1] of the free range
  double offset_y = 0.5;  // same along y
  bool flip = false;      // mirror horizontally
};

// Decodes `path` to RGB, takes the square crop described by `crop` (centre crop of the shorter
// side when scale is 1 and offsets 0.5), resizes it to size×size with area/bilinear filtering.
// Returns uint8 [size,size,3] RGB, or nullopt with `error` set. The file must pass `limits`
// (data.max_pixels, data.formats) before it is decoded; the decode holds its estimated memory
// from `budget` (nullptr: the process-wide default_decode_budget()).
std::optional<torch::Tensor> load_square_image(const std::string& path, int size,
                                               const CropFlip& crop, std::string* error,
                                               const ImageLimits& limits = {},
                                               DecodeBudget* budget = nullptr);

}  // namespace ltfit
