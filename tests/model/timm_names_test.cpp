// timm's parameter names mapped to torchvision's (model/timm_names.h): torchvision's own names
// pass unchanged, timm's ConvNeXt, EfficientNet, RegNet-Y and MobileNetV3 names land on the keys
// ltfit's models have (checked against timm itself by tests/formats/safetensors_oracle.sh), and a
// timm key the map does not know is refused naming the file and the key.
#include <catch2/catch.hpp>

#include <torch/torch.h>

#include "ltfit/model/arch_registry.h"
#include "ltfit/model/timm_names.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

using Catch::Matchers::Contains;

namespace {

ltfit::StateDict named(const std::vector<std::string>& keys) {
  ltfit::StateDict state;
  for (const auto& k : keys) state.emplace_back(k, torch::zeros({2}));
  return state;
}

std::vector<std::string> keys_of(const ltfit::StateDict& state) {
  std::vector<std::string> out;
  for (const auto& [k, t] : state) out.push_back(k);
  return out;
}

}  // namespace

TEST_CASE("timm names: torchvision's pass, timm's map, unknown ones are refused", "[timm]") {
  bool mapped = true;
  const auto torchvision = named({"features.0.0.weight", "classifier.2.weight"});
  CHECK(keys_of(ltfit::from_timm_names(torchvision, "convnext", "f", &mapped)) ==
        keys_of(torchvision));
  CHECK_FALSE(mapped);
  const auto convnext = ltfit::from_timm_names(
      named({"stem.0.weight", "stages.0.blocks.1.gamma", "stages.2.downsample.1.weight",
             "stages.3.blocks.0.mlp.fc2.bias", "head.fc.weight"}),
      "convnext", "f", &mapped);
  CHECK(mapped);
  CHECK(keys_of(convnext) ==
        std::vector<std::string>{"features.0.0.weight", "features.1.1.layer_scale",
                                 "features.4.1.weight", "features.7.0.block.5.bias",
                                 "classifier.2.weight"});
  CHECK(convnext[1].second.sizes() == torch::IntArrayRef({2, 1, 1}));
  const auto efficientnet = ltfit::from_timm_names(
      named({"conv_stem.weight", "blocks.0.0.conv_dw.weight", "blocks.0.0.conv_pw.weight",
             "blocks.1.0.conv_pw.weight", "blocks.1.0.conv_pwl.weight", "blocks.1.0.bn3.bias",
             "conv_head.weight", "classifier.bias"}),
      "efficientnet", "f");
  CHECK(keys_of(efficientnet) ==
        std::vector<std::string>{"features.0.0.weight", "features.1.0.block.0.0.weight",
                                 "features.1.0.block.2.0.weight", "features.2.0.block.0.0.weight",
                                 "features.2.0.block.3.0.weight", "features.2.0.block.3.1.bias",
                                 "features.3.0.weight", "classifier.1.bias"});
  CHECK_THROWS_WITH(
      ltfit::from_timm_names(named({"stem.0.weight", "stages.0.blocks.0.mystery.weight"}),
                             "convnext", "w.safetensors"),
      Contains("w.safetensors") && Contains("'stages.0.blocks.0.mystery.weight'"));
  CHECK_THROWS_AS(ltfit::from_timm_names(named({"conv_stem.weight", "blocks.99999999999.0.x"}),
                                         "efficientnet", "f"),
                  ltfit::CheckpointError);
  // Every key of a real model's state maps onto a key ltfit's model has (the oracle checks values).
  ltfit::Classifier model = ltfit::make_classifier("convnext_tiny", 10);
  CHECK(model->named_parameters().contains("features.1.1.layer_scale"));
}

TEST_CASE("timm names: RegNet-Y and MobileNetV3 map onto torchvision's, unknown ones are refused",
          "[timm]") {
  bool mapped = false;
  const auto regnet = ltfit::from_timm_names(
      named({"stem.conv.weight", "stem.bn.running_var", "s1.b1.conv1.conv.weight",
             "s1.b1.downsample.bn.bias", "s2.b3.conv2.bn.weight", "s4.b2.se.fc1.bias",
             "s3.b10.conv3.conv.weight", "head.fc.weight"}),
      "regnet", "f", &mapped);
  CHECK(mapped);
  CHECK(keys_of(regnet) ==
        std::vector<std::string>{
            "stem.0.weight", "stem.1.running_var", "trunk_output.block1.block1-0.f.a.0.weight",
            "trunk_output.block1.block1-0.proj.1.bias", "trunk_output.block2.block2-2.f.b.1.weight",
            "trunk_output.block4.block4-1.f.se.fc1.bias",
            "trunk_output.block3.block3-9.f.c.0.weight", "fc.weight"});
  // Stage 0: a depthwise-separable block with an SE; stage 1: an inverted residual without one;
  // stage 2: two inverted residuals, the second with an SE; stage 3: the last conv-bn. They are
  // torchvision's flat features 1, 2, 3-4, 5.
  ltfit::StateDict mobilenet = named(
      {"conv_stem.weight", "bn1.weight", "blocks.0.0.conv_dw.weight",
       "blocks.0.0.se.conv_reduce.bias", "blocks.0.0.conv_pw.weight", "blocks.0.0.bn2.running_var",
       "blocks.1.0.conv_pw.weight", "blocks.1.0.conv_pwl.weight", "blocks.1.0.bn3.bias",
       "blocks.2.0.conv_pwl.weight", "blocks.2.1.conv_dw.weight",
       "blocks.2.1.se.conv_expand.weight", "blocks.2.1.conv_pwl.weight", "blocks.2.1.bn3.weight",
       "blocks.3.0.conv.weight", "blocks.3.0.bn1.bias", "conv_head.weight", "classifier.bias"});
  mobilenet[16].second = torch::ones({4, 3, 1, 1});  // conv_head: [O,I,1,1]
  const auto mobilenet_v3 = ltfit::from_timm_names(mobilenet, "mobilenet_v3", "f", &mapped);
  CHECK(mapped);
  CHECK(keys_of(mobilenet_v3) ==
        std::vector<std::string>{"features.0.0.weight", "features.0.1.weight",
                                 "features.1.block.0.0.weight", "features.1.block.1.fc1.bias",
                                 "features.1.block.2.0.weight", "features.1.block.2.1.running_var",
                                 "features.2.block.0.0.weight", "features.2.block.2.0.weight",
                                 "features.2.block.2.1.bias", "features.3.block.2.0.weight",
                                 "features.4.block.1.0.weight", "features.4.block.2.fc2.weight",
                                 "features.4.block.3.0.weight", "features.4.block.3.1.weight",
                                 "features.5.0.weight", "features.5.1.bias", "classifier.0.weight",
                                 "classifier.3.bias"});
  CHECK(mobilenet_v3[16].second.sizes() == torch::IntArrayRef({4, 3}));
  // timm's BatchNorm eps 1e-5 against torchvision's 1e-3: running_var + eps stays timm's.
  CHECK(mobilenet_v3[5].second[0].item<double>() == Approx(1e-5 - 1e-3).margin(1e-9));
  CHECK(mobilenet_v3[15].second[0].item<double>() == 0.0);  // a bias is left alone
  // The same names under another family are not mapped (EfficientNet's stay EfficientNet's).
  CHECK(keys_of(ltfit::from_timm_names(named({"conv_stem.weight", "blocks.0.0.conv_dw.weight"}),
                                       "efficientnet", "f"))[1] == "features.1.0.block.0.0.weight");
  CHECK_THROWS_WITH(ltfit::from_timm_names(named({"stem.conv.weight", "s1.b1.conv4.conv.weight"}),
                                           "regnet", "r.safetensors"),
                    Contains("r.safetensors") && Contains("'s1.b1.conv4.conv.weight'"));
  for (const char* bad :
       {"s0.b1.conv1.conv.weight", "s1.b0.conv1.conv.weight", "s99999999999.b1.conv1.conv.weight",
        "sx.b1.conv1.conv.weight", "s1.b1", "head.weight"}) {
    INFO(bad);
    CHECK_THROWS_AS(ltfit::from_timm_names(named({"stem.conv.weight", bad}), "regnet", "f"),
                    ltfit::CheckpointError);
  }
  CHECK_THROWS_WITH(ltfit::from_timm_names(named({"conv_stem.weight", "bn2.weight"}),
                                           "mobilenet_v3", "m.safetensors"),
                    Contains("m.safetensors") && Contains("'bn2.weight'"));
  CHECK_THROWS_AS(
      ltfit::from_timm_names(named({"conv_stem.weight", "blocks.99999999999.0.conv_dw.weight"}),
                             "mobilenet_v3", "f"),
      ltfit::CheckpointError);
}

TEST_CASE("timm names: timm's regnety_008 (pycls' widths) is refused for what it is", "[timm]") {
  ltfit::StateDict state = named({"stem.conv.weight"});
  const std::int64_t widths[] = {64, 128, 320, 768};
  for (int s = 0; s < 4; ++s) {
    state.emplace_back("s" + std::to_string(s + 1) + ".b1.conv3.conv.weight",
                       torch::zeros({widths[s], 1, 1, 1}));
  }
  CHECK_THROWS_WITH(
      ltfit::from_timm_names(state, "regnet", "r.safetensors"),
      Contains("r.safetensors") && Contains("regnety_008") && Contains("regnet_y_800mf"));
  state[2].second = torch::zeros({144, 1, 1, 1});  // torchvision's widths: mapped
  CHECK(ltfit::from_timm_names(state, "regnet", "f")[2].first ==
        "trunk_output.block2.block2-0.f.c.0.weight");
}
