// data.cache: device — a set whose samples hold their pixels (CIFAR's records) kept whole on the
// training device as one uint8 tensor [N,H,W,3], every training batch drawn, cropped and flipped
// there: no decoding, no loader threads, no host-to-device copy per batch (airbench's and FFCV's
// way with small images). On a CPU device the same code runs from host memory.
//
// Each epoch's order is the Loader's (epoch_permutation(N, run.seed, epoch)), its batches the
// Loader's (the last partial one dropped; a data-parallel rank takes its batch_slice), so a
// resume mid-epoch and any number of ranks see the same global batches. The augmentation is the
// CIFAR recipe that torchvision's RandomCrop(32, padding=4) + RandomHorizontalFlip() gives: a
// window of the image's own size at a uniformly drawn offset of its copy zero-padded by 4 pixels
// on each side, and a coin-flip mirror, drawn per (seed, epoch, batch)
// on the host (so every device draws the same), applied on the device by gathering; then, when
// data.image_size is not the images' side, a bilinear resize there. fastai's batch transforms
// (data.augment.on: device) follow in the trainer as after any loader. Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <torch/torch.h>

#include "ltfit/data/loader.h"
#include "ltfit/data/sample.h"

namespace ltfit {

class DeviceCacheSource : public BatchSource {
 public:
  // Copies every sample's pixels to `device`. ConfigError (exit 2) naming data.cache unless every
  // sample holds pixels (SampleImage) of one square size and the task is single-label.
  DeviceCacheSource(const std::vector<Sample>& samples, const LoaderOptions& options,
                    const torch::Device& device, int crop_padding = 4);

  void start_epoch(int epoch, std::int64_t skip_batches) override;
  std::optional<Batch> next() override;
  std::int64_t batches_per_epoch() const override;
  int image_size_at(int /*epoch*/) const override { return options_.data.image_size; }
  std::int64_t sample_count() const override { return images_.size(0); }
  // Bytes the images take on the device.
  std::int64_t bytes() const { return images_.numel(); }

 private:
  LoaderOptions options_;
  int padding_;
  torch::Tensor images_;  // uint8 [N,H,W,3] on the device
  torch::Tensor labels_;  // int64 [N] on the device
  std::vector<std::int64_t> order_;
  int epoch_ = 0;
  std::int64_t next_batch_ = 0;
};

}  // namespace ltfit
