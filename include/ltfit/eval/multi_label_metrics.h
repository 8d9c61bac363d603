// Multi-label figures on host arrays (N images × C classes of sigmoid probabilities and 0/1
// targets), each as its anchor computes it:
//
//   accuracy_multi  fastai's `accuracy_multi`: the fraction of (image, class) pairs where
//                   (p > threshold) equals the target
//   fbeta_multi     fastai's `FBetaMulti` / `F1ScoreMulti` (scikit-learn's fbeta_score on
//                   p >= threshold, as fastai's AccumMetric thresholds): samples, macro, micro
//                   or weighted average; an F of 0/0 is 0 (scikit-learn's zero_division "warn")
//   average_precision  scikit-learn's `average_precision_score` of one class: Σ (Rₖ − Rₖ₋₁)·Pₖ
//                   over the distinct scores, highest first (tied scores are one step); 0 for a
//                   class with no positive (scikit-learn warns and gives 0 too)
//   mean_average_precision  the mean AP over the classes with at least one positive
//
// The predicted label set is fastai's `BCEWithLogitsLossFlat.decodes`: p > threshold.
// Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace ltfit {

// N rows × C classes, row-major.
struct MultiLabelScores {
  std::int64_t rows = 0;
  std::int64_t classes = 0;
  std::vector<float> probs;           // sigmoid probabilities
  std::vector<std::uint8_t> targets;  // 0 / 1
};

struct ClassScores {
  double precision = 0.0;  // at the class's threshold (p >= threshold, as F-beta)
  double recall = 0.0;
  double f1 = 0.0;
  double average_precision = 0.0;  // scikit-learn's average_precision_score of the class
  std::int64_t support = 0;        // positives among the targets
  double threshold = 0.5;
};

struct MultiLabelReport {
  double accuracy_multi = 0.0;
  double f1_samples = 0.0;
  double f1_macro = 0.0;
  double mean_average_precision = 0.0;  // over the classes with a positive (0 when none has)
  std::vector<ClassScores> per_class;
};

enum class FbetaAverage { kSamples, kMacro, kMicro, kWeighted };

// fastai's decodes: the class is predicted when its probability is above its threshold.
inline bool predicted(float prob, double threshold) {
  return static_cast<double>(prob) > threshold;
}

// `thresholds` holds one per class; RuntimeError on a shape mismatch.
double accuracy_multi(const MultiLabelScores& scores, const std::vector<double>& thresholds);
double fbeta_multi(const MultiLabelScores& scores, const std::vector<double>& thresholds,
                   double beta, FbetaAverage average);
double average_precision(const MultiLabelScores& scores, std::int64_t cls);
MultiLabelReport multi_label_report(const MultiLabelScores& scores,
                                    const std::vector<double>& thresholds);

// Per class, the threshold that maximises that class's F1 (predicted: p > threshold) on these
// scores. Candidates: the midpoints between consecutive distinct probabilities of the class, half
// its smallest one (every image predicted) and its largest (none predicted); among equal F1s,
// the one nearest `fallback`. A class with no positive keeps `fallback`.
std::vector<double> tune_thresholds(const MultiLabelScores& scores, double fallback = 0.5);

// torch's BCEWithLogitsLoss pos_weight, "balanced": per class negatives / positives among `n`
// training images (`positives[c]` of them have class c); a class with no positive gets 1.
std::vector<double> balanced_pos_weight(const std::vector<std::int64_t>& positives, std::int64_t n);

}  // namespace ltfit
