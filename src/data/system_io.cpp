// Retrying the system's failures to open or read an image file; see system_io.h.
#include "data/system_io.h"

#include <sys/resource.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>

#include <spdlog/fmt/fmt.h>

namespace ltfit {
namespace {

constexpr std::array<int, kSystemIoTries - 1> kSystemIoPauseMs = {10, 20, 50, 100, 200};

std::mutex io_fault_mutex;
std::atomic<bool> io_fault_set{false};
IoFaultForTesting io_fault;  // guarded by io_fault_mutex

int injected_errno(const char* operation, const std::string& path) {
  if (!io_fault_set.load(std::memory_order_acquire)) return 0;
  IoFaultForTesting copy;
  {
    std::lock_guard lock(io_fault_mutex);
    copy = io_fault;
  }
  return copy ? copy(operation, path) : 0;
}

// The process's soft RLIMIT_NOFILE in words ("9", "unlimited"), "unknown" when it cannot be read.
std::string open_file_limit() {
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return "unknown";
  if (limit.rlim_cur == RLIM_INFINITY) return "unlimited";
  return std::to_string(static_cast<unsigned long long>(limit.rlim_cur));
}

// What the errno says of the system, for the message, and what to do, for the hint.
std::pair<std::string, std::string> cause_and_hint(int error_number) {
  switch (error_number) {
    case EMFILE:
      return {"; the process's open-file limit (ulimit -n) is " + open_file_limit(),
              "raise the open-file limit (ulimit -n 4096, or LimitNOFILE= for a service) or "
              "lower data.workers, and run again"};
    case ENFILE:
      return {"; the system's table of open files is full",
              "close files other programs hold open, or raise fs.file-max, and run again"};
    case ENOMEM:
    case ENOBUFS:
      return {"; the kernel is out of memory",
              "free memory (or lower data.workers and data.batch_size) and run again"};
    case EIO:
      return {"; the disk or file system reported an I/O error",
              "check the storage under the data (dmesg names the device), then run again"};
    default:
      return {"", "the system, not the image, failed; run again once it recovers"};
  }
}

std::string describe_system_io_failure(const std::string& operation, const std::string& path,
                                       int error_number, int tries, double seconds) {
  return fmt::format("cannot {} image file '{}': {} ({}), still after {} tries over {:.2f} s{}",
                     operation, path, std::generic_category().message(error_number),
                     errno_name(error_number), tries, seconds, cause_and_hint(error_number).first);
}

}  // namespace

SystemIoError::SystemIoError(const std::string& operation, const std::string& path,
                             int error_number, int tries, double seconds)
    : RuntimeError(describe_system_io_failure(operation, path, error_number, tries, seconds),
                   cause_and_hint(error_number).second +
                       " (an image the system could not read is not skipped as unreadable: the "
                       "results would cover fewer images than the data holds)"),
      error_number_(error_number) {}

bool is_system_errno(int error_number) {
  switch (error_number) {
    case EMFILE:
    case ENFILE:
    case ENOMEM:
    case ENOBUFS:
    case EIO:
    case EAGAIN:
#if EWOULDBLOCK != EAGAIN
    case EWOULDBLOCK:
#endif
      return true;
    default:
      return false;
  }
}

std::string errno_name(int error_number) {
  switch (error_number) {
    case EMFILE:
      return "EMFILE";
    case ENFILE:
      return "ENFILE";
    case ENOMEM:
      return "ENOMEM";
    case ENOBUFS:
      return "ENOBUFS";
    case EIO:
      return "EIO";
    case EAGAIN:
      return "EAGAIN";
    case EINTR:
      return "EINTR";
    default:
      return "errno " + std::to_string(error_number);
  }
}

long call_with_retries(const char* operation, const std::string& path,
                       const std::function<long()>& attempt) {
  const auto start = std::chrono::steady_clock::now();
  for (int tries = 1;; ++tries) {
    long result = -1;
    int error_number = injected_errno(operation, path);
    if (error_number == 0) {
      do {
        errno = 0;
        result = attempt();
      } while (result < 0 && errno == EINTR);
      if (result >= 0 || !is_system_errno(errno)) return result;
      error_number = errno;
    } else if (!is_system_errno(error_number)) {
      errno = error_number;
      return -1;
    }
    if (tries == kSystemIoTries) {
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      throw SystemIoError(operation, path, error_number, tries, seconds);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(kSystemIoPauseMs[tries - 1]));
  }
}

void set_io_fault_for_testing(IoFaultForTesting new_fault) {
  std::lock_guard lock(io_fault_mutex);
  io_fault_set.store(static_cast<bool>(new_fault), std::memory_order_release);
  io_fault = std::move(new_fault);
}

}  // namespace ltfit
