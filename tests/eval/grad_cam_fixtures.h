// Fixtures of the Grad-CAM tests, generated at run time: scenes with planted evidence and
// randomly initialised models whose head was fitted to find it. Header-only (the test build
// compiles *_test.cpp files).
#pragma once

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ltfit/data/loader.h"
#include "ltfit/model/arch_registry.h"

namespace ltfit::testing {

constexpr std::int64_t kCamHeight = 128;  // not square: a map resized to W x H would show
constexpr std::int64_t kCamWidth = 160;
// The patch: two feature-map cells (stride 32), so that the cell a ResNet's or EfficientNet's
// strided convolutions centre on the patch (at 32 n, not at the cell's middle 32 n + 15.5 where
// bilinear resizing shows it) is drawn inside the patch wherever it lies.
constexpr std::int64_t kCamPatch = 64;

// A scene's size and its patch's side, in pixels.
struct CamGeometry {
  std::int64_t height = kCamHeight;
  std::int64_t width = kCamWidth;
  std::int64_t patch = kCamPatch;
};

struct CamScene {
  CamGeometry geometry;
  torch::Tensor images;                              // float [N,3,H,W], normalised (ImageNet's)
  torch::Tensor pixels;                              // uint8 [N,H,W,3], as decoded
  std::vector<std::array<std::int64_t, 2>> corners;  // the patch's top-left (y, x); -1: none
  torch::Tensor labels;                              // int64 [N]: 1 with a patch, 0 without
};

// `n` scenes of noise; image i gets a patch when i % every == every - 1 (every 1: all, 2: every
// other one). The same seed gives the same scenes.
inline CamScene cam_scene(std::int64_t n, int every, std::uint64_t seed,
                          CamGeometry geometry = {}) {
  at::Generator g = at::make_generator<at::CPUGeneratorImpl>(seed);
  CamScene scene;
  scene.geometry = geometry;
  const auto [height, width, side] = geometry;
  scene.pixels =
      torch::randint(96, 160, {n, height, width, 3}, g, torch::TensorOptions(torch::kUInt8));
  const torch::Tensor cells = torch::arange(side).div(4, "floor");
  const torch::Tensor checker = (cells.view({-1, 1}) + cells.view({1, -1})).remainder(2);
  // Red and yellow squares of 4 px: R 255, G 0 or 255, B 0.
  const torch::Tensor patch =
      torch::stack({torch::full_like(checker, 255), checker * 255, torch::zeros_like(checker)}, -1)
          .to(torch::kUInt8);
  scene.labels = torch::zeros({n}, torch::kInt64);
  for (std::int64_t i = 0; i < n; ++i) {
    if (i % every != every - 1) {
      scene.corners.push_back({-1, -1});
      continue;
    }
    const auto y0 = torch::randint(0, height - side + 1, {1}, g).item<std::int64_t>();
    const auto x0 = torch::randint(0, width - side + 1, {1}, g).item<std::int64_t>();
    scene.pixels[i].narrow(0, y0, side).narrow(1, x0, side).copy_(patch);
    scene.corners.push_back({y0, x0});
    scene.labels[i] = 1;
  }
  scene.images = normalize_images(scene.pixels, torch::kCPU, /*channels_last=*/false);
  return scene;
}

// Sets every BatchNorm2d's running statistics to those of the body on `images` (a cumulative
// average over one pass in train mode); the model is left in eval mode.
inline void settle_batch_norm(Classifier& model, const torch::Tensor& images) {
  for (auto& module : model->modules(/*include_self=*/false)) {
    if (auto* bn = module->as<torch::nn::BatchNorm2d>()) {
      bn->options.momentum(std::nullopt);
      bn->reset_running_stats();
    }
  }
  torch::NoGradGuard no_grad;
  model->train();
  model->features(images);
  model->eval();
}

// Fits only the head (fastai's third layer group) on the frozen body's `maps` for `labels`:
// 200 full-batch Adam steps; the head's gradients are dropped afterwards. Eval mode after.
// A linear head's matrix (its only one) starts from zero, as logistic regression does:
// torchvision initialises EfficientNet's classifier uniformly in +-1/sqrt(out_features) (+-0.71
// for two classes, some 25 times PyTorch's default), which 200 steps at 1e-3 hardly move, so the
// map showed that random start rather than the fitted evidence. (ConvNeXt's LayerNorm before it
// keeps its weights.)
inline void fit_head(Classifier& model, const torch::Tensor& maps, const torch::Tensor& labels) {
  const std::vector<torch::Tensor> head = model->layer_group_parameters().back();
  const auto matrices =
      std::count_if(head.begin(), head.end(), [](const torch::Tensor& p) { return p.dim() == 2; });
  if (matrices == 1) {
    torch::NoGradGuard no_grad;
    for (auto p : head)
      if (p.dim() == 2) p.zero_();
  }
  torch::optim::Adam adam(head, torch::optim::AdamOptions(1e-3));
  model->train();
  for (int step = 0; step < 200; ++step) {
    adam.zero_grad();
    torch::nn::functional::cross_entropy(model->classify(maps), labels).backward();
    adam.step();
  }
  model->eval();
  for (auto p : head) p.mutable_grad() = torch::Tensor();
}

// A randomly initialised `arch` (seeded) with a `head` head for classes 0 (noise) and 1 (a patch):
// BatchNorm settled on 16 scenes, the head fitted on the maps of 48 others, all of `geometry`.
inline Classifier planted_model(const std::string& arch, HeadKind head, CamGeometry geometry = {}) {
  torch::manual_seed(7);
  Classifier model = make_classifier(arch, 2, head, /*dropout=*/0.5);
  settle_batch_norm(model, cam_scene(16, /*every=*/2, /*seed=*/1, geometry).images);
  const CamScene train = cam_scene(48, /*every=*/2, /*seed=*/2, geometry);
  torch::Tensor maps;
  {
    torch::NoGradGuard no_grad;
    maps = model->features(train.images);
  }
  fit_head(model, maps, train.labels);
  return model;
}

// A randomly initialised `arch` (seeded) for `classes` classes with a `head` head, its BatchNorm
// settled on 8 scenes; its head not fitted. Eval mode.
inline Classifier settled_model(const std::string& arch, std::int64_t classes, HeadKind head) {
  torch::manual_seed(5);
  Classifier model = make_classifier(arch, classes, head, /*dropout=*/0.5);
  settle_batch_norm(model, cam_scene(8, /*every=*/2, /*seed=*/3).images);
  return model;
}

// Where a map [H,W] peaks: the middle of the pixels at its maximum (bilinear resizing repeats a
// border cell over several pixels, whose first one need not be the peak's place). (y, x).
inline std::pair<double, double> cam_peak(const torch::Tensor& map) {
  const torch::Tensor at_max = map.ge(map.max()).nonzero().to(torch::kFloat64).mean(0);
  return {at_max[0].item<double>(), at_max[1].item<double>()};
}

}  // namespace ltfit::testing
