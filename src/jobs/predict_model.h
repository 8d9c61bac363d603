// The model of `ltfit predict` (predict_job.h) and how images reach it: a checkpoint's
// (checkpoint_eval.h's load_model_for_eval), or a --weights file used as it is, with its own head
// and classes. Private to src/jobs (predict_model.cpp builds it, predict_job.cpp runs it over the
// images and hands over what it predicts). Not thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "ltfit/data/loader.h"
#include "ltfit/eval/evaluator.h"
#include "ltfit/jobs/checkpoint_eval.h"
#include "ltfit/jobs/output_check.h"
#include "ltfit/jobs/predict_job.h"
#include "ltfit/model/classifier.h"

namespace ltfit {

// The model and how images reach it.
struct Predictor {
  std::optional<LoadedModel> loaded;  // a checkpoint's (for TTA)
  Classifier model{nullptr};
  std::vector<std::string> classes;
  EvalOptions eval;
  LoaderOptions loader;
};

// The files the model comes from: the checkpoint, or the weight file and its description.
std::vector<CommandInput> model_inputs(const PredictRequest& request);

// The model of --checkpoint (its classes, eval options and validation loader options), or of
// --weights (weights_predictor in predict_model.cpp), on `device`; --batch-size over the batch
// size either would use.
Predictor make_predictor(const PredictRequest& request, const torch::Device& device);

}  // namespace ltfit
