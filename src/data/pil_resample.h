// Resizing an 8-bit image the way Pillow's Image.resize does (private to src/data).
//
// torchvision's eval transforms run on PIL images, so "exact to torchvision" for `predict
// --weights` means exact to Pillow's resampler (libImaging/Resample.c), which OpenCV's filters
// are not: Pillow antialiases (when shrinking by s, the kernel is s times wider and its weights
// are renormalised per output pixel), turns the weights into 22-bit fixed point (rounded half
// away from zero), runs a horizontal pass then a vertical one (the vertical first when the height
// loses more than twice as many pixels as the width, as Pillow 13 does), and rounds and clips to
// 8 bits after each. This reimplements that arithmetic (same double expressions, same rounding), so
// its output equals Pillow's byte for byte (the parity test checks it against Pillow).
//
// Only a window of the output is computed: each output pixel depends only on its own taps, so
// the centre crop of a resize costs crop², not the whole resized image.
#pragma once

#include <opencv2/core.hpp>

#include "ltfit/data/image_io.h"

namespace ltfit {

// The size torchvision's Resize(resize) gives an image of `size`: the shorter side `resize`, the
// longer int(resize * long / short) (as Python computes it: the exact product, then one correctly
// rounded division). Empty when the longer side would reach 2^24, past what Pillow's float box
// holds exactly (a 1-pixel strip).
cv::Size torchvision_resize_size(cv::Size size, int resize);

// torchvision's CenterCrop(crop) window in an image of `size` (crop at most either side):
// offsets int(round((side - crop) / 2.0)), rounding half to even as Python does.
cv::Rect torchvision_center_crop(cv::Size size, int crop);

// The pixels `window` of `image` (CV_8UC3, any channel order) resized to `size` with `filter`, as
// Pillow computes them. `window` must lie inside size; `image` must not be empty.
cv::Mat pil_resize_window(const cv::Mat& image, cv::Size size, cv::Rect window,
                          ResampleFilter filter);

}  // namespace ltfit
