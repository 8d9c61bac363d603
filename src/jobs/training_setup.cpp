// Data, loaders, model and optimizer of a training run: see training_setup.h.
#include "ltfit/jobs/training_setup.h"

#include <spdlog/spdlog.h>

#include <functional>
#include <string>

#include "ltfit/data/class_counts.h"
#include "ltfit/data/decode_cache.h"
#include "ltfit/data/readable_images.h"
#include "ltfit/eval/multi_label_metrics.h"
#include "ltfit/jobs/dist_session.h"
#include "ltfit/model/model_factory.h"
#include "ltfit/train/optimizer.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

void log_dataset(const DatasetIndex& index) {
  std::string classes;
  for (const auto& c : index.classes) classes += (classes.empty() ? "" : ", ") + c;
  spdlog::info("data: {} layout{}, {} train / {} valid images (split: {}), classes: {}",
               index.layout, index.multi_label ? " (multi-label)" : "", index.train.size(),
               index.valid.size(), index.split, classes);
  for (const std::string& note : index.notes) spdlog::warn("data: {}", note);
  spdlog::info("train: {}", describe_class_counts(index.train, index.classes));
  if (!index.valid.empty())
    spdlog::info("valid: {}", describe_class_counts(index.valid, index.classes));
}

// data.valid_pct 0 left no validation split: what judges by validation is refused, the rest is
// said once, plainly.
void check_no_validation(const Config& config) {
  if (config.train.early_stopping.patience > 0) {
    throw ConfigError(
        "train.early_stopping judges by validation, and data.valid_pct 0 leaves no "
        "validation split",
        "set train.early_stopping.patience: 0, or data.valid_pct above 0");
  }
  if (config.train.schedule == ScheduleKind::kPlateau) {
    throw ConfigError(
        "train.schedule plateau lowers the LR when validation stops improving, and "
        "data.valid_pct 0 leaves no validation split",
        "choose another train.schedule (one_cycle, cosine, ...), or data.valid_pct "
        "above 0");
  }
  spdlog::info(
      "validation: none (data.valid_pct 0): every image trains; the last epoch's weights are the "
      "result (best.ckpt is the last epoch's), with no validation loss, accuracy or TTA");
}

// Refuses, before any training, a split that cannot fill what training needs: fewer readable
// training images than one batch, or a validation split without a readable image (every rank
// checks the same files and comes to the same answer).
void check_readable_splits(const Config& config, const TrainingSetup& setup, bool with_valid) {
  const Loader& train = *setup.train_loader;
  const std::string unreadable = std::to_string(train.size() - train.planned()) + " unreadable";
  if (train.planned() == 0) {
    throw DataError("no training image could be read: the training split of data.root '" +
                        config.data.root + "' holds " + unreadable + " file(s) (named above)",
                    "replace the unreadable files (see data.max_pixels and data.formats)");
  }
  if (train.batches_per_epoch() < 1) {
    throw DataError("the training split of data.root '" + config.data.root + "' has " +
                        std::to_string(train.planned()) + " readable image(s) (" + unreadable +
                        "), fewer than one batch (data.batch_size " +
                        std::to_string(config.data.batch_size) + ")",
                    "add images, replace the unreadable ones or lower data.batch_size");
  }
  if (with_valid && first_readable(setup.index.valid, image_limits(config.data)) < 0) {
    throw DataError("the validation split of data.root '" + config.data.root +
                        "' has no readable "
                        "image (" +
                        std::to_string(setup.index.valid.size()) +
                        " file(s), none passes the header check)",
                    "replace the unreadable validation files (see data.max_pixels and "
                    "data.formats), or add readable ones");
  }
}

}  // namespace

TrainerOptions trainer_options(const Config& config, const TrainingSetup& setup,
                               const torch::Device& device, DistGroup* group) {
  TrainerOptions options;
  options.device = device;
  options.train = config.train;
  options.eval = config.eval;
  options.group = group;
  if (setup.class_weights.defined()) options.class_weights = setup.class_weights.to(device);
  options.thresholds = setup.thresholds;
  if (setup.pos_weight.defined()) options.pos_weight = setup.pos_weight.to(device);
  return options;
}

std::vector<double> class_thresholds(const Config& config, std::size_t classes) {
  if (!is_multi_label(config)) return {};
  const std::vector<double>& given = config.eval.thresholds;
  if (given.empty()) return std::vector<double>(classes, config.eval.threshold);
  if (given.size() != classes) {
    throw ConfigError("eval.thresholds: " + std::to_string(given.size()) + " threshold(s) for " +
                          std::to_string(classes) + " classes",
                      "give one per class, in the classes' sorted order, or null to use "
                      "eval.threshold for all");
  }
  return given;
}

namespace {

// A per-class weight vector of `key` (train.class_weights, train.pos_weight): none (undefined),
// a list of one per class, or `balanced` computed by `balanced`; logged with the class names.
torch::Tensor per_class_weights(const char* key, const ClassWeights& weights,
                                const DatasetIndex& index,
                                const std::function<std::vector<double>()>& balanced) {
  const std::size_t classes = index.classes.size();
  std::vector<double> w;
  switch (weights.kind) {
    case ClassWeights::Kind::kNone:
      return {};
    case ClassWeights::Kind::kList:
      if (weights.weights.size() != classes) {
        throw ConfigError(std::string(key) + ": " + std::to_string(weights.weights.size()) +
                              " weight(s) for " + std::to_string(classes) + " classes",
                          "give one weight per class, in the classes' sorted order, or "
                          "`balanced`");
      }
      w = weights.weights;
      break;
    case ClassWeights::Kind::kBalanced:
      w = balanced();
      break;
  }
  std::string text;
  for (std::size_t c = 0; c < classes; ++c) {
    text += fmt::format("{}{} {:.4g}", c ? ", " : "", index.classes[c], w[c]);
  }
  spdlog::info("{} ({}): {}", key,
               weights.kind == ClassWeights::Kind::kBalanced ? "balanced" : "given", text);
  return torch::tensor(w, torch::kFloat32);
}

}  // namespace

torch::Tensor pos_weight_tensor(const ClassWeights& weights, const DatasetIndex& index) {
  return per_class_weights("train.pos_weight", weights, index, [&index] {
    std::vector<std::int64_t> positives(index.classes.size(), 0);
    for (const Sample& s : index.train) {
      for (std::int64_t c : s.labels) ++positives[static_cast<std::size_t>(c)];
    }
    return balanced_pos_weight(positives, static_cast<std::int64_t>(index.train.size()));
  });
}

torch::Tensor class_weight_tensor(const ClassWeights& weights, const DatasetIndex& index) {
  return per_class_weights("train.class_weights", weights, index, [&index] {
    const std::size_t classes = index.classes.size();
    std::vector<std::int64_t> counts(classes, 0);
    for (const Sample& s : index.train) ++counts[static_cast<std::size_t>(s.label)];
    const double n = static_cast<double>(index.train.size());
    std::vector<double> w;
    for (std::size_t c = 0; c < classes; ++c) {
      if (counts[c] == 0) {
        throw ConfigError("train.class_weights: balanced, but class '" + index.classes[c] +
                              "' has no training image",
                          "add training images of that class, or give the weights as a list");
      }
      w.push_back(n / (static_cast<double>(classes) * static_cast<double>(counts[c])));
    }
    return w;
  });
}

TrainingSetup make_training_setup(const Config& config, const torch::Device& device,
                                  bool with_valid, const DistSession* dist) {
  TrainingSetup setup;
  setup.index = index_dataset(config.data, config.run.seed, is_multi_label(config));
  log_dataset(setup.index);
  setup.train_options = make_loader_options(config, /*train=*/true);
  setup.valid_options = make_loader_options(config, /*train=*/false);
  if (setup.index.multi_label) {
    setup.train_options.multi_label_classes = setup.valid_options.multi_label_classes =
        static_cast<std::int64_t>(setup.index.classes.size());
  }
  setup.train_options.pin_memory = setup.valid_options.pin_memory = device.is_cuda();
  if (config.data.cache == DataCache::kRam) {
    setup.train_options.cache = setup.valid_options.cache =
        make_decoded_image_cache(config.data.cache_bytes);
  }
  std::vector<Sample> valid = setup.index.valid;
  if (dist != nullptr && dist->active()) {
    setup.train_options.shard = dist->shard();
    setup.train_options.data.workers = setup.valid_options.data.workers =
        dist->loader_workers(config.data.workers);
    const Span part = sample_range(static_cast<std::int64_t>(valid.size()), dist->shard());
    valid = std::vector<Sample>(valid.begin() + part.begin, valid.begin() + part.end);
  }
  if (config.data.cache == DataCache::kDevice) {
    // The training batches come from the device: the loader only checks and counts the images.
    setup.train_options.data.workers = 1;
    setup.device_batches =
        std::make_unique<DeviceCacheSource>(setup.index.train, setup.train_options, device);
  }
  setup.train_loader = std::make_unique<Loader>(setup.index.train, setup.train_options);
  if (with_valid && setup.index.valid.empty()) {
    check_no_validation(config);
    with_valid = false;  // no validation loader: the trainer skips validation
  }
  if (with_valid)
    setup.valid_loader = std::make_unique<Loader>(std::move(valid), setup.valid_options);
  check_readable_splits(config, setup, with_valid);
  if (setup.device_batches) {
    spdlog::info("data.cache device: {} training images on {} ({:.1f} MiB), batches cropped there",
                 setup.device_batches->sample_count(), device.str(),
                 static_cast<double>(setup.device_batches->bytes()) / (1 << 20));
  }
  spdlog::info(
      "loader: {} worker thread(s), batch {} at {} px{}", setup.train_loader->workers(),
      config.data.batch_size, config.data.image_size,
      dist != nullptr && dist->active()
          ? fmt::format(" (global; {} per rank)", config.data.batch_size / dist->world_size())
          : std::string());

  setup.model = build_model(config.model, static_cast<std::int64_t>(setup.index.classes.size()));
  setup.model->to(device);
  if (config.train.channels_last) set_channels_last(setup.model);
  setup.optimizer = make_optimizer(config.train.optimizer, setup.model);
  setup.class_weights = class_weight_tensor(config.train.class_weights, setup.index);
  setup.thresholds = class_thresholds(config, setup.index.classes.size());
  setup.pos_weight = pos_weight_tensor(config.train.pos_weight, setup.index);
  return setup;
}

}  // namespace ltfit
