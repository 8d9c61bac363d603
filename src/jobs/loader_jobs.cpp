// bench-loader and show-batch: see loader_jobs.h.
#include "ltfit/jobs/loader_jobs.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "ltfit/data/dataset_index.h"
#include "ltfit/data/loader.h"
#include "ltfit/jobs/output_check.h"
#include "ltfit/model/arch_registry.h"
#include "ltfit/pictures/image_grid.h"
#include "ltfit/train/device_augment.h"
#include "ltfit/train/mixup.h"
#include "ltfit/train/random_erasing.h"
#include "ltfit/util/choices.h"
#include "ltfit/util/error.h"

namespace ltfit {

namespace {

// Pulls `count` batches from `loader`, starting new epochs as needed; returns images seen.
std::int64_t pull_batches(Loader& loader, int count, int* epoch) {
  std::int64_t images = 0;
  for (int i = 0; i < count; ++i) {
    auto batch = loader.next();
    if (!batch) {
      loader.start_epoch(++*epoch);
      batch = loader.next();
      if (!batch) break;
    }
    images += batch->labels.size(0);
  }
  return images;
}

}  // namespace

ShownBatch batch_as_trained(const Config& config, const Batch& batch, std::size_t classes,
                            std::int64_t step) {
  const AugmentConfig& augment = config.data.augment;
  const bool device = augment.on == AugmentPlace::kDevice;
  const bool erasing = augment.random_erasing.p > 0;
  const bool mixup = config.train.mixup.enabled() && !is_multi_label(config);
  if (!device && !erasing && !mixup) return {batch.images, {}, ""};
  const ImageNormalization norm = arch_info(config.model.arch).normalization;
  const auto channel = [](const std::array<float, 3>& v) {
    return torch::tensor(std::vector<float>(v.begin(), v.end())).view({1, 3, 1, 1});
  };
  const torch::Tensor mean = channel(norm.mean), std = channel(norm.std);
  torch::Tensor images =
      (batch.images.permute({0, 3, 1, 2}).to(torch::kFloat32) / 255 - mean) / std;
  ShownBatch shown;
  std::vector<std::string> applied;
  const std::uint64_t seed = config.run.seed;
  if (device) {
    images = DeviceAugmentHook(augment, seed, 0, 1).augment(images, norm, step, 0);
    applied.emplace_back("device augmentation");
  }
  if (erasing) {
    RandomErasingHook(augment.random_erasing, seed, 0, 1).erase(images, step, 0);
    applied.emplace_back("random erasing");
  }
  if (mixup) {
    const MixupHook hook(config.train.mixup, static_cast<std::int64_t>(classes), seed, 0, 1);
    shown.targets = hook.mix(images, batch.labels, step, 0);
    applied.emplace_back("MixUp/CutMix");
  }
  shown.images = ((images * std + mean) * 255)
                     .round()
                     .clamp(0, 255)
                     .to(torch::kUInt8)
                     .permute({0, 2, 3, 1})
                     .contiguous();
  shown.what = join(applied, ", ");
  return shown;
}

std::string mixed_caption(const torch::Tensor& target, const std::vector<std::string>& classes) {
  const torch::Tensor order = target.argsort(0, /*descending=*/true);
  std::string caption;
  for (std::int64_t k = 0; k < std::min<std::int64_t>(2, target.size(0)); ++k) {
    const std::int64_t c = order[k].item<std::int64_t>();
    const double weight = target[c].item<double>();
    if (weight < 0.005) break;
    if (!caption.empty()) caption += " ";
    std::string shown = fmt::format("{:.2f}", weight);  // "0.61" -> ".61": room under a tile
    if (shown.rfind("0.", 0) == 0) shown.erase(0, 1);
    caption += classes[static_cast<std::size_t>(c)] + " " + shown;
  }
  return caption;
}

BenchLoaderResult run_bench_loader_job(Config config, int batches, int workers) {
  if (workers > 0) config.data.workers = workers;
  const DatasetIndex index = index_dataset(config.data, config.run.seed, is_multi_label(config));
  LoaderOptions options = make_loader_options(config, /*train=*/true);
  if (config.data.cache == DataCache::kRam) {
    options.cache = make_decoded_image_cache(config.data.cache_bytes);
  }
  Loader loader(index.train, options);
  const int per_epoch = static_cast<int>(loader.size() / config.data.batch_size);
  const int warmup = options.cache ? std::max(per_epoch, 1) : 2 * loader.workers();
  int epoch = 0;
  loader.start_epoch(epoch);
  spdlog::info("bench-loader: {} images, {} worker(s), batch {} at {} px; {} warm-up + {} batches",
               loader.size(), loader.workers(), config.data.batch_size, config.data.image_size,
               warmup, batches);
  pull_batches(loader, warmup, &epoch);
  const auto start = std::chrono::steady_clock::now();
  BenchLoaderResult result;
  result.images = pull_batches(loader, batches, &epoch);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.images_per_second = static_cast<double>(result.images) / result.seconds;
  result.workers = loader.workers();
  result.available_cores = available_cores();
  result.skipped_images = loader.skipped().count;
  if (options.cache) result.cache = decoded_image_cache_stats(*options.cache);
  return result;
}

void run_show_batch_job(const Config& config, int epoch, const std::string& out) {
  check_output_not_input(out, "the picture (--out)", config_inputs(config));
  const DatasetIndex index = index_dataset(config.data, config.run.seed, is_multi_label(config));
  LoaderOptions options = make_loader_options(config, /*train=*/true);
  if (index.multi_label)
    options.multi_label_classes = static_cast<std::int64_t>(index.classes.size());
  Loader loader(index.train, options);
  loader.start_epoch(epoch);
  const auto batch = loader.next();
  if (!batch) throw DataError("no readable training image for a batch");
  // The optimizer step the trainer is at when it takes this batch (the epoch's first): the
  // batch hooks draw from it.
  const std::int64_t step =
      static_cast<std::int64_t>(epoch) *
      ((loader.batches_per_epoch() + config.train.accumulate - 1) / config.train.accumulate);
  const ShownBatch shown = batch_as_trained(config, *batch, index.classes.size(), step);
  std::vector<std::string> captions;
  for (std::int64_t i = 0; i < batch->labels.size(0); ++i) {
    captions.push_back(shown.targets.defined() && !index.multi_label
                           ? mixed_caption(shown.targets[i], index.classes)
                           : batch_caption(*batch, i, index.classes));
  }
  write_image_grid(shown.images, captions, 0, out);
  spdlog::info("wrote {} training images (epoch {}, as the model sees them{}) to {}",
               captions.size(), epoch, shown.what.empty() ? "" : ": " + shown.what, out);
}

}  // namespace ltfit
