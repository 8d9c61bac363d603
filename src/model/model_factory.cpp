#include "ltfit/model/model_factory.h"

#include <spdlog/spdlog.h>

#include <array>
#include <filesystem>
#include <string>
#include <vector>

#include "ltfit/model/arch_registry.h"
#include "ltfit/model/pretrained.h"
#include "ltfit/model/timm_hub.h"
#include "ltfit/model/timm_names.h"
#include "ltfit/model/torch_weights.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

std::string three(const std::array<float, 3>& v) {
  return fmt::format("{:g}, {:g}, {:g}", v[0], v[1], v[2]);
}

// timm/<name>: its config.json (beside model.safetensors) names the architecture (checked here,
// before the weights are read) and says how timm normalises the inputs; the model does the same,
// and its checkpoints keep it (predict, serve and export with it).
void apply_timm_config(Classifier& net, const ModelConfig& model, const std::string& file) {
  const std::filesystem::path path = std::filesystem::path(file).parent_path() / "config.json";
  std::error_code ec;  // a cache without config.json: nothing stated, nothing checked
  const TimmDataConfig data =
      read_timm_config(std::filesystem::is_regular_file(path, ec) ? path.string() : "",
                       arch_info(model.arch), model.pretrained.path);
  if (data.normalization && !(*data.normalization == net->input_normalization())) {
    net->set_input_normalization(*data.normalization);
    spdlog::info(
        "timm/{}: inputs normalised with its mean ({}) and std ({}) from config.json, "
        "kept in the run's checkpoints",
        model.pretrained.path, three(data.normalization->mean), three(data.normalization->std));
  }
  if (data.input_size > 0) {
    spdlog::info(
        "timm/{} was trained at {} px (config.json's input_size); data.image_size sets "
        "this run's",
        model.pretrained.path, data.input_size);
  }
}

}  // namespace

Classifier build_model(const ModelConfig& model, std::int64_t num_classes) {
  Classifier net = make_classifier(model.arch, num_classes, model.head, model.dropout, model.stem,
                                   model.drop_path);
  if (model.pretrained.kind == PretrainedWeights::Kind::kNone) {
    spdlog::info("model: {} with a {} head for {} classes, {} parameters, random init", model.arch,
                 head_kind_name(model.head), num_classes, count_parameters(*net));
    return net;
  }
  const std::string file = resolve_pretrained_file(model.pretrained, model.arch);
  if (model.pretrained.kind == PretrainedWeights::Kind::kTimm) apply_timm_config(net, model, file);
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
