// Parity with torchvision: the same weight file and input give the same logits (fp32, max abs
// difference <= 1e-4), for every registered arch. Needs the files written by
// tests/parity/make_parity.py (Python torch + torchvision, test oracles only); run through
// scripts/run_parity.sh, which CTest reports as skipped when torchvision is not installed. Tagged
// [parity]: not in the default test run.
#include <torch/torch.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>

#include "ltfit/model/arch_registry.h"
#include "ltfit/model/pretrained.h"
#include "ltfit/model/torch_weights.h"
#include "support/test_support.h"

namespace {

torch::Tensor tensor_from(const nlohmann::json& values, const nlohmann::json& shape) {
  const auto flat = values.get<std::vector<float>>();
  return torch::tensor(flat).reshape(shape.get<std::vector<std::int64_t>>());
}

}  // namespace

TEST_CASE("every registered arch's logits equal torchvision's on the same weights", "[parity]") {
  const char* dir_env = std::getenv("LTFIT_PARITY_DIR");
  REQUIRE(dir_env != nullptr);  // set by scripts/run_parity.sh
  const std::filesystem::path dir(dir_env);
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
