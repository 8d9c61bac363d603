// The config keys a run's schedule and epoch plan depend on, and which of them two configs set
// differently: what `ltfit train --resume` refuses to change (resume.h).
//
// A resumed run continues at a step of a one-cycle schedule computed from the whole plan: the
// recipe and its epochs (train.recipe, epochs, freeze_epochs, frozen), the peak LRs and the
// schedule's shape (train.lr, train.one_cycle.*), and the steps per epoch, set by the data
// (data.batch_size, train.accumulate, data.subset, data.layout, data.valid_count and run.seed,
// which choose the images of each split). Changing any of them mid-run moves the LR to another
// curve at the same step, so a resume refuses it; every other key (data.workers,
// train.checkpoint.*, train.time_limit, train.device, ...) may change. Pure functions.
#pragma once

#include <string>
#include <vector>

#include "ltfit/config/config.h"

namespace ltfit {

struct KeyChange {
  std::string key;     // e.g. "train.epochs"
  std::string before;  // the value in `before`, as YAML would write it ("3", "[1e-05, 0.001]")
  std::string after;   // the value in `after`
};

// The schedule keys (in the order above) whose values differ between `before` and `after`.
std::vector<KeyChange> schedule_key_changes(const Config& before, const Config& after);

// "train.epochs 3 -> 5, data.batch_size 12 -> 24".
std::string describe_changes(const std::vector<KeyChange>& changes);

}  // namespace ltfit
