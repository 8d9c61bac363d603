// Multi-label reports of `ltfit evaluate`: see eval_report_multi_label.h.
#include "jobs/eval_report_multi_label.h"

#include <spdlog/fmt/fmt.h>
#include <nlohmann/json.hpp>

#include "jobs/eval_report_calibration.h"
#include "ltfit/eval/multi_label_metrics.h"
#include "ltfit/jobs/eval_report.h"
#include "ltfit/util/json.h"

namespace ltfit {

namespace {

nlohmann::json class_scores_json(const EvalResult& r, const std::vector<std::string>& classes) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t k = 0; k < r.per_class.size() && k < classes.size(); ++k) {
    const ClassScores& c = r.per_class[k];
    out.push_back({{"class", classes[k]},
                   {"precision", c.precision},
                   {"recall", c.recall},
                   {"f1", c.f1},
                   {"average_precision", c.average_precision},
                   {"support", c.support},
                   {"threshold", c.threshold}});
  }
  return out;
}

void add_figures(nlohmann::json& j, const std::string& prefix, const EvalResult& r,
                 const std::vector<std::string>& classes) {
  j[prefix + "loss"] = r.loss;
  j[prefix + "accuracy_multi"] = r.accuracy;
  j[prefix + "f1_samples"] = r.f1_samples;
  j[prefix + "f1_macro"] = r.f1_macro;
  j[prefix + "map"] = r.map;
  j[prefix + "per_class"] = class_scores_json(r, classes);
  add_calibration_json(j, prefix, r);
}

std::string figures_line(const std::string& name, const EvalResult& r) {
  return fmt::format("{:<12} {:>8} {:>10.6f} {:>14.6f} {:>10.6f} {:>10.6f} {:>10.6f} {:>9.2f}\n",
                     name, r.count, r.loss, r.accuracy, r.f1_samples, r.f1_macro, r.map, r.seconds);
}

std::string class_table(const std::string& title, const EvalResult& r,
                        const std::vector<std::string>& classes) {
  std::string out =
      fmt::format("\n{} per class\n{:<12} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10}\n", title,
                  "class", "support", "precision", "recall", "f1", "AP", "threshold");
  for (std::size_t k = 0; k < r.per_class.size() && k < classes.size(); ++k) {
    const ClassScores& c = r.per_class[k];
    out +=
        fmt::format("{:<12} {:>8} {:>10.6f} {:>10.6f} {:>10.6f} {:>10.6f} {:>10.4g}\n", classes[k],
                    c.support, c.precision, c.recall, c.f1, c.average_precision, c.threshold);
  }
  return out;
}

std::string label_names(const torch::Tensor& targets, const std::vector<std::string>& classes) {
  std::string out;
  for (std::int64_t k = 0; k < targets.size(0); ++k) {
    if (targets[k].item<float>() > 0.5F) out += (out.empty() ? "" : " ") + classes[k];
  }
  return out;
}

}  // namespace

std::string predicted_label_set(const torch::Tensor& row, const std::vector<double>& thresholds,
                                const std::vector<std::string>& classes) {
  std::string out;
  for (std::int64_t k = 0; k < row.size(0); ++k) {
    const auto at = static_cast<std::size_t>(k);
    if (at < thresholds.size() && predicted(row[k].item<float>(), thresholds[at])) {
      out += (out.empty() ? "" : " ") + classes[at];
    }
  }
  return out;
}

nlohmann::json multi_label_evaluation_document(const CheckpointEvaluation& e,
                                               const std::string& predictions_path) {
  const EvalResult& r = e.plain;
  nlohmann::json j = {
      {"checkpoint", e.checkpoint},
      {"arch", e.arch},
      {"device", e.device},
      {"precision", e.precision},
      {"task", "multi_label"},
      {"classes", e.classes},
      {"thresholds", r.thresholds},
      {"data", e.data_folder},
      {"split", e.split.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.split)},
      {"images", r.count},
      {"accuracy", r.accuracy},
      {"seconds", r.seconds},
      {"predictions_csv", predictions_path},
      {"temperature", e.temperature},
  };
  add_figures(j, "", r, e.classes);
  if (e.tta) {
    j["tta_mode"] = e.tta->mode;
    j["tta_beta"] = e.tta->beta;
    j["tta_views"] = e.tta->views;
    j["tta_seconds"] = e.tta->seconds;
    j["tta_accuracy"] = e.tta->tta.accuracy;
    add_figures(j, "tta_", e.tta->tta, e.classes);
  }
  return j;
}

std::string multi_label_evaluation_table(const CheckpointEvaluation& e) {
  std::string out =
      fmt::format("{} ({}) on {}, {}\ndata: {}{}\n\n", e.checkpoint, e.arch, e.device, e.precision,
                  e.data_folder, e.split.empty() ? "" : " (split " + e.split + ")");
  out +=
      fmt::format("{:<12} {:>8} {:>10} {:>14} {:>10} {:>10} {:>10} {:>9}\n", "evaluation", "images",
                  "loss", "accuracy_multi", "f1_samples", "f1_macro", "mAP", "seconds");
  out += figures_line("plain", e.plain);
  if (e.tta) out += figures_line("tta " + e.tta->mode, e.tta->tta);
  out += class_table("plain", e.plain, e.classes);
  if (e.tta) out += class_table("TTA", e.tta->tta, e.classes);
  return out + calibration_section(e);
}

std::string multi_label_predictions_csv(const CheckpointEvaluation& e) {
  std::string out = "path,labels,predicted";
  for (const auto& c : e.classes) out += "," + csv_field("prob_" + c);
  out += "\n";
  const EvalResult& reported = e.tta ? e.tta->tta : e.plain;
  for (std::int64_t i = 0; i < reported.count; ++i) {
    const Sample& s = e.samples[static_cast<std::size_t>(reported.indices[i].item<std::int64_t>())];
    const torch::Tensor row = reported.probabilities[i];
    out += csv_field(s.path) + "," + csv_field(label_names(reported.targets[i], e.classes)) + "," +
           csv_field(predicted_label_set(row, reported.thresholds, e.classes));
    for (std::int64_t k = 0; k < row.size(0); ++k)
      out += fmt::format(",{:.6g}", row[k].item<float>());
    out += "\n";
  }
  return out;
}

std::string evaluation_json(const CheckpointEvaluation& e, const std::string& predictions_path,
                            const EvaluateJobResult& job) {
  // The document itself, not its text parsed back: that would escape its strings twice.
  nlohmann::json j = evaluation_document(e, predictions_path);
  if (!job.reliability_png.empty()) j["reliability_png"] = job.reliability_png;
  if (!job.tuned) return dump_json(j);
  j["tuned_checkpoint"] = job.tuned_checkpoint;
  j["tuned_thresholds"] = job.tuned_thresholds;
  add_figures(j, "tuned_", *job.tuned, e.classes);
  return dump_json(j);
}

std::string tuned_thresholds_table(const EvaluateJobResult& job) {
  if (!job.tuned) return "";
  const CheckpointEvaluation& e = job.evaluation;
  const EvalResult& before = e.tta ? e.tta->tta : e.plain;
  std::string out =
      fmt::format("\ntuned thresholds (F1 per class), written to {}\n", job.tuned_checkpoint);
  out +=
      fmt::format("{:<12} {:>10} {:>10} {:>10} {:>10}\n", "class", "threshold", "was", "f1", "was");
  for (std::size_t k = 0; k < e.classes.size() && k < job.tuned->per_class.size(); ++k) {
    out += fmt::format("{:<12} {:>10.4g} {:>10.4g} {:>10.6f} {:>10.6f}\n", e.classes[k],
                       job.tuned_thresholds[k], before.per_class[k].threshold,
                       job.tuned->per_class[k].f1, before.per_class[k].f1);
  }
  out += fmt::format(
      "f1_macro {:.6f} (was {:.6f}), f1_samples {:.6f} (was {:.6f}), accuracy_multi "
      "{:.6f} (was {:.6f})\n",
      job.tuned->f1_macro, before.f1_macro, job.tuned->f1_samples, before.f1_samples,
      job.tuned->accuracy, before.accuracy);
  return out;
}

}  // namespace ltfit
