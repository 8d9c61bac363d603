// MobileNetV3-Large/Small: torchvision's block tables, the module tree under torchvision's names,
// its initialisation, fastai's layer groups and the registry rows. See mobilenet_v3.h.
#include "ltfit/model/mobilenet_v3.h"

#include <torch/nn/functional/pooling.h>
#include <torch/nn/init.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/options/batchnorm.h>
#include <torch/nn/options/conv.h>

#include <iterator>
#include <memory>

#include "ltfit/model/batch_norm_fold.h"
#include "ltfit/model/efficientnet.h"  // efficientnet_channels: torchvision's _make_divisible
#include "ltfit/util/error.h"

namespace ltfit {

namespace F = torch::nn::functional;

namespace {

// torchvision's norm_layer for MobileNetV3: partial(nn.BatchNorm2d, eps=0.001, momentum=0.01).
constexpr double kMobileNetV3BnEps = 1e-3;
constexpr double kMobileNetV3BnMomentum = 0.01;
constexpr double kMobileNetV3LinearStd = 0.01;

// torchvision's _mobilenet_v3_conf tables (width 1.0, no reduced tail, no dilation):
// in, kernel, expanded, out, squeeze-excitation, Hardswish, stride.
constexpr MobileNetV3BlockOptions kMobileNetV3LargeBlocks[] = {
    {16, 3, 16, 16, false, false, 1},  {16, 3, 64, 24, false, false, 2},
    {24, 3, 72, 24, false, false, 1},  {24, 5, 72, 40, true, false, 2},
    {40, 5, 120, 40, true, false, 1},  {40, 5, 120, 40, true, false, 1},
    {40, 3, 240, 80, false, true, 2},  {80, 3, 200, 80, false, true, 1},
    {80, 3, 184, 80, false, true, 1},  {80, 3, 184, 80, false, true, 1},
    {80, 3, 480, 112, true, true, 1},  {112, 3, 672, 112, true, true, 1},
    {112, 5, 672, 160, true, true, 2}, {160, 5, 960, 160, true, true, 1},
    {160, 5, 960, 160, true, true, 1},
};

constexpr MobileNetV3BlockOptions kMobileNetV3SmallBlocks[] = {
    {16, 3, 16, 16, true, false, 2},  {16, 3, 72, 24, false, false, 2},
    {24, 3, 88, 24, false, false, 1}, {24, 5, 96, 40, true, true, 2},
    {40, 5, 240, 40, true, true, 1},  {40, 5, 240, 40, true, true, 1},
    {40, 5, 120, 48, true, true, 1},  {48, 5, 144, 48, true, true, 1},
    {48, 5, 288, 96, true, true, 2},  {96, 5, 576, 96, true, true, 1},
    {96, 5, 576, 96, true, true, 1},
};

enum class MobileNetV3Activation { kNone, kReLU, kHardswish };

// torchvision's Conv2dNormActivation with MobileNetV3's BatchNorm: conv (no bias, "same"
// padding) [N,in,H,W] -> BatchNorm(eps 1e-3, momentum 0.01) -> activation ->
// [N,out,H/stride,W/stride]; children named 0, 1, 2.
ConvNormAct mobilenet_v3_conv_bn(std::int64_t in, std::int64_t out, std::int64_t kernel,
                                 std::int64_t stride, std::int64_t groups,
                                 MobileNetV3Activation activation) {
  ConvNormAct layers(torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                                           .stride(stride)
                                           .padding((kernel - 1) / 2)
                                           .groups(groups)
                                           .bias(false)),
                     torch::nn::BatchNorm2d(torch::nn::BatchNormOptions(out)
                                                .eps(kMobileNetV3BnEps)
                                                .momentum(kMobileNetV3BnMomentum)));
  if (activation == MobileNetV3Activation::kReLU) layers->push_back(torch::nn::ReLU());
  if (activation == MobileNetV3Activation::kHardswish) layers->push_back(Hardswish());
  return layers;
}

}  // namespace

torch::Tensor HardswishImpl::forward(const torch::Tensor& x) { return torch::hardswish(x); }

torch::Tensor HardsigmoidImpl::forward(const torch::Tensor& x) { return torch::hardsigmoid(x); }

MobileNetV3BlockImpl::MobileNetV3BlockImpl(const MobileNetV3BlockOptions& options)
    : use_residual_(options.stride == 1 && options.in_channels == options.out_channels) {
  LTFIT_CHECK(options.stride == 1 || options.stride == 2, "MobileNetV3 stride must be 1 or 2");
  const std::int64_t in = options.in_channels;
  const std::int64_t expanded = options.expanded_channels;
  const auto activation =
      options.hardswish ? MobileNetV3Activation::kHardswish : MobileNetV3Activation::kReLU;
  block_ = torch::nn::Sequential();
  if (expanded != in) block_->push_back(mobilenet_v3_conv_bn(in, expanded, 1, 1, 1, activation));
  block_->push_back(mobilenet_v3_conv_bn(expanded, expanded, options.kernel, options.stride,
                                         expanded, activation));
  if (options.squeeze_excitation) {
    // _make_divisible(expanded // 4, 8): efficientnet_channels at width 1 is exactly that.
    block_->push_back(SqueezeExcitation(expanded, efficientnet_channels(expanded / 4, 1.0),
                                        SqueezeActivations::kReluHardsigmoid));
  }
  block_->push_back(
      mobilenet_v3_conv_bn(expanded, options.out_channels, 1, 1, 1, MobileNetV3Activation::kNone));
  block_ = register_module("block", block_);
}

torch::Tensor MobileNetV3BlockImpl::forward(const torch::Tensor& x) {
  torch::Tensor result = block_->forward(x);
  if (use_residual_) result = result + x;
  return result;
}

std::int64_t MobileNetV3Spec::feature_channels() const {
  LTFIT_CHECK(!blocks.empty(), "a MobileNetV3 has blocks");
  return 6 * blocks.back().out_channels;
}

MobileNetV3Spec mobilenet_v3_spec(const std::string& arch) {
  if (arch == "mobilenet_v3_large") {
    return {arch,
            {std::begin(kMobileNetV3LargeBlocks), std::end(kMobileNetV3LargeBlocks)},
            /*last_channel=*/1280,
            /*dropout=*/0.2,
            /*second_group=*/7};
  }
  if (arch == "mobilenet_v3_small") {
    return {arch,
            {std::begin(kMobileNetV3SmallBlocks), std::end(kMobileNetV3SmallBlocks)},
            /*last_channel=*/1024,
            /*dropout=*/0.2,
            /*second_group=*/4};
  }
  throw ConfigError("model.arch: expected one of mobilenet_v3_large, mobilenet_v3_small, got '" +
                    arch + "'");
}

MobileNetV3Impl::MobileNetV3Impl(const MobileNetV3Spec& spec, std::int64_t num_classes,
                                 HeadKind head, double dropout)
    : ClassifierImpl(spec.arch, spec.feature_channels()), spec_(spec) {
  LTFIT_CHECK(num_classes > 0, "num_classes must be positive");
  LTFIT_CHECK(spec.second_group > 0 && spec.second_group <= spec.blocks.size(),
              "the second layer group starts at a block");
  build_features();
  if (head == HeadKind::kLinear) {
    classifier_ = register_module(
        "classifier", torch::nn::Sequential(
                          torch::nn::Linear(feature_channels(), spec.last_channel), Hardswish(),
                          torch::nn::Dropout(torch::nn::DropoutOptions(spec.dropout).inplace(true)),
                          torch::nn::Linear(spec.last_channel, num_classes)));
  }
  init_weights();  // before the fastai head, which initialises itself as fastai does
  if (head != HeadKind::kLinear) add_fastai_head(num_classes, dropout);
}

void MobileNetV3Impl::build_features() {
  features_ = torch::nn::Sequential();
  features_->push_back(mobilenet_v3_conv_bn(3, spec_.blocks.front().in_channels, 3, 2, 1,
                                            MobileNetV3Activation::kHardswish));  // features.0
  for (const auto& options : spec_.blocks) features_->push_back(MobileNetV3Block(options));
  const std::int64_t last = spec_.blocks.back().out_channels;
  features_->push_back(mobilenet_v3_conv_bn(last, feature_channels(), 1, 1, 1,
                                            MobileNetV3Activation::kHardswish));  // the last conv
  features_ = register_module("features", features_);
}

void MobileNetV3Impl::init_weights() {
  torch::NoGradGuard no_grad;
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* conv = module->as<torch::nn::Conv2d>()) {
      // torchvision: kaiming_normal_(mode="fan_out"), leaky_relu with a = 0 (gain sqrt 2).
      torch::nn::init::kaiming_normal_(conv->weight, /*a=*/0.0, torch::kFanOut);
      if (conv->bias.defined()) conv->bias.zero_();
    } else if (auto* bn = module->as<torch::nn::BatchNorm2d>()) {
      bn->weight.fill_(1.0);
      bn->bias.zero_();
    } else if (auto* linear = module->as<torch::nn::Linear>()) {
      linear->weight.normal_(0.0, kMobileNetV3LinearStd);
      linear->bias.zero_();
    }
  }
}

torch::Tensor MobileNetV3Impl::features(const torch::Tensor& x) {
  return features_->forward(x);  // [N,3,H,W] -> [N,C,H/32,W/32]
}

std::vector<std::vector<torch::nn::Module*>> MobileNetV3Impl::body_groups() {
  LTFIT_CHECK(features_->size() == spec_.blocks.size() + 2,
              "features holds the stem, the blocks and the last conv");
  std::vector<std::vector<torch::nn::Module*>> groups(2);
  for (std::size_t i = 0; i < features_->size(); ++i) {
    groups[i < spec_.second_group ? 0 : 1].push_back(features_->ptr(i).get());
  }
  return groups;
}

torch::Tensor MobileNetV3Impl::linear_head(const torch::Tensor& maps) {
  LTFIT_CHECK(!classifier_.is_empty(), "the linear head was not built");
  const torch::Tensor pooled =
      F::adaptive_avg_pool2d(maps, F::AdaptiveAvgPool2dFuncOptions(1)).flatten(1);  // [N,C]
  return classifier_->forward(pooled);  // [N,num_classes]
}

namespace {

struct MobileNetV3Published {
  const char* arch;
  const char* file;  // IMAGENET1K_V1
  std::int64_t parameters;
  double top1;
  const char* layer_groups;
};

// torchvision 0.29's MobileNet_V3_{Large,Small}_Weights.IMAGENET1K_V1: resize 256, crop 224,
// bilinear, ImageNet mean/std. V1, as the other families choose (V2 only where a V1 file predates
// torch's zip format; these came with torchvision 0.9, in 2021, after torch 1.6 made zip the
// default). Small has V1 only; large's V2 (75.274, resize 232) is its newer recipe.
constexpr MobileNetV3Published kMobileNetV3Weights[] = {
    {"mobilenet_v3_large", "mobilenet_v3_large-8738ca79.pth", 5483032, 74.042,
     "features.0-6 / features.7-16 / head"},
    {"mobilenet_v3_small", "mobilenet_v3_small-047dcff4.pth", 2542856, 67.668,
     "features.0-3 / features.4-12 / head"},
};

}  // namespace

std::vector<ArchInfo> mobilenet_v3_archs() {
  std::vector<ArchInfo> rows;
  for (const auto& w : kMobileNetV3Weights) {
    const MobileNetV3Spec spec = mobilenet_v3_spec(w.arch);
    ArchInfo info;
    info.name = w.arch;
    info.family = "mobilenet_v3";
    info.make = family_constructor<MobileNetV3Impl>(spec);
    info.weights_file = w.file;
    info.normalization = ImageNormalization{};
    info.interpolation = "bilinear";
    info.eval_resize = 256;
    info.eval_crop = 224;
    info.classifier_prefix = "classifier.";
    info.feature_channels = spec.feature_channels();
    info.parameters = w.parameters;
    info.imagenet_top1 = w.top1;
    info.layer_groups = w.layer_groups;
    info.onnx = mobilenet_v3_onnx();
    rows.push_back(std::move(info));
  }
  return rows;
}

}  // namespace ltfit
