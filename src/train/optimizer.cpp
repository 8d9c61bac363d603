#include "ltfit/train/optimizer.h"

#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include "ltfit/util/error.h"

namespace ltfit {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(
    const OptimizerConfig& config, const std::vector<std::vector<torch::Tensor>>& groups) {
  std::vector<torch::optim::OptimizerParamGroup> param_groups;
  if (config.name == "adamw") {
    for (const auto& params : groups) {
      auto options = std::make_unique<torch::optim::AdamWOptions>(1e-3);
      options->betas({config.betas[0], config.betas[1]})
          .eps(config.eps)
          .weight_decay(config.weight_decay);
      param_groups.emplace_back(params, std::move(options));
    }
    return std::make_unique<torch::optim::AdamW>(param_groups,
                                                 torch::optim::AdamWOptions(1e-3));
  }
  LTFIT_CHECK(config.name == "sgd", "optimizer validated at load time");
  for (const auto& params : groups) {
    auto options = std::make_unique<torch::optim::SGDOptions>(1e-3);
    options->momentum(config.betas[0]).weight_decay(config.weight_decay);
    param_groups.emplace_back(params, std::move(options));
  }
  return std::make_unique<torch::optim::SGD>(param_groups, torch::optim::SGDOptions(1e-3));
}

void set_hyper_parameters(torch::optim::Optimizer& optimizer, const std::vector<double>& lrs,
                          double momentum) {
  auto& groups = optimizer.param_groups();
  LTFIT_CHECK(groups.size() == lrs.size(), "one LR per parameter group");
  for (std::size_t i = 0; i < groups.size(); ++i) {
    auto& options = groups[i].options();
    options.set_lr(lrs[i]);
    if (auto* adam = dynamic_cast<torch::optim::AdamWOptions*>(&options)) {
      adam->betas({momentum, std::get<1>(adam->betas())});
    } else if (auto* sgd = dynamic_cast<torch::optim::SGDOptions*>(&options)) {
      sgd->momentum(momentum);
    }
  }
}

std::vector<double> current_lrs(torch::optim::Optimizer& optimizer) {
  std::vector<double> lrs;
  for (auto& group : optimizer.param_groups()) lrs.push_back(group.options().get_lr());
  return lrs;
}

}  // namespace ltfit
