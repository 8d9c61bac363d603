// Data-parallel training as one hook on the Trainer: every rank trains on its slice of each
// global batch (the loader's Shard) and, after backward, the ranks all-reduce their gradients.
//
// At fit_begin rank 0's parameters and buffers are broadcast, so every rank starts identical.
// After the backward of a step's last batch (before the loss scaler's unscale and clipping,
// which then see the same gradients everywhere) each rank multiplies its gradients by its
// images in the step, the buckets (dist.bucket_mb) are summed over the ranks and divided by
// the step's images on all ranks: the gradient of the global batch's mean loss, however the
// images were split (a rank with an empty slice adds zeros). A few control values ride in the
// first bucket: the images, the loss sum (per batch of the step, for the global smoothed loss and
// steps.csv), and the stop and save votes (hooks.h). So every decision that changes control flow
// is the same on every rank: a stop (signal or time limit on any rank), a checkpoint, a
// non-finite loss (RuntimeError on every rank), a step without images (skipped by all).
// BatchNorm running statistics are made identical (dist.bn_buffers: averaged, or rank 0's)
// before validation and before any checkpoint. Not thread-safe; one per Trainer.
#pragma once

#include <cstdint>
#include <vector>

#include "ltfit/config/config.h"
#include "ltfit/dist/group.h"
#include "ltfit/train/hooks.h"

namespace ltfit {

class DataParallelHook : public Hook {
 public:
  DataParallelHook(DistGroup& group, const DistConfig& config);

  int order() const override { return hook_order::kGradSync; }
  void fit_begin(TrainContext& ctx) override;
  void stage_begin(TrainContext& ctx) override;
  void before_batch(TrainContext& ctx) override;
  void after_loss(TrainContext& ctx) override;
  void after_backward(TrainContext& ctx) override;
  void validation_begin(TrainContext& ctx) override;
  void epoch_end(TrainContext& ctx) override;

  // Makes every rank's BatchNorm running statistics identical (dist.bn_buffers).
  void sync_buffers(TrainContext& ctx);

 private:
  DistGroup& group_;
  std::int64_t bucket_bytes_;
  BnBuffers bn_buffers_;
  // Set at each stage's start (freezing changes which parameters train): the trained
  // parameters in the optimizer's order, the indices of those in each bucket, and the buckets'
  // flat buffers, reused every step. The first bucket starts with the control values.
  std::vector<torch::Tensor> params_;
  std::vector<std::vector<std::size_t>> buckets_;
  std::vector<torch::Tensor> flats_;
  std::int64_t controls_ = 0;
  // This rank's share of the current step: per batch, its images and loss sum.
  std::vector<double> batch_images_, batch_loss_sums_;
  double smoothed_avg_ = 0.0;  // the smoothed loss before the step's first batch
  std::int64_t smoothed_count_ = 0;
  bool buffers_synced_ = false;  // since the last training batch
};

}  // namespace ltfit
