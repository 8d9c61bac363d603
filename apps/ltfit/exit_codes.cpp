#include "exit_codes.h"

#include <spdlog/spdlog.h>

#include <exception>

#include "ltfit/util/error.h"

namespace ltfit::cli {

int report_current_exception() {
  const ErrorReport report = describe_exception(std::current_exception());
  spdlog::error("{}", report.message);
  if (!report.hint.empty()) spdlog::error("HINT: {}", report.hint);
  return static_cast<int>(report.code);
}

}  // namespace ltfit::cli
