// ConvNeXt module tree against torchvision: parameter counts and state-dict names and shapes (the
// numbers are torchvision 0.29's `sum(p.numel() for p in convnext_tiny().parameters())` and
// `len(convnext_tiny().state_dict())`), the registry rows, fastai's layer groups, the weight-decay
// and normalisation sets, row-mode stochastic depth and the fastai head. Numerical parity with
// torchvision (logits within 1e-4 on copied weights) is checked against Python torchvision itself.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <set>
#include <string>
#include <unordered_set>

#include "ltfit/model/convnext.h"
#include "ltfit/util/error.h"
#include "model/family_fixtures.h"

namespace {

const ltfit::ArchInfo& row(const std::string& arch) {
  static const std::vector<ltfit::ArchInfo> rows = ltfit::convnext_archs();
  return ltfit::testing::family_row(rows, arch);
}

ltfit::Classifier& linear_model(const std::string& arch) {
  return ltfit::testing::cached_linear_model(row(arch));
}

std::map<std::string, torch::Tensor> state(ltfit::Classifier& net) {
  std::map<std::string, torch::Tensor> entries;
  for (const auto& p : net->named_parameters()) entries[p.key()] = p.value();
  for (const auto& b : net->named_buffers()) entries[b.key()] = b.value();
  return entries;
}

std::unordered_set<const void*> identities(const std::vector<torch::Tensor>& tensors) {
  std::unordered_set<const void*> ids;
  for (const auto& t : tensors) ids.insert(t.unsafeGetTensorImpl());
  return ids;
}

}  // namespace

TEST_CASE("ConvNeXt parameter counts and registry rows equal torchvision's", "[model]") {
  struct Case {
    const char* arch;
    std::int64_t params;
    std::size_t state_entries;
    const char* weights_file;
    int eval_resize;
  };
  const Case cases[] = {{"convnext_tiny", 28589128, 182, "convnext_tiny-983f1562.pth", 236},
                        {"convnext_small", 50223688, 344, "convnext_small-0c510722.pth", 230}};
  for (const auto& c : cases) {
    INFO(c.arch);
    ltfit::Classifier& net = linear_model(c.arch);
    CHECK(ltfit::count_parameters(*net) == c.params);
    CHECK(state(net).size() == c.state_entries);
    CHECK(net->arch() == c.arch);
    CHECK(net->feature_channels() == 768);
    const ltfit::ArchInfo& info = row(c.arch);
    CHECK(info.family == "convnext");
    CHECK(info.parameters == c.params);
    CHECK(info.weights_file == c.weights_file);
    CHECK(info.eval_resize == c.eval_resize);
    CHECK(info.eval_crop == 224);
    CHECK(info.interpolation == "bilinear");
    CHECK(info.classifier_prefix == "classifier.");
    CHECK(info.normalization == ltfit::ImageNormalization{});
  }
  CHECK(row("convnext_tiny").imagenet_top1 == Approx(82.520));
  CHECK(row("convnext_small").imagenet_top1 == Approx(83.616));
  CHECK_THROWS_AS(ltfit::convnext_spec("convnext_huge"), ltfit::ConfigError);
}

TEST_CASE("ConvNeXt names and shapes equal torchvision's state-dict keys", "[model]") {
  const auto tiny = state(linear_model("convnext_tiny"));
  const std::map<std::string, std::vector<std::int64_t>> expected = {
      {"features.0.0.weight", {96, 3, 4, 4}},
      {"features.0.1.weight", {96}},
      {"features.0.1.bias", {96}},
      {"features.1.0.block.0.weight", {96, 1, 7, 7}},
      {"features.1.0.block.0.bias", {96}},
      {"features.1.0.block.2.weight", {96}},
      {"features.1.0.block.3.weight", {384, 96}},
      {"features.1.0.block.5.bias", {96}},
      {"features.1.0.layer_scale", {96, 1, 1}},
      {"features.2.0.weight", {96}},
      {"features.2.1.weight", {192, 96, 2, 2}},
      {"features.5.8.layer_scale", {384, 1, 1}},
      {"features.6.1.bias", {768}},
      {"features.7.2.block.5.weight", {768, 3072}},
      {"classifier.0.weight", {768}},
      {"classifier.0.bias", {768}},
      {"classifier.2.weight", {1000, 768}},
      {"classifier.2.bias", {1000}}};
  for (const auto& [key, shape] : expected) {
    INFO(key);
    REQUIRE(tiny.count(key) == 1);
    CHECK(tiny.at(key).sizes().vec() == shape);
  }
  // The Permute/GELU/Flatten positions hold nothing; tiny's third stage has nine blocks.
  for (const char* key : {"features.1.0.block.1.weight", "features.1.0.block.4.weight",
                          "classifier.1.weight", "features.5.9.layer_scale", "features.8.weight"}) {
    INFO(key);
    CHECK(tiny.count(key) == 0);
  }
  const auto small = state(linear_model("convnext_small"));
  CHECK(small.count("features.5.26.layer_scale") == 1);
  CHECK(small.count("features.5.27.layer_scale") == 0);
}

TEST_CASE("ConvNeXt initialisation follows torchvision's", "[model]") {
  const auto tiny = state(linear_model("convnext_tiny"));
  // trunc_normal_(std=0.02) conv and linear weights, zero biases; LayerNorm 1/0; scales 1e-6.
  for (const char* key :
       {"features.0.0.weight", "features.1.0.block.0.weight", "features.1.0.block.3.weight",
        "features.6.1.weight", "classifier.2.weight"}) {
    INFO(key);
    const torch::Tensor w = tiny.at(key);
    CHECK(w.std().item<double>() == Approx(0.02).epsilon(0.1));
    CHECK(std::abs(w.mean().item<double>()) < 0.002);
  }
  for (const char* key : {"features.0.0.bias", "features.1.0.block.5.bias", "features.2.1.bias",
                          "classifier.2.bias", "features.4.0.bias", "classifier.0.bias"}) {
    INFO(key);
    CHECK(tiny.at(key).abs().max().item<float>() == 0.0f);
  }
  CHECK(torch::equal(tiny.at("features.2.0.weight"), torch::ones({96})));
  CHECK(torch::equal(tiny.at("features.1.0.block.2.weight"), torch::ones({96})));
  CHECK(torch::allclose(tiny.at("features.7.2.layer_scale"), torch::full({768, 1, 1}, 1e-6)));
}

TEST_CASE("ConvNeXt layer groups partition the parameters", "[model]") {
  ltfit::Classifier& net = linear_model("convnext_tiny");
  const auto groups = net->layer_group_parameters();
  REQUIRE(groups.size() == 3);
  std::size_t total = 0;
  std::unordered_set<const void*> seen;
  for (const auto& group : groups) {
    CHECK_FALSE(group.empty());
    total += group.size();
    for (const auto& p : group) CHECK(seen.insert(p.unsafeGetTensorImpl()).second);
  }
  const auto all = net->parameters();
  CHECK(total == all.size());
  CHECK(seen == identities(all));
  const auto entries = state(net);
  const auto in_group = [&](std::size_t g, const std::string& key) {
    return identities(groups[g]).count(entries.at(key).unsafeGetTensorImpl()) == 1;
  };
  CHECK(in_group(0, "features.0.0.weight"));
  CHECK(in_group(0, "features.3.2.layer_scale"));
  CHECK(in_group(1, "features.4.1.weight"));
  CHECK(in_group(1, "features.7.2.block.5.bias"));
  CHECK(in_group(2, "classifier.0.weight"));
  CHECK(in_group(2, "classifier.2.weight"));
  CHECK(groups[2].size() == 4);  // classifier.0 and classifier.2, weight and bias each
}

TEST_CASE("ConvNeXt layer scales are exempt from weight decay, conv weights are not", "[model]") {
  ltfit::Classifier& net = linear_model("convnext_tiny");
  const auto no_decay = identities(net->no_weight_decay_parameters());
  int layer_scales = 0;
  for (const auto& p : net->named_parameters()) {
    INFO(p.key());
    const bool is_scale =
        p.key().size() > 11 && p.key().compare(p.key().size() - 11, 11, "layer_scale") == 0;
    if (is_scale) {
      ++layer_scales;
      CHECK(no_decay.count(p.value().unsafeGetTensorImpl()) == 1);
    }
    if (p.value().dim() >= 2 && !is_scale) {
      CHECK(no_decay.count(p.value().unsafeGetTensorImpl()) == 0);
    }
  }
  CHECK(layer_scales == 18);
}

TEST_CASE("ConvNeXt LayerNorm2d and LayerNorm parameters are normalisation parameters", "[model]") {
  ltfit::Classifier& net = linear_model("convnext_tiny");
  const auto norm = identities(net->normalization_parameters());
  const auto entries = state(net);
  for (const char* key :
       {"features.0.1.weight", "features.0.1.bias", "features.2.0.weight", "features.4.0.weight",
        "features.6.0.bias", "classifier.0.weight", "features.1.0.block.2.weight"}) {
    INFO(key);
    CHECK(norm.count(entries.at(key).unsafeGetTensorImpl()) == 1);
  }
  for (const char* key : {"features.0.0.weight", "features.2.1.weight", "features.1.0.layer_scale",
                          "features.1.0.block.3.weight", "classifier.2.weight"}) {
    INFO(key);
    CHECK(norm.count(entries.at(key).unsafeGetTensorImpl()) == 0);
  }
  // 3 + 3 + 9 + 3 block LayerNorms, 1 stem, 3 downsampling, 1 classifier: weight and bias each.
  CHECK(norm.size() == 2 * (18 + 1 + 3 + 1));
}

TEST_CASE("ConvNeXt stochastic depth: row mode, linear in depth, training only", "[model]") {
  const auto tiny = linear_model("convnext_tiny")->named_modules();
  CHECK(tiny["features.1.0"]->as<ltfit::CNBlock>()->drop_prob() == 0.0);
  CHECK(tiny["features.5.0"]->as<ltfit::CNBlock>()->drop_prob() == Approx(0.1 * 6 / 17.0));
  CHECK(tiny["features.7.2"]->as<ltfit::CNBlock>()->drop_prob() == Approx(0.1));
  const auto small = linear_model("convnext_small")->named_modules();
  CHECK(small["features.5.0"]->as<ltfit::CNBlock>()->drop_prob() == Approx(0.4 * 6 / 35.0));
  CHECK(small["features.7.2"]->as<ltfit::CNBlock>()->drop_prob() == Approx(0.4));

  // One block: each sample's residual is either dropped or the eval residual / (1 - p).
  torch::manual_seed(7);
  ltfit::CNBlock block(4, 0.5);
  torch::NoGradGuard no_grad;
  block->named_parameters()["layer_scale"].fill_(1.0);
  const torch::Tensor x = torch::randn({64, 4, 5, 5});
  block->eval();
  const torch::Tensor kept = block->forward(x) - x;  // [64,4,5,5]
  block->train();
  const torch::Tensor residual = block->forward(x) - x;
  int dropped = 0;
  for (std::int64_t i = 0; i < x.size(0); ++i) {
    const bool zero = residual[i].abs().max().item<float>() == 0.0f;
    dropped += zero;
    if (!zero) CHECK(torch::allclose(residual[i], kept[i] * 2.0, 1e-4, 1e-5));
  }
  CHECK(dropped > 8);
  CHECK(dropped < 56);
}

TEST_CASE("ConvNeXt-Tiny forward: eval deterministic, training stochastic", "[model]") {
  torch::manual_seed(3);
  ltfit::ConvNeXt net(ltfit::convnext_spec("convnext_tiny"), 10);
  torch::NoGradGuard no_grad;
  // Layer scales of 1 (instead of 1e-6) so that a dropped block changes the output visibly.
  for (auto& p : net->named_parameters()) {
    if (p.key().find("layer_scale") != std::string::npos) p.value().fill_(1.0);
  }
  const torch::Tensor x = torch::randn({8, 3, 32, 32});
  net->eval();
  const torch::Tensor a = net->forward(x);
  CHECK(a.sizes() == torch::IntArrayRef{8, 10});
  CHECK(torch::equal(a, net->forward(x)));
  CHECK(net->features(x).sizes() == torch::IntArrayRef{8, 768, 1, 1});
  net->train();
  const torch::Tensor b = net->forward(x);
  const torch::Tensor c = net->forward(x);
  CHECK_FALSE(torch::equal(b, c));
  CHECK_FALSE(torch::equal(a, b));
}

TEST_CASE("ConvNeXt with fastai's head: the body is `features`, output [N,classes]", "[model]") {
  ltfit::Classifier net = row("convnext_tiny").make(5, ltfit::HeadKind::kFastai, 0.5);
  CHECK(net->has_fastai_head());
  bool has_classifier = false;
  bool has_head = false;
  for (const auto& p : net->named_parameters()) {
    has_classifier |= p.key().rfind("classifier.", 0) == 0;
    has_head |= p.key().rfind("head.", 0) == 0;
  }
  CHECK_FALSE(has_classifier);
  CHECK(has_head);
  // fastai's head: BN(1536) + Linear(1536,512) + BN(512) + Linear(512,5) on the tiny body.
  const std::int64_t body = 28589128 - (2 * 768 + 768 * 1000 + 1000);
  const std::int64_t head = 2 * 1536 + 1536 * 512 + 512 + 2 * 512 + 512 * 5 + 5;
  CHECK(ltfit::count_parameters(*net) == body + head);
  net->eval();
  torch::NoGradGuard no_grad;
  const torch::Tensor x = torch::randn({2, 3, 32, 32});
  CHECK(net->forward(x).sizes() == torch::IntArrayRef{2, 5});
  const auto groups = net->layer_group_parameters();
  REQUIRE(groups.size() == 3);
  CHECK(groups[2].size() == 8);  // head.*: two BatchNorm1d and two Linear, weight and bias each
}
