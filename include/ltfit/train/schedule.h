// LR schedules: the learning rate (and, for one-cycle, the momentum) as a function of a stage's
// optimizer step. One interface, chosen by `train.schedule`; a new schedule is a class here and
// a name in config.h's ScheduleKind, nothing else.
//
// Each stage of the recipe (recipe.h) runs its own schedule over its own steps, with each layer
// group's peak LR. The anchors, with n the stage's steps, s the 0-based step, w the warm-up's
// steps (warmup_epochs x steps per epoch, rounded) and p the group's peak LR:
//   one_cycle  fastai v1's OneCycleScheduler (one_cycle.h); momentum moves too.
//   flat_cos   fastai v2's fit_flat_cos: pos = s/n; pos < pct_start: p; after: a cosine from p to
//              p/div_final over the rest (combined_cos). Momentum: the optimizer's.
//   cosine     timm's CosineLRScheduler stepped per update, warmup_prefix false: s < w:
//              warmup_lr + s·(p − warmup_lr)/w; after: min_lr + (p − min_lr)/2·(1 + cos(π s/n)).
//   multistep  torch's MultiStepLR (milestones in stage epochs): p·decay_rate^k, k the milestones
//              at or before s's epoch; the warm-up as cosine's.
//   constant   p after the warm-up (timm's "constant").
//   plateau    torch's ReduceLROnPlateau (mode min on the validation loss, threshold 1e-4
//              relative, factor decay_rate, patience, cooldown, min_lr) after the warm-up, as
//              timm's PlateauLRScheduler: max(p·decay_rate^k, min_lr) after k decays. Its
//              counters are state, kept in checkpoints (timm's are not).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "ltfit/config/config.h"
#include "ltfit/train/checkpoint.h"

namespace ltfit {

// What a stage's schedule is made from: the config's schedule keys (plan_recipe fills them from
// TrainConfig, with fine_tune's per-stage changes; decay_milestones count stage epochs;
// plateau_monitor: accuracy watches for a maximum) and the momentum of the optimizer.
struct ScheduleConfig : LrScheduleKeys {
  double base_momentum = 0.9;  // the momentum of schedules that do not move it (betas[0])

  bool operator==(const ScheduleConfig&) const = default;
};

// The schedule settings of `train` (without fine_tune's per-stage changes).
ScheduleConfig schedule_config(const TrainConfig& train);

class Schedule {
 public:
  virtual ~Schedule() = default;
  // The LR at 0-based stage step `step` (clamped to the stage) of a group whose peak is `peak`.
  virtual double lr(double peak, std::int64_t step) const = 0;
  // The momentum (Adam's beta1, SGD's momentum) at `step`.
  virtual double momentum(std::int64_t step) const = 0;
  // After each epoch of the stage, `steps_done` its steps so far, with the monitored figure
  // (ScheduleConfig::monitor) when there was a validation pass. Only plateau acts on it.
  virtual void epoch_end(std::int64_t /*steps_done*/, std::optional<double> /*value*/) {}
  // The state that must survive a resume (scalars; empty for the pure schedules), and back.
  virtual std::map<std::string, double> state() const { return {}; }
  virtual void load(const std::map<std::string, double>& /*state*/) {}
};

// The schedule of a stage of `total_steps` optimizer steps, `steps_per_epoch` per epoch.
std::unique_ptr<Schedule> make_schedule(const ScheduleConfig& config, std::int64_t total_steps,
                                        std::int64_t steps_per_epoch);

}  // namespace ltfit
