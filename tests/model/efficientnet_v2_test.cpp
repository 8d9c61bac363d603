// EfficientNetV2-S against torchvision 0.29's efficientnet_v2_s: parameter count and state-dict
// size (`sum(p.numel() for p in efficientnet_v2_s().parameters())`, `len(efficientnet_v2_s()
// .state_dict())`), state-dict names and shapes, BatchNorm eps 1e-3, stochastic depth, layer
// groups, train/eval behaviour, the fastai head (forward and backward), the ONNX graph and the
// registry row (EfficientNet_V2_S_Weights.IMAGENET1K_V1). The linear model is built once.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>
#include <variant>

#include "ltfit/model/efficientnet_v2.h"
#include "ltfit/model/onnx_export.h"
#include "ltfit/util/error.h"
#include "model/family_fixtures.h"

namespace {

const ltfit::ArchInfo& efficientnet_v2_row() {
  static const std::vector<ltfit::ArchInfo> rows = ltfit::efficientnet_v2_archs();
  return ltfit::testing::family_row(rows, "efficientnet_v2_s");
}

ltfit::Classifier& linear_v2s() {
  return ltfit::testing::cached_linear_model(efficientnet_v2_row());
}

// efficientnet_v2_s with fastai's head and 5 classes, built once.
ltfit::Classifier& fastai_v2s() {
  static ltfit::Classifier model = efficientnet_v2_row().make(5, ltfit::HeadKind::kFastai, 0.5);
  return model;
}

std::map<std::string, torch::Tensor> v2_state(ltfit::Classifier& net) {
  std::map<std::string, torch::Tensor> entries;
  for (const auto& p : net->named_parameters()) entries[p.key()] = p.value();
  for (const auto& b : net->named_buffers()) entries[b.key()] = b.value();
  return entries;
}

std::set<const void*> v2_tensor_identities(const std::vector<torch::Tensor>& tensors) {
  std::set<const void*> ids;
  for (const auto& t : tensors) ids.insert(t.unsafeGetTensorImpl());
  return ids;
}

}  // namespace

TEST_CASE("EfficientNetV2-S parameter count and state-dict size equal torchvision's", "[model]") {
  ltfit::Classifier& net = linear_v2s();
  CHECK(ltfit::count_parameters(*net) == 21458488);
  CHECK(efficientnet_v2_row().parameters == 21458488);
  // 110 BatchNorms x 5 + 30 SE x 4 + 110 convs + classifier 2.
  CHECK(v2_state(net).size() == 782);
  CHECK(net->feature_channels() == 1280);
  CHECK(efficientnet_v2_row().feature_channels == 1280);
  CHECK(net->arch() == "efficientnet_v2_s");
  CHECK_FALSE(net->has_fastai_head());
  CHECK_THROWS_AS(ltfit::efficientnet_v2_spec("efficientnet_v2_m"), ltfit::ConfigError);
}

TEST_CASE("EfficientNetV2-S names and shapes equal torchvision's state-dict keys", "[model]") {
  const auto s = v2_state(linear_v2s());
  const std::map<std::string, std::vector<std::int64_t>> expected = {
      {"features.0.0.weight", {24, 3, 3, 3}},
      {"features.0.1.num_batches_tracked", {}},
      {"features.1.0.block.0.0.weight", {24, 24, 3, 3}},  // fused, expand 1: one kxk conv
      {"features.1.1.block.0.1.running_var", {24}},
      {"features.2.0.block.0.0.weight", {96, 24, 3, 3}},  // fused expand (stride 2)
      {"features.2.0.block.1.0.weight", {48, 96, 1, 1}},  // project
      {"features.2.3.block.1.1.bias", {48}},
      {"features.3.3.block.0.0.weight", {256, 64, 3, 3}},
      {"features.4.0.block.0.0.weight", {256, 64, 1, 1}},    // MBConv expand
      {"features.4.0.block.1.0.weight", {256, 1, 3, 3}},     // depthwise
      {"features.4.0.block.2.fc1.weight", {16, 256, 1, 1}},  // squeeze: block input 64 / 4
      {"features.4.0.block.2.fc2.bias", {256}},
      {"features.4.0.block.3.0.weight", {128, 256, 1, 1}},
      {"features.5.0.block.0.0.weight", {768, 128, 1, 1}},
      {"features.5.8.block.2.fc1.weight", {40, 960, 1, 1}},
      {"features.6.14.block.3.1.running_mean", {256}},
      {"features.7.0.weight", {1280, 256, 1, 1}},
      {"features.7.1.bias", {1280}},
      {"classifier.1.weight", {1000, 1280}},
      {"classifier.1.bias", {1000}}};
  for (const auto& [name, shape] : expected) {
    INFO(name);
    REQUIRE(s.count(name) == 1);
    CHECK(s.at(name).sizes() == torch::IntArrayRef(shape));
  }
  CHECK(s.count("features.1.0.block.1.0.weight") == 0);   // expand 1: no project conv
  CHECK(s.count("features.1.2.block.0.0.weight") == 0);   // stage 1 has two blocks
  CHECK(s.count("features.6.15.block.0.0.weight") == 0);  // stage 6 has fifteen
  CHECK(s.count("features.8.0.weight") == 0);
  CHECK(s.count("classifier.0.weight") == 0);  // Dropout holds nothing
}

TEST_CASE("EfficientNetV2-S BatchNorms have eps 1e-3, which LibTorch's forward reads", "[model]") {
  std::size_t batch_norms = 0;
  for (const auto& m : linear_v2s()->modules(/*include_self=*/false)) {
    if (auto* bn = m->as<torch::nn::BatchNorm2d>()) {
      ++batch_norms;
      CHECK(bn->options.eps() == 1e-3);
    }
  }
  CHECK(batch_norms == 110);  // stem 1, fused 2 + 4 x 2 + 4 x 2, MBConv 30 x 3, last conv 1
  for (const auto& m : fastai_v2s()->named_modules()) {
    if (auto* bn = m.value()->as<torch::nn::BatchNorm1d>()) {
      INFO(m.key());
      CHECK(bn->options.eps() == 1e-5);  // fastai's head keeps PyTorch's default
    }
  }
  // Changed after construction, eval-mode BatchNorm uses it: zero mean and variance give
  // x/sqrt(eps).
  torch::nn::BatchNorm2d bn(2);
  bn->options.eps(1e-3);
  torch::NoGradGuard no_grad;
  bn->running_var.zero_();
  bn->eval();
  const torch::Tensor x = torch::ones({1, 2, 1, 1});
  CHECK(torch::allclose(bn(x), x / std::sqrt(1e-3)));
}

TEST_CASE("EfficientNetV2-S stochastic depth: linear over 40 blocks, residual as torchvision",
          "[model]") {
  std::map<std::string, double> p;
  std::map<std::string, bool> residual;
  for (const auto& m : linear_v2s()->named_modules()) {
    if (auto* sd = m.value()->as<ltfit::StochasticDepthImpl>()) p[m.key()] = sd->p();
    if (auto* mb = m.value()->as<ltfit::MBConvImpl>()) residual[m.key()] = mb->has_residual();
    if (auto* f = m.value()->as<ltfit::FusedMBConvImpl>()) residual[m.key()] = f->has_residual();
  }
  REQUIRE(p.size() == 40);
  REQUIRE(residual.size() == 40);
  CHECK(p.at("features.1.0.stochastic_depth") == 0.0);
  CHECK(p.at("features.1.1.stochastic_depth") == Approx(0.2 * 1 / 40));
  CHECK(p.at("features.3.3.stochastic_depth") == Approx(0.2 * 9 / 40));
  CHECK(p.at("features.4.0.stochastic_depth") == Approx(0.2 * 10 / 40));
  CHECK(p.at("features.6.14.stochastic_depth") == Approx(0.2 * 39 / 40));
  CHECK(residual.at("features.1.0"));  // 24 -> 24, stride 1
  CHECK_FALSE(residual.at("features.2.0"));
  CHECK(residual.at("features.2.1"));
  CHECK_FALSE(residual.at("features.4.0"));
  CHECK_FALSE(residual.at("features.5.0"));  // stride 1 but 128 -> 160 channels
  CHECK(residual.at("features.5.1"));
  CHECK(residual.at("features.6.14"));
}

TEST_CASE("EfficientNetV2-S layer groups split at features.4 and hold every parameter once",
          "[model]") {
  for (ltfit::Classifier* net : {&linear_v2s(), &fastai_v2s()}) {
    const auto groups = ltfit::testing::checked_layer_groups(**net);
    auto named = (*net)->named_parameters();
    auto in = [&](std::size_t group, const std::string& name) {
      return v2_tensor_identities(groups[group]).count(named[name].unsafeGetTensorImpl()) == 1;
    };
    CHECK(in(0, "features.0.0.weight"));
    CHECK(in(0, "features.3.3.block.1.1.bias"));
    CHECK(in(1, "features.4.0.block.0.0.weight"));
    CHECK(in(1, "features.7.1.weight"));
    CHECK(in(2, (*net)->has_fastai_head() ? "head.2.weight" : "classifier.1.weight"));
  }
}

TEST_CASE("EfficientNetV2-S eval forward is deterministic, train forward is stochastic",
          "[model]") {
  ltfit::Classifier& net = linear_v2s();
  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({2, 3, 64, 64});
  torch::NoGradGuard no_grad;
  net->eval();
  const torch::Tensor a = net->forward(x);
  CHECK(a.sizes() == torch::IntArrayRef({2, 1000}));
  CHECK(a.equal(net->forward(x)));
  CHECK(net->features(x).sizes() == torch::IntArrayRef({2, 1280, 2, 2}));
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

TEST_CASE("EfficientNetV2-S with fastai's head: [N, 5] forward, gradients for every parameter",
          "[model]") {
  ltfit::Classifier& net = fastai_v2s();
  CHECK(net->has_fastai_head());
  auto named = net->named_parameters();
  CHECK(named["head.2.weight"].sizes() == torch::IntArrayRef({512, 2 * 1280}));
  CHECK_FALSE(named.contains("classifier.1.weight"));
  const std::int64_t body = 21458488 - (1280 * 1000 + 1000);
  CHECK(ltfit::count_parameters(*net) ==
        body + 2 * 2560 + (2560 * 512 + 512) + 2 * 512 + (512 * 5 + 5));
  torch::manual_seed(1);
  net->train();
  net->zero_grad();
  const torch::Tensor logits = net->forward(torch::randn({3, 3, 64, 64}));
  REQUIRE(logits.sizes() == torch::IntArrayRef({3, 5}));
  torch::nn::functional::cross_entropy(logits, torch::tensor({0, 4, 2})).backward();
  for (const auto& p : named) {
    INFO(p.key());
    REQUIRE(p.value().grad().defined());
    CHECK(torch::isfinite(p.value().grad()).all().item<bool>());
  }
  CHECK(named["features.0.0.weight"].grad().abs().sum().item<double>() > 0);
  net->zero_grad();
  net->eval();
  torch::NoGradGuard no_grad;
  CHECK(net->forward(torch::randn({1, 3, 64, 64})).sizes() == torch::IntArrayRef({1, 5}));
}

TEST_CASE("EfficientNetV2-S ONNX graph: every parameter, BatchNorm epsilon 1e-3", "[model]") {
  ltfit::Classifier& net = linear_v2s();
  net->eval();
  ltfit::OnnxExportOptions options;
  options.image_size = 64;
  const auto graph = ltfit::onnx_graph_of(*net, efficientnet_v2_row(), 1000, options);
  std::set<std::string> names;
  for (const auto& init : graph.initializers()) names.insert(init.name);
  for (const auto& p : net->named_parameters()) CHECK(names.count(p.key()) == 1);
  std::size_t batch_norms = 0, adds = 0;
  for (const auto& node : graph.nodes()) {
    if (node.op == "Dropout") FAIL("a Dropout node");
    adds += node.op == "Add";
    if (node.op != "BatchNormalization") continue;
    ++batch_norms;
    REQUIRE(node.attributes.size() == 1);
    CHECK(std::get<float>(node.attributes[0].value) == 1e-3f);
  }
  CHECK(batch_norms == 110);
  CHECK(adds == 35);  // every block but the first of stages 2-6 (stage 1 keeps 24 channels)
  CHECK(graph.nodes().back().outputs == std::vector<std::string>{"logits"});
}

TEST_CASE("EfficientNetV2-S registry row matches torchvision's IMAGENET1K_V1 weights", "[model]") {
  const ltfit::ArchInfo& row = efficientnet_v2_row();
  CHECK(ltfit::efficientnet_v2_archs().size() == 1);
  CHECK(row.family == "efficientnet_v2");
  CHECK(row.weights_file == "efficientnet_v2_s-dd5fe13b.pth");
  CHECK(row.interpolation == "bilinear");
  CHECK(row.eval_resize == 384);
  CHECK(row.eval_crop == 384);
  CHECK(row.imagenet_top1 == Approx(84.228));
  CHECK(row.classifier_prefix == "classifier.");
  CHECK(row.normalization == ltfit::ImageNormalization{});
  CHECK(row.layer_groups == "features.0-3 / features.4-7 / head");
  CHECK(static_cast<bool>(row.onnx));
}
