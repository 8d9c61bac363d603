#include "ltfit/model/model_factory.h"

#include <spdlog/spdlog.h>

#include "ltfit/util/error.h"

namespace ltfit {

ResNet build_model(const ModelConfig& model, std::int64_t num_classes) {
  if (model.pretrained != "none") {
    throw CheckpointError(
        "model.pretrained: '" + model.pretrained +
            "': reading torchvision weight files is not supported by this build yet",
        "set model.pretrained: none (e.g. --set model.pretrained=none) to train from scratch");
  }
  ResNet net(resnet_spec(model.arch), num_classes, parse_head_kind(model.head), model.dropout);
  spdlog::info("model: {} with a {} head for {} classes, {} parameters, random init", model.arch,
               model.head, num_classes, count_parameters(*net));
  return net;
}

}  // namespace ltfit
