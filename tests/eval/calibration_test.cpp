// Calibration (eval/calibration.h): ECE on hand-computed cases and on Guo's bin edges, NLL,
// temperature scaling that finds the factor an over- or under-confident set was scaled by, the
// evaluator's temperature, eval.temperature in the config, and the thresholds calibrate moves.
// "[.][calibration_oracle]" (hidden; run by tests/eval/calibration_oracle.sh, skipped visibly
// without Python torch) fits the cases tests/eval/calibration_oracle.py wrote and writes ltfit's
// temperatures, NLLs and ECEs back for it to compare with a PyTorch LBFGS fit and Guo's ECE.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "ltfit/config/config_loader.h"
#include "ltfit/eval/calibration.h"
#include "ltfit/eval/evaluator.h"
#include "ltfit/jobs/calibrate_job.h"
#include "ltfit/util/error.h"

using ltfit::calibration_table;
using ltfit::fit_temperature;
using ltfit::mean_nll;

namespace {

// Single-label probabilities [N,2] whose top-class confidences are `top`, the top class 0 when
// the matching `correct` is true and the label 0 always.
std::pair<torch::Tensor, torch::Tensor> two_class_set(const std::vector<float>& top,
                                                      const std::vector<bool>& correct) {
  torch::Tensor probs = torch::empty({static_cast<std::int64_t>(top.size()), 2});
  for (std::size_t i = 0; i < top.size(); ++i) {
    const auto r = static_cast<std::int64_t>(i);
    probs[r][correct[i] ? 0 : 1] = top[i];
    probs[r][correct[i] ? 1 : 0] = 1.0F - top[i];
  }
  return {probs, torch::zeros({probs.size(0)}, torch::kInt64)};
}

// A well-calibrated set: logits ~ N(0, 2^2), each label drawn from softmax(logits) (or, multi-
// label, each class present with probability sigmoid(logit)), seeded.
std::pair<torch::Tensor, torch::Tensor> calibrated_set(std::int64_t n, std::int64_t classes,
                                                       bool multi_label, std::uint64_t seed) {
  at::Generator g = at::make_generator<at::CPUGeneratorImpl>(seed);
  const torch::Tensor logits = torch::randn({n, classes}, g, torch::kFloat64) * 2.0;
  if (multi_label) {
    return {logits, torch::bernoulli(torch::sigmoid(logits), g)};
  }
  return {logits, torch::multinomial(torch::softmax(logits, 1), 1, true, g).squeeze(1)};
}

}  // namespace

TEST_CASE("ECE of a hand-computed single-label set", "[calibration]") {
  // Bins (k/15, (k+1)/15]: 0.90, 0.91, 0.92 in bin 13; 0.85 in bin 12; 0.62 in bin 9; 0.70 in 10.
  const auto [probs, targets] = two_class_set({0.90F, 0.91F, 0.92F, 0.85F, 0.62F, 0.70F},
                                              {true, true, false, false, true, false});
  const ltfit::CalibrationTable t = calibration_table(probs, targets, false);
  REQUIRE(t.bins.size() == 15);
  CHECK(t.predictions == 6);
  CHECK(t.bins[13].count == 3);
  CHECK(t.bins[13].confidence == Approx(0.91).margin(1e-6));
  CHECK(t.bins[13].accuracy == Approx(2.0 / 3.0));
  CHECK(t.bins[12].count == 1);
  CHECK(t.bins[9].count == 1);
  CHECK(t.bins[10].count == 1);
  CHECK(t.bins[0].count == 0);
  CHECK(t.bins[13].lower == Approx(13.0 / 15));
  CHECK(t.bins[13].upper == Approx(14.0 / 15));
  // sum over bins of |accuracy - confidence| * n_b / N.
  const double expected = (3 * std::abs(2.0 / 3.0 - 0.91) + std::abs(0.0 - 0.85) +
                           std::abs(1.0 - 0.62) + std::abs(0.0 - 0.70)) /
                          6.0;
  CHECK(t.ece == Approx(expected).margin(1e-6));
  // Perfectly right and sure: ECE 0; always wrong and sure: ECE 1.
  const auto [sure, sure_targets] = two_class_set({1.0F, 1.0F}, {true, true});
  CHECK(calibration_table(sure, sure_targets, false).ece == Approx(0.0).margin(1e-12));
  const auto [wrong, wrong_targets] = two_class_set({1.0F, 1.0F}, {false, false});
  CHECK(calibration_table(wrong, wrong_targets, false).ece == Approx(1.0));
  CHECK(calibration_table(torch::empty({0, 2}), torch::empty({0}, torch::kInt64), false).ece ==
        0.0);
}

TEST_CASE("a confidence on a bin edge goes to the bin below it, as in Guo's code",
          "[calibration]") {
  // Guo's edges are float32 torch.linspace(0, 1, 16); bin k is (edge[k], edge[k+1]].
  const torch::Tensor edges = torch::linspace(0.0, 1.0, 16, torch::kFloat32);
  const float e1 = edges[1].item<float>(), e8 = edges[8].item<float>();
  const float above_e1 = std::nextafter(e1, 1.0F);
  // Multi-label: each probability is a prediction of its own; 0 joins bin 0.
  const torch::Tensor probs = torch::tensor({{e1, above_e1, 1.0F, 0.0F, e8}});
  const torch::Tensor targets = torch::tensor({{1.0F, 0.0F, 1.0F, 0.0F, 1.0F}});
  const ltfit::CalibrationTable t = calibration_table(probs, targets, true);
  CHECK(t.predictions == 5);
  CHECK(t.bins[0].count == 2);               // 1/15 itself and 0
  CHECK(t.bins[1].count == 1);               // just above 1/15
  CHECK(t.bins[7].count == 1);               // 8/15
  CHECK(t.bins[14].count == 1);              // 1.0
  CHECK(t.bins[0].accuracy == Approx(0.5));  // one of the two labels present
  CHECK(t.bins[14].accuracy == 1.0);
  CHECK(t.bins[0].confidence == Approx(e1 / 2.0));
  const double expected = (2 * std::abs(0.5 - e1 / 2.0) + std::abs(0.0 - above_e1) +
                           std::abs(1.0 - e8) + std::abs(1.0 - 1.0)) /
                          5.0;
  CHECK(t.ece == Approx(expected).margin(1e-7));
}

TEST_CASE("NLL is the mean cross-entropy, or BCE, of the logits over the temperature",
          "[calibration]") {
  const torch::Tensor logits =
      torch::tensor({2.0, 0.5, -1.0, 0.1, 0.2, 3.0}, torch::kFloat64).view({2, 3});
  const torch::Tensor labels = torch::tensor({0, 1}, torch::kInt64);
  for (const double t : {1.0, 2.5, 0.4}) {
    const torch::Tensor p = torch::softmax(logits / t, 1);
    const double manual =
        -(std::log(p[0][0].item<double>()) + std::log(p[1][1].item<double>())) / 2;
    CHECK(mean_nll(logits, labels, t, false) == Approx(manual).epsilon(1e-12));
  }
  const torch::Tensor multi =
      torch::tensor({1.0, 0.0, 1.0, 0.0, 0.0, 1.0}, torch::kFloat64).view({2, 3});
  const torch::Tensor q = torch::sigmoid(logits / 2.0);
  const double bce = -(multi * q.log() + (1 - multi) * (1 - q).log()).mean().item<double>();
  CHECK(mean_nll(logits, multi, 2.0, true) == Approx(bce).epsilon(1e-12));
}

TEST_CASE("temperature scaling finds the factor an over- or under-confident set was scaled by",
          "[calibration]") {
  for (const std::int64_t classes : {2, 10}) {
    const auto [logits, labels] = calibrated_set(6000, classes, false, 7 + classes);
    CHECK(fit_temperature(logits, labels, false) == Approx(1.0).margin(0.08));
    for (const double factor : {3.0, 0.5}) {
      INFO(classes << " classes, logits x " << factor);
      const torch::Tensor scaled = logits * factor;
      const double t = fit_temperature(scaled, labels, false);
      CHECK(t == Approx(factor).epsilon(0.08));
      CHECK(mean_nll(scaled, labels, t, false) < mean_nll(scaled, labels, 1.0, false));
      const torch::Tensor before = torch::softmax(scaled, 1), after = torch::softmax(scaled / t, 1);
      CHECK(calibration_table(after, labels, false).ece <
            calibration_table(before, labels, false).ece);
      // The minimum: a step either way raises the NLL.
      const double at = mean_nll(scaled, labels, t, false);
      CHECK(at <= mean_nll(scaled, labels, t * 1.01, false));
      CHECK(at <= mean_nll(scaled, labels, t / 1.01, false));
    }
  }
}

TEST_CASE("multi-label temperature scaling fits the sigmoids' BCE", "[calibration]") {
  const auto [logits, targets] = calibrated_set(800, 6, true, 3);
  const torch::Tensor scaled = logits * 2.5;
  const double t = fit_temperature(scaled, targets, true);
  CHECK(t == Approx(2.5).epsilon(0.08));
  CHECK(mean_nll(scaled, targets, t, true) < mean_nll(scaled, targets, 1.0, true));
  CHECK(calibration_table(torch::sigmoid(scaled / t), targets, true).ece <
        calibration_table(torch::sigmoid(scaled), targets, true).ece);
}

TEST_CASE("temperature scaling refuses empty or non-finite logits and bounds its result",
          "[calibration]") {
  const torch::Tensor labels = torch::tensor({1, 1}, torch::kInt64);
  CHECK_THROWS_AS(fit_temperature(torch::empty({0, 2}), torch::empty({0}, torch::kInt64), false),
                  ltfit::RuntimeError);
  const double inf = std::numeric_limits<double>::infinity();
  CHECK_THROWS_AS(fit_temperature(torch::tensor({{1.0, inf}, {0.0, 1.0}}), labels, false),
                  ltfit::RuntimeError);
  // Logits that always favour the wrong class: the NLL falls all the way to T -> infinity.
  const torch::Tensor wrong = torch::tensor({{1.0, 0.0}, {2.0, 0.0}});
  CHECK(fit_temperature(wrong, labels, false) == Approx(ltfit::kMaxTemperature));
}

TEST_CASE("the evaluator divides the logits by EvalOptions::temperature", "[calibration]") {
  const torch::Tensor logits = torch::tensor({{2.0F, -1.0F}, {0.5F, 1.5F}});
  const torch::Tensor labels = torch::tensor({0, 0}, torch::kInt64);
  ltfit::EvalOptions options;
  options.temperature = 2.0;
  CHECK(
      torch::allclose(ltfit::output_probabilities(logits, options), torch::softmax(logits / 2, 1)));
  CHECK(ltfit::batch_loss_sum(logits, labels, options) / 2 ==
        Approx(mean_nll(logits, labels, 2.0, false)).epsilon(1e-6));
  options.thresholds = {0.5, 0.5};
  CHECK(torch::allclose(ltfit::output_probabilities(logits, options), torch::sigmoid(logits / 2)));
  options.temperature = 0.0;
  CHECK_THROWS(ltfit::output_probabilities(logits, options));
}

TEST_CASE("eval.temperature: 1 by default, finite and above 0, written back exactly",
          "[calibration][config]") {
  CHECK(ltfit::load_config_from_string("", "t.yaml").eval.temperature == 1.0);
  const ltfit::Config c =
      ltfit::load_config_from_string("eval: {temperature: 2.3456789012345}", "t.yaml");
  CHECK(c.eval.temperature == 2.3456789012345);
  CHECK(ltfit::load_config_from_string(ltfit::to_yaml(c), "again").eval.temperature ==
        c.eval.temperature);
  // 0 and below break the rule; YAML's .inf and .nan are not read as numbers at all.
  for (const std::string bad : {"0", "-1", ".inf", ".nan"}) {
    INFO(bad);
    try {
      ltfit::load_config_from_string("eval: {temperature: " + bad + "}", "t.yaml");
      FAIL("accepted");
    } catch (const ltfit::ConfigError& e) {
      CHECK_THAT(std::string(e.what()),
                 Catch::Matchers::Contains(bad[0] == '.' ? "eval.temperature: expected a number"
                                                         : "eval.temperature: expected a finite "
                                                           "number > 0, got " +
                                                               bad));
    }
  }
}

TEST_CASE("calibrate moves multi-label thresholds to the same logits", "[calibration]") {
  using ltfit::move_threshold;
  CHECK(move_threshold(0.5, 1.0, 3.0) == 0.5);
  CHECK(move_threshold(0.0, 1.0, 3.0) == 0.0);
  CHECK(move_threshold(1.0, 1.0, 3.0) == 1.0);
  CHECK(move_threshold(0.3, 2.0, 2.0) == Approx(0.3));
  // A logit above the old threshold at the old temperature stays above the moved one.
  const double t = 0.3, moved = move_threshold(t, 1.0, 2.5);
  for (const double z : {-1.0, -0.86, -0.84, 0.0, 2.0}) {
    const double old_p = 1 / (1 + std::exp(-z)), new_p = 1 / (1 + std::exp(-z / 2.5));
    CHECK((old_p > t) == (new_p > moved));
  }
}

// Run by tests/eval/calibration_oracle.sh: fits every case of
// $LTFIT_CALIBRATION_ORACLE_DIR/cases.json ({fits: [{multi_label, rows, classes, logits,
// targets}], eces: [{multi_label, rows, classes, probs, targets}]}) and writes ltfit's figures to
// ltfit.json for tests/eval/calibration_oracle.py to compare.
TEST_CASE("calibration oracle: ltfit's temperatures and ECEs for PyTorch to check",
          "[.][calibration_oracle]") {
  const char* dir = std::getenv("LTFIT_CALIBRATION_ORACLE_DIR");
  if (dir == nullptr) FAIL("LTFIT_CALIBRATION_ORACLE_DIR is not set: run calibration_oracle.sh");
  const std::filesystem::path base(dir);
  std::ifstream in(base / "cases.json");
  const auto cases = nlohmann::json::parse(in);
  const auto tensor_of = [](const nlohmann::json& c, const char* key, torch::Dtype dtype) {
    const auto values = c.at(key).get<std::vector<double>>();
    return torch::tensor(values, torch::kFloat64)
        .reshape({c.at("rows").get<std::int64_t>(), -1})
        .to(dtype);
  };
  nlohmann::json out = {{"fits", nlohmann::json::array()}, {"eces", nlohmann::json::array()}};
  for (const auto& c : cases.at("fits")) {
    const bool multi = c.at("multi_label").get<bool>();
    const torch::Tensor logits = tensor_of(c, "logits", torch::kFloat32);
    torch::Tensor targets = tensor_of(c, "targets", multi ? torch::kFloat32 : torch::kInt64);
    if (!multi) targets = targets.squeeze(1);
    const double t = fit_temperature(logits, targets, multi);
    ltfit::EvalOptions options;
    if (multi) options.thresholds.assign(static_cast<std::size_t>(logits.size(1)), 0.5);
    options.temperature = t;
    const auto ece_at = [&](double temperature) {
      options.temperature = temperature;
      return calibration_table(ltfit::output_probabilities(logits, options), targets, multi).ece;
    };
    out["fits"].push_back({{"temperature", t},
                           {"nll_before", mean_nll(logits, targets, 1.0, multi)},
                           {"nll_after", mean_nll(logits, targets, t, multi)},
                           {"ece_before", ece_at(1.0)},
                           {"ece_after", ece_at(t)}});
  }
  for (const auto& c : cases.at("eces")) {
    const bool multi = c.at("multi_label").get<bool>();
    torch::Tensor targets = tensor_of(c, "targets", multi ? torch::kFloat32 : torch::kInt64);
    if (!multi) targets = targets.squeeze(1);
    const ltfit::CalibrationTable table =
        calibration_table(tensor_of(c, "probs", torch::kFloat32), targets, multi);
    nlohmann::json counts = nlohmann::json::array();
    for (const auto& b : table.bins) counts.push_back(b.count);
    out["eces"].push_back({{"ece", table.ece}, {"counts", counts}});
  }
  std::ofstream(base / "ltfit.json") << out.dump(1);
  CHECK(out["fits"].size() == cases.at("fits").size());
}
