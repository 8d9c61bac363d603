// What the trainer reports while it runs, and the interface of those who listen.
//
// Observers are called on the training thread (through ObserverHook), in registration order; they
// must not throw for ordinary conditions (an I/O failure in one is a real error and stops the run).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ltfit/config/config.h"

namespace ltfit {

// One optimizer step.
struct StepStats {
  std::int64_t step = 0;    // global 0-based step across all stages
  int epoch = 0;            // global 0-based epoch
  std::vector<double> lrs;  // learning rate per layer group
  double momentum = 0.0;    // Adam beta1 / SGD momentum
  double loss = 0.0;        // this batch's training loss
  double loss_scale = 1.0;  // mixed-precision loss scale (1 in fp32)
};

// One finished epoch (train + validation).
struct EpochStats {
  int epoch = 0;                   // global 0-based epoch
  std::string stage;               // "frozen" | "unfrozen" | "one_cycle"
  double train_loss = 0.0;         // smoothed training loss at the epoch's end (fastai's)
  double valid_loss = 0.0;         // mean validation cross-entropy
  double accuracy = 0.0;           // validation accuracy in [0,1]
  double error_rate = 0.0;         // 1 - accuracy
  double seconds = 0.0;            // wall time of the epoch incl. validation
  double images_per_second = 0.0;  // training images / training seconds
  double data_wait_seconds = 0.0;  // time the loop waited for the loader
  int image_size = 0;              // side of the epoch's training images (data.size_schedule)
  // multi_label runs (accuracy is then fastai's accuracy_multi): the F1 averaged over samples
  // and over classes, and the mean average precision, at eval.threshold(s)
  bool multi_label = false;
  double f1_samples = 0.0;
  double f1_macro = 0.0;
  double map = 0.0;
  // single-label with eval.top_k on: k, and the validation top-k accuracy in [0,1]; 0: off
  int top_k = 0;
  double top_k_accuracy = 0.0;
};

// The figure `monitor` watches in an epoch (config.h's Monitor).
inline double monitor_value(const EpochStats& epoch, Monitor monitor) {
  switch (monitor) {
    case Monitor::kValidLoss:
      return epoch.valid_loss;
    case Monitor::kAccuracy:
      return epoch.accuracy;
    case Monitor::kF1Samples:
      return epoch.f1_samples;
    case Monitor::kF1Macro:
      return epoch.f1_macro;
    case Monitor::kMap:
      return epoch.map;
  }
  return epoch.accuracy;
}

// A stage (one fit_one_cycle call) is starting.
struct StageInfo {
  std::string name;     // "frozen" | "unfrozen" | "one_cycle"
  int first_epoch = 0;  // global epoch of its first epoch
  int epochs = 0;       // epochs in the stage
  std::int64_t steps_per_epoch = 0;
};

// An epoch's training is starting (after a mid-epoch resume, `first_step` steps are done).
struct EpochInfo {
  int epoch = 0;                     // global 0-based epoch
  std::int64_t first_step = 0;       // optimizer steps of this epoch already done
  std::int64_t steps_per_epoch = 0;  // optimizer steps in the epoch
};

class TrainObserver {
 public:
  virtual ~TrainObserver() = default;
  virtual void on_stage_begin(const StageInfo& stage) {}
  virtual void on_epoch_begin(const EpochInfo& epoch) {}
  virtual void on_step(const StepStats& step) {}
  virtual void on_validation_begin(std::int64_t batches) {}
  virtual void on_epoch_end(const EpochStats& epoch) {}
};

}  // namespace ltfit
