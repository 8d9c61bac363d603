// Reports of `ltfit evaluate`: a JSON document, a text table, predictions.csv, the confusion
// matrix and the reliability diagram as PNGs. The JSON and the table carry the calibration
// figures (eval/calibration.h): "temperature", "ece", "nll" (= "loss") and "reliability" (the
// bins), and tta_ece, tta_nll, tta_reliability when TTA ran.
//
// predictions.csv has one row per evaluated image in sample order:
//   path,label,predicted,loss,prob_<class>...            (plain evaluation)
//   path,label,predicted,loss,prob_<class>...,plain_prob_<class>...  (with TTA)
// where label and predicted are class names, prob_* are the reported probabilities (the
// TTA-blended ones when TTA ran, and `predicted` is their argmax), loss is the image's
// cross-entropy -ln prob_<label> of those (p clamped to >= 1e-12; its mean is the reported loss)
// and plain_prob_* the plain ones. Paths and class names are escaped in the CSV and the JSON alike
// (util/utf8.h: valid UTF-8 kept, `\` -> `\\`, any other byte -> `\xNN`). Pure formatting,
// thread-safe.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <filesystem>
#include <string>

#include "ltfit/jobs/checkpoint_eval.h"
#include "ltfit/jobs/evaluate_job.h"
#include "ltfit/pictures/image_grid.h"  // EncodedPng

namespace ltfit {

// A CSV field: `raw` escaped as in the JSON (util/utf8.h), then quoted when it holds a comma,
// quote or line break.
std::string csv_field(const std::string& raw);

// The JSON document printed by `evaluate --json`; `predictions_path` is recorded in it.
std::string evaluation_json(const CheckpointEvaluation& evaluation,
                            const std::string& predictions_path);
// The same document before it is written: its strings raw (dump_json, util/json.h, escapes them
// once), for a document that embeds it (`ltfit interpret --json`).
nlohmann::json evaluation_document(const CheckpointEvaluation& evaluation,
                                   const std::string& predictions_path);
// With --tune-thresholds' results (tuned_thresholds, tuned_checkpoint, the tuned figures).
std::string evaluation_json(const CheckpointEvaluation& evaluation,
                            const std::string& predictions_path, const EvaluateJobResult& job);
// --tune-thresholds' table: each class's tuned threshold, and the figures before and after; ""
// without tuning.
std::string tuned_thresholds_table(const EvaluateJobResult& job);

// The human-readable report: figures, confusion matrix, per-class P/R/F1 (and TTA figures).
std::string evaluation_table(const CheckpointEvaluation& evaluation);

// The text of predictions.csv (header line included).
std::string predictions_csv(const CheckpointEvaluation& evaluation);

// The confusion matrix of the reported probabilities (TTA's when TTA ran) as a heat map PNG,
// titled with the evaluation, its image count and accuracy.
EncodedPng confusion_png(const CheckpointEvaluation& evaluation);

// The reliability diagram (pictures/reliability_plot.h) of the reported probabilities (TTA's when
// TTA ran), titled with the evaluation, its ECE, NLL and temperature.
EncodedPng reliability_png(const CheckpointEvaluation& evaluation);

// Where evaluate writes by default: the run directory of `checkpoint` (the parent of its
// `checkpoints/` folder) if it is in one, else the current directory.
std::filesystem::path default_eval_out_dir(const std::string& checkpoint);

}  // namespace ltfit
