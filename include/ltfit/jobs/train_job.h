// One complete `ltfit train` run: index data, build loaders, model and optimizer, run the
// recipe's stages with the observers, evaluate, and write the run directory (docs/cli.md).
// A run can continue from a checkpoint (`resume`): same run directory, the checkpoint's config
// (with any overrides the caller applied), weights, optimizer, schedule position, loss scaler
// and random generators, so it ends as the uninterrupted run would have.
//
// This is the composition root of training; the Trainer itself only runs the loop.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "ltfit/config/config.h"
#include "ltfit/run/summary.h"

namespace ltfit {

struct TrainJobOptions {
  // --run-dir; default <run.out_dir>/<run.name>[-N], or with `resume` the checkpoint's run
  // directory (never the checkpoint's embedded run.out_dir/run.name)
  std::optional<std::string> run_dir;
  bool reuse_run_dir = false;         // run_dir may already hold a run (--resume auto, fresh)
  std::optional<std::string> resume;  // checkpoint to continue from
  // --init-from: a new run whose model starts from this checkpoint's weights (its classes must
  // be the data's); optimizer and schedule start afresh
  std::optional<std::string> init_from;
  std::function<bool()> stop_signal;  // true once SIGINT/SIGTERM asked to stop
};

// Runs training per `config`; returns the summary also written to summary.json. The run
// directory is locked (run_dir.h) while it runs: ConfigError if another process holds it.
// Throws InterruptedError (exit 130) after writing a checkpoint when stopped before every epoch
// ran and was checkpointed; a stop requested later (during the last validation, its checkpoint
// or the final TTA) cuts nothing short: the run completes, summary.json included, and returns.
RunSummary run_train_job(const Config& config, const TrainJobOptions& options);

// The run directory a checkpoint belongs to: the parent of its `checkpoints/` folder, else
// nullopt.
std::optional<std::string> run_dir_of_checkpoint(const std::string& checkpoint);

}  // namespace ltfit
