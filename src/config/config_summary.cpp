// The config in a few lines: see config_summary.h.
#include "ltfit/config/config_summary.h"

#include "config/config_internal.h"

namespace ltfit {

namespace {

// The training features that change what the model learns from, in words ("" when none is on):
// the summary names each one a run uses, so the log says what the run did.
std::string summarize_regularisation(const TrainConfig& t, const DataConfig& d) {
  const auto number = [](double x) { return config_internal::format_number(x); };
  std::vector<std::string> parts;
  if (t.label_smoothing > 0) parts.push_back("label smoothing " + number(t.label_smoothing));
  if (t.mixup.mixup_alpha > 0) parts.push_back("MixUp alpha " + number(t.mixup.mixup_alpha));
  if (t.mixup.cutmix_alpha > 0 || !t.mixup.cutmix_minmax.empty())
    parts.push_back("CutMix alpha " + number(t.mixup.cutmix_alpha > 0 ? t.mixup.cutmix_alpha : 1));
  if (t.ema.enabled()) parts.push_back("EMA " + number(t.ema.decay));
  if (d.augment.random_erasing.p > 0)
    parts.push_back("random erasing p " + number(d.augment.random_erasing.p));
  if (d.augment.crop == TrainCrop::kRandomResized) {
    parts.push_back("RandomResizedCrop scale " + number(d.augment.scale[0]) + ".." +
                    number(d.augment.scale[1]) + " ratio " + number(d.augment.ratio[0]) + ".." +
                    number(d.augment.ratio[1]));
  }
  if (d.augment.policy != AugmentPolicy::kNone)
    parts.push_back(augment_policy_name(d.augment.policy));
  if (t.early_stopping.patience > 0) {
    parts.push_back("early stopping on " + monitor_name(t.early_stopping.monitor) + ", patience " +
                    std::to_string(t.early_stopping.patience));
  }
  if (t.class_weights.kind != ClassWeights::Kind::kNone) parts.push_back("class weights");
  if (t.clip_grad_norm > 0) parts.push_back("gradient clipping at " + number(t.clip_grad_norm));
  std::string text;
  for (const auto& part : parts) text += (text.empty() ? "" : ", ") + part;
  return text;
}

}  // namespace

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
  std::vector<std::string> lines{
      "model " + c.model.arch + " (pretrained " + pretrained_name(c.model.pretrained) + ", " +
          head_kind_name(c.model.head) + " head)",
      "data " + c.data.root + " (layout " + data_layout_name(c.data.layout) + ", " +
          std::to_string(c.data.image_size) + " px, batch " + std::to_string(c.data.batch_size) +
          (c.train.accumulate > 1 ? " x " + std::to_string(c.train.accumulate) + " accumulated"
                                  : "") +
          ")",
      "train " + recipe_name(c.train.recipe) + " (schedule " +
          schedule_kind_name(c.train.schedule) + "): " + stages + ", lr " + lr + ", " +
          optimizer_kind_name(c.train.optimizer.name) + ", " + precision_name(c.train.precision) +
          ", device " + device_request_name(c.train.device) + ", seed " +
          std::to_string(c.run.seed),
      "eval " + (c.eval.tta ? "TTA " + tta_mode_name(c.eval.tta_mode) : std::string("no TTA")),
  };
  const std::string regularisation = summarize_regularisation(c.train, c.data);
  if (!regularisation.empty()) lines.insert(lines.end() - 1, "regularisation " + regularisation);
  return lines;
}

}  // namespace ltfit
