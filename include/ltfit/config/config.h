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
#include <string_view>
#include <utility>
#include <vector>

#include "ltfit/config/config_enums.h"  // the enumerations and their names
#include "ltfit/util/device_request.h"  // DeviceRequest, train.device
#include "ltfit/util/precision_name.h"  // Precision, parse_precision, precision_name

namespace ltfit {

// The `model.arch` values: the names in the model layer's architecture registry
// (model/arch_registry.h, which defines this function, so that config validation and the
// registry cannot disagree), family by family, smallest first.
const std::vector<std::string>& model_arch_names();

// `run:` what the run is called, where it goes, and its randomness.
struct RunConfig {
  std::string name = "cats_dogs";  // run directory name under out_dir
  std::string out_dir = "runs";    // parent of run directories
  std::uint64_t seed = 42;         // seeds every random choice (split, shuffle, init, augment)
  bool deterministic = false;      // force deterministic kernels (slower on GPU)
  bool tensorboard = true;         // write TensorBoard events under <run dir>/tb/

  bool operator==(const RunConfig&) const = default;
};

// `data.augment.policy`: an automatic augmentation policy on the final-size training image.
enum class AugmentPolicy {
  kNone,
  kRandAugment,     // torchvision's RandAugment(num_ops, magnitude, num_magnitude_bins=31)
  kTrivialAugment,  // torchvision's TrivialAugmentWide()
};
AugmentPolicy parse_augment_policy(std::string_view text);  // none | rand_augment | trivial_augment
const std::string& augment_policy_name(AugmentPolicy policy);

// `data.augment.rand_augment:` RandAugment's settings.
struct RandAugmentConfig {
  int num_ops = 2;    // ops applied to each image
  int magnitude = 9;  // magnitude bin of each op, of 31

  bool operator==(const RandAugmentConfig&) const = default;
};

// `data.augment.random_erasing:` torchvision's RandomErasing on the normalized image.
struct RandomErasingConfig {
  double p = 0.0;                            // probability per image; 0: off
  std::vector<double> scale = {0.02, 0.33};  // erased area as a fraction of the image's
  std::vector<double> ratio = {0.3, 3.3};    // the box's aspect ratio range (log-uniform)
  bool random_value = true;  // per-pixel normal noise (timm's mode 'pixel'); false: `value`
  double value = 0.0;        // the erased pixels' value when not random

  bool operator==(const RandomErasingConfig&) const = default;
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
  bool random_crop = true;    // the training window (data.resize_method's) at a random position;
                              // false: centred, as validation's
  TrainCrop crop = TrainCrop::kResize;      // resize: data.resize_method's window; random_resized
  std::vector<double> scale = {0.08, 1.0};  // random_resized: the area fraction range
  std::vector<double> ratio = {0.75,
                               4.0 / 3.0};      // random_resized: aspect ratio range (log-uniform)
  RandomErasingConfig random_erasing;           // torchvision's RandomErasing, after normalization
  AugmentPolicy policy = AugmentPolicy::kNone;  // none | rand_augment | trivial_augment
  RandAugmentConfig rand_augment;               // policy: rand_augment
  AugmentPlace on = AugmentPlace::kHost;        // host: per image in the loader; device: batch

  bool operator==(const AugmentConfig&) const = default;
};

// Upper bound of `data.workers`.
inline constexpr int kMaxLoaderWorkers = 256;

// The names `data.formats` accepts: every format the image decoder here can read.
inline const std::vector<std::string> kImageFormatNames = {
    "jpeg", "png", "webp", "bmp", "tiff", "pnm", "pfm", "sunras", "hdr", "exr", "jpeg2000"};

// One step of `data.size_schedule`: from `epoch` (0-based, over all stages) on, training images
// are `size` pixels square.
struct SizeStep {
  int epoch = 0;
  int size = 224;

  bool operator==(const SizeStep&) const = default;
};

// `data:` where the images are and how batches are made.
// `data.csv:` where a CSV of file names and labels keeps them (fastai's `from_csv`). Columns are
// named by header name, or by 0-based index written as digits.
struct CsvConfig {
  std::string file = "labels.csv";  // relative to data.root (or absolute)
  std::string path_column = "fname";
  std::string label_column = "labels";
  // Truthy values mark validation rows; null: none. The default, is_valid (fastai's ColSplitter
  // column), is used when the CSV has it and else falls back to data.valid_pct.
  std::optional<std::string> valid_column = "is_valid";
  std::optional<std::string> label_delim;  // several labels per cell (multi-label); null: one
  std::string folder;                      // images under data.root/folder
  std::string suffix;                      // appended to each path (e.g. ".jpg")

  bool operator==(const CsvConfig&) const = default;
};

// The shards layout's tar files (WebDataset's): names relative to data.root, with brace ranges
// ({000000..000099}, zero-padded as written), brace lists ({a,b}) and * / ? in the file name.
struct ShardsConfig {
  std::string train = "train-*.tar";
  std::string valid = "valid-*.tar";  // none matching the default: split by data.valid_pct

  bool operator==(const ShardsConfig&) const = default;
};

struct DataConfig {
  std::string root = "data/dogs-vs-cats";  // dataset root directory
  DataLayout layout = DataLayout::kAuto;   // auto | folders | kaggle | csv | pattern | cifar*
  int valid_count = 0;  // kaggle layout: validation images, drawn by seed; 0: by valid_pct
  CsvConfig csv;        // csv layout
  std::string label_pattern = R"(^(.+)_\d+\.jpg$)";  // pattern layout: group 1 is the label
  CifarLabel cifar_label = CifarLabel::kFine;        // cifar100 layout: which label trains
  ShardsConfig shards;                               // shards layout
  double valid_pct = 0.2;                            // split drawn by run.seed where none is given
  std::string train_folder = "train";                // folders layout: the training split's folder
  std::string valid_folder = "valid";  // folders layout: the validation split's folder
  int image_size = 224;                // side of the square training image, pixels
  ResizeMethod resize_method = ResizeMethod::kCrop;  // how an image becomes a square
  PadMode pad_mode = PadMode::kReflection;           // what fills pixels outside the image
  int batch_size = 16;    // images per batch; at least 2 (BatchNorm needs 2 per training batch)
  int workers = 0;        // loader threads, 1 to kMaxLoaderWorkers; 0 means auto (one per core)
  AugmentConfig augment;  // training augmentation
  // progressive resizing: the training size from each step's epoch on (empty: image_size
  // throughout); validation and TTA stay at image_size
  std::vector<SizeStep> size_schedule;
  double subset = 1.0;  // fraction of each split's images used, per class, chosen by run.seed
                        // (quick rehearsals: `ltfit experiment --subset`)
  // Largest image decoded, in pixels (width x height as the file's header states it, read before
  // any decoder allocates); larger files are skipped as unreadable. PIL's Image.MAX_IMAGE_PIXELS.
  // 0 = no limit (a null in YAML).
  std::uint64_t max_pixels = 89'478'485;
  // Image formats decoded, identified by the file's bytes, not its name (kImageFormatNames);
  // a file of any other format is skipped as unreadable.
  std::vector<std::string> formats = {"jpeg", "png", "webp", "bmp", "tiff"};
  DataCache cache = DataCache::kNone;      // none | ram: decoded images kept between epochs
  std::uint64_t cache_bytes = 4ULL << 30;  // ram: at most this many bytes of decoded pixels

  bool operator==(const DataConfig&) const = default;
};

// `model:` the network.
struct ModelConfig {
  std::string arch = "resnet34";      // one of `ltfit models` (resnet34, convnext_tiny, ...)
  PretrainedWeights pretrained;       // imagenet | none | PATH to a torchvision .pth
  HeadKind head = HeadKind::kFastai;  // fastai | linear
  double dropout = 0.5;               // fastai head: last dropout p (the first is half)
  Task task = Task::kAuto;            // auto | single_label | multi_label
  Stem stem = Stem::kImagenet;        // imagenet | cifar (ResNets: 3×3 stride-1 conv, no pool)
  // stochastic depth of the deepest block, the others' rising linearly to it (timm's
  // drop_path_rate); null: the arch's own (torchvision's: ConvNeXt 0.1/0.4, EfficientNet 0.2, ...)
  std::optional<double> drop_path;

  bool operator==(const ModelConfig&) const = default;
};

// `train.optimizer:` the optimizer and its hyper-parameters.
struct OptimizerConfig {
  OptimizerKind name = OptimizerKind::kAdamW;  // adamw | sgd | lamb | rmsprop
  // Adam/Lamb (beta1, beta2); beta1 is SGD's and RMSprop's momentum, driven by one-cycle
  std::vector<double> betas = {0.9, 0.99};
  // The optimizer's epsilon; null: its own default (default_eps)
  std::optional<double> eps;
  // adamw, sgd: decoupled weight decay p <- p * (1 - lr * wd); lamb, rmsprop: L2, as timm's
  double weight_decay = 0.01;
  bool wd_bn_bias = false;  // also decay BatchNorm and bias parameters (fastai v2's
                            // wd_bn_bias; false exempts them, v2's default)
  bool fused = true;        // ATen's fused AdamW/SGD kernels (train/fused_optimizer.h)
  double alpha = 0.9;       // rmsprop: decay of the average of squared gradients (timm's)
  // lamb: the global gradient norm clipped to before each step (timm's 1.0); null: no clipping
  std::optional<double> max_grad_norm = 1.0;

  // The epsilon `name` uses when eps is null: adamw 1e-5 (fastai v2's), lamb 1e-6 and rmsprop
  // 1e-10 (timm's defaults); sgd has none (1e-5, unused).
  double default_eps() const {
    if (name == OptimizerKind::kLamb) return 1.0e-6;
    if (name == OptimizerKind::kRmsprop) return 1.0e-10;
    return 1.0e-5;
  }
  // eps, or default_eps() when it is null.
  double resolved_eps() const { return eps.value_or(default_eps()); }

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

// `train.flat_cos:` fastai v2's fit_flat_cos: the peak LR, then a cosine to peak / div_final.
struct FlatCosConfig {
  double pct_start = 0.75;   // fraction of the steps at the peak LR
  double div_final = 1.0e5;  // final LR = peak LR / div_final

  bool operator==(const FlatCosConfig&) const = default;
};

// `train.checkpoint:` when checkpoints are written and how many are kept.
struct CheckpointConfig {
  double every_minutes = 10.0;  // also checkpoint mid-epoch this often; 0 disables
  int keep = 1;                 // newest numbered checkpoints kept (a save replaces the
                                // previous one only once it is in place)
  // A finished run keeps last.ckpt's optimizer state and its numbered checkpoints; false: only
  // weights (last.ckpt a link to best.ckpt when the last epoch was the best)
  bool keep_resumable = false;

  bool operator==(const CheckpointConfig&) const = default;
};

// `train.mixup:` timm's Mixup (MixUp and CutMix on the batch, soft targets); off when both alphas
// are 0.
struct MixupConfig {
  double mixup_alpha = 0.0;   // MixUp's λ ~ Beta(α, α); 0: no MixUp
  double cutmix_alpha = 0.0;  // CutMix's λ ~ Beta(α, α); 0: no CutMix
  // CutMix box sides as fractions [min, max) of the image's, instead of λ's (empty: from λ);
  // given, it turns CutMix on with alpha 1 (timm's rule)
  std::vector<double> cutmix_minmax;
  double prob = 1.0;                   // probability that a batch (pair, image) is mixed at all
  double switch_prob = 0.5;            // both alphas > 0: probability of CutMix rather than MixUp
  MixupMode mode = MixupMode::kBatch;  // batch | pair | elem

  bool enabled() const { return mixup_alpha > 0 || cutmix_alpha > 0 || !cutmix_minmax.empty(); }
  bool operator==(const MixupConfig&) const = default;
};

// `train.ema:` an exponential moving average of the weights (timm's ModelEmaV3); off at decay 0.
struct EmaConfig {
  double decay = 0.0;    // ema <- decay · ema + (1 - decay) · weights after each optimizer step
  bool warmup = false;   // ModelEmaV3's warm-up: decay min(decay, 1 - (1 + t)^(-2/3))
  bool validate = true;  // validate, pick best.ckpt and run TTA with the averaged weights

  bool enabled() const { return decay > 0; }
  bool operator==(const EmaConfig&) const = default;
};

// `train.early_stopping:` fastai's EarlyStoppingCallback at epoch ends; off at patience 0.
struct EarlyStoppingConfig {
  Monitor monitor = Monitor::kValidLoss;  // valid_loss | accuracy
  int patience = 0;                       // epochs without improvement before stopping; 0: off
  double min_delta = 0.0;                 // an improvement must beat the best by more than this

  bool operator==(const EarlyStoppingConfig&) const = default;
};

// `train.class_weights`: weights of the classes in the training loss.
struct ClassWeights {
  enum class Kind {
    kNone,      // every class weighs 1
    kBalanced,  // n / (classes × count), scikit-learn's `balanced`, from the training images
    kList,      // one weight per class, in the classes' sorted order
  };
  Kind kind = Kind::kNone;
  std::vector<double> weights;  // kList only

  bool operator==(const ClassWeights&) const = default;
};

// The LR schedule's keys of `train:` (in the YAML they sit in `train:` itself). Declared once:
// TrainConfig holds them, and each stage's schedule (train/schedule.h's ScheduleConfig) is made of
// them plus what the stage changes.
struct LrScheduleKeys {
  ScheduleKind schedule = ScheduleKind::kOneCycle;  // the LR schedule of each stage
  OneCycleConfig one_cycle;                         // schedule: one_cycle
  FlatCosConfig flat_cos;                           // schedule: flat_cos
  // cosine, multistep, plateau and constant (timm's scheduler arguments of the same names):
  double warmup_epochs = 0.0;            // linear warm-up from warmup_lr to the peak LR
  double warmup_lr = 1.0e-5;             // LR at the first step of the warm-up
  double min_lr = 0.0;                   // cosine: the final LR; plateau: the lowest LR
  std::vector<double> decay_milestones;  // multistep: stage epochs where LR *= decay_rate
  double decay_rate = 0.1;               // multistep, plateau: the LR's factor per decay
  int patience_epochs = 10;              // plateau: epochs without improvement before a decay
  int cooldown_epochs = 0;               // plateau: epochs after a decay before counting again
  Monitor plateau_monitor = Monitor::kValidLoss;  // schedule plateau: the figure it watches

  bool operator==(const LrScheduleKeys&) const = default;
};

// `train:` the recipe and how it runs (the schedule's keys from LrScheduleKeys).
struct TrainConfig : LrScheduleKeys {
  Recipe recipe = Recipe::kFineTune;  // fine_tune | one_cycle
  int epochs = 3;                     // epochs (unfrozen epochs for fine_tune)
  int freeze_epochs = 1;              // fine_tune: frozen epochs first
  bool frozen = false;  // one_cycle: body frozen throughout, one LR as slice(lr) (fastai v1's
                        // fit_one_cycle on a new cnn learner, as in the 2019 study)
  std::vector<double> lr = {1.0e-3};          // max LR, or [low, high] slice over layer groups
  OptimizerConfig optimizer;                  // optimizer settings
  double label_smoothing = 0.0;               // training loss: target (1 - eps)·y + eps/K
  MixupConfig mixup;                          // MixUp / CutMix
  EmaConfig ema;                              // weight averaging
  EarlyStoppingConfig early_stopping;         // stop when the monitored figure stops improving
  Monitor best_monitor = Monitor::kAccuracy;  // what best.ckpt tracks
  ClassWeights class_weights;                 // none | balanced | [w0, w1, ...]
  // multi_label: BCE's pos_weight per class, none (null) | balanced (negatives / positives) | list
  ClassWeights pos_weight;
  Precision precision = Precision::kFp32;    // fp32 | fp16 | bf16
  bool channels_last = true;                 // NHWC memory format where it helps
  int accumulate = 1;                        // batches whose gradients add up to one optimizer step
  double clip_grad_norm = 0.0;               // clip the gradients' total L2 norm to this (0: off)
  DeviceRequest device;                      // auto | cpu | cuda | cuda:N
  CheckpointConfig checkpoint;               // checkpoint cadence
  std::optional<double> time_limit_seconds;  // stop cleanly before this wall time (null: none)
  bool profile = false;  // synchronise the device around each timed phase (exact, a bit slower)

  bool operator==(const TrainConfig&) const = default;
};

// `eval:` evaluation after training.
struct EvalConfig {
  bool tta = true;                  // also evaluate with test-time augmentation
  TtaMode tta_mode = TtaMode::kV1;  // v1: 8 corner-zoom x flip views | v2: tta_n augmented views
  double tta_beta = default_tta_beta(TtaMode::kV1);  // final = beta * plain + (1 - beta) * aug.
  double tta_scale = 1.35;                           // v1: corner zoom factor
  int tta_n = 4;                                     // v2: augmented passes
  double threshold = 0.5;          // multi_label: a class is predicted when its p > threshold
  std::vector<double> thresholds;  // multi_label: one per class (overrides threshold); [] = null
  double temperature = 1.0;  // probabilities from logits / temperature (`ltfit calibrate`'s fit)
  // single_label: the k of top-k accuracy (the target among the k most probable classes);
  // 0 (auto): 5 when the model has more than 5 classes, else none (resolve_top_k, evaluator.h)
  int top_k = 0;

  bool operator==(const EvalConfig&) const = default;
};

// `dist:` data-parallel training when launched by torchrun, srun or RANK/WORLD_SIZE variables.
struct DistConfig {
  DistBackend backend = DistBackend::kAuto;    // auto | gloo | nccl | off
  double timeout_seconds = 300.0;              // a collective waiting longer fails the run (exit 5)
  double bucket_mb = 25.0;                     // gradients all-reduced per bucket, MiB (DDP's 25)
  BnBuffers bn_buffers = BnBuffers::kAverage;  // average | rank0
  std::string interface;  // network interface for Gloo (GLOO_SOCKET_IFNAME); "" = MASTER_ADDR's

  bool operator==(const DistConfig&) const = default;
};

// The whole configuration. `source` is the file it came from (for messages).
struct Config {
  RunConfig run;
  DataConfig data;
  ModelConfig model;
  TrainConfig train;
  EvalConfig eval;
  DistConfig dist;
  std::string source;  // path of the YAML file, or "<defaults>"

  bool operator==(const Config&) const = default;
};

// model.task resolved: multi_label, or auto with data.csv.label_delim set under the csv layout.
bool is_multi_label(const Config& config);

}  // namespace ltfit
