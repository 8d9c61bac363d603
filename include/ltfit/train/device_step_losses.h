// The training losses kept on the device between reads (TrainerOptions::loss_read_interval):
// each optimizer step's mean batch loss and loss scale, and how far fastai's smoothed loss moved
// since the last read. Adding a batch or closing a step reads nothing from the device; read()
// is one device read for all the steps since the last one. The arithmetic is the Trainer's on
// the host (trainer.cpp): a step's loss is the sum of its batches' losses each divided by the
// batches in its step, then times the cut-short factor; the smoothed loss (SmoothenValue,
// beta 0.98) takes only finite losses. Not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "ltfit/train/checkpoint.h"

namespace ltfit {

// fastai's SmoothenValue beta: the smoothed training loss's, on the host and here.
inline constexpr double kLossSmoothing = 0.98;

// One optimizer step's training loss as read from the device.
struct StepLoss {
  std::int64_t step = 0;  // 0-based global step index
  double loss = 0.0;      // mean loss of its batches (NaN or inf as the batches had them)
  double scale = 1.0;     // the loss scale after the step
};

class DeviceStepLosses {
 public:
  explicit DeviceStepLosses(const torch::Device& device);

  // A batch's loss (one element, any float dtype, on the device) divided by `batches_in_step`
  // into the current step's loss; a finite one into the smoothed loss too.
  void add_batch(const torch::Tensor& loss, int batches_in_step);
  // Closes the current step (its 0-based global index `step`): its loss times `factor` (a
  // group cut short), and the loss scale after it: `scale`, a scalar on the losses' device, or
  // `host_scale` when `scale` is undefined.
  void end_step(std::int64_t step, double factor, const torch::Tensor& scale, double host_scale);
  // Closed steps not read yet.
  std::size_t pending() const { return steps_.size(); }

  struct Reading {
    std::vector<StepLoss> steps;  // every step closed since the last read, in order
    // The smoothed loss's finite batches since the last read: fastai's accumulator a becomes
    // beta^count * a + added (apply()).
    std::int64_t count = 0;
    double added = 0.0;
    // Into a TrainPosition's loss_avg and loss_count.
    void apply(TrainPosition& at) const;
  };
  // One device read; the steps and the smoothed loss's progress start afresh.
  Reading read();

 private:
  torch::Tensor step_sum_;             // float64 scalar: the open step's losses so far
  torch::Tensor average_, count_;      // float64 scalars: the smoothed loss since the last read
  std::vector<torch::Tensor> closed_;  // float64 [2] per closed step: loss, scale
  std::vector<std::int64_t> steps_;    // their global indices
};

}  // namespace ltfit
