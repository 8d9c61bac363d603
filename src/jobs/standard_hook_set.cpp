// The hooks the config switches on: see standard_hook_set.h.
#include "ltfit/jobs/standard_hook_set.h"

#include <spdlog/spdlog.h>

namespace ltfit {

StandardHookSet::StandardHookSet(const Config& config, HookPurpose purpose, std::size_t classes,
                                 DistGroup* group) {
  const TrainConfig& train = config.train;
  if (purpose == HookPurpose::kTrain) {
    hooks_.push_back(&schedule_.emplace());
    hooks_.push_back(&accumulate_.emplace(train.accumulate));
    if (train.ema.enabled()) hooks_.push_back(&ema_.emplace(train.ema));
    if (train.early_stopping.patience > 0) {
      hooks_.push_back(&early_stopping_.emplace(train.early_stopping));
    }
  } else if (train.accumulate > 1) {
    spdlog::info(
        "lr-find: one optimizer step per batch (train.accumulate {} applies to training only); "
        "the suggested LR is for the configured batch of {}",
        train.accumulate, config.data.batch_size);
  }
  if (train.clip_grad_norm > 0) hooks_.push_back(&clip_.emplace(train.clip_grad_norm));
  const int rank = group != nullptr ? group->rank() : 0;
  const int world = group != nullptr ? group->size() : 1;
  if (config.data.augment.on == AugmentPlace::kDevice) {  // lr-find sees it too
    hooks_.push_back(&device_augment_.emplace(config.data.augment, config.run.seed, rank, world));
  }
  const RandomErasingConfig& erasing = config.data.augment.random_erasing;
  if (erasing.p > 0) {  // the training batches' augmentation: lr-find sees it too
    hooks_.push_back(&random_erasing_.emplace(erasing, config.run.seed, rank, world));
  }
  if (train.mixup.enabled()) {  // lr-find too, as fastai's MixUp callback stays on the learner
    hooks_.push_back(&mixup_.emplace(train.mixup, static_cast<std::int64_t>(classes),
                                     config.run.seed, rank, world));
  }
  if (group != nullptr) hooks_.push_back(&data_parallel_.emplace(*group, config.dist));
}

}  // namespace ltfit
