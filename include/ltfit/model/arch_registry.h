// The architecture registry: every `model.arch` ltfit can build, with what torchvision publishes
// for it (weight file, eval transform, documented accuracy) and how to build it.
//
// A family adds a source pair (e.g. model/convnext.{h,cpp}) whose `<family>_archs()` returns its
// ArchInfo rows, and one line in arch_registry.cpp's list of families. Everything downstream
// (config validation, `ltfit models`, the model factory, pretrained files, the loader's
// normalisation, predict --weights) reads this table. Immutable after first use; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "ltfit/config/config.h"  // HeadKind
#include "ltfit/model/classifier.h"
#include "ltfit/model/onnx_emitter.h"
#include "ltfit/util/error.h"  // ConfigError (model.stem)
#include "ltfit/util/image_normalization.h"

namespace ltfit {

// Builds a randomly initialised model (torchvision's init for the body) with `num_classes`
// outputs, a `head` head (dropout: fastai head's p), `stem` (model.stem; a family without a
// CIFAR stem refuses it with a ConfigError, exit 2) and `drop_path` (model.drop_path: the
// deepest block's stochastic depth; nullopt: the family's own; a family without stochastic depth
// refuses a non-zero one, exit 2).
struct ArchConstructor {
  std::function<Classifier(std::int64_t num_classes, HeadKind head, double dropout, Stem stem,
                           std::optional<double> drop_path)>
      build;
  Classifier operator()(std::int64_t num_classes, HeadKind head, double dropout,
                        Stem stem = Stem::kImagenet,
                        std::optional<double> drop_path = std::nullopt) const {
    return build(num_classes, head, dropout, stem, drop_path);
  }
};

// `spec` with its deepest block's stochastic depth set to `drop_path` (its field
// `stochastic_depth_prob`); ConfigError (exit 2) for a non-zero one when the family has none.
template <class Spec>
Spec with_drop_path(Spec spec, std::optional<double> drop_path) {
  if (!drop_path) return spec;
  if constexpr (requires { spec.stochastic_depth_prob; }) {
    spec.stochastic_depth_prob = *drop_path;
  } else if (*drop_path != 0) {
    throw ConfigError("model.drop_path: model.arch '" + spec.arch +
                          "' has no stochastic depth (torchvision's has none)",
                      "leave model.drop_path out, or use an arch that has it (ConvNeXt, "
                      "EfficientNet, Swin, ViT)");
  }
  return spec;
}

// The constructor of a family whose module is `Impl(spec, num_classes, head, dropout)`, or
// `Impl(spec, num_classes, head, dropout, stem)` when the family has a CIFAR stem. Goes through
// shared_ptr<ClassifierImpl>: ModuleHolder's forwarding constructor would otherwise take a
// shared_ptr<Impl> as the arguments of the abstract ClassifierImpl's constructor.
template <class Impl, class Spec>
ArchConstructor family_constructor(Spec family_spec) {
  return {[family_spec = std::move(family_spec)](std::int64_t num_classes, HeadKind head,
                                                 double dropout, Stem stem,
                                                 std::optional<double> drop_path) {
    const Spec spec = with_drop_path(family_spec, drop_path);
    if constexpr (std::is_constructible_v<Impl, const Spec&, std::int64_t, HeadKind, double,
                                          Stem>) {
      return Classifier(std::shared_ptr<ClassifierImpl>(
          std::make_shared<Impl>(spec, num_classes, head, dropout, stem)));
    } else {
      if (stem != Stem::kImagenet) {
        throw ConfigError("model.stem: " + stem_name(stem) +
                              " is the CIFAR adaptation of a "
                              "ResNet's first layers, and model.arch '" +
                              spec.arch + "' is no ResNet",
                          "use model.stem: imagenet, or a ResNet (resnet18, resnet50, ...)");
      }
      return Classifier(std::shared_ptr<ClassifierImpl>(
          std::make_shared<Impl>(spec, num_classes, head, dropout)));
    }
  }};
}

struct ArchInfo {
  std::string name;                   // model.arch, e.g. "convnext_tiny"
  std::string family;                 // "resnet", "convnext", "efficientnet"
  ArchConstructor make;               // the model
  std::string weights_file;           // torchvision's IMAGENET1K file, "<name>-<sha256 prefix>.pth"
  ImageNormalization normalization;   // input mean/std (0-1 scale) the weights were trained with
  std::string interpolation;          // torchvision's eval resize: "bilinear" or "bicubic"
  int eval_resize = 256;              // torchvision's eval transform: resize the short side ...
  int eval_crop = 224;                // ... then centre-crop this square
  std::string classifier_prefix;      // the torchvision classifier replaced by a new head: "fc."
  std::int64_t feature_channels = 0;  // channels of the body's feature map (the head's input)
  FeatureLayout feature_layout = FeatureLayout::kMap;  // a map, or a token (ViT)
  std::int64_t parameters = 0;                         // with torchvision's 1000-class classifier
  double imagenet_top1 = 0;  // torchvision's documented ImageNet-1K acc@1 for the file
  // fastai's layer groups, in words, for `ltfit models` and the docs.
  std::string layer_groups;
  // How the family's model becomes ONNX (onnx_emitter.h); empty: export refuses the arch.
  OnnxFamily onnx;
  // A weight file's tensor whose shape differs from the model's, made to fit (`name`, the file's
  // tensor, the model's): ViT's position embeddings resampled to the model's patch grid. An
  // undefined result, or no function, keeps the mismatch an error.
  std::function<torch::Tensor(const std::string& name, const torch::Tensor& file_tensor,
                              const torch::Tensor& model_tensor)>
      adapt;
};

// Every registered arch, families in registration order.
const std::vector<ArchInfo>& arch_registry();

// The arch called `name`; ConfigError (exit 2) listing the names, with a "did you mean", for any
// other name.
const ArchInfo& arch_info(const std::string& name);

// arch_info(name).make(...): the model, randomly initialised.
Classifier make_classifier(const std::string& name, std::int64_t num_classes,
                           HeadKind head = HeadKind::kLinear, double dropout = 0.5,
                           Stem stem = Stem::kImagenet,
                           std::optional<double> drop_path = std::nullopt);

// `ltfit models`: a Markdown table of the registry (name, family, parameters, ImageNet acc@1,
// weight file, eval transform, layer groups).
std::string arch_table();

}  // namespace ltfit
