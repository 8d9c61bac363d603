// One complete `ltfit train` run: index data, build loaders, model and optimizer, run the
// recipe's stages with the observers, evaluate, and write the run directory (DESIGN.md).
//
// This is the composition root of training; the Trainer itself only runs the loop.
#pragma once

#include <optional>
#include <string>

#include "ltfit/config/config.h"
#include "ltfit/report/summary.h"

namespace ltfit {

struct TrainJobOptions {
  std::optional<std::string> run_dir;  // --run-dir; default <run.out_dir>/<run.name>[-N]
};

// Runs training per `config`; returns the summary also written to summary.json.
RunSummary run_train_job(const Config& config, const TrainJobOptions& options);

}  // namespace ltfit
