// Multi-label figures: see multi_label_metrics.h.
#include "ltfit/eval/multi_label_metrics.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "ltfit/util/error.h"

namespace ltfit {

namespace {

void check_shapes(const MultiLabelScores& s, const std::vector<double>& thresholds) {
  const auto cells = static_cast<std::size_t>(s.rows * s.classes);
  if (s.rows < 0 || s.classes < 0 || s.probs.size() != cells || s.targets.size() != cells ||
      thresholds.size() != static_cast<std::size_t>(s.classes)) {
    throw RuntimeError("multi-label scores: " + std::to_string(s.probs.size()) +
                       " probabilities, " + std::to_string(s.targets.size()) + " targets and " +
                       std::to_string(thresholds.size()) + " thresholds for " +
                       std::to_string(s.rows) + " images of " + std::to_string(s.classes) +
                       " classes");
  }
}

// F-beta from counts; 0/0 is 0 (scikit-learn's zero_division "warn").
double fbeta_of(double tp, double truth, double pred, double beta) {
  const double b2 = beta * beta;
  const double denominator = b2 * truth + pred;
  return denominator > 0 ? (1.0 + b2) * tp / denominator : 0.0;
}

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

struct Counts {
  double tp = 0.0, truth = 0.0, pred = 0.0;
};

// Per-class counts at the thresholds, as F-beta decides (p >= threshold).
std::vector<Counts> class_counts(const MultiLabelScores& s, const std::vector<double>& t) {
  std::vector<Counts> out(static_cast<std::size_t>(s.classes));
  for (std::int64_t r = 0; r < s.rows; ++r) {
    for (std::int64_t c = 0; c < s.classes; ++c) {
      const auto i = static_cast<std::size_t>(r * s.classes + c);
      const bool y = s.targets[i] != 0;
      const bool p = static_cast<double>(s.probs[i]) >= t[static_cast<std::size_t>(c)];
      Counts& k = out[static_cast<std::size_t>(c)];
      k.tp += (y && p) ? 1.0 : 0.0;
      k.truth += y ? 1.0 : 0.0;
      k.pred += p ? 1.0 : 0.0;
    }
  }
  return out;
}

double samples_fbeta(const MultiLabelScores& s, const std::vector<double>& t, double beta) {
  if (s.rows == 0) return 0.0;
  double sum = 0.0;
  for (std::int64_t r = 0; r < s.rows; ++r) {
    Counts k;
    for (std::int64_t c = 0; c < s.classes; ++c) {
      const auto i = static_cast<std::size_t>(r * s.classes + c);
      const bool y = s.targets[i] != 0;
      const bool p = static_cast<double>(s.probs[i]) >= t[static_cast<std::size_t>(c)];
      k.tp += (y && p) ? 1.0 : 0.0;
      k.truth += y ? 1.0 : 0.0;
      k.pred += p ? 1.0 : 0.0;
    }
    sum += fbeta_of(k.tp, k.truth, k.pred, beta);
  }
  return sum / static_cast<double>(s.rows);
}

// F1 of one class when predicting p > threshold.
double class_f1_above(const MultiLabelScores& s, std::int64_t c, double threshold) {
  double tp = 0.0, truth = 0.0, pred = 0.0;
  for (std::int64_t r = 0; r < s.rows; ++r) {
    const auto i = static_cast<std::size_t>(r * s.classes + c);
    const bool y = s.targets[i] != 0;
    const bool p = predicted(s.probs[i], threshold);
    tp += (y && p) ? 1.0 : 0.0;
    truth += y ? 1.0 : 0.0;
    pred += p ? 1.0 : 0.0;
  }
  return fbeta_of(tp, truth, pred, 1.0);
}

double tune_one(const MultiLabelScores& s, std::int64_t c, double fallback) {
  std::vector<float> values;
  bool any_positive = false;
  for (std::int64_t r = 0; r < s.rows; ++r) {
    const auto i = static_cast<std::size_t>(r * s.classes + c);
    values.push_back(s.probs[i]);
    any_positive = any_positive || s.targets[i] != 0;
  }
  if (!any_positive || values.empty()) return fallback;
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  std::vector<double> candidates{static_cast<double>(values.front()) / 2.0,
                                 static_cast<double>(values.back())};
  for (std::size_t k = 1; k < values.size(); ++k) {
    candidates.push_back((static_cast<double>(values[k - 1]) + values[k]) / 2.0);
  }
  double best = fallback, best_f1 = -1.0;
  for (double t : candidates) {
    const double f1 = class_f1_above(s, c, t);
    if (f1 > best_f1 || (f1 == best_f1 && std::abs(t - fallback) < std::abs(best - fallback))) {
      best = t;
      best_f1 = f1;
    }
  }
  return best;
}

}  // namespace

double accuracy_multi(const MultiLabelScores& s, const std::vector<double>& thresholds) {
  check_shapes(s, thresholds);
  if (s.probs.empty()) return 0.0;
  double right = 0.0;
  for (std::int64_t r = 0; r < s.rows; ++r) {
    for (std::int64_t c = 0; c < s.classes; ++c) {
      const auto i = static_cast<std::size_t>(r * s.classes + c);
      const bool p = predicted(s.probs[i], thresholds[static_cast<std::size_t>(c)]);
      right += p == (s.targets[i] != 0) ? 1.0 : 0.0;
    }
  }
  return right / static_cast<double>(s.probs.size());
}

double fbeta_multi(const MultiLabelScores& s, const std::vector<double>& thresholds, double beta,
                   FbetaAverage average) {
  check_shapes(s, thresholds);
  if (average == FbetaAverage::kSamples) return samples_fbeta(s, thresholds, beta);
  const std::vector<Counts> counts = class_counts(s, thresholds);
  if (average == FbetaAverage::kMicro) {
    Counts all;
    for (const Counts& k : counts) {
      all.tp += k.tp;
      all.truth += k.truth;
      all.pred += k.pred;
    }
    return fbeta_of(all.tp, all.truth, all.pred, beta);
  }
  double sum = 0.0, weights = 0.0;
  for (const Counts& k : counts) {
    const double w = average == FbetaAverage::kWeighted ? k.truth : 1.0;
    sum += w * fbeta_of(k.tp, k.truth, k.pred, beta);
    weights += w;
  }
  return ratio(sum, weights);
}

double average_precision(const MultiLabelScores& s, std::int64_t cls) {
  std::vector<std::pair<float, bool>> rows;
  double positives = 0.0;
  for (std::int64_t r = 0; r < s.rows; ++r) {
    const auto i = static_cast<std::size_t>(r * s.classes + cls);
    rows.emplace_back(s.probs[i], s.targets[i] != 0);
    positives += s.targets[i] != 0 ? 1.0 : 0.0;
  }
  if (positives == 0) return 0.0;
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  double tp = 0.0, fp = 0.0, recall_before = 0.0, ap = 0.0;
  for (std::size_t k = 0; k < rows.size(); ++k) {
    tp += rows[k].second ? 1.0 : 0.0;
    fp += rows[k].second ? 0.0 : 1.0;
    if (k + 1 < rows.size() && rows[k + 1].first == rows[k].first) continue;  // one step per tie
    const double recall = tp / positives;
    ap += (recall - recall_before) * tp / (tp + fp);
    recall_before = recall;
  }
  return ap;
}

MultiLabelReport multi_label_report(const MultiLabelScores& s,
                                    const std::vector<double>& thresholds) {
  check_shapes(s, thresholds);
  MultiLabelReport report;
  report.accuracy_multi = accuracy_multi(s, thresholds);
  report.f1_samples = fbeta_multi(s, thresholds, 1.0, FbetaAverage::kSamples);
  report.f1_macro = fbeta_multi(s, thresholds, 1.0, FbetaAverage::kMacro);
  const std::vector<Counts> counts = class_counts(s, thresholds);
  double ap_sum = 0.0;
  int with_positive = 0;
  for (std::int64_t c = 0; c < s.classes; ++c) {
    const Counts& k = counts[static_cast<std::size_t>(c)];
    ClassScores scores;
    scores.precision = ratio(k.tp, k.pred);
    scores.recall = ratio(k.tp, k.truth);
    scores.f1 = fbeta_of(k.tp, k.truth, k.pred, 1.0);
    scores.average_precision = average_precision(s, c);
    scores.support = static_cast<std::int64_t>(k.truth);
    scores.threshold = thresholds[static_cast<std::size_t>(c)];
    if (scores.support > 0) {
      ap_sum += scores.average_precision;
      ++with_positive;
    }
    report.per_class.push_back(scores);
  }
  report.mean_average_precision = with_positive > 0 ? ap_sum / with_positive : 0.0;
  return report;
}

std::vector<double> tune_thresholds(const MultiLabelScores& s, double fallback) {
  check_shapes(s, std::vector<double>(static_cast<std::size_t>(s.classes), fallback));
  std::vector<double> out;
  for (std::int64_t c = 0; c < s.classes; ++c) out.push_back(tune_one(s, c, fallback));
  return out;
}

std::vector<double> balanced_pos_weight(const std::vector<std::int64_t>& positives,
                                        std::int64_t n) {
  std::vector<double> out;
  for (const std::int64_t p : positives) {
    out.push_back(p > 0 ? static_cast<double>(n - p) / static_cast<double>(p) : 1.0);
  }
  return out;
}

}  // namespace ltfit
