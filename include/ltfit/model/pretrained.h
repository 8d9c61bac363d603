// Pretrained ImageNet weights: where torchvision's files live, fetching them, loading them.
//
// `model.pretrained: imagenet` looks up the standard torchvision file name for the arch in the
// torch hub cache ($TORCH_HOME/hub/checkpoints, default ~/.cache/torch/hub/checkpoints) and, if
// absent, downloads it (from torchvision's URL, or `LTFIT_WEIGHTS_BASE_URL` + file name) with a
// progress bar, checks the SHA-256 prefix in its name, and writes it atomically to the cache.
#pragma once

#include <string>

#include "ltfit/config/config.h"
#include "ltfit/model/classifier.h"
#include "ltfit/model/torch_weights.h"

namespace ltfit {

// torchvision's ImageNet weight file name for `arch` (its registry row), e.g.
// "resnet34-b627a593.pth"; ConfigError for an unregistered arch.
std::string torchvision_weights_file(const std::string& arch);

// The hash prefix in a torchvision file name: "resnet34-b627a593.pth" -> "b627a593" (the
// 8+ hex characters between the last '-' and the extension; "" when there is none).
std::string torchvision_weights_hash_prefix(const std::string& file_name);

// The URL torchvision downloads it from (or base_url + "/" + file when base_url is not empty).
std::string torchvision_weights_url(const std::string& arch, const std::string& base_url = "");

// $TORCH_HOME/hub/checkpoints (default $XDG_CACHE_HOME/torch or ~/.cache/torch).
std::string torch_hub_checkpoint_dir();

// Resolves `model.pretrained` (imagenet or a file; not none) to a local file: a path is returned
// as is (CheckpointError if it does not exist); imagenet is looked up in the cache and downloaded
// if absent.
std::string resolve_pretrained_file(const PretrainedWeights& weights, const std::string& arch);

// The "imagenet" case of resolve_pretrained_file for any torchvision-style file name: returns
// cache_dir/file_name when present; otherwise downloads base_url + "/" + file_name there (with
// progress, through `<file>.partial`, renamed only after its SHA-256 matched the hash prefix in
// the name). Throws CheckpointError naming the URL on a failed download or a hash mismatch,
// leaving nothing in the cache.
std::string fetch_cached_weights(const std::string& file_name, const std::string& base_url,
                                 const std::string& cache_dir);

// Copies matching tensors of `state` into `model`. The torchvision classifier (the arch's
// classifier prefix: `fc.`, `classifier.`) is skipped, and said so in the log, where its shape
// differs (the usual 1000-class case) or the model has a fastai head. A missing BatchNorm
// `num_batches_tracked` is allowed (files older than torch 0.4.1 lack it; torch allows it too).
// Any other missing or unexpected key or shape mismatch throws CheckpointError naming `source`
// and the key; the model is then unchanged. `fresh` names tensors that keep their initialisation
// whatever the file holds for them (model.stem cifar's 3×3 conv1, which ImageNet's 7×7 cannot
// fill); the log says so.
void load_pretrained_body(Classifier& model, const StateDict& state, const std::string& source,
                          const std::vector<std::string>& fresh = {});

// The classifier a weight file holds, as `predict --weights` rebuilds the model around it.
struct WeightsHead {
  HeadKind kind = HeadKind::kLinear;  // fastai (`head.6.weight`) or the arch's torchvision one
  std::int64_t num_classes = 0;       // rows of its last linear layer
};

// The head `state` holds for `arch`: fastai's when it has `head.6.weight` (its last linear;
// classes: its rows), else the arch's torchvision classifier (`fc.*`, `classifier.*`, swin_t's
// `head.*`; classes: the rows of its last 2-D tensor). CheckpointError naming `source` and
// some of its keys when it holds neither.
WeightsHead weights_head(const StateDict& state, const std::string& arch,
                         const std::string& source);

// Copies `state` into `model`, which must have exactly its keys and shapes (torch's
// load_state_dict(strict=True); a missing BatchNorm `num_batches_tracked` is allowed as there).
// CheckpointError naming `source` and the missing, unexpected or mismatched keys otherwise; the
// model is then unchanged.
void load_state_dict_strict(Classifier& model, const StateDict& state, const std::string& source);

}  // namespace ltfit
