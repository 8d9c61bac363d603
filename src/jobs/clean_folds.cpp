// `ltfit clean`'s probabilities: the checkpoint's on a set of images, and out-of-sample ones for
// the training split by K-fold cross-fitting (clean_parts.h).
#include <spdlog/spdlog.h>

#include <filesystem>

#include "clean_parts.h"
#include "ltfit/config/config.h"
#include "ltfit/data/csv_table.h"
#include "ltfit/data/loader.h"
#include "ltfit/eval/evaluator.h"
#include "ltfit/jobs/train_job.h"
#include "ltfit/util/atomic_file.h"
#include "ltfit/util/device.h"
#include "ltfit/util/error.h"
#include "ltfit/util/output_dir.h"

namespace ltfit {

namespace {

namespace fs = std::filesystem;

// The training samples as a CSV layout over `root`: fname (relative to root), label, is_valid
// (1 for fold `k`).
std::string fold_csv(const std::string& root, const std::vector<Sample>& train,
                     const std::vector<std::string>& classes, const std::vector<int>& fold_of,
                     int k, bool multi_label) {
  const fs::path base = fs::absolute(root).lexically_normal();
  std::string text = "fname,label,is_valid\n";
  for (std::size_t i = 0; i < train.size(); ++i) {
    const fs::path rel = fs::absolute(train[i].path).lexically_normal().lexically_relative(base);
    std::string labels;
    if (multi_label) {
      for (const std::int64_t k : train[i].labels) {
        labels += (labels.empty() ? "" : " ") + classes[static_cast<std::size_t>(k)];
      }
    } else {
      labels = classes[static_cast<std::size_t>(train[i].label)];
    }
    text += csv_quote(rel.generic_string()) + "," + csv_quote(labels) + "," +
            (fold_of[i] == k ? "1" : "0") + "\n";
  }
  return text;
}

// `config` retargeted at fold `k`'s CSV: same recipe, the fold as its validation split.
Config fold_config(const Config& config, const std::string& root, const std::string& csv) {
  Config fold = config;
  fold.data.root = root;
  fold.data.layout = DataLayout::kCsv;
  fold.data.csv = CsvConfig{};
  fold.data.csv.file = fs::absolute(csv).string();
  fold.data.csv.path_column = "fname";
  fold.data.csv.label_column = "label";
  fold.data.csv.valid_column = "is_valid";
  fold.data.subset = 1.0;
  if (is_multi_label(config)) fold.data.csv.label_delim = " ";  // label sets as fold_csv joins them
  return fold;
}

}  // namespace

torch::Tensor clean_probabilities(LoadedModel& loaded, const std::vector<Sample>& samples,
                                  const EvalOptions& options) {
  const auto classes = static_cast<std::int64_t>(loaded.meta.classes.size());
  torch::Tensor out = torch::full({static_cast<std::int64_t>(samples.size()), classes},
                                  std::numeric_limits<float>::quiet_NaN());
  if (samples.empty()) return out;
  LoaderOptions loader_options = make_loader_options(loaded.config, /*train=*/false);
  loader_options.pin_memory = options.device.is_cuda();
  if (is_multi_label(loaded.config)) loader_options.multi_label_classes = classes;
  Loader loader(samples, loader_options);
  EvalOptions allow = options;
  allow.allow_empty = true;
  const EvalResult r = evaluate(loaded.model, loader, allow);
  if (r.count > 0)
    out.index_copy_(0, r.indices.to(torch::kLong), r.probabilities.to(torch::kFloat32));
  return out;
}

torch::Tensor cross_fitted_probabilities(const Config& config, const std::string& root,
                                         const std::vector<Sample>& train,
                                         const std::vector<std::string>& classes, int folds,
                                         const std::string& work, const CleanRequest& request) {
  // Each fold trains from a CSV of image files: records held in memory (CIFAR's) and members of
  // tar shards have none.
  if (!train.empty() && !is_image_file(train.front())) {
    throw ConfigError(
        "clean --folds trains on image files, and this dataset's images are "
        "inside other files ('" +
            train.front().path + "', ...)",
        "judge with the checkpoint's own model: drop --folds (its training images "
        "then count as seen, as clean's report says)");
  }
  // Folds drawn as the valid_pct split is: a permutation of the sorted samples by run.seed.
  torch::manual_seed(config.run.seed);
  const torch::Tensor order =
      torch::randperm(static_cast<std::int64_t>(train.size()), torch::kLong);
  std::vector<int> fold_of(train.size());
  for (std::int64_t i = 0; i < order.numel(); ++i) {
    fold_of[static_cast<std::size_t>(order[i].item<std::int64_t>())] = static_cast<int>(i % folds);
  }
  torch::Tensor out = torch::full(
      {static_cast<std::int64_t>(train.size()), static_cast<std::int64_t>(classes.size())},
      std::numeric_limits<float>::quiet_NaN());
  create_output_dir(work, "cross-fitting folder");
  for (int k = 0; k < folds; ++k) {
    const fs::path dir = fs::path(work) / ("fold-" + std::to_string(k));
    const std::string csv = (fs::path(work) / ("fold-" + std::to_string(k) + ".csv")).string();
    write_text_atomic(csv, fold_csv(root, train, classes, fold_of, k, is_multi_label(config)));
    spdlog::info("clean: cross-fitting fold {} of {} (the checkpoint's recipe, {})", k + 1, folds,
                 dir.string());
    TrainJobOptions options;
    options.run_dir = dir.string();
    options.reuse_run_dir = true;
    options.stop_signal = request.stop_signal;
    run_train_job(fold_config(config, root, csv), options);
    const torch::Device device = resolve_device(request.device, "--device");
    LoadedModel model = load_model_for_eval((dir / "checkpoints" / "last.ckpt").string(), device,
                                            WeightChoice::kAuto);
    if (model.meta.classes != classes) {
      throw DataError("clean --folds " + std::to_string(folds) + ": fold " + std::to_string(k + 1) +
                          " left a class without training images (its model knows " +
                          std::to_string(model.meta.classes.size()) + " of " +
                          std::to_string(classes.size()) + " classes)",
                      "pass fewer --folds, or give every class more images");
    }
    std::vector<Sample> held;
    std::vector<std::int64_t> rows;
    for (std::size_t i = 0; i < train.size(); ++i) {
      if (fold_of[i] != k) continue;
      held.push_back(train[i]);
      rows.push_back(static_cast<std::int64_t>(i));
    }
    const torch::Tensor p =
        clean_probabilities(model, held, eval_options_for(model, device, request.precision));
    out.index_copy_(0, torch::tensor(rows, torch::kLong), p);
  }
  return out;
}

}  // namespace ltfit
