// `ltfit find-batch`: the largest batch a config trains with on its device (train/batch_finder.h:
// doubling then bisection, each trial two real training steps on random input, a model built per
// trial). On CPU the limit is an estimate: a trial fails when its resident-memory growth passes
// the budget. Logs each trial as it ends. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ltfit/config/config.h"
#include "ltfit/train/batch_finder.h"

namespace ltfit {

struct FindBatchJobOptions {
  int start = 2;            // first batch tried (BatchNorm cannot train on a single image)
  int max = 0;              // largest batch tried; 0: 1024 on GPU, 256 on CPU
  double budget_mib = 0.0;  // CPU: memory a trial may add, MiB; 0: 80 % of MemAvailable
};

struct FindBatchReport {
  BatchSearch search;                 // the largest batch that fits and the trials in order
  std::map<int, TrialMemory> memory;  // what each tried batch measured
  std::string device;                 // describe_device()
  bool cuda = false;                  // memory measured on a GPU, not estimated
  int max = 0;                        // the largest batch tried (0 resolved)
  std::int64_t cpu_budget_bytes = 0;  // the CPU budget in force (unused on a GPU)
  std::int64_t classes = 2;           // the trials' head outputs: the dataset's classes, else 2
};

// Runs the search for `config` on its train.device, with the dataset's class count when
// data.root exists (DataError, exit 3, when it exists but cannot be indexed).
FindBatchReport run_find_batch_job(const Config& config, const FindBatchJobOptions& options);

}  // namespace ltfit
