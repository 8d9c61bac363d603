// Grad-CAM and its pictures: see grad_cam.h.
#include "ltfit/eval/grad_cam.h"

#include <torch/autograd.h>
#include <torch/nn/functional/upsampling.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "ltfit/util/error.h"
#include "ltfit/util/precision.h"

namespace ltfit {

namespace {

constexpr const char* kGradCamHint = "a bug in the caller: please report it";

std::string grad_cam_shape_text(const torch::Tensor& t) {
  std::ostringstream out;
  out << t.sizes() << " " << t.scalar_type();
  return out.str();
}

void check_normalized_batch(const torch::Tensor& images, const std::string& what) {
  if (!images.defined() || images.dim() != 4 || images.size(1) != 3 ||
      !images.is_floating_point()) {
    throw ConfigError(what + ": expected float images [N,3,H,W], got " +
                          (images.defined() ? grad_cam_shape_text(images) : "an empty tensor"),
                      kGradCamHint);
  }
}

// The model's number of classes: its head on a one-pixel map of zeros (cheap, any head).
std::int64_t grad_cam_class_count(Classifier& model, const torch::Device& device) {
  torch::NoGradGuard no_grad;
  const std::int64_t c = model->feature_channels();
  const torch::Tensor zeros =
      model->feature_layout() == FeatureLayout::kMap
          ? torch::zeros({1, c, 1, 1}, torch::TensorOptions().device(device))
          : torch::zeros({1, c}, torch::TensorOptions().device(device));
  return model->classify(zeros).size(1);
}

void check_grad_cam_classes(const torch::Tensor& classes, std::int64_t images,
                            std::int64_t class_count) {
  if (!classes.defined() || classes.dim() != 1 || classes.size(0) != images ||
      classes.is_floating_point() || classes.is_complex() ||
      classes.scalar_type() == torch::kBool) {
    throw ConfigError("grad_cam: expected one integer class per image ([" + std::to_string(images) +
                          "]), got " +
                          (classes.defined() ? grad_cam_shape_text(classes) : "an empty tensor"),
                      kGradCamHint);
  }
  const torch::Tensor c = classes.to(torch::kCPU, torch::kInt64);
  const torch::Tensor bad = c.lt(0).logical_or(c.ge(class_count)).nonzero();
  if (bad.size(0) == 0) return;
  const auto i = bad[0][0].item<std::int64_t>();
  throw ConfigError("grad_cam: class " + std::to_string(c[i].item<std::int64_t>()) + " of image " +
                        std::to_string(i) + " is out of range: the model has " +
                        std::to_string(class_count) + " classes (0.." +
                        std::to_string(class_count - 1) + ")",
                    "name a class the model was trained on");
}

// One batch: [n,3,H,W] on any device, [n] int64 -> float32 [n,H,W] on the CPU.
torch::Tensor grad_cam_batch(Classifier& model, const torch::Tensor& images,
                             const torch::Tensor& classes, const EvalOptions& options) {
  torch::Tensor x = images.to(options.device, torch::kFloat32);
  if (options.channels_last) x = x.contiguous(torch::MemoryFormat::ChannelsLast);
  CamSplit split;
  {
    torch::NoGradGuard no_grad;  // the body up to the activations is never back-propagated
    AutocastGuard autocast(options.device.type(), precision_dtype(options.precision));
    split = model->cam_split(x);
  }
  // A float32 leaf: the gradient is taken with respect to it alone, so no parameter gets one.
  const torch::Tensor leaf = split.activations.detach().to(torch::kFloat32).requires_grad_(true);
  torch::Tensor cam;
  {
    torch::AutoGradMode grad_mode(/*enabled=*/true);
    const torch::Tensor logits = split.logits(leaf).to(torch::kFloat32);
    const torch::Tensor score = logits.gather(1, classes.to(logits.device()).view({-1, 1})).sum();
    const torch::Tensor grads = split.to_map(torch::autograd::grad({score}, {leaf})[0]);
    const torch::Tensor maps = split.to_map(leaf.detach());                 // [n,C,h,w]
    const torch::Tensor weights = grads.mean({2, 3}, /*keepdim=*/true);     // [n,C,1,1]
    cam = torch::relu((weights * maps).sum(1, /*keepdim=*/true)).detach();  // [n,1,h,w]
  }
  namespace F = torch::nn::functional;
  cam = F::interpolate(cam, F::InterpolateFuncOptions()
                                .size(std::vector<std::int64_t>{images.size(2), images.size(3)})
                                .mode(torch::kBilinear)
                                .align_corners(false))
            .squeeze(1);
  const torch::Tensor peak = cam.flatten(1).amax(1).view({-1, 1, 1});
  cam = torch::where(peak > 0, cam / peak.clamp_min(1e-30), torch::zeros_like(cam));
  return cam.to(torch::kCPU, torch::kFloat32);
}

}  // namespace

torch::Tensor grad_cam(Classifier& model, const torch::Tensor& images, const torch::Tensor& classes,
                       const EvalOptions& options, int batch_size) {
  check_normalized_batch(images, "grad_cam");
  if (batch_size < 0)
    throw ConfigError("grad_cam: batch size must be >= 0, got " + std::to_string(batch_size),
                      kGradCamHint);
  model->eval();
  const std::int64_t n = images.size(0);
  check_grad_cam_classes(classes, n, grad_cam_class_count(model, options.device));
  if (n == 0) return torch::zeros({0, images.size(2), images.size(3)}, torch::kFloat32);
  const torch::Tensor labels = classes.to(torch::kInt64);
  const std::int64_t step = batch_size > 0 ? batch_size : n;
  std::vector<torch::Tensor> maps;
  for (std::int64_t start = 0; start < n; start += step) {
    const std::int64_t count = std::min(step, n - start);
    maps.push_back(grad_cam_batch(model, images.narrow(0, start, count),
                                  labels.narrow(0, start, count), options));
  }
  return torch::cat(maps);
}

torch::Tensor denormalize_images(const torch::Tensor& images,
                                 const ImageNormalization& normalization) {
  check_normalized_batch(images, "denormalize_images");
  const auto& m = normalization.mean;
  const auto& s = normalization.std;
  const torch::Tensor mean = torch::tensor({m[0], m[1], m[2]}).view({1, 3, 1, 1});
  const torch::Tensor std = torch::tensor({s[0], s[1], s[2]}).view({1, 3, 1, 1});
  const torch::Tensor x = images.detach().to(torch::kCPU, torch::kFloat32);
  return ((x * std + mean) * 255.0f)
      .round()
      .clamp(0, 255)
      .to(torch::kUInt8)
      .permute({0, 2, 3, 1})
      .contiguous();
}

torch::Tensor jet_colors(const torch::Tensor& values) {
  const torch::Tensor v = values.detach().to(torch::kFloat32).clamp(0, 1) * 4.0f;
  const auto channel = [&](float centre) { return (1.5f - (v - centre).abs()).clamp(0, 1); };
  return torch::stack({channel(3.0f), channel(2.0f), channel(1.0f)}, -1);
}

torch::Tensor cam_overlay(const torch::Tensor& rgb, const torch::Tensor& cam, double alpha) {
  if (!rgb.defined() || rgb.dim() != 3 || rgb.size(2) != 3 || rgb.scalar_type() != torch::kUInt8)
    throw ConfigError("cam_overlay: expected a uint8 RGB image [H,W,3], got " +
                          (rgb.defined() ? grad_cam_shape_text(rgb) : "an empty tensor"),
                      kGradCamHint);
  if (!cam.defined() || cam.dim() != 2 || !cam.is_floating_point() || cam.size(0) != rgb.size(0) ||
      cam.size(1) != rgb.size(1))
    throw ConfigError("cam_overlay: expected a float map [" + std::to_string(rgb.size(0)) + "," +
                          std::to_string(rgb.size(1)) + "] (the image's size), got " +
                          (cam.defined() ? grad_cam_shape_text(cam) : "an empty tensor"),
                      kGradCamHint);
  if (!(alpha >= 0.0 && alpha <= 1.0))
    throw ConfigError("cam_overlay: alpha must lie in [0, 1], got " + std::to_string(alpha),
                      kGradCamHint);
  const torch::Tensor colors = jet_colors(cam.to(torch::kCPU)) * 255.0f;
  const auto a = static_cast<float>(alpha);
  const torch::Tensor blend = rgb.to(torch::kCPU, torch::kFloat32) * (1.0f - a) + colors * a;
  return blend.round().clamp(0, 255).to(torch::kUInt8).contiguous();
}

}  // namespace ltfit
