// What `ltfit train`'s --config, --set, --run-dir, --resume and --init-from mean: the run's config
// and where it writes, worked out before anything is written (run_train_job then opens the run
// directory).
//
//   (no --resume)         --config is required; the run goes to --run-dir, else a new
//                         <run.out_dir>/<run.name>[-N].
//   --resume CKPT         the checkpoint's own config with the --set overrides on top (--config
//                         is not read, and the log says so); it writes to --run-dir, else to the
//                         checkpoint's run directory (run_train_job refuses a checkpoint outside
//                         one, naming --run-dir). A --set that changes a key the schedule
//                         depends on (schedule_keys.h) is a ConfigError listing each key with
//                         its old and new value; a weights-only checkpoint (best.ckpt) is a
//                         CheckpointError pointing to last.ckpt and --init-from. When the
//                         checkpoint holds every epoch (or early stopping ended the run) and the
//                         run directory its summary.json,
//                         the run is complete: completed_summary names that file and the caller
//                         trains nothing.
//   --resume auto         the run directory is --run-dir, else the --config's
//                         <run.out_dir>/<run.name> (one of the two is required). With a readable
//                         checkpoint there (find_resume_checkpoint: last.ckpt, else the newest
//                         numbered one), as --resume CKPT; without one the run starts there
//                         from --config, else from that directory's config.yaml.
//   --init-from CKPT      "train more" (fastai's repeated fit): a new run, as without --resume,
//                         from --config (else the checkpoint's own config) with --set on top, a
//                         fresh optimizer and schedule, and every weight from the checkpoint
//                         (model.pretrained becomes none). The config's model.arch and
//                         model.head must be the checkpoint's (ConfigError otherwise);
//                         run_train_job refuses data of other classes. Excludes --resume.
//
// A relative data.root is made absolute (against the current folder), so the run's config.yaml
// and checkpoints name the same folder wherever they are used later.
//
// Errors are ConfigError (exit 2) naming the flag, CheckpointError (exit 4) for a checkpoint
// that cannot be read. Not thread-safe (it logs).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ltfit/config/config.h"
#include "ltfit/jobs/train_job.h"

namespace ltfit {

// --resume: none (a new run), auto (the run directory's newest checkpoint) or a checkpoint file.
struct ResumeRequest {
  enum class Kind { kNone, kAuto, kCheckpoint };
  Kind kind = Kind::kNone;
  std::string checkpoint;  // kCheckpoint only

  bool operator==(const ResumeRequest&) const = default;
};

// "" -> none, "auto" -> auto, anything else -> that checkpoint file (a file named `auto` is
// `./auto`).
ResumeRequest parse_resume_request(const std::string& text);

struct TrainRequest {
  std::string config;             // --config FILE; empty: not given
  std::vector<std::string> sets;  // --set key=value, in order
  std::string run_dir;            // --run-dir DIR; empty: not given
  ResumeRequest resume;           // --resume
  std::string init_from;          // --init-from CKPT: empty (not given) or a checkpoint file
};

struct ResolvedTrain {
  Config config;            // the config the run trains with
  TrainJobOptions options;  // run_dir, reuse_run_dir, resume, init_from; stop_signal left empty
  // Set when --resume names a run that is complete: its summary.json (nothing is to be trained).
  std::optional<std::string> completed_summary;
};

// Resolves `request` as the header says.
ResolvedTrain resolve_resume(const TrainRequest& request);

// For a complete run (completed_summary): logs that it is complete and how to train more, and
// returns its summary.json as written. Takes the run's lock while it looks and removes only the
// stale temporaries a killed session left; the run's own files stay as they are.
std::string report_completed_run(const std::string& summary_path);

}  // namespace ltfit
