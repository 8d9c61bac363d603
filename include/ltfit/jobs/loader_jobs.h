// The loader's own commands: `ltfit bench-loader` (input pipeline throughput, no model) and
// `ltfit show-batch` (a grid of augmented training images with their labels). Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ltfit/config/config.h"
#include "ltfit/data/decode_cache.h"
#include "ltfit/data/loader.h"

namespace ltfit {

struct BenchLoaderResult {
  double images_per_second = 0.0;
  int workers = 0;          // loader threads used
  int available_cores = 0;  // cores this process may run on
  std::int64_t images = 0;  // images in the timed batches
  double seconds = 0.0;     // wall time of the timed batches
  std::int64_t skipped_images = 0;
  std::optional<DecodedImageCacheStats> cache;  // data.cache: ram
};

// Times `batches` training batches of `config` (after 2 per worker to warm up; with data.cache:
// ram after a whole epoch, which fills the cache), starting new epochs as needed. `workers` > 0
// replaces data.workers.
BenchLoaderResult run_bench_loader_job(Config config, int batches, int workers);

// A loader batch after the batch hooks training runs on it (data.augment.on: device, random
// erasing, MixUp/CutMix: the trainer's own hooks, drawing what they draw at optimizer step
// `step`), back in uint8 pixels. The model's normalization is its architecture's.
struct ShownBatch {
  torch::Tensor images;   // uint8 [N,H,W,3]
  torch::Tensor targets;  // MixUp/CutMix's target rows, float [N,K]; undefined without
  std::string what;       // the hooks applied, e.g. "random erasing, MixUp/CutMix"; "" for none
};
ShownBatch batch_as_trained(const Config& config, const Batch& batch, std::size_t classes,
                            std::int64_t step);

// A mixed image's caption: its target's (at most two) classes by weight, "cat .70 dog .30".
std::string mixed_caption(const torch::Tensor& target, const std::vector<std::string>& classes);

// Writes the first training batch of `epoch` as the model sees it (the loader's augmentation,
// then batch_as_trained at the optimizer step the trainer is at: epoch x steps per epoch) as a
// PNG grid captioned with the class names (mixed images: both classes and their weights) to
// `out`. ConfigError (exit 2), before any work, when `out` is the config file or the
// labels file (check_output_not_input); DataError when no training image is readable.
void run_show_batch_job(const Config& config, int epoch, const std::string& out);

}  // namespace ltfit
