// Random erasing as torchvision's RandomErasing (transforms.py, torchvision 0.29) does it: with
// probability p an image gets a box of area scale·(H·W) and aspect ratio in `ratio` (drawn
// log-uniformly, up to 10 tries to fit) filled with per-pixel standard normal noise
// (value: random; after normalization, so noise of the data's own spread) or with `value`.
//
// It runs on the batch on the device, after the fastai transforms and normalization and before
// MixUp/CutMix (timm's order: erasing is per sample, mixing per batch). Each image's draws come
// from a torch CPU generator seeded from run.seed, the optimizer step, the slice (batch_in_step ·
// world + rank, mixup.h's slice_number) and the image's index: the same draws in a resumed run,
// with no state to save, the same on a rank as in the matching batch of a 1-rank run with
// train.accumulate = world, and, given the same seed, the very numbers torchvision's own code draws
// after torch.manual_seed (tests/train/random_erasing_oracle.py checks that). Not thread-safe.
#pragma once

#include <cstdint>

#include <ATen/core/Generator.h>
#include <torch/types.h>

#include "ltfit/config/config.h"
#include "ltfit/train/hooks.h"

namespace ltfit {

// What one image's erasing did: the box (rows i..i+h, columns j..j+w), or none.
struct ErasedBox {
  bool erased = false;
  std::int64_t i = 0, j = 0, h = 0, w = 0;
};

// torchvision's RandomErasing.forward on `image` ([C,H,W], float, erased in place) with the
// draws of `generator` in torchvision's order.
ErasedBox random_erase(torch::Tensor image, const RandomErasingConfig& config,
                       at::Generator& generator);

// data.augment.random_erasing on each training batch, at before_batch (just before MixUp).
class RandomErasingHook : public Hook {
 public:
  RandomErasingHook(RandomErasingConfig config, std::uint64_t seed, int rank, int world);
  int order() const override { return hook_order::kMixup - 10; }
  void before_batch(TrainContext& ctx) override;
  // What before_batch does to `images` (float [N,C,H,W], normalized; erased in place): the batch
  // of optimizer step `step`, `batch_in_step`-th of its accumulation group. Also show-batch's.
  void erase(torch::Tensor& images, std::int64_t step, int batch_in_step) const;

  // The generator seed of image `index` of slice `slice` at optimizer step `step`.
  static std::uint64_t image_seed(std::uint64_t seed, std::int64_t step, std::uint64_t slice,
                                  std::int64_t index);

 private:
  RandomErasingConfig config_;
  std::uint64_t seed_;
  int rank_, world_;
};

}  // namespace ltfit
