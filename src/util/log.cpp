#include "ltfit/util/log.h"

#include <algorithm>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace ltfit {

namespace {
constexpr const char* kPattern = "[%H:%M:%S] %^%l%$: %v";
}

void setup_logging(bool verbose) {
  auto logger = spdlog::stderr_color_mt("ltfit");
  logger->set_pattern(kPattern);
  logger->set_level(verbose ? spdlog::level::debug : spdlog::level::info);
  logger->flush_on(spdlog::level::info);
  spdlog::set_default_logger(logger);
}

void set_log_prefix(const std::string& prefix) {
  // spdlog patterns treat '%' as a flag: a literal one is "%%".
  std::string escaped;
  for (const char c : prefix) escaped += c == '%' ? std::string("%%") : std::string(1, c);
  spdlog::default_logger()->set_pattern(escaped + kPattern);
}

ScopedLogFile::ScopedLogFile(const std::string& path)
    : sink_(std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, /*truncate=*/false)) {
  sink_->set_pattern("[%Y-%m-%d %H:%M:%S] %l: %v");
  spdlog::default_logger()->sinks().push_back(sink_);
}

ScopedLogFile::~ScopedLogFile() {
  auto& sinks = spdlog::default_logger()->sinks();
  sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
}

void ScopedLogFile::write_only_here(const std::string& text, bool error) {
  const spdlog::details::log_msg message("ltfit", error ? spdlog::level::err : spdlog::level::info,
                                         text);
  sink_->log(message);
  sink_->flush();
}

}  // namespace ltfit
