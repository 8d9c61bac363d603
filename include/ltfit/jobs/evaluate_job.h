// `ltfit evaluate`: check that predictions.csv can be written, evaluate the checkpoint
// (evaluate_checkpoint), then write <out>/predictions.csv and <out>/confusion_matrix.png
// (eval_report.h). Not thread-safe.
#pragma once

#include <string>

#include "ltfit/jobs/checkpoint_eval.h"

namespace ltfit {

struct EvaluateJobRequest {
  CheckpointEvalRequest eval;  // checkpoint, data, device, precision, TTA
  std::string out;  // folder for predictions.csv, confusion_matrix.png; empty: default_eval_out_dir
};

struct EvaluateJobResult {
  CheckpointEvaluation evaluation;
  std::string predictions_csv;  // the files written
  std::string confusion_png;
};

// Runs the evaluation. The output is checked before the checkpoint and the data are read
// (RuntimeError, exit 5, naming it); an out-of-memory error names the checkpoint's
// data.batch_size (OutOfMemoryError, exit 5).
EvaluateJobResult run_evaluate_job(const EvaluateJobRequest& request);

}  // namespace ltfit
