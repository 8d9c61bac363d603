// ConvNeXt-Tiny and ConvNeXt-Small in LibTorch with torchvision's exact module tree.
//
// Parameter names equal torchvision's (`features.0.0.weight`, `features.0.1.weight` for the stem's
// LayerNorm2d, `features.1.0.block.0.weight`, `features.1.0.layer_scale`, `features.2.1.weight`,
// `classifier.0.bias`, `classifier.2.weight`, ...) so torchvision state dicts map one to one, and
// parameter counts equal torchvision's (28,589,128 / 50,223,688 with 1000 classes). A block is
// torchvision's CNBlock: depthwise 7x7 conv, channels-last LayerNorm (eps 1e-6), Linear(C, 4C),
// exact GELU, Linear(4C, C), scaled by a learnable [C,1,1] layer scale (init 1e-6, exempt from
// weight decay) and dropped per sample by stochastic depth in training, its probability rising
// linearly with the block's depth. Initialisation follows torchvision: truncated-normal (std
// 0.02) conv and linear weights, zero biases, LayerNorm weight 1 and bias 0. With fastai's head
// the body is `features` (fastai cuts at the pooling layer) and torchvision's classifier, its
// LayerNorm2d included, is absent. Modules are not thread-safe; use one per thread or guard calls.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/pimpl.h>

#include "ltfit/config/config.h"  // HeadKind
#include "ltfit/model/arch_registry.h"
#include "ltfit/model/classifier.h"

namespace ltfit {

// The size-specific shape of a ConvNeXt.
struct ConvNeXtSpec {
  std::string arch;                  // convnext_tiny, convnext_small
  std::vector<int> blocks;           // blocks per stage, e.g. {3, 3, 9, 3}
  std::vector<std::int64_t> dims;    // channels per stage, e.g. {96, 192, 384, 768}
  double stochastic_depth_prob = 0;  // drop probability of the deepest block
  std::int64_t feature_channels() const { return dims.back(); }
};

// Looks up `arch`; throws ConfigError for an unknown name, listing the known ones.
ConvNeXtSpec convnext_spec(const std::string& arch);

// torchvision's LayerNorm2d: LayerNorm over the channels of an NCHW map (eps 1e-6), applied by
// permuting to NHWC and back. Parameters `weight` and `bias`, [C] each.
class LayerNorm2dImpl : public torch::nn::Module, public NormalizationLayer {
 public:
  explicit LayerNorm2dImpl(std::int64_t channels, double eps = 1e-6);
  torch::Tensor forward(const torch::Tensor& x);  // [N,C,H,W] -> [N,C,H,W]

  torch::Tensor weight, bias;
  double eps() const { return eps_; }

 private:
  std::int64_t channels_;
  double eps_;
};
TORCH_MODULE(LayerNorm2d);

// torchvision's CNBlock: x + stochastic_depth(layer_scale * block(x)).
class CNBlockImpl : public torch::nn::Module {
 public:
  // `drop_prob`: this block's stochastic-depth probability (active in training only).
  CNBlockImpl(std::int64_t dim, double drop_prob, double layer_scale = 1e-6);
  torch::Tensor forward(const torch::Tensor& x);  // [N,C,H,W] -> [N,C,H,W]

  const torch::Tensor& layer_scale() const { return layer_scale_; }
  double drop_prob() const { return drop_prob_; }

 private:
  double drop_prob_;
  torch::nn::Sequential block_{nullptr};
  torch::Tensor layer_scale_;  // [C,1,1]
};
TORCH_MODULE(CNBlock);

// The ConvNeXt body (`features`: stem, four stages, three downsampling layers) and its head.
class ConvNeXtImpl : public ClassifierImpl {
 public:
  ConvNeXtImpl(const ConvNeXtSpec& spec, std::int64_t num_classes,
               HeadKind head = HeadKind::kLinear, double dropout = 0.5);

  // [N,3,H,W] float, ImageNet-normalised -> [N,768,H/32,W/32] (the output of `features`).
  torch::Tensor features(const torch::Tensor& x) override;

  const ConvNeXtSpec& spec() const { return spec_; }

 protected:
  // fastai's layer groups: 0 = features.0-3 (stem, stage 1, downsample, stage 2);
  // 1 = features.4-7 (downsample, stage 3, downsample, stage 4).
  std::vector<std::vector<torch::nn::Module*>> body_groups() override;
  // [N,768,h,w] -> [N,num_classes]: average pool, then classifier (LayerNorm2d, Flatten, Linear).
  torch::Tensor linear_head(const torch::Tensor& maps) override;

 private:
  void build_features();
  void init_weights();

  ConvNeXtSpec spec_;
  // `features`: a ModuleList (LibTorch cannot nest Sequentials) of the eight Sequentials in parts_.
  torch::nn::ModuleList features_{nullptr};
  std::vector<torch::nn::Sequential> parts_;
  torch::nn::Sequential classifier_{nullptr};  // linear head only
};
TORCH_MODULE(ConvNeXt);

// The family's ONNX graph (convnext_onnx.cpp): LayerNorm2d, CNBlocks (layer scale; stochastic
// depth gone), the classifier.
OnnxFamily convnext_onnx();

// The registry rows of the family: convnext_tiny, convnext_small.
std::vector<ArchInfo> convnext_archs();

}  // namespace ltfit
