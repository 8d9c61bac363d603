// Calibration figures in `ltfit evaluate`'s reports: see eval_report_calibration.h.
#include "jobs/eval_report_calibration.h"

#include <spdlog/fmt/fmt.h>
#include <nlohmann/json.hpp>

#include "ltfit/jobs/eval_report.h"
#include "ltfit/pictures/reliability_plot.h"

namespace ltfit {

namespace {

std::string calibration_row(const std::string& name, const EvalResult& r) {
  return fmt::format("{:<12} {:>10.6f} {:>10.6f}\n", name, r.loss, calibration_of(r).ece);
}

// "plain, 8 images" or "TTA v1, 8 images", and the reported result.
std::pair<std::string, const EvalResult*> reported_of(const CheckpointEvaluation& e) {
  const EvalResult& r = e.tta ? e.tta->tta : e.plain;
  return {(e.tta ? "TTA " + e.tta->mode : std::string("plain")) + ", " + std::to_string(r.count) +
              " images",
          &r};
}

}  // namespace

CalibrationTable calibration_of(const EvalResult& result) {
  return calibration_table(result.probabilities, result.targets, result.multi_label);
}

void add_calibration_json(nlohmann::json& j, const std::string& prefix, const EvalResult& result) {
  const CalibrationTable table = calibration_of(result);
  nlohmann::json bins = nlohmann::json::array();
  for (const CalibrationBin& b : table.bins) {
    bins.push_back({{"lower", b.lower},
                    {"upper", b.upper},
                    {"count", b.count},
                    {"confidence", b.confidence},
                    {"accuracy", b.accuracy}});
  }
  j[prefix + "ece"] = table.ece;
  j[prefix + "nll"] = result.loss;
  j[prefix + "reliability"] = std::move(bins);
}

std::string calibration_section(const CheckpointEvaluation& e) {
  const bool multi = e.plain.multi_label;
  std::string out = fmt::format(
      "\ncalibration (temperature {:.6g}, ECE over {} bins of {})\n{:<12} {:>10} {:>10}\n",
      e.temperature, kCalibrationBins,
      multi ? "every image and class's probability" : "the top-class probability", "evaluation",
      "nll", "ece");
  out += calibration_row("plain", e.plain);
  if (e.tta) out += calibration_row("tta " + e.tta->mode, e.tta->tta);
  const auto [name, reported] = reported_of(e);
  out += fmt::format("\nreliability ({}; empty bins left out)\n{:<14} {:>8} {:>10} {:>10} {:>10}\n",
                     name, "bin", "count", "confidence", multi ? "positive" : "accuracy", "gap");
  for (const CalibrationBin& b : calibration_of(*reported).bins) {
    if (b.count == 0) continue;
    out += fmt::format("{:<14} {:>8} {:>10.4f} {:>10.4f} {:>+10.4f}\n",
                       fmt::format("({:.3f},{:.3f}]", b.lower, b.upper), b.count, b.confidence,
                       b.accuracy, b.accuracy - b.confidence);
  }
  return out;
}

EncodedPng reliability_png(const CheckpointEvaluation& e) {
  const auto [name, reported] = reported_of(e);
  const CalibrationTable table = calibration_of(*reported);
  std::vector<ReliabilityBin> bins;
  for (const CalibrationBin& b : table.bins) {
    bins.push_back({b.lower, b.upper, b.count, b.confidence, b.accuracy});
  }
  ReliabilityText text;
  text.title = fmt::format("reliability: {}, ECE {:.4f}, NLL {:.4f}, temperature {:.4g}", name,
                           table.ece, reported->loss, e.temperature);
  if (reported->multi_label) {
    text.x_label = "probability (every image and class)";
    text.y_label = "share of labels present";
    text.bar_label = "share present";
  } else {
    text.x_label = "confidence (top-class probability)";
  }
  return encode_reliability_diagram(bins, text);
}

}  // namespace ltfit
