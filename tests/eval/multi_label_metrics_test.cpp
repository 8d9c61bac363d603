// Multi-label figures (multi_label_metrics.h) on hand-checked cases, and tuned thresholds against
// a brute-force search. "[.multi_label_oracle]" (hidden; run by tests/eval/multi_label_oracle.sh,
// skipped visibly without fastai, scikit-learn and torch) scores the cases
// tests/eval/multi_label_oracle.py wrote and writes ltfit's figures back for it to compare with
// fastai's accuracy_multi / F1ScoreMulti / FBetaMulti and scikit-learn's own functions.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>

#include <torch/torch.h>

#include "ltfit/eval/multi_label_metrics.h"
#include "ltfit/train/trainer.h"
#include "ltfit/util/error.h"

using ltfit::FbetaAverage;
using ltfit::MultiLabelScores;

namespace {

MultiLabelScores scores(std::int64_t rows, std::int64_t classes, std::vector<float> probs,
                        std::vector<std::uint8_t> targets) {
  return {rows, classes, std::move(probs), std::move(targets)};
}

// F1 of class c when predicting p > t (`above`) or p >= t, counted here independently.
double class_f1(const MultiLabelScores& s, std::int64_t c, double t, bool above) {
  double tp = 0, truth = 0, pred = 0;
  for (std::int64_t r = 0; r < s.rows; ++r) {
    const float p = s.probs[static_cast<std::size_t>(r * s.classes + c)];
    const bool y = s.targets[static_cast<std::size_t>(r * s.classes + c)] != 0;
    const bool d = above ? p > static_cast<float>(t) : p >= static_cast<float>(t);
    tp += (y && d) ? 1 : 0;
    truth += y ? 1 : 0;
    pred += d ? 1 : 0;
  }
  return truth + pred > 0 ? 2 * tp / (truth + pred) : 0.0;
}

MultiLabelScores random_scores(std::mt19937& rng, std::int64_t rows, std::int64_t classes,
                               float grid) {
  std::uniform_real_distribution<float> uniform(0.0F, 1.0F);
  MultiLabelScores s{rows, classes, {}, {}};
  for (std::int64_t i = 0; i < rows * classes; ++i) {
    const float p = uniform(rng);
    s.probs.push_back(grid > 0 ? std::round(p / grid) * grid : p);
    s.targets.push_back(uniform(rng) < 0.35F ? 1 : 0);
  }
  return s;
}

// The float midway between two probabilities, as tune_thresholds forms it.
double midway(float a, float b) {
  return static_cast<float>((static_cast<double>(a) + static_cast<double>(b)) / 2.0);
}

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) FAIL("cannot read " << path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("predicted: p > threshold, compared in float32 as torch compares with a Python float",
          "[eval][multi_label]") {
  CHECK_FALSE(ltfit::predicted(0.5F, 0.5));
  CHECK(ltfit::predicted(std::nextafter(0.5F, 1.0F), 0.5));
  // float(0.3) = 0.3000000119 is above the double 0.3, but not above the threshold as float.
  CHECK_FALSE(ltfit::predicted(0.3F, 0.3));
  CHECK(ltfit::predicted(std::nextafter(0.3F, 1.0F), 0.3));
}

TEST_CASE("accuracy_multi counts (image, class) pairs decided right, p > threshold",
          "[eval][multi_label]") {
  const auto s = scores(2, 3, {0.9F, 0.5F, 0.2F, 0.1F, 0.7F, 0.6F}, {1, 1, 0, 0, 1, 0});
  // row 0: 1 1 0 vs predicted 1 0 (0.5 is not above 0.5) 0 -> 2 right; row 1: 0 1 0 vs 0 1 1 -> 2
  CHECK(ltfit::accuracy_multi(s, {0.5, 0.5, 0.5}) == 4.0 / 6.0);
  CHECK(ltfit::accuracy_multi(s, {0.5, 0.4, 0.65}) == 1.0);
  CHECK(ltfit::accuracy_multi(scores(0, 3, {}, {}), {0.5, 0.5, 0.5}) == 0.0);
}

TEST_CASE("F-beta decides p >= threshold and averages as scikit-learn, 0/0 is 0",
          "[eval][multi_label]") {
  // row 0 decides {0, 1} (0.5 >= 0.5), row 1 {1, 2}, row 2 nothing and has nothing.
  const auto s = scores(3, 3, {0.9F, 0.5F, 0.2F, 0.1F, 0.7F, 0.6F, 0.0F, 0.1F, 0.2F},
                        {1, 1, 0, 0, 1, 0, 0, 0, 0});
  const std::vector<double> t(3, 0.5);
  // samples: row 0 F1 1; row 1 tp 1, true 1, decided 2 -> 2/3; row 2 0/0 -> 0, still counted
  CHECK(ltfit::fbeta_multi(s, t, 1.0, FbetaAverage::kSamples) == Approx((1.0 + 2.0 / 3.0) / 3.0));
  // classes: 0 -> 1, 1 -> 1, 2 -> tp 0, true 0, decided 1 -> 0
  CHECK(ltfit::fbeta_multi(s, t, 1.0, FbetaAverage::kMacro) == Approx(2.0 / 3.0));
  // all pairs: tp 3, true 3, decided 4
  CHECK(ltfit::fbeta_multi(s, t, 1.0, FbetaAverage::kMicro) == Approx(6.0 / 7.0));
  // weighted by support 1, 2, 0: (1·1 + 2·1) / 3
  CHECK(ltfit::fbeta_multi(s, t, 1.0, FbetaAverage::kWeighted) == Approx(1.0));
  // F2 of row 1: 5·1 / (4·1 + 2) = 5/6
  CHECK(ltfit::fbeta_multi(s, t, 2.0, FbetaAverage::kSamples) == Approx((1.0 + 5.0 / 6.0) / 3.0));
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(ltfit::fbeta_multi(s, t, 0.0, FbetaAverage::kMicro) == Approx(3.0 / 4.0));  // precision
  CHECK(ltfit::fbeta_multi(s, t, inf, FbetaAverage::kMicro) == Approx(1.0));        // recall
  CHECK_THROWS_AS(ltfit::fbeta_multi(s, t, -1.0, FbetaAverage::kMacro), ltfit::RuntimeError);
  // float(0.3) counts as decided at threshold 0.3 (>=), but is not predicted (>)
  const auto edge = scores(1, 1, {0.3F}, {1});
  CHECK(ltfit::fbeta_multi(edge, {0.3}, 1.0, FbetaAverage::kMacro) == 1.0);
  CHECK(ltfit::accuracy_multi(edge, {0.3}) == 0.0);
}

TEST_CASE("weighted F-beta without any positive is the unweighted mean, as scikit-learn",
          "[eval][multi_label]") {
  const auto s = scores(2, 2, {0.9F, 0.1F, 0.2F, 0.3F}, {0, 0, 0, 0});
  CHECK(ltfit::fbeta_multi(s, {0.5, 0.5}, 1.0, FbetaAverage::kWeighted) == 0.0);
  CHECK(ltfit::fbeta_multi(s, {0.5, 0.5}, 1.0, FbetaAverage::kSamples) == 0.0);
}

TEST_CASE("average precision steps once per tied score, 0 without a positive",
          "[eval][multi_label]") {
  // scores 0.8 (pos), 0.5 (neg), 0.5 (pos), 0.1 (pos): steps at 0.8 (R 1/3, P 1), 0.5 (R 2/3,
  // P 2/3), 0.1 (R 1, P 3/4).
  const auto s = scores(4, 1, {0.8F, 0.5F, 0.5F, 0.1F}, {1, 0, 1, 1});
  CHECK(ltfit::average_precision(s, 0) == Approx(1.0 / 3 + 1.0 / 3 * 2.0 / 3 + 1.0 / 3 * 0.75));
  // the same with the tie broken the other way would score higher: ties are one step
  const auto untied = scores(4, 1, {0.8F, 0.5F, 0.6F, 0.1F}, {1, 0, 1, 1});
  CHECK(ltfit::average_precision(untied, 0) > ltfit::average_precision(s, 0));
  CHECK(ltfit::average_precision(scores(3, 1, {0.9F, 0.2F, 0.5F}, {0, 0, 0}), 0) == 0.0);
  CHECK(ltfit::average_precision(scores(2, 1, {0.9F, 0.2F}, {1, 1}), 0) == 1.0);
  CHECK_THROWS_AS(ltfit::average_precision(s, 1), ltfit::RuntimeError);
  const auto nan = scores(1, 1, {std::numeric_limits<float>::quiet_NaN()}, {1});
  CHECK_THROWS_AS(ltfit::average_precision(nan, 0), ltfit::RuntimeError);
}

TEST_CASE("the report: per-class figures, mAP over the classes with a positive",
          "[eval][multi_label]") {
  const auto s = scores(3, 3, {0.9F, 0.5F, 0.2F, 0.1F, 0.7F, 0.6F, 0.0F, 0.1F, 0.2F},
                        {1, 1, 0, 0, 1, 0, 0, 0, 0});
  const std::vector<double> t{0.5, 0.5, 0.4};
  const ltfit::MultiLabelReport r = ltfit::multi_label_report(s, t);
  REQUIRE(r.per_class.size() == 3);
  CHECK(r.accuracy_multi == ltfit::accuracy_multi(s, t));
  CHECK(r.f1_samples == ltfit::fbeta_multi(s, t, 1.0, FbetaAverage::kSamples));
  CHECK(r.f1_macro == ltfit::fbeta_multi(s, t, 1.0, FbetaAverage::kMacro));
  CHECK(r.per_class[1].precision == 1.0);
  CHECK(r.per_class[1].recall == 1.0);
  CHECK(r.per_class[1].support == 2);
  CHECK(r.per_class[2].precision == 0.0);  // decided once (0.6), never true
  CHECK(r.per_class[2].recall == 0.0);     // 0/0
  CHECK(r.per_class[2].support == 0);
  CHECK(r.per_class[2].threshold == 0.4);
  CHECK(r.per_class[2].average_precision == 0.0);
  CHECK(r.mean_average_precision ==
        Approx((r.per_class[0].average_precision + r.per_class[1].average_precision) / 2));
  CHECK(
      ltfit::multi_label_report(scores(2, 1, {0.9F, 0.1F}, {0, 0}), {0.5}).mean_average_precision ==
      0.0);
}

TEST_CASE("shape mismatches throw RuntimeError", "[eval][multi_label]") {
  const auto s = scores(2, 2, {0.1F, 0.2F, 0.3F, 0.4F}, {1, 0, 1, 0});
  CHECK_THROWS_AS(ltfit::accuracy_multi(s, {0.5}), ltfit::RuntimeError);
  CHECK_THROWS_AS(ltfit::fbeta_multi(s, {0.5, 0.5, 0.5}, 1.0, FbetaAverage::kMacro),
                  ltfit::RuntimeError);
  CHECK_THROWS_AS(ltfit::multi_label_report(s, {}), ltfit::RuntimeError);
  const auto short_targets = scores(2, 2, {0.1F, 0.2F, 0.3F, 0.4F}, {1, 0, 1});
  CHECK_THROWS_AS(ltfit::accuracy_multi(short_targets, {0.5, 0.5}), ltfit::RuntimeError);
  CHECK_THROWS_AS(ltfit::tune_thresholds(short_targets), ltfit::RuntimeError);
  CHECK_THROWS_AS(ltfit::average_precision(short_targets, 0), ltfit::RuntimeError);
}

TEST_CASE("tuned thresholds reach the best F1 any threshold gives, with > and >= alike",
          "[eval][multi_label]") {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const auto s = random_scores(rng, 1 + trial % 40, 1 + trial % 5, trial % 3 == 0 ? 0.1F : 0.0F);
    const std::vector<double> tuned = ltfit::tune_thresholds(s, 0.5);
    REQUIRE(tuned.size() == static_cast<std::size_t>(s.classes));
    CHECK(ltfit::tune_thresholds(s, 0.5) == tuned);  // deterministic
    for (std::int64_t c = 0; c < s.classes; ++c) {
      double best = 0.0;  // every label set a threshold gives: p >= each probability of c
      for (std::int64_t r = 0; r < s.rows; ++r) {
        best = std::max(best, class_f1(s, c, s.probs[static_cast<std::size_t>(r * s.classes + c)],
                                       /*above=*/false));
      }
      const double got = class_f1(s, c, tuned[static_cast<std::size_t>(c)], /*above=*/true);
      CHECK(got == best);
      CHECK(class_f1(s, c, tuned[static_cast<std::size_t>(c)], /*above=*/false) == got);
      if (best == 0.0) CHECK(tuned[static_cast<std::size_t>(c)] == 0.5);  // no positive
    }
  }
}

TEST_CASE("tuned thresholds: midpoints, ties nearest the fallback, edge floats",
          "[eval][multi_label]") {
  // class 0: 0.3, 0.2, 0.25 positive, 0.05 negative -> any t in [0.05, 0.2) gives F1 1;
  // class 1 has no positive and keeps the fallback.
  const auto s =
      scores(4, 2, {0.3F, 0.9F, 0.2F, 0.8F, 0.25F, 0.7F, 0.05F, 0.6F}, {1, 0, 1, 0, 1, 0, 0, 0});
  const std::vector<double> t = ltfit::tune_thresholds(s, 0.5);
  CHECK(t[0] == midway(0.05F, 0.2F));
  CHECK(t[1] == 0.5);
  CHECK(ltfit::tune_thresholds(s, 0.7)[1] == 0.7);
  // F1 2/3 both with {0.8} (t midway to 0.5) and with {0.8, 0.5, 0.4, 0.3} (t midway to 0): the
  // nearer the fallback wins, whichever side it lies on.
  const auto tie = scores(5, 1, {0.8F, 0.5F, 0.4F, 0.3F, 0.0F}, {1, 0, 0, 1, 0});
  CHECK(ltfit::tune_thresholds(tie, 0.5)[0] == midway(0.5F, 0.8F));
  CHECK(ltfit::tune_thresholds(tie, 0.3)[0] == midway(0.0F, 0.3F));
  // F1 2/3 at 0.75 ({1.0}) and at 0.25 ({1.0, 0.5 x3}), both 0.25 from 0.5: the lower wins.
  const auto even = scores(5, 1, {1.0F, 0.5F, 0.5F, 0.5F, 0.0F}, {1, 1, 0, 0, 0});
  CHECK(ltfit::tune_thresholds(even, 0.5)[0] == 0.25);
  // every image predicted: half the smallest probability, or below 0 when that is 0
  CHECK(ltfit::tune_thresholds(scores(2, 1, {0.4F, 0.2F}, {1, 1}))[0] == static_cast<double>(0.1F));
  const double under_zero = ltfit::tune_thresholds(scores(2, 1, {0.4F, 0.0F}, {1, 1}))[0];
  CHECK(under_zero < 0.0);
  CHECK(ltfit::predicted(0.0F, under_zero));
  // neighbouring floats: no float between, the lower one itself (p > it takes the upper only)
  const float upper = std::nextafter(0.5F, 1.0F);
  const double t_adj = ltfit::tune_thresholds(scores(2, 1, {upper, 0.5F}, {1, 0}))[0];
  CHECK(t_adj == 0.5);
  CHECK(ltfit::predicted(upper, t_adj));
}

TEST_CASE("balanced pos_weight is negatives over positives", "[eval][multi_label]") {
  // torch's docs: 100 positives and 300 negatives want pos_weight 3.
  CHECK(ltfit::balanced_pos_weight({100}, 400) == std::vector<double>{3.0});
  // no positive: 1; every image positive: 1 too (the ratio 0 would drop the positives)
  CHECK(ltfit::balanced_pos_weight({2, 5, 0, 10}, 10) == std::vector<double>{4.0, 1.0, 1.0, 1.0});
  CHECK_THROWS_AS(ltfit::balanced_pos_weight({11}, 10), ltfit::RuntimeError);
  CHECK_THROWS_AS(ltfit::balanced_pos_weight({-1}, 10), ltfit::RuntimeError);
}

// The training loss on logit(p) with label smoothing 0.1 and balanced pos_weight, for the oracle
// to compare with fastai's BCEWithLogitsLossFlat(pos_weight, flatten=False) on the same inputs.
double training_loss(const MultiLabelScores& s) {
  if (s.rows == 0) return 0.0;
  const torch::Tensor p =
      torch::tensor(s.probs, torch::kFloat32).view({s.rows, s.classes}).clamp(1e-6, 1 - 1e-6);
  const torch::Tensor y = torch::tensor(std::vector<float>(s.targets.begin(), s.targets.end()))
                              .view({s.rows, s.classes});
  std::vector<std::int64_t> positives(static_cast<std::size_t>(s.classes), 0);
  for (std::int64_t r = 0; r < s.rows; ++r) {
    for (std::int64_t c = 0; c < s.classes; ++c) positives[c] += s.targets[r * s.classes + c];
  }
  const std::vector<double> w = ltfit::balanced_pos_weight(positives, s.rows);
  const torch::Tensor pos_weight = torch::tensor(w, torch::kFloat32);
  return ltfit::multi_label_loss(torch::logit(p), y, 0.1, pos_weight).item<double>();
}

// Run by tests/eval/multi_label_oracle.sh: scores every case of
// $LTFIT_MULTI_LABEL_ORACLE_DIR/cases.json ([{rows, classes, probs, targets, thresholds}]) and
// writes ltfit's figures to ltfit.json for tests/eval/multi_label_oracle.py to compare.
TEST_CASE("multi-label oracle: ltfit's figures for fastai and scikit-learn to check",
          "[.multi_label_oracle]") {
  const char* dir = std::getenv("LTFIT_MULTI_LABEL_ORACLE_DIR");
  if (dir == nullptr) {
    FAIL("LTFIT_MULTI_LABEL_ORACLE_DIR is not set: run tests/eval/multi_label_oracle.sh");
  }
  const std::filesystem::path base(dir);
  const auto cases = nlohmann::json::parse(read_text(base / "cases.json"));
  nlohmann::json results = nlohmann::json::array();
  for (const auto& c : cases) {
    const MultiLabelScores s{c.at("rows").get<std::int64_t>(), c.at("classes").get<std::int64_t>(),
                             c.at("probs").get<std::vector<float>>(),
                             c.at("targets").get<std::vector<std::uint8_t>>()};
    const auto t = c.at("thresholds").get<std::vector<double>>();
    const ltfit::MultiLabelReport r = ltfit::multi_label_report(s, t);
    nlohmann::json out = {{"accuracy_multi", r.accuracy_multi},
                          {"f1_samples", r.f1_samples},
                          {"f1_macro", r.f1_macro},
                          {"map", r.mean_average_precision},
                          {"tuned", ltfit::tune_thresholds(s, 0.5)},
                          {"loss", training_loss(s)}};
    for (const double beta : c.at("betas").get<std::vector<double>>()) {
      out["fbeta"].push_back(
          {{"beta", beta},
           {"samples", ltfit::fbeta_multi(s, t, beta, FbetaAverage::kSamples)},
           {"macro", ltfit::fbeta_multi(s, t, beta, FbetaAverage::kMacro)},
           {"micro", ltfit::fbeta_multi(s, t, beta, FbetaAverage::kMicro)},
           {"weighted", ltfit::fbeta_multi(s, t, beta, FbetaAverage::kWeighted)}});
    }
    for (const auto& k : r.per_class) {
      out["per_class"].push_back({{"precision", k.precision},
                                  {"recall", k.recall},
                                  {"f1", k.f1},
                                  {"ap", k.average_precision},
                                  {"support", k.support},
                                  {"threshold", k.threshold}});
    }
    results.push_back(out);
  }
  std::ofstream(base / "ltfit.json") << results.dump(1);
  CHECK(results.size() == cases.size());
  CHECK(std::filesystem::file_size(base / "ltfit.json") > 0);
}
