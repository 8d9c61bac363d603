// timm's parameter names mapped to torchvision's (model/timm_names.h): torchvision's own names
// pass unchanged, timm's ConvNeXt and EfficientNet names land on the keys ltfit's models have
// (checked against timm itself by tests/formats/safetensors_oracle.sh), and a timm key the map
// does not know is refused naming the file and the key.
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
