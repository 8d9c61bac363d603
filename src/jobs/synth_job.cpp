// `ltfit synth`'s work: see synth_job.h.
#include "ltfit/jobs/synth_job.h"

#include <spdlog/spdlog.h>

#include <chrono>

namespace ltfit {

SynthResult run_synth_job(const SynthOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const SynthResult result = write_synthetic_dataset(options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  spdlog::info("wrote {} train + {} valid images to {} ({} task, {} layout) in {:.1f} s",
               result.train_written, result.valid_written, options.out_dir, options.task,
               options.layout, seconds);
  return result;
}

}  // namespace ltfit
