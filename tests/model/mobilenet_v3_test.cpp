// MobileNetV3-Large/Small against torchvision: parameter counts, state-dict sizes and a digest of
// every state-dict name and shape (torchvision's, printed by mobilenet_v3_oracle.py digest),
// named spot checks, BatchNorm eps/momentum, squeeze widths, residuals, layer groups,
// activations, train/eval behaviour, the fastai head forward and backward, the ONNX graph and the
// registry rows (torchvision 0.29's MobileNet_V3_*_Weights.IMAGENET1K_V1). Logits, gradients and
// ONNX Runtime: mobilenet_v3_oracle_test.cpp. Each 1000-class model is built once.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>

#include "ltfit/model/mobilenet_v3.h"
#include "ltfit/model/onnx_export.h"
#include "ltfit/util/error.h"
#include "model/family_fixtures.h"

namespace {

const ltfit::ArchInfo& mobilenet_v3_row(const std::string& arch) {
  static const std::vector<ltfit::ArchInfo> rows = ltfit::mobilenet_v3_archs();
  return ltfit::testing::family_row(rows, arch);
}

ltfit::Classifier& linear_mobilenet_v3(const std::string& arch) {
  return ltfit::testing::cached_linear_model(mobilenet_v3_row(arch));
}

std::map<std::string, torch::Tensor> mobilenet_v3_state(ltfit::Classifier& net) {
  std::map<std::string, torch::Tensor> entries;
  for (const auto& p : net->named_parameters()) entries[p.key()] = p.value();
  for (const auto& b : net->named_buffers()) entries[b.key()] = b.value();
  return entries;
}

// FNV-1a (64 bit) of "name:d0xd1...;" over the names in byte order, as mobilenet_v3_oracle.py's
// names_and_shapes_digest computes it from torchvision's state dict.
std::uint64_t mobilenet_v3_names_digest(const std::map<std::string, torch::Tensor>& state) {
  std::string text;
  for (const auto& [name, tensor] : state) {
    text += name + ":";
    for (std::int64_t d = 0; d < tensor.dim(); ++d) {
      text += (d ? "x" : "") + std::to_string(tensor.size(d));
    }
    text += ";";
  }
  std::uint64_t h = 0xCBF29CE484222325ULL;
  for (const unsigned char c : text) h = (h ^ c) * 0x100000001B3ULL;
  return h;
}

std::set<const void*> mobilenet_v3_identities(const std::vector<torch::Tensor>& tensors) {
  std::set<const void*> ids;
  for (const auto& t : tensors) ids.insert(t.unsafeGetTensorImpl());
  return ids;
}

std::size_t mobilenet_v3_norm_parameters(ltfit::Classifier& net) {
  return mobilenet_v3_identities(net->normalization_parameters()).size();
}

}  // namespace

TEST_CASE("MobileNetV3 parameter counts, state-dict names and shapes equal torchvision's",
          "[model]") {
  struct Case {
    const char* arch;
    std::int64_t params;
    std::size_t state_entries;
    std::uint64_t digest;
    std::int64_t feature_channels;
  };
  const Case cases[] = {{"mobilenet_v3_large", 5483032, 312, 0xb81abf8ccba51ee3ULL, 960},
                        {"mobilenet_v3_small", 2542856, 244, 0x43a5e6676688eabdULL, 576}};
  for (const auto& c : cases) {
    INFO(c.arch);
    ltfit::Classifier& net = linear_mobilenet_v3(c.arch);
    CHECK(ltfit::count_parameters(*net) == c.params);
    CHECK(mobilenet_v3_row(c.arch).parameters == c.params);
    const auto state = mobilenet_v3_state(net);
    CHECK(state.size() == c.state_entries);
    CHECK(mobilenet_v3_names_digest(state) == c.digest);
    CHECK(net->feature_channels() == c.feature_channels);
    CHECK(mobilenet_v3_row(c.arch).feature_channels == c.feature_channels);
    CHECK(net->arch() == c.arch);
    CHECK_FALSE(net->has_fastai_head());
  }
}

TEST_CASE("MobileNetV3 state-dict keys: stem, blocks, squeeze widths, last conv, classifier",
          "[model]") {
  const auto large = mobilenet_v3_state(linear_mobilenet_v3("mobilenet_v3_large"));
  const std::map<std::string, std::vector<std::int64_t>> expected_large = {
      {"features.0.0.weight", {16, 3, 3, 3}},
      {"features.0.1.num_batches_tracked", {}},
      {"features.1.block.0.0.weight", {16, 1, 3, 3}},  // expanded == in: no expand conv
      {"features.1.block.1.0.weight", {16, 16, 1, 1}},
      {"features.2.block.0.0.weight", {64, 16, 1, 1}},
      {"features.4.block.1.0.weight", {72, 1, 5, 5}},
      {"features.4.block.2.fc1.weight", {24, 72, 1, 1}},  // _make_divisible(72 // 4 = 18) = 24
      {"features.4.block.2.fc2.bias", {72}},
      {"features.4.block.3.1.running_var", {40}},
      {"features.8.block.2.1.weight", {80}},  // no squeeze-excitation: project is block.2
      {"features.13.block.2.fc1.weight", {168, 672, 1, 1}},
      {"features.15.block.3.0.weight", {160, 960, 1, 1}},
      {"features.16.0.weight", {960, 160, 1, 1}},
      {"features.16.1.running_mean", {960}},
      {"classifier.0.weight", {1280, 960}},
      {"classifier.3.weight", {1000, 1280}},
      {"classifier.3.bias", {1000}}};
  for (const auto& [name, shape] : expected_large) {
    INFO(name);
    REQUIRE(large.count(name) == 1);
    CHECK(large.at(name).sizes() == torch::IntArrayRef(shape));
  }
  CHECK(large.count("features.1.block.2.0.weight") == 0);  // two parts only
  CHECK(large.count("features.17.0.weight") == 0);
  CHECK(large.count("classifier.1.weight") == 0);  // Hardswish and Dropout hold nothing
  const auto small = mobilenet_v3_state(linear_mobilenet_v3("mobilenet_v3_small"));
  CHECK(small.at("features.1.block.1.fc1.weight").sizes() == torch::IntArrayRef({8, 16, 1, 1}));
  CHECK(small.at("features.2.block.2.0.weight").sizes() == torch::IntArrayRef({24, 72, 1, 1}));
  CHECK(small.at("features.9.block.2.fc1.weight").sizes() == torch::IntArrayRef({72, 288, 1, 1}));
  CHECK(small.at("features.12.0.weight").sizes() == torch::IntArrayRef({576, 96, 1, 1}));
  CHECK(small.at("classifier.0.weight").sizes() == torch::IntArrayRef({1024, 576}));
  CHECK(small.count("features.13.0.weight") == 0);
}

TEST_CASE("MobileNetV3 BatchNorms: eps 0.001, momentum 0.01, residuals where the shape stays",
          "[model]") {
  ltfit::Classifier& net = linear_mobilenet_v3("mobilenet_v3_large");
  std::size_t batch_norms = 0;
  std::map<std::string, bool> residual;
  for (const auto& m : net->named_modules()) {
    if (auto* bn = m.value()->as<torch::nn::BatchNorm2d>()) {
      ++batch_norms;
      CHECK(bn->options.eps() == 1e-3);
      CHECK(bn->options.momentum().value() == 0.01);
    }
    if (auto* block = m.value()->as<ltfit::MobileNetV3BlockImpl>()) {
      residual[m.key()] = block->has_residual();
    }
  }
  CHECK(batch_norms == 1 + 2 + 14 * 3 + 1);  // stem, features.1 (no expand), 14 blocks, last
  CHECK(mobilenet_v3_norm_parameters(net) == 2 * batch_norms);
  REQUIRE(residual.size() == 15);
  CHECK(residual.at("features.1"));        // 16 -> 16, stride 1
  CHECK_FALSE(residual.at("features.2"));  // stride 2
  CHECK(residual.at("features.3"));
  CHECK_FALSE(residual.at("features.11"));  // stride 1 but 80 -> 112
  CHECK(residual.at("features.15"));
  CHECK_THROWS_AS(ltfit::mobilenet_v3_spec("mobilenet_v2"), ltfit::ConfigError);
}

TEST_CASE("MobileNetV3 Hardswish and Hardsigmoid are torch's", "[model]") {
  const torch::Tensor x = torch::linspace(-5, 5, 101);
  const torch::Tensor relu6 = torch::clamp(x + 3, 0, 6);
  CHECK(torch::allclose(ltfit::Hardswish()(x), x * relu6 / 6));
  CHECK(torch::allclose(ltfit::Hardsigmoid()(x), relu6 / 6));
}

TEST_CASE("MobileNetV3 layer groups split at the first stride-16 block, each parameter once",
          "[model]") {
  struct Case {
    const char* arch;
    const char* last_of_first;  // a parameter of the first group's last module
    const char* first_of_second;
    const char* last;  // the last conv's BatchNorm
  };
  const Case cases[] = {{"mobilenet_v3_large", "features.6.block.3.1.bias",
                         "features.7.block.0.0.weight", "features.16.1.weight"},
                        {"mobilenet_v3_small", "features.3.block.2.0.weight",
                         "features.4.block.0.0.weight", "features.12.1.weight"}};
  for (const auto& c : cases) {
    ltfit::Classifier fastai = mobilenet_v3_row(c.arch).make(5, ltfit::HeadKind::kFastai, 0.5);
    for (ltfit::Classifier* net : {&linear_mobilenet_v3(c.arch), &fastai}) {
      INFO(c.arch << ((*net)->has_fastai_head() ? " fastai" : " linear"));
      const auto groups = ltfit::testing::checked_layer_groups(**net);
      auto named = (*net)->named_parameters();
      auto in = [&](std::size_t group, const std::string& name) {
        return mobilenet_v3_identities(groups[group]).count(named[name].unsafeGetTensorImpl()) == 1;
      };
      CHECK(in(0, "features.0.0.weight"));
      CHECK(in(0, c.last_of_first));
      CHECK(in(1, c.first_of_second));
      CHECK(in(1, c.last));
      CHECK(in(2, (*net)->has_fastai_head() ? "head.2.weight" : "classifier.3.weight"));
    }
  }
}

TEST_CASE("MobileNetV3 eval is deterministic, train uses batch statistics and dropout", "[model]") {
  ltfit::Classifier& net = linear_mobilenet_v3("mobilenet_v3_small");
  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({4, 3, 64, 64});
  torch::NoGradGuard no_grad;
  net->eval();
  const torch::Tensor a = net->forward(x);
  CHECK(a.sizes() == torch::IntArrayRef({4, 1000}));
  CHECK(a.equal(net->forward(x)));
  CHECK(net->features(x).sizes() == torch::IntArrayRef({4, 576, 2, 2}));
  std::vector<torch::Tensor> saved;
  for (const auto& b : net->buffers()) saved.push_back(b.clone());
  auto named = net->named_buffers();
  const torch::Tensor mean_before = named["features.0.1.running_mean"].clone();
  net->train();
  const torch::Tensor t1 = net->forward(x);
  const torch::Tensor t2 = net->forward(x);
  CHECK_FALSE(t1.equal(t2));  // the classifier's Dropout draws anew
  // Momentum 0.01 (PyTorch's convention): running = 0.99 running + 0.01 batch mean, per forward.
  auto* stem = net->named_modules()["features.0"].get();
  const torch::Tensor conv_out = stem->children()[0]->as<torch::nn::Conv2d>()->forward(x);
  const torch::Tensor batch_mean = conv_out.mean({0, 2, 3});
  const torch::Tensor once = 0.99 * mean_before + 0.01 * batch_mean;
  CHECK(torch::allclose(named["features.0.1.running_mean"], 0.99 * once + 0.01 * batch_mean, 1e-5,
                        1e-7));
  for (std::size_t i = 0; i < saved.size(); ++i) net->buffers()[i].copy_(saved[i]);
  net->eval();
  CHECK(a.equal(net->forward(x)));
}

TEST_CASE("MobileNetV3 with fastai's head: 5 classes forward and backward, the linear head trains",
          "[model]") {
  torch::manual_seed(1);
  ltfit::Classifier net =
      mobilenet_v3_row("mobilenet_v3_small").make(5, ltfit::HeadKind::kFastai, 0.5);
  CHECK(net->has_fastai_head());
  auto named = net->named_parameters();
  CHECK(named["head.2.weight"].sizes() == torch::IntArrayRef({512, 2 * 576}));
  CHECK_FALSE(named.contains("classifier.0.weight"));
  // The body (torchvision minus its classifier) + fastai's head.
  const std::int64_t body = 2542856 - (576 * 1024 + 1024) - (1024 * 1000 + 1000);
  CHECK(ltfit::count_parameters(*net) ==
        body + 2 * 1152 + (1152 * 512 + 512) + 2 * 512 + (512 * 5 + 5));
  net->train();
  const torch::Tensor logits = net->forward(torch::randn({3, 3, 64, 64}));
  CHECK(logits.sizes() == torch::IntArrayRef({3, 5}));
  torch::nn::functional::cross_entropy(logits, torch::tensor({0, 2, 4})).backward();
  for (const auto& p : named) {
    INFO(p.key());
    REQUIRE(p.value().grad().defined());
    CHECK(torch::isfinite(p.value().grad()).all().item<bool>());
  }
  CHECK(named["features.0.0.weight"].grad().abs().sum().item<double>() > 0);
  // torchvision's classifier (an in-place Dropout after Hardswish) trains too.
  ltfit::Classifier linear =
      mobilenet_v3_row("mobilenet_v3_small").make(5, ltfit::HeadKind::kLinear, 0.5);
  linear->train();
  torch::nn::functional::cross_entropy(linear->forward(torch::randn({3, 3, 64, 64})),
                                       torch::tensor({0, 2, 4}))
      .backward();
  for (const char* name : {"classifier.0.weight", "classifier.3.bias", "features.0.0.weight"}) {
    INFO(name);
    const torch::Tensor grad = linear->named_parameters()[name].grad();
    REQUIRE(grad.defined());
    CHECK(grad.abs().sum().item<double>() > 0);
  }
  net->eval();
  torch::NoGradGuard no_grad;
  CHECK(net->forward(torch::randn({2, 3, 32, 32})).sizes() == torch::IntArrayRef({2, 5}));
}

TEST_CASE("MobileNetV3 exports to ONNX with HardSwish and HardSigmoid, no Dropout", "[model]") {
  for (const char* arch : {"mobilenet_v3_large", "mobilenet_v3_small"}) {
    INFO(arch);
    ltfit::Classifier model = mobilenet_v3_row(arch).make(3, ltfit::HeadKind::kLinear, 0.5);
    model->eval();
    ltfit::OnnxExportOptions options;
    options.image_size = 64;
    const auto graph = ltfit::onnx_graph_of(*model, mobilenet_v3_row(arch), 3, options);
    std::set<std::string> names;
    for (const auto& init : graph.initializers()) names.insert(init.name);
    for (const auto& p : model->named_parameters()) CHECK(names.count(p.key()) == 1);
    std::map<std::string, int> ops;
    for (const auto& node : graph.nodes()) ++ops[node.op];
    CHECK(ops["HardSigmoid"] == (std::string(arch) == "mobilenet_v3_large" ? 8 : 9));  // SE blocks
    CHECK(ops["HardSwish"] > 0);
    CHECK(ops.count("Dropout") == 0);
    CHECK(graph.nodes().back().outputs == std::vector<std::string>{"logits"});
  }
}

TEST_CASE("MobileNetV3 registry rows match torchvision's IMAGENET1K_V1 weights", "[model]") {
  REQUIRE(ltfit::mobilenet_v3_archs().size() == 2);
  const ltfit::ArchInfo& large = mobilenet_v3_row("mobilenet_v3_large");
  CHECK(large.family == "mobilenet_v3");
  CHECK(large.weights_file == "mobilenet_v3_large-8738ca79.pth");
  CHECK(large.imagenet_top1 == Approx(74.042));
  CHECK(large.layer_groups == "features.0-6 / features.7-16 / head");
  const ltfit::ArchInfo& small = mobilenet_v3_row("mobilenet_v3_small");
  CHECK(small.weights_file == "mobilenet_v3_small-047dcff4.pth");
  CHECK(small.imagenet_top1 == Approx(67.668));
  CHECK(small.layer_groups == "features.0-3 / features.4-12 / head");
  for (const ltfit::ArchInfo* row : {&large, &small}) {
    CHECK(row->interpolation == "bilinear");
    CHECK(row->eval_resize == 256);
    CHECK(row->eval_crop == 224);
    CHECK(row->normalization == ltfit::ImageNormalization{});
    CHECK(row->classifier_prefix == "classifier.");
    CHECK(static_cast<bool>(row->onnx));
  }
  // No CIFAR stem: model.stem cifar is refused as a configuration error.
  CHECK_THROWS_AS(small.make(10, ltfit::HeadKind::kLinear, 0.5, ltfit::Stem::kCifar),
                  ltfit::ConfigError);
}
