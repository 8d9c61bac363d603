// The per-channel mean and standard deviation a model's inputs are normalised with.
#pragma once

#include <array>

namespace ltfit {

// RGB, on the 0-1 scale (torchvision's Normalize): x = (pixel / 255 - mean) / std. The defaults
// are ImageNet's, which every torchvision classifier ltfit registers was trained with.
struct ImageNormalization {
  std::array<float, 3> mean = {0.485f, 0.456f, 0.406f};
  std::array<float, 3> std = {0.229f, 0.224f, 0.225f};

  bool operator==(const ImageNormalization& other) const {
    return mean == other.mean && std == other.std;
  }
};

}  // namespace ltfit
