// fastai v2's batch augmentation on the device (ltfit/data/batch_augment.h): neutral draws leave
// the batch as it was, a flip mirrors it, the draws follow their distributions and depend only on
// (seed, image), bad shapes are refused; on a GPU the result equals the CPU's. fastai's own
// transforms are the oracle of tests/data/batch_augment_oracle.sh ("[.][batch_augment_oracle]").
#include <torch/torch.h>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "ltfit/data/batch_augment.h"

namespace {

ltfit::BatchAugmentDraw neutral(std::int64_t n) {
  const auto zeros = torch::zeros({n}), ones = torch::ones({n});
  return {zeros, zeros, ones, zeros + 0.5, zeros + 0.5, zeros, zeros, zeros + 0.5, ones};
}

torch::Tensor pictures(std::int64_t n, std::int64_t h, std::int64_t w) {
  torch::manual_seed(1);
  return 0.05 + 0.9 * torch::rand({n, 3, h, w});
}

}  // namespace

TEST_CASE("augment_batch: neutral draws leave the batch, a flip mirrors it", "[data][augment]") {
  const torch::Tensor images = pictures(4, 24, 24);
  const torch::Tensor same = ltfit::augment_batch(images, neutral(4), 24);
  CHECK(same.sizes() == images.sizes());
  CHECK(torch::allclose(same, images, 0, 2e-5));
  ltfit::BatchAugmentDraw flip = neutral(4);
  flip.flip = torch::tensor({1.f, 0.f, 1.f, 0.f});
  const torch::Tensor flipped = ltfit::augment_batch(images, flip, 24);
  CHECK(torch::allclose(flipped[0], images[0].flip({-1}), 0, 2e-5));
  CHECK(torch::allclose(flipped[1], images[1], 0, 2e-5));
  // Brightness alone moves every pixel one way.
  ltfit::BatchAugmentDraw brighter = neutral(4);
  brighter.brightness = torch::full({4}, 0.6f);
  CHECK((ltfit::augment_batch(images, brighter, 24) > images).all().item<bool>());
  // Another output size: [N, 3, size, size].
  CHECK(ltfit::augment_batch(images, neutral(4), 16).sizes() == torch::IntArrayRef({4, 3, 16, 16}));
}

TEST_CASE("draw_batch_augment: fastai's distributions, per (seed, image)", "[data][augment]") {
  ltfit::AugmentConfig config;  // fastai's defaults: flip, 10°, zoom 1.1, lighting 0.2, warp 0.2
  const std::int64_t n = 4000;
  const ltfit::BatchAugmentDraw d = ltfit::draw_batch_augment(config, n, 5);
  CHECK(d.flip.mean().item<double>() == Approx(0.5).margin(0.03));
  CHECK((d.rotate != 0).to(torch::kFloat).mean().item<double>() == Approx(0.75).margin(0.03));
  CHECK((d.warp_x != 0).to(torch::kFloat).mean().item<double>() == Approx(0.75).margin(0.03));
  CHECK((d.zoom != 1).to(torch::kFloat).mean().item<double>() == Approx(0.75).margin(0.03));
  CHECK((d.brightness != 0.5).to(torch::kFloat).mean().item<double>() == Approx(0.75).margin(0.03));
  CHECK(d.rotate.abs().max().item<double>() <= 10);
  CHECK(d.warp_y.abs().max().item<double>() <= 0.2);
  CHECK(d.zoom.min().item<double>() >= 1);
  CHECK(d.zoom.max().item<double>() <= 1.1);
  CHECK(d.brightness.min().item<double>() >= 0.4);
  CHECK(d.brightness.max().item<double>() <= 0.6);
  CHECK(d.contrast.min().item<double>() >= 0.8 - 1e-6);
  CHECK(d.contrast.max().item<double>() <= 1.25 + 1e-6);
  // Image i's draws depend on (seed, i) only: a smaller batch is a prefix.
  const ltfit::BatchAugmentDraw few = ltfit::draw_batch_augment(config, 10, 5);
  CHECK(torch::equal(few.rotate, d.rotate.slice(0, 0, 10)));
  CHECK_FALSE(torch::equal(ltfit::draw_batch_augment(config, 10, 6).rotate, few.rotate));
  // Turned off in the config: neutral.
  ltfit::AugmentConfig off = config;
  off.flip = false;
  off.max_warp = 0;
  off.max_lighting = 0;
  const ltfit::BatchAugmentDraw none = ltfit::draw_batch_augment(off, 100, 5);
  CHECK(none.flip.sum().item<double>() == 0);
  CHECK(none.warp_x.abs().sum().item<double>() == 0);
  CHECK((none.brightness == 0.5).all().item<bool>());
  CHECK((none.contrast == 1).all().item<bool>());
}

TEST_CASE("augment_batch: wrong shapes are refused", "[data][augment]") {
  const torch::Tensor images = pictures(2, 8, 8);
  CHECK_THROWS_AS(ltfit::augment_batch(images, neutral(3), 8), std::invalid_argument);
  CHECK_THROWS_AS(ltfit::augment_batch(images[0], neutral(2), 8), std::invalid_argument);
  CHECK_THROWS_AS(ltfit::augment_batch(images.to(torch::kUInt8), neutral(2), 8),
                  std::invalid_argument);
  CHECK_THROWS_AS(ltfit::augment_batch(images, neutral(2), 0), std::invalid_argument);
}

TEST_CASE("augment_batch on the GPU equals the CPU", "[cuda][augment]") {
  if (!torch::cuda::is_available()) {
    WARN("SKIPPED: no CUDA device");
    return;
  }
  const torch::Tensor images = pictures(8, 64, 56);
  const ltfit::BatchAugmentDraw d = ltfit::draw_batch_augment(ltfit::AugmentConfig{}, 8, 3);
  const torch::Tensor cpu = ltfit::augment_batch(images, d, 48);
  const torch::Tensor gpu = ltfit::augment_batch(images.cuda(), d, 48);
  CHECK(gpu.device().is_cuda());
  CHECK(torch::allclose(gpu.cpu(), cpu, 0, 1e-4));
}

// The C++ half of tests/data/batch_augment_oracle.sh: augments the problems the script wrote
// (LTFIT_BATCH_AUGMENT_ORACLE_DIR/problem.json) and writes ltfit.json.
TEST_CASE("batch augmentation on fastai's problems", "[.][batch_augment_oracle]") {
  const char* dir = std::getenv("LTFIT_BATCH_AUGMENT_ORACLE_DIR");
  REQUIRE(dir != nullptr);
  std::ifstream in(std::string(dir) + "/problem.json");
  const nlohmann::json problems = nlohmann::json::parse(in)["problems"];
  nlohmann::json out = nlohmann::json::array();
  const auto tensor = [](const nlohmann::json& values) {
    return torch::tensor(values.get<std::vector<float>>(), torch::kFloat32);
  };
  for (const auto& p : problems) {
    const auto shape = p["shape"].get<std::vector<std::int64_t>>();
    const torch::Tensor images = tensor(p["images"]).view(shape);
    const auto& d = p["draws"];
    const ltfit::BatchAugmentDraw draw{
        tensor(d["flip"]),     tensor(d["rotate"]),     tensor(d["zoom"]),
        tensor(d["zoom_col"]), tensor(d["zoom_row"]),   tensor(d["warp_x"]),
        tensor(d["warp_y"]),   tensor(d["brightness"]), tensor(d["contrast"])};
    const torch::Tensor result = ltfit::augment_batch(images, draw, p["size"].get<int>());
    const torch::Tensor flat = result.contiguous().view({-1});
    out.push_back({{"name", p["name"]},
                   {"shape", result.sizes().vec()},
                   {"values", std::vector<float>(flat.data_ptr<float>(),
                                                 flat.data_ptr<float>() + flat.numel())}});
  }
  std::ofstream(std::string(dir) + "/ltfit.json") << out.dump();
}
