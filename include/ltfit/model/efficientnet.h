// EfficientNet-B0/B1/B2/B3 in LibTorch with torchvision's exact module tree, as ClassifierImpl.
//
// The body is torchvision's `features` Sequential: features.0 the stem Conv2dNormActivation
// (3x3/2 conv, BatchNorm, SiLU), features.1-7 the MBConv stages (each block's `block` Sequential:
// 1x1 expand conv-BN-SiLU when the expand ratio is not 1, depthwise conv-BN-SiLU,
// SqueezeExcitation `avgpool`/`fc1`/`fc2`, 1x1 project conv-BN), features.8 the 1x1 conv-BN-SiLU
// to 4x the last stage's channels. The linear head is torchvision's `classifier` (Dropout, Linear:
// `classifier.1.weight`), so state dicts map one to one and parameter counts equal torchvision's
// (5,288,548 / 7,794,184 / 9,109,994 / 12,233,232 with 1000 classes). Residual blocks drop their
// branch per sample (StochasticDepth "row", p = 0.2 * block index / blocks) while training.
// Initialisation follows torchvision: Kaiming-normal (fan_out) convs with zero biases, BatchNorm
// weight 1 and bias 0, Linear uniform(+-1/sqrt(out_features)) with zero bias. fastai's layer
// groups: features.0-3 | features.4-8 | head. Modules are not thread-safe; use one per thread.
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

namespace ltfit {

// The variant-specific scaling of EfficientNet-B0 (torchvision's _efficientnet_conf).
struct EfficientNetSpec {
  std::string arch;                    // efficientnet_b0 ... efficientnet_b3
  double width_mult = 1.0;             // channel multiplier (rounded to multiples of 8)
  double depth_mult = 1.0;             // blocks-per-stage multiplier (rounded up)
  double dropout = 0.2;                // torchvision classifier's dropout p
  double stochastic_depth_prob = 0.2;  // of the last block; block i gets p * i / blocks
  // 4 x the last stage's channels: 1280 (B0, B1), 1408 (B2), 1536 (B3).
  std::int64_t feature_channels() const;
};

// Looks up `arch`; throws ConfigError for an unknown name, listing the known ones.
EfficientNetSpec efficientnet_spec(const std::string& arch);

// torchvision's _make_divisible(channels * width_mult, 8): the nearest multiple of 8, at least 8
// and not below 90% of the product.
std::int64_t efficientnet_channels(std::int64_t channels, double width_mult);

// torchvision.ops.StochasticDepth(p, "row"): while training, each sample's input is zeroed with
// probability p and the rest scaled by 1 / (1 - p); the identity in eval mode or for p = 0.
class StochasticDepthImpl : public torch::nn::Module {
 public:
  explicit StochasticDepthImpl(double p);
  torch::Tensor forward(const torch::Tensor& x);  // [N,...] -> [N,...]
  double p() const { return p_; }

 private:
  double p_;
};
TORCH_MODULE(StochasticDepth);

// torchvision.ops.SqueezeExcitation's `activation` and `scale_activation` as each family builds
// it: EfficientNet SiLU and Sigmoid, RegNet ReLU and Sigmoid, MobileNetV3 ReLU and Hardsigmoid.
enum class SqueezeActivations { kSiluSigmoid, kReluSigmoid, kReluHardsigmoid };

// torchvision.ops.SqueezeExcitation: x * scale_activation(fc2(activation(fc1(avgpool(x))))).
class SqueezeExcitationImpl : public torch::nn::Module {
 public:
  SqueezeExcitationImpl(std::int64_t channels, std::int64_t squeeze_channels,
                        SqueezeActivations activations = SqueezeActivations::kSiluSigmoid);
  torch::Tensor forward(const torch::Tensor& x);  // [N,C,H,W] -> [N,C,H,W]
  SqueezeActivations activations() const { return activations_; }

 private:
  SqueezeActivations activations_;
  torch::nn::AdaptiveAvgPool2d avgpool_{nullptr};
  torch::nn::Conv2d fc1_{nullptr}, fc2_{nullptr};  // 1x1 convs with bias
};
TORCH_MODULE(SqueezeExcitation);

// The squeeze-excitation at `path` on `x` as ONNX nodes (efficientnet_onnx.cpp), for every family
// that uses it.
std::string squeeze_excitation_onnx(OnnxEmitter& e, const std::string& path,
                                    const SqueezeExcitationImpl& se, const std::string& x);

// One MBConv block (expand, depthwise, squeeze-excitation, project; residual when the shape stays).
struct MBConvOptions {
  double expand_ratio = 1;
  std::int64_t kernel = 3;
  std::int64_t stride = 1;
  std::int64_t in_channels = 0;
  std::int64_t out_channels = 0;
  double stochastic_depth_prob = 0;
};

class MBConvImpl : public torch::nn::Module {
 public:
  explicit MBConvImpl(const MBConvOptions& options);
  torch::Tensor forward(const torch::Tensor& x);  // [N,Cin,H,W] -> [N,Cout,H/s,W/s]
  bool has_residual() const { return use_residual_; }

 private:
  bool use_residual_;
  torch::nn::Sequential block_{nullptr};
  StochasticDepth stochastic_depth_{nullptr};
};
TORCH_MODULE(MBConv);

class EfficientNetImpl : public ClassifierImpl {
 public:
  // `dropout` is the fastai head's p; the linear head uses the spec's (torchvision's) dropout.
  EfficientNetImpl(const EfficientNetSpec& spec, std::int64_t num_classes,
                   HeadKind head = HeadKind::kLinear, double dropout = 0.5);

  // [N,3,H,W] float, ImageNet-normalised -> [N,C,H/32,W/32], the output of `features`.
  torch::Tensor features(const torch::Tensor& x) override;

  const EfficientNetSpec& spec() const { return spec_; }

 protected:
  // features.0-3 | features.4-8.
  std::vector<std::vector<torch::nn::Module*>> body_groups() override;
  // [N,C,h,w] -> average pool -> [N,C] -> classifier (Dropout, Linear) -> [N,num_classes].
  torch::Tensor linear_head(const torch::Tensor& maps) override;

 private:
  void build_features();
  void init_weights();

  EfficientNetSpec spec_;
  torch::nn::Sequential features_{nullptr};
  torch::nn::Sequential classifier_{nullptr};  // linear head only
};
TORCH_MODULE(EfficientNet);

// The family's ONNX graph (efficientnet_onnx.cpp): SiLU, squeeze-excitation, MBConv residuals
// (stochastic depth gone), the classifier (its Dropout gone).
OnnxFamily efficientnet_onnx();

// The registry rows of efficientnet_b0 ... efficientnet_b3 (torchvision's IMAGENET1K_V1 files).
std::vector<ArchInfo> efficientnet_archs();

}  // namespace ltfit
