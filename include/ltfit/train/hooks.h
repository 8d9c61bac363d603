// Hooks: what runs at the training loop's events, and the context they may change.
//
// The Trainer (trainer.h) fires these events, in this order (fastai's Learner event model,
// learner.py `_do_one_batch`, is the anchor):
//
//   fit_begin
//     stage_begin                                   once per stage (plan_recipe's stages)
//       epoch_begin
//         before_batch   the batch is on the device; a hook may replace ctx.images/labels
//         (forward, loss)
//         after_loss     ctx.loss is the batch's mean loss; a hook may replace ctx.backward_loss
//                        (what backward runs on), or set ctx.cancel_batch (no backward, no step).
//                        In a data-parallel run a rank's batch may be empty (no readable image
//                        in its slice): then no forward and no backward run, ctx.labels has 0
//                        rows, and the hooks still fire, so every rank reaches the same
//                        collectives
//         (backward)
//         after_backward the gradients are there; ctx.step_now says whether the optimizer
//                        steps after this batch (false while accumulating gradients)
//         before_step    only when ctx.step_now; a hook may set ctx.skip_step (no update, the
//                        gradients are dropped and the step still counts, as fastai's
//                        CancelStepException and an fp16 overflow do)
//         (optimizer step, gradients zeroed)
//         after_step     only when ctx.step_now; ctx.state counts the step
//       validation_begin / validation_end           when the trainer has a validation set
//       epoch_end        ctx.epoch holds the epoch's figures
//     stage_end
//   fit_end
//
// At one event, hooks run by ascending order() (ties: in the order given to the Trainer). A hook
// may set ctx.stop (end the fit after this batch, e.g. lr-find's divergence) or ctx.interrupt
// (the trainer throws InterruptedError with that message once the event is done, after the
// checkpoint hook saved). A hook throws only for real errors; the exception ends the fit.
//
// A hook whose state must survive a resume (a weight average, a plateau counter) names it with
// state_name() (unique among the fit's hooks) and returns it from save_state(); every checkpoint
// keeps it (checkpoint.h's HookState). A resumed fit hands the saved record back through
// load_state() right after fit_begin; a saved record no hook claims is logged and ignored.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include "ltfit/model/classifier.h"
#include "ltfit/run/events.h"
#include "ltfit/run/timing.h"
#include "ltfit/train/amp.h"
#include "ltfit/train/checkpoint.h"
#include "ltfit/train/device_step_losses.h"
#include "ltfit/train/recipe.h"

namespace ltfit {

class SyncFreeStep;  // sync_free_step.h

// Everything the trainer counts, as saved in and restored from a checkpoint.
struct TrainState {
  TrainPosition position;          // stage, epoch in stage, batch in epoch, smoothed loss
  std::int64_t global_step = 0;    // completed optimizer steps
  int global_epoch = 0;            // completed epochs over all stages
  GradScalerState scaler;          // fp16 loss scaler (its state even when not scaling)
  DecodeFailures decode_failures;  // training images left out once their decoding failed
  // The hooks' own states: given to the hooks after fit_begin when a fit starts from this
  // state (a resume); the Trainer does not update it (a save asks the hooks, TrainContext).
  std::vector<HookState> hook_states;
};

struct TrainContext {
  TrainContext(Classifier& model_, torch::optim::Optimizer& optimizer_, GradScaler& scaler_,
               Profiler& profiler_, TrainState& state_, torch::Device device_,
               torch::Dtype amp_dtype_)
      : model(model_),
        optimizer(optimizer_),
        scaler(scaler_),
        profiler(profiler_),
        state(state_),
        device(device_),
        amp_dtype(amp_dtype_) {}

  // ---- the parts, fixed for the fit
  Classifier& model;
  torch::optim::Optimizer& optimizer;
  GradScaler& scaler;  // fp16 loss scaling; an identity unless enabled
  // TrainerOptions::sync_free_step: the step with its state on the device, which also unscales
  // and clips (in the scaler hook's place; the clipping hook gives it the norm); null: the eager
  // step (from fit_begin).
  SyncFreeStep* sync_free_step = nullptr;
  Profiler& profiler;
  TrainState& state;
  torch::Device device;
  torch::Dtype amp_dtype;  // autocast dtype; kFloat: none

  // ---- the stage (from stage_begin)
  const StagePlan* stage = nullptr;
  int accumulate = 1;                  // batches per optimizer step (set at fit_begin)
  std::int64_t batches_per_epoch = 0;  // loader batches
  std::int64_t steps_per_epoch = 0;    // optimizer steps: ceil(batches / accumulate)
  // The schedule's position: optimizer steps of this stage before the current batch. An epoch
  // with fewer steps than planned (images left out once their decoding failed) spreads its steps
  // over the epoch's whole span, its last at the span's end, so the schedule still ends at its
  // final value.
  std::int64_t stage_step() const;

  // ---- the epoch (from epoch_begin)
  std::int64_t batches_this_epoch = 0;  // loader batches of this epoch: batches_per_epoch, or
                                        // fewer once images are left out
  std::int64_t steps_this_epoch = 0;    // ceil(batches_this_epoch / accumulate)

  std::int64_t epoch_images = 0;         // training images of this epoch so far
  const EpochStats* epoch = nullptr;     // at epoch_end
  std::int64_t valid_batches = 0;        // batches of the validation pass (validation_begin)
  std::optional<double> valid_accuracy;  // after validation_end

  // ---- the batch
  torch::Tensor images;  // float [N,3,H,W], normalized, on the device
  torch::Tensor labels;  // int64 [N]: the hard labels (metrics use them)
  // float [N,K] target distribution (MixUp, CutMix): when a hook sets it at before_batch, the
  // loss is the cross-entropy against it instead of `labels`; undefined at each batch's start.
  torch::Tensor targets;
  torch::Tensor output;         // logits [N,C] (under autocast: its dtype)
  torch::Tensor loss;           // the batch's mean cross-entropy (fp32)
  torch::Tensor backward_loss;  // what backward() runs on (scaled, divided by hooks)
  double loss_value = 0.0;      // loss.item(); NaN when loss_deferred
  int batch_in_step = 0;        // 0-based index of this batch in its accumulation group
  int batches_in_step = 1;      // batches in this group (the last group of an epoch may be short)
  bool step_now = true;         // the optimizer steps after this batch
  std::vector<double> lrs;      // learning rate per layer group of this step
  double momentum = 0.0;        // Adam beta1 / SGD momentum of this step
  double step_loss = 0.0;       // mean loss of this step's batches (at after_step; unset when
                                // loss_deferred)
  // TrainerOptions::loss_read_interval: the losses stay on the device (DeviceStepLosses) and are
  // read once per interval, before each save and at each epoch's end. At after_step of a step
  // that read them, or at validation_begin, epoch_end or fit_end after the epoch's end read,
  // `read_steps` holds every step since the last read, in order; the observer hook reports
  // them and clears it.
  bool loss_deferred = false;
  std::vector<StepLoss> read_steps;

  // ---- decisions every rank of a data-parallel run must share (alone, they stand as cast)
  bool distributed = false;  // a data-parallel run: the data-parallel hook agrees on these
  bool vote_stop = false;    // stop after this step (signal, time limit): cast at after_loss of a
                             // step's last batch, agreed over ranks at after_backward
  bool vote_save = false;    // checkpoint after this step: cast and agreed like vote_stop
  // OR of `local` over the ranks (a collective: every rank calls it at the same point).
  std::function<bool(bool local)> agree = [](bool local) { return local; };

  // ---- what a checkpoint saves besides the TrainState: every stateful hook's state, now
  std::function<std::vector<HookState>()> hook_states = [] { return std::vector<HookState>{}; };

  // ---- requests from hooks
  bool cancel_batch = false;  // skip backward and step for this batch (its gradients dropped)
  bool skip_step = false;     // do not update the weights at this step
  bool stop = false;          // end the fit after this batch
  std::optional<std::string> interrupt;  // throw InterruptedError(message) after this event
};

// Orders of the built-in hooks (lower runs first). A new hook picks its place between them.
namespace hook_order {
inline constexpr int kAccumulate = -300;  // sets ctx.accumulate; divides the loss
inline constexpr int kSchedule =
    -200;                            // sets LR and momentum before the batch (one-cycle, lr-find)
inline constexpr int kMixup = -180;  // mixes the batch's images, sets ctx.targets
inline constexpr int kLossCheck = -150;     // a non-finite loss stops fp32/bf16 runs
inline constexpr int kGradSync = -120;      // data-parallel: all-reduces gradients and votes
inline constexpr int kLossScaler = -100;    // scales the loss; unscales the gradients first of all
inline constexpr int kClip = 0;             // gradient clipping, after the unscale
inline constexpr int kEma = 50;             // the weight average: updated after each step, swapped
                                            // in for validation
inline constexpr int kObservers = 100;      // progress, metrics files, logs
inline constexpr int kEarlyStopping = 150;  // decides at epoch end, before the checkpoint
inline constexpr int kCheckpoint = 200;     // saves, stop requests
inline constexpr int kProfiler = 300;       // closes the epoch's timing record, after the save
}  // namespace hook_order

class Hook {
 public:
  virtual ~Hook() = default;
  virtual int order() const { return 0; }
  virtual void fit_begin(TrainContext& /*ctx*/) {}
  virtual void stage_begin(TrainContext& /*ctx*/) {}
  virtual void epoch_begin(TrainContext& /*ctx*/) {}
  virtual void before_batch(TrainContext& /*ctx*/) {}
  virtual void after_loss(TrainContext& /*ctx*/) {}
  virtual void after_backward(TrainContext& /*ctx*/) {}
  virtual void before_step(TrainContext& /*ctx*/) {}
  virtual void after_step(TrainContext& /*ctx*/) {}
  virtual void validation_begin(TrainContext& /*ctx*/) {}
  virtual void validation_end(TrainContext& /*ctx*/) {}
  virtual void epoch_end(TrainContext& /*ctx*/) {}
  virtual void stage_end(TrainContext& /*ctx*/) {}
  virtual void fit_end(TrainContext& /*ctx*/) {}

  // State kept across a resume: empty name, none.
  virtual std::string state_name() const { return {}; }
  // The state now (tensors may stay on the device: the checkpoint copies them).
  virtual HookState save_state() const { return {}; }
  // The saved state (tensors on the CPU); throws CheckpointError for a version it cannot read.
  virtual void load_state(const HookState& /*state*/) {}
};

}  // namespace ltfit
