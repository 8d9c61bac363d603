// The run directory: where a training run writes everything (README.md "The run directory").
//
// A new run never overwrites an earlier one: if `<out_dir>/<name>` already holds a run, the
// run goes to the first free numbered sibling `<name>-2`, `<name>-3`, ...
//
// One writer per run directory: while a run is open its process holds an advisory lock
// (flock(2), exclusive) on `<run dir>/.lock`, which also records the holder (pid, host, start
// time). The kernel releases it when the process ends, however it ends, so a crashed run never
// leaves a stale lock; the file itself stays. A second trainer on a locked directory gets a
// ConfigError (exit 2) naming the holder; a new run looking for a free name skips a locked one.
// On a file system without flock support the run goes on with a warning. Not thread-safe.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "ltfit/config/config.h"

namespace ltfit {

// The lock on one run directory, held while the object lives (movable, not copyable).
class RunDirLock {
 public:
  RunDirLock() = default;
  RunDirLock(RunDirLock&& other) noexcept;
  RunDirLock& operator=(RunDirLock&& other) noexcept;
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;
  ~RunDirLock();

  // Takes the lock on `dir` (which must exist), or nullopt when another process holds it; then
  // `*holder` (if given) describes it: "pid 123 on host h, since 2024-05-01T10:00:00Z".
  static std::optional<RunDirLock> try_acquire(const std::filesystem::path& dir,
                                               std::string* holder = nullptr);
  // Same, but throws ConfigError (exit 2) naming the directory and the holder.
  static RunDirLock acquire(const std::filesystem::path& dir);

  bool held() const { return fd_ >= 0; }

 private:
  explicit RunDirLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

// A run directory opened for writing: its path and the lock held on it.
struct OpenRunDir {
  std::filesystem::path path;
  RunDirLock lock;
};

// Picks, creates and locks the run directory: `explicit_dir` if given (must not hold a run;
// ConfigError if it does or is locked), else the first free `<out_dir>/<name>[-N]` (one that
// neither holds a run nor is locked). Throws RuntimeError (exit 5) naming the path if it cannot
// be created.
OpenRunDir create_run_dir(const RunConfig& run, const std::optional<std::string>& explicit_dir);

// Opens an existing or new run directory `dir` to continue it (resume): creates it and its
// checkpoints/ folder if needed and locks it (ConfigError naming the holder if locked).
OpenRunDir open_run_dir_to_continue(const std::filesystem::path& dir);

// True if `dir` already holds a run (a config.yaml or a checkpoints/ folder), unless that run
// failed before its first step (mark_run_failed): such a folder is taken by the next run of its
// name, which first removes what the failed one wrote (clear_failed_run).
bool holds_run(const std::filesystem::path& dir);

// The file that says why a run failed before its first step: the error and its hint.
inline constexpr const char* kFailedRunFile = "failed.txt";

// True once a run in `dir` has made progress worth keeping: a checkpoint, or a step in steps.csv.
bool run_has_progress(const std::filesystem::path& dir);

// Records in `dir`/failed.txt (atomically) that its run failed before its first step, and why.
// Best effort: a failure to write is logged, not thrown (the caller is already failing).
void mark_run_failed(const std::filesystem::path& dir, const std::string& reason);

// When `dir` holds a run that failed before its first step: removes the files that run wrote
// (config.yaml, env.json, train.log, failed.txt, the CSVs, timing and summary, tb/ and the empty
// checkpoints/), so the run taking the folder starts clean. Nothing else is touched.
void clear_failed_run(const std::filesystem::path& dir);

}  // namespace ltfit
