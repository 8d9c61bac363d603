// The training loop: next batch -> forward -> loss -> backward -> step, one-cycle per step.
//
// The Trainer takes parts that are already built (model, optimizer, loaders, observers, a
// TrainControl) and only applies the schedule; it does not parse config, build models or write
// reports. It can start anywhere in a recipe (TrainState from a checkpoint): the schedule, the
// loader's batch order and augmentation, and the smoothed loss continue exactly where they were.
// Not thread-safe; one Trainer per model.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include "ltfit/model/resnet.h"
#include "ltfit/report/timing.h"
#include "ltfit/train/amp.h"
#include "ltfit/train/checkpoint.h"
#include "ltfit/train/observer.h"
#include "ltfit/train/recipe.h"

namespace ltfit {

class Loader;

struct TrainerOptions {
  torch::Device device = torch::kCPU;  // where the model and batches live
  bool channels_last = false;          // NHWC activations
  std::string precision = "fp32";      // fp32 | fp16 (autocast + loss scaling) | bf16 (autocast)
};

// Everything the trainer counts, as saved in and restored from a checkpoint.
struct TrainState {
  TrainPosition position;        // stage, epoch in stage, batch in epoch, smoothed loss
  std::int64_t global_step = 0;  // completed optimizer steps
  int global_epoch = 0;          // completed epochs over all stages
  GradScalerState scaler;        // fp16 loss scaler (its state even when not scaling)
};

// Consulted by the trainer after every optimizer step and at every epoch end: where checkpoints
// are written and where stop requests (signals, time limits) come from.
class TrainControl {
 public:
  virtual ~TrainControl() = default;
  // After a step: stop now (the trainer saves first, then throws InterruptedError)?
  virtual bool stop_requested() = 0;
  // After a step: is a mid-epoch checkpoint due?
  virtual bool checkpoint_due() = 0;
  // Saves the full training state; `epoch` holds the stats when called at an epoch's end.
  // `reason` says why ("epoch", "periodic", "stop") for the log.
  virtual void save(const TrainState& state, const EpochStats* epoch, const char* reason) = 0;
};

class Trainer {
 public:
  // `profiler` (may be null) times the phases of every step and epoch.
  Trainer(ResNet model, torch::optim::Optimizer& optimizer, Loader& train, Loader& valid,
          TrainerOptions options, std::vector<TrainObserver*> observers,
          TrainControl* control = nullptr, Profiler* profiler = nullptr);

  // Runs the recipe's stages from `start` (default: the beginning); returns the epochs' stats
  // of this call. Throws InterruptedError after saving when the control asks to stop.
  std::vector<EpochStats> fit(const std::vector<StagePlan>& plan, const TrainState& start = {});

  // Runs one stage from its beginning (freezing the body if the stage says so).
  std::vector<EpochStats> fit_one_cycle(const StagePlan& stage);

  const TrainState& state() const { return state_; }

 private:
  struct EpochTrain {
    double smooth_loss = 0.0;
    double seconds = 0.0;
    double data_wait = 0.0;
    std::int64_t images = 0;
  };
  // Runs `stage` from state_.position (its epoch and batch); appends its epochs to `stats`.
  void run_stage(const StagePlan& stage, std::vector<EpochStats>& stats);
  EpochTrain train_epoch(const std::vector<OneCycleSchedule>& schedules,
                         std::int64_t steps_per_epoch);
  double train_step(const torch::Tensor& images, const torch::Tensor& labels);
  // After a step: periodic checkpoint and stop requests.
  void after_step();

  ResNet model_;
  torch::optim::Optimizer& optimizer_;
  Loader& train_;
  Loader& valid_;
  TrainerOptions options_;
  std::vector<TrainObserver*> observers_;
  TrainControl* control_;
  Profiler* profiler_;
  std::optional<Profiler> own_profiler_;  // when none is given: unsynchronised, for epoch figures
  torch::Dtype amp_dtype_;                // autocast dtype; kFloat = off
  GradScaler scaler_;
  TrainState state_;
};

// Freezes (or unfreezes) the body: layer groups 0 and 1 stop getting gradients, except their
// BatchNorm parameters, which keep training (fastai's train_bn).
void set_body_frozen(ResNet& model, bool frozen);

}  // namespace ltfit
