// The config in a few lines: see config_summary.h.
#include "ltfit/config/config_summary.h"

#include "config/config_internal.h"

namespace ltfit {

std::vector<std::string> summarize_config(const Config& c) {
  const auto number = [](double x) { return config_internal::format_number(x); };
  std::string lr;
  for (const double x : c.train.lr) lr += (lr.empty() ? "" : "..") + number(x);
  std::string stages;
  if (c.train.recipe == Recipe::kFineTune) {
    stages = std::to_string(c.train.freeze_epochs) + " frozen + " + std::to_string(c.train.epochs) +
             " unfrozen epoch(s)";
  } else {
    stages = std::to_string(c.train.epochs) + " epoch(s)" + (c.train.frozen ? ", body frozen" : "");
  }
  return {
      "model " + c.model.arch + " (pretrained " + pretrained_name(c.model.pretrained) + ", " +
          head_kind_name(c.model.head) + " head)",
      "data " + c.data.root + " (layout " + data_layout_name(c.data.layout) + ", " +
          std::to_string(c.data.image_size) + " px, batch " + std::to_string(c.data.batch_size) +
          (c.train.accumulate > 1 ? " x " + std::to_string(c.train.accumulate) + " accumulated"
                                  : "") +
          ")",
      "train " + recipe_name(c.train.recipe) + ": " + stages + ", lr " + lr + ", " +
          optimizer_kind_name(c.train.optimizer.name) + ", " + precision_name(c.train.precision) +
          ", device " + device_request_name(c.train.device) + ", seed " +
          std::to_string(c.run.seed),
      "eval " + (c.eval.tta ? "TTA " + tta_mode_name(c.eval.tta_mode) : std::string("no TTA")),
  };
}

}  // namespace ltfit
