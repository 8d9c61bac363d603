// data.augment.on: device — fastai v2's batch transforms (ltfit/data/batch_augment.h: flip,
// warp, rotate, zoom, brightness, contrast) on each training batch where it lives, the GPU on a
// GPU, instead of per image in the loader threads. The loader then only crops (the shorter
// side's square, at a random position with random_crop) and resizes; this hook, at
// before_batch, takes the normalized batch back to [0, 1] pixels, augments it with one grid
// sample, and normalizes it again. Its draws come from run.seed, the optimizer step and the slice
// (mixup.h's slice_number): the same in a resumed run, with no state to save. Runs before random
// erasing and MixUp, as the loader's augmentation would. Not thread-safe.
#pragma once

#include <cstdint>

#include "ltfit/config/config.h"
#include "ltfit/train/hooks.h"
#include "ltfit/util/image_normalization.h"

namespace ltfit {

class DeviceAugmentHook : public Hook {
 public:
  DeviceAugmentHook(AugmentConfig config, std::uint64_t seed, int rank, int world);
  int order() const override { return hook_order::kMixup - 20; }
  void before_batch(TrainContext& ctx) override;
  // What before_batch does to `images` (float [N,3,H,W], normalized by `norm`): the batch of
  // optimizer step `step`, `batch_in_step`-th of its accumulation group. Also show-batch's.
  torch::Tensor augment(const torch::Tensor& images, const ImageNormalization& norm,
                        std::int64_t step, int batch_in_step) const;

  // The seed of the draws of slice `slice` at optimizer step `step`.
  static std::uint64_t batch_seed(std::uint64_t seed, std::int64_t step, std::uint64_t slice);

 private:
  AugmentConfig config_;
  std::uint64_t seed_;
  int rank_, world_;
};

}  // namespace ltfit
