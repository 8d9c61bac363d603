// Multi-label figures on host arrays: N images × C classes of sigmoid probabilities and 0/1
// targets. Each figure is computed as its anchor computes it, comparison operator included,
// and tests/eval/multi_label_oracle.sh checks them against the anchors' own code:
//
//   accuracy_multi   fastai's `accuracy_multi(inp, targ, thresh, sigmoid=False)`: the fraction of
//                    (image, class) pairs where `p > threshold` equals the target.
//   fbeta_multi      fastai's `FBetaMulti` / `F1ScoreMulti` (an AccumMetric: it decides
//                    `p >= thresh`, then calls scikit-learn's `fbeta_score` / `f1_score`).
//                    F = (1+β²)·tp / (β²·(tp+fn) + (tp+fp)); a 0/0 is 0, scikit-learn's
//                    zero_division="warn" (a class, or for "samples" an image, with neither a
//                    true nor a predicted label scores 0 and still counts in the average).
//   average_precision  scikit-learn's `average_precision_score` of one class: Σₖ (Rₖ − Rₖ₋₁)·Pₖ
//                    over the distinct scores, highest first, where Pₖ, Rₖ count every image
//                    scoring at least the k-th score (tied scores are one step, as in
//                    `precision_recall_curve`); 0 for a class with no positive (scikit-learn
//                    1.9 also returns 0 then, with a warning).
//
// Thresholds are compared in float32, as torch compares a float32 tensor with a Python float
// (the threshold is rounded to float first): `float(0.3) > 0.3` is false here as in fastai.
// Classes are always scored separately (scikit-learn's multilabel-indicator rules), also when
// C = 1, where scikit-learn would see an [N,1] array as binary and fastai's F1ScoreMulti would
// average the negative label in too. Targets: any nonzero value is a positive. With no images
// (or no classes) every figure is 0. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace ltfit {

// N rows × C classes, row-major: element (r, c) at r * classes + c.
struct MultiLabelScores {
  std::int64_t rows = 0;
  std::int64_t classes = 0;
  std::vector<float> probs;           // [rows * classes] sigmoid probabilities
  std::vector<std::uint8_t> targets;  // [rows * classes] 0 / 1
};

struct ClassScores {
  double precision = 0.0;  // at the class's threshold, decided as F-beta is (p >= threshold)
  double recall = 0.0;
  double f1 = 0.0;
  double average_precision = 0.0;  // scikit-learn's average_precision_score of the class
  std::int64_t support = 0;        // positives among the targets
  double threshold = 0.5;
};

struct MultiLabelReport {
  double accuracy_multi = 0.0;  // fastai's accuracy_multi at the per-class thresholds
  double f1_samples = 0.0;      // F1ScoreMulti(average='samples') == f1_score(average='samples')
  double f1_macro = 0.0;        // F1ScoreMulti(average='macro') == f1_score(average='macro')
  // The mean AP over the classes with at least one positive among the targets (0 when none
  // has one). scikit-learn's average_precision_score(average='macro'), and so fastai's
  // APScoreMulti, would count each class without a positive as an AP of 0 instead.
  double mean_average_precision = 0.0;
  std::vector<ClassScores> per_class;  // [classes]
};

// scikit-learn's `average` of fbeta_score: per image, per class, over all pairs, or per class
// weighted by its support (an unweighted mean when no class has a positive, as scikit-learn).
enum class FbetaAverage { kSamples, kMacro, kMicro, kWeighted };

// The predicted label set's rule, fastai's `BCEWithLogitsLossFlat.decodes` and accuracy_multi:
// the class is predicted when its probability is above its threshold (compared in float32).
inline bool predicted(float prob, double threshold) { return prob > static_cast<float>(threshold); }

// Every function taking `thresholds` wants one per class (a single threshold is passed as C
// copies) and throws RuntimeError when the sizes of probs, targets and thresholds do not match
// rows × classes.
double accuracy_multi(const MultiLabelScores& scores, const std::vector<double>& thresholds);

// `beta` >= 0: 0 gives the precision, +infinity the recall (as scikit-learn); RuntimeError when
// negative or NaN.
double fbeta_multi(const MultiLabelScores& scores, const std::vector<double>& thresholds,
                   double beta, FbetaAverage average);

// Of class `cls` (RuntimeError when out of range, or when a probability of it is NaN).
double average_precision(const MultiLabelScores& scores, std::int64_t cls);

// accuracy_multi, F1 samples and macro, and per class precision, recall, F1, AP, support and
// threshold; the mAP as documented at MultiLabelReport.
MultiLabelReport multi_label_report(const MultiLabelScores& scores,
                                    const std::vector<double>& thresholds);

// Per class, the threshold maximising that class's F1 when predicting `predicted(p, t)` (p > t).
// Every distinct label set a threshold can give is tried: for each distinct probability v of
// the class, "every image with p >= v", through the float midway between v and the next lower
// distinct probability (v itself when no float lies between them), or half the smallest
// probability below it (the next float down when that is not positive). No float threshold
// equals an attained probability except in that adjacent-floats case, so p > t and p >= t
// decide alike. Ties in F1 go to the threshold nearest `fallback`, then to the lower one. A
// class with no positive keeps `fallback`. Deterministic; O(N log N) per class; RuntimeError on
// a NaN probability.
std::vector<double> tune_thresholds(const MultiLabelScores& scores, double fallback = 0.5);

// torch's BCEWithLogitsLoss pos_weight, "balanced": per class negatives / positives among the
// `n` training images, of which `positives[c]` have class c (the ratio torch's docs give: 300
// negatives and 100 positives want 3). A class with no positive, or one every image has (the
// ratio's 0 would drop its positives from the loss), gets 1: no weighting. RuntimeError when a
// count is negative or above n.
std::vector<double> balanced_pos_weight(const std::vector<std::int64_t>& positives, std::int64_t n);

}  // namespace ltfit
