#include "ltfit/report/metrics_writer.h"

#include <spdlog/fmt/fmt.h>

#include "ltfit/util/error.h"

namespace ltfit {

namespace {

std::ofstream open_csv(const std::string& path, const std::string& header) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) throw RuntimeError("cannot write '" + path + "'", "check the run directory");
  out << header << '\n' << std::flush;
  return out;
}

}  // namespace

MetricsWriter::MetricsWriter(const std::string& run_dir, int groups) {
  epochs_ = open_csv(run_dir + "/epochs.csv",
                     "epoch,stage,train_loss,valid_loss,accuracy,error_rate,seconds,"
                     "images_per_second,data_wait_seconds");
  std::string header = "step,epoch";
  for (int g = 0; g < groups; ++g) header += ",lr_" + std::to_string(g);
  steps_ = open_csv(run_dir + "/steps.csv", header + ",momentum,loss,loss_scale");
}

void MetricsWriter::on_step(const StepStats& s) {
  steps_ << s.step << ',' << s.epoch;
  for (const double lr : s.lrs) steps_ << ',' << fmt::format("{:.9g}", lr);
  steps_ << fmt::format(",{:.6g},{:.6g},{:g}\n", s.momentum, s.loss, s.loss_scale);
  steps_.flush();
}

void MetricsWriter::on_epoch_end(const EpochStats& e) {
  epochs_ << fmt::format("{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.3f},{:.2f},{:.3f}\n", e.epoch,
                         e.stage, e.train_loss, e.valid_loss, e.accuracy, e.error_rate, e.seconds,
                         e.images_per_second, e.data_wait_seconds);
  epochs_.flush();
}

}  // namespace ltfit
