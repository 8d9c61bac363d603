// The training loop: next batch -> forward -> loss -> backward -> step, one-cycle per step.
//
// The Trainer takes parts that are already built (model, optimizer, loaders, observers) and
// only applies the schedule; it does not parse config, build models or write reports.
// Not thread-safe; one Trainer per model.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include "ltfit/model/resnet.h"
#include "ltfit/train/observer.h"
#include "ltfit/train/recipe.h"

namespace ltfit {

class Loader;

struct TrainerOptions {
  torch::Device device = torch::kCPU;  // where the model and batches live
  bool channels_last = false;          // NHWC activations
};

class Trainer {
 public:
  Trainer(ResNet model, torch::optim::Optimizer& optimizer, Loader& train, Loader& valid,
          TrainerOptions options, std::vector<TrainObserver*> observers);

  // Runs one stage (freezing the body if the stage says so); returns its epochs' stats.
  std::vector<EpochStats> fit_one_cycle(const StagePlan& stage);

  std::int64_t global_step() const { return global_step_; }
  int global_epoch() const { return global_epoch_; }

 private:
  // Trains one epoch; returns (smoothed loss, train seconds, data wait seconds, images).
  struct EpochTrain {
    double smooth_loss = 0.0;
    double seconds = 0.0;
    double data_wait = 0.0;
    std::int64_t images = 0;
  };
  EpochTrain train_epoch(const std::vector<OneCycleSchedule>& schedules, std::int64_t stage_step0);
  double train_step(const torch::Tensor& images, const torch::Tensor& labels);

  ResNet model_;
  torch::optim::Optimizer& optimizer_;
  Loader& train_;
  Loader& valid_;
  TrainerOptions options_;
  std::vector<TrainObserver*> observers_;
  std::int64_t global_step_ = 0;
  int global_epoch_ = 0;
  double loss_avg_ = 0.0;  // fastai's SmoothenValue (beta 0.98), per stage
  std::int64_t loss_n_ = 0;
};

// Freezes (or unfreezes) the body: layer groups 0 and 1 stop getting gradients, except their
// BatchNorm parameters, which keep training (fastai's train_bn).
void set_body_frozen(ResNet& model, bool frozen);

}  // namespace ltfit
