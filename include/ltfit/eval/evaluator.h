// Plain evaluation of a classifier over a loader: loss, accuracy, per-sample probabilities.
//
// Runs under NoGradGuard with the model in eval mode (restored afterwards). Not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "ltfit/model/resnet.h"

namespace ltfit {

class Loader;

struct EvalResult {
  double loss = 0.0;            // mean cross-entropy
  double accuracy = 0.0;        // fraction correct
  std::int64_t count = 0;       // images evaluated (unreadable ones excluded)
  double seconds = 0.0;         // wall time
  torch::Tensor probabilities;  // float [count, classes]
  torch::Tensor targets;        // int64 [count]
  torch::Tensor indices;        // int64 [count] positions in the loader's sample list
  torch::Tensor confusion;      // int64 [classes, classes], rows = actual, cols = predicted
};

struct EvalOptions {
  torch::Device device = torch::kCPU;
  bool channels_last = false;
};

// Evaluates `model` on one pass over `loader` (which must not shuffle).
EvalResult evaluate(ResNet& model, Loader& loader, const EvalOptions& options);

}  // namespace ltfit
