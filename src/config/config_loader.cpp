// Loading and overriding the YAML configuration (config_loader.h).
//
// Pipeline: text -> YAML tree -> `--set` overrides spliced into the tree -> structs (the
// convert_* functions below, the only code that walks the document; enumerations are parsed
// here by config.h's parse_*) -> range rules (config_rules.cpp, written once against the
// structs). Reading one value, checking its
// type and naming the file and line (or the `--set`) of a bad one is config_yaml.cpp's and the
// shared yaml_reader.h's job (duplicate keys are refused when the document is loaded).
// Writing (to_yaml) is in config_writer.cpp; only these src/config files include yaml-cpp.
// Thread-safe: no shared state.
#include "ltfit/config/config_loader.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <utility>

#include "config/config_internal.h"
#include "config/config_yaml.h"
#include "ltfit/util/error.h"
#include "ltfit/util/input_file.h"

namespace ltfit {
namespace {

using namespace config_internal;

// ---- tree -> structs: the one place that reads the tree --------------------------------------
// Each map's keys are named once, in read_fields' list: what is read is what is accepted. Each
// field also says what it means: these lists are the one description of the config keys, from
// which the reference (config_reference.h, docs/config.md) is generated.

void convert_run(const Walk& walk, const Located& at, RunConfig& run) {
  read_fields(
      walk, at,
      {field("name", run.name,
             "name of the run directory under `run.out_dir` (a new run never overwrites an "
             "earlier one: it gets `<name>-2`, `<name>-3`, ...)"),
       field("out_dir", run.out_dir, "parent folder of the run directories"),
       field("seed", run.seed,
             "seeds every random choice: validation split, shuffle, head init, "
             "augmentation, dropout"),
       field("deterministic", run.deterministic,
             "use deterministic algorithms only (slower on GPU; cuDNN benchmark off)"),
       field("tensorboard", run.tensorboard,
             "write TensorBoard events under `<run dir>/tb/` (`tensorboard --logdir runs`)")});
}

void convert_random_erasing(const Walk& walk, const Located& at, RandomErasingConfig& erasing) {
  read_fields(
      walk, at,
      {field("p", erasing.p, "probability that an image gets a box erased; 0: off"),
       field("scale", erasing.scale, "the box's area as a fraction of the image's: [min, max]"),
       field("ratio", erasing.ratio, "the box's aspect ratio range [min, max] (log-uniform)"),
       field("value", read_erasing_value, erasing, "random, or a number",
             "random: per-pixel standard normal noise (on the normalized image, timm's "
             "`mode='pixel'`); a number: that value")});
}

void convert_rand_augment(const Walk& walk, const Located& at, RandAugmentConfig& rand_augment) {
  read_fields(walk, at,
              {field("num_ops", rand_augment.num_ops,
                     "ops applied to each image, one after another (torchvision's `num_ops`)"),
               field("magnitude", rand_augment.magnitude,
                     "the magnitude bin of every op, 0 (weakest) to 30 (strongest) of "
                     "torchvision's 31")});
}

void convert_augment(const Walk& walk, const Located& at, AugmentConfig& augment) {
  if (walk.describe == nullptr && at.node.IsDefined() && at.node.IsScalar()) {
    if (!is_plain_scalar(at.node) || at.node.Scalar() != "none")
      fail_type(walk, at, "none, or a map of the keys below (flip, max_rotate, ...)");
    augment = augment_none();
    return;
  }
  read_fields(
      walk, at,
      {field("flip", augment.flip, "random horizontal flip, p 0.5"),
       field("max_rotate", augment.max_rotate, "rotation range in degrees: ±max_rotate"),
       field("max_zoom", augment.max_zoom, "zoom drawn from [1, max_zoom]; 1 disables it"),
       field("max_lighting", augment.max_lighting,
             "brightness and contrast strength; 0 disables them"),
       field("max_warp", augment.max_warp, "symmetric perspective warp magnitude; 0 disables it"),
       field("p_affine", augment.p_affine,
             "probability of each affine transform (rotate, zoom, warp)"),
       field("p_lighting", augment.p_lighting,
             "probability of each lighting transform (brightness, contrast)"),
       field("random_crop", augment.random_crop,
             "the training crop (the shorter side's square) at a random position, fastai's "
             "`rand_crop`; false: centred, as validation images are"),
       field("policy", parse_augment_policy, augment.policy,
             "an automatic augmentation policy on the final-size training image, after the "
             "transforms above: none, rand_augment (torchvision's `RandAugment`) or "
             "trivial_augment (torchvision's `TrivialAugmentWide`), their 14 ops on uint8 pixels "
             "with nearest resampling and black fill; not applied by TTA"),
       section("rand_augment", convert_rand_augment, augment.rand_augment,
               "RandAugment's settings, used when `policy: rand_augment`"),
       section("random_erasing", convert_random_erasing, augment.random_erasing,
               "random erasing as torchvision's `RandomErasing` does it, on the normalized "
               "training batch, before MixUp (`augment: none` turns it off too)")});
}

void convert_csv(const Walk& walk, const Located& at, CsvConfig& csv) {
  read_fields(
      walk, at,
      {field("file", csv.file, "the CSV file, relative to `data.root` (or absolute)"),
       field("path_column", csv.path_column,
             "the column of image paths (relative to `data.root`/`folder`): a header name, or a "
             "0-based index"),
       field("label_column", csv.label_column,
             "the column of labels: a header name, or a 0-based index"),
       field("valid_column", read_optional_text, csv.valid_column, "null, or a column",
             "a column whose truthy values (1, true, yes, t, y, case-insensitive) mark the "
             "validation rows (fastai's `valid_col`); null: split by `data.valid_pct`"),
       field("label_delim", read_optional_text, csv.label_delim, "null, or a string",
             "separator of several labels in one cell (fastai's `label_delim`, e.g. ' '); set, "
             "the task is multi-label unless `model.task` says otherwise"),
       field("folder", csv.folder, "the images' folder under `data.root` (fastai's `folder`)"),
       field("suffix", csv.suffix,
             "appended to each path (fastai's `suffix`, e.g. .jpg for names without one)")});
}

void convert_data(const Walk& walk, const Located& at, DataConfig& data) {
  read_fields(
      walk, at,
      {field("root", data.root,
             "dataset root: `train/<class>/*`, `valid/<class>/*` (folders), or Kaggle's flat "
             "`<class>.<N>.jpg` in `root/train` or `root` (kaggle)"),
       field("layout", parse_data_layout, data.layout,
             "how the images under `data.root` are arranged and labelled: folders "
             "(`train_folder`/`valid_folder` of class folders, or class folders alone), kaggle "
             "(flat `<class>.<N>.jpg`), csv (`data.csv`), pattern (`label_pattern` on file "
             "names); auto: folders when `train_folder` holds class folders, else csv when "
             "`data.csv.file` exists, else kaggle when `<class>.<N>.jpg` files do, else plain "
             "class folders"),
       field("valid_count", data.valid_count,
             "kaggle layout: images held out for validation, chosen by `run.seed`"),
       section("csv", convert_csv, data.csv,
               "csv layout: a table of image paths and labels (fastai's `from_csv`), read as RFC "
               "4180 (quotes, embedded commas and newlines, CRLF, a UTF-8 BOM)"),
       field("label_pattern", data.label_pattern,
             "pattern layout: an ECMAScript regular expression; the first group of a full match "
             "of each file name (under `data.root`, recursively) is its label (fastai's "
             "`from_name_re`); files that do not match are counted and named"),
       field("valid_pct", data.valid_pct,
             "where no split is given (class folders without `valid_folder`, csv without "
             "`valid_column`, pattern): the fraction of images held out for validation, drawn by "
             "`run.seed` (fastai's `RandomSplitter`), written to the run's `split.csv`"),
       field("train_folder", data.train_folder, "folders layout: the training split's folder"),
       field("valid_folder", data.valid_folder,
             "folders layout: the validation split's folder (`val` for ImageNet's tree)"),
       field("image_size", data.image_size, "side of the square training image, in pixels"),
       field("batch_size", data.batch_size,
             "images per batch (data-parallel: the global batch, split over the ranks)"),
       field("workers", read_workers, data.workers, "auto, or an integer",
             "loader threads (decode, augment, batch); auto: one per core"),
       section("augment", convert_augment, data.augment,
               "training augmentation, fastai's `get_transforms()` parameters; validation images "
               "are only resized and centre-cropped. `augment: none` turns all of it off in one "
               "key (flip false, max_rotate 0, max_zoom 1, max_lighting 0, max_warp 0, p_affine "
               "0, p_lighting 0, random_crop false: training images are resized and centre-cropped "
               "as validation images are) and is written back as `none`"),
       field("size_schedule", read_size_schedule, data.size_schedule,
             "a list of [epoch, size] pairs, or []",
             "progressive resizing: from each (0-based, over all stages) epoch on, training "
             "images are `size` pixels square; validation and TTA stay at `image_size`; the "
             "size is in the log, `epochs.csv` and TensorBoard. [] (default): `image_size` "
             "throughout"),
       field("subset", data.subset,
             "fraction of each split's images used, per class, chosen by `run.seed` (quick "
             "rehearsals: `ltfit experiment --subset`)"),
       field("max_pixels", read_max_pixels, data.max_pixels, "integer >= 0, or null",
             "largest image decoded, width × height from the file's header (PIL's "
             "MAX_IMAGE_PIXELS); larger files are skipped as unreadable; null: no limit"),
       field("formats", read_formats, data.formats, "list of format names",
             "image formats decoded, recognised from the file's bytes, not its name; files of "
             "any other format are skipped as unreadable")});
}

void convert_model(const Walk& walk, const Located& at, ModelConfig& model) {
  read_fields(
      walk, at,
      {field("arch", model.arch,
             "the backbone, one of `ltfit models` (torchvision's architecture and weights)"),
       field("pretrained", parse_pretrained, model.pretrained,
             "imagenet (torchvision's weights, from the torch hub cache or downloaded), the path "
             "of a torchvision `.pth` file, or none (random init)"),
       field("head", parse_head_kind, model.head,
             "the classifier on the body; fastai: concat pool, BN, dropout, linear 512, ReLU, BN, "
             "dropout, linear; linear: torchvision's average pool and fc"),
       field("dropout", model.dropout, "fastai head: the last dropout p (the first is half)"),
       field("task", parse_task, model.task,
             "single_label: one class per image (softmax, cross-entropy); multi_label: a set of "
             "labels per image (a sigmoid per class, binary cross-entropy, fastai's "
             "`MultiCategoryBlock`); auto: multi_label when `data.csv.label_delim` is set")});
}

void convert_optimizer(const Walk& walk, const Located& at, OptimizerConfig& optimizer) {
  read_fields(
      walk, at,
      {field("name", parse_optimizer_kind, optimizer.name,
             "adamw: Adam with decoupled weight decay (fastai's default); sgd: SGD with momentum "
             "`betas[0]`"),
       field("betas", optimizer.betas,
             "Adam's (beta1, beta2); the one-cycle schedule drives beta1 (SGD's momentum) "
             "through `train.one_cycle.moms`"),
       field("eps", optimizer.eps, "Adam's epsilon"),
       field("weight_decay", optimizer.weight_decay,
             "decoupled weight decay: `p ← p·(1 − lr·wd)` before each step"),
       field("wd_bn_bias", optimizer.wd_bn_bias,
             "also decay BatchNorm and bias parameters (fastai v2's `wd_bn_bias`; false exempts "
             "them, as v2 does by default)")});
}

void convert_one_cycle(const Walk& walk, const Located& at, OneCycleConfig& one_cycle) {
  read_fields(walk, at,
              {field("pct_start", one_cycle.pct_start, "fraction of the steps spent warming up"),
               field("div", one_cycle.div, "start LR = peak LR / div"),
               field("div_final", one_cycle.div_final, "final LR = peak LR / div_final"),
               field("moms", one_cycle.moms,
                     "momentum (Adam's beta1) at the start, at the peak LR and at the end")});
}

void convert_flat_cos(const Walk& walk, const Located& at, FlatCosConfig& flat_cos) {
  read_fields(walk, at,
              {field("pct_start", flat_cos.pct_start, "fraction of the steps at the peak LR"),
               field("div_final", flat_cos.div_final, "final LR = peak LR / div_final")});
}

void convert_mixup(const Walk& walk, const Located& at, MixupConfig& mixup) {
  read_fields(
      walk, at,
      {field("mixup_alpha", mixup.mixup_alpha,
             "MixUp: λ ~ Beta(α, α), images and targets blended λ : 1 − λ; 0: no MixUp"),
       field("cutmix_alpha", mixup.cutmix_alpha,
             "CutMix: λ ~ Beta(α, α), a box of 1 − λ of the image pasted from its partner, λ "
             "corrected to the box's area; 0: no CutMix"),
       field("cutmix_minmax", read_minmax, mixup.cutmix_minmax, "null, or a list [min, max]",
             "CutMix box sides drawn as fractions in [min, max) of the image's instead of from λ "
             "(turns CutMix on with alpha 1, as timm does)"),
       field("prob", mixup.prob, "probability that a batch (pair, image) is mixed at all"),
       field("switch_prob", mixup.switch_prob,
             "with both alphas > 0: the probability of CutMix rather than MixUp"),
       field("mode", parse_mixup_mode, mixup.mode,
             "batch: one draw per batch; pair: one per pair (i, N−1−i); elem: one per image "
             "(timm's modes)")});
}

void convert_ema(const Walk& walk, const Located& at, EmaConfig& ema) {
  read_fields(
      walk, at,
      {field("decay", ema.decay,
             "after each optimizer step ema ← decay · ema + (1 − decay) · weights (parameters and "
             "buffers, timm's `ModelEmaV3`); 0: off"),
       field("warmup", ema.warmup,
             "ModelEmaV3's warm-up: the t-th update's decay is min(decay, 1 − (1 + t)^(−2/3))"),
       field("validate", ema.validate,
             "validate, choose `best.ckpt` and run the final TTA with the averaged weights; "
             "false: with the trained ones (the average is kept in every checkpoint either "
             "way)")});
}

void convert_early_stopping(const Walk& walk, const Located& at, EarlyStoppingConfig& stopping) {
  read_fields(walk, at,
              {field("monitor", parse_monitor, stopping.monitor,
                     "the epoch's figure watched: valid_loss (lower is better) or accuracy "
                     "(higher)"),
               field("patience", stopping.patience,
                     "epochs in a row without an improvement before the run stops; 0: off"),
               field("min_delta", stopping.min_delta,
                     "an improvement must beat the best by more than this")});
}

void convert_checkpoint(const Walk& walk, const Located& at, CheckpointConfig& checkpoint) {
  read_fields(walk, at,
              {field("every_minutes", checkpoint.every_minutes,
                     "also write a checkpoint mid-epoch this often (one is always written at each "
                     "epoch end); 0: only at epoch ends"),
               field("keep", checkpoint.keep,
                     "numbered checkpoints (`checkpoints/step-<N>.ckpt`) kept, newest first; each "
                     "save removes the ones it supersedes only once it is in place, so 1 always "
                     "leaves a loadable one; more keep earlier points to resume from")});
}

void convert_train(const Walk& walk, const Located& at, TrainConfig& train) {
  read_fields(
      walk, at,
      {field("recipe", parse_recipe, train.recipe,
             "fine_tune: `freeze_epochs` with the body frozen, then `epochs` unfrozen (fastai v2's "
             "`fine_tune`); one_cycle: one `fit_one_cycle` over `epochs`"),
       field("epochs", train.epochs, "epochs (fine_tune: the unfrozen epochs)"),
       field("freeze_epochs", train.freeze_epochs, "fine_tune: epochs with the body frozen, first"),
       field("frozen", train.frozen,
             "one_cycle: keep the body frozen throughout, one LR as `slice(lr)` (fastai v1's "
             "`fit_one_cycle` on a new cnn learner, as in the 2019 study)"),
       field("lr", read_lr, train.lr, "number, or a list [low, high]",
             "peak LR; [low, high] spreads it geometrically over the 3 layer groups (fastai's "
             "`slice(low, high)`)"),
       section("optimizer", convert_optimizer, train.optimizer,
               "the optimizer and its hyper-parameters"),
       field("schedule", parse_schedule_kind, train.schedule,
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
             "the peak LR, counted inside the stage (timm's `warmup_prefix: false`)"),
       field("warmup_lr", train.warmup_lr, "the LR at the warm-up's first step (timm's)"),
       field("min_lr", train.min_lr, "cosine: the LR it ends at; plateau: the lowest LR"),
       field("decay_milestones", train.decay_milestones,
             "multistep: the stage's epochs (0-based) from which the LR is multiplied by "
             "`decay_rate` once more"),
       field("decay_rate", train.decay_rate, "multistep, plateau: the LR's factor at each decay"),
       field("patience_epochs", train.patience_epochs,
             "plateau: epochs without a better validation loss (relative 1e-4) before a decay"),
       field("cooldown_epochs", train.cooldown_epochs,
             "plateau: epochs after a decay before bad epochs count again"),
       field("label_smoothing", train.label_smoothing,
             "training loss against (1 − eps)·target + eps/classes (torch's `label_smoothing`); "
             "validation loss and metrics are never smoothed"),
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
       field("plateau_monitor", parse_monitor, train.plateau_monitor,
             "plateau: the figure it watches; valid_loss (mode min) or accuracy (mode max)"),
       field("best_monitor", parse_monitor, train.best_monitor,
             "what `checkpoints/best.ckpt` keeps: the epoch of the highest accuracy, or of the "
             "lowest valid_loss; summary.json's `best_accuracy` is that epoch's accuracy"),
       field("class_weights", read_class_weights, train.class_weights,
             "none, balanced, or a list of numbers (one per class)",
             "weights of the classes in the training loss (torch's cross_entropy `weight`); "
             "balanced: n / (classes × count) over the training images, scikit-learn's "
             "`balanced`; a list: one per class in the classes' sorted order"),
       field("pos_weight", read_pos_weight, train.pos_weight,
             "null, balanced, or a list of numbers (one per class)",
             "multi_label: each class's positive term weighed in the binary cross-entropy "
             "(torch's `BCEWithLogitsLoss` `pos_weight`); balanced: negatives / positives over "
             "the training images"),
       field("precision", parse_precision, train.precision,
             "fp32, or mixed precision: fp16 (CUDA only, dynamic loss scaling) or bf16"),
       field("channels_last", train.channels_last, "NHWC memory format where it helps"),
       field("accumulate", train.accumulate,
             "batches whose gradients add up to one optimizer step"),
       field("clip_grad_norm", train.clip_grad_norm,
             "clip the gradients' total L2 norm to this before each step; 0: off"),
       field("device", parse_train_device, train.device,
             "auto (CUDA when present, else CPU), cpu, cuda or cuda:N; data-parallel: "
             "`cuda:$LOCAL_RANK`"),
       section("checkpoint", convert_checkpoint, train.checkpoint,
               "when checkpoints are written and how many are kept"),
       field("time_limit", read_duration, train.time_limit_seconds, kDurationExpected,
             "checkpoint and stop (exit 130) before the command has run this long, set-up "
             "included; null: no limit"),
       field("profile", train.profile,
             "synchronise the device around each timed phase: exact GPU phase times in "
             "`timing.json`, a little slower")});
}

void convert_eval(const Walk& walk, const Located& at, EvalConfig& eval) {
  const auto read_mode = [&eval](const Walk& w, const Located& mode) {
    read_choice(w, mode, parse_tta_mode, eval.tta_mode);
    // fastai v2 blends with lerp weight 0.25, v1 with beta 0.4: an unset beta follows the mode.
    eval.tta_beta = default_tta_beta(eval.tta_mode);
  };
  read_fields(
      walk, at,
      {field("tta", eval.tta, "also evaluate with test-time augmentation after training"),
       {"tta_mode", read_mode, [] { return choices_text(parse_tta_mode); },
        "v1: fastai v1's `TTA`, 8 corner-zoom × flip views; v2: fastai v2's `tta`, `tta_n` passes "
        "with the training augmentation"},
       field("tta_beta", eval.tta_beta,
             "final = beta·plain + (1 − beta)·mean of the views; unset, it follows `tta_mode` "
             "(v1: 0.4, v2: 0.25)"),
       field("tta_scale", eval.tta_scale, "v1: zoom factor of each corner view"),
       field("tta_n", eval.tta_n, "v2: augmented passes"),
       field("threshold", eval.threshold,
             "multi_label: a class is predicted when its probability is above this (fastai's "
             "`thresh`)"),
       field("thresholds", read_thresholds, eval.thresholds, "null, or a list of numbers",
             "multi_label: one threshold per class, in the classes' sorted order (`evaluate "
             "--tune-thresholds` writes them into a checkpoint); null: `threshold` for all")});
}

void convert_dist(const Walk& walk, const Located& at, DistConfig& dist) {
  read_fields(
      walk, at,
      {field("backend", parse_dist_backend, dist.backend,
             "auto: nccl on CUDA, gloo on CPU; off: never join a group, even under torchrun"),
       field("timeout_seconds", dist.timeout_seconds,
             "a collective or the rendezvous waiting longer fails the run (exit 5)"),
       field("bucket_mb", dist.bucket_mb,
             "MiB of gradients per all-reduce bucket (DistributedDataParallel's 25)"),
       field("bn_buffers", parse_bn_buffers, dist.bn_buffers,
             "BatchNorm running statistics across ranks: average (the mean over the ranks) or "
             "rank0 (rank 0's, like DDP's `broadcast_buffers`)"),
       field("interface", dist.interface,
             "network interface for Gloo (like `GLOO_SOCKET_IFNAME`); empty: the one that reaches "
             "`MASTER_ADDR`")});
}

void convert_config(const Walk& walk, const Located& at, Config& config) {
  read_fields(
      walk, at,
      {section("run", convert_run, config.run,
               "what the run is called, where it goes, and its randomness"),
       section("data", convert_data, config.data, "where the images are and how batches are made"),
       section("model", convert_model, config.model, "the network"),
       section("train", convert_train, config.train, "the recipe and how it runs"),
       section("eval", convert_eval, config.eval, "evaluation after training"),
       section("dist", convert_dist, config.dist,
               "data-parallel training, when launched by `torchrun`, `srun` or `RANK`/`WORLD_SIZE` "
               "variables")});
}

Config convert(const Walk& walk, const YAML::Node& root) {
  Config config;
  config.source = walk.source;
  convert_config(walk, Located{root, ""}, config);
  return config;
}

// ---- loading -------------------------------------------------------------------------------

// Writes `value` at keys[i..] under `node`, creating maps for missing or null parents.
void set_path(YAML::Node node, const std::vector<std::string>& keys, std::size_t i,
              const YAML::Node& value, const Context& context) {
  if (i + 1 == keys.size()) {
    node[keys[i]] = value;
    return;
  }
  const YAML::Node existing = std::as_const(node)[keys[i]];
  if (!existing.IsDefined() || existing.IsNull()) {
    node[keys[i]] = YAML::Node(YAML::NodeType::Map);
  } else if (!existing.IsMap()) {
    const std::vector<std::string> parent(keys.begin(), keys.begin() + i + 1);
    fail_at(context, existing, join(parent, "."), "is " + describe(existing) + ", not a map");
  }
  set_path(node[keys[i]], keys, i + 1, value, context);
}

void apply_override(YAML::Node& root, const Override& entry, const Context& context) {
  const std::vector<std::string> keys = split(entry.key, '.');
  if (std::any_of(keys.begin(), keys.end(), [](const auto& k) { return k.empty(); })) {
    throw ConfigError("--set expects a dotted key like data.batch_size, got '" + entry.key + "'");
  }
  YAML::Node value;
  try {
    value = YAML::Load(entry.value);
  } catch (const YAML::Exception& e) {
    throw ConfigError("--set " + entry.key + "=" + entry.value + ": invalid YAML value: " + e.msg,
                      "quote strings and close brackets: --set train.lr=[1e-5,1e-3]");
  }
  check_unique_keys(context, Located{value, entry.key});
  set_path(root, keys, 0, value, context);
}

// One error for every problem found: the problem itself when there is one; else each problem on
// a line of its own (with its hint, unless the line already says it), in the order found.
ConfigError all_problems(const std::vector<ConfigError>& errors, const std::string& source) {
  if (errors.size() == 1) return errors.front();
  std::string message = std::to_string(errors.size()) + " problems in " + source + ":";
  for (const ConfigError& e : errors) {
    const std::string line = e.what();
    message += "\n  " + line;
    if (!e.hint().empty() && line.find(e.hint()) == std::string::npos &&
        line.find("did you mean") == std::string::npos) {
      message += " (" + e.hint() + ")";
    }
  }
  return ConfigError(message, "fix each of them: every unknown key and invalid value is listed");
}

}  // namespace

Override parse_override(const std::string& text) {
  const std::size_t equals = text.find('=');
  const auto is_space = [](unsigned char c) { return std::isspace(c) != 0; };
  std::string key = equals == std::string::npos ? "" : text.substr(0, equals);
  key.erase(std::remove_if(key.begin(), key.end(), is_space), key.end());
  if (key.empty()) {
    throw ConfigError("--set expects key=value, got '" + text + "'",
                      "for example --set data.batch_size=64");
  }
  return Override{key, text.substr(equals + 1)};
}

Config load_config(const std::string& path, const std::vector<Override>& overrides) {
  return load_config_from_string(read_input_file(path, "config file"), path, overrides);
}

Config load_config_from_string(const std::string& yaml, const std::string& source,
                               const std::vector<Override>& overrides) {
  std::vector<ConfigError> errors;
  Walk context{{source, overrides}};
  context.errors = &errors;
  YAML::Node root = load_document(yaml, context);
  if (!root.IsNull() && !root.IsMap()) {
    fail_type(context, Located{root, ""}, "a map with keys run, data, model, train, eval");
  }
  for (const auto& entry : overrides) apply_override(root, entry, context);
  Config config = convert(context, root);
  std::vector<std::string> broken;  // keys already reported: each key's first broken rule only
  config_internal::validate_with(config, [&](const config_internal::Problem& problem) {
    if (std::find(broken.begin(), broken.end(), problem.path) != broken.end()) return;
    broken.push_back(problem.path);
    const YAML::Node node = find_node(root, problem.path);
    const std::string found = node.IsDefined() ? describe(node) : problem.found;
    errors.push_back(error_at(context, node, problem.path,
                              "expected " + problem.expected + ", got " + found, problem.hint));
  });
  if (!errors.empty()) throw all_problems(errors, source);
  return config;
}

namespace config_internal {

std::vector<KeyDoc> describe_config() {
  std::vector<KeyDoc> keys;
  Walk walk{{"<defaults>", {}}};
  walk.describe = &keys;
  Config defaults;
  convert_config(walk, Located{YAML::Node(YAML::NodeType::Undefined), ""}, defaults);
  return keys;
}

}  // namespace config_internal

double parse_duration(const std::string& text, const std::string& key) {
  const auto seconds = duration_seconds(text);
  if (!seconds) {
    throw ConfigError(key + ": expected " + std::string(kDurationExpected) + ", got '" + text +
                      "'");
  }
  return *seconds;
}

}  // namespace ltfit
