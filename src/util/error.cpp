// Error types and the exception → exit code mapping: see error.h.
#include "ltfit/util/error.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <filesystem>
#include <new>
#include <sstream>

namespace ltfit {

namespace {

constexpr const char* kReportHint =
    "this is a bug in ltfit: please report it with the command line and the log above";

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// The phrases LibTorch's allocators and CUDA libraries use when an allocation fails.
bool says_out_of_memory(const std::string& message) {
  const std::string m = lower(message);
  for (const char* phrase : {"out of memory", "can't allocate memory", "cannot allocate memory",
                             "not enough memory", "status_alloc_failed"}) {
    if (m.find(phrase) != std::string::npos) return true;
  }
  return false;
}

std::string oom_message(const std::string& cause, int batch_size) {
  if (batch_size <= 0) return "out of memory: " + cause;
  return "out of memory at data.batch_size " + std::to_string(batch_size) + ": " + cause;
}

std::string oom_hint(int batch_size) {
  const std::string find_batch =
      "run `ltfit find-batch --config FILE` for the largest batch that fits this device";
  if (batch_size <= 0) return "lower data.batch_size or data.image_size, or " + find_batch;
  if (batch_size <= 2) {
    return "data.batch_size is already the minimum (2): lower data.image_size, choose a smaller "
           "model.arch, or use a device with more memory";
  }
  return "lower data.batch_size (e.g. --set data.batch_size=" + std::to_string(batch_size / 2) +
         "), or " + find_batch;
}

// What the allocator said, without LibTorch's backtrace.
std::string oom_cause(const std::exception& e) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e))
    return c10_error->what_without_backtrace();
  if (dynamic_cast<const std::bad_alloc*>(&e)) return "a host memory allocation failed";
  return e.what();
}

// libstdc++'s what() is "filesystem error: <operation>: <reason> [<path1>] [<path2>]"; the
// operation and reason, without the prefix and the bracketed paths (named apart).
std::string fs_operation(const std::filesystem::filesystem_error& e) {
  std::string text = e.what();
  const std::string prefix = "filesystem error: ";
  if (text.rfind(prefix, 0) == 0) text.erase(0, prefix.size());
  for (const auto* p : {&e.path2(), &e.path1()}) {
    if (p->empty()) continue;
    const std::string suffix = " [" + p->string() + "]";
    if (text.size() >= suffix.size() &&
        text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0) {
      text.erase(text.size() - suffix.size());
    }
  }
  return text;
}

std::string fs_hint(const std::error_code& code) {
  switch (code.value()) {
    case ENOSPC:
    case EDQUOT:
      return "free space on that file system (df -h) or write somewhere else";
    case EACCES:
    case EPERM:
    case EROFS:
      return "check the permissions of that path and its parent folders, and that the file "
             "system is not read-only";
    case ENOENT:
    case ENOTDIR:
      return "check that the path exists and that each of its parents is a folder";
    case ENAMETOOLONG:
      return "use a shorter name (at most 255 bytes per name)";
    case ELOOP:
      return "check the symbolic links on that path (they form a loop)";
    default:
      return "check that path: that it exists, its permissions and the free space";
  }
}

ErrorReport describe_filesystem_error(const std::filesystem::filesystem_error& e) {
  std::string where;
  if (!e.path1().empty()) where = " on '" + e.path1().string() + "'";
  if (!e.path2().empty()) where += " and '" + e.path2().string() + "'";
  return {ExitCode::kRuntime, "file system error" + where + ": " + fs_operation(e),
          fs_hint(e.code())};
}

}  // namespace

OutOfMemoryError::OutOfMemoryError(const std::string& cause, int batch_size)
    : RuntimeError(oom_message(cause, batch_size), oom_hint(batch_size)), batch_size_(batch_size) {}

bool is_out_of_memory(const std::exception& e) {
  if (dynamic_cast<const Error*>(&e) != nullptr) return false;
  if (dynamic_cast<const std::bad_alloc*>(&e) != nullptr) return true;
  if (dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr) return true;
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&e))
    return says_out_of_memory(c10_error->what_without_backtrace());
  return false;
}

void rethrow_naming_batch_size(int batch_size) {
  try {
    throw;
  } catch (const std::exception& e) {
    if (is_out_of_memory(e)) throw OutOfMemoryError(oom_cause(e), batch_size);
    throw;
  }
}

ErrorReport describe_exception(const std::exception_ptr& e) {
  try {
    if (e) std::rethrow_exception(e);
    return {ExitCode::kRuntime, "internal error: no exception to report", kReportHint};
  } catch (const Error& error) {
    return {error.exit_code(), error.what(), error.hint()};
  } catch (const std::filesystem::filesystem_error& error) {
    return describe_filesystem_error(error);
  } catch (const std::exception& error) {
    if (is_out_of_memory(error)) {
      const OutOfMemoryError oom(oom_cause(error), /*batch_size=*/0);
      return {oom.exit_code(), oom.what(), oom.hint()};
    }
    if (const auto* c10_error = dynamic_cast<const c10::Error*>(&error)) {
      return {ExitCode::kRuntime,
              std::string("internal error (LibTorch): ") + c10_error->what_without_backtrace(),
              kReportHint};
    }
    return {ExitCode::kRuntime, std::string("internal error: ") + error.what(), kReportHint};
  } catch (...) {
    return {ExitCode::kRuntime, "internal error: an exception of unknown type", kReportHint};
  }
}

}  // namespace ltfit

namespace ltfit::detail {

void check_failed(const char* expr, const char* file, int line, const std::string& msg) {
  std::ostringstream out;
  out << "internal error: check `" << expr << "` failed at " << file << ":" << line;
  if (!msg.empty()) out << ": " << msg;
  throw std::logic_error(out.str());
}

}  // namespace ltfit::detail
