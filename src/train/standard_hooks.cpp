#include "ltfit/train/standard_hooks.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include <torch/nn/utils/clip_grad.h>

#include "ltfit/train/optimizer.h"
#include "ltfit/train/sync_free_step.h"
#include "ltfit/util/error.h"

namespace ltfit {

void ScheduleHook::stage_begin(TrainContext& ctx) {
  const StagePlan& stage = *ctx.stage;
  schedule_ =
      make_schedule(stage.schedule, ctx.steps_per_epoch * stage.epochs, ctx.steps_per_epoch);
  peaks_ = stage.group_lrs;
  stage_ = ctx.state.position.stage;
  if (pending_) {
    const auto saved = pending_->scalars.find("stage");
    if (saved != pending_->scalars.end() && saved->second == stage_) {
      std::map<std::string, double> state = pending_->scalars;
      state.erase("stage");
      schedule_->load(state);
    }
    pending_.reset();
  }
}

void ScheduleHook::before_batch(TrainContext& ctx) {
  const std::int64_t step = ctx.stage_step();
  ctx.lrs.resize(peaks_.size());
  for (std::size_t g = 0; g < peaks_.size(); ++g) ctx.lrs[g] = schedule_->lr(peaks_[g], step);
  ctx.momentum = schedule_->momentum(step);
  set_hyper_parameters(ctx.optimizer, ctx.lrs, ctx.momentum);
}

void ScheduleHook::epoch_end(TrainContext& ctx) {
  std::optional<double> value;  // the plateau's figure, when the epoch was validated
  if (ctx.valid_accuracy && ctx.epoch != nullptr) {
    value = monitor_value(*ctx.epoch, ctx.stage->schedule.plateau_monitor);
  }
  schedule_->epoch_end(ctx.stage_step(), value);
}

HookState ScheduleHook::save_state() const {
  HookState state;
  state.version = 1;
  if (schedule_) state.scalars = schedule_->state();
  state.scalars["stage"] = stage_;
  return state;
}

void ScheduleHook::load_state(const HookState& state) {
  if (state.version != 1) {
    throw CheckpointError("the checkpoint's schedule state has version " +
                              std::to_string(state.version) + "; this ltfit reads version 1",
                          "use the ltfit that wrote it, or a newer one");
  }
  pending_ = state;
}

AccumulateHook::AccumulateHook(int batches) : batches_(batches) {
  if (batches < 1) {
    throw ConfigError("train.accumulate must be at least 1, got " + std::to_string(batches));
  }
}

void AccumulateHook::fit_begin(TrainContext& ctx) { ctx.accumulate = batches_; }

void AccumulateHook::after_loss(TrainContext& ctx) {
  if (ctx.batches_in_step > 1) ctx.backward_loss = ctx.backward_loss / ctx.batches_in_step;
}

ClipGradHook::ClipGradHook(double max_norm) : max_norm_(max_norm) {
  if (!(max_norm > 0.0) || !std::isfinite(max_norm)) {
    throw ConfigError("train.clip_grad_norm must be a positive number, got " +
                      std::to_string(max_norm));
  }
}

void ClipGradHook::after_backward(TrainContext& ctx) {
  if (!ctx.step_now || ctx.skip_step) return;
  if (ctx.sync_free_step != nullptr) {  // it clips on the device, after it unscaled
    ctx.sync_free_step->set_max_grad_norm(max_norm_);
    return;
  }
  std::vector<torch::Tensor> grads_of;
  for (const auto& group : ctx.optimizer.param_groups()) {
    for (const auto& p : group.params()) {
      if (p.grad().defined()) grads_of.push_back(p);
    }
  }
  torch::nn::utils::clip_grad_norm_(grads_of, max_norm_);
}

void LossScalerHook::after_loss(TrainContext& ctx) {
  ctx.backward_loss = ctx.scaler.scale(ctx.backward_loss);
}

void LossScalerHook::after_backward(TrainContext& ctx) {
  // Every other after_backward hook (clipping) sees true gradients; an overflow skips the step.
  if (ctx.step_now && ctx.scaler.unscale(ctx.optimizer)) ctx.skip_step = true;
}

void LossScalerHook::after_step(TrainContext& ctx) {
  ctx.scaler.update();
  ctx.state.scaler = ctx.scaler.state();
}

void LossCheckHook::after_loss(TrainContext& ctx) {
  // A data-parallel run decides after the ranks agreed (data_parallel.h): a throw on one rank
  // alone would leave the others waiting in the next collective.
  if (ctx.cancel_batch || std::isfinite(ctx.loss_value) || ctx.scaler.enabled()) return;
  if (ctx.distributed) return;
  if (ctx.loss_deferred) return;  // the Trainer checks each step's loss when it reads them
  throw non_finite_loss_error(ctx.loss_value, ctx.state.global_step);
}

RuntimeError non_finite_loss_error(double loss, std::int64_t step) {
  return RuntimeError(
      "training loss became " + std::to_string(loss) + " at step " + std::to_string(step),
      "lower train.lr; the last good checkpoint is kept");
}

void ObserverHook::stage_begin(TrainContext& ctx) {
  observer_.on_stage_begin({ctx.stage->name,
                            ctx.state.global_epoch - ctx.state.position.epoch_in_stage,
                            ctx.stage->epochs, ctx.steps_per_epoch});
}

void ObserverHook::epoch_begin(TrainContext& ctx) {
  observer_.on_epoch_begin({ctx.state.global_epoch,
                            ctx.state.position.batch_in_epoch / ctx.accumulate,
                            ctx.steps_this_epoch});
}

void ObserverHook::after_step(TrainContext& ctx) {
  StepStats step{
      ctx.state.global_step - 1, ctx.state.global_epoch, ctx.lrs, ctx.momentum, ctx.step_loss,
      ctx.scaler.scale_value()};
  if (!ctx.loss_deferred) {
    observer_.on_step(step);
    return;
  }
  unread_.push_back(std::move(step));  // its loss and scale come with a later read
  report_read_steps(ctx);
}

void ObserverHook::report_read_steps(TrainContext& ctx) {
  for (const StepLoss& read : ctx.read_steps) {
    // Every step after_step saw is read once, in order (the Trainer reads before after_step).
    if (unread_.empty() || unread_.front().step != read.step) {
      throw std::logic_error("the observer hook got step " + std::to_string(read.step) +
                             "'s loss out of order");
    }
    StepStats step = std::move(unread_.front());
    unread_.pop_front();
    step.loss = read.loss;
    step.loss_scale = read.scale;
    observer_.on_step(step);
  }
  ctx.read_steps.clear();
}

void ObserverHook::validation_begin(TrainContext& ctx) {
  report_read_steps(ctx);
  observer_.on_validation_begin(ctx.valid_batches);
}

void ObserverHook::epoch_end(TrainContext& ctx) {
  report_read_steps(ctx);
  observer_.on_epoch_end(*ctx.epoch);
}

void ObserverHook::fit_end(TrainContext& ctx) { report_read_steps(ctx); }

void ProfilerHook::epoch_begin(TrainContext& ctx) {
  ctx.profiler.begin_epoch(ctx.state.global_epoch);
}

void ProfilerHook::epoch_end(TrainContext& ctx) { ctx.profiler.end_epoch(ctx.epoch_images); }

}  // namespace ltfit
