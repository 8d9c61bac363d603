// Running an experiment plan: each run is a separate `ltfit train` process in its own run
// directory `<out>/runs/<id>/`, so a crash or an out-of-memory in one run cannot take down the
// plan; its exit status and last error line are recorded and the plan goes on.
//
// A run with `gpus: N` (N >= 2, or `all` on a machine with several GPUs) is launched as
// `$LTFIT_PYTHON -m torch.distributed.run --standalone --nproc-per-node N --no-python <ltfit>
// train ...` (python3 when LTFIT_PYTHON is unset): one process per GPU, data-parallel, rank 0
// writing the run directory and the summary. A run that needs more GPUs than the machine has is
// recorded as not applicable, like an fp16 run on a CPU.
//
// Before the first run starts, every run's config is resolved here (base config, then the plan's
// `set:`, then the options' overrides, then the run's own): one the resolver rejects (an unknown
// key, a bad value, a base config that is not a config) stops the plan with a ConfigError naming
// the run, before any run directory is made. A run this machine cannot do (fp16 without a CUDA
// device, bf16 on an older GPU) is recorded as not applicable instead of run.
//
// A child dies with the experiment: it gets SIGTERM (prctl PR_SET_PDEATHSIG) when the
// experiment process ends, even by SIGKILL, so it checkpoints and exits as at a stop request
// (a torchrun child passes it on to its ranks) instead of training on, orphaned.
// Not thread-safe (spawns processes and waits for them one at a time); call it from the thread
// that lives as long as the process (the death signal follows the thread that spawned).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ltfit/config/config.h"
#include "ltfit/study/experiment_plan.h"
#include "ltfit/study/run_cut.h"

namespace ltfit {

enum class RunStatus { kOk, kFailed, kNotApplicable };

// "ok", "failed", "n/a" (results.csv's status column).
const char* run_status_name(RunStatus status);

// What happened to one run of a plan.
struct RunOutcome {
  std::string id;         // the plan run's id
  std::string label;      // its human label
  std::string study_run;  // the study run it reproduces; "" for none
  RunGpus gpus;           // the plan run's `gpus:`
  int machine_gpus = 0;   // the GPUs this machine has (counted only for runs with `gpus:`)
  RunStatus status = RunStatus::kFailed;
  std::string reason;            // why it failed or does not apply; "" when ok
  int exit_code = -1;            // the child's exit status (128 + signal if killed); -1: not run
  std::string run_dir;           // <out>/runs/<id> (absent when not run)
  std::optional<Config> config;  // the run's resolved config; null when it does not resolve
  std::optional<RunCut> cut;     // a run with kill_at_epoch: its cut; null for the others
};

struct ExperimentOptions {
  std::string out_dir;              // report directory; runs go to <out_dir>/runs/<id>/
  std::vector<Override> overrides;  // --subset and --set: after the plan's set:, before a run's
  std::string executable = "/proc/self/exe";  // the ltfit binary to spawn
  // The launcher's Python for multi-GPU runs; "": $LTFIT_PYTHON, else python3 (found on PATH).
  std::string python;
  // The GPUs this machine has; null: count the visible CUDA devices (only when a run has gpus:).
  std::optional<int> machine_gpus;
  std::function<bool()> stop_signal;  // true once the user asked to stop: stop after this run
  // Called before each run starts (index from 0, count) and after it ends.
  std::function<void(std::size_t, std::size_t, const PlanRun&)> on_start;
  std::function<void(std::size_t, std::size_t, const RunOutcome&)> on_end;
};

// What one run's child process executes.
struct ChildCommand {
  std::string executable;           // the ltfit binary (a real path: torchrun execs it by name)
  std::string base;                 // --config
  std::vector<Override> overrides;  // --set key=value, in order
  std::string run_dir;              // --run-dir
  int processes = 1;                // >= 2: under torchrun, one process per GPU
  std::string python = "python3";   // torchrun's Python
};

// argv of the child: `<executable> train --config <base> [--set k=v]... --run-dir <dir> --json`;
// with processes >= 2 the same after `<python> -m torch.distributed.run --standalone
// --nproc-per-node <processes> --no-python`.
std::vector<std::string> child_argv(const ChildCommand& command);

// Why a run asking for `gpus` cannot train on a machine with `machine_gpus` GPUs ("needs 2 GPUs,
// this machine has 0"), or why its global batch `batch_size` does not split over them; "" when it
// can (and when it asks for none). batch_size <= 0: unknown, not checked.
std::string gpus_not_applicable_reason(const RunGpus& gpus, int machine_gpus, int batch_size);

// All overrides of `run`, in the order they apply: the plan's set:, `extra`, the run's set:.
std::vector<Override> run_overrides(const ExperimentPlan& plan, const PlanRun& run,
                                    const std::vector<Override>& extra);

// Why `config` cannot run on this machine (e.g. "train.precision: fp16 needs a CUDA device ..."),
// or "" when it can (or when its device cannot be resolved: the run then reports that itself).
std::string not_applicable_reason(const Config& config);

// The last error line of a run's log (the message, without time stamp and level), or "".
std::string last_error_line(const std::string& log_path);

// The report directory: `explicit_out` if given (ConfigError if it already holds an
// experiment), else runs/experiments/<plan_name>, or its first free numbered sibling (-2, -3..).
std::string experiment_out_dir(const std::optional<std::string>& explicit_out,
                               const std::string& plan_name);

// Runs every run of `plan` in order and returns their outcomes (runs skipped after a stop
// request are recorded as failed, "not run: stopped"). Throws ConfigError (nothing started)
// when a run's config does not resolve, RuntimeError when the report directory cannot be
// created.
std::vector<RunOutcome> run_experiment(const ExperimentPlan& plan,
                                       const ExperimentOptions& options);

}  // namespace ltfit
