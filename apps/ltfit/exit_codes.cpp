#include "exit_codes.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <fstream>

#include <nlohmann/json.hpp>

#include "ltfit/util/error.h"

namespace ltfit::cli {

namespace {

// torchrun names a file per worker (TORCHELASTIC_ERROR_FILE) and prints what a failed worker
// wrote there: {"message": ..., "timestamp": seconds}, as torch.distributed.elastic's
// ErrorHandler writes it. Best effort: a file that cannot be written changes nothing else.
void write_elastic_error_file(const ErrorReport& report) {
  const char* path = std::getenv("TORCHELASTIC_ERROR_FILE");
  if (path == nullptr || *path == '\0') return;
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const nlohmann::json j = {
      {"message", report.message + (report.hint.empty() ? "" : " (" + report.hint + ")")},
      {"timestamp", std::chrono::duration_cast<std::chrono::seconds>(now).count()},
      {"exit_code", static_cast<int>(report.code)}};
  std::ofstream out(path, std::ios::trunc);
  out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

}  // namespace

int report_current_exception() {
  const ErrorReport report = describe_exception(std::current_exception());
  spdlog::error("{}", report.message);
  if (!report.hint.empty()) spdlog::error("HINT: {}", report.hint);
  write_elastic_error_file(report);
  return static_cast<int>(report.code);
}

}  // namespace ltfit::cli
