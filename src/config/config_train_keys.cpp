// The `train:` section's keys (config_sections.h): read_fields lists of train and its maps
// (optimizer, one_cycle, flat_cos, mixup, ema, early_stopping, checkpoint), each key with its
// meaning (the config reference is generated from them). Part of config_loader.cpp's one walk of
// the tree. Thread-safe: no shared state.
#include "config/config_sections.h"

#include "config/config_internal.h"
#include "config/config_yaml.h"

namespace ltfit::config_internal {
namespace {

void convert_optimizer(const Walk& walk, const Located& at, OptimizerConfig& optimizer) {
  read_fields(
      walk, at,
      {field("name", parse_optimizer_kind, optimizer_kind_name, optimizer.name,
             "adamw: Adam with decoupled weight decay (fastai's default); sgd: SGD with momentum "
             "`betas[0]`; lamb: timm's Lamb (the Adam update scaled per parameter by the trust "
             "ratio ‖p‖/‖u‖, the gradients clipped to a global norm of `max_grad_norm` first; "
             "parameters exempt from weight decay get no trust ratio); rmsprop: timm's "
             "RMSpropTF (TensorFlow's RMSprop, as in timm's EfficientNet recipe: eps inside the "
             "square root, the average of squares starting at one, the LR inside the momentum "
             "`betas[0]`)"),
       field("betas", optimizer.betas,
             "Adam's and Lamb's (beta1, beta2); the one-cycle schedule drives beta1 (SGD's and "
             "RMSprop's momentum) through `train.one_cycle.moms`"),
       field("eps", read_optional_number, write_optional_number, optimizer.eps, "number or null",
             "the optimizer's epsilon; null: the optimizer's own, adamw 1e-5 (fastai's), lamb "
             "1e-6 and rmsprop 1e-10 (timm's; timm's EfficientNet recipe sets 1e-3)",
             open_closed(0, 1, "a positive number <= 1, or null")),
       field("weight_decay", optimizer.weight_decay,
             "adamw: decoupled weight decay, `p ← p·(1 − lr·wd)` before each step; sgd, lamb, "
             "rmsprop: L2, `wd·p` added to the gradient (SGD, RMSpropTF) or to Lamb's update, as "
             "torch's and timm's",
             closed(0, 1, "a number in [0, 1]")),
       field("wd_bn_bias", optimizer.wd_bn_bias,
             "also decay BatchNorm and bias parameters (fastai v2's `wd_bn_bias`; false exempts "
             "them, as v2 does by default)"),
       field("fused", optimizer.fused,
             "step through ATen's fused multi-tensor kernels (torch.optim's `fused=True`): one "
             "kernel per layer group instead of a loop over the parameters; false: LibTorch's "
             "loop (the same arithmetic, to rounding); lamb and rmsprop have no fused step"),
       field("alpha", optimizer.alpha,
             "rmsprop: decay of the average of squared gradients, `v ← alpha·v + (1 − alpha)·g²`",
             closed_open(0, 1, "a number in [0, 1)")),
       field("max_grad_norm", read_optional_number, write_optional_number, optimizer.max_grad_norm,
             "number or null",
             "lamb: the global norm (over all parameters) the gradients are clipped to before "
             "each step (timm's default); null: no clipping",
             Bounds{0, kInfinity, /*low_open=*/true, /*high_open=*/false,
                    "a positive number, or null"})});
}

void convert_one_cycle(const Walk& walk, const Located& at, OneCycleConfig& one_cycle) {
  read_fields(walk, at,
              {field("pct_start", one_cycle.pct_start, "fraction of the steps spent warming up",
                     open_open(0, 1, "a number in (0, 1)")),
               // LR / div stays a float: the start and final LR are at most the peak.
               field("div", one_cycle.div, "start LR = peak LR / div",
                     closed(1, kMaxDivisor, "a number in [1, 1e12]")),
               field("div_final", one_cycle.div_final, "final LR = peak LR / div_final",
                     closed(1, kMaxDivisor, "a number in [1, 1e12]")),
               field("moms", one_cycle.moms,
                     "momentum (Adam's beta1) at the start, at the peak LR and at the end")});
}

void convert_flat_cos(const Walk& walk, const Located& at, FlatCosConfig& flat_cos) {
  read_fields(walk, at,
              {field("pct_start", flat_cos.pct_start, "fraction of the steps at the peak LR",
                     closed_open(0, 1, "a number in [0, 1)")),
               field("div_final", flat_cos.div_final, "final LR = peak LR / div_final",
                     closed(1, kMaxDivisor, "a number in [1, 1e12]"))});
}

void convert_mixup(const Walk& walk, const Located& at, MixupConfig& mixup) {
  read_fields(
      walk, at,
      {field("mixup_alpha", mixup.mixup_alpha,
             "MixUp: λ ~ Beta(α, α), images and targets blended λ : 1 − λ; 0: no MixUp",
             closed(0, kMaxAlpha, "a number in [0, 1000] (0: off)")),
       field("cutmix_alpha", mixup.cutmix_alpha,
             "CutMix: λ ~ Beta(α, α), a box of 1 − λ of the image pasted from its partner, λ "
             "corrected to the box's area; 0: no CutMix",
             closed(0, kMaxAlpha, "a number in [0, 1000] (0: off)")),
       field("cutmix_minmax", read_minmax, write_optional_list, mixup.cutmix_minmax,
             "null, or a list [min, max]",
             "CutMix box sides drawn as fractions in [min, max) of the image's instead of from λ "
             "(turns CutMix on with alpha 1, as timm does)"),
       field("prob", mixup.prob, "probability that a batch (pair, image) is mixed at all",
             closed(0, 1, "a probability in [0, 1]")),
       field("switch_prob", mixup.switch_prob,
             "with both alphas > 0: the probability of CutMix rather than MixUp",
             closed(0, 1, "a probability in [0, 1]")),
       field("mode", parse_mixup_mode, mixup_mode_name, mixup.mode,
             "batch: one draw per batch; pair: one per pair (i, N−1−i); elem: one per image "
             "(timm's modes)")});
}

void convert_ema(const Walk& walk, const Located& at, EmaConfig& ema) {
  read_fields(
      walk, at,
      {field("decay", ema.decay,
             "after each optimizer step ema ← decay · ema + (1 − decay) · weights (parameters and "
             "buffers, timm's `ModelEmaV3`); 0: off",
             closed_open(0, 1, "a number in [0, 1) (0: off)")),
       field("warmup", ema.warmup,
             "ModelEmaV3's warm-up: the t-th update's decay is min(decay, 1 − (1 + t)^(−2/3))"),
       field("validate", ema.validate,
             "validate, choose `best.ckpt` and run the final TTA with the averaged weights; "
             "false: with the trained ones (the average is kept in every checkpoint either "
             "way)")});
}

void convert_early_stopping(const Walk& walk, const Located& at, EarlyStoppingConfig& stopping) {
  read_fields(
      walk, at,
      {field("monitor", parse_monitor, monitor_name, stopping.monitor,
             "the epoch's figure watched: valid_loss (lower is better) or accuracy "
             "(higher)"),
       field("patience", stopping.patience,
             "epochs in a row without an improvement before the run stops; 0: off",
             closed(0, kMaxEpochs, "an integer in [0, 100000] (0: off)")),
       field("min_delta", stopping.min_delta, "an improvement must beat the best by more than this",
             closed(0, 1e6, "a number in [0, 1e6]"))});
}

void convert_checkpoint(const Walk& walk, const Located& at, CheckpointConfig& checkpoint) {
  read_fields(
      walk, at,
      {field("every_minutes", checkpoint.every_minutes,
             "also write a checkpoint mid-epoch this often (one is always written at each "
             "epoch end); 0: only at epoch ends",
             closed(0, kMaxMinutes, "a number of minutes in [0, 1e6] (0: only at epoch ends)")),
       field("keep", checkpoint.keep,
             "numbered checkpoints (`checkpoints/step-<N>.ckpt`) kept, newest first; each "
             "save removes the ones it supersedes only once it is in place, so 1 always "
             "leaves a loadable one; more keep earlier points to resume from",
             at_least(1, "an integer >= 1")),
       field("keep_resumable", checkpoint.keep_resumable,
             "once a run finishes, keep `last.ckpt`'s optimizer state and the numbered "
             "checkpoints; false (the default): a finished run keeps weights only, "
             "`last.ckpt` rewritten without the optimizer state (a link to `best.ckpt` "
             "when the last epoch was the best), which evaluate, predict, export and "
             "`--init-from` read; an unfinished run always keeps everything")});
}

// The train section's keys of the recipe and its schedule: epochs, LRs, optimizer, schedules.
std::vector<Field> train_schedule_fields(TrainConfig& train) {
  return {
      field("recipe", parse_recipe, recipe_name, train.recipe,
            "fine_tune: `freeze_epochs` with the body frozen, then `epochs` unfrozen (fastai v2's "
            "`fine_tune`); one_cycle: one `fit_one_cycle` over `epochs`"),
      field("epochs", train.epochs, "epochs (fine_tune: the unfrozen epochs)",
            closed(1, kMaxEpochs, "an integer from 1 to 100000")),
      field("freeze_epochs", train.freeze_epochs, "fine_tune: epochs with the body frozen, first",
            closed(0, kMaxEpochs, "an integer from 0 to 100000")),
      field("frozen", train.frozen,
            "one_cycle: keep the body frozen throughout, one LR as `slice(lr)` (fastai v1's "
            "`fit_one_cycle` on a new cnn learner, as in the 2019 study)"),
      field("lr", read_lr, write_lr, train.lr, "number, or a list [low, high]",
            "peak LR; [low, high] spreads it geometrically over the 3 layer groups (fastai's "
            "`slice(low, high)`)"),
      section("optimizer", convert_optimizer, train.optimizer,
              "the optimizer and its hyper-parameters"),
      field("schedule", parse_schedule_kind, schedule_kind_name, train.schedule,
            "the LR schedule over each stage's steps: one_cycle (fastai's `fit_one_cycle`, also "
            "moves the momentum), flat_cos (fastai v2's `fit_flat_cos`), cosine (timm's, per "
            "step), multistep (torch's `MultiStepLR`), plateau (torch's `ReduceLROnPlateau` on "
            "the validation loss, its state kept in checkpoints) or constant; the last four warm "
            "up first (`warmup_epochs`) and leave the momentum at `optimizer.betas[0]`"),
      section("one_cycle", convert_one_cycle, train.one_cycle,
              "the shape of fastai's one-cycle schedule"),
      section("flat_cos", convert_flat_cos, train.flat_cos,
              "the shape of fastai v2's flat-then-cosine schedule"),
      field("warmup_epochs", train.warmup_epochs,
            "cosine, multistep, plateau, constant: epochs of linear warm-up from `warmup_lr` to "
            "the peak LR, counted inside the stage (timm's `warmup_prefix: false`)",
            closed(0, kMaxEpochs, "a number of epochs in [0, 100000]")),
      field("warmup_lr", train.warmup_lr, "the LR at the warm-up's first step (timm's)",
            closed(0, kMaxLr, "a number in [0, 10]")),
      field("min_lr", train.min_lr, "cosine: the LR it ends at; plateau: the lowest LR",
            closed(0, kMaxLr, "a number in [0, 10]")),
      field("decay_milestones", train.decay_milestones,
            "multistep: the stage's epochs (0-based) from which the LR is multiplied by "
            "`decay_rate` once more"),
      field("decay_rate", train.decay_rate, "multistep, plateau: the LR's factor at each decay",
            open_closed(0, 1, "a number in (0, 1]")),
      field("patience_epochs", train.patience_epochs,
            "plateau: epochs without a better validation loss (relative 1e-4) before a decay",
            closed(0, kMaxEpochs, "an integer in [0, 100000]")),
      field("cooldown_epochs", train.cooldown_epochs,
            "plateau: epochs after a decay before bad epochs count again",
            closed(0, kMaxEpochs, "an integer in [0, 100000]"))};
}

// The train section's keys of regularisation, monitoring, numerics, device and checkpoints.
std::vector<Field> train_run_fields(TrainConfig& train) {
  return {
      field("label_smoothing", train.label_smoothing,
            "training loss against (1 − eps)·target + eps/classes (torch's `label_smoothing`); "
            "validation loss and metrics are never smoothed",
            closed_open(0, 1, "a number in [0, 1)")),
      section("mixup", convert_mixup, train.mixup,
              "MixUp and CutMix on each training batch as timm's `Mixup` does them, with soft "
              "targets (label smoothing folded in as timm's `mixup_target`); metrics keep the "
              "hard labels; off when both alphas are 0 and `cutmix_minmax` is null"),
      section("ema", convert_ema, train.ema,
              "a moving average of the weights (timm's `ModelEmaV3`), kept in every checkpoint; "
              "`evaluate`, `predict` and `export` use it when present (`export --weights "
              "model`: the trained weights)"),
      section("early_stopping", convert_early_stopping, train.early_stopping,
              "early stopping as fastai's `EarlyStoppingCallback` does it, at epoch ends: the run "
              "stops after `patience` epochs without an improvement of `monitor` (each stage "
              "starts afresh, as fastai's `reset_on_fit`); its checkpoint is written and "
              "`best.ckpt` kept"),
      field("plateau_monitor", parse_monitor, monitor_name, train.plateau_monitor,
            "plateau: the figure it watches; valid_loss (mode min) or accuracy (mode max)"),
      field("best_monitor", parse_monitor, monitor_name, train.best_monitor,
            "what `checkpoints/best.ckpt` keeps: the epoch of the highest accuracy, or of the "
            "lowest valid_loss; summary.json's `best_accuracy` is that epoch's accuracy"),
      field("class_weights", read_class_weights, write_class_weights, train.class_weights,
            "none, balanced, or a list of numbers (one per class)",
            "weights of the classes in the training loss (torch's cross_entropy `weight`); "
            "balanced: n / (classes × count) over the training images, scikit-learn's "
            "`balanced`; a list: one per class in the classes' sorted order"),
      field("pos_weight", read_pos_weight, write_pos_weight, train.pos_weight,
            "null, balanced, or a list of numbers (one per class)",
            "multi_label: each class's positive term weighed in the binary cross-entropy "
            "(torch's `BCEWithLogitsLoss` `pos_weight`); balanced: negatives / positives over "
            "the training images"),
      field("precision", parse_precision, precision_name, train.precision,
            "fp32, or mixed precision: fp16 (CUDA only, dynamic loss scaling) or bf16"),
      field("channels_last", train.channels_last, "NHWC memory format where it helps"),
      field("accumulate", train.accumulate, "batches whose gradients add up to one optimizer step",
            closed(1, kMaxAccumulate, "an integer in [1, 1024]")),
      field("clip_grad_norm", train.clip_grad_norm,
            "clip the gradients' total L2 norm to this before each step; 0: off",
            closed(0, 1e6, "a number in [0, 1e6] (0: off)")),
      field("device", parse_train_device, device_request_name, train.device,
            "auto (CUDA when present, else CPU), cpu, cuda or cuda:N; data-parallel: "
            "`cuda:$LOCAL_RANK`"),
      section("checkpoint", convert_checkpoint, train.checkpoint,
              "when checkpoints are written and how many are kept"),
      field("time_limit", read_duration, write_duration, train.time_limit_seconds,
            kDurationExpected,
            "checkpoint and stop (exit 130) before the command has run this long, set-up "
            "included; null: no limit"),
      field("profile", train.profile,
            "synchronise the device around each timed phase: exact GPU phase times in "
            "`timing.json`, a little slower")};
}

}  // namespace

void convert_train(const Walk& walk, const Located& at, TrainConfig& train) {
  std::vector<Field> fields = train_schedule_fields(train);
  for (Field& f : train_run_fields(train)) fields.push_back(std::move(f));
  read_fields(walk, at, fields);
}

}  // namespace ltfit::config_internal
