// TensorBoard logging of a training run (run.tensorboard): a TrainObserver that writes the
// run's figures to a new events file in `<run dir>/tb/`, which `tensorboard --logdir runs` shows
// while the run goes.
//
//   per optimizer step, at its 0-based global step (steps.csv's step): train/loss, lr/group<i>
//     (one per layer group), momentum, loss_scale;
//   per epoch, at the global step of the epoch's last optimizer step (so both share one axis):
//     epoch (epochs.csv's 0-based epoch), epoch/train_loss, epoch/valid_loss, epoch/accuracy,
//     epoch/error_rate, epoch/images_per_second, epoch/data_wait_seconds, epoch/seconds (and
//     epoch/top_k_accuracy when eval.top_k is on; multi-label: epoch/f1_samples, f1_macro, map);
//   images added by the caller (add_image) at the current step.
//
// Every value is TensorBoard's float32. The file is flushed after each epoch and at least every
// kFlushSeconds. Each session (a resumed run too) writes its own file, named as TensorBoard's
// writers name theirs (events.out.tfevents.<unix seconds>.<host>.<pid>.<n>); its first step
// carries a SessionLog START, so TensorBoard hides what an earlier session logged from that step
// on (steps a crashed session ran past its last checkpoint), as steps.csv drops those rows. An
// I/O failure throws WriteError (exit 5) naming the file. Not thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "ltfit/pictures/image_grid.h"
#include "ltfit/run/event_file.h"
#include "ltfit/run/events.h"

namespace ltfit {

// The name TensorBoard's writers give an events file (event_file_writer.py, EventsWriter).
std::string events_file_name(std::int64_t unix_seconds, const std::string& host, int pid, int n);

// A path for a new events file in `dir` (created if missing), named by events_file_name with a
// number no file there has. Throws WriteError (exit 5) when `dir` cannot be created.
std::string new_events_path(const std::string& dir);

class TensorBoardWriter : public TrainObserver {
 public:
  static constexpr double kFlushSeconds = 30.0;

  // Creates `dir` (and its parents) if needed and a new events file in it. `groups`: layer
  // groups (one lr/group<i> tag each); `first_step`: the global step this session starts at (a
  // resumed run's checkpoint step, else 0).
  TensorBoardWriter(const std::string& dir, int groups, std::int64_t first_step);

  void on_step(const StepStats& step) override;
  void on_epoch_end(const EpochStats& epoch) override;

  // `image` under `tag` at the last finished step (first_step before any step).
  void add_image(const std::string& tag, const EncodedPng& image);
  // Writes what is buffered; throws WriteError.
  void flush();

  const std::string& path() const { return file_.path(); }
  std::int64_t bytes() const { return file_.bytes(); }

 private:
  std::int64_t current_step() const;
  void flush_if_due();

  EventFileWriter file_;
  std::vector<std::string> step_tags_;
  std::vector<std::string> epoch_tags_;
  std::vector<double> values_;  // reused for each event
  std::int64_t first_step_;
  std::int64_t last_step_ = -1;  // the last step logged by this session
  std::chrono::steady_clock::time_point last_flush_;
};

}  // namespace ltfit
