// RegNet-Y 800MF and 1.6GF against torchvision 0.29: parameter counts and state-dict sizes
// (`sum(p.numel() for p in regnet_y_800mf().parameters())`, `len(regnet_y_800mf().state_dict())`),
// every state-dict name and shape (from torchvision's stage table: BlockParams.from_init_params'
// depths, widths and group widths), the stage table computed from the init parameters, the
// initialisation, layer groups, normalisation parameters, train/eval behaviour, the fastai head
// (forward and backward) and the registry rows (RegNet_Y_*_Weights.IMAGENET1K_V1). Each model is
// built once. Logits and gradients against torchvision's on the same weights are in the parity
// test (tests/parity), the ONNX export against ONNX Runtime in tests/formats/onnx_oracle.py.
#include <torch/torch.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "ltfit/model/onnx_export.h"
#include "ltfit/model/pretrained.h"
#include "ltfit/model/regnet.h"
#include "ltfit/model/torch_weights.h"
#include "ltfit/util/error.h"
#include "model/family_fixtures.h"
#include "support/test_support.h"

namespace {

const ltfit::ArchInfo& regnet_row(const std::string& arch) {
  static const std::vector<ltfit::ArchInfo> rows = ltfit::regnet_archs();
  return ltfit::testing::family_row(rows, arch);
}

ltfit::Classifier& linear_regnet(const std::string& arch) {
  return ltfit::testing::cached_linear_model(regnet_row(arch));
}

// regnet_y_800mf with fastai's head and 5 classes, built once.
ltfit::Classifier& fastai_800mf() {
  static ltfit::Classifier model =
      regnet_row("regnet_y_800mf").make(5, ltfit::HeadKind::kFastai, 0.5);
  return model;
}

using Shapes = std::map<std::string, std::vector<std::int64_t>>;

Shapes regnet_state_shapes(ltfit::Classifier& net) {
  Shapes entries;
  for (const auto& p : net->named_parameters()) entries[p.key()] = p.value().sizes().vec();
  for (const auto& b : net->named_buffers()) entries[b.key()] = b.value().sizes().vec();
  return entries;
}

// torchvision's Conv2dNormActivation state entries under `prefix`: conv `prefix`0.weight
// [out, in/groups, k, k] and BatchNorm `prefix`1.*.
void add_conv_bn_entries(Shapes& s, const std::string& prefix, std::int64_t in, std::int64_t out,
                         std::int64_t k, std::int64_t groups) {
  s[prefix + "0.weight"] = {out, in / groups, k, k};
  for (const char* name : {"weight", "bias", "running_mean", "running_var"}) {
    s[prefix + "1." + name] = {out};
  }
  s[prefix + "1.num_batches_tracked"] = {};
}

// Every state-dict entry torchvision's RegNet-Y has for a stage table (depths, widths and group
// widths as torchvision's BlockParams gives them), with 1000 classes.
Shapes torchvision_state_shapes(const std::vector<std::int64_t>& depths,
                                const std::vector<std::int64_t>& widths, std::int64_t group_width) {
  Shapes s;
  add_conv_bn_entries(s, "stem.", 3, 32, 3, 1);
  std::int64_t in = 32;
  for (std::size_t stage = 0; stage < depths.size(); ++stage) {
    const std::int64_t w = widths[stage];
    for (std::int64_t i = 0; i < depths[stage]; ++i) {
      const std::string n = std::to_string(stage + 1);
      const std::string block = "trunk_output.block" + n + ".block" + n + "-" + std::to_string(i);
      const std::int64_t block_in = i == 0 ? in : w;
      if (i == 0) add_conv_bn_entries(s, block + ".proj.", block_in, w, 1, 1);  // stride 2
      add_conv_bn_entries(s, block + ".f.a.", block_in, w, 1, 1);
      add_conv_bn_entries(s, block + ".f.b.", w, w, 3, w / group_width);
      const std::int64_t squeeze = block_in / 4;  // round(0.25 * width_in), exact for these
      s[block + ".f.se.fc1.weight"] = {squeeze, w, 1, 1};
      s[block + ".f.se.fc1.bias"] = {squeeze};
      s[block + ".f.se.fc2.weight"] = {w, squeeze, 1, 1};
      s[block + ".f.se.fc2.bias"] = {w};
      add_conv_bn_entries(s, block + ".f.c.", w, w, 1, 1);
    }
    in = w;
  }
  s["fc.weight"] = {1000, in};
  s["fc.bias"] = {1000};
  return s;
}

std::set<const void*> regnet_tensor_ids(const std::vector<torch::Tensor>& tensors) {
  std::set<const void*> ids;
  for (const auto& t : tensors) ids.insert(t.unsafeGetTensorImpl());
  return ids;
}

}  // namespace

TEST_CASE("RegNet parameter counts and state-dict sizes equal torchvision's", "[model]") {
  struct Case {
    const char* arch;
    std::int64_t params;
    std::size_t state_entries;
    std::int64_t feature_channels;
  };
  const Case cases[] = {{"regnet_y_800mf", 6432512, 340, 784},
                        {"regnet_y_1_6gf", 11202430, 626, 888}};
  for (const auto& c : cases) {
    INFO(c.arch);
    ltfit::Classifier& net = linear_regnet(c.arch);
    CHECK(ltfit::count_parameters(*net) == c.params);
    CHECK(regnet_row(c.arch).parameters == c.params);
    CHECK(regnet_state_shapes(net).size() == c.state_entries);
    CHECK(net->feature_channels() == c.feature_channels);
    CHECK(regnet_row(c.arch).feature_channels == c.feature_channels);
    CHECK(net->arch() == c.arch);
    CHECK_FALSE(net->has_fastai_head());
  }
}

TEST_CASE("RegNet stage table equals torchvision's BlockParams.from_init_params", "[model]") {
  // torchvision: BlockParams.from_init_params(depth=14, w_0=56, w_a=38.84, w_m=2.4,
  // group_width=16) and (depth=27, w_0=48, w_a=20.71, w_m=2.65, group_width=24).
  const ltfit::RegNetStages s800 = ltfit::regnet_stages(ltfit::regnet_spec("regnet_y_800mf"));
  CHECK(s800.depths == std::vector<std::int64_t>{1, 3, 8, 2});
  CHECK(s800.widths == std::vector<std::int64_t>{64, 144, 320, 784});
  CHECK(s800.group_widths == std::vector<std::int64_t>{16, 16, 16, 16});
  const ltfit::RegNetStages s16 = ltfit::regnet_stages(ltfit::regnet_spec("regnet_y_1_6gf"));
  CHECK(s16.depths == std::vector<std::int64_t>{2, 6, 17, 2});
  CHECK(s16.widths == std::vector<std::int64_t>{48, 120, 336, 888});
  CHECK(s16.group_widths == std::vector<std::int64_t>{24, 24, 24, 24});
  const ltfit::RegNetSpec spec = ltfit::regnet_spec("regnet_y_1_6gf");
  CHECK(spec.w_0 == 48);
  CHECK(spec.se_ratio == 0.25);
  CHECK_THROWS_AS(ltfit::regnet_spec("regnet_x_800mf"), ltfit::ConfigError);
  ltfit::RegNetSpec bad = spec;
  bad.w_0 = 50;  // torchvision: w_0 % 8 != 0 is invalid
  CHECK_THROWS_WITH(ltfit::regnet_stages(bad), Catch::Matchers::Contains("invalid RegNet"));
  bad = spec;
  bad.w_m = 1.0;
  CHECK_THROWS_WITH(ltfit::regnet_stages(bad), Catch::Matchers::Contains("invalid RegNet"));
}

TEST_CASE("RegNet state-dict names and shapes equal torchvision's, every one", "[model]") {
  struct Case {
    const char* arch;
    std::vector<std::int64_t> depths, widths;
    std::int64_t group_width;
  };
  const Case cases[] = {{"regnet_y_800mf", {1, 3, 8, 2}, {64, 144, 320, 784}, 16},
                        {"regnet_y_1_6gf", {2, 6, 17, 2}, {48, 120, 336, 888}, 24}};
  for (const auto& c : cases) {
    INFO(c.arch);
    const Shapes got = regnet_state_shapes(linear_regnet(c.arch));
    const Shapes want = torchvision_state_shapes(c.depths, c.widths, c.group_width);
    for (const auto& [name, shape] : want) {
      INFO(name);
      REQUIRE(got.count(name) == 1);
      CHECK(got.at(name) == shape);
    }
    for (const auto& entry : got) {
      INFO(entry.first);
      CHECK(want.count(entry.first) == 1);
    }
  }
  // Spelled out from torchvision's regnet_y_800mf().state_dict().
  const Shapes s = regnet_state_shapes(linear_regnet("regnet_y_800mf"));
  CHECK(s.at("stem.0.weight") == std::vector<std::int64_t>{32, 3, 3, 3});
  CHECK(s.at("trunk_output.block1.block1-0.proj.0.weight") ==
        std::vector<std::int64_t>{64, 32, 1, 1});
  CHECK(s.at("trunk_output.block1.block1-0.f.b.0.weight") ==
        std::vector<std::int64_t>{64, 16, 3, 3});
  CHECK(s.at("trunk_output.block1.block1-0.f.se.fc1.weight") ==
        std::vector<std::int64_t>{8, 64, 1, 1});
  CHECK(s.at("trunk_output.block4.block4-1.f.se.fc1.bias") == std::vector<std::int64_t>{196});
  CHECK(s.at("fc.weight") == std::vector<std::int64_t>{1000, 784});
  CHECK(s.count("trunk_output.block2.block2-1.proj.0.weight") == 0);  // same shape: no proj
  const Shapes g = regnet_state_shapes(linear_regnet("regnet_y_1_6gf"));
  CHECK(g.at("trunk_output.block1.block1-0.f.b.0.weight") ==
        std::vector<std::int64_t>{48, 24, 3, 3});
  CHECK(g.at("trunk_output.block3.block3-16.f.c.1.running_var") == std::vector<std::int64_t>{336});
}

TEST_CASE("RegNet initialisation is torchvision's", "[model]") {
  ltfit::Classifier& net = linear_regnet("regnet_y_800mf");
  auto named = net->named_parameters();
  // normal(0, sqrt(2 / (k*k*out))): the 3x3 grouped conv of block3-0 (320 x 20 x 3 x 3 values).
  const torch::Tensor b = named["trunk_output.block3.block3-0.f.b.0.weight"];
  CHECK(b.mean().item<double>() == Approx(0.0).margin(0.005));
  CHECK(b.std().item<double>() == Approx(std::sqrt(2.0 / (9 * 320))).epsilon(0.03));
  const torch::Tensor fc = named["fc.weight"];
  CHECK(fc.std().item<double>() == Approx(0.01).epsilon(0.02));
  CHECK(named["fc.bias"].abs().max().item<double>() == 0.0);
  CHECK(named["trunk_output.block2.block2-0.f.c.1.weight"].eq(1).all().item<bool>());
  CHECK(named["trunk_output.block2.block2-0.f.c.1.bias"].eq(0).all().item<bool>());
  // The SE convs' biases keep PyTorch's default uniform(+-1/sqrt(fan_in)), as torchvision's do.
  const torch::Tensor se_bias = named["trunk_output.block4.block4-0.f.se.fc1.bias"];  // fan_in 784
  CHECK(se_bias.abs().max().item<double>() <= 1.0 / std::sqrt(784.0));
  CHECK(se_bias.abs().max().item<double>() > 0.0);
}

TEST_CASE("RegNet layer groups split at block3 and hold every parameter once", "[model]") {
  for (ltfit::Classifier* net : {&linear_regnet("regnet_y_800mf"), &fastai_800mf()}) {
    const auto groups = ltfit::testing::checked_layer_groups(**net);
    auto named = (*net)->named_parameters();
    auto in = [&](std::size_t group, const std::string& name) {
      return regnet_tensor_ids(groups[group]).count(named[name].unsafeGetTensorImpl()) == 1;
    };
    CHECK(in(0, "stem.0.weight"));
    CHECK(in(0, "trunk_output.block2.block2-2.f.c.1.bias"));
    CHECK(in(1, "trunk_output.block3.block3-0.proj.0.weight"));
    CHECK(in(1, "trunk_output.block4.block4-1.f.se.fc2.bias"));
    CHECK(in(2, (*net)->has_fastai_head() ? "head.2.weight" : "fc.weight"));
  }
}

TEST_CASE("RegNet BatchNorm parameters are normalisation parameters", "[model]") {
  ltfit::Classifier& net = linear_regnet("regnet_y_800mf");
  const auto norm = regnet_tensor_ids(net->normalization_parameters());
  std::size_t batch_norms = 0;
  for (const auto& m : net->modules(/*include_self=*/false)) {
    if (auto* bn = m->as<torch::nn::BatchNorm2d>()) {
      ++batch_norms;
      CHECK(bn->options.eps() == 1e-5);
      CHECK(bn->options.momentum() == 0.1);
      CHECK(norm.count(bn->weight.unsafeGetTensorImpl()) == 1);
    }
  }
  CHECK(batch_norms == 47);  // stem 1 + 14 blocks x 3 + 4 projections (torchvision: 47)
  CHECK(norm.size() == 2 * batch_norms);
  auto named = net->named_parameters();
  CHECK(norm.count(named["trunk_output.block1.block1-0.f.se.fc1.weight"].unsafeGetTensorImpl()) ==
        0);
  CHECK(norm.count(named["fc.weight"].unsafeGetTensorImpl()) == 0);
}

TEST_CASE("RegNet eval forward is deterministic, train forward uses batch statistics", "[model]") {
  ltfit::Classifier& net = linear_regnet("regnet_y_800mf");
  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({2, 3, 64, 64});
  torch::NoGradGuard no_grad;
  net->eval();
  const torch::Tensor a = net->forward(x);
  CHECK(a.sizes() == torch::IntArrayRef({2, 1000}));
  CHECK(a.equal(net->forward(x)));
  CHECK(net->features(x).sizes() == torch::IntArrayRef({2, 784, 2, 2}));
  // Snapshot the BatchNorm running statistics: train-mode forwards update them.
  std::vector<torch::Tensor> saved;
  for (const auto& buffer : net->buffers()) saved.push_back(buffer.clone());
  const torch::Tensor stem_mean = net->named_buffers()["stem.1.running_mean"];
  const torch::Tensor stem_mean_before = stem_mean.clone();
  net->train();
  const torch::Tensor t1 = net->forward(x);
  CHECK_FALSE(t1.allclose(a));                     // batch statistics, not the running ones
  CHECK_FALSE(stem_mean.equal(stem_mean_before));  // ... which moved
  // RegNet has no dropout or stochastic depth: train forwards are deterministic too.
  CHECK(t1.allclose(net->forward(x), 1e-5, 1e-6));
  for (std::size_t i = 0; i < saved.size(); ++i) net->buffers()[i].copy_(saved[i]);
  net->eval();
  CHECK(a.equal(net->forward(x)));
}

TEST_CASE("RegNet with fastai's head: [N, classes], forward and backward", "[model]") {
  ltfit::Classifier& net = fastai_800mf();
  CHECK(net->has_fastai_head());
  auto named = net->named_parameters();
  CHECK(named["head.2.weight"].sizes() == torch::IntArrayRef({512, 2 * 784}));
  CHECK_FALSE(named.contains("fc.weight"));
  // 800MF's body (torchvision minus fc: 784 * 1000 + 1000) + fastai's head.
  const std::int64_t body = 6432512 - (784 * 1000 + 1000);
  CHECK(ltfit::count_parameters(*net) ==
        body + 2 * 1568 + (1568 * 512 + 512) + 2 * 512 + (512 * 5 + 5));
  net->train();
  torch::manual_seed(1);
  const torch::Tensor logits = net->forward(torch::randn({3, 3, 64, 64}));
  CHECK(logits.sizes() == torch::IntArrayRef({3, 5}));
  torch::nn::functional::cross_entropy(logits, torch::tensor({0, 4, 2})).backward();
  for (const auto& p : net->named_parameters()) {
    INFO(p.key());
    REQUIRE(p.value().grad().defined());
    CHECK(torch::isfinite(p.value().grad()).all().item<bool>());
  }
  CHECK(named["stem.0.weight"].grad().abs().sum().item<double>() > 0);
  net->zero_grad();
  net->eval();
  torch::NoGradGuard no_grad;
  CHECK(net->forward(torch::randn({2, 3, 32, 32})).sizes() == torch::IntArrayRef({2, 5}));
}

TEST_CASE("RegNet registry rows match torchvision's IMAGENET1K_V1 weights", "[model]") {
  REQUIRE(ltfit::regnet_archs().size() == 2);
  const ltfit::ArchInfo& a = regnet_row("regnet_y_800mf");
  CHECK(a.family == "regnet");
  CHECK(a.weights_file == "regnet_y_800mf-1b27b58c.pth");
  CHECK(a.interpolation == "bilinear");
  CHECK(a.eval_resize == 256);
  CHECK(a.eval_crop == 224);
  CHECK(a.imagenet_top1 == Approx(76.420));
  CHECK(a.classifier_prefix == "fc.");
  CHECK(a.normalization == ltfit::ImageNormalization{});
  CHECK(a.layer_groups == "stem, trunk_output.block1-2 / trunk_output.block3-4 / head");
  CHECK(static_cast<bool>(a.onnx));
  const ltfit::ArchInfo& b = regnet_row("regnet_y_1_6gf");
  CHECK(b.weights_file == "regnet_y_1_6gf-b11a554e.pth");
  CHECK(b.imagenet_top1 == Approx(77.950));
  CHECK(b.parameters == 11202430);
  CHECK(b.eval_resize == 256);
}

TEST_CASE("RegNet exports to ONNX: every parameter an initializer, ending in the logits",
          "[model]") {
  ltfit::OnnxExportOptions options;
  options.image_size = 64;
  for (const char* arch : {"regnet_y_800mf", "regnet_y_1_6gf"}) {
    INFO(arch);
    ltfit::Classifier model = regnet_row(arch).make(3, ltfit::HeadKind::kLinear, 0.5);
    model->eval();
    const auto graph = ltfit::onnx_graph_of(*model, regnet_row(arch), 3, options);
    std::set<std::string> names;
    for (const auto& init : graph.initializers()) names.insert(init.name);
    for (const auto& p : model->named_parameters()) CHECK(names.count(p.key()) == 1);
    CHECK(graph.nodes().back().outputs == std::vector<std::string>{"logits"});
  }
}
