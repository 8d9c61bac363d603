// Building the optimizer over fastai's layer groups and setting its per-step hyper-parameters.
//
// AdamW is LibTorch's (decoupled weight decay: p <- p * (1 - lr * wd), then the Adam update);
// SGD uses Nesterov-free momentum. With optimizer.fused (the default) their steps run ATen's
// fused kernels (train/fused_optimizer.h). Lamb and RMSprop are timm's Lamb and RMSpropTF
// (train/timm_optimizers.h). One or two parameter groups per layer group (decayed, exempt), in
// group order.
#pragma once

#include <memory>
#include <vector>

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include "ltfit/config/config.h"
#include "ltfit/model/classifier.h"

namespace ltfit {

// The optimizer over `model`'s layer groups; unless config.wd_bn_bias, the parameters in
// model->no_weight_decay_parameters() (norm weights, biases, layer scales) get no weight decay.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerConfig& config,
                                                        Classifier& model);

// The same over explicit layer groups; `no_decay` lists the exempt parameters (null: the 1-D
// ones).
std::unique_ptr<torch::optim::Optimizer> make_optimizer(
    const OptimizerConfig& config, const std::vector<std::vector<torch::Tensor>>& groups,
    const std::vector<torch::Tensor>* no_decay = nullptr);

// Sets the LR of the parameter groups of layer group i to lrs[i] and the momentum (Adam/Lamb
// beta1, SGD/RMSprop momentum) of every group.
void set_hyper_parameters(torch::optim::Optimizer& optimizer, const std::vector<double>& lrs,
                          double momentum);

}  // namespace ltfit
