// TensorBoard logging of a training run: see tensorboard.h.
#include "ltfit/run/tensorboard.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <system_error>

#include "ltfit/util/atomic_file.h"

namespace ltfit {

namespace {

namespace fs = std::filesystem;

std::string event_host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace

// The per-process counter <n> moves on past names already taken.
std::string new_events_path(const std::string& dir) {
  static std::atomic<int> counter{0};
  std::error_code error;
  fs::create_directories(dir, error);
  if (error) {
    throw WriteError("cannot create the TensorBoard folder '" + dir + "': " + error.message(),
                     error.value(),
                     "check that the run directory is writable, or set "
                     "run.tensorboard: false");
  }
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  const std::string host = event_host_name();
  for (;;) {
    const fs::path path =
        fs::path(dir) / events_file_name(seconds, host, static_cast<int>(::getpid()), counter++);
    if (!fs::exists(path, error)) return path.string();
  }
}

std::string events_file_name(std::int64_t unix_seconds, const std::string& host, int pid, int n) {
  return "events.out.tfevents." + std::to_string(unix_seconds) + "." + host + "." +
         std::to_string(pid) + "." + std::to_string(n);
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir, int groups, std::int64_t first_step)
    : file_(new_events_path(dir)),
      step_tags_{"train/loss"},
      epoch_tags_{"epoch",
                  "epoch/train_loss",
                  "epoch/valid_loss",
                  "epoch/accuracy",
                  "epoch/error_rate",
                  "epoch/images_per_second",
                  "epoch/data_wait_seconds",
                  "epoch/seconds",
                  "epoch/image_size"},
      first_step_(first_step),
      last_flush_(std::chrono::steady_clock::now()) {
  for (int g = 0; g < groups; ++g) step_tags_.push_back("lr/group" + std::to_string(g));
  step_tags_.push_back("momentum");
  step_tags_.push_back("loss_scale");
  file_.add_session_start(first_step);
  file_.flush();
}

std::int64_t TensorBoardWriter::current_step() const {
  return last_step_ >= 0 ? last_step_ : first_step_;
}

void TensorBoardWriter::on_step(const StepStats& s) {
  LTFIT_CHECK(s.lrs.size() + 3 == step_tags_.size(), "one learning rate per layer group");
  values_.clear();
  values_.push_back(s.loss);
  values_.insert(values_.end(), s.lrs.begin(), s.lrs.end());
  values_.push_back(s.momentum);
  values_.push_back(s.loss_scale);
  file_.add_scalars(s.step, step_tags_, values_);
  last_step_ = s.step;
  flush_if_due();
}

void TensorBoardWriter::on_epoch_end(const EpochStats& e) {
  values_ = {static_cast<double>(e.epoch),
             e.train_loss,
             e.valid_loss,
             e.accuracy,
             e.error_rate,
             e.images_per_second,
             e.data_wait_seconds,
             e.seconds,
             static_cast<double>(e.image_size)};
  // The epoch's last step: a resumed session that starts with validation has logged none yet.
  const std::int64_t step =
      last_step_ >= 0 ? last_step_ : std::max<std::int64_t>(first_step_ - 1, 0);
  file_.add_scalars(step, epoch_tags_, values_);
  if (e.top_k > 0) {
    static const std::vector<std::string> top_k_tags{"epoch/top_k_accuracy"};
    const std::vector<double> figure{e.top_k_accuracy};
    file_.add_scalars(step, top_k_tags, figure);
  }
  if (e.multi_label) {
    static const std::vector<std::string> multi_label_tags{"epoch/f1_samples", "epoch/f1_macro",
                                                           "epoch/map"};
    const std::vector<double> figures{e.f1_samples, e.f1_macro, e.map};
    file_.add_scalars(step, multi_label_tags, figures);
  }
  flush();
}

void TensorBoardWriter::add_image(const std::string& tag, const EncodedPng& image) {
  file_.add_image(current_step(), tag, image);
  flush_if_due();
}

void TensorBoardWriter::flush() {
  file_.flush();
  last_flush_ = std::chrono::steady_clock::now();
}

void TensorBoardWriter::flush_if_due() {
  const auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_flush_).count() >= kFlushSeconds) flush();
}

}  // namespace ltfit
