// ECE, NLL and temperature scaling: see calibration.h.
#include "ltfit/eval/calibration.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include <spdlog/spdlog.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/lbfgs.h>

#include "ltfit/util/error.h"

namespace ltfit {

namespace {

// Confidence (float32 [M]) and correctness (float64 0/1 [M]) of every prediction.
std::pair<torch::Tensor, torch::Tensor> calibration_predictions(const torch::Tensor& probabilities,
                                                                const torch::Tensor& targets,
                                                                bool multi_label) {
  const torch::Tensor p = probabilities.to(torch::kCPU, torch::kFloat32);
  if (multi_label) {
    return {p.flatten(), targets.to(torch::kCPU).gt(0.5).flatten().to(torch::kFloat64)};
  }
  const auto [confidence, predicted] = p.max(1);
  return {confidence, predicted.eq(targets.to(torch::kCPU)).to(torch::kFloat64)};
}

// The loss of logits / exp(log_t) (log_t a float64 scalar), as mean_nll.
torch::Tensor scaled_nll(const torch::Tensor& logits, const torch::Tensor& targets,
                         const torch::Tensor& temperature, bool multi_label) {
  namespace F = torch::nn::functional;
  const torch::Tensor scaled = logits / temperature;
  if (multi_label) return F::binary_cross_entropy_with_logits(scaled, targets);
  return F::cross_entropy(scaled, targets);
}

}  // namespace

CalibrationTable calibration_table(const torch::Tensor& probabilities, const torch::Tensor& targets,
                                   bool multi_label, int bins) {
  LTFIT_CHECK(bins > 0, "calibration needs at least one bin");
  CalibrationTable table;
  for (int k = 0; k < bins; ++k) {
    table.bins.push_back({static_cast<double>(k) / bins, static_cast<double>(k + 1) / bins});
  }
  if (probabilities.numel() == 0) return table;
  const auto [confidence, correct] = calibration_predictions(probabilities, targets, multi_label);
  table.predictions = confidence.numel();
  // Guo's edges and comparisons, in float32: bucketize(right=false) gives the k with
  // edge[k-1] < c <= edge[k], so bin k - 1; c == 0 (k == 0) joins bin 0 (see the header).
  const torch::Tensor edges = torch::linspace(0.0, 1.0, bins + 1, torch::kFloat32);
  const torch::Tensor bin = (torch::bucketize(confidence, edges) - 1).clamp(0, bins - 1);
  const torch::Tensor counts = torch::bincount(bin, {}, bins).to(torch::kFloat64);
  const torch::Tensor conf_sums = torch::bincount(bin, confidence.to(torch::kFloat64), bins);
  const torch::Tensor correct_sums = torch::bincount(bin, correct, bins);
  double gap_sum = 0.0;
  for (int k = 0; k < bins; ++k) {
    CalibrationBin& b = table.bins[static_cast<std::size_t>(k)];
    b.count = static_cast<std::int64_t>(counts[k].item<double>() + 0.5);
    if (b.count == 0) continue;
    b.confidence = conf_sums[k].item<double>() / static_cast<double>(b.count);
    b.accuracy = correct_sums[k].item<double>() / static_cast<double>(b.count);
    gap_sum += std::abs(correct_sums[k].item<double>() - conf_sums[k].item<double>());
  }
  table.ece = gap_sum / static_cast<double>(table.predictions);
  return table;
}

double mean_nll(const torch::Tensor& logits, const torch::Tensor& targets, double temperature,
                bool multi_label) {
  LTFIT_CHECK(temperature > 0 && std::isfinite(temperature), "the temperature must be > 0");
  torch::NoGradGuard no_grad;
  const torch::Tensor z = logits.to(torch::kCPU, torch::kFloat64);
  const torch::Tensor y =
      multi_label ? targets.to(torch::kCPU, torch::kFloat64) : targets.to(torch::kCPU);
  return scaled_nll(z, y, torch::tensor(temperature, torch::kFloat64), multi_label).item<double>();
}

double fit_temperature(const torch::Tensor& logits, const torch::Tensor& targets,
                       bool multi_label) {
  if (logits.numel() == 0) throw RuntimeError("temperature scaling needs at least one image");
  const torch::Tensor z = logits.detach().to(torch::kCPU, torch::kFloat64);
  if (!torch::isfinite(z).all().item<bool>()) {
    throw RuntimeError("temperature scaling: the logits are not all finite",
                       "evaluate in fp32 (--precision fp32)");
  }
  const torch::Tensor y = multi_label ? targets.detach().to(torch::kCPU, torch::kFloat64)
                                      : targets.detach().to(torch::kCPU);
  // log T, so that T stays positive; clamped inside the bounds, where the objective is exactly
  // the NLL, so LBFGS never meets T = inf (whose gradient is 0 * inf) on a flat objective.
  const double lo = std::log(kMinTemperature), hi = std::log(kMaxTemperature);
  torch::Tensor log_t = torch::zeros({}, torch::kFloat64).requires_grad_(true);
  torch::optim::LBFGS optimizer(
      {log_t}, torch::optim::LBFGSOptions(1.0).max_iter(100).line_search_fn("strong_wolfe"));
  const auto closure = [&] {
    optimizer.zero_grad();
    torch::Tensor loss = scaled_nll(z, y, log_t.clamp(lo, hi).exp(), multi_label);
    loss.backward();
    return loss;
  };
  optimizer.step(closure);
  const double fitted = log_t.item<double>();
  if (!std::isfinite(fitted)) throw RuntimeError("temperature scaling did not converge");
  if (fitted <= lo || fitted >= hi) {
    const bool high = fitted >= hi;
    spdlog::warn("temperature scaling: the NLL keeps falling towards T = {} (the bound): {}",
                 high ? kMaxTemperature : kMinTemperature,
                 high ? "the logits carry little information about these labels"
                      : "the logits separate these labels and would be sharpened without end");
    return high ? kMaxTemperature : kMinTemperature;
  }
  return std::exp(fitted);
}

}  // namespace ltfit
