// Confident learning's label issues: see label_issues.h. This file is cleanlab's filter.py: the
// prune counts and filters that flag rows, the issues' scores and order, and multi-label data as
// one one-vs-rest problem per class; the thresholds and the confident joint they start from
// (count.py) are label_issues_count.cpp's. Each step mirrors the floating-point operations of
// cleanlab in their order (truncation of non-negative counts included), so the issues found are
// cleanlab's.
#include "ltfit/eval/label_issues.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "eval/label_issues_internal.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

// cleanlab's _keep_at_least_n_per_class(joint.T, n=1, frac_noise=1): [true j][given k].
std::vector<std::int64_t> prune_counts_of(const std::vector<std::int64_t>& joint, std::size_t k) {
  std::vector<std::int64_t> prune(k * k, 0);
  for (std::size_t col = 0; col < k; ++col) {  // the given class
    const std::int64_t diagonal = joint[col * k + col];
    const std::int64_t raised = std::max<std::int64_t>(diagonal, 1);
    std::int64_t nonzero = 0;
    for (std::size_t row = 0; row < k; ++row) nonzero += joint[col * k + row] != 0;
    const double spread =
        static_cast<double>(raised - diagonal) / std::max(static_cast<double>(nonzero) - 1.0, 1.0);
    for (std::size_t row = 0; row < k; ++row) {
      const double v = static_cast<double>(joint[col * k + row]) - spread;
      prune[row * k + col] = row == col ? raised : static_cast<std::int64_t>(std::max(v, 0.0));
    }
  }
  return prune;
}

// prune_by_noise_rate: the rows of each given class with the largest p(true) - p(given).
std::vector<bool> pruned_rows(const LabelTable& t, const std::vector<std::int64_t>& prune) {
  std::vector<std::vector<std::int64_t>> rows_of(static_cast<std::size_t>(t.k));
  for (std::int64_t i = 0; i < t.n; ++i) rows_of[t.y[i]].push_back(i);
  std::vector<bool> flagged(static_cast<std::size_t>(t.n), false);
  for (std::int64_t given = 0; given < t.k; ++given) {
    std::vector<std::int64_t> rows = rows_of[given];
    if (rows.size() <= 1) continue;  // min_examples_per_class = 1
    for (std::int64_t truth = 0; truth < t.k; ++truth) {
      const std::int64_t count = prune[truth * t.k + given];
      if (truth == given || count <= 0) continue;
      const auto margin = [&](std::int64_t i) { return t.at(i, truth) - t.at(i, given); };
      std::stable_sort(rows.begin(), rows.end(), [&](std::int64_t a, std::int64_t b) {
        return -margin(a) < -margin(b) || (-margin(a) == -margin(b) && a < b);
      });
      const auto take = std::min<std::size_t>(static_cast<std::size_t>(count), rows.size());
      for (std::size_t r = 0; r < take; ++r) flagged[rows[r]] = true;
    }
  }
  return flagged;
}

// cleanlab's _reduce_issues: the given label, nudged up by 1e-6, is still the argmax.
bool prediction_agrees(const LabelTable& t, std::int64_t i) {
  std::vector<double> row(t.p.begin() + i * t.k, t.p.begin() + (i + 1) * t.k);
  row[t.y[i]] += kFloatingPointComparison;
  return argmax_of(row.data(), t.k) == t.y[i];
}

double issue_score(const LabelTable& t, std::int64_t i, bool normalized_margin) {
  const double self = t.at(i, t.y[i]);
  if (!normalized_margin) return self;
  double other = -std::numeric_limits<double>::infinity();
  for (std::int64_t c = 0; c < t.k; ++c) {
    if (c != t.y[i]) other = std::max(other, t.at(i, c));
  }
  return (self - other + 1) / 2;
}

// prune_by_class: the rows of each given class (with at least 2) with the lowest p(given), as
// many as the class's rows minus its prune-count diagonal.
std::vector<bool> pruned_by_class(const LabelTable& t, const std::vector<std::int64_t>& prune) {
  std::vector<std::vector<std::int64_t>> rows_of(static_cast<std::size_t>(t.k));
  for (std::int64_t i = 0; i < t.n; ++i) rows_of[t.y[i]].push_back(i);
  std::vector<bool> flagged(static_cast<std::size_t>(t.n), false);
  for (std::int64_t given = 0; given < t.k; ++given) {
    std::vector<std::int64_t> rows = rows_of[given];
    const auto count = static_cast<std::int64_t>(rows.size()) - prune[given * t.k + given];
    if (rows.size() <= 1 || count < 1) continue;
    std::stable_sort(rows.begin(), rows.end(), [&](std::int64_t a, std::int64_t b) {
      return t.at(a, given) < t.at(b, given);
    });
    const auto take = std::min<std::size_t>(static_cast<std::size_t>(count), rows.size());
    for (std::size_t r = 0; r < take; ++r) flagged[rows[r]] = true;
  }
  return flagged;
}

// The rows `filter_by` flags (steps 1-4, or the other filters of label_issues.h), less those
// whose prediction agrees (step 5).
std::vector<bool> issue_mask(const LabelTable& t, const std::string& filter_by) {
  std::vector<bool> flagged(static_cast<std::size_t>(t.n), false);
  if (filter_by == "confident_learning" || filter_by == "predicted_neq_given") {
    const std::vector<double> thresholds = thresholds_of(t);
    for (std::int64_t i = 0; i < t.n; ++i) {
      const double* row = &t.p[i * t.k];
      const std::int64_t guess = filter_by == "predicted_neq_given"
                                     ? argmax_of(row, t.k)
                                     : confident_class(row, thresholds);
      flagged[i] = guess >= 0 && guess != t.y[i];
    }
  } else {
    const std::vector<std::int64_t> prune =
        prune_counts_of(calibrated_joint(t), static_cast<std::size_t>(t.k));
    if (filter_by != "prune_by_class") flagged = pruned_rows(t, prune);
    if (filter_by != "prune_by_noise_rate") {
      const std::vector<bool> by_class = pruned_by_class(t, prune);
      for (std::int64_t i = 0; i < t.n; ++i) {
        flagged[i] = by_class[i] && (filter_by == "prune_by_class" || flagged[i]);
      }
    }
  }
  for (std::int64_t i = 0; i < t.n; ++i) {
    if (flagged[i] && prediction_agrees(t, i)) flagged[i] = false;
  }
  return flagged;
}

// Class c of multi-label data as cleanlab's one-vs-rest problem: probabilities [1 - p, p]
// (stack_complement), label 1 where the image has the class. `p` is double [N,K] contiguous.
LabelTable one_vs_rest_table(const torch::Tensor& p, const torch::Tensor& has, std::int64_t c) {
  LabelTable t;
  t.n = p.size(0);
  t.k = 2;
  t.p.resize(static_cast<std::size_t>(2 * t.n));
  t.y.resize(static_cast<std::size_t>(t.n));
  const double* probs = p.data_ptr<double>();
  const bool* labels = has.data_ptr<bool>();
  for (std::int64_t i = 0; i < t.n; ++i) {
    const double q = probs[i * p.size(1) + c];
    t.p[2 * i] = 1.0 - q;
    t.p[2 * i + 1] = q;
    t.y[i] = labels[i * p.size(1) + c] ? 1 : 0;
  }
  return t;
}

// cleanlab's exponential_moving_average with alpha 0.8 over the scores sorted high to low.
double ema_of(std::vector<double> scores) {
  constexpr double kAlpha = 0.8;
  std::sort(scores.begin(), scores.end(), std::greater<>());
  double ema = scores.front();
  for (std::size_t i = 1; i < scores.size(); ++i) ema = kAlpha * scores[i] + (1 - kAlpha) * ema;
  return ema;
}

std::vector<LabelIssue> multi_label_issues(const torch::Tensor& probs, const torch::Tensor& labels,
                                           bool normalized_margin, const std::string& filter_by) {
  if (probs.dim() != 2 || probs.sizes() != labels.sizes()) {
    throw DataError("label issues: expected multi-label probabilities and labels of one shape " +
                    std::string("[N,K], got ") + std::to_string(probs.dim()) + "-D " +
                    "probabilities and labels of " + std::to_string(labels.numel()) + " values");
  }
  const torch::Tensor p = probs.detach().to(torch::kCPU, torch::kDouble).contiguous();
  const torch::Tensor has = labels.detach().to(torch::kCPU).ne(0).contiguous();
  const std::int64_t n = p.size(0), k = p.size(1);
  std::vector<std::vector<std::int64_t>> flagged_classes(static_cast<std::size_t>(n));
  std::vector<std::vector<double>> scores(static_cast<std::size_t>(n)), selves(scores);
  for (std::int64_t c = 0; c < k; ++c) {
    const LabelTable t = one_vs_rest_table(p, has, c);
    const std::vector<bool> mask = issue_mask(t, filter_by);
    for (std::int64_t i = 0; i < n; ++i) {
      if (mask[i]) flagged_classes[i].push_back(c);
      scores[i].push_back(issue_score(t, i, normalized_margin));
      selves[i].push_back(issue_score(t, i, false));
    }
  }
  std::vector<LabelIssue> issues;
  for (std::int64_t i = 0; i < n; ++i) {
    if (flagged_classes[i].empty()) continue;
    issues.push_back({i, -1, -1, ema_of(scores[i]), ema_of(selves[i]), flagged_classes[i]});
  }
  return issues;
}

}  // namespace

const std::vector<std::string>& label_issue_filters() {
  static const std::vector<std::string> names{"prune_by_noise_rate", "prune_by_class", "both",
                                              "confident_learning", "predicted_neq_given"};
  return names;
}

std::vector<LabelIssue> find_label_issues(const torch::Tensor& probs, const torch::Tensor& labels,
                                          const LabelIssueOptions& options) {
  if (options.rank_by != "self_confidence" && options.rank_by != "normalized_margin") {
    throw ConfigError("label issues: unknown ranking '" + options.rank_by +
                      "' (expected self_confidence or normalized_margin)");
  }
  const std::vector<std::string>& filters = label_issue_filters();
  if (std::find(filters.begin(), filters.end(), options.filter_by) == filters.end()) {
    throw ConfigError("label issues: unknown filter '" + options.filter_by + "'",
                      "choose prune_by_noise_rate, prune_by_class, both, confident_learning or "
                      "predicted_neq_given");
  }
  const bool normalized_margin = options.rank_by == "normalized_margin";
  std::vector<LabelIssue> issues;
  if (labels.dim() == 2) {
    issues = multi_label_issues(probs, labels, normalized_margin, options.filter_by);
  } else {
    const LabelTable t = label_table_of(probs, labels);
    const std::vector<double> thresholds = thresholds_of(t);
    const std::vector<bool> mask =
        t.k > 0 ? issue_mask(t, options.filter_by) : std::vector<bool>(t.n, false);
    for (std::int64_t i = 0; i < t.n; ++i) {
      if (!mask[i]) continue;
      const double* row = &t.p[i * t.k];
      const std::int64_t confident = confident_class(row, thresholds);
      const std::int64_t suggested =
          confident >= 0 && confident != t.y[i] ? confident : argmax_of(row, t.k);
      issues.push_back(
          {i, t.y[i], suggested, issue_score(t, i, normalized_margin), row[t.y[i]], {}});
    }
  }
  std::stable_sort(issues.begin(), issues.end(),
                   [](const LabelIssue& a, const LabelIssue& b) { return a.score < b.score; });
  return issues;
}

}  // namespace ltfit
