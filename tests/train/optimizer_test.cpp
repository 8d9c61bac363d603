// Optimizer construction: layer groups, decoupled weight decay and its BN/bias exemption.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include "ltfit/model/arch_registry.h"
#include "ltfit/train/optimizer.h"
#include "ltfit/train/timm_optimizers.h"

namespace {

// One AdamW step with zero gradients: only decoupled weight decay moves the parameters.
void decay_step(torch::optim::Optimizer& optimizer, ltfit::Classifier& model) {
  for (auto& p : model->parameters()) p.mutable_grad() = torch::zeros_like(p);
  ltfit::set_hyper_parameters(optimizer, {0.1, 0.1, 0.1}, 0.9);
  optimizer.step();
}

}  // namespace

TEST_CASE("BN and bias parameters are exempt from weight decay unless wd_bn_bias", "[train]") {
  ltfit::OptimizerConfig config;
  config.weight_decay = 0.5;
  for (const bool wd_bn_bias : {false, true}) {
    INFO("wd_bn_bias " << wd_bn_bias);
    config.wd_bn_bias = wd_bn_bias;
    ltfit::Classifier model = ltfit::make_classifier("resnet18", 2);
    auto optimizer = ltfit::make_optimizer(config, model->layer_group_parameters());
    CHECK(optimizer->param_groups().size() == (wd_bn_bias ? 3u : 6u));
    auto params = model->named_parameters();
    const torch::Tensor conv = params["layer1.0.conv1.weight"].clone();
    const torch::Tensor bn = params["layer1.0.bn1.weight"].clone();
    const torch::Tensor bias = params["fc.bias"].clone().fill_(1.0);
    {
      torch::NoGradGuard g;
      params["fc.bias"].fill_(1.0);
    }
    decay_step(*optimizer, model);
    const double factor = 1.0 - 0.1 * 0.5;  // p <- p * (1 - lr * wd)
    CHECK(torch::allclose(params["layer1.0.conv1.weight"], conv * factor));
    CHECK(torch::allclose(params["layer1.0.bn1.weight"], wd_bn_bias ? bn * factor : bn));
    CHECK(torch::allclose(params["fc.bias"], wd_bn_bias ? bias * factor : bias));
  }
}

TEST_CASE("each layer group gets its own LR and all share the momentum", "[train]") {
  ltfit::Classifier model = ltfit::make_classifier("resnet18", 2);
  auto optimizer = ltfit::make_optimizer(ltfit::OptimizerConfig{}, model->layer_group_parameters());
  ltfit::set_hyper_parameters(*optimizer, {1e-5, 1e-4, 1e-3}, 0.87);
  std::vector<double> lrs;
  for (auto& group : optimizer->param_groups()) lrs.push_back(group.options().get_lr());
  REQUIRE(lrs.size() == 6);
  CHECK(lrs == std::vector<double>{1e-5, 1e-5, 1e-4, 1e-4, 1e-3, 1e-3});
  for (auto& group : optimizer->param_groups()) {
    auto& adam = static_cast<torch::optim::AdamWOptions&>(group.options());
    CHECK(std::get<0>(adam.betas()) == Approx(0.87));
    CHECK(std::get<1>(adam.betas()) == Approx(0.99));
    CHECK(adam.eps() == Approx(1e-5));
  }
  ltfit::OptimizerConfig sgd;
  sgd.name = ltfit::OptimizerKind::kSgd;
  auto plain = ltfit::make_optimizer(sgd, model->layer_group_parameters());
  ltfit::set_hyper_parameters(*plain, {0.1, 0.2, 0.3}, 0.9);
  CHECK(static_cast<torch::optim::SGDOptions&>(plain->param_groups()[0].options()).momentum() ==
        Approx(0.9));
}

TEST_CASE("ConvNeXt's layer scales and LayerNorms are exempt from weight decay", "[train]") {
  ltfit::OptimizerConfig config;
  config.weight_decay = 0.5;
  for (const bool wd_bn_bias : {false, true}) {
    INFO("wd_bn_bias " << wd_bn_bias);
    config.wd_bn_bias = wd_bn_bias;
    ltfit::Classifier model = ltfit::make_classifier("convnext_tiny", 2);
    auto optimizer = ltfit::make_optimizer(config, model);  // the model's own exemptions
    auto params = model->named_parameters();
    const torch::Tensor scale = params["features.1.0.layer_scale"].clone();
    REQUIRE(scale.dim() == 3);  // [C,1,1]: not caught by a "1-D parameters" rule
    const torch::Tensor norm = params["features.1.0.block.2.weight"].clone();
    const torch::Tensor dw = params["features.1.0.block.0.weight"].clone();
    decay_step(*optimizer, model);
    const double factor = 1.0 - 0.1 * 0.5;
    CHECK(torch::allclose(params["features.1.0.block.0.weight"], dw * factor));
    CHECK(torch::allclose(params["features.1.0.layer_scale"], wd_bn_bias ? scale * factor : scale));
    CHECK(
        torch::allclose(params["features.1.0.block.2.weight"], wd_bn_bias ? norm * factor : norm));
  }
}

TEST_CASE("make_optimizer builds timm's Lamb and RMSpropTF, one-cycle moves their momentum",
          "[train]") {
  std::vector<std::vector<torch::Tensor>> groups{{torch::randn({4, 3}), torch::randn({4})}};
  for (const auto kind : {ltfit::OptimizerKind::kLamb, ltfit::OptimizerKind::kRmsprop}) {
    const bool lamb = kind == ltfit::OptimizerKind::kLamb;
    INFO((lamb ? "lamb" : "rmsprop"));
    ltfit::OptimizerConfig config;
    config.name = kind;
    config.alpha = 0.8;
    config.max_grad_norm = 2.0;
    config.weight_decay = 0.05;
    auto optimizer = ltfit::make_optimizer(config, groups);
    REQUIRE(optimizer->param_groups().size() == 2);  // decayed weight, exempt bias
    CHECK((dynamic_cast<ltfit::Lamb*>(optimizer.get()) != nullptr) == lamb);
    CHECK((dynamic_cast<ltfit::RMSpropTF*>(optimizer.get()) != nullptr) == !lamb);
    ltfit::set_hyper_parameters(*optimizer, {0.02}, 0.85);
    for (std::size_t i = 0; i < 2; ++i) {
      const auto& options = optimizer->param_groups()[i].options();
      CHECK(options.get_lr() == 0.02);
      const double wd = i == 0 ? 0.05 : 0.0;
      if (lamb) {
        const auto& o = static_cast<const ltfit::LambOptions&>(options);
        CHECK(std::get<0>(o.betas()) == 0.85);
        CHECK(std::get<1>(o.betas()) == 0.99);
        CHECK(o.eps() == 1e-6);  // eps unset: timm's Lamb default
        CHECK(o.weight_decay() == wd);
      } else {
        const auto& o = static_cast<const ltfit::RMSpropTFOptions&>(options);
        CHECK(o.momentum() == 0.85);
        CHECK(o.alpha() == 0.8);
        CHECK(o.eps() == 1e-10);  // eps unset: timm's RMSpropTF default
        CHECK(o.weight_decay() == wd);
      }
    }
    if (lamb) {  // timm reads the clip from the optimizer's defaults
      const auto& defaults = static_cast<const ltfit::LambOptions&>(optimizer->defaults());
      CHECK(defaults.max_grad_norm() == 2.0);
    }
    config.eps = 1e-3;  // a set eps holds for every optimizer
    auto with_eps = ltfit::make_optimizer(config, groups);
    const auto& options = with_eps->param_groups()[0].options();
    CHECK((lamb ? static_cast<const ltfit::LambOptions&>(options).eps()
                : static_cast<const ltfit::RMSpropTFOptions&>(options).eps()) == 1e-3);
  }
}
