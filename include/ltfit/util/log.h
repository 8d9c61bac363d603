// Logging set-up (spdlog): console on stderr, plus an optional file sink for a run's train.log.
#pragma once

#include <memory>
#include <string>

namespace spdlog::sinks {
class sink;
}

namespace ltfit {

// Installs the default logger: stderr, "[time] level: message". Call once in main.
void setup_logging(bool verbose);

// Adds `path` as a second sink for as long as this object lives (the run's train.log).
// Puts `prefix` (e.g. "[rank 1/4] ") before every console line from now on ("" removes it).
// For the ranks of a data-parallel run other than 0. Not thread-safe with logging in flight.
void set_log_prefix(const std::string& prefix);

class ScopedLogFile {
 public:
  explicit ScopedLogFile(const std::string& path);
  ~ScopedLogFile();
  ScopedLogFile(const ScopedLogFile&) = delete;
  ScopedLogFile& operator=(const ScopedLogFile&) = delete;

  // Writes `text` into this file alone, not to the console, flushed: what the console shows in
  // short (a run's resolved config), or an error that the program's top level prints on the
  // console itself once the file is closed. `error` picks the level the line is marked with.
  void write_only_here(const std::string& text, bool error = false);

 private:
  std::shared_ptr<spdlog::sinks::sink> sink_;
};

}  // namespace ltfit
