// Where a training run's checkpoints go and when it stops early: the Trainer's checkpoint hook.
//
// Every save writes `checkpoints/step-<global step>.ckpt` (atomically, checkpoint.h) and points
// `last.ckpt` at it; at an epoch end with a new best validation accuracy it first writes
// `best.ckpt`, weights only (no optimizer state: about a third of the size), and has it on disk
// before the numbered checkpoint that records it as the best exists (a resume checks the two
// agree: best_checkpoint.h). Only the `keep`
// newest numbered files up to the current step stay (one with a later step, from another
// session, is left alone). last.ckpt is a hard link where the file system allows (no extra
// disk), a copy otherwise; each file is put in place by rename, so a kill at any moment leaves
// the previous checkpoint loadable. Saves happen at every epoch end, every `every_minutes`
// mid-epoch, and before stopping on a signal or before `time_limit` would be passed. The time
// limit counts the whole session from `session_start` (set-up included); its margin covers the
// slowest step seen, validation included, the slowest save, and `tta_passes` validation passes
// for the final TTA. A stop request becomes ctx.interrupt after the save. The decisions to stop
// or save after a step are cast as ctx.vote_stop/vote_save at the step's last after_loss (a
// data-parallel run agrees on them before the step); an epoch end's through ctx.agree. Not
// thread-safe.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <torch/optim/optimizer.h>

#include "ltfit/config/config.h"
#include "ltfit/model/classifier.h"
#include "ltfit/train/checkpoint.h"
#include "ltfit/train/hooks.h"

namespace ltfit {

struct CheckpointWriterOptions {
  using Clock = std::chrono::steady_clock;
  CheckpointConfig cadence;                  // every_minutes, keep
  std::optional<double> time_limit_seconds;  // stop before this much wall time in this session
  std::function<bool()> stop_signal;         // true once a stop was requested (SIGINT/SIGTERM)
  double prior_train_seconds = 0.0;          // training time of earlier sessions (resume)
  double best_accuracy = -1.0;               // best accuracy of earlier sessions (resume)
  Clock::time_point session_start = Clock::now();  // the job's start: time_limit counts from it
  Clock::time_point train_start = Clock::now();    // training's start: train_seconds counts from it
  int tta_passes = 0;  // validation-sized passes the final TTA will take (0: no TTA)
  // What best.ckpt tracks (train.best_monitor): the highest accuracy or the lowest valid_loss.
  Monitor best_monitor = Monitor::kAccuracy;
  // False on the ranks of a data-parallel run other than rank 0: they decide with it (stop
  // requests and the time limit count on every rank) but write nothing.
  bool write = true;
};

class CheckpointWriter : public Hook {
 public:
  // `base` supplies config_yaml and classes for every checkpoint.
  CheckpointWriter(std::string dir, Classifier model, torch::optim::Optimizer& optimizer,
                   CheckpointMeta base, CheckpointWriterOptions options);

  int order() const override { return hook_order::kCheckpoint; }
  // The best epoch's monitored value, accuracy and global epoch, kept as the hook state
  // "best_checkpoint" so a resumed run compares with the same best (checkpoints without it: the
  // saved best_accuracy) and can check that best.ckpt holds that epoch.
  std::string state_name() const override { return "best_checkpoint"; }
  HookState save_state() const override;
  void load_state(const HookState& state) override;
  void after_loss(TrainContext& ctx) override;
  void after_step(TrainContext& ctx) override;
  void validation_begin(TrainContext& ctx) override;
  void validation_end(TrainContext& ctx) override;
  void epoch_end(TrainContext& ctx) override;

  // Saves the full training state; `epoch` holds the stats when called at an epoch's end.
  // `reason` says why ("epoch", "periodic", "stop") for the log; `profiler`, when given, supplies
  // the phase totals the checkpoint carries (timing.json of a resumed run sums them);
  // `hook_states`, the stateful hooks' records (TrainContext::hook_states).
  void save(const TrainState& state, const EpochStats* epoch, const char* reason,
            const Profiler* profiler = nullptr, std::vector<HookState> hook_states = {});

  double best_accuracy() const { return best_accuracy_; }  // the accuracy of best.ckpt's epoch
  std::string last_path() const { return dir_ + "/last.ckpt"; }

 private:
  using Clock = std::chrono::steady_clock;
  // Stop now (a signal, or the time limit would be passed before the next step ends)?
  bool stop_requested();
  bool checkpoint_due() const;
  void prune(std::int64_t current_step);

  std::string dir_;
  Classifier model_;
  torch::optim::Optimizer& optimizer_;
  CheckpointMeta base_;
  CheckpointWriterOptions options_;
  Clock::time_point last_save_ = Clock::now();
  Clock::time_point last_poll_ = Clock::now();
  double slowest_step_ = 0.0;  // longest gap between two polls (a step, or an epoch end)
  double slowest_save_ = 0.0;
  double slowest_validation_ = 0.0;
  Clock::time_point validation_start_;
  double best_accuracy_ = -1.0;
  double best_value_ = -1.0;  // best_monitor's value at best.ckpt's epoch (±inf: none yet)
  int best_epoch_ = -1;       // global epochs done at best.ckpt's epoch (-1: none, or not recorded)
  double last_accuracy_ = 0.0;
  double last_valid_loss_ = 0.0;
  bool time_limit_hit_ = false;
  bool stop_logged_ = false;
};

// A finished run's `dir` (its checkpoints/) reduced to weights (train.checkpoint.keep_resumable
// false): last.ckpt becomes a hard link to best.ckpt when best.ckpt was written at the same step
// (the last epoch was the best), else it is rewritten without the optimizer state (loaded into
// `scratch`, whose weights are replaced); then the numbered checkpoints are removed. Each
// replacement is atomic: last.ckpt is loadable throughout. Nothing to do (freed 0) when last.ckpt
// already holds weights only.
struct KeptWeights {
  std::uintmax_t freed = 0;   // bytes
  bool last_is_best = false;  // last.ckpt is now a link to best.ckpt
};
KeptWeights keep_weights_only(const std::string& dir, Classifier& scratch);

// The newest readable checkpoint of a run directory that a run can continue from: its
// `checkpoints/last.ckpt`, else its numbered checkpoints newest first (an unreadable one is
// skipped with a warning, a weights-only numbered one silently); nullopt when there is none. A
// weights-only last.ckpt is returned: it is a finished run's (keep_weights_only), which the
// caller reports complete, or refuses.
std::optional<std::string> find_resume_checkpoint(const std::string& run_dir);

}  // namespace ltfit
