// MixUp and CutMix as timm's Mixup does them (timm/data/mixup.py, `Mixup.__call__`): each batch
// (pair, image) is blended with the batch reversed, or has a box of it pasted in, and the loss
// takes the matching target distribution. Metrics keep the hard labels.
//
// The draws are timm's, in timm's order, from a generator of ours: numpy's rand() for the
// probabilities, beta(α, α) for λ and randint(low, high) for the box. So the same draws give
// the same images and targets as timm's code (tests/train/mixup_oracle.py feeds ours to it).
// Each batch's generator is seeded from run.seed, the optimizer step and the slice number
// batch_in_step · world + rank: a resumed run draws what the uninterrupted one drew, with no
// state to save, and rank r of a data-parallel run draws what batch r of a 1-rank run with
// train.accumulate = world draws (the ghost-BN equivalence of data-parallel training).
//
// Label smoothing: timm folds it into the targets (mixup_target's off value ε/K); here the
// Trainer's cross-entropy applies train.label_smoothing to the mixed targets, which is the same
// distribution, (1 − ε)·(λ·y₁ + (1 − λ)·y₂) + ε/K. mixup_targets() computes timm's form.
//
// An odd batch is mixed too (timm asserts an even one): in batch and elem mode the middle image
// is its own partner; in pair mode it stays as it is. Not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "ltfit/config/config.h"
#include "ltfit/train/hooks.h"
#include "ltfit/util/random.h"

namespace ltfit {

// The draws Mixup makes, named as numpy's: rand() in [0, 1), beta(α, α), randint in [low, high).
class MixupRandom {
 public:
  explicit MixupRandom(std::uint64_t seed) : rng_(seed) {}
  double rand();
  double beta(double alpha);
  std::int64_t randint(std::int64_t low, std::int64_t high);

  // Every draw in order, for the parity oracle: 'r' (rand), 'b' (beta), 'i' (randint).
  struct Draw {
    char kind;
    double value;
  };
  std::vector<Draw>* record = nullptr;

 private:
  SplitMix64 rng_;
};

// What a batch's mixing did: one λ for the whole batch (batch mode), or one per image.
struct MixResult {
  bool per_image = false;
  double lam = 1.0;    // batch mode (1: the batch was left as it is)
  torch::Tensor lams;  // per image: float32 [N] (1 where an image was left as it is)
};

// Mixes `images` (float [N,C,H,W]) in place as timm's Mixup.__call__ with `config`'s settings.
MixResult mix_images(const MixupConfig& config, torch::Tensor& images, MixupRandom& random);

// timm's mixup_target: one_hot(labels)·λ + one_hot(labels reversed)·(1 − λ), with on value
// 1 − ε + ε/K and off value ε/K. float32 [N, classes] on the labels' device.
torch::Tensor mixup_targets(const torch::Tensor& labels, std::int64_t classes, const MixResult& mix,
                            double smoothing);

// The number of the slice a rank trains on: batch_in_step · world + rank (0.. for one process).
inline std::uint64_t slice_number(int batch_in_step, int rank, int world) {
  return static_cast<std::uint64_t>(batch_in_step) * static_cast<std::uint64_t>(world) +
         static_cast<std::uint64_t>(rank);
}

// train.mixup: mixes each training batch at before_batch and sets ctx.targets (unsmoothed: the
// loss smooths). `rank` of `world` processes (0 of 1 alone): each rank mixes its own slice.
class MixupHook : public Hook {
 public:
  MixupHook(MixupConfig config, std::int64_t classes, std::uint64_t seed, int rank, int world);
  int order() const override { return hook_order::kMixup; }
  void before_batch(TrainContext& ctx) override;
  // What before_batch does: mixes `images` (float [N,C,H,W]) in place and returns the targets
  // of `labels`, for the batch of optimizer step `step`, `batch_in_step`-th of its accumulation
  // group. Also show-batch's.
  torch::Tensor mix(torch::Tensor& images, const torch::Tensor& labels, std::int64_t step,
                    int batch_in_step) const;

 private:
  MixupConfig config_;
  std::int64_t classes_;
  std::uint64_t seed_;
  int rank_, world_;
};

}  // namespace ltfit
