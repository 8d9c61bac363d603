#include "ltfit/train/optimizer.h"

#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <stdexcept>
#include <unordered_set>

#include "ltfit/train/fused_optimizer.h"
#include "ltfit/train/timm_optimizers.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

// One optimizer parameter group: its tensors and whether weight decay applies to them.
struct ParamSplit {
  std::vector<torch::Tensor> params;
  bool decay;
};

// Each layer group becomes one or two parameter groups: weights (decayed), and, unless
// `wd_bn_bias`, the exempt parameters (norm weights, biases, layer scales; undecayed). Every
// layer group keeps its slot (possibly empty) so that LRs map by position: parameter group i
// belongs to layer group i / groups_per_layer.
std::vector<ParamSplit> split_groups(const OptimizerConfig& config,
                                     const std::vector<std::vector<torch::Tensor>>& groups,
                                     const std::vector<torch::Tensor>* no_decay) {
  std::unordered_set<const void*> exempt_set;
  if (no_decay) {
    for (const auto& p : *no_decay) exempt_set.insert(p.unsafeGetTensorImpl());
  }
  const auto is_exempt = [&](const torch::Tensor& p) {
    return no_decay ? exempt_set.count(p.unsafeGetTensorImpl()) > 0 : p.dim() <= 1;
  };
  std::vector<ParamSplit> splits;
  for (const auto& params : groups) {
    if (config.wd_bn_bias) {
      splits.push_back({params, true});
      continue;
    }
    ParamSplit decayed{{}, true}, exempt{{}, false};
    for (const auto& p : params) (is_exempt(p) ? exempt : decayed).params.push_back(p);
    splits.push_back(std::move(decayed));
    splits.push_back(std::move(exempt));
  }
  return splits;
}

// One parameter group's options for `config`'s optimizer, with weight decay `wd` (0 for the
// exempt parameters). The LR is set per step by set_hyper_parameters.
std::unique_ptr<torch::optim::OptimizerOptions> optimizer_group_options(
    const OptimizerConfig& config, double wd) {
  const double eps = config.resolved_eps();
  switch (config.name) {
    case OptimizerKind::kAdamW: {
      auto o = std::make_unique<torch::optim::AdamWOptions>(1e-3);
      o->betas({config.betas[0], config.betas[1]}).eps(eps).weight_decay(wd);
      return o;
    }
    case OptimizerKind::kSgd: {
      auto o = std::make_unique<torch::optim::SGDOptions>(1e-3);
      o->momentum(config.betas[0]).weight_decay(wd);
      return o;
    }
    case OptimizerKind::kLamb: {
      auto o = std::make_unique<LambOptions>(1e-3);
      o->betas({config.betas[0], config.betas[1]}).eps(eps).weight_decay(wd);
      o->max_grad_norm(config.max_grad_norm);
      return o;
    }
    case OptimizerKind::kRmsprop: {
      auto o = std::make_unique<RMSpropTFOptions>(1e-3);
      o->momentum(config.betas[0]).alpha(config.alpha).eps(eps).weight_decay(wd);
      return o;
    }
  }
  throw std::logic_error("unknown optimizer kind");
}

}  // namespace

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const OptimizerConfig& config,
                                                        Classifier& model) {
  const std::vector<torch::Tensor> no_decay = model->no_weight_decay_parameters();
  return make_optimizer(config, model->layer_group_parameters(), &no_decay);
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(
    const OptimizerConfig& config, const std::vector<std::vector<torch::Tensor>>& groups,
    const std::vector<torch::Tensor>* no_decay) {
  std::vector<torch::optim::OptimizerParamGroup> param_groups;
  for (auto& split : split_groups(config, groups, no_decay)) {
    const double wd = split.decay ? config.weight_decay : 0.0;
    param_groups.emplace_back(split.params, optimizer_group_options(config, wd));
  }
  switch (config.name) {
    case OptimizerKind::kAdamW: {
      const torch::optim::AdamWOptions defaults(1e-3);
      if (config.fused) return std::make_unique<FusedAdamW>(param_groups, defaults);
      return std::make_unique<torch::optim::AdamW>(param_groups, defaults);
    }
    case OptimizerKind::kSgd: {
      const torch::optim::SGDOptions defaults(1e-3);
      if (config.fused) return std::make_unique<FusedSGD>(param_groups, defaults);
      return std::make_unique<torch::optim::SGD>(param_groups, defaults);
    }
    case OptimizerKind::kLamb:  // timm reads max_grad_norm from the defaults (one global clip)
      return std::make_unique<Lamb>(param_groups,
                                    LambOptions(1e-3).max_grad_norm(config.max_grad_norm));
    case OptimizerKind::kRmsprop:
      return std::make_unique<RMSpropTF>(param_groups, RMSpropTFOptions(1e-3));
  }
  throw std::logic_error("unknown optimizer kind");
}

void set_hyper_parameters(torch::optim::Optimizer& optimizer, const std::vector<double>& lrs,
                          double momentum) {
  auto& groups = optimizer.param_groups();
  LTFIT_CHECK(!lrs.empty() && groups.size() % lrs.size() == 0,
              "parameter groups must split layer groups evenly");
  const std::size_t per_layer_group = groups.size() / lrs.size();
  for (std::size_t i = 0; i < groups.size(); ++i) {
    auto& options = groups[i].options();
    options.set_lr(lrs[i / per_layer_group]);
    if (auto* adam = dynamic_cast<torch::optim::AdamWOptions*>(&options)) {
      adam->betas({momentum, std::get<1>(adam->betas())});
    } else if (auto* sgd = dynamic_cast<torch::optim::SGDOptions*>(&options)) {
      sgd->momentum(momentum);
    } else if (auto* lamb = dynamic_cast<LambOptions*>(&options)) {
      lamb->betas({momentum, std::get<1>(lamb->betas())});
    } else if (auto* rmsprop = dynamic_cast<RMSpropTFOptions*>(&options)) {
      rmsprop->momentum(momentum);
    }
  }
}

}  // namespace ltfit
