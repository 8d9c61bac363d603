// The temporary files ltfit writes before renaming them into place (an AtomicFile's
// `.<name>.XXXXXX.tmp`, a download's `<name>.partial-<16 hex>`): registered while they live, so
// that a process ended at once by a stop signal still removes them, and recognised later when a
// process killed outright (kill -9, a power cut) left one behind.
//
// A writer holds an exclusive flock(2) on its temporary file for as long as it writes it, so a
// file of our naming that nobody holds and that has not changed for kStaleSeconds is stale: no
// live process will rename it. remove_stale_temp_files() removes only such files and never
// follows a symlink. The registry is thread-safe; remove_live_temp_files() is async-signal-safe.
#pragma once

#include <string>
#include <vector>

namespace ltfit {

// A temporary file unchanged for this long and not locked is a leftover.
inline constexpr int kStaleSeconds = 2;

// Registers `path` as a temporary file this process is writing; returns a slot for
// unregister_live_temp_file (-1, and nothing registered, when the table of 64 is full).
int register_live_temp_file(const std::string& path);
// Forgets a slot from register_live_temp_file (once the file is renamed or removed); -1 is a no-op.
void unregister_live_temp_file(int slot);
// Unlinks every registered file. Async-signal-safe: for the handler that ends the process.
void remove_live_temp_files() noexcept;

// Whether `name` (a file name, no folder) is one of ltfit's temporary names: `.<target>.XXXXXX.tmp`
// (XXXXXX six letters or digits) or `<target>.partial-<16 hex digits>`; with `target` empty, for
// any target.
bool is_temp_file_name(const std::string& name, const std::string& target = "");

// Removes the stale temporary files of `dir` (of `target` only, when given): our naming, a
// regular file, unchanged for `min_age_seconds` and not locked by a writer. Returns their paths.
// A caller that holds the folder's run lock (no other writer can start there) may pass 0.
// Never throws: a folder that cannot be read removes nothing.
std::vector<std::string> remove_stale_temp_files(const std::string& dir,
                                                 const std::string& target = "",
                                                 int min_age_seconds = kStaleSeconds);

}  // namespace ltfit
