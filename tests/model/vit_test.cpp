// ViT-B/16 against torchvision: parameter count and state-dict names and shapes (torchvision's
// vit_b_16()), the class token and position embeddings in the first layer group without weight
// decay, the resampling of position embeddings for other patch grids (and of a weight file's
// table), fastai's head without pooling on the class token, Grad-CAM over the patch grid, and the
// refusal of inputs that are not whole patches. Logits against torchvision's are in the parity
// test (tests/parity).
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>

#include "ltfit/eval/grad_cam.h"
#include "ltfit/model/vit.h"
#include "ltfit/util/error.h"
#include "model/family_fixtures.h"

namespace {

const ltfit::ArchInfo& vit_row() {
  static const std::vector<ltfit::ArchInfo> rows = ltfit::vit_archs();
  return ltfit::testing::family_row(rows, "vit_b_16");
}

ltfit::Classifier& linear_vit() { return ltfit::testing::cached_linear_model(vit_row()); }

// vit_b_16 with fastai's head and 5 classes, built once.
ltfit::Classifier& fastai_vit() {
  static ltfit::Classifier model = vit_row().make(5, ltfit::HeadKind::kFastai, 0.5);
  return model;
}

std::set<const void*> vit_tensor_ids(const std::vector<torch::Tensor>& tensors) {
  std::set<const void*> ids;
  for (const auto& t : tensors) ids.insert(t.unsafeGetTensorImpl());
  return ids;
}

}  // namespace

TEST_CASE("ViT-B/16's parameters, names and shapes equal torchvision's", "[model]") {
  ltfit::Classifier& net = linear_vit();
  CHECK(ltfit::count_parameters(*net) == 86567656);
  CHECK(vit_row().parameters == 86567656);
  std::map<std::string, torch::Tensor> state;
  for (const auto& p : net->named_parameters()) state[p.key()] = p.value();
  for (const auto& b : net->named_buffers()) state[b.key()] = b.value();
  CHECK(state.size() == 152);  // len(torchvision.models.vit_b_16().state_dict())
  const std::map<std::string, std::vector<std::int64_t>> expected = {
      {"class_token", {1, 1, 768}},
      {"conv_proj.weight", {768, 3, 16, 16}},
      {"conv_proj.bias", {768}},
      {"encoder.pos_embedding", {1, 197, 768}},
      {"encoder.layers.encoder_layer_0.ln_1.weight", {768}},
      {"encoder.layers.encoder_layer_0.self_attention.in_proj_weight", {2304, 768}},
      {"encoder.layers.encoder_layer_0.self_attention.in_proj_bias", {2304}},
      {"encoder.layers.encoder_layer_0.self_attention.out_proj.weight", {768, 768}},
      {"encoder.layers.encoder_layer_5.ln_2.bias", {768}},
      {"encoder.layers.encoder_layer_11.mlp.0.weight", {3072, 768}},
      {"encoder.layers.encoder_layer_11.mlp.3.bias", {768}},
      {"encoder.ln.weight", {768}},
      {"heads.head.weight", {1000, 768}},
      {"heads.head.bias", {1000}}};
  for (const auto& [name, shape] : expected) {
    INFO(name);
    REQUIRE(state.count(name) == 1);
    CHECK(state.at(name).sizes() == torch::IntArrayRef(shape));
  }
  CHECK(net->feature_layout() == ltfit::FeatureLayout::kToken);
  CHECK(vit_row().feature_layout == ltfit::FeatureLayout::kToken);
  // torchvision's initialisation: a zero class token and head, N(0, 0.02) position embeddings.
  CHECK(state.at("class_token").abs().max().item<float>() == 0);
  CHECK(state.at("heads.head.weight").abs().max().item<float>() == 0);
  CHECK(state.at("encoder.pos_embedding").std().item<double>() == Approx(0.02).epsilon(0.05));
}

TEST_CASE("ViT layer groups: class token and position embeddings first, without weight decay",
          "[model]") {
  for (ltfit::Classifier* net : {&linear_vit(), &fastai_vit()}) {
    const auto groups = ltfit::testing::checked_layer_groups(**net);
    auto named = (*net)->named_parameters();
    const auto in = [&](std::size_t group, const std::string& name) {
      return vit_tensor_ids(groups[group]).count(named[name].unsafeGetTensorImpl()) == 1;
    };
    CHECK(in(0, "class_token"));
    CHECK(in(0, "encoder.pos_embedding"));
    CHECK(in(0, "conv_proj.weight"));
    CHECK(in(0, "encoder.layers.encoder_layer_5.mlp.3.weight"));
    CHECK(in(1, "encoder.layers.encoder_layer_6.ln_1.weight"));
    CHECK(in(1, "encoder.ln.bias"));
    CHECK(in(2, (*net)->has_fastai_head() ? "head.2.weight" : "heads.head.weight"));
    const auto no_decay = vit_tensor_ids((*net)->no_weight_decay_parameters());
    CHECK(no_decay.count(named["class_token"].unsafeGetTensorImpl()) == 1);
    CHECK(no_decay.count(named["encoder.pos_embedding"].unsafeGetTensorImpl()) == 1);
    CHECK(no_decay.count(named["conv_proj.weight"].unsafeGetTensorImpl()) == 0);
    CHECK(no_decay.count(named["encoder.layers.encoder_layer_0.self_attention.in_proj_bias"]
                             .unsafeGetTensorImpl()) == 1);
  }
}

TEST_CASE("ViT position embeddings resample to other patch grids as timm's", "[model]") {
  torch::manual_seed(0);
  const torch::Tensor pos = torch::randn({1, 1 + 14 * 14, 8});
  CHECK(ltfit::resample_position_embedding(pos, 14, 14).is_same(pos));
  const torch::Tensor wide = ltfit::resample_position_embedding(pos, 10, 8);
  REQUIRE(wide.sizes() == torch::IntArrayRef({1, 1 + 10 * 8, 8}));
  CHECK(wide[0][0].equal(pos[0][0]));  // the class token's embedding is kept
  // A constant grid stays constant (the bicubic weights sum to one).
  const torch::Tensor flat = torch::full({1, 1 + 4 * 4, 3}, 0.25);
  CHECK(ltfit::resample_position_embedding(flat, 6, 6).sub(0.25).abs().max().item<float>() < 1e-6);
  // A weight file's 24x24 table (torchvision's 384 files) fits the model's 14x14 one.
  const torch::Tensor file = torch::randn({1, 1 + 24 * 24, 768});
  const torch::Tensor model = torch::zeros({1, 197, 768});
  CHECK(ltfit::vit_adapt_tensor("encoder.pos_embedding", file, model).sizes() == model.sizes());
  CHECK_FALSE(ltfit::vit_adapt_tensor("conv_proj.weight", file, model).defined());
  CHECK_FALSE(ltfit::vit_adapt_tensor("encoder.pos_embedding", torch::zeros({1, 12, 768}), model)
                  .defined());  // 11 patch tokens: no square grid
}

TEST_CASE("ViT with fastai's head: no pooling, any whole-patch size, gradients reach the table",
          "[model]") {
  ltfit::Classifier& net = fastai_vit();
  auto named = net->named_parameters();
  CHECK(named["head.0.weight"].sizes() == torch::IntArrayRef({768}));  // BatchNorm1d(768)
  CHECK(named["head.2.weight"].sizes() == torch::IntArrayRef({512, 768}));
  net->train();
  torch::manual_seed(1);
  const torch::Tensor logits = net->forward(torch::randn({2, 3, 64, 96}));  // a 4x6 grid
  REQUIRE(logits.sizes() == torch::IntArrayRef({2, 5}));
  net->zero_grad();
  logits.sum().backward();
  const torch::Tensor grad = named["encoder.pos_embedding"].grad();
  REQUIRE(grad.defined());
  CHECK(grad.abs().sum().item<double>() > 0);  // through the resampling
  net->eval();
  CHECK_THROWS_AS(net->forward(torch::randn({1, 3, 64, 70})), ltfit::ConfigError);
  CHECK_THROWS_WITH(net->forward(torch::randn({1, 3, 64, 70})),
                    Catch::Matchers::Contains("16-pixel patches"));
}

TEST_CASE("Grad-CAM on a ViT weighs the patch grid", "[model]") {
  ltfit::Classifier& net = fastai_vit();
  torch::manual_seed(2);
  const torch::Tensor x = torch::randn({2, 3, 64, 48});
  ltfit::EvalOptions options;
  const torch::Tensor cams = ltfit::grad_cam(net, x, torch::tensor({0, 3}), options);
  REQUIRE(cams.sizes() == torch::IntArrayRef({2, 64, 48}));
  CHECK(cams.max().item<float>() == Approx(1.0f));  // normalised to the peak
  CHECK(cams.min().item<float>() >= 0);
  CHECK(cams[0].std().item<float>() > 0);  // not flat: the patches differ
}
