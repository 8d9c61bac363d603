// ResNet-18/34/50/101/152 in LibTorch with torchvision's exact module tree.
//
// Parameter and buffer names equal torchvision's (`conv1.weight`, `layer1.0.bn1.running_mean`,
// `layer2.0.downsample.0.weight`, `fc.bias`, ...) so torchvision state dicts map one to one, and
// parameter counts equal torchvision's (11,689,512 / 21,797,672 / 25,557,032 / 44,549,160 /
// 60,192,808 with 1000 classes). Bottleneck blocks stride in the 3x3 conv (ResNet v1.5), as
// torchvision does. Initialisation follows torchvision: Kaiming-normal (fan_out, relu) convs,
// BatchNorm weight 1 and bias 0, LibTorch's default Linear init.
// Modules are not thread-safe; use one per thread or guard calls.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/pimpl.h>

#include "ltfit/config/config.h"  // HeadKind

namespace ltfit {

// The depth-specific shape of a ResNet.
struct ResNetSpec {
  std::string arch;         // resnet18 ... resnet152
  bool bottleneck = false;  // Bottleneck (expansion 4) or BasicBlock (expansion 1)
  std::vector<int> blocks;  // blocks per stage, e.g. {2, 2, 2, 2}
  std::int64_t feature_channels() const { return bottleneck ? 2048 : 512; }
};

// Looks up `arch`; throws ConfigError for an unknown name, listing the known ones.
ResNetSpec resnet_spec(const std::string& arch);


// One residual block, basic (two 3x3) or bottleneck (1x1, 3x3, 1x1).
class ResidualBlockImpl : public torch::nn::Module {
 public:
  ResidualBlockImpl(std::int64_t in_channels, std::int64_t width, std::int64_t stride,
                    bool bottleneck);
  torch::Tensor forward(const torch::Tensor& x);  // [N,C,H,W] -> [N,C',H/s,W/s]

 private:
  bool bottleneck_;
  torch::nn::Conv2d conv1_{nullptr}, conv2_{nullptr}, conv3_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr}, bn3_{nullptr};
  torch::nn::Sequential downsample_{nullptr};
};
TORCH_MODULE(ResidualBlock);

// The ResNet body (stem + four stages) and its classifier head.
class ResNetImpl : public torch::nn::Module {
 public:
  ResNetImpl(const ResNetSpec& spec, std::int64_t num_classes, HeadKind head = HeadKind::kLinear,
             double dropout = 0.5);

  // [N,3,H,W] float, ImageNet-normalised -> [N,C,H/32,W/32] feature map (body[:-2]).
  torch::Tensor features(const torch::Tensor& x);
  // [N,3,H,W] -> [N,num_classes] logits.
  torch::Tensor forward(const torch::Tensor& x);

  const ResNetSpec& spec() const { return spec_; }
  // fastai's layer groups: 0 = stem, layer1, layer2; 1 = layer3, layer4; 2 = the head.
  std::vector<std::vector<torch::Tensor>> layer_group_parameters();

 private:
  torch::nn::Sequential make_stage(std::int64_t width, int blocks, std::int64_t stride);

  ResNetSpec spec_;
  std::int64_t in_channels_ = 64;
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  torch::nn::Sequential layer1_{nullptr}, layer2_{nullptr}, layer3_{nullptr}, layer4_{nullptr};
  torch::nn::Linear fc_{nullptr};        // linear head
  torch::nn::Sequential head_{nullptr};  // fastai head (after concat pooling)
};
TORCH_MODULE(ResNet);

// Number of parameters (not buffers) in `module`.
std::int64_t count_parameters(const torch::nn::Module& module);

// Stores every 4-D parameter (the convolutions' weights) channels-last (NHWC), for
// train.channels_last; the model then runs on channels-last batches without conversions.
void set_channels_last(ResNet& model);

}  // namespace ltfit
