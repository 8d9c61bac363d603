// The multi-label training loss (trainer.h): fastai's BCEWithLogitsLossFlat.
#include "ltfit/train/trainer.h"

#include <torch/nn/functional/loss.h>

namespace ltfit {

torch::Tensor multi_label_loss(const torch::Tensor& logits, const torch::Tensor& targets,
                               double eps, const torch::Tensor& pos_weight) {
  namespace F = torch::nn::functional;
  torch::Tensor y = targets.to(torch::kFloat32);
  if (eps > 0) y = y * (1.0 - eps) + eps / static_cast<double>(logits.size(1));
  auto bce = F::BinaryCrossEntropyWithLogitsFuncOptions();
  if (pos_weight.defined()) bce.pos_weight(pos_weight);
  return F::binary_cross_entropy_with_logits(logits.to(torch::kFloat32), y, bce);
}

}  // namespace ltfit
