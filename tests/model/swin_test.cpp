// Swin-T against torchvision: parameter count and state-dict size (torchvision's
// `sum(p.numel() for p in swin_t().parameters())`, `len(swin_t().state_dict())`, the twelve
// relative_position_index buffers included), state-dict names and shapes, the relative position
// index and the shifted-window mask (values from torchvision's code), feature-map sizes for inputs
// that are not window multiples, stochastic depth, layer groups, normalisation and no-decay
// parameters, train/eval behaviour, the fastai head, the registry row (torchvision 0.29's
// Swin_T_Weights.IMAGENET1K_V1) and the ONNX graph's shape. The model is built once.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>

#include "ltfit/model/onnx_export.h"
#include "ltfit/model/swin.h"
#include "ltfit/util/error.h"
#include "model/family_fixtures.h"

namespace {

const ltfit::ArchInfo& swin_row() {
  static const std::vector<ltfit::ArchInfo> rows = ltfit::swin_archs();
  return ltfit::testing::family_row(rows, "swin_t");
}

ltfit::Classifier& linear_swin() { return ltfit::testing::cached_linear_model(swin_row()); }

// swin_t with fastai's head and 5 classes, built once.
ltfit::Classifier& fastai_swin() {
  static ltfit::Classifier model = swin_row().make(5, ltfit::HeadKind::kFastai, 0.5);
  return model;
}

std::map<std::string, torch::Tensor> swin_state(ltfit::Classifier& net) {
  std::map<std::string, torch::Tensor> entries;
  for (const auto& p : net->named_parameters()) entries[p.key()] = p.value();
  for (const auto& b : net->named_buffers()) entries[b.key()] = b.value();
  return entries;
}

std::set<const void*> swin_identities(const std::vector<torch::Tensor>& tensors) {
  std::set<const void*> ids;
  for (const auto& t : tensors) ids.insert(t.unsafeGetTensorImpl());
  return ids;
}

}  // namespace

TEST_CASE("Swin-T parameter count and state-dict size equal torchvision's", "[model]") {
  ltfit::Classifier& net = linear_swin();
  CHECK(ltfit::count_parameters(*net) == 28288354);
  CHECK(swin_row().parameters == 28288354);
  CHECK(swin_state(net).size() == 185);  // 173 parameters + 12 relative_position_index
  CHECK(net->named_buffers().size() == 12);
  CHECK(net->feature_channels() == 768);
  CHECK(swin_row().feature_channels == 768);
  CHECK(net->arch() == "swin_t");
  CHECK_FALSE(net->has_fastai_head());
}

TEST_CASE("Swin-T names and shapes equal torchvision's state-dict keys", "[model]") {
  const auto state = swin_state(linear_swin());
  const std::map<std::string, std::vector<std::int64_t>> expected = {
      {"features.0.0.weight", {96, 3, 4, 4}},
      {"features.0.0.bias", {96}},
      {"features.0.2.weight", {96}},
      {"features.1.0.norm1.weight", {96}},
      {"features.1.0.attn.qkv.weight", {288, 96}},
      {"features.1.0.attn.qkv.bias", {288}},
      {"features.1.0.attn.proj.weight", {96, 96}},
      {"features.1.0.attn.relative_position_bias_table", {169, 3}},
      {"features.1.0.attn.relative_position_index", {2401}},
      {"features.1.1.norm2.bias", {96}},
      {"features.1.1.mlp.0.weight", {384, 96}},
      {"features.1.1.mlp.3.weight", {96, 384}},
      {"features.1.1.mlp.3.bias", {96}},
      {"features.2.reduction.weight", {192, 384}},
      {"features.2.norm.weight", {384}},
      {"features.5.5.attn.relative_position_bias_table", {169, 12}},
      {"features.6.reduction.weight", {768, 1536}},
      {"features.7.1.attn.qkv.weight", {2304, 768}},
      {"features.7.1.mlp.0.bias", {3072}},
      {"norm.weight", {768}},
      {"norm.bias", {768}},
      {"head.weight", {1000, 768}},
      {"head.bias", {1000}}};
  for (const auto& [name, shape] : expected) {
    INFO(name);
    REQUIRE(state.count(name) == 1);
    CHECK(state.at(name).sizes() == torch::IntArrayRef(shape));
  }
  CHECK(state.count("features.2.reduction.bias") == 0);  // PatchMerging's Linear has no bias
  CHECK(state.count("features.5.6.norm1.weight") == 0);  // stage 3 has six blocks
  CHECK(state.at("features.3.1.attn.relative_position_index").scalar_type() == torch::kLong);
}

TEST_CASE("Swin relative position index and shift mask follow torchvision's code", "[model]") {
  // torchvision: index[i*49 + j] = (hi - hj + 6) * 13 + (wi - wj + 6) for tokens i, j.
  const torch::Tensor index = ltfit::swin_relative_position_index(7);
  CHECK(index.sizes() == torch::IntArrayRef({2401}));
  CHECK(index[0].item<std::int64_t>() == 84);      // a token to itself: the table's centre
  CHECK(index[1].item<std::int64_t>() == 83);      // (0,0) to (0,1)
  CHECK(index[48].item<std::int64_t>() == 0);      // (0,0) to (6,6)
  CHECK(index[2352].item<std::int64_t>() == 168);  // (6,6) to (0,0)
  CHECK(index.min().item<std::int64_t>() == 0);
  CHECK(index.max().item<std::int64_t>() == 168);
  // 14x14 shifted by 3: the top-left window holds one region, the bottom-right one four.
  const torch::Tensor mask = ltfit::swin_attention_mask(14, 14, 7, 3, 3);
  REQUIRE(mask.sizes() == torch::IntArrayRef({4, 49, 49}));
  CHECK((mask[0] == 0).all().item<bool>());
  CHECK(((mask == 0) | (mask == -100)).all().item<bool>());
  // Bottom-right: regions of 4x4, 4x3, 3x4, 3x3 tokens -> 16² + 12² + 12² + 9² same-region pairs.
  CHECK((mask[3] == 0).sum().item<std::int64_t>() == 16 * 16 + 2 * 12 * 12 + 9 * 9);
  CHECK((mask[1] == 0).sum().item<std::int64_t>() == 28 * 28 + 21 * 21);  // top-right: 2 regions
  // No shift along h (window covers it, as torchvision decides): regions only along w.
  const torch::Tensor w_only = ltfit::swin_attention_mask(7, 14, 7, 0, 3);
  REQUIRE(w_only.sizes() == torch::IntArrayRef({2, 49, 49}));
  CHECK((w_only[0] == 0).all().item<bool>());
  CHECK((w_only[1] == 0).sum().item<std::int64_t>() == 28 * 28 + 21 * 21);
  CHECK(ltfit::swin_effective_shift(7, 3, 7) == 0);
  CHECK(ltfit::swin_effective_shift(7, 3, 14) == 3);
}

TEST_CASE("Swin-T takes any input size: padding to windows and odd merges", "[model]") {
  ltfit::Classifier& net = linear_swin();
  net->eval();
  torch::NoGradGuard no_grad;
  struct Case {
    std::int64_t h, w, fh, fw;
  };
  // 224: 56, 28, 14, 7. 100x132: 25x33, 13x17, 7x9, 4x5. 64: 16, 8, 4, 2. 36x20: 9x5 ... 2x1.
  for (const Case& c :
       {Case{224, 224, 7, 7}, Case{100, 132, 4, 5}, Case{64, 64, 2, 2}, Case{36, 20, 2, 1}}) {
    INFO(c.h << "x" << c.w);
    const torch::Tensor x = torch::randn({2, 3, c.h, c.w});
    const torch::Tensor maps = net->features(x);
    CHECK(maps.sizes() == torch::IntArrayRef({2, 768, c.fh, c.fw}));
    CHECK(torch::isfinite(net->classify(maps)).all().item<bool>());
  }
}

TEST_CASE("Swin-T stochastic depth rises linearly to 0.2, blocks alternate shift 0 and 3",
          "[model]") {
  std::map<std::string, double> p;
  std::map<std::string, std::int64_t> shift;
  for (const auto& m : linear_swin()->named_modules()) {
    if (auto* sd = m.value()->as<ltfit::StochasticDepthImpl>()) p[m.key()] = sd->p();
    if (auto* a = m.value()->as<ltfit::ShiftedWindowAttentionImpl>()) shift[m.key()] = a->shift();
  }
  REQUIRE(p.size() == 12);
  CHECK(p.at("features.1.0.stochastic_depth") == 0.0);
  CHECK(p.at("features.3.1.stochastic_depth") == Approx(0.2 * 3 / 11));
  CHECK(p.at("features.7.1.stochastic_depth") == Approx(0.2));
  CHECK(shift.at("features.1.0.attn") == 0);
  CHECK(shift.at("features.1.1.attn") == 3);
  CHECK(shift.at("features.5.4.attn") == 0);
  CHECK(shift.at("features.5.5.attn") == 3);
}

TEST_CASE("Swin-T layer groups split at features.4 and hold every parameter once", "[model]") {
  for (ltfit::Classifier* net : {&linear_swin(), &fastai_swin()}) {
    const auto groups = ltfit::testing::checked_layer_groups(**net);
    auto named = (*net)->named_parameters();
    auto in = [&](std::size_t group, const std::string& name) {
      return swin_identities(groups[group]).count(named[name].unsafeGetTensorImpl()) == 1;
    };
    CHECK(in(0, "features.0.0.weight"));
    CHECK(in(0, "features.3.1.mlp.3.bias"));
    CHECK(in(1, "features.4.reduction.weight"));
    CHECK(in(1, "features.7.1.attn.relative_position_bias_table"));
    CHECK(in(1, "norm.weight"));
    CHECK(in(2, (*net)->has_fastai_head() ? "head.2.weight" : "head.weight"));
  }
}

TEST_CASE("Swin-T LayerNorms are normalisation parameters, bias tables skip weight decay",
          "[model]") {
  ltfit::Classifier& net = linear_swin();
  const auto norm = swin_identities(net->normalization_parameters());
  CHECK(norm.size() == 2 * (1 + 12 * 2 + 3 + 1));  // stem, two per block, merges, final norm
  const auto no_decay = swin_identities(net->no_weight_decay_parameters());
  auto named = net->named_parameters();
  std::size_t tables = 0;
  for (const auto& p : named) {
    if (p.key().find("relative_position_bias_table") == std::string::npos) continue;
    ++tables;
    CHECK(no_decay.count(p.value().unsafeGetTensorImpl()) == 1);
  }
  CHECK(tables == 12);
  CHECK(no_decay.count(named["features.1.0.attn.qkv.bias"].unsafeGetTensorImpl()) == 1);
  CHECK(no_decay.count(named["features.1.0.attn.qkv.weight"].unsafeGetTensorImpl()) == 0);
  CHECK(no_decay.count(named["head.weight"].unsafeGetTensorImpl()) == 0);
}

TEST_CASE("Swin-T initialisation: truncated-normal linears and tables, zero biases", "[model]") {
  auto named = linear_swin()->named_parameters();
  const torch::Tensor qkv = named["features.5.0.attn.qkv.weight"];
  CHECK(qkv.std().item<double>() == Approx(0.02).epsilon(0.05));
  CHECK(qkv.abs().max().item<double>() <= 2.0);
  CHECK(named["features.5.0.mlp.0.bias"].abs().max().item<double>() == 0.0);
  CHECK(named["head.bias"].abs().max().item<double>() == 0.0);
  const torch::Tensor table = named["features.5.0.attn.relative_position_bias_table"];
  CHECK(table.std().item<double>() == Approx(0.02).epsilon(0.15));
  CHECK(named["norm.weight"].eq(1).all().item<bool>());
}

TEST_CASE("Swin-T eval forward is deterministic, train forward is stochastic", "[model]") {
  ltfit::Classifier& net = linear_swin();
  torch::manual_seed(0);
  const torch::Tensor x = torch::randn({2, 3, 64, 64});
  torch::NoGradGuard no_grad;
  net->eval();
  const torch::Tensor a = net->forward(x);
  CHECK(a.sizes() == torch::IntArrayRef({2, 1000}));
  CHECK(a.equal(net->forward(x)));  // stochastic depth off in eval
  net->train();
  CHECK_FALSE(net->forward(x).equal(net->forward(x)));  // stochastic depth draws anew
  net->eval();
  CHECK(a.equal(net->forward(x)));
}

TEST_CASE("Swin-T with fastai's head: [N, classes], backward reaches every parameter", "[model]") {
  ltfit::Classifier& net = fastai_swin();
  CHECK(net->has_fastai_head());
  auto named = net->named_parameters();
  CHECK(named["head.2.weight"].sizes() == torch::IntArrayRef({512, 2 * 768}));
  CHECK_FALSE(named.contains("head.weight"));
  CHECK(named.contains("norm.weight"));  // the final norm is part of the body
  const std::int64_t body = 28288354 - (768 * 1000 + 1000);
  CHECK(ltfit::count_parameters(*net) ==
        body + 2 * 1536 + (1536 * 512 + 512) + 2 * 512 + (512 * 5 + 5));
  net->train();
  torch::manual_seed(1);
  const torch::Tensor logits = net->forward(torch::randn({3, 3, 64, 48}));
  REQUIRE(logits.sizes() == torch::IntArrayRef({3, 5}));
  torch::nn::functional::cross_entropy(logits, torch::tensor({0, 3, 4})).backward();
  for (const auto& p : named) {
    INFO(p.key());
    REQUIRE(p.value().grad().defined());
    CHECK(torch::isfinite(p.value().grad()).all().item<bool>());
  }
  CHECK(named["features.0.0.weight"].grad().abs().sum().item<double>() > 0);
  CHECK(named["features.7.1.attn.relative_position_bias_table"].grad().abs().sum().item<double>() >
        0);
  net->zero_grad();
  net->eval();
}

TEST_CASE("Swin-T registry row matches torchvision's Swin_T_Weights.IMAGENET1K_V1", "[model]") {
  const ltfit::ArchInfo& row = swin_row();
  CHECK(row.family == "swin");
  CHECK(row.weights_file == "swin_t-704ceda3.pth");
  CHECK(row.interpolation == "bicubic");
  CHECK(row.eval_resize == 232);
  CHECK(row.eval_crop == 224);
  CHECK(row.imagenet_top1 == Approx(81.474));
  CHECK(row.classifier_prefix == "head.");
  CHECK(row.normalization == ltfit::ImageNormalization{});
  CHECK(row.layer_groups == "features.0-3 / features.4-7, norm / head");
  CHECK(static_cast<bool>(row.onnx));
  CHECK_THROWS_AS(ltfit::swin_spec("swin_b"), ltfit::ConfigError);
}

TEST_CASE("Swin-T ONNX graph: state-dict initializers, logits, a dynamic size is refused",
          "[model]") {
  for (ltfit::Classifier* net : {&linear_swin(), &fastai_swin()}) {
    (*net)->eval();
    ltfit::OnnxExportOptions options;
    options.image_size = 100;
    const std::int64_t classes = (*net)->has_fastai_head() ? 5 : 1000;
    const auto graph = ltfit::onnx_graph_of(**net, swin_row(), classes, options);
    std::set<std::string> names;
    for (const auto& init : graph.initializers()) names.insert(init.name);
    for (const auto& p : (*net)->named_parameters()) CHECK(names.count(p.key()) == 1);
    CHECK(graph.nodes().back().outputs == std::vector<std::string>{"logits"});
    options.dynamic_size = true;
    CHECK_THROWS_AS(ltfit::onnx_graph_of(**net, swin_row(), classes, options), ltfit::ConfigError);
  }
}
