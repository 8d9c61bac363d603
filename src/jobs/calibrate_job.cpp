// `ltfit calibrate`'s work: see calibrate_job.h.
#include "ltfit/jobs/calibrate_job.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>

#include "ltfit/config/config_loader.h"
#include "ltfit/eval/calibration.h"
#include "ltfit/jobs/output_check.h"
#include "ltfit/train/checkpoint.h"
#include "ltfit/util/error.h"
#include "ltfit/util/json.h"

namespace ltfit {

namespace {

std::string calibrated_path(const CalibrateJobRequest& request) {
  return request.out.empty() ? sibling_checkpoint(request.eval.checkpoint, "-calibrated").string()
                             : request.out;
}

// The checkpoint first (exit 4), then where the copy goes (exit 2 for the checkpoint itself,
// exit 5 for a place that cannot be written), before anything is evaluated.
void check_calibrate_files(const CalibrateJobRequest& request, const std::string& target) {
  read_checkpoint_meta(request.eval.checkpoint);
  // The copy keeps the weights only, not the training state (the default is
  // <name>-calibrated.ckpt beside it).
  check_output_not_input(target, "--out",
                         {{"the checkpoint being calibrated", request.eval.checkpoint}});
  check_output_file(
      target, request.out.empty() ? "calibrated checkpoint" : "calibrated checkpoint (--out)");
}

// The figures of the raw logits of `plain` divided by `temperature`, computed as the evaluator
// computes them (so `evaluate` on the calibrated copy reports the same).
CalibrationFigures figures_at(const EvalResult& plain, double temperature) {
  EvalOptions options;
  options.thresholds = plain.thresholds;  // multi-label: sigmoids
  options.temperature = temperature;
  const torch::Tensor probabilities = output_probabilities(plain.logits, options);
  CalibrationFigures f;
  f.temperature = temperature;
  f.nll = batch_loss_sum(plain.logits, plain.targets, options) / static_cast<double>(plain.count);
  f.ece = calibration_table(probabilities, plain.targets, plain.multi_label).ece;
  return f;
}

// The checkpoint's config with eval.temperature = result.after's, multi-label thresholds moved.
Config calibrated_config(const CalibrateJobRequest& request, CalibrateJobResult& result) {
  const std::string& source = request.eval.checkpoint;
  Config config =
      load_config_from_string(read_checkpoint_meta(source).config_yaml, source + " (config)");
  const double from = result.before.temperature, to = result.after.temperature;
  config.eval.temperature = to;
  if (result.evaluation.plain.multi_label) {
    config.eval.threshold = move_threshold(config.eval.threshold, from, to);
    for (double& t : config.eval.thresholds) t = move_threshold(t, from, to);
    result.thresholds = result.evaluation.plain.thresholds;
    for (double& t : result.thresholds) t = move_threshold(t, from, to);
  }
  return config;
}

nlohmann::json figures_json(const CalibrationFigures& f) {
  return {{"temperature", f.temperature}, {"nll", f.nll}, {"ece", f.ece}};
}

}  // namespace

double move_threshold(double t, double from, double to) {
  if (!(t > 0.0 && t < 1.0)) return t;
  const double z = std::log(t / (1.0 - t)) * from / to;
  return 1.0 / (1.0 + std::exp(-z));
}

CalibrateJobResult run_calibrate_job(const CalibrateJobRequest& request) {
  const std::string target = calibrated_path(request);
  check_calibrate_files(request, target);
  CheckpointEvalRequest eval = request.eval;
  eval.tta = false;  // the temperature is fitted to the plain logits
  CalibrateJobResult result;
  result.evaluation = evaluate_checkpoint(eval);
  const EvalResult& plain = result.evaluation.plain;
  result.accuracy = plain.accuracy;
  result.before = {result.evaluation.temperature, plain.loss,
                   calibration_table(plain.probabilities, plain.targets, plain.multi_label).ece};
  const double fitted = fit_temperature(plain.logits, plain.targets, plain.multi_label);
  result.after = figures_at(plain, fitted);
  const Config config = calibrated_config(request, result);
  save_checkpoint_with_config(request.eval.checkpoint, target, config);
  result.calibrated_checkpoint = target;
  spdlog::info(
      "calibrated on {} images: temperature {:.6g} (fitted on the raw logits; was {}), NLL "
      "{:.6f} -> {:.6f}, ECE {:.6f} -> {:.6f}; wrote {}",
      plain.count, fitted, result.before.temperature, result.before.nll, result.after.nll,
      result.before.ece, result.after.ece, target);
  return result;
}

std::string calibrate_json(const CalibrateJobResult& r) {
  const CheckpointEvaluation& e = r.evaluation;
  nlohmann::json j = {
      {"checkpoint", e.checkpoint},
      {"calibrated_checkpoint", r.calibrated_checkpoint},
      {"task", e.plain.multi_label ? "multi_label" : "single_label"},
      {"data", e.data_folder},
      {"split", e.split.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.split)},
      {"images", e.plain.count},
      {"device", e.device},
      {"precision", e.precision},
      {"temperature", r.after.temperature},
      {"accuracy", r.accuracy},
      {"before", figures_json(r.before)},
      {"after", figures_json(r.after)},
  };
  if (e.plain.multi_label) j["thresholds"] = r.thresholds;
  return dump_json(j);
}

std::string calibrate_table(const CalibrateJobResult& r) {
  const CheckpointEvaluation& e = r.evaluation;
  std::string out = fmt::format("{} ({}) on {}, {}\ndata: {}{}, {} images\n\n", e.checkpoint,
                                e.arch, e.device, e.precision, e.data_folder,
                                e.split.empty() ? "" : " (split " + e.split + ")", e.plain.count);
  out += fmt::format("{:<12} {:>12} {:>10} {:>10}\n", "", "temperature", "nll", "ece");
  for (const auto& [name, f] : {std::pair{"before", r.before}, std::pair{"after", r.after}}) {
    out += fmt::format("{:<12} {:>12.6g} {:>10.6f} {:>10.6f}\n", name, f.temperature, f.nll, f.ece);
  }
  out += fmt::format(
      "\ntemperature {:.6g}, fitted on the raw logits (relative to 1, whatever the checkpoint "
      "had); accuracy {:.6f}, unchanged\nwrote {} (eval.temperature {:.6g})\n",
      r.after.temperature, r.accuracy, r.calibrated_checkpoint, r.after.temperature);
  return out;
}

}  // namespace ltfit
