// The model everything downstream takes: a backbone (any registered family) with its classifier.
//
// A family (Classifier, ConvNeXt, EfficientNet, ...) derives from ClassifierImpl, registers its
// body under torchvision's names (so torchvision state dicts map one to one), then either its own
// torchvision classifier (HeadKind::kLinear: `fc`, `classifier`) or fastai's head through
// add_fastai_head (registered as `head`). The trainer, evaluator, checkpoints and exports see only
// this interface: forward, the feature map, fastai's three layer groups, the normalisation layers
// that stay trainable in a frozen body, and the parameters exempt from weight decay.
// Modules are not thread-safe; use one per thread or guard calls.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/pimpl.h>

#include "ltfit/config/config.h"  // HeadKind
#include "ltfit/util/image_normalization.h"

namespace ltfit {

// What a family's body returns: a spatial feature map (the CNNs, Swin) or one token's embedding
// (ViT's class token).
enum class FeatureLayout {
  kMap,    // [N,C,h,w]: fastai's head concat-pools it, Grad-CAM weighs its channels
  kToken,  // [N,C]: fastai's head without pooling (fastai's create_head(pool=False))
};

// What Grad-CAM differentiates (eval/grad_cam.h): `activations` (computed without gradients),
// `logits` of the model as a function of them, and `to_map`, which lays the activations (or a
// gradient of their shape) out as a [N,C,h,w] grid. A CNN's: its feature map, classify(), the
// identity.
struct CamSplit {
  torch::Tensor activations;
  std::function<torch::Tensor(const torch::Tensor&)> logits;
  std::function<torch::Tensor(const torch::Tensor&)> to_map;
};

// Marks a family's own normalisation module (ConvNeXt's LayerNorm2d, ...) so that freezing keeps
// it trainable, as it does LibTorch's BatchNorm and LayerNorm.
class NormalizationLayer {
 public:
  virtual ~NormalizationLayer() = default;
};

class ClassifierImpl : public torch::nn::Module {
 public:
  // [N,3,H,W] float, normalised with the arch's mean/std -> what fastai's cut body returns:
  // [N,C,h,w] the feature map (FeatureLayout::kMap) or [N,C] a token (kToken); C =
  // feature_channels().
  virtual torch::Tensor features(const torch::Tensor& x) = 0;
  // [N,3,H,W] -> [N,num_classes] logits: classify(features(x)).
  torch::Tensor forward(const torch::Tensor& x);
  // features() -> [N,num_classes] logits: the fastai head (concat pooling of a map) when the
  // model has one, else the family's torchvision classifier.
  torch::Tensor classify(const torch::Tensor& maps);
  // Grad-CAM's view of the model on `x` (see CamSplit); call without gradients. The default is
  // features() and classify(); a token model splits where its tokens still form a grid.
  virtual CamSplit cam_split(const torch::Tensor& x);

  const std::string& arch() const { return arch_; }
  std::int64_t feature_channels() const { return feature_channels_; }
  FeatureLayout feature_layout() const { return layout_; }
  bool has_fastai_head() const { return !head_.is_empty(); }
  // The mean/std its inputs are normalised with (the registry row's; make_classifier sets it).
  const ImageNormalization& input_normalization() const { return normalization_; }
  void set_input_normalization(const ImageNormalization& n) { normalization_ = n; }

  // fastai's layer groups: the family's two body groups, then the head (every parameter not in
  // the body groups). Each parameter appears in exactly one group.
  std::vector<std::vector<torch::Tensor>> layer_group_parameters();
  // The parameters of every normalisation layer (BatchNorm, LayerNorm, NormalizationLayer).
  std::vector<torch::Tensor> normalization_parameters();
  // Parameters exempt from weight decay unless train.optimizer.wd_bn_bias: the 1-D ones (norm
  // weights, biases) and those a family marked (ConvNeXt's [C,1,1] layer scales).
  std::vector<torch::Tensor> no_weight_decay_parameters();

  // For the commands that only run the model (predict, serve): folds each BatchNorm that follows
  // a convolution into it (batch_norm_fold.h): the family's own pairs (fold_body_batch_norms) and
  // every ConvNormAct in the model; returns how many.
  // Only in evaluation mode; the model then refuses train() and its state dict is not a
  // checkpoint's (the folded norms are gone). Once per model: a second call folds nothing.
  std::int64_t fold_batch_norms();
  bool batch_norms_folded() const { return folded_; }
  void train(bool on = true) override;

 protected:
  ClassifierImpl(std::string arch, std::int64_t feature_channels,
                 FeatureLayout layout = FeatureLayout::kMap);
  // The family's body split into fastai's first two layer groups.
  virtual std::vector<std::vector<torch::nn::Module*>> body_groups() = 0;
  // Body parameters registered outside the group modules (ViT's class token at the model's
  // root): the first layer group's.
  virtual std::vector<torch::Tensor> loose_body_parameters() { return {}; }
  // The family's torchvision classifier on the feature map (called when no fastai head).
  virtual torch::Tensor linear_head(const torch::Tensor& maps) = 0;
  // Registers fastai's head as `head`: AdaptiveConcatPool (a map; none for a token), BatchNorm1d,
  // Dropout(p/2), Linear(2C or C, 512), ReLU, BatchNorm1d, Dropout(p), Linear(512, classes);
  // kaiming-normal linears.
  void add_fastai_head(std::int64_t num_classes, double dropout);
  // The family's part of fold_batch_norms (called without gradients, in evaluation mode): folds
  // its (convolution, BatchNorm) pairs with fold_into and returns how many; 0 by default.
  virtual std::int64_t fold_body_batch_norms() { return 0; }
  // Exempts `parameter` from weight decay (for parameters with more than one dimension).
  void mark_no_weight_decay(const torch::Tensor& parameter);

 private:
  std::string arch_;
  std::int64_t feature_channels_;
  FeatureLayout layout_;
  ImageNormalization normalization_;
  torch::nn::Sequential head_{nullptr};
  std::vector<torch::Tensor> no_decay_marked_;
  bool folded_ = false;
};
TORCH_MODULE(Classifier);

// Number of parameters (not buffers) in `module`.
std::int64_t count_parameters(const torch::nn::Module& module);

// Stores every 4-D parameter (the convolutions' weights) channels-last (NHWC), for
// train.channels_last; the model then runs on channels-last batches without conversions.
void set_channels_last(Classifier& model);

// Every convolution's and linear layer's weight and bias in `dtype` (autocast's lower precision:
// bf16, fp16), kept in their memory format: autocast then finds them cast already instead of
// casting them at each forward, and the logits under autocast are the same bit for bit (it
// rounds them to the same values; the other parameters, such as LayerNorm's, stay fp32 as
// autocast wants them). For a model only run under autocast to `dtype`, never trained or saved
// afterwards. Returns the layers cast.
std::int64_t cast_for_autocast(Classifier& model, torch::Dtype dtype);

}  // namespace ltfit
