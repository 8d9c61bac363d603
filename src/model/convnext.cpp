// ConvNeXt-Tiny/Small: LayerNorm2d, CNBlock (with row-mode stochastic depth), the body under
// torchvision's names, its classifier, torchvision's initialisation and the registry rows. See
// convnext.h.
#include "ltfit/model/convnext.h"

#include <torch/nn/functional/pooling.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/functional.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/options/conv.h>

#include <cmath>
#include <functional>
#include <memory>
#include <numeric>

#include "ltfit/model/weight_init.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace F = torch::nn::functional;

namespace {

constexpr double kLayerNormEps = 1e-6;
constexpr double kInitStd = 0.02;

// torchvision's Permute modules: [N,C,H,W] <-> [N,H,W,C] (views, no copy).
torch::nn::Functional permute(std::vector<std::int64_t> dims) {
  return torch::nn::Functional(std::function<torch::Tensor(torch::Tensor)>(
      [dims](torch::Tensor x) { return x.permute(dims); }));
}

// A biased convolution without padding (the stem's patchify, the downsampling layers).
torch::nn::Conv2d patch_conv(std::int64_t in, std::int64_t out, std::int64_t kernel,
                             std::int64_t stride) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel).stride(stride).bias(true));
}

}  // namespace

ConvNeXtSpec convnext_spec(const std::string& arch) {
  if (arch == "convnext_tiny") return {arch, {3, 3, 9, 3}, {96, 192, 384, 768}, 0.1};
  if (arch == "convnext_small") return {arch, {3, 3, 27, 3}, {96, 192, 384, 768}, 0.4};
  throw ConfigError("model.arch: expected one of convnext_tiny, convnext_small, got '" + arch +
                    "'");
}

LayerNorm2dImpl::LayerNorm2dImpl(std::int64_t channels, double eps)
    : channels_(channels), eps_(eps) {
  LTFIT_CHECK(channels > 0, "LayerNorm2d needs a positive channel count");
  weight = register_parameter("weight", torch::ones({channels}));
  bias = register_parameter("bias", torch::zeros({channels}));
}

torch::Tensor LayerNorm2dImpl::forward(const torch::Tensor& x) {
  // [N,C,H,W] -> [N,H,W,C], normalise over C, -> [N,C,H,W]
  return torch::layer_norm(x.permute({0, 2, 3, 1}), {channels_}, weight, bias, eps_)
      .permute({0, 3, 1, 2});
}

CNBlockImpl::CNBlockImpl(std::int64_t dim, double drop_prob, double layer_scale)
    : drop_prob_(drop_prob) {
  LTFIT_CHECK(drop_prob >= 0.0 && drop_prob <= 1.0, "stochastic depth needs p in [0, 1]");
  block_ = register_module(
      "block",
      torch::nn::Sequential(
          torch::nn::Conv2d(torch::nn::Conv2dOptions(dim, dim, 7).padding(3).groups(dim)),
          permute({0, 2, 3, 1}),  // [N,C,H,W] -> [N,H,W,C]
          torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim}).eps(kLayerNormEps)),
          torch::nn::Linear(dim, 4 * dim), torch::nn::GELU(),        // exact (erf) GELU
          torch::nn::Linear(4 * dim, dim), permute({0, 3, 1, 2})));  // [N,H,W,C] -> [N,C,H,W]
  layer_scale_ = register_parameter("layer_scale", torch::full({dim, 1, 1}, layer_scale));
}

torch::Tensor CNBlockImpl::forward(const torch::Tensor& x) {
  torch::Tensor result = layer_scale_ * block_->forward(x);  // [C,1,1] * [N,C,H,W]
  if (is_training() && drop_prob_ > 0.0) {
    // torchvision.ops.stochastic_depth, "row": one Bernoulli(1 - p) draw per sample, [N,1,1,1].
    const double survival = 1.0 - drop_prob_;
    torch::Tensor noise = torch::empty({x.size(0), 1, 1, 1}, result.options());
    noise.bernoulli_(survival);
    if (survival > 0.0) noise.div_(survival);
    result = result * noise;
  }
  return result + x;
}

ConvNeXtImpl::ConvNeXtImpl(const ConvNeXtSpec& spec, std::int64_t num_classes, HeadKind head,
                           double dropout)
    : ClassifierImpl(spec.arch, spec.feature_channels()), spec_(spec) {
  LTFIT_CHECK(spec.blocks.size() == 4 && spec.dims.size() == 4, "a ConvNeXt has four stages");
  LTFIT_CHECK(num_classes > 0, "num_classes must be positive");
  build_features();
  if (head == HeadKind::kLinear) {
    const std::int64_t channels = spec.feature_channels();
    classifier_ = register_module(
        "classifier",
        torch::nn::Sequential(LayerNorm2d(channels),
                              torch::nn::Flatten(torch::nn::FlattenOptions().start_dim(1)),
                              torch::nn::Linear(channels, num_classes)));
  }
  init_weights();  // torchvision's init, the classifier's Linear included
  if (head != HeadKind::kLinear) add_fastai_head(num_classes, dropout);
}

// features.0 stem (Conv k4 s4, LayerNorm2d); features.1/3/5/7 stages of CNBlocks;
// features.2/4/6 downsampling (LayerNorm2d, Conv k2 s2).
void ConvNeXtImpl::build_features() {
  const auto& dims = spec_.dims;
  const int total_blocks = std::accumulate(spec_.blocks.begin(), spec_.blocks.end(), 0);
  LTFIT_CHECK(total_blocks > 1, "a ConvNeXt has more than one block");
  parts_.push_back(torch::nn::Sequential(patch_conv(3, dims[0], 4, 4), LayerNorm2d(dims[0])));
  int block_id = 0;
  for (std::size_t s = 0; s < spec_.blocks.size(); ++s) {
    torch::nn::Sequential stage;
    for (int i = 0; i < spec_.blocks[s]; ++i, ++block_id) {
      const double p = spec_.stochastic_depth_prob * block_id / (total_blocks - 1.0);
      CNBlock block(dims[s], p);
      mark_no_weight_decay(block->layer_scale());
      stage->push_back(block);
    }
    parts_.push_back(stage);
    if (s + 1 < spec_.blocks.size()) {
      parts_.push_back(
          torch::nn::Sequential(LayerNorm2d(dims[s]), patch_conv(dims[s], dims[s + 1], 2, 2)));
    }
  }
  torch::nn::ModuleList features;
  for (const auto& part : parts_) features->push_back(part);
  features_ = register_module("features", features);
}

void ConvNeXtImpl::init_weights() {
  torch::NoGradGuard no_grad;
  for (auto& module : modules(/*include_self=*/false)) {
    torch::Tensor weight, bias;
    if (auto* c = module->as<torch::nn::Conv2d>()) {
      weight = c->weight;
      bias = c->bias;
    } else if (auto* linear = module->as<torch::nn::Linear>()) {
      weight = linear->weight;
      bias = linear->bias;
    } else {
      continue;
    }
    trunc_normal_init(weight, kInitStd);
    if (bias.defined()) bias.zero_();
  }
}

torch::Tensor ConvNeXtImpl::features(const torch::Tensor& x) {
  torch::Tensor out = x;  // [N,3,H,W] -> ... -> [N,768,H/32,W/32]
  for (auto& part : parts_) out = part->forward(out);
  return out;
}

std::vector<std::vector<torch::nn::Module*>> ConvNeXtImpl::body_groups() {
  LTFIT_CHECK(parts_.size() == 8, "a ConvNeXt body has eight parts");
  std::vector<std::vector<torch::nn::Module*>> groups(2);
  for (std::size_t i = 0; i < parts_.size(); ++i) {
    groups[i < 4 ? 0 : 1].push_back(parts_[i].get());
  }
  return groups;
}

torch::Tensor ConvNeXtImpl::linear_head(const torch::Tensor& maps) {
  LTFIT_CHECK(!classifier_.is_empty(), "linear_head needs torchvision's classifier");
  // [N,768,h,w] -> [N,768,1,1] -> classifier -> [N,num_classes]
  return classifier_->forward(F::adaptive_avg_pool2d(maps, F::AdaptiveAvgPool2dFuncOptions(1)));
}

namespace {

ArchInfo convnext_row(const std::string& arch, std::string weights_file, int eval_resize,
                      std::int64_t parameters, double imagenet_top1) {
  const ConvNeXtSpec spec = convnext_spec(arch);
  ArchInfo info;
  info.name = arch;
  info.family = "convnext";
  info.make = family_constructor<ConvNeXtImpl>(spec);
  info.weights_file = std::move(weights_file);
  info.normalization = ImageNormalization{};  // torchvision's ImageClassification defaults
  info.interpolation = "bilinear";
  info.eval_resize = eval_resize;
  info.eval_crop = 224;
  info.classifier_prefix = "classifier.";
  info.feature_channels = spec.feature_channels();
  info.parameters = parameters;
  info.imagenet_top1 = imagenet_top1;
  info.layer_groups = "features.0-3 / features.4-7 / head";
  info.onnx = convnext_onnx();
  return info;
}

}  // namespace

std::vector<ArchInfo> convnext_archs() {
  // torchvision 0.29 ConvNeXt_{Tiny,Small}_Weights.IMAGENET1K_V1: url, transforms, meta.
  return {convnext_row("convnext_tiny", "convnext_tiny-983f1562.pth", 236, 28589128, 82.520),
          convnext_row("convnext_small", "convnext_small-0c510722.pth", 230, 50223688, 83.616)};
}

}  // namespace ltfit
