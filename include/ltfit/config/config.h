// The run configuration as plain structs, one per config section (DESIGN.md).
//
// Every field has its default here and a one-line doc comment. The YAML loader
// (config_loader.h) is the only place that fills these from a file; components take only
// their own sub-struct. Plain values, freely copyable, no thread-safety concerns.
// Each struct compares with == (field by field), which the config round-trip tests rely on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ltfit {

// `run:` what the run is called, where it goes, and its randomness.
struct RunConfig {
  std::string name = "cats_dogs";  // run directory name under out_dir
  std::string out_dir = "runs";    // parent of run directories
  std::uint64_t seed = 42;         // seeds every random choice (split, shuffle, init, augment)
  bool deterministic = false;      // force deterministic kernels (slower on GPU)

  bool operator==(const RunConfig&) const = default;
};

// `data.augment:` fastai get_transforms() parameters; training split only.
struct AugmentConfig {
  bool flip = true;           // random horizontal flip, p 0.5
  double max_rotate = 10.0;   // rotation range in degrees, ±max_rotate
  double max_zoom = 1.1;      // zoom drawn from [1, max_zoom]; 1 disables
  double max_lighting = 0.2;  // brightness/contrast strength; 0 disables
  double max_warp = 0.2;      // symmetric perspective warp magnitude; 0 disables
  double p_affine = 0.75;     // probability of each affine transform (rotate, zoom, warp)
  double p_lighting = 0.75;   // probability of each lighting transform

  bool operator==(const AugmentConfig&) const = default;
};

// Upper bound of `data.workers`.
inline constexpr int kMaxLoaderWorkers = 256;

// The names `data.formats` accepts: every format the image decoder here can read.
inline const std::vector<std::string> kImageFormatNames = {
    "jpeg", "png", "webp", "bmp", "tiff", "pnm", "pfm", "sunras", "hdr", "exr", "jpeg2000"};

// `data:` where the images are and how batches are made.
struct DataConfig {
  std::string root = "data/dogs-vs-cats";  // dataset root directory
  std::string layout = "auto";             // auto | folders | kaggle
  int valid_count = 2000;                  // kaggle layout: validation images, split by seed
  int image_size = 224;                    // side of the square training image, pixels
  int batch_size = 16;    // images per batch; at least 2 (BatchNorm needs 2 per training batch)
  int workers = 0;        // loader threads, 1 to kMaxLoaderWorkers; 0 means auto (one per core)
  AugmentConfig augment;  // training augmentation
  double subset = 1.0;    // fraction of each split's images used, per class, chosen by run.seed
                          // (quick rehearsals: `ltfit experiment --subset`)
  // Largest image decoded, in pixels (width x height as the file's header states it, read before
  // any decoder allocates); larger files are skipped as unreadable. PIL's Image.MAX_IMAGE_PIXELS.
  // 0 = no limit (a null in YAML).
  std::uint64_t max_pixels = 89'478'485;
  // Image formats decoded, identified by the file's bytes, not its name (kImageFormatNames);
  // a file of any other format is skipped as unreadable.
  std::vector<std::string> formats = {"jpeg", "png", "webp", "bmp", "tiff"};

  bool operator==(const DataConfig&) const = default;
};

// `model:` the network.
struct ModelConfig {
  std::string arch = "resnet34";        // resnet18 | resnet34 | resnet50 | resnet101 | resnet152
  std::string pretrained = "imagenet";  // imagenet | PATH to a torchvision .pth | none
  std::string head = "fastai";          // fastai | linear
  double dropout = 0.5;                 // fastai head: last dropout p (the first is half)

  bool operator==(const ModelConfig&) const = default;
};

// `train.optimizer:` the optimizer and its hyper-parameters.
struct OptimizerConfig {
  std::string name = "adamw";               // adamw | sgd
  std::vector<double> betas = {0.9, 0.99};  // Adam betas (beta1 is driven by one-cycle)
  double eps = 1.0e-5;                      // Adam epsilon
  double weight_decay = 0.01;               // decoupled weight decay: p <- p * (1 - lr * wd)
  bool wd_bn_bias = false;                  // also decay BatchNorm and bias parameters (fastai v2's
                                            // wd_bn_bias; false exempts them, v2's default)

  bool operator==(const OptimizerConfig&) const = default;
};

// `train.one_cycle:` fastai's one-cycle schedule shape.
struct OneCycleConfig {
  double pct_start = 0.3;                         // fraction of steps spent warming up
  double div = 25.0;                              // start LR = max LR / div
  double div_final = 1.0e5;                       // final LR = max LR / div_final
  std::vector<double> moms = {0.95, 0.85, 0.95};  // momentum start, middle, end

  bool operator==(const OneCycleConfig&) const = default;
};

// `train.checkpoint:` when checkpoints are written and how many are kept.
struct CheckpointConfig {
  double every_minutes = 10.0;  // also checkpoint mid-epoch this often; 0 disables
  int keep = 2;                 // newest periodic checkpoints kept

  bool operator==(const CheckpointConfig&) const = default;
};

// `train:` the recipe and how it runs.
struct TrainConfig {
  std::string recipe = "fine_tune";  // fine_tune | one_cycle
  int epochs = 3;                    // epochs (unfrozen epochs for fine_tune)
  int freeze_epochs = 1;             // fine_tune: frozen epochs first
  bool frozen = false;  // one_cycle: body frozen throughout, one LR as slice(lr) (fastai v1's
                        // fit_one_cycle on a new cnn learner, as in the 2019 study)
  std::vector<double> lr = {1.0e-3};         // max LR, or [low, high] slice over layer groups
  OptimizerConfig optimizer;                 // optimizer settings
  OneCycleConfig one_cycle;                  // schedule shape
  std::string precision = "fp32";            // fp32 | fp16 | bf16
  bool channels_last = true;                 // NHWC memory format where it helps
  int accumulate = 1;           // batches whose gradients add up to one optimizer step
  double clip_grad_norm = 0.0;  // clip the gradients' total L2 norm to this (0: off)
  std::string device = "auto";               // auto | cpu | cuda | cuda:N
  CheckpointConfig checkpoint;               // checkpoint cadence
  std::optional<double> time_limit_seconds;  // stop cleanly before this wall time (null: none)
  bool profile = false;  // synchronise the device around each timed phase (exact, a bit slower)

  bool operator==(const TrainConfig&) const = default;
};

// `eval:` evaluation after training.
struct EvalConfig {
  bool tta = true;  // also evaluate with test-time augmentation
  std::string tta_mode =
      "v1";                 // v1: 8 corner-zoom x flip views | v2: tta_n training-augmented views
  double tta_beta = 0.4;    // final = beta * plain + (1 - beta) * augmented (v2 default: 0.25)
  double tta_scale = 1.35;  // v1: corner zoom factor
  int tta_n = 4;            // v2: augmented passes

  bool operator==(const EvalConfig&) const = default;
};

// The whole configuration. `source` is the file it came from (for messages).
struct Config {
  RunConfig run;
  DataConfig data;
  ModelConfig model;
  TrainConfig train;
  EvalConfig eval;
  std::string source;  // path of the YAML file, or "<defaults>"

  bool operator==(const Config&) const = default;
};

}  // namespace ltfit
