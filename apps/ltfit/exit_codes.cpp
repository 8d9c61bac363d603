#include "exit_codes.h"

#include <c10/util/Exception.h>
#include <spdlog/spdlog.h>

#include <exception>
#include <filesystem>
#include <new>
#include <string>

#include "ltfit/util/error.h"

namespace ltfit::cli {

namespace {

constexpr int kRuntime = static_cast<int>(ExitCode::kRuntime);
constexpr const char* kReportHint =
    "this is a bug in ltfit: please report it with the command line and the log above";

int report(const std::string& message, const std::string& hint, int code) {
  spdlog::error("{}", message);
  if (!hint.empty()) spdlog::error("HINT: {}", hint);
  return code;
}

}  // namespace

int report_current_exception() {
  try {
    throw;
  } catch (const Error& e) {
    return report(e.what(), e.hint(), static_cast<int>(e.exit_code()));
  } catch (const std::filesystem::filesystem_error& e) {
    return report(e.what(), "check that path, its permissions and the free space", kRuntime);
  } catch (const std::bad_alloc&) {
    return report("out of memory", "lower data.batch_size or data.workers, or free memory",
                  kRuntime);
  } catch (const c10::OutOfMemoryError& e) {
    return report(std::string("out of memory: ") + e.what_without_backtrace(),
                  "lower data.batch_size, or train on a device with more memory", kRuntime);
  } catch (const c10::Error& e) {
    return report(std::string("internal error (LibTorch): ") + e.what_without_backtrace(),
                  kReportHint, kRuntime);
  } catch (const std::exception& e) {
    return report(std::string("internal error: ") + e.what(), kReportHint, kRuntime);
  } catch (...) {
    return report("internal error: an exception of unknown type", kReportHint, kRuntime);
  }
}

}  // namespace ltfit::cli
