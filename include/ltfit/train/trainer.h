// The training loop: batch -> forward -> loss -> backward -> step, with hooks at each event.
//
// One Trainer serves every command that trains: `train` (one-cycle, observers, checkpoints),
// `lr-find` (the lr-finder hook, no validation) and `find-batch` (random batches). The Trainer
// owns only the sequence and the loss scaler; everything else (the schedule, accumulation,
// clipping, progress, metrics, checkpoints, the profiler's epoch records) is a Hook (hooks.h says
// when each runs and what it may change). It can start anywhere in a recipe (TrainState from a
// checkpoint): the schedule, the loader's batch order and the smoothed loss continue exactly
// where they were. Not thread-safe; one Trainer per model.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <torch/optim/optimizer.h>
#include <torch/types.h>

#include "ltfit/data/batch_feed.h"
#include "ltfit/data/loader.h"
#include "ltfit/dist/group.h"
#include "ltfit/model/classifier.h"
#include "ltfit/train/device_step_losses.h"
#include "ltfit/train/hooks.h"
#include "ltfit/train/recipe.h"
#include "ltfit/train/standard_hooks.h"
#include "ltfit/train/sync_free_step.h"

namespace ltfit {

struct TrainerOptions {
  torch::Device device = torch::kCPU;  // where the model and batches live
  // The config's train and eval sections, read where the trainer needs them, not copied key by
  // key: train.channels_last (NHWC activations), train.precision (fp32 | fp16: autocast + loss
  // scaling | bf16), train.label_smoothing (the training loss's, torch's cross_entropy
  // label_smoothing: the target becomes (1 - eps) * target + eps / K; validation loss and
  // metrics never smooth), eval.temperature (validation's probabilities and loss come from
  // logits / temperature, EvalOptions::temperature; the training loss never uses it).
  TrainConfig train;
  EvalConfig eval;
  // The loss scaler's settings; default: enabled exactly for fp16 (torch.amp.GradScaler's).
  std::optional<GradScalerOptions> scaler;
  // A data-parallel run's group: validation results are summed over its ranks (each evaluates
  // its own shard). Null: one process. The gradients are the data-parallel hook's.
  DistGroup* group = nullptr;
  // The training loss's class weights (torch's cross_entropy `weight`, float [classes] on the
  // device); undefined: every class weighs 1. Validation loss and metrics are never weighted.
  torch::Tensor class_weights;
  // Multi-label: one validation threshold per class; the training loss is then binary
  // cross-entropy with logits over multi-hot targets (fastai's BCEWithLogitsLossFlat: the mean
  // over images and classes; label smoothing maps y to (1 - eps)·y + eps/K, timm's on/off
  // values), weighted by `pos_weight` (float [classes] on the device; undefined: 1).
  // Empty: single-label.
  std::vector<double> thresholds;
  torch::Tensor pos_weight;
  // The optimizer step through SyncFreeStep (sync_free_step.h): LRs, momentum and the fp16
  // scaler's state in device tensors, unscaling, the inf check and clipping (at ClipGradHook's
  // norm) inside the step, no host read in it: the step a CUDA graph will
  // capture (train.cuda_graphs, with GPU time). Needs ltfit's FusedAdamW or FusedSGD and one
  // process. With loss_read_interval, no training step reads anything from the device.
  bool sync_free_step = false;
  // Reads the training loss from the device once per this many optimizer steps, at each
  // epoch's end and before each checkpoint (DeviceStepLosses), instead of after each
  // batch: each step's loss and scale are still reported, in bursts. A non-finite loss (without
  // the fp16 scaler) then stops the run at the read, with the step it happened at, before
  // anything is saved. 0: after each batch. Needs sync_free_step.
  std::int64_t loss_read_interval = 0;
};

// The multi-label training loss: binary cross-entropy with logits over float [N,K] targets, the
// mean over images and classes (fastai's BCEWithLogitsLossFlat; with `pos_weight`, float [K] or
// undefined, torch's BCEWithLogitsLoss(pos_weight), fastai's with flatten=False); label
// smoothing `eps` first maps y to (1 - eps)·y + eps/K (timm's on/off values). fp32.
torch::Tensor multi_label_loss(const torch::Tensor& logits, const torch::Tensor& targets,
                               double eps, const torch::Tensor& pos_weight);

// Folds a batch's loss into the smoothed training loss (fastai's SmoothenValue, beta 0.98).
void add_to_smoothed_loss(TrainPosition& at, double loss);

class Trainer {
 public:
  // `valid` (may be null: no validation) is evaluated after every epoch. `hooks` run in
  // order() (hooks.h); the Trainer adds its own loss scaler and loss check. `profiler` (may be
  // null) times the phases; without one an unsynchronised one keeps the epoch figures.
  Trainer(Classifier model, torch::optim::Optimizer& optimizer, BatchSource& train, Loader* valid,
          TrainerOptions options, std::vector<Hook*> hooks, Profiler* profiler = nullptr);

  // Runs the stages from `start` (default: the beginning); returns the epochs' stats of this
  // call. Throws InterruptedError when a hook asks (after the checkpoint hook saved).
  std::vector<EpochStats> fit(const std::vector<StagePlan>& plan, const TrainState& start = {});

  const TrainState& state() const { return state_; }

 private:
  void run_stage(const StagePlan& stage, std::vector<EpochStats>& stats);
  // Trains one epoch from state_.position; returns the images trained on.
  // Plans the epoch (leaving out what failed to decode) and starts the loader on it.
  void start_epoch();
  std::int64_t train_epoch();
  // The epoch's next batch, its copy to the device started (the data wait and its start timed).
  std::optional<StagedBatch> next_staged();
  void one_batch(const StagedBatch& batch, bool last_of_epoch);
  void forward_and_loss(bool empty);  // ctx.output, ctx.loss and ctx.backward_loss of the batch
  void optimizer_step();              // the step (unless skipped), then zero_grad
  // With loss_read_interval: the step just taken into step_losses_, read when due.
  void close_step(double cut_short);
  void read_losses();  // into the position's smoothed loss and ctx_.read_steps; the loss check
  void rescale_gradients(double factor);  // of a group cut short, before its step
  // The training loss of `output` against class indices or a target distribution.
  torch::Tensor batch_loss(const torch::Tensor& output, const torch::Tensor& target) const;
  // Hands each saved hook state to the hook of its name (after fit_begin).
  void restore_hook_states(const std::vector<HookState>& states);
  // Adds the training images whose decoding failed (on any rank: a collective in a
  // data-parallel run) to state_.decode_failures.found; at each epoch end and before each save.
  void share_decode_failures();
  // The epoch's record, validated when there is a validation set.
  EpochStats validate_epoch(const StagePlan& stage, double data_wait);
  // Runs `event` on every hook, then throws InterruptedError if one asked.
  void fire(void (Hook::*event)(TrainContext&));

  Classifier model_;
  torch::optim::Optimizer& optimizer_;
  BatchSource& train_;
  Loader* valid_;
  TrainerOptions options_;
  BatchFeed feed_;                        // batch k+1's copy runs while batch k trains
  std::optional<Profiler> own_profiler_;  // when none is given
  Profiler* profiler_;
  GradScaler scaler_;
  TrainState state_;
  LossScalerHook scaler_hook_;
  std::optional<SyncFreeStepHook> sync_free_hook_;  // with options.sync_free_step, in its place
  std::optional<DeviceStepLosses> step_losses_;     // with options.loss_read_interval
  LossCheckHook loss_check_;
  std::vector<Hook*> hooks_;  // sorted by order(), stable
  TrainContext ctx_;
};

// Freezes (or unfreezes) the body: layer groups 0 and 1 stop getting gradients, except their
// normalisation layers (BatchNorm, LayerNorm), which keep training (fastai's train_bn).
void set_body_frozen(Classifier& model, bool frozen);

}  // namespace ltfit
