// Writes epochs.csv and steps.csv as training goes (README.md "The run directory"), one flushed row
// per event, so the files are complete up to the last finished step even after a crash.
#pragma once

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>

#include "ltfit/run/events.h"

namespace ltfit {

class MetricsWriter : public TrainObserver {
 public:
  // Where a resumed run continues: rows from here on are dropped and written again.
  struct ResumeAt {
    std::int64_t global_step = 0;  // steps.csv keeps rows with step < global_step
    int epochs_done = 0;           // epochs.csv keeps rows with epoch < epochs_done
  };
  // Opens `<run_dir>/epochs.csv` and `<run_dir>/steps.csv` (`groups` LR columns): new files, or
  // with `resume` the existing ones cut back to the checkpoint (rewritten atomically).
  // A multi-label run's epochs.csv has three more columns: f1_samples, f1_macro, map; a run with
  // top-k accuracy on (`top_k` > 0, the k resolve_top_k gives) one more: top_k_accuracy.
  MetricsWriter(const std::string& run_dir, int groups,
                std::optional<ResumeAt> resume = std::nullopt, bool multi_label = false,
                int top_k = 0);
  void on_step(const StepStats& step) override;
  void on_epoch_end(const EpochStats& epoch) override;

 private:
  std::ofstream epochs_;
  std::ofstream steps_;
  bool multi_label_ = false;
  bool top_k_ = false;  // epochs.csv has the top_k_accuracy column
};

}  // namespace ltfit
