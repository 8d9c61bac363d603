// `ltfit models`: the registered architectures (model.arch values) with their parameter counts,
// torchvision's ImageNet accuracy and weight file, eval transform and fastai layer groups
// (model/arch_registry.h); --json for scripts.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/util/standard_output.h"

namespace ltfit::cli {

namespace {

nlohmann::json registry_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const ArchInfo& a : arch_registry()) {
    out.push_back({{"arch", a.name},
                   {"family", a.family},
                   {"parameters", a.parameters},
                   {"imagenet_top1", a.imagenet_top1},
                   {"weights_file", a.weights_file},
                   {"mean", a.normalization.mean},
                   {"std", a.normalization.std},
                   {"interpolation", a.interpolation},
                   {"eval_resize", a.eval_resize},
                   {"eval_crop", a.eval_crop},
                   {"feature_channels", a.feature_channels},
                   {"classifier_prefix", a.classifier_prefix},
                   {"layer_groups", a.layer_groups}});
  }
  return out;
}

}  // namespace

void add_models_command(CLI::App& app, int* exit_code) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "models",
      "list the architectures model.arch accepts: parameters (1000 classes), torchvision's "
      "ImageNet acc@1 and weight file, eval transform, fastai layer groups");
  cmd->add_flag("--json", *json, "print them as one JSON array");
  cmd->callback([json, exit_code] {
    write_stdout(*json ? registry_json().dump(2) + "\n" : arch_table());
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
