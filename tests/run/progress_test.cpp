// The progress bar: after a mid-epoch resume it starts where the epoch was and reaches 100 %.
#include <torch/torch.h>
#include <catch2/catch.hpp>

#include <unistd.h>

#include <memory>
#include <sstream>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "ltfit/run/progress.h"

namespace {

// Routes the default logger into a string for the guard's lifetime.
class CapturedLog {
 public:
  CapturedLog() : previous_(spdlog::default_logger()) {
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(text_);
    auto logger = std::make_shared<spdlog::logger>("captured", sink);
    logger->set_pattern("%v");
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous_); }
  std::string text() const { return text_.str(); }

 private:
  std::ostringstream text_;
  std::shared_ptr<spdlog::logger> previous_;
};

}  // namespace

TEST_CASE("the progress bar resumes mid-epoch where the epoch was and reaches 100 %", "[run]") {
  if (::isatty(STDERR_FILENO) != 0) {
    WARN("stderr is a terminal: the bar is drawn there, not logged; run under ctest to check");
    return;
  }
  CapturedLog log;
  ltfit::ProgressReporter progress(8);
  progress.on_stage_begin({"one_cycle", 0, 2, 10});
  progress.on_epoch_begin({1, 6, 10});  // resumed after 6 of 10 steps of epoch 1
  for (std::int64_t step = 16; step < 20; ++step) progress.on_step({step, 1, {}, 0.9, 0.5, 1.0});
  const std::string text = log.text();
  INFO(text);
  CHECK(text.find(" 70% 7/10") != std::string::npos);  // the first step of this session
  CHECK(text.find("100% 10/10") != std::string::npos);
  CHECK(text.find(" 10% ") == std::string::npos);  // no decile before the resume point
}
