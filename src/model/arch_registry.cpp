// The architecture registry (arch_registry.h): the families' rows in one table, look-up with a
// "did you mean", and the `ltfit models` table. Also defines config.h's model_arch_names(), so
// config validation lists exactly the registered archs.
#include "ltfit/model/arch_registry.h"

#include <spdlog/fmt/fmt.h>

#include "ltfit/model/convnext.h"
#include "ltfit/model/efficientnet.h"
#include "ltfit/model/efficientnet_v2.h"
#include "ltfit/model/mobilenet_v3.h"
#include "ltfit/model/regnet.h"
#include "ltfit/model/resnet.h"
#include "ltfit/model/swin.h"
#include "ltfit/model/vit.h"
#include "ltfit/util/choices.h"
#include "ltfit/util/error.h"

namespace ltfit {

const std::vector<ArchInfo>& arch_registry() {
  static const std::vector<ArchInfo> registry = [] {
    std::vector<ArchInfo> rows;
    // One line per family: its source pair's rows.
    for (auto family : {resnet_archs, convnext_archs, efficientnet_archs, efficientnet_v2_archs,
                        mobilenet_v3_archs, regnet_archs, swin_archs, vit_archs}) {
      for (ArchInfo& info : family()) rows.push_back(std::move(info));
    }
    return rows;
  }();
  return registry;
}

const std::vector<std::string>& model_arch_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const ArchInfo& info : arch_registry()) out.push_back(info.name);
    return out;
  }();
  return names;
}

const ArchInfo& arch_info(const std::string& name) {
  for (const ArchInfo& info : arch_registry()) {
    if (info.name == name) return info;
  }
  const std::string suggestion = closest(name, model_arch_names());
  throw ConfigError(
      "model.arch: expected one of " + join(model_arch_names()) + ", got '" + name + "'",
      suggestion.empty() ? "`ltfit models` lists them" : "did you mean '" + suggestion + "'?");
}

Classifier make_classifier(const std::string& name, std::int64_t num_classes, HeadKind head,
                           double dropout, Stem stem, std::optional<double> drop_path) {
  LTFIT_CHECK(num_classes > 0, "num_classes must be positive");
  const ArchInfo& info = arch_info(name);
  Classifier model = info.make(num_classes, head, dropout, stem, drop_path);
  LTFIT_CHECK(model->arch() == name, "a registry row builds its own arch");
  model->set_input_normalization(info.normalization);
  return model;
}

std::string arch_table() {
  std::string out =
      "| arch | family | parameters | ImageNet acc@1 | torchvision weights | eval transform | "
      "layer groups |\n|---|---|--:|--:|---|---|---|\n";
  for (const ArchInfo& a : arch_registry()) {
    out += fmt::format("| {} | {} | {:.1f} M | {:.2f} % | {} | {} {} -> {} | {} |\n", a.name,
                       a.family, static_cast<double>(a.parameters) / 1e6, a.imagenet_top1,
                       a.weights_file, a.interpolation, a.eval_resize, a.eval_crop, a.layer_groups);
  }
  return out;
}

}  // namespace ltfit
