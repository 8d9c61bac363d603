// A plan run that is killed mid-run and resumed (`kill_at_epoch:`), as a free notebook's machine
// disconnects: when the cut comes, and what it cost.
//
// The runner kills the run's `ltfit train` with SIGKILL (no chance to checkpoint, as when the
// machine goes away) once training is `kill_at_epoch` epochs in, then starts the same command with
// `--resume auto`, which continues from the newest checkpoint in the run directory (or starts
// again from zero when the cut came before the first one). The time the cut cost is the two
// attempts' wall time less the training time the finished run reports: the work redone since the
// last checkpoint, plus the second start-up. A restart from zero would instead lose the whole
// first attempt. Plain values; CutClock is used by one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace ltfit {

// What happened at a run's cut.
struct RunCut {
  double at_epoch = 0.0;      // the plan's kill_at_epoch
  bool happened = false;      // false: the run ended (or was stopped) before the cut came
  double cut_seconds = 0.0;   // wall time of the killed attempt, start to kill
  double resume_seconds = 0;  // wall time of the resumed attempt
  // The checkpoint the resumed attempt started from: epochs done, batch within the next epoch and
  // the training time it holds; resumed_epochs null when there was none (started from zero).
  std::optional<int> resumed_epochs;
  std::int64_t resumed_batch = 0;
  double kept_seconds = 0.0;

  // cut + resume wall time less the finished run's training time (>= 0); null unless the cut
  // happened and the run finished with `train_seconds`.
  std::optional<double> time_lost(const std::optional<double>& train_seconds) const;
};

// Says when a run that writes `epochs_csv` is `at_epoch` epochs into training: at the end of
// epoch floor(at_epoch), then after the given fraction of that epoch's own time (its `seconds`
// in epochs.csv), 25.5 thus halfway through the 26th epoch.
class CutClock {
 public:
  CutClock(std::string epochs_csv, double at_epoch);
  // True once the cut is due; reads epochs.csv (complete lines only) until the boundary epoch
  // has ended.
  bool due();

 private:
  using Clock = std::chrono::steady_clock;
  std::string epochs_csv_;
  std::int64_t whole_epochs_;
  double fraction_;
  std::optional<Clock::time_point> boundary_;  // when the boundary epoch's row was seen
  double epoch_seconds_ = 0.0;                 // that epoch's own time
};

}  // namespace ltfit
