// EfficientNetV2-S in LibTorch with torchvision's exact module tree, as ClassifierImpl.
//
// The body is torchvision's `features` Sequential: features.0 the stem Conv2dNormActivation
// (3x3/2 conv 3->24, BatchNorm, SiLU); features.1-3 the FusedMBConv stages (each block's `block`
// Sequential: a kxk conv-BN-SiLU with the stride, then a 1x1 project conv-BN when the expand ratio
// is not 1; a single kxk conv-BN-SiLU when it is); features.4-6 the MBConv stages (efficientnet.h's
// MBConv: 1x1 expand, depthwise, SqueezeExcitation, 1x1 project); features.7 the 1x1
// conv-BN-SiLU 256->1280. Every BatchNorm of the body has eps 1e-3 (torchvision's
// `partial(nn.BatchNorm2d, eps=1e-03)` for V2). The linear head is torchvision's `classifier`
// (Dropout 0.2, Linear: `classifier.1.weight`), so state dicts map one to one and the parameter
// count equals torchvision's (21,458,488 with 1000 classes). Residual blocks drop their branch per
// sample (StochasticDepth "row", p = 0.2 * block index / 40) while training. Initialisation follows
// torchvision: Kaiming-normal (fan_out) convs with zero biases, BatchNorm weight 1 and bias 0,
// Linear uniform(+-1/sqrt(out_features)) with zero bias. fastai's layer groups: features.0-3 (stem
// and the fused stages) | features.4-7 (the MBConv stages and the last conv) | head.
// Modules are not thread-safe; use one per thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/pimpl.h>

#include "ltfit/config/config.h"  // HeadKind
#include "ltfit/model/arch_registry.h"
#include "ltfit/model/classifier.h"
#include "ltfit/model/efficientnet.h"  // MBConv, MBConvOptions, StochasticDepth

namespace ltfit {

// torchvision's efficientnet_v2_s keyword arguments.
struct EfficientNetV2Spec {
  std::string arch;                    // efficientnet_v2_s
  double dropout = 0.2;                // torchvision classifier's dropout p
  double stochastic_depth_prob = 0.2;  // of the last block; block i gets p * i / blocks
  double batch_norm_eps = 1e-3;        // every BatchNorm of the body
  std::int64_t feature_channels() const { return 1280; }  // last_channel
};

// Looks up `arch`; throws ConfigError for an unknown name, listing the known ones.
EfficientNetV2Spec efficientnet_v2_spec(const std::string& arch);

// torchvision's FusedMBConv: the expand and depthwise convs of MBConv fused into one kxk conv
// (MBConvOptions' fields mean what they mean there); no squeeze-excitation. Residual (with
// stochastic depth) when the stride is 1 and the channels stay.
class FusedMBConvImpl : public torch::nn::Module {
 public:
  explicit FusedMBConvImpl(const MBConvOptions& options);
  torch::Tensor forward(const torch::Tensor& x);  // [N,Cin,H,W] -> [N,Cout,H/s,W/s]
  bool has_residual() const { return use_residual_; }

 private:
  bool use_residual_;
  torch::nn::Sequential block_{nullptr};
  StochasticDepth stochastic_depth_{nullptr};
};
TORCH_MODULE(FusedMBConv);

class EfficientNetV2Impl : public ClassifierImpl {
 public:
  // `dropout` is the fastai head's p; the linear head uses the spec's (torchvision's) dropout.
  EfficientNetV2Impl(const EfficientNetV2Spec& spec, std::int64_t num_classes,
                     HeadKind head = HeadKind::kLinear, double dropout = 0.5);

  // [N,3,H,W] float, ImageNet-normalised -> [N,1280,H/32,W/32], the output of `features`.
  torch::Tensor features(const torch::Tensor& x) override;

  const EfficientNetV2Spec& spec() const { return spec_; }

 protected:
  // features.0-3 (stem, fused stages) | features.4-7 (MBConv stages, last conv).
  std::vector<std::vector<torch::nn::Module*>> body_groups() override;
  // [N,1280,h,w] -> average pool -> [N,1280] -> classifier (Dropout, Linear) -> [N,num_classes].
  torch::Tensor linear_head(const torch::Tensor& maps) override;

 private:
  void build_features();
  void init_weights();

  EfficientNetV2Spec spec_;
  torch::nn::Sequential features_{nullptr};
  torch::nn::Sequential classifier_{nullptr};  // linear head only
};
TORCH_MODULE(EfficientNetV2);

// The family's ONNX graph (efficientnet_v2_onnx.cpp): FusedMBConv residuals, and MBConv and
// squeeze-excitation as efficientnet_onnx() writes them; BatchNorm with the body's eps 1e-3.
OnnxFamily efficientnet_v2_onnx();

// The registry row of efficientnet_v2_s (torchvision's EfficientNet_V2_S_Weights.IMAGENET1K_V1).
std::vector<ArchInfo> efficientnet_v2_archs();

}  // namespace ltfit
