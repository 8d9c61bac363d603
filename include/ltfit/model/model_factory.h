// Building the classifier a config asks for.
#pragma once

#include <cstdint>

#include "ltfit/config/config.h"
#include "ltfit/model/resnet.h"

namespace ltfit {

// A ResNet of `model.arch` with a `model.head` head for `num_classes`, initialised per
// `model.pretrained`. Reading torchvision weight files (`imagenet` or a .pth path) is not in
// this build yet: those values throw CheckpointError (exit 4) saying to use `none`.
ResNet build_model(const ModelConfig& model, std::int64_t num_classes);

}  // namespace ltfit
