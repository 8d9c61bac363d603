// One training run inside its opened run directory: set-up, training, the final passes and the
// summary. Private to src/jobs: run_train_job (train_job.cpp) opens the directory, writes its
// config and log, and calls this; the ranks of a data-parallel run other than 0 call it with no
// directory.
#pragma once

#include <chrono>
#include <filesystem>

#include "ltfit/config/config.h"
#include "ltfit/jobs/dist_session.h"
#include "ltfit/jobs/train_job.h"
#include "ltfit/run/summary.h"

namespace ltfit {

// `run_dir` empty on the ranks other than 0 (they write nothing); `start` is the job's start
// (set-up time counts from it). Throws as run_train_job documents.
RunSummary train_in_run_dir(const Config& config, const TrainJobOptions& options, DistSession& dist,
                            const std::filesystem::path& run_dir,
                            std::chrono::steady_clock::time_point start);

}  // namespace ltfit
