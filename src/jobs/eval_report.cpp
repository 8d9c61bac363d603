// Reports of `ltfit evaluate`: see eval_report.h.
#include "ltfit/jobs/eval_report.h"

#include <spdlog/fmt/fmt.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "jobs/eval_report_calibration.h"
#include "jobs/eval_report_multi_label.h"
#include "ltfit/data/csv_table.h"
#include "ltfit/eval/metrics.h"
#include "ltfit/pictures/confusion_plot.h"
#include "ltfit/util/json.h"
#include "ltfit/util/utf8.h"

namespace ltfit {

namespace {

nlohmann::json per_class_json(const EvalResult& r, const std::vector<std::string>& classes) {
  const std::vector<ClassMetrics> metrics = per_class_metrics(confusion_rows(r.confusion));
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t k = 0; k < metrics.size(); ++k) {
    out.push_back({{"class", classes[k]},
                   {"precision", metrics[k].precision},
                   {"recall", metrics[k].recall},
                   {"f1", metrics[k].f1},
                   {"support", metrics[k].support}});
  }
  return out;
}

// One evaluation's row of the figures table; with top-k on, its top-k accuracy last.
std::string figures_row(const std::string& name, const EvalResult& r) {
  std::string row = fmt::format("{:<12} {:>8} {:>10.6f} {:>10.6f} {:>10.6f} {:>9.2f}", name,
                                r.count, r.loss, r.accuracy, 1.0 - r.accuracy, r.seconds);
  if (r.top_k > 0) row += fmt::format(" {:>10.6f}", r.top_k_accuracy);
  return row + "\n";
}

std::string confusion_table(const std::string& title, const EvalResult& r,
                            const std::vector<std::string>& classes) {
  std::string out = "\n" + title + " confusion matrix (rows: actual, columns: predicted)\n";
  out += fmt::format("{:<12}", "");
  for (const auto& c : classes) out += fmt::format(" {:>8}", c);
  out += "\n";
  const ConfusionRows rows = confusion_rows(r.confusion);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    out += fmt::format("{:<12}", classes[i]);
    for (const std::int64_t v : rows[i]) out += fmt::format(" {:>8}", v);
    out += "\n";
  }
  return out;
}

std::string per_class_table(const std::string& title, const EvalResult& r,
                            const std::vector<std::string>& classes) {
  std::string out = fmt::format("\n{} per class\n{:<12} {:>8} {:>10} {:>10} {:>10}\n", title,
                                "class", "support", "precision", "recall", "f1");
  const std::vector<ClassMetrics> metrics = per_class_metrics(confusion_rows(r.confusion));
  for (std::size_t k = 0; k < metrics.size(); ++k) {
    out += fmt::format("{:<12} {:>8} {:>10.6f} {:>10.6f} {:>10.6f}\n", classes[k],
                       metrics[k].support, metrics[k].precision, metrics[k].recall, metrics[k].f1);
  }
  return out;
}

// -ln p[label] of one row of probabilities (p clamped to >= 1e-12, as the evaluator's nll_sum).
double sample_loss(const torch::Tensor& row, std::int64_t label) {
  return -std::log(std::max(static_cast<double>(row[label].item<float>()), 1e-12));
}

std::string probability_cells(const torch::Tensor& row) {
  std::string out;
  for (std::int64_t k = 0; k < row.size(0); ++k)
    out += fmt::format(",{:.6g}", row[k].item<float>());
  return out;
}

}  // namespace

std::string csv_field(const std::string& raw) { return csv_quote(escape_utf8(raw)); }

std::string evaluation_json(const CheckpointEvaluation& e, const std::string& predictions_path) {
  return dump_json(evaluation_document(e, predictions_path));
}

nlohmann::json evaluation_document(const CheckpointEvaluation& e,
                                   const std::string& predictions_path) {
  if (e.plain.multi_label) return multi_label_evaluation_document(e, predictions_path);
  const EvalResult& r = e.plain;
  nlohmann::json j = {
      {"checkpoint", e.checkpoint},
      {"arch", e.arch},
      {"device", e.device},
      {"precision", e.precision},
      {"classes", e.classes},
      {"data", e.data_folder},
      {"split", e.split.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.split)},
      {"images", r.count},
      {"loss", r.loss},
      {"accuracy", r.accuracy},
      {"error_rate", 1.0 - r.accuracy},
      {"seconds", r.seconds},
      {"confusion", confusion_rows(r.confusion)},
      {"per_class", per_class_json(r, e.classes)},
      {"predictions_csv", predictions_path},
      {"temperature", e.temperature},
  };
  if (r.top_k > 0) {  // eval.top_k (auto: 5 above 5 classes)
    j["top_k"] = r.top_k;
    j["top_k_accuracy"] = r.top_k_accuracy;
  }
  add_calibration_json(j, "", r);
  if (e.tta) {
    const EvalResult& t = e.tta->tta;
    add_calibration_json(j, "tta_", t);
    j["tta_mode"] = e.tta->mode;
    j["tta_beta"] = e.tta->beta;
    j["tta_views"] = e.tta->views;
    j["tta_loss"] = t.loss;
    j["tta_accuracy"] = t.accuracy;
    j["tta_error_rate"] = 1.0 - t.accuracy;
    if (t.top_k > 0) j["tta_top_k_accuracy"] = t.top_k_accuracy;
    j["tta_seconds"] = e.tta->seconds;
    j["tta_confusion"] = confusion_rows(t.confusion);
    j["tta_per_class"] = per_class_json(t, e.classes);
  }
  return j;
}

std::string evaluation_table(const CheckpointEvaluation& e) {
  if (e.plain.multi_label) return multi_label_evaluation_table(e);
  std::string out =
      fmt::format("{} ({}) on {}, {}\ndata: {}{}\n\n", e.checkpoint, e.arch, e.device, e.precision,
                  e.data_folder, e.split.empty() ? "" : " (split " + e.split + ")");
  out += fmt::format("{:<12} {:>8} {:>10} {:>10} {:>10} {:>9}", "evaluation", "images", "loss",
                     "accuracy", "error", "seconds");
  if (e.plain.top_k > 0) out += fmt::format(" {:>10}", "top-" + std::to_string(e.plain.top_k));
  out += "\n";
  out += figures_row("plain", e.plain);
  if (e.tta) out += figures_row("tta " + e.tta->mode, e.tta->tta);
  out += confusion_table("plain", e.plain, e.classes);
  out += per_class_table("plain", e.plain, e.classes);
  if (e.tta) {
    out += confusion_table("TTA", e.tta->tta, e.classes);
    out += per_class_table("TTA", e.tta->tta, e.classes);
  }
  return out + calibration_section(e);
}

std::string predictions_csv(const CheckpointEvaluation& e) {
  if (e.plain.multi_label) return multi_label_predictions_csv(e);
  std::string out = "path,label,predicted,loss";
  for (const auto& c : e.classes) out += "," + csv_field("prob_" + c);
  if (e.tta) {
    for (const auto& c : e.classes) out += "," + csv_field("plain_prob_" + c);
  }
  out += "\n";
  const EvalResult& reported = e.tta ? e.tta->tta : e.plain;
  const torch::Tensor predicted = reported.probabilities.argmax(1);
  for (std::int64_t i = 0; i < reported.count; ++i) {
    const Sample& s = e.samples[static_cast<std::size_t>(reported.indices[i].item<std::int64_t>())];
    out += csv_field(s.path) + "," + csv_field(e.classes[static_cast<std::size_t>(s.label)]) + "," +
           csv_field(e.classes[static_cast<std::size_t>(predicted[i].item<std::int64_t>())]);
    out += fmt::format(",{:.6g}", sample_loss(reported.probabilities[i], s.label));
    out += probability_cells(reported.probabilities[i]);
    if (e.tta) out += probability_cells(e.plain.probabilities[i]);
    out += "\n";
  }
  return out;
}

EncodedPng confusion_png(const CheckpointEvaluation& e) {
  const EvalResult& reported = e.tta ? e.tta->tta : e.plain;
  const std::string title = (e.tta ? "TTA " + e.tta->mode : std::string("plain")) + ", " +
                            std::to_string(reported.count) + " images, accuracy " +
                            fmt::format("{:.4f}", reported.accuracy);
  return encode_confusion_matrix(confusion_rows(reported.confusion), e.classes, title);
}

std::filesystem::path default_eval_out_dir(const std::string& checkpoint) {
  const std::filesystem::path folder = std::filesystem::absolute(checkpoint).parent_path();
  if (folder.filename() == "checkpoints") return folder.parent_path();
  return std::filesystem::current_path();
}

}  // namespace ltfit
