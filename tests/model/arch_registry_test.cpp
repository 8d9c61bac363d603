// The architecture registry: every row builds the model it names, with torchvision's parameter
// count, a parseable weight file name, a classifier prefix the model really has, the feature width
// the fastai head is built on, and fastai's three layer groups; unknown names fail with the list
// and a "did you mean".
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <set>

#include "ltfit/model/arch_registry.h"
#include "ltfit/model/convnext.h"      // CNBlock
#include "ltfit/model/efficientnet.h"  // StochasticDepth
#include "ltfit/model/pretrained.h"
#include "ltfit/util/error.h"

using Catch::Matchers::Contains;

TEST_CASE("every registered arch builds with torchvision's parameter count", "[model]") {
  const auto& registry = ltfit::arch_registry();
  REQUIRE(registry.size() >= 13);
  std::set<std::string> names, families;
  for (const ltfit::ArchInfo& info : registry) {
    INFO(info.name);
    CHECK(names.insert(info.name).second);  // no name twice
    families.insert(info.family);
    ltfit::Classifier linear = ltfit::make_classifier(info.name, 1000);
    CHECK(linear->arch() == info.name);
    CHECK(ltfit::count_parameters(*linear) == info.parameters);
    // The classifier prefix names the model's torchvision classifier.
    bool has_prefix = false;
    for (const auto& p : linear->named_parameters()) {
      has_prefix |= p.key().rfind(info.classifier_prefix, 0) == 0;
    }
    CHECK(has_prefix);
    CHECK(ltfit::torchvision_weights_hash_prefix(info.weights_file).size() >= 8);
    CHECK(ltfit::torchvision_weights_file(info.name) == info.weights_file);
    CHECK((info.interpolation == "bilinear" || info.interpolation == "bicubic"));
    CHECK(info.eval_resize >= info.eval_crop);
    CHECK(info.imagenet_top1 > 60.0);
    CHECK(info.imagenet_top1 < 90.0);
    CHECK(linear->input_normalization() == info.normalization);
    // The fastai head's first BatchNorm1d sees [max, avg] of the feature map: 2 x its width.
    ltfit::Classifier fastai = ltfit::make_classifier(info.name, 3, ltfit::HeadKind::kFastai);
    // concat pooling doubles a map's channels; a token (ViT) is not pooled
    const std::int64_t pooled = info.feature_layout == ltfit::FeatureLayout::kMap ? 2 : 1;
    CHECK(fastai->named_parameters()["head.0.weight"].size(0) == pooled * info.feature_channels);
    CHECK(fastai->feature_layout() == info.feature_layout);
    CHECK(fastai->feature_channels() == info.feature_channels);
    const auto groups = fastai->layer_group_parameters();
    REQUIRE(groups.size() == 3);
    std::int64_t total = 0;
    std::set<const void*> seen;
    for (const auto& group : groups) {
      CHECK_FALSE(group.empty());
      for (const auto& p : group) {
        total += p.numel();
        CHECK(seen.insert(p.unsafeGetTensorImpl()).second);
      }
    }
    CHECK(total == ltfit::count_parameters(*fastai));
  }
  CHECK(families == std::set<std::string>{"convnext", "efficientnet", "efficientnet_v2",
                                          "mobilenet_v3", "regnet", "resnet", "swin", "vit"});
}

TEST_CASE("the feature map has the registered width and the logits their classes", "[model]") {
  torch::NoGradGuard no_grad;
  for (const char* arch : {"resnet18", "convnext_tiny", "efficientnet_b0"}) {
    INFO(arch);
    ltfit::Classifier model = ltfit::make_classifier(arch, 5, ltfit::HeadKind::kFastai);
    model->eval();
    const torch::Tensor x = torch::randn({2, 3, 64, 64});
    CHECK(model->features(x).size(1) == ltfit::arch_info(arch).feature_channels);
    CHECK(model->forward(x).sizes() == torch::IntArrayRef({2, 5}));
  }
}

TEST_CASE("an unknown arch lists the registered ones and suggests the closest", "[model]") {
  CHECK_THROWS_AS(ltfit::arch_info("convnext_tiy"), ltfit::ConfigError);
  try {
    ltfit::arch_info("convnext_tiy");
  } catch (const ltfit::ConfigError& e) {
    CHECK_THAT(e.what(), Contains("model.arch: expected one of resnet18, resnet34"));
    CHECK_THAT(e.what(), Contains("efficientnet_b3"));
    CHECK_THAT(e.what(), Contains("got 'convnext_tiy'"));
    CHECK(e.hint() == "did you mean 'convnext_tiny'?");
  }
  CHECK(ltfit::model_arch_names().size() == ltfit::arch_registry().size());
  CHECK_THROWS_AS(ltfit::make_classifier("vgg16", 2), ltfit::ConfigError);
}

TEST_CASE("ltfit models' table has a row per arch", "[model]") {
  const std::string table = ltfit::arch_table();
  for (const ltfit::ArchInfo& info : ltfit::arch_registry()) {
    CHECK_THAT(table, Contains("| " + info.name + " | " + info.family + " |"));
    CHECK_THAT(table, Contains(info.weights_file));
  }
}

TEST_CASE("model.drop_path sets the deepest block's stochastic depth, per family", "[model]") {
  const auto probabilities = [](ltfit::Classifier& model) {
    std::vector<double> p;
    for (const auto& m : model->modules(/*include_self=*/false)) {
      if (auto* sd = m->as<ltfit::StochasticDepthImpl>()) p.push_back(sd->p());
      if (auto* block = m->as<ltfit::CNBlockImpl>()) p.push_back(block->drop_prob());
    }
    return p;
  };
  // ConvNeXt: p * i / (blocks - 1), as torchvision and timm (linspace) schedule it.
  ltfit::Classifier convnext = ltfit::make_classifier("convnext_tiny", 3, ltfit::HeadKind::kLinear,
                                                      0.5, ltfit::Stem::kImagenet, 0.3);
  auto p = probabilities(convnext);
  REQUIRE(p.size() == 18);
  CHECK(p.front() == 0.0);
  CHECK(p.back() == Approx(0.3));
  // EfficientNet: p * i / blocks (torchvision's), 16 blocks for B0.
  ltfit::Classifier b0 = ltfit::make_classifier("efficientnet_b0", 3, ltfit::HeadKind::kLinear, 0.5,
                                                ltfit::Stem::kImagenet, 0.4);
  CHECK(probabilities(b0).back() == Approx(0.4 * 15 / 16));
  // ViT: none by default (torchvision), timm's linspace when set.
  ltfit::Classifier vit_default = ltfit::make_classifier("vit_b_16", 3);
  for (const double q : probabilities(vit_default)) CHECK(q == 0.0);
  ltfit::Classifier vit = ltfit::make_classifier("vit_b_16", 3, ltfit::HeadKind::kLinear, 0.5,
                                                 ltfit::Stem::kImagenet, 0.1);
  p = probabilities(vit);
  REQUIRE(p.size() == 12);
  CHECK(p[0] == 0.0);
  CHECK(p[11] == Approx(0.1));
  // No stochastic depth in torchvision's ResNet: 0 is fine, anything else exits 2.
  CHECK_NOTHROW(ltfit::make_classifier("resnet18", 3, ltfit::HeadKind::kLinear, 0.5,
                                       ltfit::Stem::kImagenet, 0.0));
  CHECK_THROWS_AS(ltfit::make_classifier("resnet18", 3, ltfit::HeadKind::kLinear, 0.5,
                                         ltfit::Stem::kImagenet, 0.1),
                  ltfit::ConfigError);
  CHECK_THROWS_WITH(
      ltfit::make_classifier("regnet_y_800mf", 3, ltfit::HeadKind::kLinear, 0.5,
                             ltfit::Stem::kImagenet, 0.1),
      Catch::Matchers::Contains("model.drop_path") && Catch::Matchers::Contains("regnet_y_800mf"));
}
