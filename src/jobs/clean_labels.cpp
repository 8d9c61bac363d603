// `ltfit clean`'s label check (clean_parts.h): the model's probabilities on every usable image
// (training images in-sample or cross-fitted, validation images out-of-sample), confident
// learning on them (eval/label_issues.h), each split judged on its own or all images together,
// and a suggestion row per issue; probabilities.csv's text.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "clean_parts.h"
#include "ltfit/config/config.h"
#include "ltfit/eval/label_issues.h"
#include "ltfit/jobs/eval_report.h"
#include "ltfit/util/choices.h"
#include "ltfit/util/device.h"

namespace ltfit {

namespace {

namespace fs = std::filesystem;

// probabilities.csv: path,split,given,prob_<class>... of every image judged (rows `at` of
// `all`, in `probs`' order; an image the model could not decode has empty probabilities).
std::string clean_probabilities_csv(const std::vector<CleanSample>& all,
                                    const std::vector<std::size_t>& at,
                                    const std::vector<std::string>& classes,
                                    const torch::Tensor& probs, bool multi_label) {
  std::string text = "path,split,given";
  for (const std::string& c : classes) text += "," + csv_field("prob_" + c);
  text += "\n";
  const torch::Tensor p = probs.to(torch::kFloat64).contiguous();
  const auto pa = p.accessor<double, 2>();
  for (std::size_t r = 0; r < at.size(); ++r) {
    const CleanSample& s = all[at[r]];
    text += csv_field(s.sample.path) + "," + s.split + "," +
            csv_field(given_labels(classes, s.sample, multi_label));
    for (std::int64_t c = 0; c < p.size(1); ++c) {
      const double v = pa[static_cast<std::int64_t>(r)][c];
      text += std::isnan(v) ? std::string(",") : fmt::format(",{:.9g}", v);
    }
    text += "\n";
  }
  return text;
}

// The labels find_label_issues takes: int64 [N] classes, or (multi-label) float [N,K] multi-hot.
torch::Tensor clean_label_tensor(const std::vector<Sample>& samples, std::size_t classes,
                                 bool multi_label) {
  const auto n = static_cast<std::int64_t>(samples.size());
  if (!multi_label) {
    std::vector<std::int64_t> labels;
    for (const Sample& s : samples) labels.push_back(s.label);
    return torch::tensor(labels, torch::kLong).view({n});
  }
  torch::Tensor hot = torch::zeros({n, static_cast<std::int64_t>(classes)});
  for (std::int64_t i = 0; i < n; ++i) {
    for (const std::int64_t k : samples[static_cast<std::size_t>(i)].labels) hot[i][k] = 1.0;
  }
  return hot;
}

// A mislabeled row. Multi-label: the suggestion is the given set with each flagged class
// toggled (a present one dropped, an absent one added), the flagged classes named in detail.
Suggestion mislabeled_row(const CleanSample& s, const LabelIssue& issue,
                          const std::vector<std::string>& classes, bool multi_label,
                          const std::string& source) {
  if (!multi_label) {
    return {s.sample.path,
            "mislabeled",
            s.split,
            class_name(classes, issue.given),
            class_name(classes, issue.suggested),
            issue.score,
            source,
            s.sample.image,
            {}};
  }
  std::vector<std::int64_t> set = s.sample.labels;
  std::vector<std::string> flagged;
  for (const std::int64_t k : issue.classes) {
    const auto it = std::find(set.begin(), set.end(), k);
    if (it == set.end()) {
      set.push_back(k);
    } else {
      set.erase(it);
    }
    flagged.push_back(class_name(classes, k));
  }
  std::sort(set.begin(), set.end());
  Sample suggested = s.sample;
  suggested.labels = set;
  return {s.sample.path,
          "mislabeled",
          s.split,
          given_labels(classes, s.sample, true),
          given_labels(classes, suggested, true),
          issue.score,
          "classes " + join(flagged, " ") + "; " + source,
          s.sample.image,
          {}};
}

// Confident learning on rows `rows` of (`probs`, `labels`); each issue's index is a position in
// `rows`.
std::vector<LabelIssue> issues_among(const torch::Tensor& probs, const torch::Tensor& labels,
                                     const std::vector<std::int64_t>& rows,
                                     const LabelIssueOptions& options) {
  if (rows.empty()) return {};
  const torch::Tensor at = torch::tensor(rows, torch::kLong);
  return find_label_issues(probs.index_select(0, at), labels.index_select(0, at), options);
}

// The issues of each split judged on its own (their own thresholds and confident joint), or of
// all rows together, indexing rows of `probs`, most suspicious first (by score, then by row).
std::vector<LabelIssue> judged_issues(const torch::Tensor& probs, const torch::Tensor& labels,
                                      const std::vector<bool>& in_train, bool per_split,
                                      const LabelIssueOptions& options) {
  std::vector<std::vector<std::int64_t>> groups(per_split ? 2 : 1);
  for (std::size_t r = 0; r < in_train.size(); ++r)
    groups[per_split && !in_train[r] ? 1 : 0].push_back(static_cast<std::int64_t>(r));
  std::vector<LabelIssue> issues;
  for (const auto& rows : groups) {
    for (LabelIssue issue : issues_among(probs, labels, rows, options)) {
      issue.index = rows[static_cast<std::size_t>(issue.index)];
      issues.push_back(std::move(issue));
    }
  }
  std::stable_sort(issues.begin(), issues.end(), [](const LabelIssue& a, const LabelIssue& b) {
    return a.score != b.score ? a.score < b.score : a.index < b.index;
  });
  return issues;
}

// Whether request.judge, resolved ("auto": per split unless --folds cross-fits the training
// probabilities), judges each split on its own.
bool judge_per_split(const CleanRequest& request) {
  if (request.judge == "auto") return request.folds <= 1;
  return request.judge == "per_split";
}

}  // namespace

std::string class_name(const std::vector<std::string>& classes, std::int64_t k) {
  return k >= 0 && k < static_cast<std::int64_t>(classes.size())
             ? classes[static_cast<std::size_t>(k)]
             : "";
}

std::string given_labels(const std::vector<std::string>& classes, const Sample& s,
                         bool multi_label) {
  if (!multi_label) return class_name(classes, s.label);
  std::vector<std::string> names;
  for (const std::int64_t k : s.labels) names.push_back(class_name(classes, k));
  return join(names, " ");
}

void find_mislabeled_rows(const CleanRequest& request, const Config& config,
                          const std::vector<CleanSample>& all,
                          const std::vector<std::size_t>& usable,
                          const std::vector<std::string>& classes, const fs::path& out,
                          CleanResult& result) {
  const torch::Device device = resolve_device(request.device, "--device");
  LoadedModel loaded = load_model_for_eval(request.checkpoint, device);
  const EvalOptions options = eval_options_for(loaded, device, request.precision);
  std::vector<Sample> train, valid;
  std::vector<std::size_t> train_at, valid_at;
  for (const std::size_t i : usable) {
    (all[i].split == "train" ? train : valid).push_back(all[i].sample);
    (all[i].split == "train" ? train_at : valid_at).push_back(i);
  }
  torch::Tensor train_p;
  if (request.folds > 1 && !train.empty()) {
    train_p = cross_fitted_probabilities(config, config.data.root, train, classes, request.folds,
                                         (out / "folds").string(), request);
    result.train_probabilities = "cross-fitted (" + std::to_string(request.folds) + " folds)";
  } else {
    train_p = clean_probabilities(loaded, train, options);
    result.train_probabilities = "in-sample";
  }
  const torch::Tensor valid_p = clean_probabilities(loaded, valid, options);
  const torch::Tensor probs = torch::cat({train_p, valid_p}).to(torch::kFloat32);
  std::vector<std::size_t> at = train_at;
  at.insert(at.end(), valid_at.begin(), valid_at.end());
  // Rows a model could not score (NaN: decoded for the check, not for the model) are left out.
  const torch::Tensor scored = probs.isnan().any(1).logical_not().nonzero().view({-1});
  const std::vector<std::int64_t> rows(scored.data_ptr<std::int64_t>(),
                                       scored.data_ptr<std::int64_t>() + scored.numel());
  std::vector<Sample> judged;
  std::vector<bool> in_train;
  for (const std::int64_t r : rows) {
    judged.push_back(all[at[static_cast<std::size_t>(r)]].sample);
    in_train.push_back(all[at[static_cast<std::size_t>(r)]].split == "train");
  }
  const bool multi_label = is_multi_label(config);
  result.probabilities_csv = clean_probabilities_csv(all, at, classes, probs, multi_label);
  LabelIssueOptions issue_options;
  issue_options.filter_by = request.filter_by;
  const bool per_split = judge_per_split(request);
  result.judged = per_split ? "per split" : "together";
  const std::vector<LabelIssue> issues = judged_issues(
      probs.index_select(0, scored), clean_label_tensor(judged, classes.size(), multi_label),
      in_train, per_split, issue_options);
  for (const LabelIssue& issue : issues) {
    const CleanSample& s = all[at[static_cast<std::size_t>(rows[issue.index])]];
    result.suggestions.push_back(
        mislabeled_row(s, issue, classes, multi_label,
                       s.split == "valid" ? "out-of-sample" : result.train_probabilities));
  }
  result.flagged_fraction =
      scored.numel() > 0 ? static_cast<double>(issues.size()) / static_cast<double>(scored.numel())
                         : 0.0;
}

}  // namespace ltfit
