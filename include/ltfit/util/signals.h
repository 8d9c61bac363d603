// SIGINT/SIGTERM as a stop request: while a StopSignals object lives, the first SIGINT or SIGTERM
// only sets a flag (the trainer finishes its step, writes a checkpoint and exits 130; a download
// stops and removes its partial file); a second one restores the default action and re-raises,
// so a stuck process can still be killed.
//
// Instances nest: the outermost installs the process-wide handlers (clearing the flag) and
// restores the previous ones when it ends; inner ones (a download inside `ltfit train`) share
// them. Construction and destruction are thread-safe; requested() is async-signal-safe.
#pragma once

namespace ltfit {

class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // True once SIGINT or SIGTERM arrived.
  static bool requested();
  // Clears the flag (tests).
  static void reset();
};

}  // namespace ltfit
