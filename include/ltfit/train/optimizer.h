// Building the optimizer over fastai's layer groups and setting its per-step hyper-parameters.
//
// AdamW is LibTorch's (decoupled weight decay: p <- p * (1 - lr * wd), then the Adam update);
// SGD uses Nesterov-free momentum. One parameter group per layer group, in group order.
#pragma once

#include <memory>
#include <vector>

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include "ltfit/config/config.h"

namespace ltfit {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(
    const OptimizerConfig& config, const std::vector<std::vector<torch::Tensor>>& groups);

// Sets group i's LR to lrs[i] and the momentum (Adam beta1 / SGD momentum) of every group.
void set_hyper_parameters(torch::optim::Optimizer& optimizer, const std::vector<double>& lrs,
                          double momentum);

}  // namespace ltfit
