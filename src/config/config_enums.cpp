// The config enumerations' names (config.h): one table each, behind its parse_* and *_name.
// The order of each table is its enumerators' order and the order messages list the choices in.
// Thread-safe: each table is initialised once.
#include "ltfit/config/config.h"
#include "ltfit/util/choices.h"
#include "ltfit/util/home_path.h"
#include "ltfit/util/hub_name.h"

namespace ltfit {
namespace {

const EnumNames<DataLayout>& data_layouts() {
  static const EnumNames<DataLayout> names{
      "data.layout",
      {"auto", "folders", "kaggle", "csv", "pattern", "cifar10", "cifar100", "shards"}};
  return names;
}

const EnumNames<AugmentPlace>& augment_places() {
  static const EnumNames<AugmentPlace> names{"data.augment.on", {"host", "device"}};
  return names;
}

const EnumNames<ResizeMethod>& resize_methods() {
  static const EnumNames<ResizeMethod> names{"data.resize_method", {"crop", "squish", "pad"}};
  return names;
}

const EnumNames<PadMode>& pad_modes() {
  static const EnumNames<PadMode> names{"data.pad_mode", {"reflection", "zeros", "border"}};
  return names;
}

const EnumNames<TrainCrop>& train_crops() {
  static const EnumNames<TrainCrop> names{"data.augment.crop", {"resize", "random_resized"}};
  return names;
}

const EnumNames<DataCache>& data_caches() {
  static const EnumNames<DataCache> names{"data.cache", {"none", "ram", "device"}};
  return names;
}

const EnumNames<CifarLabel>& cifar_labels() {
  static const EnumNames<CifarLabel> names{"data.cifar_label", {"fine", "coarse"}};
  return names;
}

const EnumNames<Stem>& stems() {
  static const EnumNames<Stem> names{"model.stem", {"imagenet", "cifar"}};
  return names;
}

const EnumNames<Task>& tasks() {
  static const EnumNames<Task> names{"model.task", {"auto", "single_label", "multi_label"}};
  return names;
}

const EnumNames<HeadKind>& head_kinds() {
  static const EnumNames<HeadKind> names{"model.head", {"fastai", "linear"}};
  return names;
}

const EnumNames<OptimizerKind>& optimizer_kinds() {
  static const EnumNames<OptimizerKind> names{"train.optimizer.name",
                                              {"adamw", "sgd", "lamb", "rmsprop"}};
  return names;
}

const EnumNames<Recipe>& recipes() {
  static const EnumNames<Recipe> names{"train.recipe", {"fine_tune", "one_cycle"}};
  return names;
}

const EnumNames<ScheduleKind>& schedule_kinds() {
  static const EnumNames<ScheduleKind> names{
      "train.schedule", {"one_cycle", "flat_cos", "cosine", "multistep", "plateau", "constant"}};
  return names;
}

const EnumNames<TtaMode>& tta_modes() {
  static const EnumNames<TtaMode> names{"eval.tta_mode", {"v1", "v2"}};
  return names;
}

const EnumNames<DistBackend>& dist_backends() {
  static const EnumNames<DistBackend> names{"dist.backend", {"auto", "gloo", "nccl", "off"}};
  return names;
}

const EnumNames<MixupMode>& mixup_modes() {
  static const EnumNames<MixupMode> names{"train.mixup.mode", {"batch", "pair", "elem"}};
  return names;
}

const EnumNames<AugmentPolicy>& augment_policies() {
  static const EnumNames<AugmentPolicy> names{"data.augment.policy",
                                              {"none", "rand_augment", "trivial_augment"}};
  return names;
}

const EnumNames<Monitor>& monitors() {
  static const EnumNames<Monitor> names{
      "monitor", {"valid_loss", "accuracy", "f1_samples", "f1_macro", "map"}};
  return names;
}

const EnumNames<BnBuffers>& bn_buffer_modes() {
  static const EnumNames<BnBuffers> names{"dist.bn_buffers", {"average", "rank0"}};
  return names;
}

}  // namespace

DataLayout parse_data_layout(std::string_view text) { return data_layouts().parse(text); }
const std::string& data_layout_name(DataLayout layout) { return data_layouts().name(layout); }
AugmentPlace parse_augment_place(std::string_view text) { return augment_places().parse(text); }
const std::string& augment_place_name(AugmentPlace place) { return augment_places().name(place); }
ResizeMethod parse_resize_method(std::string_view text) { return resize_methods().parse(text); }
const std::string& resize_method_name(ResizeMethod method) { return resize_methods().name(method); }
PadMode parse_pad_mode(std::string_view text) { return pad_modes().parse(text); }
const std::string& pad_mode_name(PadMode mode) { return pad_modes().name(mode); }
TrainCrop parse_train_crop(std::string_view text) { return train_crops().parse(text); }
const std::string& train_crop_name(TrainCrop crop) { return train_crops().name(crop); }
DataCache parse_data_cache(std::string_view text) { return data_caches().parse(text); }
const std::string& data_cache_name(DataCache cache) { return data_caches().name(cache); }

CifarLabel parse_cifar_label(std::string_view text) { return cifar_labels().parse(text); }
const std::string& cifar_label_name(CifarLabel label) { return cifar_labels().name(label); }

Stem parse_stem(std::string_view text) { return stems().parse(text); }
const std::string& stem_name(Stem stem) { return stems().name(stem); }

Task parse_task(std::string_view text) { return tasks().parse(text); }
const std::string& task_name(Task task) { return tasks().name(task); }

HeadKind parse_head_kind(std::string_view text) { return head_kinds().parse(text); }
const std::string& head_kind_name(HeadKind head) { return head_kinds().name(head); }

OptimizerKind parse_optimizer_kind(std::string_view text) { return optimizer_kinds().parse(text); }
const std::string& optimizer_kind_name(OptimizerKind kind) { return optimizer_kinds().name(kind); }

Recipe parse_recipe(std::string_view text) { return recipes().parse(text); }
const std::string& recipe_name(Recipe recipe) { return recipes().name(recipe); }
ScheduleKind parse_schedule_kind(std::string_view text) { return schedule_kinds().parse(text); }
const std::string& schedule_kind_name(ScheduleKind kind) { return schedule_kinds().name(kind); }

TtaMode parse_tta_mode(std::string_view text) { return tta_modes().parse(text); }
const std::string& tta_mode_name(TtaMode mode) { return tta_modes().name(mode); }

DistBackend parse_dist_backend(std::string_view text) { return dist_backends().parse(text); }
const std::string& dist_backend_name(DistBackend backend) { return dist_backends().name(backend); }

MixupMode parse_mixup_mode(std::string_view text) { return mixup_modes().parse(text); }
const std::string& mixup_mode_name(MixupMode mode) { return mixup_modes().name(mode); }

AugmentPolicy parse_augment_policy(std::string_view text) { return augment_policies().parse(text); }
const std::string& augment_policy_name(AugmentPolicy policy) {
  return augment_policies().name(policy);
}

Monitor parse_monitor(std::string_view text) { return monitors().parse(text); }
const std::string& monitor_name(Monitor monitor) { return monitors().name(monitor); }

PretrainedWeights parse_pretrained(std::string_view text) {
  if (text == "imagenet") return {};
  if (text == "none") return {PretrainedWeights::Kind::kNone, ""};
  if (text.empty()) {
    throw ChoiceError("model.pretrained", "imagenet, none or the path of a weight file", "",
                      "model.pretrained: imagenet loads torchvision's weights for model.arch");
  }
  if (text.starts_with("timm/")) {
    const std::string name(text.substr(5));
    if (!valid_hub_model_name(name)) {
      throw ChoiceError("model.pretrained", "timm/ and a hub model name (letters, digits, . _ -)",
                        std::string(text),
                        "for example timm/resnet50.a1_in1k; a local folder named timm: ./timm/...");
    }
    return {PretrainedWeights::Kind::kTimm, name};
  }
  return PretrainedWeights::file(expand_home(text));
}

std::string pretrained_name(const PretrainedWeights& weights) {
  switch (weights.kind) {
    case PretrainedWeights::Kind::kImagenet:
      return "imagenet";
    case PretrainedWeights::Kind::kNone:
      return "none";
    case PretrainedWeights::Kind::kTimm:
      return "timm/" + weights.path;
    case PretrainedWeights::Kind::kFile:
      break;
  }
  // A file named like a keyword reads back as the file.
  return weights.path == "imagenet" || weights.path == "none" ? "./" + weights.path : weights.path;
}

DeviceRequest parse_train_device(std::string_view text) {
  return parse_device_request(text, "train.device");
}

BnBuffers parse_bn_buffers(std::string_view text) { return bn_buffer_modes().parse(text); }
const std::string& bn_buffers_name(BnBuffers mode) { return bn_buffer_modes().name(mode); }

}  // namespace ltfit
