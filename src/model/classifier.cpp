// The family-independent part of every model: forward through the head, fastai's head, layer
// groups, normalisation and weight-decay sets. See classifier.h.
#include "ltfit/model/classifier.h"

#include <torch/nn/functional/pooling.h>
#include <torch/nn/init.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <unordered_set>

#include "ltfit/model/batch_norm_fold.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace F = torch::nn::functional;

namespace {

bool is_normalization(torch::nn::Module& module) {
  return module.as<torch::nn::BatchNorm1d>() || module.as<torch::nn::BatchNorm2d>() ||
         module.as<torch::nn::LayerNorm>() || module.as<torch::nn::GroupNorm>() ||
         dynamic_cast<NormalizationLayer*>(&module) != nullptr;
}

}  // namespace

ClassifierImpl::ClassifierImpl(std::string arch, std::int64_t feature_channels,
                               FeatureLayout layout)
    : arch_(std::move(arch)), feature_channels_(feature_channels), layout_(layout) {}

torch::Tensor ClassifierImpl::forward(const torch::Tensor& x) { return classify(features(x)); }

torch::Tensor ClassifierImpl::classify(const torch::Tensor& maps) {
  if (head_.is_empty()) return linear_head(maps);
  if (layout_ == FeatureLayout::kToken) return head_->forward(maps);  // [N,C]: no pooling
  // fastai's AdaptiveConcatPool2d: [max, avg].
  const torch::Tensor pooled =
      torch::cat({F::adaptive_max_pool2d(maps, F::AdaptiveMaxPool2dFuncOptions(1)),
                  F::adaptive_avg_pool2d(maps, F::AdaptiveAvgPool2dFuncOptions(1))},
                 1);
  return head_->forward(pooled.flatten(1));
}

CamSplit ClassifierImpl::cam_split(const torch::Tensor& x) {
  LTFIT_CHECK(layout_ == FeatureLayout::kMap, "a token model defines its own Grad-CAM split");
  const auto same = [](const torch::Tensor& t) { return t; };
  return {features(x), [this](const torch::Tensor& maps) { return classify(maps); }, same};
}

std::int64_t ClassifierImpl::fold_batch_norms() {
  LTFIT_CHECK(!is_training(), "BatchNorm is folded into the convolutions in evaluation mode only");
  if (folded_) return 0;
  torch::NoGradGuard no_grad;
  std::int64_t folded = fold_body_batch_norms();
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* triple = dynamic_cast<ConvNormActImpl*>(module.get())) folded += triple->fold();
  }
  folded_ = true;
  return folded;
}

void ClassifierImpl::train(bool on) {
  LTFIT_CHECK(!(on && folded_), "a model with its BatchNorms folded runs in evaluation only");
  torch::nn::Module::train(on);
}

void ClassifierImpl::add_fastai_head(std::int64_t num_classes, double dropout) {
  LTFIT_CHECK(num_classes > 0, "num_classes must be positive");
  LTFIT_CHECK(head_.is_empty(), "a model has one head");
  constexpr std::int64_t kHidden = 512;
  const std::int64_t in =
      layout_ == FeatureLayout::kMap ? 2 * feature_channels_ : feature_channels_;
  head_ = register_module(
      "head", torch::nn::Sequential(torch::nn::BatchNorm1d(in), torch::nn::Dropout(dropout / 2),
                                    torch::nn::Linear(in, kHidden), torch::nn::ReLU(),
                                    torch::nn::BatchNorm1d(kHidden), torch::nn::Dropout(dropout),
                                    torch::nn::Linear(kHidden, num_classes)));
  torch::NoGradGuard no_grad;
  for (auto& module : head_->modules(/*include_self=*/false)) {
    if (auto* linear = module->as<torch::nn::Linear>()) {  // fastai: kaiming_normal_, bias 0
      torch::nn::init::kaiming_normal_(linear->weight);
      linear->bias.zero_();
    }
  }
}

void ClassifierImpl::mark_no_weight_decay(const torch::Tensor& parameter) {
  no_decay_marked_.push_back(parameter);
}

std::vector<std::vector<torch::Tensor>> ClassifierImpl::layer_group_parameters() {
  std::vector<std::vector<torch::Tensor>> groups;
  std::unordered_set<const void*> in_body;
  bool first = true;
  for (const auto& parts : body_groups()) {
    std::vector<torch::Tensor> params;
    if (first) {
      for (auto& p : loose_body_parameters()) {
        if (in_body.insert(p.unsafeGetTensorImpl()).second) params.push_back(p);
      }
      first = false;
    }
    for (torch::nn::Module* part : parts) {
      for (auto& p : part->parameters()) {
        if (in_body.insert(p.unsafeGetTensorImpl()).second) params.push_back(p);
      }
    }
    groups.push_back(std::move(params));
  }
  LTFIT_CHECK(groups.size() == 2, "a family splits its body into two layer groups");
  std::vector<torch::Tensor> head;
  for (auto& p : parameters()) {
    if (!in_body.count(p.unsafeGetTensorImpl())) head.push_back(p);
  }
  groups.push_back(std::move(head));
  return groups;
}

std::vector<torch::Tensor> ClassifierImpl::normalization_parameters() {
  std::vector<torch::Tensor> params;
  for (auto& module : modules(/*include_self=*/false)) {
    if (!is_normalization(*module)) continue;
    for (auto& p : module->parameters(/*recurse=*/false)) params.push_back(p);
  }
  return params;
}

std::vector<torch::Tensor> ClassifierImpl::no_weight_decay_parameters() {
  std::vector<torch::Tensor> params;
  std::unordered_set<const void*> marked;
  for (const auto& p : no_decay_marked_) marked.insert(p.unsafeGetTensorImpl());
  for (auto& p : parameters()) {
    if (p.dim() <= 1 || marked.count(p.unsafeGetTensorImpl())) params.push_back(p);
  }
  return params;
}

std::int64_t count_parameters(const torch::nn::Module& module) {
  std::int64_t total = 0;
  for (const auto& p : module.parameters()) total += p.numel();
  return total;
}

void set_channels_last(Classifier& model) {
  for (auto& p : model->parameters()) {
    if (p.dim() == 4) p.set_data(p.data().contiguous(torch::MemoryFormat::ChannelsLast));
  }
}

std::int64_t cast_for_autocast(Classifier& model, torch::Dtype dtype) {
  torch::NoGradGuard no_grad;
  std::int64_t layers = 0;
  auto cast = [dtype](torch::Tensor& p) {
    if (p.defined()) p.set_data(p.data().to(dtype));  // the memory format is kept
  };
  for (const auto& module : model->modules(/*include_self=*/false)) {
    if (auto* conv = module->as<torch::nn::Conv2d>()) {
      cast(conv->weight);
      cast(conv->bias);
    } else if (auto* linear = module->as<torch::nn::Linear>()) {
      cast(linear->weight);
      cast(linear->bias);
    } else {
      continue;
    }
    ++layers;
  }
  return layers;
}

}  // namespace ltfit
