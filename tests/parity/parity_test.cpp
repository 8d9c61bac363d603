// Parity with torchvision: the same weight file and input give the same logits (fp32, max abs
// difference <= 1e-4), for every registered arch; each arch's eval transform and normalisation
// are those torchvision publishes with its weight file; load_eval_image gives the bytes
// torchvision's Resize + CenterCrop give through Pillow; and `ltfit predict --weights F --arch A`
// gives the logits of torchvision's own inference recipe (weights.transforms() on a PIL image);
// and one training step (train-mode BatchNorm, cross-entropy, backward) gives torchvision's
// gradient for every parameter, for one arch per family. Needs the files written by
// tests/parity/make_parity.py (Python torch + torchvision, test oracles only); run through
// scripts/run_parity.sh, which CTest reports as skipped when torchvision is not installed. Tagged
// [parity]: not in the default test run.
#include <torch/torch.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "ltfit/data/image_io.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/model/convnext.h"
#include "ltfit/model/efficientnet.h"
#include "ltfit/model/pretrained.h"
#include "ltfit/model/torch_weights.h"
#include "ltfit/model/vit.h"
#include "support/test_support.h"

namespace {

torch::Tensor tensor_from(const nlohmann::json& values, const nlohmann::json& shape) {
  const auto flat = values.get<std::vector<float>>();
  return torch::tensor(flat).reshape(shape.get<std::vector<std::int64_t>>());
}

std::filesystem::path parity_dir() {
  const char* dir = std::getenv("LTFIT_PARITY_DIR");
  REQUIRE(dir != nullptr);  // set by scripts/run_parity.sh
  return dir;
}

// `arch` for a deterministic training step: ConvNeXt built without stochastic depth (its blocks
// draw it themselves); EfficientNet's StochasticDepth and Dropout modules are put in eval mode
// (the identity) by the test.
ltfit::Classifier without_stochastic_depth(const std::string& arch) {
  if (arch.rfind("convnext", 0) == 0) {
    ltfit::ConvNeXtSpec spec = ltfit::convnext_spec(arch);
    spec.stochastic_depth_prob = 0;
    return ltfit::Classifier(
        std::shared_ptr<ltfit::ClassifierImpl>(std::make_shared<ltfit::ConvNeXtImpl>(spec, 1000)));
  }
  return ltfit::make_classifier(arch, 1000);
}

}  // namespace

TEST_CASE("every registered arch's logits equal torchvision's on the same weights", "[parity]") {
  const std::filesystem::path dir = parity_dir();
  for (const ltfit::ArchInfo& info : ltfit::arch_registry()) {
    const std::string& arch = info.name;
    INFO(arch);
    const auto path = dir / (arch + ".pth");
    REQUIRE(std::filesystem::exists(path));  // make_parity.py's ARCHS must list every arch
    const auto expected =
        nlohmann::json::parse(ltfit::testing::read_file(dir / (arch + ".expected.json")));
    ltfit::Classifier model = ltfit::make_classifier(arch, 1000);
    const ltfit::StateDict state = ltfit::read_torch_state_dict(path.string());
    ltfit::load_pretrained_body(model, state, path.string());
    model->eval();
    torch::NoGradGuard no_grad;
    const torch::Tensor x = tensor_from(expected["input"], expected["input_shape"]);
    const torch::Tensor want = tensor_from(expected["logits"], expected["logits_shape"]);
    const torch::Tensor got = model->forward(x);
    const double max_diff = (got - want).abs().max().item<double>();
    INFO("max abs difference " << max_diff << ", logits up to " << want.abs().max().item<double>());
    CHECK(max_diff <= 1e-4);
  }
}

TEST_CASE("every registered arch: torchvision's eval transform, normalisation and predictions",
          "[parity]") {
  const std::filesystem::path dir = parity_dir();
  for (const ltfit::ArchInfo& info : ltfit::arch_registry()) {
    INFO(info.name << " (" << info.weights_file << ")");
    const auto expected =
        nlohmann::json::parse(ltfit::testing::read_file(dir / (info.name + ".expected.json")));
    const nlohmann::json& presets = expected["presets"];
    const auto preset = std::find_if(presets.begin(), presets.end(), [&](const auto& p) {
      return p["file"].template get<std::string>() == info.weights_file;
    });
    REQUIRE(preset != presets.end());  // torchvision publishes this weight file for the arch
    CHECK((*preset)["resize"].get<int>() == info.eval_resize);
    CHECK((*preset)["crop"].get<int>() == info.eval_crop);
    CHECK((*preset)["interpolation"].get<std::string>() == info.interpolation);
    for (std::size_t c = 0; c < 3; ++c) {
      CHECK((*preset)["mean"][c].get<float>() == info.normalization.mean[c]);
      CHECK((*preset)["std"][c].get<float>() == info.normalization.std[c]);
    }
    // End to end through the executable: decode, eval transform, normalisation, model.
    const auto r = ltfit::testing::run_ltfit(
        "predict --json --logits --weights " + (dir / (info.name + ".pth")).string() + " --arch " +
        info.name + " " + (dir / "eval" / (*preset)["image"].get<std::string>()).string());
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    const auto line = nlohmann::json::parse(r.stdout_text);
    const auto got = torch::tensor(line["logits"].get<std::vector<float>>());
    const auto want = torch::tensor((*preset)["image_logits"].get<std::vector<float>>());
    REQUIRE(got.sizes() == want.sizes());
    const double max_diff = (got - want).abs().max().item<double>();
    INFO("max abs logit difference " << max_diff << ", logits up to "
                                     << want.abs().max().item<double>());
    CHECK(max_diff <= 1e-4);
  }
}

TEST_CASE("load_eval_image gives the bytes of torchvision's Resize and CenterCrop", "[parity]") {
  const std::filesystem::path dir = parity_dir() / "eval";
  const auto cases = nlohmann::json::parse(ltfit::testing::read_file(dir / "cases.json"));
  REQUIRE(cases.size() >= 40);
  for (const auto& c : cases) {
    const ltfit::EvalTransform transform{
        c["resize"].get<int>(), c["crop"].get<int>(),
        ltfit::resample_filter_named(c["interpolation"].get<std::string>())};
    INFO(c["image"].get<std::string>() << ": resize " << transform.resize << ", crop "
                                       << transform.crop << ", " << c["interpolation"]);
    std::string error;
    const auto got =
        ltfit::load_eval_image((dir / c["image"].get<std::string>()).string(), transform, &error);
    REQUIRE(got.has_value());
    const std::string want = ltfit::testing::read_file(dir / c["expected"].get<std::string>());
    REQUIRE(got->numel() == static_cast<std::int64_t>(want.size()));
    const torch::Tensor expected =
        torch::from_blob(const_cast<char*>(want.data()), got->sizes(), torch::kUInt8);
    const int max_diff = (got->to(torch::kInt) - expected.to(torch::kInt)).abs().max().item<int>();
    CHECK(max_diff == 0);
  }
}

TEST_CASE("one training step gives torchvision's gradients, one arch per family", "[parity]") {
  const std::filesystem::path dir = parity_dir();
  for (const std::string arch :
       {"resnet18", "convnext_tiny", "efficientnet_b0", "efficientnet_v2_s", "mobilenet_v3_small",
        "regnet_y_800mf", "swin_t", "vit_b_16"}) {
    INFO(arch);
    const auto expected =
        nlohmann::json::parse(ltfit::testing::read_file(dir / (arch + ".train.json")));
    ltfit::Classifier model = without_stochastic_depth(arch);
    const std::string weights = (dir / (arch + ".pth")).string();
    ltfit::load_pretrained_body(model, ltfit::read_torch_state_dict(weights), weights);
    model->train();
    for (const auto& m : model->modules()) {
      if (m->as<torch::nn::DropoutImpl>() || m->as<ltfit::StochasticDepthImpl>()) m->eval();
    }
    const torch::Tensor x = tensor_from(expected["input"], expected["input_shape"]);
    const torch::Tensor labels = torch::tensor(expected["labels"].get<std::vector<std::int64_t>>());
    const torch::Tensor loss = torch::nn::functional::cross_entropy(model->forward(x), labels);
    loss.backward();
    CHECK(std::abs(loss.item<double>() - expected["loss"].get<double>()) <= 1e-5);
    const ltfit::StateDict grads =
        ltfit::read_torch_state_dict((dir / (arch + ".grads.pth")).string());
    const auto params = model->named_parameters();
    REQUIRE(grads.size() == params.size());
    double worst = 0;
    std::string worst_name;
    for (const auto& [name, want] : grads) {
      INFO(name);
      REQUIRE(params.contains(name));
      const torch::Tensor got = params[name].grad();
      REQUIRE(got.defined());
      REQUIRE(got.sizes() == want.sizes());
      // Relative to the tensor's largest gradient: sums over a batch differ in the last bits.
      const double scale = std::max(want.abs().max().item<double>(), 1e-6);
      const double diff = (got - want).abs().max().item<double>() / scale;
      if (diff > worst) {
        worst = diff;
        worst_name = name;
      }
    }
    INFO("largest relative gradient difference " << worst << " (" << worst_name << ")");
    CHECK(worst <= 1e-3);
  }
}

TEST_CASE("ViT's position embeddings resample as timm's resample_abs_pos_embed", "[parity]") {
  const std::filesystem::path dir = parity_dir();
  const auto path = dir / "vit_b_16.resample.json";
  if (!std::filesystem::exists(path)) {
    WARN("timm not installed: the resampling oracle was not written");
    return;
  }
  const auto expected = nlohmann::json::parse(ltfit::testing::read_file(path));
  const std::string weights = (dir / "vit_b_16.pth").string();
  const ltfit::StateDict state = ltfit::read_torch_state_dict(weights);
  const auto found = std::find_if(state.begin(), state.end(), [](const auto& entry) {
    return entry.first == "encoder.pos_embedding";
  });
  REQUIRE(found != state.end());
  const torch::Tensor& pos = found->second;
  for (const auto& [h, w] : {std::pair<std::int64_t, std::int64_t>{10, 8}, {24, 24}}) {
    const std::string key = std::to_string(h) + "x" + std::to_string(w);
    INFO(key);
    const torch::Tensor got = ltfit::resample_position_embedding(pos, h, w);
    const torch::Tensor want =
        torch::tensor(expected.at(key).get<std::vector<float>>()).reshape(got.sizes());
    const double max_diff = (got - want).abs().max().item<double>();
    INFO("max abs difference " << max_diff);
    CHECK(max_diff <= 1e-6);
  }
}
