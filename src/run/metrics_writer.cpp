#include "ltfit/run/metrics_writer.h"

#include <spdlog/fmt/fmt.h>

#include "ltfit/util/atomic_file.h"
#include "ltfit/util/error.h"
#include "ltfit/util/format.h"

namespace ltfit {

namespace {

std::ofstream open_csv(const std::string& path, const std::string& header) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) throw RuntimeError("cannot write '" + path + "'", "check the run directory");
  out << header << '\n' << std::flush;
  return out;
}

// Keeps the header and the rows whose first column is below `limit`, then opens for appending.
// A missing file starts afresh.
std::ofstream reopen_csv(const std::string& path, const std::string& header, std::int64_t limit) {
  std::ifstream in(path);
  if (!in) return open_csv(path, header);
  std::string kept = header + '\n', line;
  std::getline(in, line);  // the old header
  while (std::getline(in, line)) {
    const auto comma = line.find(',');
    try {
      if (comma != std::string::npos && std::stoll(line.substr(0, comma)) < limit) {
        kept += line + '\n';
      }
    } catch (const std::exception&) {  // a torn last line from a crash: dropped
    }
  }
  write_text_atomic(path, kept);
  std::ofstream out(path, std::ios::app);
  if (!out) throw RuntimeError("cannot write '" + path + "'", "check the run directory");
  return out;
}

}  // namespace

MetricsWriter::MetricsWriter(const std::string& run_dir, int groups, std::optional<ResumeAt> resume,
                             bool multi_label, int top_k)
    : multi_label_(multi_label), top_k_(top_k > 0) {
  std::string epochs_header =
      "epoch,stage,train_loss,valid_loss,accuracy,error_rate,seconds,images_per_second,"
      "data_wait_seconds,image_size";
  if (top_k_) epochs_header += ",top_k_accuracy";
  if (multi_label) epochs_header += ",f1_samples,f1_macro,map";
  std::string steps_header = "step,epoch";
  for (int g = 0; g < groups; ++g) steps_header += ",lr_" + std::to_string(g);
  steps_header += ",momentum,loss,loss_scale";
  if (resume) {
    epochs_ = reopen_csv(run_dir + "/epochs.csv", epochs_header, resume->epochs_done);
    steps_ = reopen_csv(run_dir + "/steps.csv", steps_header, resume->global_step);
  } else {
    epochs_ = open_csv(run_dir + "/epochs.csv", epochs_header);
    steps_ = open_csv(run_dir + "/steps.csv", steps_header);
  }
}

void MetricsWriter::on_step(const StepStats& s) {
  steps_ << s.step << ',' << s.epoch;
  for (const double lr : s.lrs) steps_ << ',' << fmt::format("{:.9g}", lr);
  steps_ << fmt::format(",{:.6g},{:.6g},{:g}\n", s.momentum, s.loss, s.loss_scale);
  steps_.flush();
}

void MetricsWriter::on_epoch_end(const EpochStats& e) {
  std::string row =
      fmt::format("{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.3f},{:.2f},{:.3f},{}", e.epoch, e.stage,
                  e.train_loss, e.valid_loss, e.accuracy, e.error_rate, e.seconds,
                  e.images_per_second, e.data_wait_seconds, e.image_size);
  if (top_k_) row += fmt::format(",{:.6f}", e.top_k_accuracy);
  if (multi_label_) row += fmt::format(",{:.6f},{:.6f},{:.6f}", e.f1_samples, e.f1_macro, e.map);
  epochs_ << row << '\n';
  epochs_.flush();
}

}  // namespace ltfit
