// The config's enumerations (config.h includes this): each one's values, its parse (config name
// -> value) and its name (value -> config name), and the PretrainedWeights choice. The tables of
// names are in src/config/config_enums.cpp. Plain values, thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "ltfit/util/device_request.h"  // DeviceRequest, train.device

namespace ltfit {

// ---- enumerations -------------------------------------------------------------------------
// Each has one parse (its config name -> the value; ChoiceError, a ConfigError, "<key>: expected
// one of ..., got '<text>'" with a "did you mean" otherwise) and one name (the value -> the name
// config files use), built on one table of names (config_enums.cpp). Precision, `train.precision`,
// is in util/precision_name.h (util's precision.h takes it).

// `data.layout`: how the images under data.root are arranged.
enum class DataLayout {
  kAuto,      // folders (train/<class>/), else csv (data.csv.file), else kaggle, else <class>/
  kFolders,   // {train,valid}/<class>/*.jpg, or <class>/*.jpg split by data.valid_pct
  kKaggle,    // <class>.<N>.jpg (in root/train or root), validation split by run.seed
  kCsv,       // a CSV of file names and labels (data.csv)
  kPattern,   // the label in the file name (data.label_pattern), split by data.valid_pct
  kCifar10,   // CIFAR-10's batch files (data_batch_1..5 train, test_batch validates)
  kCifar100,  // CIFAR-100's (train, test; data.cifar_label: fine or coarse labels)
  kShards,    // tar shards as WebDataset writes them (data.shards)
};
// "auto" | "folders" | "kaggle" | "csv" | "pattern" | "cifar10" | "cifar100" | "shards"
DataLayout parse_data_layout(std::string_view text);
const std::string& data_layout_name(DataLayout layout);

// `data.augment.on`: where the training augmentation runs.
enum class AugmentPlace {
  kHost,    // per image in the loader threads (OpenCV, on the decoded image)
  kDevice,  // per batch on the batch's device (fastai v2's batch transforms, batch_augment.h)
};
AugmentPlace parse_augment_place(std::string_view text);  // "host" | "device"
const std::string& augment_place_name(AugmentPlace place);

// `data.resize_method`: how an image becomes a square (fastai's ResizeMethod), validation and
// training alike.
enum class ResizeMethod {
  kCrop,    // the shorter side's square (training: at a random position, data.augment.random_crop)
  kSquish,  // the whole image, its aspect ratio not kept
  kPad,     // the longer side's square, the image inside it and the rest padded (data.pad_mode)
};
ResizeMethod parse_resize_method(std::string_view text);  // "crop" | "squish" | "pad"
const std::string& resize_method_name(ResizeMethod method);

// `data.pad_mode`: what fills pixels outside the image (fastai's PadMode): resize_method pad and
// the training warps.
enum class PadMode {
  kReflection,  // mirrored without repeating the edge (torch's 'reflect', OpenCV's REFLECT_101)
  kZeros,       // black
  kBorder,      // the edge pixel repeated (torch's 'replicate')
};
PadMode parse_pad_mode(std::string_view text);  // "reflection" | "zeros" | "border"
const std::string& pad_mode_name(PadMode mode);

// `data.augment.crop`: the training crop.
enum class TrainCrop {
  kResize,         // data.resize_method's window (at a random position with random_crop)
  kRandomResized,  // torchvision's RandomResizedCrop (data.augment.scale, data.augment.ratio)
};
TrainCrop parse_train_crop(std::string_view text);  // "resize" | "random_resized"
const std::string& train_crop_name(TrainCrop crop);

// `data.cache`: where decoded images are kept between epochs (ltfit/data/decode_cache.h).
enum class DataCache {
  kNone,    // decoded from the file every time
  kRam,     // kept in memory, up to data.cache_bytes, shared by the loader threads
  kDevice,  // a held set (CIFAR's) kept whole on the training device (ltfit/data/device_cache.h)
};
DataCache parse_data_cache(std::string_view text);  // "none" | "ram" | "device"
const std::string& data_cache_name(DataCache cache);

// `data.cifar_label`: which of CIFAR-100's two labels trains.
enum class CifarLabel {
  kFine,    // the 100 classes
  kCoarse,  // the 20 superclasses
};
CifarLabel parse_cifar_label(std::string_view text);  // "fine" | "coarse"
const std::string& cifar_label_name(CifarLabel label);

// `model.stem`: the first layers of a ResNet.
enum class Stem {
  kImagenet,  // torchvision's: a 7×7 stride-2 conv and a 3×3 stride-2 max-pool
  kCifar,     // the CIFAR adaptation: a 3×3 stride-1 conv, no max-pool
};
Stem parse_stem(std::string_view text);  // "imagenet" | "cifar"
const std::string& stem_name(Stem stem);

// `model.task`: one label per image (softmax) or a set of labels (sigmoid per class).
enum class Task {
  kAuto,         // multi_label when data.csv.label_delim is set, else single_label
  kSingleLabel,  // cross-entropy over the classes
  kMultiLabel,   // binary cross-entropy per class (fastai's MultiCategoryBlock)
};
Task parse_task(std::string_view text);  // "auto" | "single_label" | "multi_label"
const std::string& task_name(Task task);

// `model.pretrained`: where the body's first weights come from.
struct PretrainedWeights {
  enum class Kind {
    kImagenet,  // torchvision's ImageNet weights for model.arch (hub cache, else downloaded)
    kNone,      // random initialisation
    kFile,      // a weight file (torch.save .pth or .safetensors)
    kTimm,      // timm/<name>: timm's weights from the Hugging Face hub (path holds <name>)
  };
  Kind kind = Kind::kImagenet;
  std::string path;  // kFile: the file; kTimm: the hub name after "timm/"

  static PretrainedWeights file(std::string path) { return {Kind::kFile, std::move(path)}; }
  bool operator==(const PretrainedWeights&) const = default;
};
// "imagenet" | "none" | "timm/<name>" | any other non-empty text, a file's path (a file named
// `none` is `./none`, a folder timm `./timm/...`). An empty text, or timm/ and a name the hub
// cannot have, is a ChoiceError.
PretrainedWeights parse_pretrained(std::string_view text);
std::string pretrained_name(const PretrainedWeights& weights);  // as config files write it
// `train.device`'s parse: parse_device_request naming the key.
DeviceRequest parse_train_device(std::string_view text);

// `model.head`: the classifier on top of the body.
enum class HeadKind {
  kFastai,  // fastai's create_head: concat pool (max || avg) -> flatten -> BN -> Dropout(p/2)
            // -> Linear(2C, 512) -> ReLU -> BN -> Dropout(p) -> Linear(512, n), as `head.*`
  kLinear,  // torchvision's: average pool -> flatten -> fc (names `fc.weight`, `fc.bias`)
};
HeadKind parse_head_kind(std::string_view text);  // "fastai" | "linear"
const std::string& head_kind_name(HeadKind head);

// `train.optimizer.name`: the optimizer.
enum class OptimizerKind {
  kAdamW,    // decoupled weight decay Adam (fastai's default)
  kSgd,      // SGD with momentum (betas[0])
  kLamb,     // timm's Lamb (LAMB: the Adam update scaled per parameter by the trust ratio)
  kRmsprop,  // timm's RMSpropTF (TensorFlow's RMSprop: eps inside the sqrt, LR in the momentum)
};
// "adamw" | "sgd" | "lamb" | "rmsprop"
OptimizerKind parse_optimizer_kind(std::string_view text);
const std::string& optimizer_kind_name(OptimizerKind kind);

// `train.recipe`: the stages training runs.
enum class Recipe {
  kFineTune,  // fastai's fine_tune: freeze_epochs frozen, then epochs unfrozen
  kOneCycle,  // one fit_one_cycle over epochs (body frozen throughout when train.frozen)
};
Recipe parse_recipe(std::string_view text);  // "fine_tune" | "one_cycle"
const std::string& recipe_name(Recipe recipe);

// `train.schedule`: how the LR (and momentum) move over each stage's optimizer steps
// (ltfit/train/schedule.h).
enum class ScheduleKind {
  kOneCycle,   // fastai's fit_one_cycle (train.one_cycle)
  kFlatCos,    // fastai v2's fit_flat_cos (train.flat_cos)
  kCosine,     // timm's cosine, per step, after the warm-up
  kMultistep,  // torch's MultiStepLR at train.decay_milestones, after the warm-up
  kPlateau,    // torch's ReduceLROnPlateau on the validation loss, after the warm-up
  kConstant,   // the peak LR, after the warm-up
};
// "one_cycle" | "flat_cos" | "cosine" | "multistep" | "plateau" | "constant"
ScheduleKind parse_schedule_kind(std::string_view text);
const std::string& schedule_kind_name(ScheduleKind kind);

// `train.mixup.mode`: what one MixUp/CutMix draw covers (timm's Mixup modes).
enum class MixupMode {
  kBatch,  // one λ (and one box) for the whole batch, mixed with the batch reversed
  kPair,   // one per pair (i, N-1-i), both images of a pair mixed with each other
  kElem,   // one per image, each mixed with its mirror N-1-i
};
MixupMode parse_mixup_mode(std::string_view text);  // "batch" | "pair" | "elem"
const std::string& mixup_mode_name(MixupMode mode);

// A figure of an epoch to watch (`train.early_stopping.monitor`, `train.best_monitor`): the loss
// is better lower, the others higher. accuracy is accuracy_multi in a multi-label run; the F1s
// (samples and macro averages) and the mean average precision exist only there.
enum class Monitor { kValidLoss, kAccuracy, kF1Samples, kF1Macro, kMap };
// "valid_loss" | "accuracy" | "f1_samples" | "f1_macro" | "map"
Monitor parse_monitor(std::string_view text);
const std::string& monitor_name(Monitor monitor);
inline bool lower_is_better(Monitor monitor) { return monitor == Monitor::kValidLoss; }
// The multi-label figures: f1_samples, f1_macro, map.
inline bool multi_label_monitor(Monitor monitor) {
  return monitor != Monitor::kValidLoss && monitor != Monitor::kAccuracy;
}

// `dist.backend`: the c10d process group of a data-parallel run (ltfit/dist/launch.h).
enum class DistBackend {
  kAuto,  // nccl when train.device is CUDA, gloo otherwise; single process when not launched
  kGloo,  // ProcessGroupGloo (CPU tensors; works everywhere)
  kNccl,  // ProcessGroupNCCL (CUDA only)
  kOff,   // never join a group, even under torchrun: every process trains alone
};
DistBackend parse_dist_backend(std::string_view text);  // "auto" | "gloo" | "nccl" | "off"
const std::string& dist_backend_name(DistBackend backend);

// `dist.bn_buffers`: how BatchNorm running statistics become identical across ranks.
enum class BnBuffers {
  kAverage,  // all-reduce mean of every rank's running mean/var (before validation and saves)
  kRank0,    // rank 0's are broadcast (torch DistributedDataParallel's broadcast_buffers)
};
BnBuffers parse_bn_buffers(std::string_view text);  // "average" | "rank0"
const std::string& bn_buffers_name(BnBuffers mode);

// `eval.tta_mode`: which test-time augmentation.
enum class TtaMode {
  kV1,  // fastai v1 TTA(): 8 corner-zoom x flip views
  kV2,  // fastai v2 tta(): eval.tta_n training-augmented passes
};
TtaMode parse_tta_mode(std::string_view text);  // "v1" | "v2"
const std::string& tta_mode_name(TtaMode mode);
// fastai's blend weight of the plain predictions for `mode`: v1 TTA(beta=0.4), v2 tta(beta=0.25).
constexpr double default_tta_beta(TtaMode mode) { return mode == TtaMode::kV2 ? 0.25 : 0.4; }

}  // namespace ltfit
