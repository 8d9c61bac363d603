// SIGINT, SIGTERM and SIGHUP as a stop request. While a StopSignals object lives, the first of
// them only sets a flag (kFinishWork: the trainer finishes its step, writes a checkpoint and
// exits 130; a download stops and removes its partial file), or ends the process at once with
// exit 130 after removing its temporary files (kExitNow: commands with nothing to save, such as
// evaluate, predict and lr-find).
//
// One request, however it is delivered: another stop signal within kRepeatWindowMs of the first
// is the same request and is ignored (GNU `timeout` signals the child and then its whole process
// group; `ltfit experiment` passes a Ctrl-C on to its child, which the terminal has already
// signalled). A stop signal after that window is a deliberate "stop now": the temporary files
// still being written (temp_files.h) are removed, and the process ends by that signal (the
// default action), so a stuck process can still be stopped; what was saved stays.
//
// Instances nest: the outermost installs the process-wide handlers (clearing the flag) and
// restores the previous ones when it ends; inner ones (a download inside `ltfit train`) share
// them and its mode. Construction and destruction are thread-safe; requested() is
// async-signal-safe.
#pragma once

#include <cstdint>
#include <string>

namespace ltfit {

enum class StopMode {
  kFinishWork,  // set the flag; the work polls requested() and stops cleanly
  kExitNow,     // remove the temporary files and exit 130 from the handler
};

class StopSignals {
 public:
  // A second stop signal sooner than this after the first is the same request.
  static constexpr std::int64_t kRepeatWindowMs = 2000;

  explicit StopSignals(StopMode mode = StopMode::kFinishWork);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // True once SIGINT, SIGTERM or SIGHUP arrived.
  static bool requested();
  // Clears the flag (tests).
  static void reset();
};

// Throws InterruptedError (exit 130) naming `during` (e.g. "reading the CSV file 'x.csv'") when
// a stop was requested while a StopSignals lives. Work with nothing to save, such as indexing a
// dataset, calls it every few thousand items, so that a stop is honoured within a second.
void throw_if_stop_requested(const std::string& during);

// Whether a stop signal `since_first_ms` after the first one repeats that request (true) or is a
// deliberate second request to stop at once (false).
constexpr bool repeats_stop_request(std::int64_t since_first_ms) {
  return since_first_ms < StopSignals::kRepeatWindowMs;
}

}  // namespace ltfit
