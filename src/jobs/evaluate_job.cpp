// `ltfit evaluate`'s work: see evaluate_job.h.
#include "ltfit/jobs/evaluate_job.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "ltfit/config/config_loader.h"
#include "ltfit/eval/multi_label_metrics.h"
#include "ltfit/jobs/eval_report.h"
#include "ltfit/jobs/output_check.h"
#include "ltfit/train/checkpoint.h"
#include "ltfit/util/atomic_file.h"
#include "ltfit/util/error.h"
#include "ltfit/util/output_dir.h"
#include "ltfit/util/temp_files.h"

namespace ltfit {

namespace {

// --tune-thresholds: per-class F1-maximising thresholds from the evaluated probabilities, scored
// and written into a copy of the checkpoint beside it.
void tune_and_save(const EvaluateJobRequest& request, EvaluateJobResult& result) {
  const CheckpointEvaluation& e = result.evaluation;
  if (!e.plain.multi_label) {
    throw ConfigError("--tune-thresholds: checkpoint '" + request.eval.checkpoint +
                          "' is single-label (its predictions are the most probable class)",
                      "thresholds are tuned for multi-label checkpoints (model.task: multi_label)");
  }
  const EvalResult& reported = e.tta ? e.tta->tta : e.plain;
  const MultiLabelScores scores = multi_label_scores(reported.probabilities, reported.targets);
  result.tuned_thresholds = tune_thresholds(
      scores, /*fallback=*/reported.thresholds.empty() ? 0.5 : reported.thresholds.front());
  EvalOptions options;
  options.thresholds = result.tuned_thresholds;
  result.tuned = score_outputs(reported.probabilities, reported.targets, reported.indices,
                               reported.loss * static_cast<double>(reported.count), options);
  const std::string& source = request.eval.checkpoint;
  const std::string target = sibling_checkpoint(source, "-tuned").string();
  Config config =
      load_config_from_string(read_checkpoint_meta(source).config_yaml, source + " (config)");
  config.eval.thresholds = result.tuned_thresholds;
  save_checkpoint_with_config(source, target, config);
  result.tuned_checkpoint = target;
  spdlog::info("tuned thresholds: F1 macro {:.4f} -> {:.4f}, samples {:.4f} -> {:.4f}; wrote {}",
               reported.f1_macro, result.tuned->f1_macro, reported.f1_samples,
               result.tuned->f1_samples, result.tuned_checkpoint);
}

}  // namespace

EvaluateJobResult run_evaluate_job(const EvaluateJobRequest& request) {
  const std::filesystem::path out = request.out.empty()
                                        ? default_eval_out_dir(request.eval.checkpoint)
                                        : std::filesystem::path(request.out);
  const std::filesystem::path csv = out / "predictions.csv";
  const std::vector<CommandInput> inputs{
      {"the checkpoint (--checkpoint)", request.eval.checkpoint}};
  check_outputs_not_inputs(out, {"predictions.csv", "confusion_matrix.png", "reliability.png"},
                           request.out.empty() ? "the output folder" : "the output folder (--out)",
                           inputs);
  if (request.tune_thresholds) {
    check_output_not_input(sibling_checkpoint(request.eval.checkpoint, "-tuned"),
                           "the tuned checkpoint (--tune-thresholds)", inputs);
  }
  // Before the checkpoint and the data are read: an output that cannot be written fails now,
  // not after the whole evaluation.
  check_output_file(csv, request.out.empty() ? "predictions file" : "predictions file (--out)");
  if (request.tune_thresholds) {
    check_output_file(sibling_checkpoint(request.eval.checkpoint, "-tuned"),
                      "tuned checkpoint (--tune-thresholds)");
  }
  EvaluateJobResult result{evaluate_checkpoint(request.eval), csv.string(),
                           (out / "confusion_matrix.png").string(),
                           (out / "reliability.png").string()};
  create_output_dir(out, "output folder (--out)");
  remove_stale_temp_files(out.string(), "predictions.csv");  // a killed evaluate's (temp_files.h)
  write_text_atomic(result.predictions_csv, predictions_csv(result.evaluation));
  if (result.evaluation.plain.multi_label) {
    result.confusion_png.clear();  // label sets have no confusion matrix
  } else {
    write_file_atomic(result.confusion_png, confusion_png(result.evaluation).bytes);
  }
  write_file_atomic(result.reliability_png, reliability_png(result.evaluation).bytes);
  spdlog::info("wrote {}{} and {}", result.predictions_csv,
               result.confusion_png.empty() ? "" : ", " + result.confusion_png,
               result.reliability_png);
  if (request.tune_thresholds) tune_and_save(request, result);
  return result;
}

}  // namespace ltfit
