// The loader's own commands: `ltfit bench-loader` (input pipeline throughput, no model) and
// `ltfit show-batch` (a grid of augmented training images with their labels). Not thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ltfit/config/config.h"
#include "ltfit/data/decode_cache.h"

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

// Writes the first training batch of `epoch`, augmented, as a PNG grid captioned with the class
// names to `out`. ConfigError (exit 2), before any work, when `out` is the config file or the
// labels file (check_output_not_input); DataError when no training image is readable.
void run_show_batch_job(const Config& config, int epoch, const std::string& out);

}  // namespace ltfit
