// Label issues by confident learning (Northcutt, Jiang & Chuang, "Confident Learning: Estimating
// Uncertainty in Dataset Labels", JAIR 2021), computed as cleanlab 2.x's
// `cleanlab.filter.find_label_issues(labels, pred_probs, return_indices_ranked_by=...)` computes
// it with its defaults (filter_by="prune_by_noise_rate", frac_noise=1.0,
// min_examples_per_class=1, single-label):
//
//  1. Per-class thresholds t_j: the mean of p(j) over the examples labelled j (summed as NumPy
//     sums, pairwise), at least 2e-6; 2 for a class no example is labelled with (never reached).
//  2. Confident joint C[given][true]: an example counts where at least one p(j) >= t_j - 1e-6;
//     its true class is that j when it is the only one, else the argmax of p (first on a tie).
//     The diagonal is raised to at least 1, each row scaled to the class's label count, the
//     whole to N, and each row rounded to integers keeping its rounded total (largest remainders
//     first; cleanlab's round_preserving_sum).
//  3. Prune counts: the transpose, each diagonal raised to at least 1, the rise taken evenly off
//     that column's nonzero off-diagonal counts (floored at 0), then truncated to integers.
//  4. For each given class k with at least 2 examples and each other class j: the prune count
//     (j,k) examples labelled k with the largest p(j) - p(k) are issues.
//  5. An issue is dropped when its given label is still the argmax after adding 1e-6 to it.
//  6. Issues ranked by their score, lowest (most suspicious) first.
//
// Steps 3-4 are cleanlab's default filter, "prune_by_noise_rate"; LabelIssueOptions::filter_by
// chooses any of cleanlab's others (its `filter_by`), each followed by steps 5-6:
//   prune_by_class       per given class k (with at least 2 examples), the (rows labelled k
//                        minus the prune-count diagonal (k,k)) rows with the lowest p(k)
//   both                 flagged by prune_by_noise_rate and by prune_by_class
//   confident_learning   every off-diagonal row of the confident joint (step 2, uncalibrated):
//                        confident in a class other than its given label
//   predicted_neq_given  the argmax of p is not the given label
//
// Multi-label data (labels [N,K], multi-hot) is cleanlab's one-vs-rest reduction
// (`cleanlab.multilabel_classification.filter.find_label_issues`): each class is a binary problem
// with probabilities [1 - p, p], run through steps 1-5; an image is an issue when any class
// flags it, and its score is the exponential moving average (alpha 0.8) of its per-class scores
// sorted from high to low.
//
// Probabilities are widened to double before any arithmetic; ties in a sort (equal fractional
// parts in step 2's rounding, equal margins, equal scores) are broken by row index, ascending,
// as np.argsort(kind="stable") breaks them; cleanlab's default argsort is not stable, so on a tie
// it may decide otherwise (tests/eval/label_issues_oracle.sh compares with cleanlab's own code).
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/types.h>

namespace ltfit {

struct LabelIssue {
  std::int64_t index = 0;  // row in the inputs
  std::int64_t given = 0;  // the given label; -1 for multi-label data
  // The class the confident joint counts this row as (step 2) when that is not the given label,
  // else the argmax of the probabilities (never the given label for a reported issue); -1 for
  // multi-label data.
  std::int64_t suggested = 0;
  double score = 0.0;  // the ranking score (LabelIssueOptions::rank_by); lower = worse
  // p(given), whatever the ranking; multi-label: the moving average of the per-class
  // self-confidences (p where the image has the class, 1 - p where not).
  double self_confidence = 0.0;
  // Multi-label only: the classes whose one-vs-rest problem flagged the row (the image's label
  // for that class, present or absent, is suspect), ascending. Empty for single-label data.
  std::vector<std::int64_t> classes;
};

struct LabelIssueOptions {
  // "self_confidence": p(given). "normalized_margin": (p(given) - max other p + 1) / 2.
  std::string rank_by = "self_confidence";
  // Which rows are issues: one of label_issue_filters() (cleanlab's default here).
  std::string filter_by = "prune_by_noise_rate";
};

// The filters LabelIssueOptions::filter_by takes: prune_by_noise_rate, prune_by_class, both,
// confident_learning, predicted_neq_given.
const std::vector<std::string>& label_issue_filters();

// probs: float [N,K] (softmax rows; any floating dtype, any device) with labels int64 [N] in
// [0,K), or sigmoid probabilities [N,K] with multi-hot labels [N,K] (nonzero = has the class).
// Issues ranked most suspicious first. Throws ConfigError for an unknown rank_by or filter_by,
// DataError for mismatched shapes or a label outside [0,K).
std::vector<LabelIssue> find_label_issues(const torch::Tensor& probs, const torch::Tensor& labels,
                                          const LabelIssueOptions& options = {});

// Step 1's thresholds, one per class of `classes` (probs has `classes` columns). Single-label
// only (DataError for 2-D labels), as is confident_joint.
std::vector<double> per_class_thresholds(const torch::Tensor& probs, const torch::Tensor& labels,
                                         std::int64_t classes);

// Step 2's calibrated confident joint: int64 [K,K], rows the given label, columns the true one;
// each row sums to its class's label count.
torch::Tensor confident_joint(const torch::Tensor& probs, const torch::Tensor& labels);

}  // namespace ltfit
