// Multi-label figures: see multi_label_metrics.h. Counts are kept as integers and each ratio is
// formed in double in the order scikit-learn forms it, so the figures match to rounding.
#include "ltfit/eval/multi_label_metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "ltfit/util/error.h"

namespace ltfit {

namespace {

std::string shape_text(const MultiLabelScores& s) {
  return std::to_string(s.rows) + " images x " + std::to_string(s.classes) + " classes";
}

void check_scores(const MultiLabelScores& s) {
  const bool sizes_ok = s.rows >= 0 && s.classes >= 0 &&
                        s.probs.size() == static_cast<std::size_t>(s.rows * s.classes) &&
                        s.targets.size() == s.probs.size();
  if (!sizes_ok) {
    throw RuntimeError("multi-label scores of " + shape_text(s) + ": expected " +
                       std::to_string(s.rows * s.classes) + " probabilities and targets, got " +
                       std::to_string(s.probs.size()) + " and " + std::to_string(s.targets.size()));
  }
}

void check_scores(const MultiLabelScores& s, const std::vector<double>& thresholds) {
  check_scores(s);
  if (thresholds.size() != static_cast<std::size_t>(s.classes)) {
    throw RuntimeError("multi-label scores of " + shape_text(s) + ": expected one threshold per " +
                       "class, got " + std::to_string(thresholds.size()));
  }
}

std::size_t at(const MultiLabelScores& s, std::int64_t r, std::int64_t c) {
  return static_cast<std::size_t>(r * s.classes + c);
}

// fastai's AccumMetric decides `pred >= thresh` (torch: the threshold rounded to float32).
bool decided(float prob, double threshold) { return prob >= static_cast<float>(threshold); }

struct Counts {
  std::int64_t tp = 0;     // true and decided
  std::int64_t truth = 0;  // true: tp + fn
  std::int64_t pred = 0;   // decided: tp + fp

  void add(bool y, bool p) {
    tp += (y && p) ? 1 : 0;
    truth += y ? 1 : 0;
    pred += p ? 1 : 0;
  }
};

// scikit-learn's _prf_divide with zero_division "warn": 0/0 is 0.
double ratio(double numerator, double denominator) {
  return denominator == 0.0 ? 0.0 : numerator / denominator;
}

// scikit-learn's precision_recall_fscore_support: (1+β²)·tp / (β²·true + pred).
double fbeta_of(const Counts& k, double beta) {
  if (std::isinf(beta)) return ratio(static_cast<double>(k.tp), static_cast<double>(k.truth));
  const double beta2 = beta * beta;
  return ratio((1.0 + beta2) * static_cast<double>(k.tp),
               beta2 * static_cast<double>(k.truth) + static_cast<double>(k.pred));
}

// Per class (by_row false) or per image (true), decided p >= threshold.
std::vector<Counts> decided_counts(const MultiLabelScores& s, const std::vector<double>& t,
                                   bool by_row) {
  std::vector<Counts> out(static_cast<std::size_t>(by_row ? s.rows : s.classes));
  for (std::int64_t r = 0; r < s.rows; ++r) {
    for (std::int64_t c = 0; c < s.classes; ++c) {
      const std::size_t i = at(s, r, c);
      out[static_cast<std::size_t>(by_row ? r : c)].add(
          s.targets[i] != 0, decided(s.probs[i], t[static_cast<std::size_t>(c)]));
    }
  }
  return out;
}

double mean(const std::vector<double>& values) {
  if (values.empty()) return 0.0;
  return std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
}

// (probability, target) of one class, highest probability first; RuntimeError on a NaN.
std::vector<std::pair<float, bool>> ranked_column(const MultiLabelScores& s, std::int64_t c) {
  std::vector<std::pair<float, bool>> column;
  column.reserve(static_cast<std::size_t>(s.rows));
  for (std::int64_t r = 0; r < s.rows; ++r) {
    const std::size_t i = at(s, r, c);
    if (std::isnan(s.probs[i])) {
      throw RuntimeError("multi-label scores: the probability of image " + std::to_string(r) +
                         ", class " + std::to_string(c) + " is NaN");
    }
    column.emplace_back(s.probs[i], s.targets[i] != 0);
  }
  std::sort(column.begin(), column.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  return column;
}

// One step of a ranked column: every image scoring at least `score`, and its counts.
struct Step {
  float score = 0.0F;
  std::int64_t tp = 0;  // positives among them
  std::int64_t fp = 0;  // negatives among them
};

// scikit-learn's _binary_clf_curve: one step per distinct score, highest first.
std::vector<Step> steps_of(const std::vector<std::pair<float, bool>>& ranked) {
  std::vector<Step> steps;
  Step step;
  for (std::size_t k = 0; k < ranked.size(); ++k) {
    step.score = ranked[k].first;
    step.tp += ranked[k].second ? 1 : 0;
    step.fp += ranked[k].second ? 0 : 1;
    if (k + 1 == ranked.size() || ranked[k + 1].first != ranked[k].first) steps.push_back(step);
  }
  return steps;
}

// A float t with lower <= t < upper such that p > t selects exactly p >= upper among floats.
float threshold_below(float upper, float lower) {
  const auto mid =
      static_cast<float>((static_cast<double>(lower) + static_cast<double>(upper)) / 2.0);
  return (mid > lower && mid < upper) ? mid : lower;
}

// A float t < smallest: half of it when positive, else the next float down.
float threshold_under_all(float smallest) {
  return smallest > 0.0F ? smallest / 2.0F
                         : std::nextafter(smallest, -std::numeric_limits<float>::infinity());
}

double tune_class(const MultiLabelScores& s, std::int64_t c, double fallback) {
  const std::vector<Step> steps = steps_of(ranked_column(s, c));
  if (steps.empty() || steps.back().tp == 0) return fallback;
  const auto positives = static_cast<double>(steps.back().tp);
  double best = fallback;
  double best_f1 = -1.0;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const Step& step = steps[k];
    const double f1 = ratio(2.0 * static_cast<double>(step.tp),
                            positives + static_cast<double>(step.tp + step.fp));
    const float t = k + 1 < steps.size() ? threshold_below(step.score, steps[k + 1].score)
                                         : threshold_under_all(step.score);
    const double distance = std::abs(static_cast<double>(t) - fallback);
    const double best_distance = std::abs(best - fallback);
    // Thresholds fall as k grows: on an equal distance the one found later is the lower.
    if (f1 > best_f1 || (f1 == best_f1 && distance <= best_distance)) {
      best = t;
      best_f1 = f1;
    }
  }
  return best;
}

}  // namespace

double accuracy_multi(const MultiLabelScores& s, const std::vector<double>& thresholds) {
  check_scores(s, thresholds);
  if (s.probs.empty()) return 0.0;
  std::int64_t right = 0;
  for (std::int64_t r = 0; r < s.rows; ++r) {
    for (std::int64_t c = 0; c < s.classes; ++c) {
      const std::size_t i = at(s, r, c);
      const bool p = predicted(s.probs[i], thresholds[static_cast<std::size_t>(c)]);
      right += p == (s.targets[i] != 0) ? 1 : 0;
    }
  }
  return static_cast<double>(right) / static_cast<double>(s.probs.size());
}

double fbeta_multi(const MultiLabelScores& s, const std::vector<double>& thresholds, double beta,
                   FbetaAverage average) {
  check_scores(s, thresholds);
  if (!(beta >= 0.0)) {
    throw RuntimeError("fbeta_multi: beta must be >= 0, got " + std::to_string(beta));
  }
  const std::vector<Counts> counts =
      decided_counts(s, thresholds, average == FbetaAverage::kSamples);
  if (average == FbetaAverage::kMicro) {
    Counts all;
    for (const Counts& k : counts) {
      all.tp += k.tp;
      all.truth += k.truth;
      all.pred += k.pred;
    }
    return fbeta_of(all, beta);
  }
  std::vector<double> f;
  for (const Counts& k : counts) f.push_back(fbeta_of(k, beta));
  std::int64_t support = 0;
  for (const Counts& k : counts) support += k.truth;
  if (average != FbetaAverage::kWeighted || support == 0) return mean(f);
  double sum = 0.0;  // numpy.average: Σ w·f / Σ w
  for (std::size_t c = 0; c < f.size(); ++c) sum += f[c] * static_cast<double>(counts[c].truth);
  return sum / static_cast<double>(support);
}

double average_precision(const MultiLabelScores& s, std::int64_t cls) {
  check_scores(s);
  if (cls < 0 || cls >= s.classes) {
    throw RuntimeError("average_precision: class " + std::to_string(cls) + " of " + shape_text(s));
  }
  const std::vector<Step> steps = steps_of(ranked_column(s, cls));
  if (steps.empty() || steps.back().tp == 0) return 0.0;
  const auto positives = static_cast<double>(steps.back().tp);
  double ap = 0.0;
  double recall_before = 0.0;
  for (const Step& step : steps) {
    const double recall = static_cast<double>(step.tp) / positives;
    const double precision = static_cast<double>(step.tp) / static_cast<double>(step.tp + step.fp);
    ap += (recall - recall_before) * precision;
    recall_before = recall;
  }
  return std::max(0.0, ap);
}

MultiLabelReport multi_label_report(const MultiLabelScores& s,
                                    const std::vector<double>& thresholds) {
  check_scores(s, thresholds);
  MultiLabelReport report;
  report.accuracy_multi = accuracy_multi(s, thresholds);
  report.f1_samples = fbeta_multi(s, thresholds, 1.0, FbetaAverage::kSamples);
  report.f1_macro = fbeta_multi(s, thresholds, 1.0, FbetaAverage::kMacro);
  const std::vector<Counts> counts = decided_counts(s, thresholds, /*by_row=*/false);
  std::vector<double> aps;
  for (std::int64_t c = 0; c < s.classes; ++c) {
    const Counts& k = counts[static_cast<std::size_t>(c)];
    ClassScores scores;
    scores.precision = ratio(static_cast<double>(k.tp), static_cast<double>(k.pred));
    scores.recall = ratio(static_cast<double>(k.tp), static_cast<double>(k.truth));
    scores.f1 = fbeta_of(k, 1.0);
    scores.average_precision = average_precision(s, c);
    scores.support = k.truth;
    scores.threshold = thresholds[static_cast<std::size_t>(c)];
    if (scores.support > 0) aps.push_back(scores.average_precision);
    report.per_class.push_back(scores);
  }
  report.mean_average_precision = mean(aps);
  return report;
}

std::vector<double> tune_thresholds(const MultiLabelScores& s, double fallback) {
  check_scores(s);
  std::vector<double> out;
  for (std::int64_t c = 0; c < s.classes; ++c) out.push_back(tune_class(s, c, fallback));
  return out;
}

std::vector<double> balanced_pos_weight(const std::vector<std::int64_t>& positives,
                                        std::int64_t n) {
  std::vector<double> out;
  for (std::size_t c = 0; c < positives.size(); ++c) {
    const std::int64_t p = positives[c];
    if (p < 0 || p > n) {
      throw RuntimeError("balanced pos_weight: class " + std::to_string(c) + " has " +
                         std::to_string(p) + " positives among " + std::to_string(n) + " images");
    }
    // No positive, or no negative (the ratio would be 0 and the class's positives never count):
    // no weighting.
    out.push_back(p > 0 && p < n ? static_cast<double>(n - p) / static_cast<double>(p) : 1.0);
  }
  return out;
}

}  // namespace ltfit
