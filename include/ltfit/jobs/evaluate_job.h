// `ltfit evaluate`: check that predictions.csv (and with --tune-thresholds the tuned
// checkpoint) can be written, evaluate the checkpoint (evaluate_checkpoint, at its
// eval.temperature), then write <out>/predictions.csv, <out>/confusion_matrix.png and
// <out>/reliability.png (eval_report.h). Not thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ltfit/jobs/checkpoint_eval.h"

namespace ltfit {

struct EvaluateJobRequest {
  CheckpointEvalRequest eval;  // checkpoint, data, device, precision, TTA
  // Folder for predictions.csv, confusion_matrix.png, reliability.png; empty:
  // default_eval_out_dir.
  std::string out;
  // Multi-label: per-class thresholds that maximise each class's F1 on the evaluated set
  // (TTA's probabilities with --tta), written into a copy of the checkpoint beside it
  // (<name>-tuned.ckpt, its config's eval.thresholds set), which predict and evaluate then use.
  bool tune_thresholds = false;
};

struct EvaluateJobResult {
  CheckpointEvaluation evaluation;
  std::string predictions_csv;   // the files written
  std::string confusion_png;     // empty for a multi-label evaluation (no confusion matrix)
  std::string reliability_png;   // the reliability diagram (eval_report.h)
  std::string tuned_checkpoint;  // --tune-thresholds: the checkpoint written
  std::vector<double> tuned_thresholds;
  std::optional<EvalResult> tuned;  // the evaluated set's figures at the tuned thresholds
};

// Runs the evaluation. The outputs are checked before the checkpoint and the data are read:
// ConfigError (exit 2) for one that is the checkpoint (check_output_not_input), RuntimeError
// (exit 5, naming it) for one that cannot be written; an out-of-memory error names the checkpoint's
// data.batch_size (OutOfMemoryError, exit 5).
EvaluateJobResult run_evaluate_job(const EvaluateJobRequest& request);

}  // namespace ltfit
