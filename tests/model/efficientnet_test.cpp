// EfficientNet-B0..B3 against torchvision: parameter counts and state-dict sizes (torchvision's
// `sum(p.numel() for p in efficientnet_bN().parameters())` and `len(efficientnet_bN()
// .state_dict())`), state-dict names and shapes, channel rounding, stochastic depth, layer groups,
// normalisation parameters, train/eval behaviour, the fastai head and the registry rows
// (torchvision 0.29's EfficientNet_BN_Weights.IMAGENET1K_V1). Each model is built once.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>

#include "ltfit/model/efficientnet.h"
#include "ltfit/util/error.h"
#include "model/family_fixtures.h"

namespace {

const ltfit::ArchInfo& efficientnet_row(const std::string& arch) {
  static const std::vector<ltfit::ArchInfo> rows = ltfit::efficientnet_archs();
  return ltfit::testing::family_row(rows, arch);
}

ltfit::Classifier& linear_efficientnet(const std::string& arch) {
  return ltfit::testing::cached_linear_model(efficientnet_row(arch));
}

// efficientnet_b0 with fastai's head and 5 classes, built once.
ltfit::Classifier& fastai_b0() {
  static ltfit::Classifier model =
      efficientnet_row("efficientnet_b0").make(5, ltfit::HeadKind::kFastai, 0.5);
  return model;
}

std::map<std::string, torch::Tensor> efficientnet_state(ltfit::Classifier& net) {
  std::map<std::string, torch::Tensor> entries;
  for (const auto& p : net->named_parameters()) entries[p.key()] = p.value();
  for (const auto& b : net->named_buffers()) entries[b.key()] = b.value();
  return entries;
}

std::set<const void*> tensor_identities(const std::vector<torch::Tensor>& tensors) {
  std::set<const void*> ids;
  for (const auto& t : tensors) ids.insert(t.unsafeGetTensorImpl());
  return ids;
}

}  // namespace

TEST_CASE("EfficientNet parameter counts and state-dict sizes equal torchvision's", "[model]") {
  struct Case {
    const char* arch;
    std::int64_t params;
    std::size_t state_entries;
    std::int64_t feature_channels;
  };
  const Case cases[] = {{"efficientnet_b0", 5288548, 360, 1280},
                        {"efficientnet_b1", 7794184, 508, 1280},
                        {"efficientnet_b2", 9109994, 508, 1408},
                        {"efficientnet_b3", 12233232, 574, 1536}};
  for (const auto& c : cases) {
    INFO(c.arch);
    ltfit::Classifier& net = linear_efficientnet(c.arch);
    CHECK(ltfit::count_parameters(*net) == c.params);
    CHECK(efficientnet_row(c.arch).parameters == c.params);
    CHECK(efficientnet_state(net).size() == c.state_entries);
    CHECK(net->feature_channels() == c.feature_channels);
    CHECK(efficientnet_row(c.arch).feature_channels == c.feature_channels);
    CHECK(net->arch() == c.arch);
    CHECK_FALSE(net->has_fastai_head());
  }
}

TEST_CASE("EfficientNet names and shapes equal torchvision's state-dict keys", "[model]") {
  const auto b0 = efficientnet_state(linear_efficientnet("efficientnet_b0"));
  const std::map<std::string, std::vector<std::int64_t>> expected = {
      {"features.0.0.weight", {32, 3, 3, 3}},
      {"features.0.1.num_batches_tracked", {}},
      {"features.1.0.block.0.0.weight", {32, 1, 3, 3}},  // expand ratio 1: no expand conv
      {"features.1.0.block.1.fc1.weight", {8, 32, 1, 1}},
      {"features.1.0.block.1.fc2.bias", {32}},
      {"features.1.0.block.2.0.weight", {16, 32, 1, 1}},
      {"features.2.0.block.0.1.running_var", {96}},
      {"features.2.0.block.1.0.weight", {96, 1, 3, 3}},
      {"features.2.0.block.2.fc1.weight", {4, 96, 1, 1}},  // squeeze: block input 16 / 4
      {"features.3.0.block.1.0.weight", {144, 1, 5, 5}},
      {"features.6.3.block.3.1.running_mean", {192}},
      {"features.8.0.weight", {1280, 320, 1, 1}},
      {"features.8.1.bias", {1280}},
      {"classifier.1.weight", {1000, 1280}},
      {"classifier.1.bias", {1000}}};
  for (const auto& [name, shape] : expected) {
    INFO(name);
    REQUIRE(b0.count(name) == 1);
    CHECK(b0.at(name).sizes() == torch::IntArrayRef(shape));
  }
  CHECK(b0.count("features.1.0.block.3.0.weight") == 0);  // B0's stage 1 has no expand conv
  CHECK(b0.count("features.1.1.block.0.0.weight") == 0);  // ... and one block
  CHECK(b0.count("classifier.0.weight") == 0);            // Dropout holds nothing
  // B3: width 1.2 (16 -> 24 by the 10% rule), depth 1.4 (stage 7: ceil(1.4) = 2 blocks).
  const auto b3 = efficientnet_state(linear_efficientnet("efficientnet_b3"));
  CHECK(b3.at("features.0.0.weight").sizes() == torch::IntArrayRef({40, 3, 3, 3}));
  CHECK(b3.at("features.1.1.block.2.0.weight").sizes() == torch::IntArrayRef({24, 24, 1, 1}));
  CHECK(b3.at("features.7.1.block.0.0.weight").sizes() == torch::IntArrayRef({2304, 384, 1, 1}));
  CHECK(b3.at("features.8.0.weight").sizes() == torch::IntArrayRef({1536, 384, 1, 1}));
  CHECK(b3.count("features.7.2.block.0.0.weight") == 0);
}

TEST_CASE("EfficientNet channels round like torchvision's _make_divisible", "[model]") {
  CHECK(ltfit::efficientnet_channels(32, 1.1) == 32);
  CHECK(ltfit::efficientnet_channels(320, 1.1) == 352);
  CHECK(ltfit::efficientnet_channels(16, 1.2) == 24);  // 16 would be more than 10% below 19.2
  CHECK(ltfit::efficientnet_channels(40, 1.2) == 48);
  CHECK(ltfit::efficientnet_channels(24, 6) == 144);
  CHECK(ltfit::efficientnet_channels(1, 1.0) == 8);
  CHECK(ltfit::efficientnet_spec("efficientnet_b2").dropout == 0.3);
  CHECK(ltfit::efficientnet_spec("efficientnet_b1").depth_mult == 1.1);
  CHECK_THROWS_AS(ltfit::efficientnet_spec("efficientnet_b7"), ltfit::ConfigError);
  CHECK_THROWS_AS(ltfit::efficientnet_spec("resnet50"), ltfit::ConfigError);
}

TEST_CASE("EfficientNet stochastic depth: per-sample row mode, linear in block index", "[model]") {
  // torchvision: p = 0.2 * block index / 16 for B0's 16 blocks; residual only when shapes match.
  std::map<std::string, double> p;
  std::map<std::string, bool> residual;
  for (const auto& m : linear_efficientnet("efficientnet_b0")->named_modules()) {
    if (auto* sd = m.value()->as<ltfit::StochasticDepthImpl>()) p[m.key()] = sd->p();
    if (auto* mb = m.value()->as<ltfit::MBConvImpl>()) residual[m.key()] = mb->has_residual();
  }
  REQUIRE(p.size() == 16);
  CHECK(p.at("features.1.0.stochastic_depth") == 0.0);
  CHECK(p.at("features.2.1.stochastic_depth") == Approx(0.2 * 2 / 16));
  CHECK(p.at("features.7.0.stochastic_depth") == Approx(0.2 * 15 / 16));
  CHECK_FALSE(residual.at("features.2.0"));
  CHECK(residual.at("features.2.1"));
  CHECK_FALSE(residual.at("features.5.0"));  // stride 1 but 80 -> 112 channels

  torch::manual_seed(0);
  ltfit::StochasticDepth drop(0.5);
  const torch::Tensor x = torch::ones({4000, 2, 1, 1});
  const torch::Tensor y = drop(x);
  CHECK(((y == 0) | (y == 2)).all().item<bool>());               // kept rows scaled 1/(1-p)
  CHECK((y.select(1, 0) == y.select(1, 1)).all().item<bool>());  // one draw per sample
  CHECK((y == 0).to(torch::kDouble).mean().item<double>() == Approx(0.5).margin(0.05));
  drop->eval();
  CHECK(drop(x).equal(x));
  drop->train();
  CHECK(ltfit::StochasticDepth(0.0)(x).equal(x));
}

TEST_CASE("EfficientNet layer groups split at features.4 and hold every parameter once",
          "[model]") {
  for (ltfit::Classifier* net : {&linear_efficientnet("efficientnet_b0"), &fastai_b0()}) {
    const auto groups = ltfit::testing::checked_layer_groups(**net);
    auto named = (*net)->named_parameters();
    auto in = [&](std::size_t group, const std::string& name) {
      return tensor_identities(groups[group]).count(named[name].unsafeGetTensorImpl()) == 1;
    };
    CHECK(in(0, "features.0.0.weight"));
    CHECK(in(0, "features.3.1.block.3.1.bias"));
    CHECK(in(1, "features.4.0.block.0.0.weight"));
    CHECK(in(1, "features.8.1.weight"));
    CHECK(in(2, (*net)->has_fastai_head() ? "head.2.weight" : "classifier.1.weight"));
  }
}

TEST_CASE("EfficientNet BatchNorm parameters are normalisation parameters", "[model]") {
  ltfit::Classifier& net = linear_efficientnet("efficientnet_b0");
  const auto norm = tensor_identities(net->normalization_parameters());
  std::size_t batch_norms = 0;
  for (const auto& m : net->modules(/*include_self=*/false)) {
    if (auto* bn = m->as<torch::nn::BatchNorm2d>()) {
      ++batch_norms;
      CHECK(norm.count(bn->weight.unsafeGetTensorImpl()) == 1);
      CHECK(norm.count(bn->bias.unsafeGetTensorImpl()) == 1);
    }
  }
  CHECK(batch_norms == 49);  // stem 1 + stage 1's block 2 + 15 blocks x 3 + features.8 1
  CHECK(norm.size() == 2 * batch_norms);
  auto named = net->named_parameters();
  CHECK(norm.count(named["features.1.0.block.1.fc1.weight"].unsafeGetTensorImpl()) == 0);
  CHECK(norm.count(named["classifier.1.weight"].unsafeGetTensorImpl()) == 0);
}

TEST_CASE("EfficientNet eval forward is deterministic, train forward is stochastic", "[model]") {
  ltfit::Classifier& net = linear_efficientnet("efficientnet_b0");
  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({2, 3, 32, 32});
  torch::NoGradGuard no_grad;
  net->eval();
  const torch::Tensor a = net->forward(x);
  CHECK(a.sizes() == torch::IntArrayRef({2, 1000}));
  CHECK(a.equal(net->forward(x)));
  CHECK(net->features(x).sizes() == torch::IntArrayRef({2, 1280, 1, 1}));
  // Snapshot the BatchNorm running statistics: train-mode forwards update them.
  std::vector<torch::Tensor> saved;
  for (const auto& b : net->buffers()) saved.push_back(b.clone());
  net->train();
  const torch::Tensor t1 = net->forward(x);
  const torch::Tensor t2 = net->forward(x);
  CHECK_FALSE(t1.equal(t2));  // stochastic depth and dropout draw anew
  for (std::size_t i = 0; i < saved.size(); ++i) net->buffers()[i].copy_(saved[i]);
  net->eval();
  CHECK(a.equal(net->forward(x)));
}

TEST_CASE("EfficientNet with fastai's head: no torchvision classifier, [N, classes]", "[model]") {
  ltfit::Classifier& net = fastai_b0();
  CHECK(net->has_fastai_head());
  auto named = net->named_parameters();
  CHECK(named.contains("head.2.weight"));
  CHECK(named["head.2.weight"].sizes() == torch::IntArrayRef({512, 2 * 1280}));
  CHECK_FALSE(named.contains("classifier.1.weight"));
  // B0's body (torchvision minus classifier: 1280 * 1000 + 1000) + fastai's head.
  const std::int64_t body = 5288548 - (1280 * 1000 + 1000);
  CHECK(ltfit::count_parameters(*net) ==
        body + 2 * 2560 + (2560 * 512 + 512) + 2 * 512 + (512 * 5 + 5));
  net->eval();
  torch::NoGradGuard no_grad;
  CHECK(net->forward(torch::randn({3, 3, 32, 32})).sizes() == torch::IntArrayRef({3, 5}));
}

TEST_CASE("EfficientNet registry rows match torchvision's IMAGENET1K_V1 weights", "[model]") {
  const auto rows = ltfit::efficientnet_archs();
  REQUIRE(rows.size() == 4);
  const ltfit::ArchInfo& b0 = efficientnet_row("efficientnet_b0");
  CHECK(b0.family == "efficientnet");
  CHECK(b0.weights_file == "efficientnet_b0_rwightman-7f5810bc.pth");
  CHECK(b0.interpolation == "bicubic");
  CHECK(b0.eval_resize == 256);
  CHECK(b0.eval_crop == 224);
  CHECK(b0.imagenet_top1 == Approx(77.692));
  CHECK(b0.classifier_prefix == "classifier.");
  CHECK(b0.normalization == ltfit::ImageNormalization{});
  CHECK(b0.layer_groups == "features.0-3 / features.4-8 / head");
  CHECK(efficientnet_row("efficientnet_b1").weights_file ==
        "efficientnet_b1_rwightman-bac287d4.pth");
  CHECK(efficientnet_row("efficientnet_b1").eval_crop == 240);
  CHECK(efficientnet_row("efficientnet_b2").weights_file ==
        "efficientnet_b2_rwightman-c35c1473.pth");
  CHECK(efficientnet_row("efficientnet_b2").eval_resize == 288);
  CHECK(efficientnet_row("efficientnet_b3").weights_file ==
        "efficientnet_b3_rwightman-b3899882.pth");
  CHECK(efficientnet_row("efficientnet_b3").eval_resize == 320);
  CHECK(efficientnet_row("efficientnet_b3").eval_crop == 300);
  CHECK(efficientnet_row("efficientnet_b3").imagenet_top1 == Approx(82.008));
}
