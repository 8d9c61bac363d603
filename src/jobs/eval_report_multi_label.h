// The multi-label side of `ltfit evaluate`'s reports (eval_report.h dispatches here when the
// evaluation's results are multi-label): the per-class table (precision, recall, F1, average
// precision, support, threshold), the JSON, and predictions.csv with the predicted label set
// and a probability per class. Pure functions of the evaluation.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "ltfit/jobs/checkpoint_eval.h"

namespace ltfit {

// The JSON document, its strings not yet escaped (dump_json escapes them once).
nlohmann::json multi_label_evaluation_document(const CheckpointEvaluation& evaluation,
                                               const std::string& predictions_path);
std::string multi_label_evaluation_table(const CheckpointEvaluation& evaluation);
std::string multi_label_predictions_csv(const CheckpointEvaluation& evaluation);

// The names of the classes whose probability in `row` [classes] is above their threshold
// (fastai's decodes: p > threshold), space-separated, in the classes' order.
std::string predicted_label_set(const torch::Tensor& row, const std::vector<double>& thresholds,
                                const std::vector<std::string>& classes);

}  // namespace ltfit
