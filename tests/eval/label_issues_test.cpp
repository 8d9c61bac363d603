// Confident learning's label issues (label_issues.h) on hand-checked cases and a planted
// noisy-label simulation. "[.label_issues_oracle]" (hidden; run by
// tests/eval/label_issues_oracle.sh, skipped visibly without cleanlab) runs the cases
// tests/eval/label_issues_oracle.py wrote and writes ltfit's results back for it to compare
// with cleanlab's own find_label_issues, get_confident_thresholds and compute_confident_joint.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "ltfit/eval/label_issues.h"
#include "ltfit/util/error.h"
#include "support/test_support.h"

namespace {

torch::Tensor issue_probs(const std::vector<std::vector<float>>& rows) {
  const auto k = static_cast<std::int64_t>(rows.front().size());
  std::vector<float> flat;
  for (const auto& r : rows) flat.insert(flat.end(), r.begin(), r.end());
  return torch::tensor(flat).reshape({static_cast<std::int64_t>(rows.size()), k});
}

torch::Tensor issue_labels(const std::vector<std::int64_t>& labels) {
  return torch::tensor(labels, torch::kLong);
}

// Three classes, four rows each, all confidently right, except row 1: labelled 0, predicted 1.
struct IssueHandCase {
  torch::Tensor probs = issue_probs({{0.8f, 0.1f, 0.1f},
                                     {0.1f, 0.8f, 0.1f},  // labelled 0: the planted issue
                                     {0.7f, 0.2f, 0.1f},
                                     {0.9f, 0.05f, 0.05f},
                                     {0.1f, 0.8f, 0.1f},
                                     {0.2f, 0.7f, 0.1f},
                                     {0.05f, 0.9f, 0.05f},
                                     {0.1f, 0.6f, 0.3f},
                                     {0.1f, 0.1f, 0.8f},
                                     {0.2f, 0.1f, 0.7f},
                                     {0.05f, 0.05f, 0.9f},
                                     {0.3f, 0.1f, 0.6f}});
  torch::Tensor labels = issue_labels({0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2});
};

// The thresholds and the confident joint of a single-label case, as the oracle reads them.
nlohmann::json single_label_figures(const torch::Tensor& p, const torch::Tensor& y,
                                    std::int64_t classes) {
  const torch::Tensor joint = ltfit::confident_joint(p, y).contiguous();
  nlohmann::json out = {{"thresholds", ltfit::per_class_thresholds(p, y, classes)},
                        {"joint", nlohmann::json::array()}};
  for (std::int64_t r = 0; r < classes; ++r) {
    const std::int64_t* row = joint.data_ptr<std::int64_t>() + r * classes;
    out["joint"].push_back(std::vector<std::int64_t>(row, row + classes));
  }
  return out;
}

}  // namespace

TEST_CASE("label issues: thresholds are the mean self-confidence of each class", "[label_issues]") {
  const IssueHandCase c;
  const std::vector<double> t = ltfit::per_class_thresholds(c.probs, c.labels, 3);
  REQUIRE(t.size() == 3);
  CHECK(t[0] == Approx((0.8 + 0.1 + 0.7 + 0.9) / 4).epsilon(1e-6));
  CHECK(t[1] == Approx((0.8 + 0.7 + 0.9 + 0.6) / 4).epsilon(1e-6));
  CHECK(t[2] == Approx((0.8 + 0.7 + 0.9 + 0.6) / 4).epsilon(1e-6));
  // A class nobody is labelled with can never be confident (cleanlab's 2).
  CHECK(ltfit::per_class_thresholds(c.probs, issue_labels({0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0}),
                                    3)[2] == 2.0);
  CHECK_THROWS_AS(ltfit::per_class_thresholds(c.probs, c.labels, 4), ltfit::DataError);
}

TEST_CASE("label issues: the confident joint counts given against confidently predicted",
          "[label_issues]") {
  const IssueHandCase c;
  const torch::Tensor joint = ltfit::confident_joint(c.probs, c.labels);
  REQUIRE(joint.sizes() == torch::IntArrayRef({3, 3}));
  REQUIRE(joint.dtype() == torch::kLong);
  // Thresholds 0.625, 0.75, 0.75 (-1e-6): rows 5, 7, 9 and 11 are confident in nothing; row 1
  // counts as (given 0, true 1). Raw rows {3, 1, 0}, {0, 2, 0}, {0, 0, 2}, each scaled to its
  // label count 4: {3, 1, 0}, {0, 4, 0}, {0, 0, 4}.
  const std::vector<std::int64_t> want = {3, 1, 0, 0, 4, 0, 0, 0, 4};
  const torch::Tensor flat = joint.reshape({9}).contiguous();
  CHECK(std::vector<std::int64_t>(flat.data_ptr<std::int64_t>(),
                                  flat.data_ptr<std::int64_t>() + 9) == want);
  CHECK(joint.sum(1).equal(torch::tensor({4, 4, 4}, torch::kLong)));
}

TEST_CASE("label issues: the planted mislabel is found with its suggested class",
          "[label_issues]") {
  const IssueHandCase c;
  const std::vector<ltfit::LabelIssue> issues = ltfit::find_label_issues(c.probs, c.labels);
  REQUIRE(issues.size() == 1);
  CHECK(issues[0].index == 1);
  CHECK(issues[0].given == 0);
  CHECK(issues[0].suggested == 1);
  CHECK(issues[0].score == Approx(0.1).epsilon(1e-6));
  CHECK(issues[0].self_confidence == issues[0].score);
  // Correct labels everywhere: nothing to report.
  const torch::Tensor fixed = issue_labels({0, 1, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2});
  CHECK(ltfit::find_label_issues(c.probs, fixed).empty());
}

TEST_CASE("label issues: ranked by self-confidence or by normalized margin", "[label_issues]") {
  // Two rows of class 0 confidently in class 1 (threshold 0.5): row 0 has p(given) 0.2 against
  // 0.5 (normalized margin 0.35), row 1 p(given) 0.25 against 0.75 (0.25). Self-confidence puts
  // row 0 first, normalized margin row 1.
  std::vector<std::vector<float>> rows = {{0.2f, 0.5f, 0.3f}, {0.25f, 0.75f, 0.0f}};
  std::vector<std::int64_t> labels = {0, 0};
  for (int i = 0; i < 6; ++i) {
    rows.push_back({0.9f, 0.05f, 0.05f});
    labels.push_back(0);
    rows.push_back({0.25f, 0.5f, 0.25f});
    labels.push_back(1);
    rows.push_back({0.05f, 0.05f, 0.9f});
    labels.push_back(2);
  }
  const torch::Tensor p = issue_probs(rows);
  const torch::Tensor y = issue_labels(labels);
  const auto by_confidence = ltfit::find_label_issues(p, y);
  REQUIRE(by_confidence.size() == 2);
  CHECK(by_confidence[0].index == 0);
  CHECK(by_confidence[1].index == 1);
  CHECK(by_confidence[0].suggested == 1);
  const auto by_margin = ltfit::find_label_issues(p, y, {"normalized_margin"});
  REQUIRE(by_margin.size() == 2);
  CHECK(by_margin[0].index == 1);
  CHECK(by_margin[0].score == Approx((0.25 - 0.75 + 1) / 2).epsilon(1e-6));
  CHECK(by_margin[0].self_confidence == Approx(0.25).epsilon(1e-6));
  CHECK(by_margin[1].index == 0);
}

TEST_CASE("label issues: a class with a single example is never pruned", "[label_issues]") {
  // Class 0 has one row, confidently predicted as class 2: its confident-joint row {0, 0, 1}
  // gets the diagonal 1, so calibrated it is {0.5, 0, 0.5}, rounded to {0, 0, 1} (the later
  // index first on a tie, as cleanlab's reversed argsort). Raising the diagonal back to one
  // example (min_examples_per_class = 1) leaves nothing to prune.
  std::vector<std::vector<float>> rows = {{0.05f, 0.05f, 0.9f}};
  std::vector<std::int64_t> labels = {0};
  for (int i = 0; i < 8; ++i) {
    rows.push_back({0.1f, 0.85f, 0.05f});
    labels.push_back(1);
    rows.push_back({0.05f, 0.1f, 0.85f});
    labels.push_back(2);
  }
  const torch::Tensor p = issue_probs(rows);
  const torch::Tensor y = issue_labels(labels);
  CHECK(ltfit::confident_joint(p, y)[0].equal(torch::tensor({0, 0, 1}, torch::kLong)));
  CHECK(ltfit::find_label_issues(p, y).empty());
  // With a second such row the class has two examples, and one of them is an issue.
  rows.push_back({0.05f, 0.05f, 0.9f});
  labels.push_back(0);
  const auto two = ltfit::find_label_issues(issue_probs(rows), issue_labels(labels));
  REQUIRE(two.size() == 1);
  CHECK(two[0].suggested == 2);
}

TEST_CASE("label issues: bad inputs are refused with a clear error", "[label_issues]") {
  const IssueHandCase c;
  CHECK_THROWS_AS(ltfit::find_label_issues(c.probs, issue_labels({0, 1})), ltfit::DataError);
  CHECK_THROWS_AS(ltfit::find_label_issues(c.probs, c.labels + 1), ltfit::DataError);
  CHECK_THROWS_AS(ltfit::find_label_issues(c.probs, c.labels, {"entropy"}), ltfit::ConfigError);
  CHECK_THROWS_AS(ltfit::find_label_issues(c.probs, torch::zeros({12, 4}, torch::kLong)),
                  ltfit::DataError);  // multi-label labels of another shape
  CHECK_THROWS_AS(ltfit::confident_joint(c.probs, torch::zeros({12, 3})), ltfit::DataError);
  CHECK(ltfit::find_label_issues(torch::zeros({0, 3}), torch::zeros({0}, torch::kLong)).empty());
}

TEST_CASE("label issues: planted label noise is recovered from a noisy model", "[label_issues]") {
  // 2,000 rows of 10 classes; 5% of the given labels flipped to another class; the model's
  // probabilities are a softmax of logits peaked (+5) at the TRUE class with N(0,1) noise.
  constexpr int kRows = 2000, kClasses = 10;
  std::mt19937_64 rng(7);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::uniform_int_distribution<int> cls(0, kClasses - 1), shift(1, kClasses - 1);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  torch::Tensor logits = torch::empty({kRows, kClasses});
  std::vector<std::int64_t> given(kRows);
  std::set<std::int64_t> flipped;
  for (int i = 0; i < kRows; ++i) {
    const int truth = cls(rng);
    for (int c = 0; c < kClasses; ++c) logits[i][c] = noise(rng) + (c == truth ? 5.0f : 0.0f);
    given[i] = truth;
    if (u(rng) < 0.05) {
      given[i] = (truth + shift(rng)) % kClasses;
      flipped.insert(i);
    }
  }
  const torch::Tensor probs = torch::softmax(logits, 1);
  const auto issues = ltfit::find_label_issues(probs, issue_labels(given));
  const std::size_t top = std::min(issues.size(), 2 * flipped.size());
  std::size_t found = 0, found_all = 0;
  for (std::size_t r = 0; r < issues.size(); ++r) {
    const bool hit = flipped.count(issues[r].index) > 0;
    found_all += hit;
    if (r < top) found += hit;
  }
  const double recall = static_cast<double>(found) / static_cast<double>(flipped.size());
  const double precision = static_cast<double>(found_all) / std::max<double>(issues.size(), 1);
  INFO("flipped " << flipped.size() << ", issues " << issues.size() << ", recall in the top " << top
                  << " " << recall << ", precision of all issues " << precision);
  CHECK(recall >= 0.8);
  CHECK(precision >= 0.5);
  WARN("planted noise: " << flipped.size() << " flipped of " << kRows << "; " << issues.size()
                         << " issues; recall@2x " << recall << "; precision " << precision);
}

TEST_CASE("label issues: each of cleanlab's filters flags its own rows", "[label_issues]") {
  // Three classes, four rows each; the sets are cleanlab 2.9.0's find_label_issues(labels,
  // pred_probs, filter_by=...) on these values (float64).
  const std::vector<double> flat = {0.24, 0.67, 0.09, 0.21, 0.58, 0.21, 0.49, 0.02, 0.49,
                                    0.26, 0.71, 0.03, 0.23, 0.68, 0.09, 0.05, 0.91, 0.04,
                                    0.06, 0.9,  0.04, 0.58, 0.21, 0.21, 0.57, 0.22, 0.21,
                                    0.42, 0.16, 0.42, 0.91, 0.05, 0.04, 0.33, 0.33, 0.34};
  const torch::Tensor p = torch::tensor(flat, torch::kDouble).reshape({12, 3});
  const torch::Tensor y = issue_labels({0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2});
  const std::vector<std::pair<std::string, std::set<std::int64_t>>> want = {
      {"prune_by_noise_rate", {0, 3, 7, 8, 10}},
      {"prune_by_class", {0, 1, 7, 8, 10}},
      {"both", {0, 7, 8, 10}},
      {"confident_learning", {3, 7, 8, 10}},
      {"predicted_neq_given", {0, 1, 3, 7, 8, 10}}};
  for (const auto& [filter, rows] : want) {
    std::set<std::int64_t> got;
    for (const auto& issue : ltfit::find_label_issues(p, y, {"self_confidence", filter})) {
      got.insert(issue.index);
    }
    INFO(filter);
    CHECK(got == rows);
  }
  CHECK(ltfit::label_issue_filters().size() == want.size());
  CHECK_THROWS_AS(ltfit::find_label_issues(p, y, {"self_confidence", "typo"}), ltfit::ConfigError);
}

TEST_CASE("label issues: multi-label data is checked one class against the rest",
          "[label_issues]") {
  // 3 classes, 30 images. Class 0: images 0-9 have it (p 0.9), the rest not (p 0.1), except image
  // 12, which lacks it but is predicted to have it (0.95). Class 1: every third image has it
  // (0.85), image 3 on paper only (0.02). Class 2: images 20-29 (0.8); every prediction agrees.
  constexpr int kRows = 30;
  torch::Tensor p = torch::full({kRows, 3}, 0.1);
  torch::Tensor y = torch::zeros({kRows, 3}, torch::kLong);
  for (int i = 0; i < 10; ++i) {
    p[i][0] = 0.9;
    y[i][0] = 1;
  }
  p[12][0] = 0.95;
  for (int i = 0; i < kRows; i += 3) {
    p[i][1] = 0.85;
    y[i][1] = 1;
  }
  p[3][1] = 0.02;
  for (int i = 20; i < kRows; ++i) {
    p[i][2] = 0.8;
    y[i][2] = 1;
  }
  const auto issues = ltfit::find_label_issues(p, y);
  REQUIRE(issues.size() == 2);
  // Image 3's per-class self-confidences 0.9, 0.02, 0.9: sorted high to low, the moving average
  // 0.9 -> 0.8*0.9 + 0.2*0.9 = 0.9 -> 0.8*0.02 + 0.2*0.9 = 0.196.
  CHECK(issues[0].index == 3);
  CHECK(issues[0].classes == std::vector<std::int64_t>{1});
  CHECK(issues[0].score == Approx(0.196));
  CHECK(issues[0].given == -1);
  CHECK(issues[0].suggested == -1);
  // Image 12's: 0.05, 0.85, 0.9 -> 0.9 -> 0.8*0.85 + 0.2*0.9 = 0.86 -> 0.8*0.05 + 0.2*0.86 = 0.212
  // (cleanlab's get_label_quality_scores gives the same two scores).
  CHECK(issues[1].index == 12);
  CHECK(issues[1].classes == std::vector<std::int64_t>{0});
  CHECK(issues[1].score == Approx(0.212));
  CHECK(issues[1].self_confidence == issues[1].score);
}

TEST_CASE("label issues: planted multi-label noise is recovered", "[label_issues]") {
  // 1,000 images of 5 classes (each present with probability 0.3); 1% of the (image, class)
  // entries flipped; sigmoid probabilities of logits +-4 around the TRUE labels, N(0,1) noise.
  constexpr int kRows = 1000, kClasses = 5;
  std::mt19937_64 rng(17);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  torch::Tensor logits = torch::empty({kRows, kClasses});
  torch::Tensor given = torch::zeros({kRows, kClasses}, torch::kLong);
  std::set<std::int64_t> flipped;
  for (int i = 0; i < kRows; ++i) {
    for (int c = 0; c < kClasses; ++c) {
      const bool truth = u(rng) < 0.3;
      logits[i][c] = (truth ? 4.0f : -4.0f) + noise(rng);
      const bool flip = u(rng) < 0.01;
      given[i][c] = truth != flip ? 1 : 0;
      if (flip) flipped.insert(i);
    }
  }
  const auto issues = ltfit::find_label_issues(torch::sigmoid(logits), given);
  const std::size_t top = std::min(issues.size(), 2 * flipped.size());
  std::size_t found = 0, found_all = 0;
  for (std::size_t r = 0; r < issues.size(); ++r) {
    const bool hit = flipped.count(issues[r].index) > 0;
    found_all += hit;
    if (r < top) found += hit;
  }
  const double recall = static_cast<double>(found) / static_cast<double>(flipped.size());
  const double precision = static_cast<double>(found_all) / std::max<double>(issues.size(), 1);
  WARN("planted multi-label noise: " << flipped.size() << " images with a flipped class; "
                                     << issues.size() << " issues; recall@2x " << recall
                                     << "; precision " << precision);
  CHECK(recall >= 0.7);
  CHECK(precision >= 0.8);
}

// Run by tests/eval/label_issues_oracle.sh: runs every case of
// $LTFIT_LABEL_ISSUES_ORACLE_DIR/cases.json ([{name, rows, classes, probs, labels}]) and writes
// ltfit's thresholds, confident joint and ranked issues to ltfit.json for
// tests/eval/label_issues_oracle.py to compare with cleanlab's.
TEST_CASE("label issues oracle: ltfit's results for cleanlab to check", "[.label_issues_oracle]") {
  const char* dir = std::getenv("LTFIT_LABEL_ISSUES_ORACLE_DIR");
  if (dir == nullptr) {
    FAIL("LTFIT_LABEL_ISSUES_ORACLE_DIR is not set: run tests/eval/label_issues_oracle.sh");
  }
  const std::filesystem::path base(dir);
  const auto cases = nlohmann::json::parse(ltfit::testing::read_file(base / "cases.json"));
  nlohmann::json results = nlohmann::json::array();
  for (const auto& c : cases) {
    const auto rows = c.at("rows").get<std::int64_t>();
    const auto classes = c.at("classes").get<std::int64_t>();
    const torch::Tensor p = torch::tensor(c.at("probs").get<std::vector<double>>(), torch::kDouble)
                                .reshape({rows, classes});
    torch::Tensor y = issue_labels(c.at("labels").get<std::vector<std::int64_t>>());
    nlohmann::json out;
    if (c.value("multi_label", false)) {
      y = y.reshape({rows, classes});
    } else {
      out = single_label_figures(p, y, classes);
    }
    for (const std::string rank_by : {"self_confidence", "normalized_margin"}) {
      std::vector<std::int64_t> ranked;
      for (const auto& issue : ltfit::find_label_issues(p, y, {rank_by})) {
        ranked.push_back(issue.index);
        out["classes"][std::to_string(issue.index)] = issue.classes;
      }
      out["issues"][rank_by] = ranked;
    }
    for (const std::string& filter : ltfit::label_issue_filters()) {
      std::vector<std::int64_t> flagged;
      for (const auto& issue : ltfit::find_label_issues(p, y, {"self_confidence", filter})) {
        flagged.push_back(issue.index);
      }
      std::sort(flagged.begin(), flagged.end());
      out["filters"][filter] = flagged;
    }
    results.push_back(out);
  }
  ltfit::testing::write_file(base / "ltfit.json", results.dump());
  SUCCEED("wrote " << results.size() << " results");
}
