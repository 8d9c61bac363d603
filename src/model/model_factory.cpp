#include "ltfit/model/model_factory.h"

#include <spdlog/spdlog.h>

#include <string>
#include <vector>

#include "ltfit/model/arch_registry.h"
#include "ltfit/model/pretrained.h"
#include "ltfit/model/timm_names.h"
#include "ltfit/model/torch_weights.h"
#include "ltfit/util/error.h"

namespace ltfit {

Classifier build_model(const ModelConfig& model, std::int64_t num_classes) {
  Classifier net = make_classifier(model.arch, num_classes, model.head, model.dropout, model.stem,
                                   model.drop_path);
  if (model.pretrained.kind == PretrainedWeights::Kind::kNone) {
    spdlog::info("model: {} with a {} head for {} classes, {} parameters, random init", model.arch,
                 head_kind_name(model.head), num_classes, count_parameters(*net));
    return net;
  }
  const std::string file = resolve_pretrained_file(model.pretrained, model.arch);
  // model.stem cifar: ImageNet's 7×7 conv1 has no place in the 3×3 stem.
  bool timm = false;
  StateDict state =
      from_timm_names(read_weights_file(file), arch_info(model.arch).family, file, &timm);
  if (timm) spdlog::info("{}: timm's parameter names, mapped to torchvision's", file);
  load_pretrained_body(net, state, file,
                       model.stem == Stem::kCifar ? std::vector<std::string>{"conv1.weight"}
                                                  : std::vector<std::string>{});
  spdlog::info("model: {} with a {} head for {} classes, {} parameters, body from {}", model.arch,
               head_kind_name(model.head), num_classes, count_parameters(*net), file);
  return net;
}

}  // namespace ltfit
