// Early stopping as fastai's EarlyStoppingCallback (fastai/callback/tracker.py) does it: at each
// epoch end the monitored figure (train.early_stopping.monitor: valid_loss, lower is better, or
// accuracy, higher) is compared with the best so far; an improvement must beat it by more than
// min_delta. After `patience` epochs in a row without one, the fit ends after that epoch (its
// checkpoint is written first; best.ckpt stays as it was).
//
// As fastai's TrackerCallback with reset_on_fit, the best value and the count start afresh at
// each stage (fastai's fine_tune calls fit twice). Unlike fastai, where a stop in fine_tune's
// frozen fit still runs the unfrozen one, a stop here ends the run: the rest of the plan is
// skipped. The state (best, count, stage, stopped) is kept in every checkpoint as the hook state
// "early_stopping": a resumed run decides as the uninterrupted one would, and a stopped run stays
// stopped. In a data-parallel run every rank sees the same all-reduced figures and decides alike.
// Not thread-safe.
#pragma once

#include <optional>
#include <string>

#include "ltfit/config/config.h"
#include "ltfit/train/hooks.h"

namespace ltfit {

class EarlyStoppingHook : public Hook {
 public:
  explicit EarlyStoppingHook(EarlyStoppingConfig config);
  int order() const override { return hook_order::kEarlyStopping; }
  void stage_begin(TrainContext& ctx) override;
  void epoch_end(TrainContext& ctx) override;
  std::string state_name() const override { return "early_stopping"; }
  HookState save_state() const override;
  void load_state(const HookState& state) override;

  // Why the run stopped ("" while it did not).
  const std::string& reason() const { return reason_; }

 private:
  EarlyStoppingConfig config_;
  double best_ = 0.0;
  int wait_ = 0;
  int stage_ = -1;
  bool stopped_ = false;
  std::string reason_;
  std::optional<HookState> pending_;  // loaded before its stage began
};

// True when `states` (a checkpoint's) say early stopping ended the run.
bool stopped_early(const std::vector<HookState>& states);

}  // namespace ltfit
