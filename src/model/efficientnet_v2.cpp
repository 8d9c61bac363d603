// EfficientNetV2-S: torchvision's FusedMBConv and MBConv table, the module tree under torchvision's
// names, BatchNorm eps 1e-3, its initialisation, fastai's layer groups and the registry row. See
// efficientnet_v2.h.
#include "ltfit/model/efficientnet_v2.h"

#include <torch/nn/functional/pooling.h>
#include <torch/nn/init.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/options/conv.h>

#include <cmath>
#include <iterator>
#include <memory>

#include "ltfit/model/batch_norm_fold.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

// One row of torchvision's efficientnet_v2_s table (_efficientnet_conf).
struct EffV2StageConfig {
  bool fused;  // FusedMBConvConfig, else MBConvConfig
  double expand_ratio;
  std::int64_t kernel;
  std::int64_t stride;
  std::int64_t in_channels;
  std::int64_t out_channels;
  int layers;
};

constexpr EffV2StageConfig kEffV2SStages[] = {
    {true, 1, 3, 1, 24, 24, 2},   {true, 4, 3, 2, 24, 48, 4},    {true, 4, 3, 2, 48, 64, 4},
    {false, 4, 3, 2, 64, 128, 6}, {false, 6, 3, 1, 128, 160, 9}, {false, 6, 3, 2, 160, 256, 15},
};

constexpr const char* kEffV2Archs[] = {"efficientnet_v2_s"};

// A Sequential that can sit inside another (LibTorch's AnyModule needs a non-template forward):
// torchvision's Conv2dNormActivation and the stages, children named 0, 1, ...
class EffV2SequentialImpl : public torch::nn::SequentialImpl {
 public:
  using torch::nn::SequentialImpl::SequentialImpl;
  torch::Tensor forward(const torch::Tensor& x) { return SequentialImpl::forward(x); }
};
TORCH_MODULE(EffV2Sequential);

// torchvision's Conv2dNormActivation: conv (no bias, "same" padding) [N,in,H,W] -> BatchNorm
// (eps set for the whole body afterwards) -> SiLU when `activation` -> [N,out,H/stride,W/stride].
ConvNormAct effv2_conv_norm_activation(std::int64_t in, std::int64_t out, std::int64_t kernel,
                                       std::int64_t stride, bool activation) {
  ConvNormAct layers(torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                                           .stride(stride)
                                           .padding((kernel - 1) / 2)
                                           .bias(false)),
                     torch::nn::BatchNorm2d(out));
  if (activation) layers->push_back(torch::nn::SiLU());
  return layers;
}

}  // namespace

EfficientNetV2Spec efficientnet_v2_spec(const std::string& arch) {
  std::string names;
  for (const char* name : kEffV2Archs) {
    if (arch == name) return EfficientNetV2Spec{arch};
    names += (names.empty() ? "" : ", ") + std::string(name);
  }
  throw ConfigError("model.arch: expected one of " + names + ", got '" + arch + "'");
}

FusedMBConvImpl::FusedMBConvImpl(const MBConvOptions& options)
    : use_residual_(options.stride == 1 && options.in_channels == options.out_channels) {
  LTFIT_CHECK(options.stride == 1 || options.stride == 2, "FusedMBConv stride must be 1 or 2");
  const std::int64_t in = options.in_channels;
  const std::int64_t expanded = efficientnet_channels(in, options.expand_ratio);
  block_ = torch::nn::Sequential();
  if (expanded != in) {
    block_->push_back(
        effv2_conv_norm_activation(in, expanded, options.kernel, options.stride, true));
    block_->push_back(effv2_conv_norm_activation(expanded, options.out_channels, 1, 1, false));
  } else {
    block_->push_back(
        effv2_conv_norm_activation(in, options.out_channels, options.kernel, options.stride, true));
  }
  block_ = register_module("block", block_);
  stochastic_depth_ =
      register_module("stochastic_depth", StochasticDepth(options.stochastic_depth_prob));
}

torch::Tensor FusedMBConvImpl::forward(const torch::Tensor& x) {
  torch::Tensor result = block_->forward(x);
  if (use_residual_) result = stochastic_depth_(result) + x;
  return result;
}

EfficientNetV2Impl::EfficientNetV2Impl(const EfficientNetV2Spec& spec, std::int64_t num_classes,
                                       HeadKind head, double dropout)
    : ClassifierImpl(spec.arch, spec.feature_channels()), spec_(spec) {
  LTFIT_CHECK(num_classes > 0, "num_classes must be positive");
  build_features();
  if (head == HeadKind::kLinear) {
    classifier_ = register_module(
        "classifier", torch::nn::Sequential(
                          torch::nn::Dropout(torch::nn::DropoutOptions(spec.dropout).inplace(true)),
                          torch::nn::Linear(feature_channels(), num_classes)));
  }
  init_weights();  // before the fastai head, which initialises itself as fastai does
  if (head != HeadKind::kLinear) add_fastai_head(num_classes, dropout);
}

void EfficientNetV2Impl::build_features() {
  int total_blocks = 0;
  for (const auto& stage : kEffV2SStages) total_blocks += stage.layers;
  features_ = torch::nn::Sequential();
  features_->push_back(  // features.0
      effv2_conv_norm_activation(3, kEffV2SStages[0].in_channels, 3, 2, true));
  int block_id = 0;
  for (const auto& stage : kEffV2SStages) {  // features.1 ... features.6
    EffV2Sequential blocks;
    MBConvOptions options{stage.expand_ratio, stage.kernel, stage.stride, stage.in_channels,
                          stage.out_channels};
    for (int i = 0; i < stage.layers; ++i, ++block_id) {
      if (i > 0) {  // later blocks of a stage keep the shape
        options.in_channels = options.out_channels;
        options.stride = 1;
      }
      options.stochastic_depth_prob = spec_.stochastic_depth_prob * block_id / total_blocks;
      if (stage.fused) {
        blocks->push_back(FusedMBConv(options));
      } else {
        blocks->push_back(MBConv(options));
      }
    }
    features_->push_back(blocks);
  }
  const std::int64_t last = kEffV2SStages[std::size(kEffV2SStages) - 1].out_channels;
  features_->push_back(  // features.7
      effv2_conv_norm_activation(last, feature_channels(), 1, 1, true));
  features_ = register_module("features", features_);
  // torchvision's norm_layer for V2; MBConv builds its BatchNorms with LibTorch's default 1e-5.
  // BatchNorm's forward (and the ONNX emitter) read options.eps(), so setting it here suffices.
  for (auto& module : features_->modules(/*include_self=*/false)) {
    if (auto* bn = module->as<torch::nn::BatchNorm2d>()) bn->options.eps(spec_.batch_norm_eps);
  }
}

void EfficientNetV2Impl::init_weights() {
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
      const double range = 1.0 / std::sqrt(static_cast<double>(linear->options.out_features()));
      linear->weight.uniform_(-range, range);
      linear->bias.zero_();
    }
  }
}

torch::Tensor EfficientNetV2Impl::features(const torch::Tensor& x) {
  return features_->forward(x);  // [N,3,H,W] -> [N,1280,H/32,W/32]
}

std::vector<std::vector<torch::nn::Module*>> EfficientNetV2Impl::body_groups() {
  LTFIT_CHECK(features_->size() == 8, "features holds the stem, six stages and the last conv");
  std::vector<std::vector<torch::nn::Module*>> groups(2);
  for (std::size_t i = 0; i < features_->size(); ++i) {
    groups[i < 4 ? 0 : 1].push_back(features_->ptr(i).get());
  }
  return groups;
}

torch::Tensor EfficientNetV2Impl::linear_head(const torch::Tensor& maps) {
  LTFIT_CHECK(!classifier_.is_empty(), "the linear head was not built");
  namespace F = torch::nn::functional;
  const torch::Tensor pooled =
      F::adaptive_avg_pool2d(maps, F::AdaptiveAvgPool2dFuncOptions(1)).flatten(1);  // [N,1280]
  return classifier_->forward(pooled);  // [N,num_classes]
}

std::vector<ArchInfo> efficientnet_v2_archs() {
  // torchvision 0.29's EfficientNet_V2_S_Weights.IMAGENET1K_V1: bilinear 384 -> 384, ImageNet
  // mean/std, 21,458,488 parameters, acc@1 84.228.
  const EfficientNetV2Spec spec = efficientnet_v2_spec("efficientnet_v2_s");
  ArchInfo info;
  info.name = spec.arch;
  info.family = "efficientnet_v2";
  info.make = family_constructor<EfficientNetV2Impl>(spec);
  info.weights_file = "efficientnet_v2_s-dd5fe13b.pth";
  info.normalization = ImageNormalization{};
  info.interpolation = "bilinear";
  info.eval_resize = 384;
  info.eval_crop = 384;
  info.classifier_prefix = "classifier.";
  info.feature_channels = spec.feature_channels();
  info.parameters = 21458488;
  info.imagenet_top1 = 84.228;
  info.layer_groups = "features.0-3 / features.4-7 / head";
  info.onnx = efficientnet_v2_onnx();
  return {std::move(info)};
}

}  // namespace ltfit
