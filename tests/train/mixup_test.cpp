// MixUp / CutMix (train/mixup.h): timm's Mixup draw for draw. The properties hold for every mode
// here; "[timm_oracle]" (run by tests/train/timm_oracle.sh, skipped visibly without timm) feeds
// ltfit's draws to timm's own code and compares images and targets.
#include "ltfit/train/mixup.h"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "ltfit/util/random.h"
#include "model/archive_builders.h"
#include "support/test_support.h"

namespace {

using ltfit::MixupConfig;
using ltfit::MixupMode;

torch::Tensor sample_images(std::int64_t n, std::int64_t h, std::int64_t w, int seed) {
  torch::manual_seed(seed);
  return torch::randn({n, 3, h, w});
}

MixupConfig mixup(double mix, double cut, MixupMode mode, double prob = 1.0) {
  MixupConfig c;
  c.mixup_alpha = mix;
  c.cutmix_alpha = cut;
  c.mode = mode;
  c.prob = prob;
  return c;
}

}  // namespace

TEST_CASE("beta and gamma draws have the right moments and are the same on every platform",
          "[mixup]") {
  ltfit::SplitMix64 rng(7);
  for (const double alpha : {0.2, 0.4, 1.0, 2.5}) {
    INFO(alpha);
    double sum = 0, squares = 0;
    const int n = 40000;
    for (int i = 0; i < n; ++i) {
      const double v = ltfit::beta_draw(rng, alpha, alpha);
      REQUIRE(v >= 0.0);
      REQUIRE(v <= 1.0);
      sum += v;
      squares += v * v;
    }
    const double mean = sum / n, var = squares / n - mean * mean;
    CHECK(mean == Approx(0.5).margin(0.01));
    CHECK(var == Approx(1.0 / (4.0 * (2.0 * alpha + 1.0))).epsilon(0.05));
    double gamma_sum = 0;
    for (int i = 0; i < n; ++i) gamma_sum += ltfit::gamma_draw(rng, alpha);
    CHECK(gamma_sum / n == Approx(alpha).epsilon(0.05));
  }
  // A tiny shape underflows both gammas: the draw is then 0 or 1, never NaN.
  for (int i = 0; i < 100; ++i) CHECK(std::isfinite(ltfit::beta_draw(rng, 1e-4, 1e-4)));
}

TEST_CASE("MixUp blends each batch with itself reversed and its targets by the same lambda",
          "[mixup]") {
  const torch::Tensor original = sample_images(6, 8, 8, 1);
  const torch::Tensor labels = torch::tensor({0, 1, 2, 0, 1, 2}, torch::kLong);
  torch::Tensor x = original.clone();
  ltfit::MixupRandom random(11);
  const ltfit::MixResult mix = ltfit::mix_images(mixup(0.4, 0, MixupMode::kBatch), x, random);
  REQUIRE_FALSE(mix.per_image);
  REQUIRE(mix.lam > 0.0);
  REQUIRE(mix.lam < 1.0);
  const torch::Tensor expected = original * mix.lam + original.flip(0) * (1.0 - mix.lam);
  CHECK(torch::allclose(x, expected, 1e-5, 1e-6));
  const torch::Tensor t = ltfit::mixup_targets(labels, 3, mix, 0.0);
  CHECK(t[0][0].item<float>() == Approx(mix.lam));
  CHECK(t[0][2].item<float>() == Approx(1.0 - mix.lam));  // image 5 is class 2
  CHECK(torch::allclose(t.sum(1), torch::ones({6})));
  // timm's smoothing folded in equals torch's label_smoothing on the mixed targets: the same
  // loss and the same gradient.
  const double eps = 0.1;
  const torch::Tensor smoothed = ltfit::mixup_targets(labels, 3, mix, eps);
  CHECK(torch::allclose(smoothed, t * (1 - eps) + eps / 3, 1e-6, 1e-7));
  namespace F = torch::nn::functional;
  const torch::Tensor logits = torch::randn({6, 3}, torch::requires_grad());
  const torch::Tensor a =
      F::cross_entropy(logits, t, F::CrossEntropyFuncOptions().label_smoothing(eps));
  const torch::Tensor b = -(smoothed * torch::log_softmax(logits, 1)).sum(1).mean();
  CHECK(a.item<double>() == Approx(b.item<double>()).epsilon(1e-6));
  const torch::Tensor ga = torch::autograd::grad({a}, {logits})[0];
  const torch::Tensor gb = torch::autograd::grad({b}, {logits})[0];
  CHECK(torch::allclose(ga, gb, 1e-5, 1e-7));
}

TEST_CASE("CutMix pastes one box of the reversed batch and corrects lambda to its area",
          "[mixup]") {
  for (const std::uint64_t seed : {1, 2, 3, 4, 5}) {
    INFO(seed);
    const torch::Tensor original = sample_images(4, 10, 7, static_cast<int>(seed));
    torch::Tensor x = original.clone();
    ltfit::MixupRandom random(seed);
    const ltfit::MixResult mix = ltfit::mix_images(mixup(0, 1.0, MixupMode::kBatch), x, random);
    const torch::Tensor from_partner = (x != original).any(1);  // [N,H,W]
    const torch::Tensor same_as_partner = (x == original.flip(0)).all(1);
    // Every changed pixel came from the partner; the kept part is λ (the box may be clipped).
    CHECK(torch::equal(from_partner.logical_and(same_as_partner.logical_not()),
                       torch::zeros_like(from_partner)));
    const double kept = 1.0 - from_partner[0].to(torch::kDouble).mean().item<double>();
    CHECK(kept == Approx(mix.lam).margin(1e-9));
  }
}

TEST_CASE("pair and elem modes mix each pair or image with its own draw", "[mixup]") {
  const torch::Tensor original = sample_images(6, 6, 6, 3);
  for (const MixupMode mode : {MixupMode::kPair, MixupMode::kElem}) {
    torch::Tensor x = original.clone();
    ltfit::MixupRandom random(5);
    std::vector<ltfit::MixupRandom::Draw> draws;
    random.record = &draws;
    const ltfit::MixResult mix = ltfit::mix_images(mixup(0.4, 0, mode), x, random);
    REQUIRE(mix.per_image);
    REQUIRE(mix.lams.size(0) == 6);
    // 'r' and 'b' per entry: 3 for pair, 6 for elem
    CHECK(draws.size() == (mode == MixupMode::kPair ? 6u : 12u));
    for (std::int64_t i = 0; i < 6; ++i) {
      const double l = mix.lams[i].item<float>();
      const torch::Tensor expected = original[i] * l + original[5 - i] * (1.0 - l);
      CHECK(torch::allclose(x[i], expected, 1e-5, 1e-6));
    }
    if (mode == MixupMode::kPair) {
      CHECK(mix.lams[0].item<float>() == mix.lams[5].item<float>());
    }
  }
  // An odd batch: the middle image of pair mode stays as it is.
  torch::Tensor odd = sample_images(5, 6, 6, 4);
  const torch::Tensor before = odd.clone();
  ltfit::MixupRandom random(8);
  const ltfit::MixResult mix = ltfit::mix_images(mixup(1.0, 0, MixupMode::kPair), odd, random);
  CHECK(torch::equal(odd[2], before[2]));
  CHECK(mix.lams[2].item<float>() == 1.0F);
}

TEST_CASE("prob 0 leaves every batch as it is", "[mixup]") {
  for (const MixupMode mode : {MixupMode::kBatch, MixupMode::kPair, MixupMode::kElem}) {
    torch::Tensor x = sample_images(4, 5, 5, 9);
    const torch::Tensor before = x.clone();
    ltfit::MixupRandom random(3);
    const ltfit::MixResult mix = ltfit::mix_images(mixup(1.0, 1.0, mode, 0.0), x, random);
    CHECK(torch::equal(x, before));
    const torch::Tensor t =
        ltfit::mixup_targets(torch::tensor({0, 1, 1, 0}, torch::kLong), 2, mix, 0.0);
    CHECK(torch::equal(t, torch::tensor({1.F, 0.F, 0.F, 1.F, 0.F, 1.F, 1.F, 0.F}).view({4, 2})));
  }
}

namespace {

nlohmann::json tensor_values(const torch::Tensor& t) {
  const torch::Tensor flat = t.contiguous().to(torch::kFloat32).view({-1});
  return std::vector<float>(flat.data_ptr<float>(), flat.data_ptr<float>() + flat.numel());
}

// One case for the oracle: mix a batch with `config`, recording every draw.
nlohmann::json oracle_case(const std::string& name, const MixupConfig& config, std::uint64_t seed,
                           std::int64_t n, std::int64_t h, std::int64_t w) {
  const torch::Tensor original = sample_images(n, h, w, static_cast<int>(seed));
  const torch::Tensor labels = torch::randint(0, 4, {n}, torch::kLong);
  torch::Tensor x = original.clone();
  std::vector<ltfit::MixupRandom::Draw> draws;
  ltfit::MixupRandom random(seed);
  random.record = &draws;
  const ltfit::MixResult mix = ltfit::mix_images(config, x, random);
  const double smoothing = 0.1;
  nlohmann::json drawn = nlohmann::json::array();
  for (const auto& d : draws) drawn.push_back({std::string(1, d.kind), d.value});
  std::vector<std::int64_t> label_values(labels.data_ptr<std::int64_t>(),
                                         labels.data_ptr<std::int64_t>() + n);
  return {{"name", name + " seed " + std::to_string(seed)},
          {"config",
           {{"mixup_alpha", config.mixup_alpha},
            {"cutmix_alpha", config.cutmix_alpha},
            {"cutmix_minmax", config.cutmix_minmax},
            {"prob", config.prob},
            {"switch_prob", config.switch_prob},
            {"mode", ltfit::mixup_mode_name(config.mode)}}},
          {"shape", {n, 3, h, w}},
          {"images", tensor_values(original)},
          {"labels", label_values},
          {"classes", 4},
          {"smoothing", smoothing},
          {"draws", drawn},
          {"mixed", tensor_values(x)},
          {"targets", tensor_values(ltfit::mixup_targets(labels, 4, mix, smoothing))}};
}

}  // namespace

TEST_CASE("timm's own Mixup, given ltfit's draws, makes the same images and targets",
          "[.][timm_oracle]") {
  nlohmann::json cases = nlohmann::json::array();
  for (const MixupMode mode : {MixupMode::kBatch, MixupMode::kPair, MixupMode::kElem}) {
    const std::string m = ltfit::mixup_mode_name(mode);
    MixupConfig minmax = mixup(0, 0, mode);
    minmax.cutmix_minmax = {0.2, 0.8};
    const std::vector<std::pair<std::string, MixupConfig>> configs = {
        {m + " mixup", mixup(0.4, 0, mode)},
        {m + " cutmix", mixup(0, 1.0, mode)},
        {m + " both", mixup(0.8, 1.0, mode, 0.7)},
        {m + " minmax", minmax},
    };
    for (const auto& [name, config] : configs) {
      for (const std::uint64_t seed : {1, 2, 3, 4, 5, 6}) {
        cases.push_back(oracle_case(name, config, seed, 6, 9, 12));
      }
    }
  }
  const auto [status, output] =
      ltfit::testing::run_python_oracle("tests/train/mixup_oracle.py", cases.dump());
  INFO(output);
  CHECK(status == 0);
}
