// Config rules (config_loader.h's validate): each number's range, from the Bounds its field
// declares in the loader's lists (check_bounds), then the rules no one field holds: the shapes of
// lists, keys that relate to each other, the string enumerations (model.arch), names and paths;
// the enum-typed fields are valid by construction. A broken rule
// is reported through a Fail callback, so the loader can name the file and line of the offending
// node while validate() names only the key; describe_rules() lists every rule for the reference
// (config_reference.h). No yaml-cpp here. Thread-safe: no shared state.
#include "ltfit/config/config_loader.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "config/config_internal.h"
#include "config/config_rules_support.h"
#include "ltfit/util/error.h"

namespace ltfit {
namespace config_internal {
namespace {

// ---- rules: ranges and enumerations, once, against the structs --------------------------------

// run.name becomes one directory under run.out_dir (and its `<name>-N` siblings, and lr-find's
// `<name>-lr_find`): a single path component that cannot climb out of out_dir, short enough for
// NAME_MAX (255 bytes) with those suffixes.
constexpr std::size_t kMaxRunNameBytes = 200;

bool is_single_component(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

void validate_run(const RunConfig& run, const Rules& fail) {
  require(fail, is_single_component(run.name), "run.name",
          "a single directory name (not empty, '.' or '..', no '/' or NUL byte)", run.name);
  if (run.name.size() > kMaxRunNameBytes || fail.list_all) {
    fail({"run.name", "a name of at most " + std::to_string(kMaxRunNameBytes) + " bytes",
          "a name of " + std::to_string(run.name.size()) + " bytes", ""});
  }
  require(fail, !run.out_dir.empty() && run.out_dir.find('\0') == std::string::npos, "run.out_dir",
          "a directory", run.out_dir);
}

// `data.formats`: a non-empty list of known names.
void validate_formats(const std::vector<std::string>& formats, const Rules& fail) {
  const std::string expected = "a non-empty list of image formats from " + join(kImageFormatNames);
  if (formats.empty() || fail.list_all) fail({"data.formats", expected, "[]", ""});
  for (const auto& name : formats) {
    if (std::find(kImageFormatNames.begin(), kImageFormatNames.end(), name) !=
        kImageFormatNames.end()) {
      continue;
    }
    const std::string suggestion = closest(name, kImageFormatNames);
    fail({"data.formats", expected, show(name),
          show(name) + " is not one of them" +
              (suggestion.empty() ? "" : "; did you mean '" + suggestion + "'?")});
  }
}

void validate_data(const DataConfig& data, const Rules& fail) {
  require(fail, !data.root.empty(), "data.root", "a directory", data.root);
  const auto& steps = data.size_schedule;
  bool ascending = true, sizes = true;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    ascending = ascending && steps[i].epoch >= 0 && steps[i].epoch <= kMaxEpochs &&
                (i == 0 || steps[i].epoch > steps[i - 1].epoch);
    sizes = sizes && steps[i].size >= 16 && steps[i].size <= 4096;
  }
  std::string shown;
  for (const SizeStep& step : steps) {
    shown += (shown.empty() ? "" : ", ") + std::string("[") + std::to_string(step.epoch) + ", " +
             std::to_string(step.size) + "]";
  }
  shown = "[" + shown + "]";
  require(fail, ascending, "data.size_schedule",
          "[epoch, size] pairs with ascending epochs in [0, 100000]", shown);
  require(fail, sizes, "data.size_schedule", "sizes from 16 to 4096 pixels", shown);
  // Past its range (>= 1, in the field list), a second rule with its reason: a batch of one is
  // positive but cannot train BatchNorm.
  require(fail, data.batch_size >= 2, "data.batch_size",
          "an integer >= 2 (BatchNorm needs at least 2 images per training batch)",
          data.batch_size);
  validate_formats(data.formats, fail);
  const AugmentConfig& a = data.augment;
  require(fail,
          a.scale.size() == 2 && all_in(a.scale, 0, 1, true) && a.scale[0] > 0 &&
              a.scale[0] <= a.scale[1],
          "data.augment.scale", "[min, max] with 0 < min <= max <= 1", a.scale);
  require(fail, a.ratio.size() == 2 && all_in(a.ratio, 1e-3, 1e3, true) && a.ratio[0] <= a.ratio[1],
          "data.augment.ratio", "[min, max] with 0.001 <= min <= max <= 1000", a.ratio);
  const RandomErasingConfig& e = data.augment.random_erasing;
  require(fail, e.scale.size() == 2 && all_in(e.scale, 0, 1, true) && e.scale[0] <= e.scale[1],
          "data.augment.random_erasing.scale", "[min, max] with 0 <= min <= max <= 1", e.scale);
  require(fail, e.ratio.size() == 2 && all_in(e.ratio, 1e-3, 1e3, true) && e.ratio[0] <= e.ratio[1],
          "data.augment.random_erasing.ratio", "[min, max] with 0.001 <= min <= max <= 1000",
          e.ratio);
  require(fail, std::isfinite(e.value) && std::abs(e.value) <= 1e6,
          "data.augment.random_erasing.value", "random, or a number in [-1e6, 1e6]", e.value);
}

void validate_model(const ModelConfig& model, const Rules& fail) {
  require_one_of(fail, "model.arch", model.arch, model_arch_names());
}

void validate_optimizer(const OptimizerConfig& o, const OneCycleConfig& c, const Rules& fail) {
  require(fail, o.betas.size() == 2 && all_in(o.betas, 0, 1, false), "train.optimizer.betas",
          "two numbers in [0, 1)", o.betas);
  require(fail, c.moms.size() == 3 && all_in(c.moms, 0, 1, true), "train.one_cycle.moms",
          "three momentums in [0, 1] (start, middle, end)", c.moms);
}

void validate_schedule(const TrainConfig& t, const Rules& fail) {
  const auto& m = t.decay_milestones;
  const bool ascending =
      std::is_sorted(m.begin(), m.end()) && std::adjacent_find(m.begin(), m.end()) == m.end();
  require(fail, ascending && all_in(m, 0, kMaxEpochs, true), "train.decay_milestones",
          "ascending epochs in [0, 100000]", m);
}

void validate_mixup(const MixupConfig& m, const Rules& fail) {
  const auto& mm = m.cutmix_minmax;
  require(fail, mm.empty() || (mm.size() == 2 && mm[0] >= 0 && mm[0] < mm[1] && mm[1] <= 1),
          "train.mixup.cutmix_minmax", "null, or [min, max] with 0 <= min < max <= 1", mm);
}

void validate_class_weights(const ClassWeights& w, const Rules& fail) {
  const bool finite = std::all_of(w.weights.begin(), w.weights.end(),
                                  [](double v) { return std::isfinite(v) && v >= 0 && v <= 1e6; });
  const bool some = std::any_of(w.weights.begin(), w.weights.end(), [](double v) { return v > 0; });
  const bool ok = w.kind != ClassWeights::Kind::kList || (!w.weights.empty() && finite && some);
  require(fail, ok, "train.class_weights",
          "none, balanced, or one number in [0, 1e6] per class, not all 0", w.weights);
}

void validate_train(const TrainConfig& train, const Rules& fail) {
  const auto& lr = train.lr;
  const bool lr_ok = (lr.size() == 1 || lr.size() == 2) && all_in(lr, 0, kMaxLr, true) &&
                     lr.front() > 0 && lr.front() <= lr.back();
  require(fail, lr_ok, "train.lr",
          "a positive number or [low, high] with 0 < low <= high, at most 10", lr);
  validate_optimizer(train.optimizer, train.one_cycle, fail);
  validate_schedule(train, fail);
  validate_mixup(train.mixup, fail);
  validate_class_weights(train.class_weights, fail);
  // A contradiction, refused: fine_tune's second stage unfreezes the body.
  if ((train.frozen && train.recipe == Recipe::kFineTune) || fail.list_all) {
    fail({"train.frozen",
          "false under train.recipe fine_tune (which unfreezes the body after "
          "train.freeze_epochs)",
          "true",
          "for a body frozen throughout set train.recipe: one_cycle; for fine_tune drop "
          "train.frozen"});
  }
  const double limit = train.time_limit_seconds.value_or(1.0);
  require(fail, limit > 0, "train.time_limit", "a positive duration or null", limit);
  require(fail, limit <= kMaxMinutes * 60, "train.time_limit",
          "a duration of at most 1e6 minutes, or null", limit);
}

void validate_dist(const DistConfig& dist, const Rules& fail) {
  const bool name_ok =
      dist.interface.size() < 16 && dist.interface.find_first_of("/ \t\n") == std::string::npos;
  require(fail, name_ok, "dist.interface", "a network interface name (e.g. eth0) or \"\"",
          dist.interface);
}

void check_all(const Config& config, const Rules& fail) {
  check_bounds(config, fail.fail, fail.list_all);  // each number's own range, from its field
  validate_run(config.run, fail);
  validate_data(config.data, fail);
  validate_model(config.model, fail);
  validate_train(config.train, fail);
  validate_dist(config.dist, fail);
  validate_labels(config, fail);
}

// ---- keys another key makes irrelevant: warned about, not refused ------------------------------

struct IgnoredKey {
  const char* key;                 // the ignored key
  const char* when;                // when it is ignored, and what it is for
  bool (*ignored)(const Config&);  // it is ignored here and set to other than its default
  std::string (*value)(const Config&);
};

// The optimizer's keys another optimizer does not read.
const std::vector<IgnoredKey>& ignored_optimizer_keys() {
  static const std::vector<IgnoredKey> keys = {
      {"train.optimizer.eps", "train.optimizer.name is sgd (SGD has no epsilon)",
       [](const Config& c) {
         return c.train.optimizer.name == OptimizerKind::kSgd && c.train.optimizer.eps;
       },
       [](const Config& c) { return show(c.train.optimizer.eps.value_or(0.0)); }},
      {"train.optimizer.alpha", "train.optimizer.name is not rmsprop (alpha is RMSprop's)",
       [](const Config& c) {
         return c.train.optimizer.name != OptimizerKind::kRmsprop &&
                c.train.optimizer.alpha != OptimizerConfig{}.alpha;
       },
       [](const Config& c) { return show(c.train.optimizer.alpha); }},
      {"train.optimizer.max_grad_norm",
       "train.optimizer.name is not lamb (the other optimizers clip with train.clip_grad_norm)",
       [](const Config& c) {
         return c.train.optimizer.name != OptimizerKind::kLamb &&
                c.train.optimizer.max_grad_norm != OptimizerConfig{}.max_grad_norm;
       },
       [](const Config& c) {
         const auto& norm = c.train.optimizer.max_grad_norm;
         return norm ? show(*norm) : std::string("null");
       }},
  };
  return keys;
}

const std::vector<IgnoredKey>& ignored_keys() {
  static const std::vector<IgnoredKey> keys = {
      {"train.freeze_epochs", "train.recipe is one_cycle (frozen epochs are fine_tune's)",
       [](const Config& c) {
         return c.train.recipe == Recipe::kOneCycle &&
                c.train.freeze_epochs != TrainConfig{}.freeze_epochs;
       },
       [](const Config& c) { return show(c.train.freeze_epochs); }},
      {"train.decay_milestones",
       "train.schedule is not multistep (the milestones are MultiStepLR's)",
       [](const Config& c) {
         return c.train.schedule != ScheduleKind::kMultistep &&
                c.train.decay_milestones != TrainConfig{}.decay_milestones;
       },
       [](const Config& c) { return show(c.train.decay_milestones); }},
      {"data.valid_count",
       "data.layout is not kaggle (the other layouts draw data.valid_pct; auto keeps it for "
       "Kaggle-style files)",
       [](const Config& c) {
         return c.data.layout != DataLayout::kKaggle && c.data.layout != DataLayout::kAuto &&
                c.data.valid_count != DataConfig{}.valid_count;
       },
       [](const Config& c) { return show(c.data.valid_count); }},
      {"data.cifar_label", "data.layout is not cifar100 (only CIFAR-100 has two labels)",
       [](const Config& c) {
         return c.data.layout != DataLayout::kCifar100 && c.data.layout != DataLayout::kAuto &&
                c.data.cifar_label != DataConfig{}.cifar_label;
       },
       [](const Config& c) { return cifar_label_name(c.data.cifar_label); }},
      {"eval.tta_n", "eval.tta_mode is v1 (its 8 views are fixed; tta_n counts v2's passes)",
       [](const Config& c) {
         return c.eval.tta_mode == TtaMode::kV1 && c.eval.tta_n != EvalConfig{}.tta_n;
       },
       [](const Config& c) { return show(c.eval.tta_n); }},
      {"eval.tta_scale", "eval.tta_mode is v2 (tta_scale zooms v1's corner views)",
       [](const Config& c) {
         return c.eval.tta_mode == TtaMode::kV2 && c.eval.tta_scale != EvalConfig{}.tta_scale;
       },
       [](const Config& c) { return show(c.eval.tta_scale); }},
  };
  static const std::vector<IgnoredKey> all = [] {
    std::vector<IgnoredKey> out = keys;
    for (const IgnoredKey& k : ignored_optimizer_keys()) out.push_back(k);
    return out;
  }();
  return all;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> describe_ignored() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const IgnoredKey& k : ignored_keys()) out.emplace_back(k.key, k.when);
  return out;
}

void validate_with(const Config& config, const Fail& fail) { check_all(config, Rules{fail}); }

std::vector<Problem> describe_rules() {
  std::vector<Problem> rules;
  check_all(Config{}, Rules{[&rules](const Problem& rule) { rules.push_back(rule); },
                            /*list_all=*/true});
  return rules;
}

}  // namespace config_internal

std::vector<std::string> config_warnings(const Config& config) {
  std::vector<std::string> warnings;
  for (const auto& k : config_internal::ignored_keys()) {
    if (!k.ignored(config)) continue;
    warnings.push_back((config.source.empty() ? "" : config.source + ": ") + k.key + " is " +
                       k.value(config) + " but is ignored: " + k.when);
  }
  return warnings;
}

void validate(const Config& config) {
  config_internal::validate_with(config, [&](const config_internal::Problem& problem) {
    const std::string where = config.source.empty() ? "" : config.source + ": ";
    throw ConfigError(
        where + problem.path + ": expected " + problem.expected + ", got " + problem.found,
        problem.hint);
  });
}

}  // namespace ltfit
