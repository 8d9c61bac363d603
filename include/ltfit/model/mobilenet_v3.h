// MobileNetV3-Large and MobileNetV3-Small in LibTorch with torchvision's exact module tree, as
// ClassifierImpl.
//
// The body is torchvision's `features` Sequential: features.0 the stem Conv2dNormActivation (3x3/2
// conv, BatchNorm, Hardswish), then one inverted-residual block per row of torchvision's table
// (each block's `block` Sequential: 1x1 expand conv-BN-act when the expanded width differs from
// the input's, depthwise conv-BN-act, SqueezeExcitation `avgpool`/`fc1`/`fc2` with ReLU and
// Hardsigmoid where the row says so, 1x1 project conv-BN; act is ReLU or Hardswish per row;
// residual when stride 1 and the width stays), and last the 1x1 conv-BN-Hardswish to 6x the last
// block's channels (960 / 576): the feature map, where fastai cuts (at the pooling layer). The
// linear head is torchvision's `classifier` (Linear to 1280 / 1024, Hardswish, Dropout(0.2),
// Linear: `classifier.0.weight`, `classifier.3.weight`), so state dicts map one to one and
// parameter counts equal torchvision's (5,483,032 / 2,542,856 with 1000 classes). Every BatchNorm
// has eps 0.001 and momentum 0.01, as torchvision's. Initialisation follows torchvision:
// Kaiming-normal (fan_out) convs with zero biases, BatchNorm weight 1 and bias 0, Linear
// normal(0, 0.01) with zero bias.
//
// fastai has no split for MobileNet (its default puts the whole body in one group), so the two
// body groups split where the ResNet and EfficientNet splits do: at the first block of stride 16,
// the rest of the body (deeper, more parameters, more task-specific) in the second group:
// large features.0-6 | features.7-16 | head, small features.0-3 | features.4-12 | head.
// Modules are not thread-safe; use one per thread or guard calls.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/pimpl.h>

#include "ltfit/config/config.h"  // HeadKind
#include "ltfit/model/arch_registry.h"
#include "ltfit/model/classifier.h"
#include "ltfit/model/efficientnet.h"  // SqueezeExcitation, efficientnet_channels

namespace ltfit {

// torch.nn.Hardswish: x * relu6(x + 3) / 6 (LibTorch has no module for it). [any] -> same shape.
class HardswishImpl : public torch::nn::Module {
 public:
  torch::Tensor forward(const torch::Tensor& x);
};
TORCH_MODULE(Hardswish);

// torch.nn.Hardsigmoid: relu6(x + 3) / 6. [any] -> same shape.
class HardsigmoidImpl : public torch::nn::Module {
 public:
  torch::Tensor forward(const torch::Tensor& x);
};
TORCH_MODULE(Hardsigmoid);

// One row of torchvision's table (InvertedResidualConfig at width 1.0, dilation 1).
struct MobileNetV3BlockOptions {
  std::int64_t in_channels = 0;
  std::int64_t kernel = 3;
  std::int64_t expanded_channels = 0;
  std::int64_t out_channels = 0;
  bool squeeze_excitation = false;
  bool hardswish = false;  // the activation: Hardswish ("HS"), else ReLU ("RE")
  std::int64_t stride = 1;
};

// torchvision's InvertedResidual: expand, depthwise, squeeze-excitation, project; residual when
// the shape stays. Squeeze width: _make_divisible(expanded / 4, 8).
class MobileNetV3BlockImpl : public torch::nn::Module {
 public:
  explicit MobileNetV3BlockImpl(const MobileNetV3BlockOptions& options);
  torch::Tensor forward(const torch::Tensor& x);  // [N,Cin,H,W] -> [N,Cout,H/s,W/s]
  bool has_residual() const { return use_residual_; }

 private:
  bool use_residual_;
  torch::nn::Sequential block_{nullptr};
};
TORCH_MODULE(MobileNetV3Block);

// What differs between the two variants (torchvision's _mobilenet_v3_conf).
struct MobileNetV3Spec {
  std::string arch;                             // mobilenet_v3_large, mobilenet_v3_small
  std::vector<MobileNetV3BlockOptions> blocks;  // features.1 ... features.<blocks>
  std::int64_t last_channel = 0;                // the classifier's hidden width: 1280 / 1024
  double dropout = 0.2;                         // torchvision classifier's dropout p
  std::size_t second_group = 0;  // first features index of the second layer group: 7 / 4
  // 6 x the last block's channels: 960 (large), 576 (small).
  std::int64_t feature_channels() const;
};

// Looks up `arch`; throws ConfigError for an unknown name, listing the known ones.
MobileNetV3Spec mobilenet_v3_spec(const std::string& arch);

class MobileNetV3Impl : public ClassifierImpl {
 public:
  // `dropout` is the fastai head's p; the linear head uses the spec's (torchvision's) dropout.
  MobileNetV3Impl(const MobileNetV3Spec& spec, std::int64_t num_classes,
                  HeadKind head = HeadKind::kLinear, double dropout = 0.5);

  // [N,3,H,W] float, ImageNet-normalised -> [N,C,H/32,W/32], the output of `features`.
  torch::Tensor features(const torch::Tensor& x) override;

  const MobileNetV3Spec& spec() const { return spec_; }

 protected:
  // features.0 .. second_group-1 | second_group .. last.
  std::vector<std::vector<torch::nn::Module*>> body_groups() override;
  // [N,C,h,w] -> average pool -> [N,C] -> classifier (Linear, Hardswish, Dropout, Linear)
  // -> [N,num_classes].
  torch::Tensor linear_head(const torch::Tensor& maps) override;

 private:
  void build_features();
  void init_weights();

  MobileNetV3Spec spec_;
  torch::nn::Sequential features_{nullptr};
  torch::nn::Sequential classifier_{nullptr};  // linear head only
};
TORCH_MODULE(MobileNetV3);

// The family's ONNX graph (mobilenet_v3_onnx.cpp): HardSwish, squeeze-excitation with
// HardSigmoid, inverted-residual adds, the classifier (its Dropout gone). Needs opset 14+ (ltfit
// writes 17+).
OnnxFamily mobilenet_v3_onnx();

// The registry rows of mobilenet_v3_large and mobilenet_v3_small (torchvision's IMAGENET1K_V1
// files).
std::vector<ArchInfo> mobilenet_v3_archs();

}  // namespace ltfit
