// Parity with torchvision: the same weight file and input give the same logits (fp32, max abs
// difference <= 1e-4), for every registered arch; each arch's eval transform and normalisation
// are those torchvision publishes with its weight file; load_eval_image gives the bytes
// torchvision's Resize + CenterCrop give through Pillow; and `ltfit predict --weights F --arch A`
// gives the logits of torchvision's own inference recipe (weights.transforms() on a PIL image). Needs the files written by
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
#include "ltfit/model/pretrained.h"
#include "ltfit/model/torch_weights.h"
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

}  // namespace

TEST_CASE("every registered arch's logits equal torchvision's on the same weights", "[parity]") {
  const std::filesystem::path dir = parity_dir();
  for (const ltfit::ArchInfo& info : ltfit::arch_registry()) {
    const std::string& arch = info.name;
    INFO(arch);
    const auto path = dir / (arch + ".pth");
    REQUIRE(std::filesystem::exists(path));  // make_parity.py's ARCHS must list every arch
    const auto expected = nlohmann::json::parse(ltfit::testing::read_file(dir / (arch + ".json")));
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

TEST_CASE("every registered arch: torchvision's eval transform, normalisation and predictions", "[parity]") {
  const std::filesystem::path dir = parity_dir();
  for (const ltfit::ArchInfo& info : ltfit::arch_registry()) {
    INFO(info.name << " (" << info.weights_file << ")");
    const auto expected =
        nlohmann::json::parse(ltfit::testing::read_file(dir / (info.name + ".json")));
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
    const int max_diff =
        (got->to(torch::kInt) - expected.to(torch::kInt)).abs().max().item<int>();
    CHECK(max_diff == 0);
  }
}
