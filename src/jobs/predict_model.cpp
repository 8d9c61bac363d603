// The model `ltfit predict` runs (predict_model.h): a checkpoint's, or a --weights file's with its
// arch and classes from --arch or the description `ltfit export` writes beside it (export_meta.h),
// else ImageNet's or class_<k>, and the transform that goes with it.
#include "jobs/predict_model.h"

#include <spdlog/spdlog.h>
#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "ltfit/config/config.h"
#include "ltfit/data/image_io.h"
#include "ltfit/data/loader.h"
#include "ltfit/jobs/checkpoint_eval.h"
#include "ltfit/jobs/export_meta.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/model/imagenet_classes.h"
#include "ltfit/model/pretrained.h"
#include "ltfit/model/timm_hub.h"
#include "ltfit/model/timm_names.h"
#include "ltfit/model/torch_weights.h"
#include "ltfit/util/choices.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

constexpr int kWeightsBatchSize = 64;

// The arch of --weights: --arch, else its export's description; they must agree.
std::string weights_arch(const PredictRequest& request, const std::optional<ExportMeta>& meta) {
  if (meta && !request.arch.empty() && meta->arch != request.arch) {
    throw ConfigError("--arch " + request.arch + ", but " + export_meta_path(request.weights) +
                          " says the weights are " + meta->arch + "'s",
                      "use --arch " + meta->arch + " (or drop --arch)");
  }
  if (!request.arch.empty()) return request.arch;
  if (meta) return meta->arch;
  throw ConfigError(
      "--weights needs --arch (one of " + join(model_arch_names()) + ")",
      "or keep the " + export_meta_path(request.weights) + " that `ltfit export` writes beside it");
}

// The class names of a weight file's K classes: its export's, else ImageNet's for 1000, else
// class_0 ... class_<K-1>.
std::vector<std::string> weights_classes(const PredictRequest& request,
                                         const std::optional<ExportMeta>& meta, std::int64_t k) {
  if (meta) {
    if (static_cast<std::int64_t>(meta->classes.size()) == k) return meta->classes;
    throw CheckpointError(
        export_meta_path(request.weights) + " names " + std::to_string(meta->classes.size()) +
            " classes, but the classifier of " + request.weights + " has " + std::to_string(k),
        "export the checkpoint again, or remove the .json beside the weights");
  }
  if (k == static_cast<std::int64_t>(imagenet_classes().size())) return imagenet_classes();
  spdlog::warn("{} names no classes (no {} beside it): calling its {} classes class_0 ... class_{}",
               request.weights, export_meta_path(request.weights), k, k - 1);
  std::vector<std::string> names;
  for (std::int64_t i = 0; i < k; ++i) names.push_back("class_" + std::to_string(i));
  return names;
}

// timm's eval transform from its config.json, the arch's where it says nothing: Resize(floor(
// input_size / crop_pct)) and CenterCrop(input_size) with its interpolation.
EvalTransform timm_eval_transform(const TimmDataConfig& timm, const ArchInfo& arch) {
  const int crop = timm.input_size > 0 ? timm.input_size : arch.eval_crop;
  const double crop_pct =
      timm.crop_pct > 0 ? timm.crop_pct : static_cast<double>(arch.eval_crop) / arch.eval_resize;
  const int resize = std::max(crop, static_cast<int>(std::floor(crop / crop_pct)));
  return {
      resize, crop,
      resample_filter_named(timm.interpolation.empty() ? arch.interpolation : timm.interpolation)};
}

// The model a weight file holds, as it is: its own head (fastai's or the arch's torchvision
// classifier) for its own number of classes, loaded strictly. With the description `ltfit export`
// writes, its classes and the checkpoint's validation transform (as predict --checkpoint); else
// torchvision's eval transform for the arch, pixel for pixel: Resize(eval_resize) with its
// interpolation as Pillow computes it, then CenterCrop(eval_crop).
Predictor weights_predictor(const PredictRequest& request, const torch::Device& device) {
  const std::optional<ExportMeta> meta = read_export_meta(request.weights);
  const std::string arch_name = weights_arch(request, meta);
  const ArchInfo& arch = arch_info(arch_name);
  const StateDict state =
      from_timm_names(read_weights_file(request.weights), arch.family, request.weights);
  const WeightsHead head = weights_head(state, arch_name, request.weights);
  Predictor p;
  p.model = make_classifier(arch_name, head.num_classes, head.kind, /*dropout=*/0.0,
                            meta ? parse_stem(meta->stem) : Stem::kImagenet);
  load_state_dict_strict(p.model, state, request.weights);
  p.model->to(device);
  p.model->eval();
  p.model->fold_batch_norms();  // as prepare_for_inference does for a checkpoint
  p.classes = weights_classes(request, meta, head.num_classes);
  spdlog::info(
      "--weights {}: {} with a {} head for {} classes{}", request.weights, arch_name,
      head_kind_name(head.kind), head.num_classes,
      meta ? " (classes and transform from " + export_meta_path(request.weights) + ")" : "");
  p.eval.device = device;
  if (meta && meta->task == "multi_label" &&
      meta->thresholds.size() == static_cast<std::size_t>(head.num_classes)) {
    p.eval.thresholds = meta->thresholds;  // sigmoids, and the labels above threshold
  }
  if (meta) {
    p.model->set_input_normalization(meta->normalization);
    p.loader.data.image_size = meta->image_size;
    p.loader.data.resize_method = parse_resize_method(meta->resize_method);  // checked when read
    p.loader.data.pad_mode = parse_pad_mode(meta->pad_mode);
    if (meta->eval_resize > meta->image_size) {  // a torchvision Resize + CenterCrop
      p.loader.eval_transform = EvalTransform{meta->eval_resize, meta->image_size,
                                              resample_filter_named(meta->interpolation)};
    }
  } else if (const auto timm = timm_config_beside(request.weights, arch, request.weights)) {
    if (timm->normalization) p.model->set_input_normalization(*timm->normalization);
    p.loader.eval_transform = timm_eval_transform(*timm, arch);
    p.loader.data.image_size = p.loader.eval_transform->crop;
    spdlog::info(
        "--weights {}: timm's eval transform and normalization from the config.json "
        "beside it (resize {}, crop {})",
        request.weights, p.loader.eval_transform->resize, p.loader.eval_transform->crop);
  } else {
    p.loader.data.image_size = arch.eval_crop;
    p.loader.eval_transform =
        EvalTransform{arch.eval_resize, arch.eval_crop, resample_filter_named(arch.interpolation)};
  }
  p.loader.data.batch_size = request.batch_size > 0 ? request.batch_size : kWeightsBatchSize;
  return p;
}

}  // namespace

std::vector<CommandInput> model_inputs(const PredictRequest& request) {
  if (!request.checkpoint.empty()) return {{"the checkpoint (--checkpoint)", request.checkpoint}};
  return {{"the weight file (--weights)", request.weights},
          {"the weight file's description", export_meta_path(request.weights)}};
}

Predictor make_predictor(const PredictRequest& request, const torch::Device& device) {
  if (!request.weights.empty()) return weights_predictor(request, device);
  Predictor p;
  p.loaded = load_model_for_eval(request.checkpoint, device);
  p.model = p.loaded->model;
  p.classes = p.loaded->meta.classes;
  p.eval = eval_options_for(*p.loaded, device, "");
  prepare_for_inference(*p.loaded, p.eval);
  p.loader = make_loader_options(p.loaded->config, /*train=*/false);
  if (request.batch_size > 0) p.loader.data.batch_size = request.batch_size;
  return p;
}

}  // namespace ltfit
