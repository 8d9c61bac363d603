// What an exported weight file holds, written beside it as `FILE.json` for `FILE.pth`: the arch,
// the head (and how to rebuild fastai's), the class names in label order, the input
// normalisation and the eval transform. `ltfit export` writes it; `ltfit predict --weights`
// reads it for the class names and the transform; Python rebuilds the model from it
// (docs/export.md). The state dict itself stays plain tensors, so that torchvision's
// `load_state_dict(..., strict=True)` takes it into the rebuilt model. Thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ltfit/util/image_normalization.h"

namespace ltfit {

struct ExportMeta {
  std::string arch;                   // model.arch, e.g. "resnet18"
  std::string stem = "imagenet";      // model.stem: imagenet | cifar (absent in older files)
  std::string head;                   // "fastai" | "linear" (head_kind_name)
  std::vector<std::string> classes;   // class names in label order
  std::int64_t feature_channels = 0;  // channels of the body's feature map (fastai head: 2x in)
  std::int64_t head_hidden = 512;     // fastai head: width of its hidden linear layer
  double dropout = 0.0;               // fastai head: the last dropout p (the first is half)
  ImageNormalization normalization;   // input mean/std, 0-1 scale
  int image_size = 0;                 // eval transform: the centre square resized to this side
  // eval_transform.resize: image_size in ltfit's own exports; when larger (a file written for
  // torchvision), predict --weights applies torchvision's Resize(eval_resize) and
  // CenterCrop(image_size) with `interpolation` (bilinear | bicubic) instead.
  int eval_resize = 0;
  std::string interpolation = "bilinear";
  // eval_transform.method and pad_mode: data.resize_method and data.pad_mode of the training
  // (crop | squish | pad; reflection | zeros | border); absent in older files: crop, reflection.
  std::string resize_method = "crop";
  std::string pad_mode = "reflection";
  // multi_label: a sigmoid per class, a class predicted when above its threshold (absent in
  // files written before ltfit had the task: single_label)
  std::string task = "single_label";
  std::vector<double> thresholds;  // multi_label: one per class
};

// The sidecar of a weight file: `FILE.pth` or `FILE.safetensors` -> `FILE.json`; any other name
// gets `.json` appended.
std::string export_meta_path(const std::string& weights);

// The JSON text of `meta` (format "ltfit-export", version 1).
std::string export_meta_json(const ExportMeta& meta);

// Writes export_meta_json to export_meta_path(weights), atomically; RuntimeError (exit 5) when
// it cannot be written.
void write_export_meta(const std::string& weights, const ExportMeta& meta);

// The sidecar of `weights` when there is one; nullopt when export_meta_path(weights) does not
// exist, or holds something else (no "format": "ltfit-export": someone else's file of that name,
// ignored with a warning). CheckpointError (exit 4) naming it when it cannot be read, or says it
// is an ltfit export's description but is not a whole one of this version, or when a field is out
// of range (eval_transform: crop and resize integers from 16 to 4096, crop <= resize,
// interpolation bilinear or bicubic, method crop, squish or pad, pad_mode reflection, zeros
// or border), naming the field.
std::optional<ExportMeta> read_export_meta(const std::string& weights);

}  // namespace ltfit
