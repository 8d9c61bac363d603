// One image's prediction as `ltfit predict` reports it, shared by predict (its --json lines) and
// serve (its answers): the classes ranked from a probability row, the label set of a multi-label
// model, and the JSON object of an ImagePrediction. Thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>
#include <nlohmann/json.hpp>

#include "ltfit/jobs/predict_job.h"

namespace ltfit {

// The `top` most probable classes of `probs` ([classes]), best first.
std::vector<RankedClass> ranked(const torch::Tensor& probs, const std::vector<std::string>& classes,
                                int top);

// Multi-label: the classes above their thresholds, most probable first (null: single-label,
// `thresholds` empty).
std::optional<std::vector<RankedClass>> labels_above(const torch::Tensor& probs,
                                                     const std::vector<std::string>& classes,
                                                     const std::vector<double>& thresholds);

// {"image", "top": [{"class", "label", "probability"(, "threshold")}], "labels"?, "tta"?,
// "plain_top"?, "logits"?, "cam"?}, or {"image", "error"}: predict --json's line.
nlohmann::json prediction_json(const ImagePrediction& prediction);

}  // namespace ltfit
