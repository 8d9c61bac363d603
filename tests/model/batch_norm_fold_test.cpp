// BatchNorm folded into the convolutions for inference (batch_norm_fold.h,
// ClassifierImpl::fold_batch_norms): the folded model's logits equal the unfolded model's in
// evaluation, with BatchNorm statistics and affine parameters drawn away from their identity
// initialisation (a fresh model's norms are nearly the identity and would hide a wrong fold).
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include "ltfit/model/arch_registry.h"
#include "ltfit/model/batch_norm_fold.h"
#include "ltfit/model/classifier.h"

namespace {

// Every BatchNorm's weight, bias, running mean and variance drawn at random (variances in
// [0.2, 2.2]), so the fold has work to do.
void randomize_norms(ltfit::Classifier& model) {
  torch::NoGradGuard no_grad;
  for (auto& module : model->modules(/*include_self=*/false)) {
    if (auto* bn = module->as<torch::nn::BatchNorm2d>()) {
      bn->weight.uniform_(0.5, 1.5);
      bn->bias.normal_(0.0, 0.2);
      bn->running_mean.normal_(0.0, 0.3);
      bn->running_var.uniform_(0.2, 2.2);
    }
  }
}

ltfit::Classifier copy_of(ltfit::Classifier& source, const std::string& arch,
                          ltfit::HeadKind head) {
  ltfit::Classifier copy = ltfit::make_classifier(arch, 7, head);
  torch::NoGradGuard no_grad;
  auto params = copy->named_parameters();
  for (const auto& p : source->named_parameters()) params[p.key()].copy_(p.value());
  auto buffers = copy->named_buffers();
  for (const auto& b : source->named_buffers()) buffers[b.key()].copy_(b.value());
  return copy;
}

std::int64_t count_batch_norms(ltfit::Classifier& model) {
  std::int64_t n = 0;
  for (auto& module : model->modules(/*include_self=*/false)) {
    if (module->as<torch::nn::BatchNorm2d>()) ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("fold_batch_norms: a ResNet's logits unchanged, its norms gone", "[model]") {
  struct Case {
    const char* arch;
    ltfit::HeadKind head;
    std::int64_t folded;  // bn1, each block's norms, each downsample's
  };
  const Case cases[] = {{"resnet18", ltfit::HeadKind::kLinear, 1 + 8 * 2 + 3},
                        {"resnet50", ltfit::HeadKind::kFastai, 1 + 16 * 3 + 4}};
  for (const auto& c : cases) {
    INFO(c.arch);
    torch::manual_seed(3);
    ltfit::Classifier model = ltfit::make_classifier(c.arch, 7, c.head);
    randomize_norms(model);
    ltfit::Classifier reference = copy_of(model, c.arch, c.head);
    model->eval();
    reference->eval();
    const torch::Tensor x = torch::randn({3, 3, 64, 64});
    torch::NoGradGuard no_grad;
    const torch::Tensor expected = reference->forward(x);

    REQUIRE(count_batch_norms(model) == c.folded);
    CHECK(model->fold_batch_norms() == c.folded);
    CHECK(model->batch_norms_folded());
    CHECK(count_batch_norms(model) == 0);
    const torch::Tensor got = model->forward(x);
    const double scale = expected.abs().max().item<double>();
    CHECK((got - expected).abs().max().item<double>() <= 1e-5 * std::max(1.0, scale));
    // In training's memory format too (predict and serve run it so).
    ltfit::set_channels_last(model);
    const torch::Tensor nhwc = model->forward(x.contiguous(torch::MemoryFormat::ChannelsLast));
    CHECK((nhwc - expected).abs().max().item<double>() <= 1e-5 * std::max(1.0, scale));

    CHECK(model->fold_batch_norms() == 0);  // once per model
    CHECK_THROWS_WITH(model->train(), Catch::Contains("evaluation only"));
    CHECK_FALSE(model->is_training());
    for (const auto& p : model->named_buffers()) {  // the body's; fastai's head keeps its 1-D norms
      if (p.key().rfind("head.", 0) != 0) CHECK(p.key().find("running_") == std::string::npos);
    }
  }
}

TEST_CASE("fold_batch_norms: every Conv2dNormActivation of EfficientNet, MobileNetV3, RegNet",
          "[model]") {
  for (const char* arch : {"efficientnet_b0", "efficientnet_v2_s", "mobilenet_v3_small",
                           "mobilenet_v3_large", "regnet_y_800mf"}) {
    INFO(arch);
    torch::manual_seed(4);
    ltfit::Classifier model = ltfit::make_classifier(arch, 7, ltfit::HeadKind::kFastai);
    randomize_norms(model);
    ltfit::Classifier reference = copy_of(model, arch, ltfit::HeadKind::kFastai);
    model->eval();
    reference->eval();
    const torch::Tensor x = torch::randn({2, 3, 64, 64});
    torch::NoGradGuard no_grad;
    const torch::Tensor expected = reference->forward(x);
    const std::int64_t norms = count_batch_norms(model);
    CHECK(norms > 10);
    CHECK(model->fold_batch_norms() == norms);  // each one follows a convolution
    CHECK(count_batch_norms(model) == 0);
    const torch::Tensor got = model->forward(x);
    const double scale = expected.abs().max().item<double>();
    CHECK((got - expected).abs().max().item<double>() <= 1e-5 * std::max(1.0, scale));
  }
}

TEST_CASE("fold_batch_norms: refused in training mode, nothing to fold in a family without pairs",
          "[model]") {
  ltfit::Classifier resnet = ltfit::make_classifier("resnet18", 2);
  CHECK_THROWS_WITH(resnet->fold_batch_norms(), Catch::Contains("evaluation mode only"));
  CHECK_FALSE(resnet->batch_norms_folded());
  ltfit::Classifier vit = ltfit::make_classifier("vit_b_16", 2);
  vit->eval();
  CHECK(vit->fold_batch_norms() == 0);
}

TEST_CASE("fold_batch_norm: a convolution with a bias and a norm without affine parameters",
          "[model]") {
  torch::manual_seed(5);
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(4, 6, 3).padding(1).bias(true));
  torch::nn::BatchNorm2d bn(torch::nn::BatchNorm2dOptions(6).affine(false).eps(1e-3));
  {
    torch::NoGradGuard no_grad;
    bn->running_mean.normal_(0.0, 0.5);
    bn->running_var.uniform_(0.1, 3.0);
  }
  bn->eval();
  const torch::Tensor x = torch::randn({2, 4, 9, 9});
  torch::NoGradGuard no_grad;
  const torch::Tensor expected = bn(conv(x));
  ltfit::fold_batch_norm(*conv, *bn);
  CHECK((conv(x) - expected).abs().max().item<double>() <= 1e-5);
}
