// An observer that writes checkpoints/last.ckpt after every epoch and copies it to best.ckpt
// when validation accuracy improves. Files are replaced atomically (checkpoint.h).
#pragma once

#include <string>
#include <vector>

#include <torch/optim/optimizer.h>

#include "ltfit/model/resnet.h"
#include "ltfit/train/checkpoint.h"
#include "ltfit/train/observer.h"

namespace ltfit {

class CheckpointWriter : public TrainObserver {
 public:
  CheckpointWriter(std::string dir, ResNet model, torch::optim::Optimizer& optimizer,
                   CheckpointMeta base);
  void on_step(const StepStats& step) override { steps_done_ = step.step + 1; }
  void on_epoch_end(const EpochStats& epoch) override;
  double best_accuracy() const { return best_accuracy_; }
  double seconds() const { return seconds_; }  // time spent writing checkpoints

 private:
  std::string dir_;
  ResNet model_;
  torch::optim::Optimizer& optimizer_;
  CheckpointMeta base_;
  std::int64_t steps_done_ = 0;
  double best_accuracy_ = -1.0;
  double seconds_ = 0.0;
};

}  // namespace ltfit
