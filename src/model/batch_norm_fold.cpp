// BatchNorm folded into the convolution before it: see batch_norm_fold.h.
#include "ltfit/model/batch_norm_fold.h"

#include <memory>

#include <torch/nn/modules/linear.h>

#include "ltfit/util/error.h"

namespace ltfit {

void fold_batch_norm(torch::nn::Conv2dImpl& conv, const torch::nn::BatchNorm2dImpl& bn) {
  LTFIT_CHECK(
      bn.options.track_running_stats() && bn.running_mean.defined() && bn.running_var.defined(),
      "a BatchNorm without running statistics cannot be folded");
  LTFIT_CHECK(conv.weight.size(0) == bn.running_mean.size(0),
              "a BatchNorm folds only into the convolution that feeds it");
  torch::NoGradGuard no_grad;
  // s and t in double, then the weights' dtype: the folded convolution differs from the pair by
  // the rounding of one multiplication per weight.
  const auto dbl = [](const torch::Tensor& t) { return t.to(torch::kFloat64); };
  const torch::Tensor var = dbl(bn.running_var);
  torch::Tensor scale = (var + bn.options.eps()).rsqrt();
  if (bn.options.affine()) scale = scale * dbl(bn.weight);
  torch::Tensor shift = -dbl(bn.running_mean) * scale;
  if (conv.bias.defined()) shift = shift + dbl(conv.bias) * scale;
  if (bn.options.affine()) shift = shift + dbl(bn.bias);
  conv.weight.mul_(scale.to(conv.weight.scalar_type()).view({-1, 1, 1, 1}));
  conv.bias = shift.to(conv.weight.scalar_type());
  conv.options.bias(true);
}

void fold_into(torch::nn::Module& owner, const std::string& name, torch::nn::Conv2dImpl& conv,
               torch::nn::BatchNorm2d& bn) {
  LTFIT_CHECK(!bn.is_empty(), "BatchNorm '" + name + "' is folded already");
  fold_batch_norm(conv, *bn);
  owner.replace_module(name, torch::nn::Identity());
  bn = torch::nn::BatchNorm2d(nullptr);
}

torch::Tensor ConvNormActImpl::forward(const torch::Tensor& x) {
  if (!folded_) return SequentialImpl::forward(x);
  torch::Tensor out = x;
  std::size_t index = 0;
  for (auto& layer : *this) {
    if (index++ != 1) out = layer.forward<torch::Tensor>(out);
  }
  return out;
}

bool ConvNormActImpl::fold() {
  if (folded_) return false;
  LTFIT_CHECK(size() >= 2, "a ConvNormAct holds a convolution and its norm");
  const auto conv = std::dynamic_pointer_cast<torch::nn::Conv2dImpl>(ptr(0));
  torch::nn::BatchNorm2d bn(std::dynamic_pointer_cast<torch::nn::BatchNorm2dImpl>(ptr(1)));
  LTFIT_CHECK(conv && !bn.is_empty(),
              "a ConvNormAct's children 0 and 1 are a Conv2d and a BatchNorm2d");
  fold_into(*this, "1", *conv, bn);
  folded_ = true;
  return true;
}

}  // namespace ltfit
