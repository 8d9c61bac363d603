// Grad-CAM (Selvaraju et al. 2017, "Grad-CAM: Visual Explanations from Deep Networks via
// Gradient-based Localization"): where in an image the evidence for a class lies, from the body's
// last feature map, and the pictures that show it.
//
// The map is the one ClassifierImpl::features returns (ResNet's layer4, ConvNeXt's last stage,
// EfficientNet's last 1x1 conv), at 1/32 of the input's resolution. The body runs once, without
// gradients; the head (ClassifierImpl::classify) runs on a float32 copy of the map, and only the
// gradient of the class's logit with respect to that copy is taken (torch::autograd::grad), so no
// parameter ever receives a gradient and the body is never back-propagated. Not thread-safe (the
// model is used in place).
#pragma once

#include <torch/types.h>

#include "ltfit/eval/evaluator.h"
#include "ltfit/model/classifier.h"
#include "ltfit/util/image_normalization.h"

namespace ltfit {

// Grad-CAM from the body's last feature map (ClassifierImpl::features):
// weights = spatial mean of d score / d maps, map = ReLU(sum_c weights_c * maps_c), bilinearly
// resized to the input's H x W (align_corners false, as OpenCV's resize) and divided per image by
// its maximum, so it lies in [0, 1] (an all-zero map stays 0: no evidence for the class).
// `images`: [N,3,H,W] float normalised (as the loader gives them), on any device; `classes`: [N]
// int64, the class to explain per image (its logit is the score). Runs in batches of at most
// `batch_size` (0: all at once), the body's forward under autocast per options.precision (fp16 or
// bf16: a precision resolved for options.device, resolve_eval_precision), the head and the
// gradients in float32; options.channels_last feeds NHWC batches. The model is left in eval mode,
// its parameters' requires_grad and grads untouched; works under a caller's NoGradGuard.
// Returns float32 [N,H,W] on the CPU. ConfigError (exit 2) for images that are not float
// [N,3,H,W], classes that are not [N] integers, a class outside 0..classes-1, a negative
// batch size.
torch::Tensor grad_cam(Classifier& model, const torch::Tensor& images, const torch::Tensor& classes,
                       const EvalOptions& options, int batch_size = 0);

// The normalised batch [N,3,H,W] back to uint8 RGB [N,H,W,3] on the CPU (mean/std undone,
// rounded, clamped to 0..255): the inverse of data/loader.h's normalize_images. ConfigError for
// anything but a float [N,3,H,W] tensor.
torch::Tensor denormalize_images(const torch::Tensor& images,
                                 const ImageNormalization& normalization);

// `rgb` uint8 [H,W,3] blended with the jet colour map of `cam` float [H,W] in [0,1] (values
// outside are clamped): (1 - alpha) * rgb + alpha * jet(cam), rounded — uint8 [H,W,3] RGB on the
// CPU. Jet runs dark blue (0: no evidence) through cyan, green (0.5) and yellow to dark red (1:
// the strongest evidence). ConfigError for other shapes or types, an alpha outside [0, 1].
torch::Tensor cam_overlay(const torch::Tensor& rgb, const torch::Tensor& cam, double alpha = 0.5);

// The jet colour of each value of `values` (any shape, float, clamped to [0, 1]): float32
// [..., 3] RGB in [0, 1], MATLAB's piecewise-linear jet (r = 1.5 - |4v - 3|, g = 1.5 - |4v - 2|,
// b = 1.5 - |4v - 1|, each clamped to [0, 1]).
torch::Tensor jet_colors(const torch::Tensor& values);

}  // namespace ltfit
