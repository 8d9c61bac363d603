// bench-loader and show-batch: see loader_jobs.h.
#include "ltfit/jobs/loader_jobs.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "ltfit/data/batch_augment.h"
#include "ltfit/data/dataset_index.h"
#include "ltfit/data/image_grid.h"
#include "ltfit/data/loader.h"
#include "ltfit/jobs/output_check.h"
#include "ltfit/train/device_augment.h"
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
  torch::Tensor images = batch->images;
  if (config.data.augment.on == AugmentPlace::kDevice) {  // what DeviceAugmentHook makes of it
    const torch::Tensor pixels = images.permute({0, 3, 1, 2}).to(torch::kFloat32) / 255;
    const BatchAugmentDraw draw =
        draw_batch_augment(config.data.augment, pixels.size(0),
                           DeviceAugmentHook::batch_seed(config.run.seed, epoch, 0));
    images = (augment_batch(pixels, draw, static_cast<int>(pixels.size(2))) * 255)
                 .round()
                 .clamp(0, 255)
                 .to(torch::kUInt8)
                 .permute({0, 2, 3, 1})
                 .contiguous();
  }
  std::vector<std::string> captions;
  for (std::int64_t i = 0; i < batch->labels.size(0); ++i) {
    captions.push_back(batch_caption(*batch, i, index.classes));
  }
  write_image_grid(images, captions, 0, out);
  spdlog::info("wrote {} augmented training images (epoch {}) to {}", captions.size(), epoch, out);
}

}  // namespace ltfit
