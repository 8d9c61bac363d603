// Building the classifier a config asks for.
#pragma once

#include <cstdint>

#include "ltfit/config/config.h"
#include "ltfit/model/classifier.h"

namespace ltfit {

// A Classifier of `model.arch` with a `model.head` head for `num_classes`, initialised per
// `model.pretrained`: `none` (random init), `imagenet` (torchvision's file from the torch hub
// cache, downloaded if absent) or a path to a torchvision .pth state dict. Weight problems throw
// CheckpointError (exit 4) naming the file.
Classifier build_model(const ModelConfig& model, std::int64_t num_classes);

}  // namespace ltfit
