// fastai's learning-rate range test (lr_find; fastai/callback/schedule.py).
//
// The LR grows exponentially from start_lr to end_lr over num_steps batches:
// lr_i = start * (end / start)^(i / num_steps). The loss is smoothed (beta 0.98, debiased) and
// the test stops once it exceeds 4x the best smoothed loss (or is not finite). Suggestions:
// fastai v1's steepest descent (argmin of the gradient of the smoothed loss, skipping the first
// 10 and last 5 points) and fastai v2's valley. The model and optimizer state are restored
// afterwards. The sweep is the Trainer with an lr-finder hook (no validation); the pure parts
// are separate functions for testing.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <torch/optim/optimizer.h>

#include "ltfit/model/classifier.h"
#include "ltfit/train/trainer.h"

namespace ltfit {

struct LrFindOptions {
  double start_lr = 1e-7;    // first LR
  double end_lr = 10.0;      // LR after num_steps steps
  int num_steps = 100;       // batches at most
  double beta = 0.98;        // loss smoothing
  double stop_factor = 4.0;  // stop when smoothed loss > stop_factor * best
  bool frozen = false;       // sweep with the body frozen (fastai: as the recipe starts)
};

struct LrFindResult {
  std::vector<double> lrs;         // LR of each step taken
  std::vector<double> losses;      // raw batch loss
  std::vector<double> smoothed;    // debiased exponential moving average
  std::optional<double> steepest;  // fastai v1 suggestion (null if too few points)
  std::optional<double> valley;    // fastai v2 suggestion
  bool diverged = false;           // stopped early on divergence
  bool frozen = false;             // swept with the body frozen (options.frozen)
};

// LR at step `step` of the sweep.
double lr_find_lr(const LrFindOptions& options, std::int64_t step);

// fastai v1 Recorder.plot(suggestion=True): lrs[argmin(gradient(smoothed[10:-5]))].
std::optional<double> suggest_steepest(const std::vector<double>& lrs,
                                       const std::vector<double>& smoothed);

// fastai v2's `valley` on points [10, n-5): the middle of the longest decreasing run.
std::optional<double> suggest_valley(const std::vector<double>& lrs,
                                     const std::vector<double>& smoothed);

// Runs the sweep on `train` (all layer groups at the same LR) with the Trainer, under its
// precision and memory format, then restores model and optimizer. `extra_hooks` join the sweep.
LrFindResult lr_find(Classifier& model, torch::optim::Optimizer& optimizer, BatchSource& train,
                     const TrainerOptions& trainer, const LrFindOptions& options,
                     const std::vector<Hook*>& extra_hooks = {});

}  // namespace ltfit
