// `ltfit calibrate`: temperature scaling of a checkpoint (Guo et al. 2017). Evaluates a split
// (evaluate_checkpoint; default the checkpoint's validation split), fits the temperature T that
// minimises the NLL of the raw logits divided by it (eval/calibration.h's fit_temperature), and
// writes a weights-only copy of the checkpoint whose config's eval.temperature is T, which
// `evaluate` and `predict` then apply. T is fitted on the raw logits, so calibrating an already
// calibrated checkpoint replaces its temperature rather than multiplying it.
//
// Multi-label: a temperature changes which labels pass a threshold other than 0.5, so the copy's
// eval.threshold and eval.thresholds are moved to the same logits (t' = sigmoid(logit(t) *
// T_old / T)): the predicted label sets stay what they were, only the probabilities change.
// Single-label predictions (the most probable class) never change. Not thread-safe.
#pragma once

#include <string>
#include <vector>

#include "ltfit/jobs/checkpoint_eval.h"

namespace ltfit {

struct CalibrateJobRequest {
  // checkpoint, data, split, device, precision (tta and its settings are not used).
  CheckpointEvalRequest eval;
  std::string out;  // the calibrated checkpoint; empty: <name>-calibrated.ckpt beside it
};

// One side of the comparison: the figures at one temperature.
struct CalibrationFigures {
  double temperature = 1.0;
  double nll = 0.0;  // the evaluation's loss at that temperature
  double ece = 0.0;  // 15 bins (eval/calibration.h)
};

struct CalibrateJobResult {
  CheckpointEvaluation evaluation;  // at the checkpoint's own temperature
  std::string calibrated_checkpoint;
  CalibrationFigures before;       // at the checkpoint's eval.temperature (1 unless calibrated)
  CalibrationFigures after;        // at the fitted temperature
  double accuracy = 0.0;           // unchanged by the temperature
  std::vector<double> thresholds;  // multi-label: the copy's thresholds (moved, see above)
};

// Runs it. Order of checks: the checkpoint is read (CheckpointError, exit 4), then the output is
// checked (RuntimeError, exit 5; --out naming the checkpoint itself: ConfigError, exit 2), both
// before the evaluation.
CalibrateJobResult run_calibrate_job(const CalibrateJobRequest& request);

// The JSON document of `ltfit calibrate --json`, and its table.
std::string calibrate_json(const CalibrateJobResult& result);
std::string calibrate_table(const CalibrateJobResult& result);

// A multi-label threshold `t` for probabilities at temperature `from`, moved to the same logit
// at temperature `to`: sigmoid(logit(t) * from / to); 0 and 1 (and 0.5) stay.
double move_threshold(double t, double from, double to);

}  // namespace ltfit
