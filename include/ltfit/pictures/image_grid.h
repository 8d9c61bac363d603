// Writing a grid of images with captions to a PNG (fastai's show_batch), so a person can check
// what the model is fed. Thread-safe.
#pragma once

#include <string>
#include <vector>

#include <torch/types.h>

namespace ltfit {

// A picture encoded in memory, with its size in pixels.
struct EncodedPng {
  std::string bytes;  // PNG file contents
  int height = 0;
  int width = 0;
};

// `rgb`: uint8 [H,W,3] as a PNG of the same size; throws RuntimeError if it cannot be encoded.
EncodedPng encode_png(const torch::Tensor& rgb);

// `images`: uint8 [N,H,W,3] RGB; one caption per image drawn under it (cut to the image's width,
// ending in "...", when longer); `columns` per row (0: about square). Returns the grid as PNG;
// throws RuntimeError if it cannot be encoded.
EncodedPng encode_image_grid(const torch::Tensor& images, const std::vector<std::string>& captions,
                             int columns);

// encode_image_grid written to `path`; throws RuntimeError if it cannot be written.
void write_image_grid(const torch::Tensor& images, const std::vector<std::string>& captions,
                      int columns, const std::string& path);

}  // namespace ltfit
