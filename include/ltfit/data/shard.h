// How a data-parallel run splits the data between its ranks (pure arithmetic, thread-safe).
//
// Training: every rank draws the same (seed, epoch) permutation and the same global batches;
// rank r of N takes rows [r*B/N, (r+1)*B/N) of each global batch of B. The union over ranks is
// the global batch, the slices are disjoint, and a position (stage, epoch, batch) means the same
// global batch on any number of ranks, so a checkpoint written by N ranks resumes on M.
// Validation: contiguous, disjoint, unpadded ranges of the sample list whose sizes differ by at
// most one (a rank may get none); metric sums are reduced over ranks, so they are the whole
// set's.
#pragma once

#include <cstdint>

namespace ltfit {

struct Shard {
  int rank = 0;   // this rank, in [0, count)
  int count = 1;  // ranks

  bool operator==(const Shard&) const = default;
};

struct Span {
  std::int64_t begin = 0;  // first index
  std::int64_t end = 0;    // one past the last
  std::int64_t size() const { return end - begin; }
  bool operator==(const Span&) const = default;
};

// The rows of a global batch of `global_batch` that `shard` takes. The caller has checked that
// `global_batch` divides by shard.count (check_global_batch).
Span batch_slice(std::int64_t global_batch, Shard shard);

// The part of `n` samples that `shard` evaluates.
Span sample_range(std::int64_t n, Shard shard);

// Throws ConfigError (exit 2) unless `global_batch` splits into `ranks` equal slices of at
// least 2 images (BatchNorm needs 2 per training batch).
void check_global_batch(std::int64_t global_batch, int ranks);

}  // namespace ltfit
