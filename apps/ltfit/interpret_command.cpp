// `ltfit interpret`: a trained checkpoint's top losses with Grad-CAM, its most confused classes
// and confusion matrix (interpret_job.h).
#include <CLI/CLI.hpp>

#include "cli_common.h"
#include "commands.h"
#include "ltfit/jobs/interpret_job.h"
#include "ltfit/util/signals.h"
#include "ltfit/util/standard_output.h"

namespace ltfit::cli {

namespace {

struct InterpretArgs {
  InterpretRequest job;
  bool json = false;
  bool no_tensorboard = false;
};

}  // namespace

void add_interpret_command(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<InterpretArgs>();
  InterpretRequest& r = args->job;
  CLI::App* cmd = app.add_subcommand(
      "interpret",
      "what a checkpoint gets wrong and why (fastai's ClassificationInterpretation): writes "
      "top_losses.png (the highest-loss images, each beside its Grad-CAM overlay, titled "
      "predicted/actual / loss / probability of the actual class), top_losses.csv, "
      "most_confused.csv, confusion_matrix.png and predictions.csv; into the run's TensorBoard "
      "folder too when the checkpoint is in a run directory");
  cmd->add_option("--checkpoint", r.eval.checkpoint, "checkpoint file (.ckpt)")->required();
  cmd->add_option("--data", r.eval.data,
                  "a folder of <class>/ subfolders, or a dataset root (as evaluate's --data). "
                  "Default: the validation split of the checkpoint's data.root");
  cmd->add_option("--split", r.eval.split, "the dataset root's split: train | valid | test")
      ->check(CLI::IsMember({"train", "valid", "test"}));
  cmd->add_option("--top", r.top, "images shown, the highest losses first (multi-label: per class)")
      ->capture_default_str();
  cmd->add_option("--min-count", r.min_count,
                  "most_confused: leave out pairs confused fewer times (fastai's min_val)")
      ->capture_default_str();
  cmd->add_option("--out", r.out,
                  "output folder (default: <run dir>/interpret for a checkpoint in a run "
                  "directory, else ./interpret)");
  add_checkpoint_run_options(cmd, r.eval.device, r.eval.precision);
  cmd->add_flag("--no-tensorboard", args->no_tensorboard,
                "do not write the pictures into the run's TensorBoard folder");
  add_json_flag(cmd, args->json);
  cmd->callback([args, exit_code] {
    StopSignals signals(StopMode::kExitNow);  // nothing to save: exit 130, temporaries removed
    args->job.tensorboard = !args->no_tensorboard;
    const InterpretResult result = run_interpret_job(args->job);
    write_stdout(args->json ? interpret_json(result) + "\n" : interpret_table(result));
    *exit_code = 0;
  });
}

}  // namespace ltfit::cli
