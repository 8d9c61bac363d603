// Calibration of predicted probabilities: the expected calibration error (ECE) with its
// reliability table, the negative log-likelihood (NLL), and temperature scaling (Guo et al.
// 2017, "On Calibration of Modern Neural Networks": one scalar T > 0 dividing the logits,
// fitted to minimise the NLL on held-out data).
//
// Single-label: the confidence of an image is its top-class probability, and the prediction is
// correct when that class is the label (torchmetrics' MulticlassCalibrationError, Guo's
// _ECELoss). Multi-label: every (image, class) sigmoid probability is one binary prediction;
// its confidence is the probability itself and its "accuracy" whether the label is present, so
// a bin's accuracy is the share of present labels among its probabilities (torchmetrics'
// BinaryCalibrationError over the flattened probabilities and targets).
//
// ECE = sum over bins b of |accuracy(b) - confidence(b)| * n_b / N, with 15 equal-width bins.
// Binning follows Guo's reference code (github.com/gpleiss/temperature_scaling, _ECELoss): the
// edges are float32 torch.linspace(0, 1, 16), and bin k holds the confidences c with
// edge[k] < c <= edge[k+1] (a confidence on an edge goes to the bin below it: 1/15 to bin 0,
// 1.0 to bin 14). A confidence of exactly 0, which Guo's code leaves out of every bin (while
// still counting it in N) and which a top-class probability never is, joins bin 0 here, so a
// sigmoid that underflowed to 0 still counts. Comparisons are made in float32, as Guo's; sums in
// float64. Pure functions of their tensors; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

namespace ltfit {

constexpr int kCalibrationBins = 15;  // Guo et al.'s and torchmetrics' default n_bins

// One bin of the reliability table.
struct CalibrationBin {
  double lower = 0.0;  // the bin's edges (k / bins, (k + 1) / bins)
  double upper = 0.0;
  std::int64_t count = 0;   // predictions whose confidence falls in it
  double confidence = 0.0;  // their mean confidence (0 when empty)
  double accuracy = 0.0;    // the share of them that is correct (0 when empty)
};

struct CalibrationTable {
  std::vector<CalibrationBin> bins;  // `bins` of them, lowest first
  std::int64_t predictions = 0;      // N: images, or (multi-label) images x classes
  double ece = 0.0;                  // expected calibration error, in [0, 1]
};

// The reliability table and ECE of `probabilities` (float [N,C], softmax rows or, multi-label,
// sigmoids) against `targets` (int64 [N] class indices, or multi-label float [N,C] multi-hot).
// An empty input gives an empty table (ECE 0).
CalibrationTable calibration_table(const torch::Tensor& probabilities, const torch::Tensor& targets,
                                   bool multi_label, int bins = kCalibrationBins);

// The mean NLL of softmax(logits / temperature) at the targets (cross-entropy), or, multi-label,
// the mean binary cross-entropy of sigmoid(logits / temperature) over images and classes;
// computed in float64. `logits`: float [N,C]; targets as calibration_table's.
double mean_nll(const torch::Tensor& logits, const torch::Tensor& targets, double temperature,
                bool multi_label);

// The temperature T > 0 that minimises mean_nll(logits, targets, T, multi_label): torch's LBFGS
// (lr 1, at most 100 iterations, strong Wolfe line search) over log T from T = 1, in float64, so
// that T stays positive. The NLL is a convex function of 1/T, so it has one minimum; a set whose
// logits carry no information has it at T -> infinity, hence the result is bounded to
// [kMinTemperature, kMaxTemperature] (a warning is logged when a bound is reached).
// RuntimeError when the logits are not finite or the set is empty.
double fit_temperature(const torch::Tensor& logits, const torch::Tensor& targets, bool multi_label);

constexpr double kMinTemperature = 1e-3;
constexpr double kMaxTemperature = 1e3;

}  // namespace ltfit
