#include "ltfit/train/train_job.h"

#include <chrono>
#include <filesystem>

#include <spdlog/spdlog.h>
#include <torch/utils.h>

#include "ltfit/config/config_loader.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/data/loader.h"
#include "ltfit/eval/evaluator.h"
#include "ltfit/model/model_factory.h"
#include "ltfit/report/metrics_writer.h"
#include "ltfit/report/progress.h"
#include "ltfit/report/run_dir.h"
#include "ltfit/train/checkpoint_writer.h"
#include "ltfit/train/optimizer.h"
#include "ltfit/train/recipe.h"
#include "ltfit/train/trainer.h"
#include "ltfit/util/device.h"
#include "ltfit/util/format.h"
#include "ltfit/util/log.h"

namespace ltfit {

namespace {

void log_dataset(const DatasetIndex& index) {
  std::string classes;
  for (const auto& c : index.classes) classes += (classes.empty() ? "" : ", ") + c;
  spdlog::info("data: {} layout, {} train / {} valid images, classes: {}", index.layout,
               index.train.size(), index.valid.size(), classes);
}

}  // namespace

RunSummary run_train_job(const Config& config, const TrainJobOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const std::filesystem::path run_dir = create_run_dir(config.run, options.run_dir);
  write_text_atomic((run_dir / "config.yaml").string(), to_yaml(config));
  ScopedLogFile log_file((run_dir / "train.log").string());
  spdlog::info("run directory: {}", run_dir.string());
  spdlog::info("resolved config:\n{}", to_yaml(config));

  torch::manual_seed(config.run.seed);
  const torch::Device device = resolve_device(config.train.device);
  spdlog::info("device: {}", describe_device(device));
  const DatasetIndex index = index_dataset(config.data, config.run.seed);
  log_dataset(index);
  LoaderOptions train_options = make_loader_options(config, /*train=*/true);
  LoaderOptions valid_options = make_loader_options(config, /*train=*/false);
  train_options.pin_memory = valid_options.pin_memory = device.is_cuda();
  Loader train_loader(index.train, train_options);
  Loader valid_loader(index.valid, valid_options);
  spdlog::info("loader: {} worker thread(s), batch {} at {} px", train_loader.workers(),
               config.data.batch_size, config.data.image_size);

  ResNet model = build_model(config.model, static_cast<std::int64_t>(index.classes.size()));
  model->to(device);
  const bool channels_last = config.train.channels_last;
  if (channels_last) {
    for (auto& p : model->parameters()) {
      if (p.dim() == 4) p.set_data(p.data().contiguous(torch::MemoryFormat::ChannelsLast));
    }
  }
  auto optimizer = make_optimizer(config.train.optimizer, model->layer_group_parameters());

  MetricsWriter metrics(run_dir.string(), kLayerGroups);
  ProgressReporter progress(config.data.batch_size);
  CheckpointWriter checkpoints((run_dir / "checkpoints").string(), model, *optimizer,
                               {to_yaml(config), index.classes});
  Trainer trainer(model, *optimizer, train_loader, valid_loader, {device, channels_last},
                  {&progress, &metrics, &checkpoints});
  std::vector<EpochStats> history;
  for (const StagePlan& stage : plan_recipe(config.train)) {
    for (auto& e : trainer.fit_one_cycle(stage)) history.push_back(e);
  }
  const double train_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  RunSummary summary;
  summary.run_dir = run_dir.string();
  summary.arch = config.model.arch;
  summary.device = describe_device(device);
  summary.classes = index.classes;
  summary.epochs = static_cast<int>(history.size());
  summary.train_images = static_cast<std::int64_t>(index.train.size());
  summary.valid_images = static_cast<std::int64_t>(index.valid.size());
  summary.accuracy = history.back().accuracy;
  summary.error_rate = history.back().error_rate;
  summary.valid_loss = history.back().valid_loss;
  summary.best_accuracy = checkpoints.best_accuracy();
  summary.train_seconds = train_seconds;
  summary.total_seconds = train_seconds;
  const SkippedImages skipped_train = train_loader.skipped();
  const SkippedImages skipped_valid = valid_loader.skipped();
  summary.skipped_images = skipped_train.count + skipped_valid.count;
  summary.skipped_examples = skipped_train.examples;
  for (const auto& e : skipped_valid.examples) summary.skipped_examples.push_back(e);
  if (summary.skipped_images > 0) {
    spdlog::warn("{} unreadable image(s) were skipped (listed above and in summary.json)",
                 summary.skipped_images);
  }
  write_summary((run_dir / "summary.json").string(), summary);
  spdlog::info("done in {}: accuracy {:.4f} (best {:.4f}); wrote {}", format_mm_ss(train_seconds),
               summary.accuracy, summary.best_accuracy, run_dir.string());
  return summary;
}

}  // namespace ltfit
