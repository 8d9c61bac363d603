// Error types of ltfit and the invariant-check macro.
//
// User and I/O errors throw one of the Error subclasses below; the CLI has one top-level catch
// that prints what() and hint() and returns exit_code(). Exit codes are part of the public
// contract (DESIGN.md): 2 usage/config, 3 data, 4 checkpoint/weights, 5 runtime, 130 interrupted.
// LTFIT_CHECK guards internal invariants and stays on in release builds.
#pragma once

#include <stdexcept>
#include <string>

namespace ltfit {

enum class ExitCode : int {
  kOk = 0,
  kUsage = 2,
  kData = 3,
  kCheckpoint = 4,
  kRuntime = 5,
  kInterrupted = 130,
};

// Base of every error a user can cause. `hint` says what to do about it (may be empty).
class Error : public std::runtime_error {
 public:
  Error(const std::string& message, std::string hint, ExitCode code)
      : std::runtime_error(message), hint_(std::move(hint)), code_(code) {}
  const std::string& hint() const { return hint_; }
  ExitCode exit_code() const { return code_; }

 private:
  std::string hint_;
  ExitCode code_;
};

// Bad command line, bad config file, bad --set override. Exit 2.
class ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& message, std::string hint = "")
      : Error(message, std::move(hint), ExitCode::kUsage) {}
};

// Missing data root, no images, every image unreadable. Exit 3.
class DataError : public Error {
 public:
  explicit DataError(const std::string& message, std::string hint = "")
      : Error(message, std::move(hint), ExitCode::kData) {}
};

// Unreadable, corrupt or mismatched checkpoint or weight file. Exit 4.
class CheckpointError : public Error {
 public:
  explicit CheckpointError(const std::string& message, std::string hint = "")
      : Error(message, std::move(hint), ExitCode::kCheckpoint) {}
};

// Failure while running: out of memory, non-finite loss. Exit 5.
class RuntimeError : public Error {
 public:
  explicit RuntimeError(const std::string& message, std::string hint = "")
      : Error(message, std::move(hint), ExitCode::kRuntime) {}
};

// Training stopped on request (SIGINT/SIGTERM, train.time_limit) after writing a checkpoint.
// Exit 130.
class InterruptedError : public Error {
 public:
  explicit InterruptedError(const std::string& message, std::string hint = "")
      : Error(message, std::move(hint), ExitCode::kInterrupted) {}
};

namespace detail {
[[noreturn]] void check_failed(const char* expr, const char* file, int line,
                               const std::string& msg);
}  // namespace detail

}  // namespace ltfit

// Internal invariant check; on in every build type. Throws std::logic_error (a bug; the CLI
// reports it as an internal error, exit 5).
#define LTFIT_CHECK(cond, msg)                                                    \
  do {                                                                            \
    if (!(cond)) ::ltfit::detail::check_failed(#cond, __FILE__, __LINE__, (msg)); \
  } while (0)
