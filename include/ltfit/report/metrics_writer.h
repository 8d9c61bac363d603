// Writes epochs.csv and steps.csv as training goes (DESIGN.md), one flushed row per event,
// so the files are complete up to the last finished step even after a crash.
#pragma once

#include <fstream>
#include <string>

#include "ltfit/train/observer.h"

namespace ltfit {

class MetricsWriter : public TrainObserver {
 public:
  // Opens (truncates) `<run_dir>/epochs.csv` and `<run_dir>/steps.csv`; `groups` LR columns.
  MetricsWriter(const std::string& run_dir, int groups);
  void on_step(const StepStats& step) override;
  void on_epoch_end(const EpochStats& epoch) override;

 private:
  std::ofstream epochs_;
  std::ofstream steps_;
};

}  // namespace ltfit
