// The calibration side of `ltfit evaluate`'s reports (eval_report.h): the ECE and NLL of the
// plain and TTA probabilities in the table and the JSON, and the reliability table of the
// reported ones (TTA's when TTA ran), which reliability.png draws. NLL is the evaluation's loss
// (the mean cross-entropy, or multi-label's mean binary cross-entropy, of the probabilities at
// the checkpoint's eval.temperature). Pure functions of the evaluation.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "ltfit/eval/calibration.h"
#include "ltfit/jobs/checkpoint_eval.h"

namespace ltfit {

// The reliability table and ECE of `result`'s probabilities against its targets.
CalibrationTable calibration_of(const EvalResult& result);

// <prefix>ece, <prefix>nll and <prefix>reliability (the bins: lower, upper, count, confidence,
// accuracy) of `result` into `j`.
void add_calibration_json(nlohmann::json& j, const std::string& prefix, const EvalResult& result);

// The table's calibration section: the temperature, NLL and ECE per evaluation, and the
// reported probabilities' non-empty bins.
std::string calibration_section(const CheckpointEvaluation& evaluation);

}  // namespace ltfit
