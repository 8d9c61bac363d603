// RegNet-Y: torchvision's BlockParams computed from the init parameters, the module tree under
// torchvision's names, its initialisation, fastai's layer groups and the registry rows. See
// regnet.h.
#include "ltfit/model/regnet.h"

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/options/conv.h>
#include <torch/types.h>

#include <algorithm>
#include <cmath>

#include "ltfit/model/batch_norm_fold.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

// torchvision's regnet_y_* builders (constant-initialised: safe in static initialisers).
struct RegNetVariant {
  const char* arch;
  int depth;
  int w_0;
  double w_a;
  double w_m;
  std::int64_t group_width;
};

constexpr RegNetVariant kRegNetVariants[] = {
    {"regnet_y_800mf", 14, 56, 38.84, 2.4, 16},
    {"regnet_y_1_6gf", 27, 48, 20.71, 2.65, 24},
};

// A Sequential that can sit inside another (LibTorch's AnyModule needs a non-template forward):
// torchvision's Conv2dNormActivation, BottleneckTransform and AnyStage.
class RegNetSequentialImpl : public torch::nn::SequentialImpl {
 public:
  using torch::nn::SequentialImpl::SequentialImpl;
  torch::Tensor forward(const torch::Tensor& x) { return SequentialImpl::forward(x); }
};
TORCH_MODULE(RegNetSequential);

// torchvision's Conv2dNormActivation: conv (no bias, padding (k-1)/2) [N,in,H,W] -> BatchNorm
// (eps 1e-5, momentum 0.1) -> ReLU when `relu` -> [N,out,H/s,W/s]; children 0, 1, 2.
ConvNormAct regnet_conv_bn(std::int64_t in, std::int64_t out, std::int64_t kernel,
                           std::int64_t stride, std::int64_t groups, bool relu) {
  ConvNormAct layers(
      torch::nn::Conv2d(torch::nn::Conv2dOptions(in, out, kernel)
                            .stride(stride)
                            .padding((kernel - 1) / 2)
                            .groups(groups)
                            .bias(false)),
      torch::nn::BatchNorm2d(torch::nn::BatchNorm2dOptions(out).eps(1e-5).momentum(0.1)));
  if (relu) layers->push_back(torch::nn::ReLU());
  return layers;
}

// torchvision's _make_divisible(v, divisor) with min_value = divisor.
std::int64_t regnet_make_divisible(double v, std::int64_t divisor) {
  std::int64_t rounded = std::max(
      divisor, static_cast<std::int64_t>(v + static_cast<double>(divisor) / 2) / divisor * divisor);
  if (static_cast<double>(rounded) < 0.9 * v) rounded += divisor;
  return rounded;
}

// Python's round() on a double: halves to even.
std::int64_t regnet_round(double v) { return static_cast<std::int64_t>(std::nearbyint(v)); }

// torchvision's quantised linear block widths, one per block: the same float32 tensor ops
// (arange * w_a + w_0, log ratio over log w_m rounded, w_0 * w_m^k rounded to multiples of 8).
std::vector<std::int64_t> regnet_block_widths(const RegNetSpec& spec) {
  constexpr int kQuant = 8;
  const torch::Tensor widths_cont = torch::arange(spec.depth) * spec.w_a + spec.w_0;
  const torch::Tensor capacity =
      torch::round(torch::log(widths_cont / spec.w_0) / std::log(spec.w_m));
  const torch::Tensor widths =
      (torch::round(torch::divide(spec.w_0 * torch::pow(spec.w_m, capacity), kQuant)) * kQuant)
          .to(torch::kInt);
  std::vector<std::int64_t> out;
  for (int i = 0; i < spec.depth; ++i) out.push_back(widths[i].item<int>());
  return out;
}

}  // namespace

RegNetSpec regnet_spec(const std::string& arch) {
  std::string names;
  for (const auto& v : kRegNetVariants) {
    if (v.arch == arch) return {v.arch, v.depth, v.w_0, v.w_a, v.w_m, v.group_width};
    names += (names.empty() ? "" : ", ") + std::string(v.arch);
  }
  throw ConfigError("model.arch: expected one of " + names + ", got '" + arch + "'");
}

RegNetStages regnet_stages(const RegNetSpec& spec) {
  // torchvision raises ValueError("Invalid RegNet settings") for these; the specs are ltfit's own.
  LTFIT_CHECK(spec.w_a >= 0 && spec.w_0 > 0 && spec.w_m > 1 && spec.w_0 % 8 == 0 &&
                  spec.depth > 0 && spec.group_width > 0,
              "invalid RegNet settings for " + spec.arch);
  // A stage is a run of equal block widths (torchvision's split_helper).
  RegNetStages stages;
  const std::vector<std::int64_t> widths = regnet_block_widths(spec);
  for (std::size_t i = 0; i < widths.size(); ++i) {
    if (i == 0 || widths[i] != widths[i - 1]) {
      stages.widths.push_back(widths[i]);
      stages.depths.push_back(0);
    }
    ++stages.depths.back();
  }
  // _adjust_widths_groups_compatibilty with bottleneck multiplier 1: the group width at most the
  // stage width, the stage width a multiple of it.
  for (auto& width : stages.widths) {
    const std::int64_t group = std::min(spec.group_width, width);
    width = regnet_make_divisible(static_cast<double>(width), group);
    stages.group_widths.push_back(group);
  }
  return stages;
}

ResBottleneckBlockImpl::ResBottleneckBlockImpl(const ResBottleneckOptions& o) {
  LTFIT_CHECK(o.stride == 1 || o.stride == 2, "RegNet block stride must be 1 or 2");
  if (o.in_channels != o.out_channels || o.stride != 1) {
    proj_ = register_module(
        "proj", regnet_conv_bn(o.in_channels, o.out_channels, 1, o.stride, 1, /*relu=*/false));
  }
  // BottleneckTransform, multiplier 1: w_b = out; the SE ratio counts from the block's input.
  const std::int64_t w_b = o.out_channels;
  LTFIT_CHECK(w_b % o.group_width == 0, "RegNet width must be a multiple of the group width");
  torch::nn::Sequential f;  // BottleneckTransform
  f->push_back("a", regnet_conv_bn(o.in_channels, w_b, 1, 1, 1, /*relu=*/true));
  f->push_back("b", regnet_conv_bn(w_b, w_b, 3, o.stride, w_b / o.group_width, /*relu=*/true));
  f->push_back("se",
               SqueezeExcitation(w_b, regnet_round(o.se_ratio * static_cast<double>(o.in_channels)),
                                 SqueezeActivations::kReluSigmoid));
  f->push_back("c", regnet_conv_bn(w_b, o.out_channels, 1, 1, 1, /*relu=*/false));
  f_ = register_module("f", f);
  activation_ = register_module("activation", torch::nn::ReLU());
}

torch::Tensor ResBottleneckBlockImpl::forward(const torch::Tensor& x) {
  const torch::Tensor shortcut = proj_.is_empty() ? x : proj_->forward(x);
  return activation_(shortcut + f_->forward(x));
}

RegNetImpl::RegNetImpl(const RegNetSpec& spec, std::int64_t num_classes, HeadKind head,
                       double dropout)
    : ClassifierImpl(spec.arch, regnet_stages(spec).widths.back()),
      spec_(spec),
      stages_(regnet_stages(spec)) {
  LTFIT_CHECK(num_classes > 0, "num_classes must be positive");
  stem_ = register_module("stem",  // SimpleStemIN
                          regnet_conv_bn(3, spec.stem_width, 3, 2, 1, /*relu=*/true));
  build_trunk();
  if (head == HeadKind::kLinear) {
    avgpool_ = register_module("avgpool", torch::nn::AdaptiveAvgPool2d(1));
    fc_ = register_module("fc", torch::nn::Linear(feature_channels(), num_classes));
  }
  init_weights();  // before the fastai head, which initialises itself as fastai does
  if (head != HeadKind::kLinear) add_fastai_head(num_classes, dropout);
}

void RegNetImpl::build_trunk() {
  trunk_output_ = torch::nn::Sequential();
  std::int64_t width = spec_.stem_width;
  for (std::size_t s = 0; s < stages_.widths.size(); ++s) {
    const std::string stage = "block" + std::to_string(s + 1);
    RegNetSequential blocks;  // torchvision's AnyStage
    for (std::int64_t i = 0; i < stages_.depths[s]; ++i) {
      const ResBottleneckOptions options{i == 0 ? width : stages_.widths[s], stages_.widths[s],
                                         i == 0 ? 2 : 1, stages_.group_widths[s], spec_.se_ratio};
      blocks->push_back(stage + "-" + std::to_string(i), ResBottleneckBlock(options));
    }
    trunk_output_->push_back(stage, blocks.ptr());
    width = stages_.widths[s];
  }
  trunk_output_ = register_module("trunk_output", trunk_output_);
}

void RegNetImpl::init_weights() {
  torch::NoGradGuard no_grad;
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* conv = module->as<torch::nn::Conv2d>()) {
      // torchvision: normal(0, sqrt(2 / fan_out)), fan_out = k*k*out; biases (the SE convs') keep
      // PyTorch's default initialisation, as torchvision leaves them.
      const auto& k = conv->options.kernel_size();
      const double fan_out =
          static_cast<double>(k->at(0) * k->at(1) * conv->options.out_channels());
      conv->weight.normal_(0.0, std::sqrt(2.0 / fan_out));
    } else if (auto* bn = module->as<torch::nn::BatchNorm2d>()) {
      bn->weight.fill_(1.0);
      bn->bias.zero_();
    } else if (auto* linear = module->as<torch::nn::Linear>()) {
      linear->weight.normal_(0.0, 0.01);
      linear->bias.zero_();
    }
  }
}

torch::Tensor RegNetImpl::features(const torch::Tensor& x) {
  return trunk_output_->forward(stem_->forward(x));  // [N,3,H,W] -> [N,C,H/32,W/32]
}

std::vector<std::vector<torch::nn::Module*>> RegNetImpl::body_groups() {
  LTFIT_CHECK(trunk_output_->size() == 4, "a RegNet trunk has four stages");
  return {{stem_.get(), trunk_output_->ptr(0).get(), trunk_output_->ptr(1).get()},
          {trunk_output_->ptr(2).get(), trunk_output_->ptr(3).get()}};
}

torch::Tensor RegNetImpl::linear_head(const torch::Tensor& maps) {
  LTFIT_CHECK(!fc_.is_empty(), "the linear head was not built");
  return fc_(avgpool_(maps).flatten(1));  // [N,C,h,w] -> [N,C] -> [N,num_classes]
}

namespace {

// torchvision 0.29's RegNet_Y_*_Weights.IMAGENET1K_V1 (bilinear, resize 256, crop 224, ImageNet
// mean/std). V1 as for ResNet: the files are in torch's zip format (published with torchvision
// 0.11, torch 1.10), and they are the paper's recipe.
struct RegNetPublished {
  const char* arch;
  const char* file;
  std::int64_t parameters;
  double top1;
};

constexpr RegNetPublished kRegNetWeights[] = {
    {"regnet_y_800mf", "regnet_y_800mf-1b27b58c.pth", 6432512, 76.420},
    {"regnet_y_1_6gf", "regnet_y_1_6gf-b11a554e.pth", 11202430, 77.950},
};

}  // namespace

std::vector<ArchInfo> regnet_archs() {
  std::vector<ArchInfo> rows;
  for (const auto& w : kRegNetWeights) {
    const RegNetSpec spec = regnet_spec(w.arch);
    ArchInfo info;
    info.name = w.arch;
    info.family = "regnet";
    info.make = family_constructor<RegNetImpl>(spec);
    info.weights_file = w.file;
    info.normalization = ImageNormalization{};
    info.interpolation = "bilinear";
    info.eval_resize = 256;
    info.eval_crop = 224;
    info.classifier_prefix = "fc.";
    info.feature_channels = regnet_stages(spec).widths.back();
    info.parameters = w.parameters;
    info.imagenet_top1 = w.top1;
    info.layer_groups = "stem, trunk_output.block1-2 / trunk_output.block3-4 / head";
    info.onnx = regnet_onnx();
    rows.push_back(std::move(info));
  }
  return rows;
}

}  // namespace ltfit
