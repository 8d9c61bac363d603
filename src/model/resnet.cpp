#include "ltfit/model/resnet.h"

#include <torch/nn/functional/pooling.h>
#include <torch/nn/init.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/options/conv.h>

#include "ltfit/util/error.h"

namespace ltfit {

namespace F = torch::nn::functional;

namespace {

torch::nn::Conv2d conv(std::int64_t in, std::int64_t out, std::int64_t kernel,
                       std::int64_t stride) {
  return torch::nn::Conv2d(
      torch::nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(false));
}

}  // namespace

ResNetSpec resnet_spec(const std::string& arch) {
  if (arch == "resnet18") return {arch, false, {2, 2, 2, 2}};
  if (arch == "resnet34") return {arch, false, {3, 4, 6, 3}};
  if (arch == "resnet50") return {arch, true, {3, 4, 6, 3}};
  if (arch == "resnet101") return {arch, true, {3, 4, 23, 3}};
  if (arch == "resnet152") return {arch, true, {3, 8, 36, 3}};
  std::string names;
  for (const auto& name : model_arch_names()) names += (names.empty() ? "" : ", ") + name;
  throw ConfigError("model.arch: expected one of " + names + ", got '" + arch + "'");
}

ResidualBlockImpl::ResidualBlockImpl(std::int64_t in_channels, std::int64_t width,
                                     std::int64_t stride, bool bottleneck)
    : bottleneck_(bottleneck) {
  const std::int64_t out_channels = bottleneck ? width * 4 : width;
  if (bottleneck) {
    conv1_ = register_module("conv1", conv(in_channels, width, 1, 1));
    bn1_ = register_module("bn1", torch::nn::BatchNorm2d(width));
    conv2_ = register_module("conv2", conv(width, width, 3, stride));
    bn2_ = register_module("bn2", torch::nn::BatchNorm2d(width));
    conv3_ = register_module("conv3", conv(width, out_channels, 1, 1));
    bn3_ = register_module("bn3", torch::nn::BatchNorm2d(out_channels));
  } else {
    conv1_ = register_module("conv1", conv(in_channels, width, 3, stride));
    bn1_ = register_module("bn1", torch::nn::BatchNorm2d(width));
    conv2_ = register_module("conv2", conv(width, width, 3, 1));
    bn2_ = register_module("bn2", torch::nn::BatchNorm2d(width));
  }
  if (stride != 1 || in_channels != out_channels) {
    downsample_ = register_module("downsample",
                                  torch::nn::Sequential(conv(in_channels, out_channels, 1, stride),
                                                        torch::nn::BatchNorm2d(out_channels)));
  }
}

torch::Tensor ResidualBlockImpl::forward(const torch::Tensor& x) {
  torch::Tensor out = torch::relu(bn1_(conv1_(x)));
  out = bn2_(conv2_(out));
  if (bottleneck_) out = bn3_(conv3_(torch::relu(out)));
  const torch::Tensor identity = downsample_ ? downsample_->forward(x) : x;
  return torch::relu(out + identity);
}

namespace {

torch::nn::Sequential make_fastai_head(std::int64_t features, std::int64_t num_classes,
                                       double dropout) {
  constexpr std::int64_t kHidden = 512;
  torch::nn::Sequential head(torch::nn::BatchNorm1d(2 * features), torch::nn::Dropout(dropout / 2),
                             torch::nn::Linear(2 * features, kHidden), torch::nn::ReLU(),
                             torch::nn::BatchNorm1d(kHidden), torch::nn::Dropout(dropout),
                             torch::nn::Linear(kHidden, num_classes));
  torch::NoGradGuard no_grad;
  for (auto& module : head->modules(/*include_self=*/false)) {
    if (auto* linear = module->as<torch::nn::Linear>()) {  // fastai: kaiming_normal_, bias 0
      torch::nn::init::kaiming_normal_(linear->weight);
      linear->bias.zero_();
    }
  }
  return head;
}

}  // namespace

ResNetImpl::ResNetImpl(const ResNetSpec& spec, std::int64_t num_classes, HeadKind head,
                       double dropout)
    : spec_(spec) {
  LTFIT_CHECK(spec.blocks.size() == 4, "a ResNet has four stages");
  LTFIT_CHECK(num_classes > 0, "num_classes must be positive");
  conv1_ = register_module(
      "conv1",
      torch::nn::Conv2d(torch::nn::Conv2dOptions(3, 64, 7).stride(2).padding(3).bias(false)));
  bn1_ = register_module("bn1", torch::nn::BatchNorm2d(64));
  layer1_ = register_module("layer1", make_stage(64, spec.blocks[0], 1));
  layer2_ = register_module("layer2", make_stage(128, spec.blocks[1], 2));
  layer3_ = register_module("layer3", make_stage(256, spec.blocks[2], 2));
  layer4_ = register_module("layer4", make_stage(512, spec.blocks[3], 2));
  torch::NoGradGuard no_grad;
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* c = module->as<torch::nn::Conv2d>()) {
      torch::nn::init::kaiming_normal_(c->weight, /*a=*/0.0, torch::kFanOut, torch::kReLU);
    } else if (auto* bn = module->as<torch::nn::BatchNorm2d>()) {
      bn->weight.fill_(1.0);
      bn->bias.zero_();
    }
  }
  if (head == HeadKind::kLinear) {
    fc_ = register_module("fc", torch::nn::Linear(spec.feature_channels(), num_classes));
  } else {
    head_ =
        register_module("head", make_fastai_head(spec.feature_channels(), num_classes, dropout));
  }
}

torch::nn::Sequential ResNetImpl::make_stage(std::int64_t width, int blocks, std::int64_t stride) {
  torch::nn::Sequential stage;
  for (int i = 0; i < blocks; ++i) {
    stage->push_back(ResidualBlock(in_channels_, width, i == 0 ? stride : 1, spec_.bottleneck));
    in_channels_ = spec_.bottleneck ? width * 4 : width;
  }
  return stage;
}

torch::Tensor ResNetImpl::features(const torch::Tensor& x) {
  torch::Tensor out = torch::relu(bn1_(conv1_(x)));
  out = F::max_pool2d(out, F::MaxPool2dFuncOptions(3).stride(2).padding(1));
  return layer4_->forward(layer3_->forward(layer2_->forward(layer1_->forward(out))));
}

torch::Tensor ResNetImpl::forward(const torch::Tensor& x) {
  const torch::Tensor maps = features(x);
  if (head_) {  // fastai's AdaptiveConcatPool2d: [max, avg]
    const torch::Tensor pooled =
        torch::cat({F::adaptive_max_pool2d(maps, F::AdaptiveMaxPool2dFuncOptions(1)),
                    F::adaptive_avg_pool2d(maps, F::AdaptiveAvgPool2dFuncOptions(1))},
                   1);
    return head_->forward(pooled.flatten(1));
  }
  return fc_(F::adaptive_avg_pool2d(maps, F::AdaptiveAvgPool2dFuncOptions(1)).flatten(1));
}

std::vector<std::vector<torch::Tensor>> ResNetImpl::layer_group_parameters() {
  auto collect = [](std::initializer_list<torch::nn::Module*> parts) {
    std::vector<torch::Tensor> params;
    for (auto* part : parts) {
      for (auto& p : part->parameters()) params.push_back(p);
    }
    return params;
  };
  return {collect({conv1_.get(), bn1_.get(), layer1_.get(), layer2_.get()}),
          collect({layer3_.get(), layer4_.get()}),
          head_ ? collect({head_.get()}) : collect({fc_.get()})};
}

std::int64_t count_parameters(const torch::nn::Module& module) {
  std::int64_t total = 0;
  for (const auto& p : module.parameters()) total += p.numel();
  return total;
}

void set_channels_last(ResNet& model) {
  for (auto& p : model->parameters()) {
    if (p.dim() == 4) p.set_data(p.data().contiguous(torch::MemoryFormat::ChannelsLast));
  }
}

}  // namespace ltfit
