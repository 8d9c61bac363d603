#include "ltfit/run/progress.h"

#include <unistd.h>

#include <cstdio>

#include <spdlog/spdlog.h>

#include "ltfit/util/format.h"

namespace ltfit {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kBarWidth = 30;

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

ProgressReporter::ProgressReporter(std::int64_t images_per_step)
    : images_per_step_(images_per_step), tty_(::isatty(STDERR_FILENO) != 0) {}

void ProgressReporter::on_stage_begin(const StageInfo& stage) {
  steps_per_epoch_ = stage.steps_per_epoch;
  spdlog::info("stage '{}': {} epoch(s) of {} steps", stage.name, stage.epochs,
               stage.steps_per_epoch);
  spdlog::info("{:>5}  {:>10}  {:>10}  {:>8}  {:>10}  {:>6}", "epoch", "train_loss", "valid_loss",
               "accuracy", "error_rate", "time");
  done_ = first_ = 0;
  next_decile_ = 1;
  epoch_start_ = Clock::now();
}

void ProgressReporter::on_epoch_begin(const EpochInfo& epoch) {
  steps_per_epoch_ = epoch.steps_per_epoch;
  done_ = first_ = epoch.first_step;
  next_decile_ = 1;
  while (steps_per_epoch_ > 0 && done_ * 10 >= next_decile_ * steps_per_epoch_) ++next_decile_;
}

void ProgressReporter::on_step(const StepStats& step) {
  ++done_;
  draw(done_, done_ == steps_per_epoch_);
}

void ProgressReporter::draw(std::int64_t done, bool force) {
  const auto now = Clock::now();
  const double elapsed = seconds_between(epoch_start_, now);
  const std::int64_t here = std::max<std::int64_t>(done - first_, 1);  // this session's steps
  const double rate = static_cast<double>(here * images_per_step_) / std::max(elapsed, 1e-9);
  const double eta =
      elapsed / static_cast<double>(here) * static_cast<double>(steps_per_epoch_ - done);
  const double frac =
      static_cast<double>(done) / static_cast<double>(std::max<std::int64_t>(steps_per_epoch_, 1));
  if (tty_) {
    if (!force && seconds_between(last_draw_, now) < 0.1) return;
    last_draw_ = now;
    const int filled = static_cast<int>(frac * kBarWidth);
    std::fprintf(stderr, "\r[%-*s] %3d%% %lld/%lld  %.1f img/s  ETA %s ", kBarWidth,
                 std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 static_cast<int>(frac * 100), static_cast<long long>(done),
                 static_cast<long long>(steps_per_epoch_), rate, format_mm_ss(eta).c_str());
    std::fflush(stderr);
  } else if (frac * 10 >= next_decile_) {
    while (frac * 10 >= next_decile_) ++next_decile_;
    spdlog::info("  {:3.0f}% {}/{}  {:.1f} img/s  ETA {}", frac * 100, done, steps_per_epoch_, rate,
                 format_mm_ss(eta));
  }
}

void ProgressReporter::on_validation_begin(std::int64_t batches) {
  if (tty_) std::fprintf(stderr, "\r%*s\r", kBarWidth + 60, "");
}

void ProgressReporter::on_epoch_end(const EpochStats& e) {
  spdlog::info("{:>5}  {:>10.6f}  {:>10.6f}  {:>8.6f}  {:>10.6f}  {:>6}", e.epoch, e.train_loss,
               e.valid_loss, e.accuracy, e.error_rate, format_mm_ss(e.seconds));
  if (e.multi_label) {
    spdlog::info("       accuracy_multi {:.6f}  f1_samples {:.6f}  f1_macro {:.6f}  mAP {:.6f}",
                 e.accuracy, e.f1_samples, e.f1_macro, e.map);
  }
  done_ = first_ = 0;
  next_decile_ = 1;
  epoch_start_ = Clock::now();  // the next epoch's clock starts now, loader warm-up included
}

}  // namespace ltfit
