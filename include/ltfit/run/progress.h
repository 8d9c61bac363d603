// Console progress: a bar with rate and ETA while an epoch runs, and fastai's epoch table
// (epoch, train_loss, valid_loss, accuracy, error_rate, time) through the logger.
//
// The bar is drawn on stderr with '\r' when stderr is a terminal; otherwise a line is
// logged every ~10 % so logs stay readable. Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>

#include "ltfit/run/events.h"

namespace ltfit {

class ProgressReporter : public TrainObserver {
 public:
  // `images_per_step`: data.batch_size x train.accumulate.
  explicit ProgressReporter(std::int64_t images_per_step);
  void on_stage_begin(const StageInfo& stage) override;
  // After a mid-epoch resume the bar starts where the epoch was (and reaches 100 %); the rate
  // and ETA count only the steps of this session.
  void on_epoch_begin(const EpochInfo& epoch) override;
  void on_step(const StepStats& step) override;
  void on_validation_begin(std::int64_t batches) override;
  void on_epoch_end(const EpochStats& epoch) override;

 private:
  void draw(std::int64_t done, bool force);

  std::int64_t images_per_step_;
  std::int64_t steps_per_epoch_ = 0;
  std::int64_t done_ = 0;
  std::int64_t first_ = 0;  // steps of the epoch done before this session
  int next_decile_ = 1;
  bool tty_ = false;
  std::chrono::steady_clock::time_point epoch_start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace ltfit
