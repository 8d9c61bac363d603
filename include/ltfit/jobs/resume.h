// What `ltfit train`'s --config, --set, --run-dir and --resume mean: the run's config and where
// it writes, worked out before anything is written (run_train_job then opens the run directory).
//
//   (no --resume)         --config is required; the run goes to --run-dir, else a new
//                         <run.out_dir>/<run.name>[-N].
//   --resume CKPT         the checkpoint's own config with the --set overrides on top (--config
//                         is not read, and the log says so); it writes to --run-dir, else to the
//                         checkpoint's run directory (run_train_job refuses a checkpoint outside
//                         one, naming --run-dir).
//   --resume auto         the run directory is --run-dir, else the --config's
//                         <run.out_dir>/<run.name> (one of the two is required). With a
//                         checkpoints/last.ckpt there, as --resume CKPT; without one the run
//                         starts there from --config, else from that directory's config.yaml.
//
// Errors are ConfigError (exit 2) naming the flag, CheckpointError (exit 4) for a checkpoint
// that cannot be read. Not thread-safe (it logs).
#pragma once

#include <string>
#include <vector>

#include "ltfit/config/config.h"
#include "ltfit/jobs/train_job.h"

namespace ltfit {

struct TrainRequest {
  std::string config;             // --config FILE; empty: not given
  std::vector<std::string> sets;  // --set key=value, in order
  std::string run_dir;            // --run-dir DIR; empty: not given
  std::string resume;             // --resume: empty (a new run), "auto" or a checkpoint file
};

struct ResolvedTrain {
  Config config;            // the config the run trains with
  TrainJobOptions options;  // run_dir, reuse_run_dir and resume; stop_signal left empty
};

// Resolves `request` as the header says.
ResolvedTrain resolve_resume(const TrainRequest& request);

}  // namespace ltfit
