// RegNet-Y 800MF and 1.6GF in LibTorch with torchvision's exact module tree, as ClassifierImpl.
//
// The stage widths, depths and group widths are computed from RegNet's init parameters as
// torchvision's BlockParams.from_init_params does (quantised linear widths, then widths adjusted
// to the group width). The body is torchvision's: `stem` (SimpleStemIN: 3x3/2 conv, BatchNorm,
// ReLU; children 0, 1, 2) and `trunk_output`, a Sequential of the AnyStages `block1` .. `block4`
// whose ResBottleneckBlocks are named `block{stage}-{i}` (trunk_output.block1.block1-0). A block
// is `proj` (1x1 conv-BN, when the width or the stride changes) + `f` (BottleneckTransform:
// `a` 1x1 conv-BN-ReLU, `b` grouped 3x3 conv-BN-ReLU, `se` squeeze-excitation with ReLU and
// Sigmoid, `c` 1x1 conv-BN), then ReLU. The linear head is `avgpool` + flatten + `fc`, so state
// dicts map one to one and parameter counts equal torchvision's (6,432,512 / 11,202,430 with
// 1000 classes). BatchNorm eps 1e-5, momentum 0.1. Initialisation as torchvision's RegNet: conv
// weights normal(0, sqrt(2 / (k*k*out))), SE conv biases left at PyTorch's default, BatchNorm
// weight 1 and bias 0, Linear normal(0, 0.01) with zero bias.
//
// fastai's layer groups: stem, block1, block2 | block3, block4 | head. The split is where ResNet's
// is (conv1-layer2 | layer3-layer4: the stride-4/8 stages against the stride-16/32 ones), so a
// discriminative learning-rate slice treats the two families alike; the later group holds most
// of the body's parameters, as in fastai's ResNet split. Modules are not thread-safe; use one per
// thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/pooling.h>
#include <torch/nn/pimpl.h>

#include "ltfit/config/config.h"  // HeadKind
#include "ltfit/model/arch_registry.h"
#include "ltfit/model/batch_norm_fold.h"
#include "ltfit/model/classifier.h"
#include "ltfit/model/efficientnet.h"  // SqueezeExcitation

namespace ltfit {

// RegNet's init parameters (torchvision's regnet_y_* builders).
struct RegNetSpec {
  std::string arch;              // regnet_y_800mf, regnet_y_1_6gf
  int depth = 0;                 // blocks in all
  int w_0 = 0;                   // initial width
  double w_a = 0;                // width slope
  double w_m = 0;                // width step in log space
  std::int64_t group_width = 0;  // channels per group of the 3x3 convs
  double se_ratio = 0.25;        // squeeze channels = round(se_ratio * block input width)
  std::int64_t stem_width = 32;
};

// Looks up `arch`; throws ConfigError for an unknown name, listing the known ones.
RegNetSpec regnet_spec(const std::string& arch);

// Per-stage settings (torchvision's BlockParams; strides are 2 and bottleneck multipliers 1 for
// every stage).
struct RegNetStages {
  std::vector<std::int64_t> depths;        // blocks per stage
  std::vector<std::int64_t> widths;        // output channels per stage
  std::vector<std::int64_t> group_widths;  // channels per group per stage
};

// torchvision's BlockParams.from_init_params (bottleneck multiplier 1), computed with the same
// float32 tensor arithmetic so the rounding matches: 800MF gives depths 1,3,8,2, widths
// 64,144,320,784, group width 16. An internal error (LTFIT_CHECK) for settings torchvision
// refuses (w_0 not a multiple of 8, w_m <= 1, ...).
RegNetStages regnet_stages(const RegNetSpec& spec);

// torchvision's ResBottleneckBlock (bottleneck multiplier 1, squeeze-excitation on).
struct ResBottleneckOptions {
  std::int64_t in_channels = 0;
  std::int64_t out_channels = 0;
  std::int64_t stride = 1;
  std::int64_t group_width = 1;
  double se_ratio = 0.25;
};

class ResBottleneckBlockImpl : public torch::nn::Module {
 public:
  explicit ResBottleneckBlockImpl(const ResBottleneckOptions& options);
  // [N,Cin,H,W] -> relu(proj(x) or x + f(x)) [N,Cout,H/stride,W/stride]
  torch::Tensor forward(const torch::Tensor& x);
  bool has_projection() const { return !proj_.is_empty(); }

 private:
  ConvNormAct proj_{nullptr};         // 1x1 conv-BN, only when the shape changes
  torch::nn::Sequential f_{nullptr};  // a, b, se, c
  torch::nn::ReLU activation_{nullptr};
};
TORCH_MODULE(ResBottleneckBlock);

class RegNetImpl : public ClassifierImpl {
 public:
  // `dropout` is the fastai head's p (torchvision's RegNet head has no dropout).
  RegNetImpl(const RegNetSpec& spec, std::int64_t num_classes, HeadKind head = HeadKind::kLinear,
             double dropout = 0.5);

  // [N,3,H,W] float, ImageNet-normalised -> [N,C,H/32,W/32], the output of `trunk_output`.
  torch::Tensor features(const torch::Tensor& x) override;

  const RegNetSpec& spec() const { return spec_; }
  const RegNetStages& stages() const { return stages_; }

 protected:
  // stem, trunk_output.block1-2 | trunk_output.block3-4.
  std::vector<std::vector<torch::nn::Module*>> body_groups() override;
  // [N,C,h,w] -> avgpool -> [N,C] -> fc -> [N,num_classes].
  torch::Tensor linear_head(const torch::Tensor& maps) override;

 private:
  void build_trunk();
  void init_weights();

  RegNetSpec spec_;
  RegNetStages stages_;
  ConvNormAct stem_{nullptr};
  torch::nn::Sequential trunk_output_{nullptr};
  torch::nn::AdaptiveAvgPool2d avgpool_{nullptr};
  torch::nn::Linear fc_{nullptr};  // linear head only
};
TORCH_MODULE(RegNet);

// The family's ONNX graph (regnet_onnx.cpp): stem, residual bottleneck blocks with their
// projections and ReLU squeeze-excitation, average pool and fc.
OnnxFamily regnet_onnx();

// The registry rows of regnet_y_800mf and regnet_y_1_6gf (torchvision's IMAGENET1K_V1 files).
std::vector<ArchInfo> regnet_archs();

}  // namespace ltfit
