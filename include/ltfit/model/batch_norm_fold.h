// BatchNorm folded into the convolution before it, for the commands that only run a model
// (predict, serve): in evaluation a BatchNorm is a per-channel affine map, y = x * s + t with
// s = gamma / sqrt(running_var + eps) and t = beta - running_mean * s, so the convolution's
// weights scaled by s and its bias set to t compute conv-then-norm in one kernel. On two CPU
// cores (AVX-512) this takes ResNet-18's batch-16 forward from 11.0 to 9.5 ms per image, and
// `ltfit serve` from 107 to 117 images/s (bench/results/serve-2026-12-07b.md).
//
// A family builds its (convolution, norm[, activation]) blocks as ConvNormAct, which
// ClassifierImpl::fold_batch_norms finds and folds wherever they sit (EfficientNet, MobileNetV3,
// RegNet, a ResNet's downsample), or folds its own pairs in ClassifierImpl::fold_body_batch_norms
// with fold_into and runs each norm through norm_unless_folded, which passes a folded norm's input
// through (ResNet).
#pragma once

#include <string>

#include <torch/nn/module.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>

namespace ltfit {

// Scales `conv`'s weights by `bn`'s s and gives it the bias t (plus its own bias times s), in
// place and on their device; `bn` must hold running statistics. Call without gradients.
void fold_batch_norm(torch::nn::Conv2dImpl& conv, const torch::nn::BatchNorm2dImpl& bn);

// Folds `bn`, `owner`'s child `name`, into `conv` and takes it out of the model: the child
// becomes an Identity (so the folded model's state dict has no such norm and cannot be loaded
// into an unfolded one by mistake) and `bn` empty.
void fold_into(torch::nn::Module& owner, const std::string& name, torch::nn::Conv2dImpl& conv,
               torch::nn::BatchNorm2d& bn);

// torchvision's Conv2dNormActivation (and a ResNet's downsample): children 0 (a Conv2d), 1 (its
// BatchNorm2d) and, when it has one, 2 (the activation), under those names; a Sequential that can
// sit inside another (LibTorch's AnyModule needs a non-template forward). fold() folds child 1 into
// child 0 and takes it out (fold_into's Identity); the forward then skips it.
class ConvNormActImpl : public torch::nn::SequentialImpl {
 public:
  using torch::nn::SequentialImpl::SequentialImpl;
  torch::Tensor forward(const torch::Tensor& x);
  // Folds the norm into the convolution once; true when it did now.
  bool fold();

 private:
  bool folded_ = false;
};
TORCH_MODULE(ConvNormAct);

// `bn(x)`, or `x` once `bn` was folded (fold_into emptied it).
inline torch::Tensor norm_unless_folded(torch::nn::BatchNorm2d& bn, const torch::Tensor& x) {
  return bn.is_empty() ? x : bn(x);
}

}  // namespace ltfit
