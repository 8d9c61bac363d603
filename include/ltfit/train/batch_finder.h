// Finding the largest batch that trains without running out of memory (`ltfit find-batch`).
//
// The 2019 study ran bs 256 "at the limit" of an 11.17 GiB K80; this measures that limit for a
// config on a device instead of guessing. find_largest_batch is the pure search (doubling, then
// bisection) over any predicate; batch_fits is the real trial: it builds the config's model and
// optimizer as training does and runs two full training steps on random input. On CUDA an
// out-of-memory error is caught and the allocator cache emptied. On CPU a real OOM kills the
// process instead of throwing, so there a trial fails when its resident-memory growth exceeds a
// budget (an estimate), and make_trial_predicate skips batches whose growth, extrapolated
// linearly from the largest batch that fitted, would exceed it.
// Not thread-safe: trials use the device and the process's memory counters.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "ltfit/config/config.h"

namespace ltfit {

struct BatchTrial {
  int batch = 0;         // batch size tried
  bool fits = false;     // it trained without running out of memory
  double seconds = 0.0;  // wall time of the trial
};

struct BatchSearch {
  int largest = 0;                 // largest batch that fits; 0 if even `start` does not
  std::vector<BatchTrial> trials;  // in the order made
};

// Doubles from `start` until a batch fails or `max` is reached, then bisects between the last
// success and the first failure: O(log(max/start)) trials. Assumes `fits` is monotone (every
// batch below a fitting one fits). Throws ConfigError unless 1 <= start <= max.
BatchSearch find_largest_batch(const std::function<bool(int)>& fits, int start, int max);

struct BatchFitOptions {
  std::int64_t num_classes = 2;       // classifier outputs (their memory is negligible)
  int steps = 2;                      // full training steps per trial
  std::int64_t cpu_budget_bytes = 0;  // CPU: a trial fails when its RSS growth exceeds this;
                                      // 0 means 80 % of MemAvailable
};

// What one trial measured.
struct TrialMemory {
  bool fits = false;
  std::int64_t bytes = 0;  // CUDA: peak allocated bytes; CPU: resident-memory growth (estimate)
  bool skipped = false;    // CPU: not run, its predicted growth exceeded the budget
  std::string note;        // why it failed ("out of memory", "over budget ..."), else empty
};

// The CPU budget that `options` means (resolving 0 to 80 % of MemAvailable).
std::int64_t cpu_budget_bytes(const BatchFitOptions& options);

// Runs one trial of `batch` images at data.image_size: model (model.pretrained forced to none,
// every layer trainable), optimizer, channels_last and train.precision as training uses them.
// Throws ConfigError for a precision the device cannot run and RuntimeError when a step fails
// for another reason than memory (e.g. batch 1, where BatchNorm cannot train).
TrialMemory run_batch_trial(const Config& config, const torch::Device& device, int batch,
                            const BatchFitOptions& options = {});

// A predicate for find_largest_batch that runs trials (on CPU skipping those predicted over
// budget) and reports each result with its wall time to `report` (may be empty).
std::function<bool(int)> make_trial_predicate(
    const Config& config, const torch::Device& device, const BatchFitOptions& options,
    std::function<void(int batch, const TrialMemory&, double seconds)> report);

}  // namespace ltfit
