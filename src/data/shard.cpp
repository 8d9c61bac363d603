// Splitting batches and samples between ranks: see shard.h.
#include "ltfit/data/shard.h"

#include <string>

#include "ltfit/util/error.h"

namespace ltfit {

Span batch_slice(std::int64_t global_batch, Shard shard) {
  const std::int64_t local = global_batch / shard.count;
  return {shard.rank * local, (shard.rank + 1) * local};
}

Span sample_range(std::int64_t n, Shard shard) {
  const auto at = [&](std::int64_t r) { return n * r / shard.count; };
  return {at(shard.rank), at(shard.rank + 1)};
}

void check_global_batch(std::int64_t global_batch, int ranks) {
  if (ranks <= 1) return;
  if (global_batch % ranks != 0 || global_batch / ranks < 2) {
    throw ConfigError("data.batch_size " + std::to_string(global_batch) +
                          " is the global batch of " + std::to_string(ranks) +
                          " ranks: it must divide by " + std::to_string(ranks) +
                          " into slices of at least 2 images",
                      "set data.batch_size to a multiple of " + std::to_string(ranks) +
                          " of at least " + std::to_string(2 * ranks));
  }
}

}  // namespace ltfit
