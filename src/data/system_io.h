// Opening and reading image files when the system, not the file, fails (private to src/data).
//
// An open or read that fails with EMFILE, ENFILE, ENOMEM, ENOBUFS, EIO or EAGAIN says nothing
// about the image: skipping it as "unreadable" would train and score on whatever happened to open
// (issue 40: 29 of 32 validation images skipped under a passing file-descriptor shortage, exit 0).
// Such a call is retried with a short backoff (a passing shortage ends), and when it still fails
// the run stops with a SystemIoError (exit 5) naming the file, the errno and, for EMFILE, the
// process's open-file limit. Failures of the file's own (ENOENT, EACCES, ELOOP, ...) come back
// to the caller as before, to be skipped and counted. Thread-safe.
#pragma once

#include <functional>
#include <string>

#include "ltfit/util/error.h"

namespace ltfit {

// An open or read of `path` the system kept failing (is_system_errno) through every retry.
class SystemIoError : public RuntimeError {
 public:
  // `operation`: "open", "stat", "read"; `tries`: attempts made; `seconds`: over how long.
  SystemIoError(const std::string& operation, const std::string& path, int error_number, int tries,
                double seconds);
  int error_number() const { return error_number_; }

 private:
  int error_number_;
};

// True for the errno values of the system's making: EMFILE, ENFILE, ENOMEM, ENOBUFS, EIO, EAGAIN
// (EWOULDBLOCK). EINTR is not among them: it is retried at once, without counting.
bool is_system_errno(int error_number);

// "EMFILE" for the errno values this file names, else the number.
std::string errno_name(int error_number);

// Attempts made before giving up, and the pauses between them (10 ms growing to 200 ms; 0.38 s
// in all, longer than a passing shortage usually lasts and short enough to fail fast under
// `ulimit -n 9`).
constexpr int kSystemIoTries = 6;

// Calls `attempt` (an open, stat or read: a result >= 0, or -1 with errno set) until it succeeds
// or fails for a reason of the file's, and returns that result with errno as the last attempt
// left it. A failure is_system_errno says is the system's is retried after a pause; after
// kSystemIoTries of them, throws SystemIoError for `operation` on `path`.
long call_with_retries(const char* operation, const std::string& path,
                       const std::function<long()>& attempt);

// For tests: called before each attempt of call_with_retries with its operation and path; a
// nonzero result is taken as that attempt's errno (the call itself is not made). An empty
// function (the default) injects nothing. Not for use while images are being loaded elsewhere.
using IoFaultForTesting = std::function<int(const std::string& operation, const std::string& path)>;
void set_io_fault_for_testing(IoFaultForTesting fault);

}  // namespace ltfit
