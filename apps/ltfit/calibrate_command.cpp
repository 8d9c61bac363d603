// `ltfit calibrate`: temperature scaling of a checkpoint; writes <name>-calibrated.ckpt (or
// --out) whose eval.temperature `evaluate` and `predict` then apply, and reports the
// temperature, NLL and ECE before and after.
#include <CLI/CLI.hpp>

#include "cli_common.h"
#include "commands.h"
#include "ltfit/jobs/calibrate_job.h"
#include "ltfit/util/signals.h"
#include "ltfit/util/standard_output.h"

namespace ltfit::cli {

namespace {

struct CalibrateArgs {
  CalibrateJobRequest job;
  bool json = false;
};

}  // namespace

void add_calibrate_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<CalibrateArgs>();
  CheckpointEvalRequest& r = args->job.eval;
  CLI::App* cmd = app.add_subcommand(
      "calibrate",
      "temperature scaling (Guo et al. 2017): evaluate a checkpoint on a split, fit the one "
      "temperature T that minimises the NLL of its logits / T (softmax; multi-label: sigmoids "
      "and BCE), and write a copy of the checkpoint with eval.temperature T, which evaluate and "
      "predict then apply. Reports T, NLL and ECE (15 bins) before and after. T is fitted on "
      "the raw logits, also for a checkpoint calibrated before");
  cmd->add_option("--checkpoint", r.checkpoint, "checkpoint file (.ckpt)")->required();
  cmd->add_option("--data", r.data,
                  "a folder of <class>/ subfolders, or a dataset root (as evaluate --data). "
                  "Default: the validation split of the checkpoint's data.root");
  cmd->add_option("--split", r.split,
                  "the dataset root's split to fit on: train | valid | test (default: valid)")
      ->check(CLI::IsMember({"train", "valid", "test"}));
  add_checkpoint_run_options(cmd, r.device, r.precision);
  cmd->add_option("--out", args->job.out,
                  "the calibrated checkpoint (default: <name>-calibrated.ckpt beside the "
                  "checkpoint); never the checkpoint itself");
  add_json_flag(cmd, args->json);
  cmd->callback([args, exit_code] {
    StopSignals signals(StopMode::kExitNow);  // nothing to save: exit 130, temporaries removed
    const CalibrateJobResult result = run_calibrate_job(args->job);
    write_stdout(args->json ? calibrate_json(result) + "\n" : calibrate_table(result));
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
