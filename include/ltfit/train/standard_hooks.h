// The hooks ltfit's commands put on the Trainer: schedules, gradient accumulation and clipping,
// the loss scaler, the loss check, observers (progress, metrics files) and the profiler.
// Checkpointing is a hook too (CheckpointWriter, checkpoint_writer.h); lr-find's is in
// lr_finder.cpp. Each is small and independent; hooks.h says when each event fires.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ltfit/train/hooks.h"
#include "ltfit/train/schedule.h"
#include "ltfit/util/error.h"

namespace ltfit {

// Each stage's schedule (its StagePlan::schedule, schedule.h): the LR of every layer group and
// the momentum at the stage's optimizer step, set before each batch. A schedule with state
// (plateau) updates it at each epoch end, before the checkpoint, and keeps it as the hook state
// "schedule" (with the stage it belongs to: a new stage starts afresh).
class ScheduleHook : public Hook {
 public:
  int order() const override { return hook_order::kSchedule; }
  void stage_begin(TrainContext& ctx) override;
  void before_batch(TrainContext& ctx) override;
  void epoch_end(TrainContext& ctx) override;
  std::string state_name() const override { return "schedule"; }
  HookState save_state() const override;
  void load_state(const HookState& state) override;

 private:
  std::unique_ptr<Schedule> schedule_;
  std::vector<double> peaks_;         // per layer group
  int stage_ = -1;                    // the stage index schedule_ serves
  std::optional<HookState> pending_;  // loaded before its stage began
};

// train.accumulate: `batches` batches per optimizer step, each batch's loss divided by the
// number of batches in its group, so the summed gradients are those of the group's mean loss
// (PyTorch's accumulation recipe). The schedule counts optimizer steps.
class AccumulateHook : public Hook {
 public:
  explicit AccumulateHook(int batches);
  int order() const override { return hook_order::kAccumulate; }
  void fit_begin(TrainContext& ctx) override;
  void after_loss(TrainContext& ctx) override;

 private:
  int batches_;
};

// train.clip_grad_norm: torch.nn.utils.clip_grad_norm_(parameters, max_norm) before each step,
// on gradients already unscaled by the loss scaler (as PyTorch's AMP recipe requires). With the
// sync-free step it hands the step its norm instead, and the step clips on the device.
class ClipGradHook : public Hook {
 public:
  explicit ClipGradHook(double max_norm);
  int order() const override { return hook_order::kClip; }
  void after_backward(TrainContext& ctx) override;

 private:
  double max_norm_;
};

// fp16 loss scaling (torch.amp.GradScaler): scales the loss for backward, unscales the
// gradients before any other after_backward hook sees them, skips a step whose gradients
// overflowed and updates the scale after it. An identity when the scaler is disabled.
class LossScalerHook : public Hook {
 public:
  int order() const override { return hook_order::kLossScaler; }
  void after_loss(TrainContext& ctx) override;
  void after_backward(TrainContext& ctx) override;
  void after_step(TrainContext& ctx) override;
};

// A non-finite loss stops fp32 and bf16 training (RuntimeError, exit 5): it means divergence.
// Under fp16 it is an overflow the loss scaler handles, and it passes. In a data-parallel run
// the data-parallel hook makes the same check on the loss of all ranks (non_finite_loss_error).
class LossCheckHook : public Hook {
 public:
  int order() const override { return hook_order::kLossCheck; }
  void after_loss(TrainContext& ctx) override;
};

// The error a non-finite training loss at `step` raises.
RuntimeError non_finite_loss_error(double loss, std::int64_t step);

// Forwards the loop's events to a TrainObserver (report/ listens without knowing the trainer).
class ObserverHook : public Hook {
 public:
  explicit ObserverHook(TrainObserver& observer) : observer_(observer) {}
  int order() const override { return hook_order::kObservers; }
  void stage_begin(TrainContext& ctx) override;
  void epoch_begin(TrainContext& ctx) override;
  void after_step(TrainContext& ctx) override;
  void validation_begin(TrainContext& ctx) override;
  void epoch_end(TrainContext& ctx) override;
  void fit_end(TrainContext& ctx) override;

 private:
  // With the losses read per interval (ctx.loss_deferred): each step is held until its loss and
  // scale are read, then reported in order.
  void report_read_steps(TrainContext& ctx);
  TrainObserver& observer_;
  std::deque<StepStats> unread_;
};

// The profiler's per-epoch records (phases are timed by the trainer around its own work).
class ProfilerHook : public Hook {
 public:
  int order() const override { return hook_order::kProfiler; }
  void epoch_begin(TrainContext& ctx) override;
  void epoch_end(TrainContext& ctx) override;
};

}  // namespace ltfit
