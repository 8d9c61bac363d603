// The hooks a training command puts on the Trainer because the config asks for them: the
// schedule, gradient accumulation, gradient clipping, random erasing, MixUp/CutMix, the weights'
// moving average, early stopping and, in a data-parallel run, the gradient and batch-norm
// synchronisation. `ltfit train` and `ltfit lr-find` both build theirs here, so a feature
// configured once reaches every command that trains (docs/architecture.md, "Where to add X": a new
// hook that a config key switches on is one more member here).
//
// The command adds its own hooks (checkpoints, observers, the sweep) with add(). The set owns
// the hooks it built and hands out pointers to them: it neither moves nor copies.
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "ltfit/config/config.h"
#include "ltfit/train/data_parallel.h"
#include "ltfit/train/device_augment.h"
#include "ltfit/train/early_stopping.h"
#include "ltfit/train/ema.h"
#include "ltfit/train/hooks.h"
#include "ltfit/train/mixup.h"
#include "ltfit/train/random_erasing.h"
#include "ltfit/train/standard_hooks.h"

namespace ltfit {

// What the hooks serve. lr-find sets the LR itself (its own hook replaces the schedule) and
// takes one optimizer step per batch, each point of its curve one batch's loss: it applies
// train.clip_grad_norm, random erasing and train.mixup, but not train.accumulate, train.ema or
// train.early_stopping.
enum class HookPurpose { kTrain, kLrFind };

class StandardHookSet {
 public:
  // `classes`: the model's class count; `group`: the data-parallel group, null for one process.
  StandardHookSet(const Config& config, HookPurpose purpose, std::size_t classes,
                  DistGroup* group = nullptr);
  StandardHookSet(const StandardHookSet&) = delete;
  StandardHookSet& operator=(const StandardHookSet&) = delete;

  // Adds a hook the command owns (it must outlive the set's use).
  void add(Hook& hook) { hooks_.push_back(&hook); }
  // Every hook, for the Trainer (which orders them by Hook::order()).
  const std::vector<Hook*>& hooks() const { return hooks_; }
  // The weight average (train.ema), or null when off: the run's final passes use it.
  const EmaHook* ema() const { return ema_ ? &*ema_ : nullptr; }
  // Early stopping (train.early_stopping), or null when off: the summary says why it stopped.
  const EarlyStoppingHook* early_stopping() const {
    return early_stopping_ ? &*early_stopping_ : nullptr;
  }

 private:
  std::optional<ScheduleHook> schedule_;
  std::optional<AccumulateHook> accumulate_;
  std::optional<ClipGradHook> clip_;
  std::optional<DeviceAugmentHook> device_augment_;
  std::optional<RandomErasingHook> random_erasing_;
  std::optional<MixupHook> mixup_;
  std::optional<EmaHook> ema_;
  std::optional<EarlyStoppingHook> early_stopping_;
  std::optional<DataParallelHook> data_parallel_;
  std::vector<Hook*> hooks_;
};

}  // namespace ltfit
