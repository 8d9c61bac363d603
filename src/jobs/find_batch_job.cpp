// `ltfit find-batch`'s work: see find_batch_job.h.
#include "ltfit/jobs/find_batch_job.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "ltfit/data/dataset_index.h"
#include "ltfit/util/device.h"

namespace ltfit {

namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// The classes the trials' head gets: the dataset's when data.root is there (the head's memory is
// negligible, but the log should name the model that will train), else 2.
std::int64_t dataset_class_count(const Config& config) {
  std::error_code error;
  if (!std::filesystem::is_directory(config.data.root, error)) {
    spdlog::info("data.root {} not found: the trials use a 2-class head (its memory is negligible)",
                 config.data.root);
    return 2;
  }
  return static_cast<std::int64_t>(
      index_dataset(config.data, config.run.seed, is_multi_label(config)).classes.size());
}

}  // namespace

FindBatchReport run_find_batch_job(const Config& config, const FindBatchJobOptions& job) {
  const torch::Device device = resolve_device(config.train.device);
  FindBatchReport report;
  report.device = describe_device(device);
  report.cuda = device.is_cuda();
  report.max = job.max > 0 ? job.max : (device.is_cuda() ? 1024 : 256);
  BatchFitOptions options;
  options.cpu_budget_bytes = static_cast<std::int64_t>(job.budget_mib * kMiB);
  options.num_classes = dataset_class_count(config);
  report.classes = options.num_classes;
  report.cpu_budget_bytes = cpu_budget_bytes(options);
  spdlog::info("find-batch: {} ({} head) at {} px, {}{}, on {}; batches {}..{}", config.model.arch,
               head_kind_name(config.model.head), config.data.image_size,
               precision_name(config.train.precision),
               config.train.channels_last ? ", channels_last" : "", report.device, job.start,
               report.max);
  if (!device.is_cuda()) {
    spdlog::info(
        "CPU: a trial fails when its resident memory growth passes {:.0f} MiB "
        "(an estimate; a real CPU out-of-memory kills the process)",
        static_cast<double>(report.cpu_budget_bytes) / kMiB);
  }
  const auto log_trial = [&](int batch, const TrialMemory& m, double seconds) {
    report.memory[batch] = m;
    spdlog::info("batch {:>5}: {:<4} {:7.2f} s  {:9.1f} MiB{}{}", batch, m.fits ? "fits" : "no",
                 seconds, static_cast<double>(m.bytes) / kMiB, m.note.empty() ? "" : "  ", m.note);
  };
  report.search = find_largest_batch(make_trial_predicate(config, device, options, log_trial),
                                     job.start, report.max);
  return report;
}

}  // namespace ltfit
