// The ResNet family in LibTorch with torchvision's exact module tree: ResNet-18/34/50/101/152,
// ResNeXt-50 32x4d and Wide ResNet-50-2.
//
// Parameter and buffer names equal torchvision's (`conv1.weight`, `layer1.0.bn1.running_mean`,
// `layer2.0.downsample.0.weight`, `fc.bias`, ...) so torchvision state dicts map one to one, and
// parameter counts equal torchvision's (11,689,512 / 21,797,672 / 25,557,032 / 44,549,160 /
// 60,192,808 / 25,028,904 / 68,883,240 with 1000 classes). Bottleneck blocks stride in the 3x3
// conv (ResNet v1.5) and are `groups` x `width_per_group` wide there, as torchvision's are.
// Initialisation follows torchvision: Kaiming-normal (fan_out, relu) convs, BatchNorm weight 1
// and bias 0, LibTorch's default Linear init. fastai's layer groups: [conv1, bn1, layer1,
// layer2] | [layer3, layer4] | head. Modules are not thread-safe; use one per thread or guard
// calls.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include "ltfit/model/arch_registry.h"
#include "ltfit/model/batch_norm_fold.h"
#include "ltfit/model/classifier.h"

namespace ltfit {

// The shape of one ResNet.
struct ResNetSpec {
  std::string arch;          // resnet18 ... resnet152, resnext50_32x4d, wide_resnet50_2
  bool bottleneck = false;   // Bottleneck (expansion 4) or BasicBlock (expansion 1)
  std::vector<int> blocks;   // blocks per stage, e.g. {2, 2, 2, 2}
  int groups = 1;            // grouped 3x3 convolution in bottlenecks (ResNeXt: 32)
  int width_per_group = 64;  // bottleneck width per group at 64 planes (Wide: 128)
  std::int64_t feature_channels() const { return bottleneck ? 2048 : 512; }
};

// The family's registry rows (arch_registry.h).
std::vector<ArchInfo> resnet_archs();

// The family's ONNX graph (resnet_onnx.cpp): stem, residual blocks, avgpool and fc.
OnnxFamily resnet_onnx();

// The spec of a ResNet-family arch; ConfigError for any other name.
ResNetSpec resnet_spec(const std::string& arch);

// One residual block, basic (two 3x3) or bottleneck (1x1, grouped 3x3, 1x1).
class ResidualBlockImpl : public torch::nn::Module {
 public:
  ResidualBlockImpl(std::int64_t in_channels, std::int64_t planes, std::int64_t stride,
                    const ResNetSpec& spec);
  torch::Tensor forward(const torch::Tensor& x);  // [N,C,H,W] -> [N,C',H/s,W/s]
  // Folds bn1, bn2 (and bn3) into their convolutions (batch_norm_fold.h); returns how many. The
  // downsample is a ConvNormAct, which ClassifierImpl::fold_batch_norms folds.
  std::int64_t fold_batch_norms();

 private:
  bool bottleneck_;
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr}, bn3_{nullptr};
  ConvNormAct downsample_{nullptr};  // conv, BatchNorm; when the shape changes
};
TORCH_MODULE(ResidualBlock);

// The ResNet body (stem + four stages) and its classifier head.
class ResNetImpl : public ClassifierImpl {
 public:
  // `stem`: torchvision's (a 7×7 stride-2 conv, a 3×3 stride-2 max-pool) or the CIFAR
  // adaptation (conv1 a 3×3 stride-1 conv, padding 1; no max-pool), the same change as
  // `model.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False); model.maxpool = nn.Identity()` on
  // torchvision's model: the same module names, conv1's weight [64, 3, 3, 3].
  ResNetImpl(const ResNetSpec& spec, std::int64_t num_classes, HeadKind head = HeadKind::kLinear,
             double dropout = 0.5, Stem stem = Stem::kImagenet);

  // [N,3,H,W] float, ImageNet-normalised -> [N,C,H/32,W/32] feature map (body[:-2]); the CIFAR
  // stem: [N,C,H/8,W/8].
  torch::Tensor features(const torch::Tensor& x) override;
  const ResNetSpec& spec() const { return spec_; }
  bool cifar_stem() const { return cifar_stem_; }

 protected:
  std::vector<std::vector<torch::nn::Module*>> body_groups() override;
  torch::Tensor linear_head(const torch::Tensor& maps) override;  // avgpool, fc
  std::int64_t fold_body_batch_norms() override;                  // bn1 and every block's norms

 private:
  torch::nn::Sequential make_stage(std::int64_t planes, int blocks, std::int64_t stride);

  ResNetSpec spec_;
  bool cifar_stem_ = false;
  std::int64_t in_channels_ = 64;
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  torch::nn::Sequential layer1_{nullptr}, layer2_{nullptr}, layer3_{nullptr}, layer4_{nullptr};
  torch::nn::Linear fc_{nullptr};  // the linear head (torchvision's)
};
TORCH_MODULE(ResNet);

}  // namespace ltfit
