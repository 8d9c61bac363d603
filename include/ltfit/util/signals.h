// SIGINT/SIGTERM as a stop request: while a StopSignals object lives, the first SIGINT or SIGTERM
// only sets a flag (the trainer finishes its step, writes a checkpoint and exits 130); a second
// one restores the default action and re-raises, so a stuck process can still be killed.
// One instance at a time (it installs process-wide handlers and restores the old ones on exit).
#pragma once

namespace ltfit {

class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // True once SIGINT or SIGTERM arrived; which one in signal_number().
  static bool requested();
  static int signal_number();
  // Clears the flag (tests).
  static void reset();
};

}  // namespace ltfit
