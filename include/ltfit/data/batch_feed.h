// Batches staged on the training device ahead of their step.
//
// On CUDA, stage() copies a batch's pinned bytes and labels to the GPU and normalises them on a
// side stream, without waiting: the trainer stages batch k+1 before it runs batch k, so the copy
// of one overlaps the step of the other (two batches in flight, as a CUDA prefetcher in a
// PyTorch loop does). use() then makes the step's stream wait for the copy (an event, not a host
// sync) and tells the caching allocator the tensors are used on that stream, so their memory is
// not handed out again while the step still reads it. On the CPU, stage() normalises at once.
#pragma once

#include <memory>

#include <c10/core/Event.h>
#include <torch/torch.h>

#include "ltfit/data/loader.h"
#include "ltfit/util/image_normalization.h"

namespace ltfit {

struct StagedBatch {
  torch::Tensor images;  // float [N,3,H,W], normalised, on the device (NHWC when channels_last)
  torch::Tensor labels;  // on the device
  // Recorded on the side stream after the copy; null: ready now.
  std::shared_ptr<c10::Event> ready;
};

class BatchFeed {
 public:
  BatchFeed(const torch::Device& device, bool channels_last, ImageNormalization normalization);
  ~BatchFeed();
  BatchFeed(const BatchFeed&) = delete;
  BatchFeed& operator=(const BatchFeed&) = delete;

  // Starts moving `batch` to the device; returns at once on CUDA.
  StagedBatch stage(const Batch& batch) const;
  // The current stream waits for `staged` (no host sync); its tensors are marked used there.
  void use(const StagedBatch& staged) const;
  // Whether copies run on a side stream (a CUDA device).
  bool overlaps() const { return side_ != nullptr; }

 private:
  torch::Device device_;
  bool channels_last_;
  ImageNormalization normalization_;
  struct SideStream;
  std::unique_ptr<SideStream> side_;
};

}  // namespace ltfit
