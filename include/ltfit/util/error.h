// Error types of ltfit, the mapping of any exception to a documented exit code, and the
// invariant-check macro.
//
// User and I/O errors throw one of the Error subclasses below; the CLI has one top-level catch
// that prints what() and hint() and returns exit_code(). Exit codes are part of the public
// contract (README.md "Exit codes"): 2 usage/config, 3 data, 4 checkpoint/weights, 5 runtime, 130
// interrupted. describe_exception maps every other exception (LibTorch's, the standard library's)
// to one of them too, so nothing ends ltfit with an undocumented code such as 1. LTFIT_CHECK guards
// internal invariants and stays on in release builds. Thread-safe.
#pragma once

#include <exception>
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

// Memory ran out (host or GPU) while training, evaluating or predicting. Exit 5. The message
// names the batch size in use when known; the hint says to lower data.batch_size or to run
// `ltfit find-batch`.
class OutOfMemoryError : public RuntimeError {
 public:
  // `cause`: what the allocator said; `batch_size`: data.batch_size in use, 0 when unknown.
  OutOfMemoryError(const std::string& cause, int batch_size);
  int batch_size() const { return batch_size_; }

 private:
  int batch_size_;
};

// Training stopped on request (SIGINT/SIGTERM, train.time_limit) after writing a checkpoint.
// Exit 130.
class InterruptedError : public Error {
 public:
  explicit InterruptedError(const std::string& message, std::string hint = "")
      : Error(message, std::move(hint), ExitCode::kInterrupted) {}
};

// True when `e` says that memory ran out: std::bad_alloc, c10::OutOfMemoryError (CUDA), or a
// c10::Error whose message says so (LibTorch's CPU allocator: "can't allocate memory"; CUDA,
// cuBLAS and cuDNN: "out of memory", "..._STATUS_ALLOC_FAILED"). ltfit's own errors are not.
bool is_out_of_memory(const std::exception& e);

// Call only inside a catch block: rethrows the exception being handled, as an OutOfMemoryError
// naming `batch_size` (data.batch_size, 0 when unknown) if is_out_of_memory says so, else as it
// is. The commands that know their config use it to put the batch size into the message.
[[noreturn]] void rethrow_naming_batch_size(int batch_size);

// What the CLI reports for an exception: the documented exit code, the message and a hint.
struct ErrorReport {
  ExitCode code = ExitCode::kRuntime;
  std::string message;
  std::string hint;  // may be empty
};

// Maps any exception to a documented exit code, never 1:
//   ltfit::Error                          its own code, message and hint
//   out of memory (see is_out_of_memory)  5, as OutOfMemoryError with the batch size unknown
//   std::filesystem::filesystem_error     5, naming path1 (and path2) and what to check
//   c10::Error (LibTorch)                 5, "internal error (LibTorch): " what_without_backtrace
//   any other std::exception or a non-standard exception  5, "internal error: ..."
// Internal errors carry a hint asking for a report. A null `e` is an internal error too.
ErrorReport describe_exception(const std::exception_ptr& e);

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
